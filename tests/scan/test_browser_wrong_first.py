"""What is wrong first, in Chromium (issue 31, point 2): the finished scan's page lists the
sessions that need repair with links, and the dashboard puts them first; light and dark,
wide and 390 px. (The empty files' one line: ``test_dashboard_words``.)"""

from __future__ import annotations

import pytest

from tests.scan.conftest import MIXED_NEEDS_REPAIR

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 800}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["wide", "390px"])
def test_the_scan_page_and_the_dashboard_show_what_is_wrong_first(
    signed_in_page, run_scan, mixed_tree, scheme, size
):
    job, _ = run_scan(mixed_tree, project="mixed")
    page = signed_in_page
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size(size)
    page.goto(job.get_absolute_url())
    listed = page.locator("table.sessions.broken a.path")
    assert set(listed.all_inner_texts()) == MIXED_NEEDS_REPAIR
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    first = listed.first
    name = first.inner_text()
    with page.expect_navigation():
        first.click()
    assert (
        "/t/" in page.url
        and "This history needs repair." in page.locator(".verdict-line").inner_text()
    )
    assert name.rsplit("/", 1)[-1] in page.locator("h1").inner_text()

    page.goto("/p/mixed/")
    paths = page.locator("table.sessions a.path").all_inner_texts()
    head = len(MIXED_NEEDS_REPAIR)
    assert set(paths[:head]) == MIXED_NEEDS_REPAIR and len(paths) > head
    assert "empty.jsonl" not in paths
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    assert page.csp_violations == []
