"""Issue 31 in the browser: the project search's regular expressions and dates, the row
numbers it names, and the cache tokens of the dashboard and the timeline; light and dark,
wide and 390 px."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.browser.waits import wait_until
from tests.search.conftest import DEPLOY, REFUND
from tests.testdata import read
from tests.web.conftest import BROKEN_CLAUDE_CODE

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 800}
SIZES = pytest.mark.parametrize("size", [WIDE, PHONE], ids=["wide", "390px"])
SCHEMES = pytest.mark.parametrize("scheme", ["light", "dark"])

ANSWERED = """(() => {
  const said = document.querySelector("[data-search-count]").textContent;
  return said.length > 0 && !said.endsWith("…");
})()"""


@pytest.fixture
def project(owner):
    from inspector.web.models import Transcript
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "work")
    for data, path, day in (
        (DEPLOY, "ops/deploy.json", "2026-03-01"),
        (REFUND, "support/refund.json", "2026-03-20"),
        (read(BROKEN_CLAUDE_CODE), "claude.jsonl", "2026-03-21"),
    ):
        transcript, _ = store_upload(owner, data, path.rsplit("/", 1)[-1], project=project)
        moment = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
        Transcript.objects.filter(pk=transcript.pk).update(relative_path=path, created=moment)
    return project


def fits(page, size) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]


@SCHEMES
@SIZES
def test_a_regex_search_with_dates_from_the_dashboard_opens_its_row(
    signed_in_page, project, scheme, size
):
    page = signed_in_page
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size(size)
    page.goto(f"/p/{project.slug}/")
    fits(page, size)
    # The dashboard's totals: the Claude Code session's tokens, the cache's among them.
    tokens = page.locator(".totals .token-totals")
    assert "38,395 in · 4 out" in tokens.inner_text()
    assert "38,385 cache write" in tokens.inner_text()
    # Regex and dates are one tap away, under the box.
    more = page.locator("details.search-more")
    assert not more.locator("input[name=regex]").is_visible()
    more.locator("summary").click()
    more.locator("input[name=regex]").check()
    more.locator("input[name=since]").fill("2026-03-10")
    box = page.locator("[data-project-search]")
    box.fill(r"order \d{4}")
    with page.expect_navigation():
        box.press("Enter")
    assert "regex=on" in page.url and "since=2026-03-10" in page.url
    heading = page.locator("h1").inner_text()
    assert heading.startswith("1 row in 1 session matches /order \\d{4}/")
    assert "from 2026-03-10 on" in heading
    hit = page.locator(".project-hit")
    assert hit.count() == 1 and hit.locator(".path").inner_text() == "support/refund.json"
    assert hit.locator(".snippet mark").all_inner_texts() == ["order 4411"]
    # Numbered as the timeline numbers it.
    label = hit.locator("a.hit-link").inner_text().split(" · ")[1]
    assert label == "message 1"
    # The box keeps what was asked, opened.
    assert page.locator("details.search-more").get_attribute("open") is not None
    assert page.locator("input[name=regex]").is_checked()
    assert page.locator("input[name=since]").input_value() == "2026-03-10"
    fits(page, size)
    with page.expect_navigation():
        hit.locator("a.hit-link").click()
    key = page.url.split("#")[1]
    row = page.locator(f"#{key}")
    assert row.locator("a.anchor").inner_text() == "#1"
    wait_until(page, ANSWERED)
    assert "search-current" in row.get_attribute("class")
    assert page.csp_violations == []


@SCHEMES
@SIZES
def test_a_bad_pattern_says_why_and_keeps_the_box(signed_in_page, project, scheme, size):
    page = signed_in_page
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size(size)
    response = page.goto(f"/p/{project.slug}/search/?q=%28unclosed&regex=on")
    assert response.status == 400
    error = page.locator(".pattern-error")
    assert error.is_visible() and "missing )" in error.inner_text()
    colour = page.evaluate("getComputedStyle(document.querySelector('.pattern-error')).color")
    body = page.evaluate("getComputedStyle(document.body).color")
    assert colour != body, "it stands out"
    assert page.locator("[data-project-search]").input_value() == "(unclosed"
    assert page.locator("input[name=regex]").is_checked()
    fits(page, size)
    assert page.csp_violations == []


@SCHEMES
@SIZES
def test_the_timeline_header_and_rows_show_the_cache(signed_in_page, project, scheme, size):
    from inspector.web.models import Transcript

    claude = Transcript.objects.get(relative_path="claude.jsonl")
    page = signed_in_page
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size(size)
    page.goto(claude.get_absolute_url())
    header = page.locator(".transcript-head .token-totals").inner_text()
    assert header == "38,395 tokens in (38,385 cache write) · 4 out"
    row = page.locator("article.row .tokens").first.inner_text()
    assert row == "38,395 in (38,385 cache write) · 4 out"
    fits(page, size)
    assert page.csp_violations == []
