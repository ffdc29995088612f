"""Issue 18, point 7 in the browser: copy buttons, the download to put in place, upload progress."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.web.conftest import BROKEN_CANONICAL, BROKEN_CLAUDE_CODE, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = "5a3bb1c8-c3ce-466e-b487-24212cbf1da1"

# Every text the upload's status line shows, kept across the navigation that ends it.
RECORD_STATUS = """() => {
  new MutationObserver(() => {
    const line = document.querySelector("[data-upload-status]");
    if (line && line.textContent) window.recordStatus(line.textContent);
  }).observe(document, {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture
def claude_transcript(owner):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, BROKEN_CLAUDE_CODE.read_bytes(), BROKEN_CLAUDE_CODE.name)
    return transcript


def test_copy_buttons_copy_the_resume_command_and_the_ids(signed_in_page, claude_transcript):
    page = signed_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"/t/{claude_transcript.public_id}/")
    resume = page.locator("p.resume button.copy")
    resume.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == f"cd /Users/gtrrz-victor/wks/cli && claude --resume {SESSION}"
    assert resume.inner_text() == "Copied"
    page.get_by_role("button", name="Copy the session id").click()
    assert page.evaluate("navigator.clipboard.readText()") == SESSION
    page.get_by_role("button", name="Copy the transcript id").click()
    assert page.evaluate("navigator.clipboard.readText()") == claude_transcript.public_id
    page.get_by_role("button", name="Copy the commands").click()
    assert page.evaluate("navigator.clipboard.readText()").startswith("cp ~/.claude/projects/")


def test_a_new_api_token_has_a_copy_button(signed_in_page):
    page = signed_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/account/")
    page.fill("input[name=name]", "ci")
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-token").inner_text()
    page.locator(".new-token button.copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == token


def test_the_repaired_file_downloads_under_the_name_it_needs_in_place(
    signed_in_page, claude_transcript
):
    from inspector.diagnosis import diagnose
    from inspector.formats import load

    page = signed_in_page
    page.goto(f"/t/{claude_transcript.public_id}/")
    with page.expect_download() as info:
        page.get_by_role("link", name="Repaired file").click()
    assert info.value.suggested_filename == f"{SESSION}.jsonl"
    assert not diagnose(load(Path(info.value.path()).read_bytes())).needs_repair
    target = page.locator("p.target code").first.inner_text()
    assert target == f"~/.claude/projects/-Users-gtrrz-victor-wks-cli/{SESSION}.jsonl"


def test_next_and_previous_sessions_that_need_repair(signed_in_page, owner):
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "work")
    first, _ = store_upload(owner, BROKEN_CANONICAL, "first.json", project=project)
    store_upload(owner, HEALTHY_CANONICAL, "healthy.json", project=project)
    last, _ = store_upload(owner, BROKEN_CLAUDE_CODE.read_bytes(), "last.jsonl", project=project)
    page = signed_in_page
    page.goto(f"/t/{first.public_id}/")
    page.get_by_role("link", name="next session needing repair: last.jsonl →").click()
    page.wait_for_url(f"**/t/{last.public_id}/")
    page.get_by_role("link", name="← previous session needing repair: first.json").click()
    page.wait_for_url(f"**/t/{first.public_id}/")


def big_transcript() -> bytes:
    """About 3 MB, so the upload has bytes to count."""
    text = "x" * 1000
    messages = [{"role": "user", "content": f"{n} {text}"} for n in range(3000)]
    return orjson.dumps(messages)


def test_upload_shows_the_bytes_sent_then_diagnosing(signed_in_page, tmp_path):
    page = signed_in_page
    statuses: list[str] = []
    page.expose_function("recordStatus", lambda text: statuses.append(text))
    page.add_init_script(f"({RECORD_STATUS})()")
    path = tmp_path / "big-session.json"
    path.write_bytes(big_transcript())
    page.goto("/upload/")
    page.locator("[data-dropzone] input[type=file]").set_input_files(str(path))
    with page.expect_navigation(url="**/t/**"):
        page.get_by_role("button", name="Inspect", exact=True).click()
    assert any("Sending big-session.json: " in s and " of 3.0 MB" in s for s in statuses), statuses
    assert any("Diagnosing" in s for s in statuses), statuses
    assert page.locator("article.row").count() == 200


def test_a_refused_upload_names_the_file_and_identical_bytes_say_so(signed_in_page, tmp_path):
    page = signed_in_page
    junk = tmp_path / "shopping.json"
    junk.write_text('{"shopping": ["eggs", "milk"]}')
    page.goto("/upload/")
    page.locator("[data-dropzone] input[type=file]").set_input_files(str(junk))
    with page.expect_navigation():
        page.get_by_role("button", name="Inspect", exact=True).click()
    assert "shopping.json:" in page.locator(".form-error").first.inner_text()
    good = tmp_path / "session.json"
    good.write_bytes(BROKEN_CANONICAL)
    page.locator("[data-dropzone] input[type=file]").set_input_files(str(good))
    with page.expect_navigation(url="**/t/**"):
        page.get_by_role("button", name="Inspect", exact=True).click()
    first = page.url
    again = tmp_path / "again.json"
    again.write_bytes(BROKEN_CANONICAL)
    page.goto("/upload/")
    page.locator("[data-dropzone] input[type=file]").set_input_files(str(again))
    with page.expect_navigation(url="**/t/**"):
        page.get_by_role("button", name="Inspect", exact=True).click()
    assert page.url == first
    flash = page.locator(".flash").inner_text()
    assert "again.json is the same transcript as session.json" in flash
    assert page.csp_violations == []


def test_each_row_shows_when_which_model_and_tokens_and_the_header_totals(
    signed_in_page, claude_transcript
):
    """Issue 18, point 3."""
    page = signed_in_page
    page.goto(f"/t/{claude_transcript.public_id}/")
    reply = page.locator("#r1")
    assert reply.locator("time").inner_text() == "00:00:44"
    assert reply.locator(".since").inner_text() == "+5.4 s"
    assert reply.locator(".chip.model").inner_text() == "claude-opus-4-5-20251101"
    # Issue 31: of the tokens in, what went into the prompt cache (none was read from it).
    assert reply.locator(".tokens").inner_text() == "38,395 in (38,385 cache write) · 4 out"
    facts = page.locator(".transcript-head .facts").inner_text()
    assert "38,395 tokens in (38,385 cache write) · 4 out" in facts and "5.4 s long" in facts
