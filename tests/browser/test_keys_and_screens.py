"""Issue 18, point 5: keys, a skip link, visible focus, dark mode, phones, styled errors."""

from __future__ import annotations

import pytest

from tests.web.conftest import BROKEN_CANONICAL, BROKEN_LONG

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broken(owner):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, BROKEN_CANONICAL, "broken.json")
    return transcript


@pytest.fixture
def long_broken(owner):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, BROKEN_LONG, "long-broken.json")
    return transcript


def focused(page) -> dict:
    return page.evaluate(
        """() => {
          const e = document.activeElement;
          const row = e && e.closest ? e.closest("article.row") : null;
          return {tag: e.tagName, id: e.id, cls: e.className, text: (e.textContent || "").trim(),
                  row: row ? row.id : null};
        }"""
    )


def test_the_first_tab_is_a_skip_link_that_lands_on_the_timeline(signed_in_page, broken):
    page = signed_in_page
    page.goto(f"/t/{broken.public_id}/")
    page.keyboard.press("Tab")
    first = focused(page)
    assert first["tag"] == "A" and first["text"] == "Skip to the timeline"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "focus must be visible"
    page.keyboard.press("Enter")
    assert focused(page)["id"] == "timeline"
    page.keyboard.press("Tab")
    assert focused(page)["row"] == "r0", "one Tab after the skip link reaches the first row"


def test_j_and_k_move_between_rows(signed_in_page, broken):
    page = signed_in_page
    page.goto(f"/t/{broken.public_id}/")
    page.keyboard.press("j")
    assert focused(page)["id"] == "r0"
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert focused(page)["id"] == "r2"
    assert page.locator("article.row.current").count() == 1
    page.keyboard.press("k")
    assert focused(page)["id"] == "r1"
    assert page.url.endswith("#r1")


def test_n_and_p_step_through_findings_and_n_loads_the_page_of_the_next(
    signed_in_page, long_broken
):
    page = signed_in_page
    page.goto(f"/t/{long_broken.public_id}/")
    # Scrolling to the end would load page 2 into this one (the sentinel), and n would
    # then find its next row loaded: take the sentinel out, so n has to fetch the page.
    page.evaluate("document.querySelectorAll('a.sentinel').forEach(s => s.remove())")
    finding_rows = page.eval_on_selector_all("article.row.has-findings", "rs => rs.map(r => r.id)")
    assert len(finding_rows) > 3
    page.keyboard.press("n")
    assert focused(page)["id"] == finding_rows[0]
    page.keyboard.press("n")
    assert focused(page)["id"] == finding_rows[1]
    page.keyboard.press("p")
    assert focused(page)["id"] == finding_rows[0]
    # From the last finding of the first page, n goes to the next one, on page 2.
    page.locator(f"#{finding_rows[-1]}").click(position={"x": 5, "y": 5})
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.locator(f"#{finding_rows[-1]}").click(position={"x": 5, "y": 5})
    with page.expect_navigation():
        page.keyboard.press("n")
    assert "page=2" in page.url
    key = page.url.split("#")[1]
    assert int(key[1:]) > int(finding_rows[-1][1:])
    assert page.locator(f"#{key}.has-findings").count() == 1


def test_question_mark_lists_the_keys_and_escape_closes_it(signed_in_page, broken):
    page = signed_in_page
    page.goto(f"/t/{broken.public_id}/")
    dialog = page.locator("dialog#keys")
    assert not dialog.is_visible()
    page.keyboard.press("?")
    assert dialog.is_visible()
    text = dialog.inner_text()
    for key in ("j", "k", "n", "p", "/", "?"):
        assert key in text
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    assert page.csp_violations == []


def test_keys_typed_in_a_form_field_stay_in_the_field(signed_in_page, broken):
    page = signed_in_page
    page.goto(f"/t/{broken.public_id}/")
    page.locator("input[name=around]").focus()
    page.keyboard.type("j")
    assert page.locator("article.row.current").count() == 0


def background(page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def is_dark(colour: str) -> bool:
    red, green, blue = (int(part) for part in colour[colour.index("(") + 1 : -1].split(",")[:3])
    return red + green + blue < 3 * 90


def test_dark_mode_follows_the_system_and_the_toggle_is_kept(signed_in_page, broken):
    page = signed_in_page
    page.emulate_media(color_scheme="dark")
    page.goto(f"/t/{broken.public_id}/")
    assert is_dark(background(page))
    toggle = page.locator("[data-theme-toggle]")
    assert toggle.get_attribute("aria-pressed") == "true"
    toggle.click()
    assert not is_dark(background(page))
    page.reload()
    assert not is_dark(background(page)), "the choice outlives the page"
    page.emulate_media(color_scheme="light")
    page.locator("[data-theme-toggle]").click()
    page.goto("/rules/PAIR-1/")
    assert is_dark(background(page))
    assert page.csp_violations == []


def test_light_system_gives_the_light_page(signed_in_page, broken):
    page = signed_in_page
    page.emulate_media(color_scheme="light")
    page.goto(f"/t/{broken.public_id}/")
    assert not is_dark(background(page))


def test_no_page_scrolls_sideways_at_390_pixels(signed_in_page, broken, long_broken):
    from inspector.web.store import project_for

    project = project_for(broken.owner, "phone")
    broken.project = project
    broken.save()
    page = signed_in_page
    page.set_viewport_size({"width": 390, "height": 844})
    for path in (
        f"/t/{broken.public_id}/",
        f"/t/{long_broken.public_id}/",
        f"/t/{broken.public_id}/?view=original",
        "/upload/",
        "/t/",
        "/rules/",
        "/rules/PAIR-2/",
        "/account/",
        f"/p/{project.slug}/",
        "/spec/",
    ):
        response = page.goto(path)
        assert response.status == 200, path
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width} px wide"


def test_a_page_past_the_end_is_a_styled_404_that_says_why(signed_in_page, broken):
    page = signed_in_page
    response = page.goto(f"/t/{broken.public_id}/?page=999")
    assert response.status == 404
    assert page.locator("header.site").is_visible()
    text = page.locator("main").inner_text()
    assert "there is no page 999" in text
    page.get_by_role("link", name="Open it without the settings in the address").click()
    page.wait_for_url(f"**/t/{broken.public_id}/")
    assert page.locator("article.row").count() > 1


def test_a_bad_filter_is_a_styled_400(signed_in_page, broken):
    page = signed_in_page
    response = page.goto(f"/t/{broken.public_id}/?around=lots")
    assert response.status == 400
    assert page.locator("header.site").is_visible()
    assert "around" in page.locator("main").inner_text()
