"""Issue 18, point 6 in the browser: plain rule pages, a rule menu of what is here."""

from __future__ import annotations

import re

import pytest

from tests.web.conftest import BROKEN_CANONICAL

pytestmark = pytest.mark.django_db(transaction=True)


def test_from_a_finding_to_a_plain_rule_page_and_back_to_its_rows(signed_in_page, owner):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, BROKEN_CANONICAL, "broken.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    options = page.locator("select[name=rule] option").all_inner_texts()
    assert options[0] == "Any rule" and len(options) == 4
    assert all(re.search(r"\(\d+\)$", option) for option in options[1:]), options
    page.select_option("select[name=rule]", "ID-1")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**rule=ID-1**")
    assert page.locator("article.row").count() == page.locator("article.row.has-findings").count()
    page.locator(".findings a.badge", has_text="ID-1").click()
    page.wait_for_url("**/rules/ID-1/")
    assert page.locator("h1").inner_text() == "ID-1 Two calls had the same id"
    labels = page.locator("dl.plain dt").all_inner_texts()
    assert labels == ["What went wrong", "What the repair does", "What to do"]
    source = page.locator("p.source a").first
    assert "seeds" not in source.inner_text()
    source.click()
    assert page.url.endswith(".txt")
