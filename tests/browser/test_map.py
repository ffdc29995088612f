"""Issue 18, point 4: a map of the session above the timeline, and a short page when healthy."""

from __future__ import annotations

import pytest

from tests.browser.waits import wait_until
from tests.web.conftest import BROKEN_CANONICAL, BROKEN_LONG, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db(transaction=True)


def stored(owner, data: bytes, name: str):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, data, name)
    return transcript


def test_the_map_has_a_mark_per_row_by_role_and_marks_the_findings(signed_in_page, owner):
    transcript = stored(owner, BROKEN_CANONICAL, "broken.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    rows = page.eval_on_selector_all(
        "article.row", "rs => rs.map(r => r.className.match(/role-(\\w+)/)[1])"
    )
    marks = page.eval_on_selector_all(
        "svg.map rect.m", "ms => ms.map(m => m.classList[1].slice(2))"
    )
    assert marks == rows
    finding_rows = page.locator("article.row.has-findings").count()
    assert page.locator("svg.map rect.m-finding").count() == finding_rows
    frame = page.locator("svg.map rect.m-window")
    assert (frame.get_attribute("x"), frame.get_attribute("width")) == ("0", str(len(rows)))
    assert page.csp_violations == []


def test_clicking_the_map_jumps_to_rows_on_another_page(signed_in_page, owner):
    transcript = stored(owner, BROKEN_LONG, "long.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    marks = page.locator("svg.map rect.m")
    assert marks.count() == 300  # 661 rows: a mark stands for two or three
    frame = page.locator("svg.map rect.m-window")
    first_width = float(frame.get_attribute("width"))
    assert 85 < first_width < 95  # 200 of 661 rows
    box = page.locator("svg.map").bounding_box()
    with page.expect_navigation():
        page.mouse.click(box["x"] + box["width"] * 0.95, box["y"] + box["height"] * 0.6)
    assert "page=4" in page.url
    key = page.url.split("#")[1]
    assert page.locator(f"#{key}").is_visible()
    assert int(key[1:]) >= 600
    frame = page.locator("svg.map rect.m-window")
    assert float(frame.get_attribute("x")) > 250


def test_the_frame_grows_as_pages_load(signed_in_page, owner):
    transcript = stored(owner, BROKEN_LONG, "long.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    frame = page.locator("svg.map rect.m-window")
    before = float(frame.get_attribute("width"))
    page.locator("a.sentinel").scroll_into_view_if_needed()
    page.wait_for_selector("#r200")
    wait_until(
        page,
        f"parseFloat(document.querySelector('svg.map .m-window').getAttribute('width')) > {before}",
    )


def test_a_healthy_session_is_the_verdict_the_map_and_the_content(signed_in_page, owner):
    transcript = stored(owner, HEALTHY_CANONICAL, "healthy.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    assert "Nothing to repair." in page.locator(".verdict-line").inner_text()
    assert page.locator("svg.map rect.m").count() == 4
    assert page.locator(".findings").count() == 0, "no empty findings panel"
    assert page.locator("aside.side").count() == 0
    assert page.get_by_role("link", name="Repaired file").count() == 0
    assert not page.locator("table.verdicts").is_visible()
    assert "Every provider checked accepts it as it is" in page.inner_text("main")
    # The page is short: the first row is on the first screen.
    assert page.locator("#r0").bounding_box()["y"] < 500
    assert page.locator("select[name=rule]").count() == 0, "no findings to filter by"
    page.get_by_text("Download, share or delete").click()
    assert page.get_by_role("link", name="Original bytes").is_visible()
    assert page.csp_violations == []


def test_a_broken_session_keeps_the_findings_and_the_repaired_file(signed_in_page, owner):
    transcript = stored(owner, BROKEN_CANONICAL, "broken.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    assert page.locator(".findings").is_visible()
    assert page.get_by_role("link", name="Repaired file").is_visible()
    assert page.locator("table.verdicts").is_visible()
