"""Issue 18, point 1 in the browser: the search box reaches rows on pages not loaded."""

from __future__ import annotations

import pytest

from tests.browser.waits import wait_until
from tests.web.conftest import BROKEN_LONG

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def long_broken(owner):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, BROKEN_LONG, "long.json")
    return transcript


def test_slash_then_enter_reaches_a_row_on_an_unloaded_page(signed_in_page, long_broken):
    page = signed_in_page
    page.goto(f"/t/{long_broken.public_id}/")
    assert page.locator("article.row").count() == 200
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.name") == "q"
    page.keyboard.type("step 250")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "page=3" in page.url and "q=step+250" in page.url
    key = page.url.split("#")[1]
    row = page.locator(f"#{key}")
    assert "step 250" in row.inner_text()
    wait_until(page, "document.querySelector('[data-search-count]').textContent.length > 0")
    assert page.locator("[data-search-count]").inner_text() == "1 of 1 row"
    assert "search-current" in row.get_attribute("class")
    assert page.locator("[data-search-box]").input_value() == "step 250"


def test_enter_and_shift_enter_step_through_hits(signed_in_page, long_broken):
    page = signed_in_page
    page.goto(f"/t/{long_broken.public_id}/")
    box = page.locator("[data-search-box]")
    box.fill("stray")
    box.press("Enter")
    counter = page.locator("[data-search-count]")
    wait_until(page, "document.querySelector('[data-search-count]').textContent.startsWith('1 of')")
    assert counter.inner_text() == "1 of 30 rows"
    first = page.locator("article.search-current").get_attribute("id")
    box.press("Enter")
    assert counter.inner_text() == "2 of 30 rows"
    second = page.locator("article.search-current").get_attribute("id")
    assert int(second[1:]) > int(first[1:])
    box.press("Shift+Enter")
    assert counter.inner_text() == "1 of 30 rows"
    assert page.locator("article.search-current").get_attribute("id") == first
    assert page.locator("article.search-hit").count() >= 9  # every loaded hit is marked
    # Back from the first hit wraps to the last, on the last page.
    with page.expect_navigation():
        box.press("Shift+Enter")
    assert "page=4" in page.url
    wait_until(
        page, "document.querySelector('[data-search-count]').textContent.startsWith('30 of')"
    )
    assert page.csp_violations == []


def test_a_search_for_nothing_there_says_so(signed_in_page, long_broken):
    page = signed_in_page
    page.goto(f"/t/{long_broken.public_id}/")
    box = page.locator("[data-search-box]")
    box.fill("no such words anywhere")
    box.press("Enter")
    wait_until(
        page, "document.querySelector('[data-search-count]').textContent === 'no row holds it'"
    )


def test_the_words_are_marked_and_a_folded_block_holding_them_opens(signed_in_page, owner):
    """Issue 31: the matched words are highlighted (as text: a transcript's markup stays
    text), and a hit inside a folded output opens it; a link carrying the query does too."""
    from inspector.web.store import store_upload
    from tests.web.conftest import assistant, call, canonical, result, user

    long_output = "\n".join(f"line {n}" for n in range(60)) + "\nthe NEEDLE <b>here</b>\n"
    data = canonical(
        user("look for the <img src=x onerror=window.__xss=1> needle"),
        assistant(call("c1", "Bash", {"command": "cat log"}), content="Reading."),
        result("c1", long_output),
        assistant(content="Nothing else."),
    )
    transcript, _ = store_upload(owner, data, "needle.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    folded = page.locator("#r2 details.long.output")
    assert folded.count() == 1 and folded.get_attribute("open") is None
    box = page.locator("[data-search-box]")
    box.fill("needle")
    box.press("Enter")
    wait_until(page, "document.querySelector('[data-search-count]').textContent.startsWith('1 of')")
    marked = page.eval_on_selector_all("mark.hit-word", "ms => ms.map(m => m.textContent)")
    assert sorted(text.lower() for text in marked) == ["needle", "needle"]
    assert page.locator("#r0 mark.hit-word").inner_text() == "needle"
    assert page.locator("#r0 img").count() == 0  # the markup in the message is still text
    assert page.evaluate("window.__xss") is None
    box.press("Enter")  # the second hit: inside the folded output
    assert page.locator("article.search-current").get_attribute("id") == "r2"
    assert folded.get_attribute("open") is not None
    assert page.locator("#r2 pre.output mark.hit-word").is_visible()
    assert page.locator("#r2 b").count() == 0
    # A link that carries the query (from a hit on another page, or the project search).
    page.goto(f"/t/{transcript.public_id}/?q=needle#r2")
    wait_until(page, "document.querySelectorAll('mark.hit-word').length > 0")
    assert page.locator("#r2 details.long.output").get_attribute("open") is not None
    assert page.locator("[data-search-box]").input_value() == "needle"
    # A new search takes the old marks away.
    box = page.locator("[data-search-box]")
    box.fill("Nothing else")
    box.press("Enter")
    wait_until(page, "document.querySelector('[data-search-count]').textContent.startsWith('1 of')")
    marked = page.eval_on_selector_all("mark.hit-word", "ms => ms.map(m => m.textContent)")
    assert marked == ["Nothing else"]
    assert page.csp_violations == []
