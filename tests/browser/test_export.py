"""The diagnosis as one self-contained HTML file (issue 31): read from disk, no server."""

from __future__ import annotations

import re

import pytest

from tests.web.conftest import BROKEN_CANONICAL

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2


@pytest.fixture
def exported(owner, owner_client, tmp_path):
    """Both exports of a broken session holding a secret, written to files."""
    import orjson

    from inspector.web.store import store_upload

    messages = orjson.loads(BROKEN_CANONICAL)
    messages[0]["content"] = f"find the ticket, key {SECRET}"
    transcript, _ = store_upload(owner, orjson.dumps(messages), "broken.json")
    files = {}
    for kind in ("html", "html-redacted"):
        response = owner_client.get(f"/t/{transcript.public_id}/download/{kind}/")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
        path = tmp_path / f"{kind}.html"
        path.write_bytes(response.content)
        files[kind] = path
    return transcript, files


def test_the_exported_file_reads_alone_with_findings_verdicts_keys_and_dark_mode(browser, exported):
    transcript, files = exported
    html = files["html"].read_text()
    # Nothing from outside: no script or style fetched, every link to a row is in the file.
    assert not re.search(r"<script[^>]+src=|<link[^>]+stylesheet", html)
    assert SECRET not in html and "[masked OpenAI key" in html
    context = browser.new_context(color_scheme="dark")
    page = context.new_page()
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith("file:") else None)
    page.goto(files["html"].as_uri())
    assert fetched == []
    assert "This history needs repair." in page.locator(".verdict-line").inner_text()
    assert page.locator("table.verdicts tbody tr").count() == 4
    from inspector.web import store

    assert page.locator(".findings li").count() == len(store.get_diagnosis(transcript).findings)
    first = page.locator(".findings li a").first
    assert first.get_attribute("href").startswith("#r")
    assert page.locator("article.row").count() >= 9
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)")  # dark, from the file
    page.locator("body").press("j")
    page.keyboard.press("j")
    assert page.evaluate("document.querySelector('article.row.current').id") == "r1"
    page.keyboard.press("n")
    assert page.evaluate(
        "document.querySelector('article.row.current').classList.contains('has-findings')"
    )
    context.close()


def test_the_redacted_export_holds_no_content(browser, exported):
    _, files = exported
    html = files["html-redacted"].read_text()
    assert "find the ticket" not in html and SECRET not in html
    assert "Exported, redacted." in html and "PAIR-1" in html
