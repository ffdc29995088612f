from __future__ import annotations

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils.html import escape

from inspector.diagnosis import diagnose
from inspector.formats import load
from inspector.web.models import Transcript
from tests.testdata import CORPUS, read
from tests.web.conftest import BROKEN_CANONICAL, BROKEN_CLAUDE_CODE, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db

# One real file of every shape in the shared corpus, with the format it must be read as.
CORPUS_FILES = [
    (BROKEN_CLAUDE_CODE, "claude-code"),
    (CORPUS / "codex" / "swiftdiaries-agent-transcripts__codex-session.jsonl", "codex"),
    (
        CORPUS
        / "openai-chat"
        / "pydantic-ai__test_openai__test_compatible_api_with_tool_calls_without_id.extracted.json",
        "openai-chat",
    ),
    (
        CORPUS
        / "anthropic"
        / "badlogic-lemmy-via-zkcpku-claude-trace-dev__test-traffic.line34.messages.json",
        "anthropic",
    ),
    (
        CORPUS
        / "responses"
        / "pydantic-ai__test_openai_responses__test_openai_responses_model_retry.extracted.json",
        "responses",
    ),
    (CORPUS / "gemini" / "kvsankar-agent-history__gemini_cli_golden.json", "gemini"),
]
# --- agents-b (issue 27): a broken session of each, so its timeline shows a finding ---
CORPUS_FILES += [
    (CORPUS / "copilot" / "derived__cadra-crashed-mid-tool.events.jsonl", "copilot"),
    (CORPUS / "qwen" / "derived__qwen-writer-crashed.jsonl", "qwen"),
    (
        CORPUS / "kimi-code" / "derived__agent-core-basic-test__crashed-in-tool.wire.jsonl",
        "kimi-code",
    ),
    (CORPUS / "droid" / "derived__zirv-crashed-in-tool.jsonl", "droid"),
    (CORPUS / "opencode" / "derived__lines-interrupted.opencode.jsonl", "opencode"),
]
# --- end agents-b ---
# agents-c (issue 27): an OpenHands trajectory cut while its edit ran; and a real one. And the
# agents of agents-a, which no upload test named: OpenClaw (pi's format), Cline, Cursor,
# Hermes, Goose, Kiro.
CORPUS_FILES += [
    (
        CORPUS
        / "pi"
        / "openclaw-openclaw__8555a0a4-0b79-459d-939c-e17cdbbf4fe2.cut-after-call.jsonl",
        "pi",
    ),
    (CORPUS / "cline" / "mike4567-MRA04242026__api_conversation_history.json", "cline"),
    (CORPUS / "cursor" / "Tdexixi-code-with-ai-contest__cursor_agent_transcript.jsonl", "cursor"),
    (CORPUS / "hermes" / "derived__session_20260214_093012_a1b2c3.cut-after-calls.json", "hermes"),
    (CORPUS / "hermes" / "derived__gateway-transcript.cut-after-call.jsonl", "hermes"),
    (CORPUS / "goose" / "derived__20250929_140310.cut-after-calls.jsonl", "goose"),
    (CORPUS / "goose" / "derived__20250929_1.export.cut-after-calls.json", "goose"),
    (CORPUS / "kiro" / "derived__kiro-cli-session.issue-6110.jsonl", "kiro"),
    (CORPUS / "openhands" / "derived__basic.crashed-in-edit.json", "openhands"),
    (CORPUS / "openhands" / "All-Hands-AI-OpenHands__tests_runtime_trajs_basic.json", "openhands"),
    # ohcli: an OpenHands CLI conversation's events, one list (how the scan and watch read it).
    (CORPUS / "openhands-cli" / "derived__crashed-in-edit.json", "openhands-cli"),
    (CORPUS / "openhands-cli" / "derived__healthy.json", "openhands-cli"),
]


def post_file(client, data: bytes, name: str = "t.json", **extra):
    upload = SimpleUploadedFile(name, data, content_type="application/octet-stream")
    return client.post(reverse("upload"), {"file": upload, **extra})


def test_signed_in_home_is_the_upload_page(owner_client):
    html = owner_client.get("/").content.decode()
    assert "data-dropzone" in html and 'type="file"' in html


@pytest.mark.parametrize(("path", "format"), CORPUS_FILES, ids=[f for _, f in CORPUS_FILES])
def test_upload_of_every_corpus_shape_goes_to_its_timeline(owner_client, path, format):
    response = post_file(owner_client, read(path), path.name)
    assert response.status_code == 302, response.content.decode()[:2000]
    transcript = Transcript.objects.get()
    assert transcript.format == format
    assert response["Location"] == reverse("timeline", args=[transcript.public_id])
    page = owner_client.get(response["Location"])
    assert page.status_code == 200
    assert path.name in page.content.decode()


def test_pasted_text_is_uploaded(owner_client):
    response = owner_client.post(reverse("upload"), {"text": BROKEN_CANONICAL.decode()})
    assert response.status_code == 302
    transcript = Transcript.objects.get()
    assert transcript.file_name == "pasted" and transcript.needs_repair


def test_upload_into_a_project(owner_client, owner):
    post_file(owner_client, HEALTHY_CANONICAL, project="Payments")
    assert Transcript.objects.get().project.name == "Payments"


def test_same_file_twice_goes_to_the_same_transcript(owner_client):
    first = post_file(owner_client, HEALTHY_CANONICAL)
    second = post_file(owner_client, HEALTHY_CANONICAL, name="again.json")
    assert first["Location"] == second["Location"]
    assert Transcript.objects.count() == 1


def _form_error(response) -> str:
    assert response.status_code == 400
    html = response.content.decode()
    assert 'class="form-error"' in html
    return html


def test_empty_file_is_refused_on_the_form(owner_client):
    html = _form_error(post_file(owner_client, b""))
    assert "empty" in html
    assert Transcript.objects.count() == 0


def test_binary_file_gets_the_loaders_explanation(owner_client):
    html = _form_error(post_file(owner_client, bytes(range(256)) * 8, "core.bin"))
    assert Transcript.objects.count() == 0
    assert "Traceback" not in html


def test_invalid_utf8_gets_the_loaders_explanation(owner_client):
    _form_error(post_file(owner_client, b'[{"role": "user", "content": "caf\xe9 \xff"}]'))
    assert Transcript.objects.count() == 0


def test_json_that_is_no_transcript_gets_the_loaders_explanation(owner_client):
    from inspector.formats import FormatError, load

    data = b'{"name": "package", "version": "1.0.0", "dependencies": {}}'
    with pytest.raises(FormatError) as error:
        load(data)
    html = _form_error(post_file(owner_client, data, "package.json"))
    # The loader's own words, escaped as HTML text: its verdict and each shape's reason.
    assert "not a transcript" in html
    assert error.value.attempts
    for name, reason in error.value.attempts:
        assert f"<strong>{escape(name)}</strong>: {escape(reason)}" in html


def test_one_byte_over_the_limit_is_refused_with_the_limit(owner_client, settings):
    settings.INSPECTOR_MAX_UPLOAD_BYTES = len(HEALTHY_CANONICAL) - 1
    html = _form_error(post_file(owner_client, HEALTHY_CANONICAL))
    assert f"{len(HEALTHY_CANONICAL) - 1:,} bytes" in html
    assert Transcript.objects.count() == 0


def test_exactly_the_limit_is_accepted(owner_client, settings):
    settings.INSPECTOR_MAX_UPLOAD_BYTES = len(HEALTHY_CANONICAL)
    assert post_file(owner_client, HEALTHY_CANONICAL).status_code == 302


def test_pasted_text_over_the_limit_is_refused(owner_client, settings):
    settings.INSPECTOR_MAX_UPLOAD_BYTES = 10
    response = owner_client.post(reverse("upload"), {"text": HEALTHY_CANONICAL.decode()})
    assert "the limit is" in _form_error(response)


def test_nothing_given_asks_for_a_file(owner_client):
    assert "Choose a transcript file" in _form_error(owner_client.post(reverse("upload"), {}))


def test_file_and_paste_together_are_refused(owner_client):
    upload = SimpleUploadedFile("t.json", HEALTHY_CANONICAL)
    response = owner_client.post(
        reverse("upload"), {"file": upload, "text": HEALTHY_CANONICAL.decode()}
    )
    assert "not both" in _form_error(response)


def test_unknown_shape_choice_is_a_form_error(owner_client):
    _form_error(post_file(owner_client, HEALTHY_CANONICAL, format="word-document"))


def test_a_reader_crash_is_a_form_error_not_a_500(owner_client, monkeypatch):
    import inspector.formats

    def crash(*args, **kwargs):
        raise KeyError("surprise")

    monkeypatch.setattr(inspector.formats, "load", crash)
    html = _form_error(post_file(owner_client, HEALTHY_CANONICAL))
    assert "bug" in html and Transcript.objects.count() == 0


def test_an_uploaded_goose_export_downloads_repaired_as_a_goose_export(owner_client):
    """What `goose session export --format json` writes, cut as a crash leaves it: the
    repaired download is the same Session object with the calls answered."""
    path = CORPUS / "goose" / "derived__20250929_1.export.cut-after-calls.json"
    data = read(path)
    response = post_file(owner_client, data, path.name)
    assert response.status_code == 302
    transcript = Transcript.objects.get()
    got = owner_client.get(reverse("download", args=[transcript.public_id, "repaired"]))
    assert got.status_code == 200
    written = b"".join(got.streaming_content) if got.streaming else got.content
    assert got["Content-Disposition"].endswith(f'{path.stem}.repaired.json"')  # still JSON
    again = load(written)
    assert again.format == "goose" and not diagnose(again).needs_repair
    before, after = orjson.loads(data), orjson.loads(written)
    assert list(after) == list(before)
    assert after["conversation"][: len(before["conversation"])] == before["conversation"]
    assert len(after["conversation"]) == after["message_count"] == before["message_count"] + 1
