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
