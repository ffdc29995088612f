"""At 390 px (a phone), the first row of the timeline is on the first screen (issue 31)."""

from __future__ import annotations

import pytest

from tests.testdata import read
from tests.web.conftest import BROKEN_CANONICAL, BROKEN_CLAUDE_CODE

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}

# Where the first row's header is, the page at its top, and the heights of what stands above.
FIRST_ROW = """() => {
  const head = document.querySelector("#timeline article.row .row-head").getBoundingClientRect();
  const above = [];
  for (const el of document.querySelectorAll("main > *, .transcript-head > *, .main > *")) {
    const box = el.getBoundingClientRect();
    if (box.height && box.top < head.top) above.push([el.className, Math.round(box.height)]);
  }
  return {top: head.top, bottom: head.bottom, above: above};
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize(
    ("data", "name"),
    [(BROKEN_CANONICAL, "broken.json"), (read(BROKEN_CLAUDE_CODE), BROKEN_CLAUDE_CODE.name)],
    ids=["canonical", "claude-code"],
)
def test_the_first_row_is_on_the_first_screen_at_390_px(signed_in_page, owner, data, name, scheme):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, data, name)
    page = signed_in_page
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size(PHONE)
    page.goto(f"/t/{transcript.public_id}/")
    where = page.evaluate(FIRST_ROW)
    assert where["bottom"] <= PHONE["height"], where
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # What was folded out of the way is one tap away.
    assert page.locator(".verdict-line strong").is_visible()
    findings = page.locator("section.findings")
    assert not findings.is_visible()
    page.locator("summary.fold-title", has_text="Findings").click()
    assert findings.is_visible() and findings.locator("li a").count() >= 1
    assert not page.locator("section.downloads").is_visible()
    # Wide, nothing is folded: the findings and downloads sit beside the rows.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.locator("section.downloads").wait_for(state="visible", timeout=5000)
    assert findings.is_visible() and page.locator("section.downloads").is_visible()
    assert not page.locator("summary.fold-title").first.is_visible()
    assert page.csp_violations == []
