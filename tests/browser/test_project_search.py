"""Issue 18, point 1 in the browser: search every session of a project, open a hit on its row."""

from __future__ import annotations

import os

import pytest

from tests.browser.waits import wait_until
from tests.search.conftest import DEPLOY, REFUND
from tests.web.conftest import BROKEN_LONG

pytestmark = pytest.mark.django_db(transaction=True)

# The timeline's search box has its answer (not "searching…", not empty yet).
ANSWERED = """(() => {
  const said = document.querySelector("[data-search-count]").textContent;
  return said.length > 0 && !said.endsWith("…");
})()"""


@pytest.fixture
def project_of_three(owner):
    from inspector.web.models import Transcript
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "work")
    for data, path in (
        (DEPLOY, "ops/deploy.json"),
        (REFUND, "support/refund.json"),
        (BROKEN_LONG, "long.json"),
    ):
        transcript, _ = store_upload(owner, data, path.rsplit("/", 1)[-1], project=project)
        Transcript.objects.filter(pk=transcript.pk).update(relative_path=path)
    return project


def test_search_the_dashboard_then_open_the_row_on_its_page(signed_in_page, project_of_three):
    page = signed_in_page
    page.goto(f"/p/{project_of_three.slug}/")
    box = page.locator("[data-project-search]")
    box.fill("step 250")
    with page.expect_navigation():
        box.press("Enter")
    assert f"/p/{project_of_three.slug}/search/?q=step+250" in page.url
    assert page.locator("h1").inner_text() == "1 row in 1 session holds “step 250”"
    hit = page.locator(".project-hit")
    assert hit.count() == 1
    assert hit.locator(".path").inner_text() == "long.json"
    assert hit.locator(".role").inner_text().lower() == "assistant"
    assert hit.locator(".snippet mark").all_inner_texts() == ["step", "250"]
    if os.environ.get("INSPECTOR_SCREENSHOTS"):
        page.screenshot(path=f"{os.environ['INSPECTOR_SCREENSHOTS']}/project-search.png")
    with page.expect_navigation():
        hit.locator("a.hit-link").click()
    assert "page=3" in page.url and "q=step+250" in page.url
    key = page.url.split("#")[1]
    row = page.locator(f"#{key}")
    assert "step 250" in row.inner_text()
    # The timeline's own search carries on from the row it opened on.
    wait_until(page, ANSWERED)
    assert page.locator("[data-search-count]").inner_text() == "1 of 1 row"
    assert "search-current" in row.get_attribute("class")
    assert row.is_visible()
    assert page.csp_violations == []


def test_words_apart_in_a_row_still_open_it_with_a_word_it_holds(signed_in_page, project_of_three):
    page = signed_in_page
    page.goto(f"/p/{project_of_three.slug}/search/?q=gateway+refund")
    hits = page.locator(".project-hit")
    assert hits.count() >= 1
    assert set(hits.locator(".path").all_inner_texts()) == {"support/refund.json"}
    first = hits.first
    marks = {m.lower() for m in first.locator(".snippet mark").all_inner_texts()}
    assert marks <= {"gateway", "refund"} and marks
    with page.expect_navigation():
        first.locator("a.hit-link").click()
    key = page.url.split("#")[1]
    wait_until(page, ANSWERED)
    # Not "no row holds it": the box holds a word of the row, and the row is the current hit.
    assert "of" in page.locator("[data-search-count]").inner_text()
    assert "search-current" in page.locator(f"#{key}").get_attribute("class")
    assert page.csp_violations == []
