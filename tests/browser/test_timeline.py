"""The product as a person meets it: drop a broken session, read it, follow a rule, download."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from tests.web.conftest import (
    BROKEN_CLAUDE_CODE,
    XSS_CANONICAL,
    assistant,
    call,
    canonical,
    result,
    user,
)

pytestmark = pytest.mark.django_db(transaction=True)

DROP_FILE = """([name, b64]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], name, {type: "application/jsonl"}));
  return transfer;
}"""


def drop_on_zone(page, path: Path) -> None:
    payload = base64.b64encode(path.read_bytes()).decode()
    transfer = page.evaluate_handle(DROP_FILE, [path.name, payload])
    page.dispatch_event("[data-dropzone]", "drop", {"dataTransfer": transfer})
    assert path.name in page.locator("[data-dropzone-name]").inner_text()
    with page.expect_navigation():
        page.get_by_role("button", name="Inspect", exact=True).click()


def test_drop_a_broken_session_read_it_follow_a_rule_and_download_the_repair(signed_in_page):
    from inspector.diagnosis import diagnose
    from inspector.formats import load

    page = signed_in_page
    page.goto("/")
    drop_on_zone(page, BROKEN_CLAUDE_CODE)
    assert re.search(r"/t/[\w-]{16,}/$", page.url)
    assert BROKEN_CLAUDE_CODE.name in page.locator("h1").inner_text()
    assert page.locator(".findings li").count() >= 1
    assert "PAIR-1" in page.locator(".findings").inner_text()
    timeline_url = page.url

    badge = page.locator("article.has-findings a.badge").first
    rule = badge.inner_text()
    badge.click()
    page.wait_for_url(f"**/rules/{rule}/")
    assert rule in page.locator("h1").inner_text()
    assert "Your transcripts that break it" in page.content()

    page.goto(timeline_url)
    page.locator("nav.toggle").get_by_role("link", name="Repaired").click()
    page.wait_for_url("**view=repaired")
    assert page.locator("nav.toggle a[aria-current]").inner_text() == "Repaired"

    with page.expect_download() as info:
        page.get_by_role("link", name="Repaired file").click()
    repaired = Path(info.value.path()).read_bytes()
    again = diagnose(load(repaired))
    assert again.format == "claude-code"
    assert not again.needs_repair and again.findings == []
    assert page.csp_violations == []


def test_a_chosen_file_waits_for_inspect_so_shape_and_project_can_be_set(signed_in_page):
    """Issue 31: choosing the file used to send it at once, before the shape and the
    project could be set; now it waits for Inspect, and the choices are remembered."""
    from inspector.web.models import Transcript

    page = signed_in_page
    page.goto("/upload/")
    sent: list[str] = []
    page.on(
        "request", lambda request: sent.append(request.url) if request.method == "POST" else None
    )
    page.locator("[data-dropzone] input[type=file]").set_input_files(str(BROKEN_CLAUDE_CODE))
    assert BROKEN_CLAUDE_CODE.name in page.locator("[data-dropzone-name]").inner_text()
    page.wait_for_timeout(300)
    assert sent == [] and "/upload/" in page.url
    page.locator("select[name=format]").select_option("claude-code")
    page.locator("input[name=project]").fill("triage")
    with page.expect_navigation():
        page.get_by_role("button", name="Inspect", exact=True).click()
    assert "/t/" in page.url and page.locator("article.row").count() > 1
    stored = Transcript.objects.get()
    assert stored.project is not None and stored.project.name == "triage"
    assert stored.format == "claude-code"
    page.goto("/upload/")  # the next upload starts from the same choices
    assert page.locator("select[name=format]").input_value() == "claude-code"
    assert page.locator("input[name=project]").input_value() == "triage"


def test_an_unreadable_file_shows_the_reason_on_the_form(signed_in_page, tmp_path):
    page = signed_in_page
    junk = tmp_path / "notes.json"
    junk.write_text('{"shopping": ["eggs", "milk"]}')
    page.goto("/upload/")
    page.locator("[data-dropzone] input[type=file]").set_input_files(str(junk))
    with page.expect_navigation():
        page.get_by_role("button", name="Inspect", exact=True).click()
    assert page.locator(".form-error").is_visible()
    assert page.locator(".form-error").inner_text().strip()


def test_transcript_text_is_shown_as_text_and_runs_nothing(signed_in_page, owner):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, XSS_CANONICAL, "xss.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    first = page.locator("article.row").first.inner_text()
    assert "<script>window.__xss=1</script>" in first
    assert '<img src=x onerror="window.__xss=1">' in first
    assert page.locator("article img").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"


def test_scrolling_loads_the_next_page_of_rows(signed_in_page, owner):
    from inspector.web.store import store_upload

    messages = [user("start")]
    for number in range(120):
        messages += [assistant(call(f"k{number}")), result(f"k{number}")]
    transcript, _ = store_upload(owner, canonical(*messages), "long.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    assert page.locator("article.row").count() == 200
    page.locator("a.sentinel").scroll_into_view_if_needed()
    page.wait_for_selector("#r200")
    assert page.locator("article.row").count() == 241
    assert page.locator("a.sentinel").count() == 0
    assert page.csp_violations == []
