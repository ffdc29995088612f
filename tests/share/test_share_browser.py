"""Sharing as people do it: the owner makes a redacted link, a colleague opens it, then not."""

from __future__ import annotations

import orjson
import pytest

from tests.share.test_share_pages import CANARY, CANARY_MESSAGES, CANARY_NAME

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_owner_shares_a_redacted_link_that_shows_findings_but_no_content_until_revoked(
    signed_in_page, browser, live_server, store_for
):
    transcript = store_for(orjson.dumps(CANARY_MESSAGES), CANARY_NAME)
    page = signed_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(transcript.get_absolute_url())

    panel = page.locator("#share-panel")
    panel.locator("form.share-form").wait_for()  # loaded by htmx from the share app
    assert panel.get_by_label("Redacted", exact=False).is_checked()
    panel.get_by_role("button", name="Create link").click()
    link_input = panel.locator("#share-url")
    link_input.wait_for()
    url = link_input.input_value()
    assert f"{live_server.url}/s/" in url
    panel.get_by_role("button", name="Copy").click()
    panel.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == url

    colleague = browser.new_context()
    other = colleague.new_page()
    violations: list[str] = []
    other.on(
        "console",
        lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    response = other.goto(url)
    assert response.status == 200
    assert other.locator(".findings li").count() >= 3
    for rule in ("PAIR-1", "PAIR-3", "ID-1"):
        assert other.locator(f"article a.badge:text-is('{rule}')").count() >= 1
    assert other.locator(".call-name").first.inner_text() == "search"
    content = other.content()
    assert CANARY not in content
    assert "[redacted: 22 characters]" in content
    assert response.headers["referrer-policy"] == "no-referrer"

    panel.get_by_role("button", name="Revoke").click()
    panel.locator("tr.link-revoked").wait_for()
    assert panel.get_by_role("button", name="Revoke").count() == 0

    gone = other.reload()
    assert gone.status == 404
    assert "This link opens nothing" in other.content()
    assert page.csp_violations == [] and violations == []
    colleague.close()
