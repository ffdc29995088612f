"""Issue 18, point 7 without a browser: in-place downloads, neighbours, upload answers."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.testdata import CORPUS, read
from tests.web.conftest import (
    BROKEN_CANONICAL,
    BROKEN_CLAUDE_CODE,
    HEALTHY_CANONICAL,
    broken_history,
)

pytestmark = pytest.mark.django_db

SESSION = "5a3bb1c8-c3ce-466e-b487-24212cbf1da1"
CODEX = CORPUS / "codex" / "kvsankar-agent-history__codex_with_escalation.jsonl"  # needs repair


def test_the_repaired_session_downloads_under_the_name_claude_code_resumes(
    owner_client, claude_transcript
):
    response = owner_client.get(reverse("download", args=[claude_transcript.public_id, "in-place"]))
    assert response.status_code == 200
    assert f'filename="{SESSION}.jsonl"' in response["Content-Disposition"]
    html = owner_client.get(claude_transcript.get_absolute_url()).content.decode()
    path = f"~/.claude/projects/-Users-gtrrz-victor-wks-cli/{SESSION}.jsonl"
    assert f"It goes at <code>{path}</code>" in html
    assert f"mv ~/Downloads/{SESSION}.jsonl {path}" in html
    assert (
        f'data-copy-text="cd /Users/gtrrz-victor/wks/cli &amp;&amp; claude --resume {SESSION}"'
        in html
    )


def test_a_codex_rollout_keeps_its_name_and_its_days_folder(owner_client, store_for):
    transcript = store_for(read(CODEX), "rollout-2026-02-23T12-40-23-rejection-codex-001.jsonl")
    response = owner_client.get(reverse("download", args=[transcript.public_id, "in-place"]))
    assert response.status_code == 200
    assert transcript.file_name in response["Content-Disposition"]
    html = owner_client.get(transcript.get_absolute_url()).content.decode()
    assert f"~/.codex/sessions/2026/02/23/{transcript.file_name}" in html
    other = store_for(read(CODEX).replace(b"rejection-codex-001", b"other-session"), "codex.jsonl")
    response = owner_client.get(reverse("download", args=[other.public_id, "in-place"]))
    assert 'filename="rollout-other-session.jsonl"' in response["Content-Disposition"]


def test_only_agent_sessions_have_an_in_place_download(owner_client, transcript):
    response = owner_client.get(reverse("download", args=[transcript.public_id, "in-place"]))
    assert response.status_code == 404


def test_a_projects_sessions_that_need_repair_link_to_each_other(owner_client, owner):
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "work")
    first, _ = store_upload(owner, BROKEN_CANONICAL, "a.json", project=project)
    healthy, _ = store_upload(owner, HEALTHY_CANONICAL, "b.json", project=project)
    third, _ = store_upload(owner, broken_history(5), "c.json", project=project)
    html = owner_client.get(first.get_absolute_url()).content.decode()
    assert (
        f'<a href="{third.get_absolute_url()}" rel="next">next session needing repair: c.json'
        in html
    )
    assert 'rel="prev"' not in html
    html = owner_client.get(third.get_absolute_url()).content.decode()
    assert f'<a href="{first.get_absolute_url()}" rel="prev">' in html
    assert healthy.get_absolute_url() not in html.split('class="neighbours"')[1].split("</nav>")[0]


def post(client, data: bytes, name: str, **headers):
    return client.post(reverse("upload"), {"file": SimpleUploadedFile(name, data)}, **headers)


def test_a_scripted_upload_is_answered_with_where_to_go(owner_client):
    response = post(owner_client, BROKEN_CANONICAL, "x.json", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    answer = response.json()
    assert answer["created"] is True and answer["location"].startswith("/t/")


def test_the_same_bytes_again_say_they_are_the_same_transcript(owner_client):
    first = post(owner_client, BROKEN_CANONICAL, "first.json")
    again = post(owner_client, BROKEN_CANONICAL, "second.json")
    assert again["Location"] == first["Location"]
    html = owner_client.get(again["Location"]).content.decode()
    assert "second.json is the same transcript as first.json, uploaded" in html
    assert "the bytes are identical" in html


def test_an_unreadable_file_is_named_in_the_error(owner_client):
    response = post(owner_client, b'{"shopping": ["eggs"]}', "notes.json")
    assert response.status_code == 400
    assert "notes.json: " in response.content.decode()


def test_a_file_over_the_limit_is_named(owner_client, settings):
    settings.INSPECTOR_MAX_UPLOAD_BYTES = 10
    response = post(owner_client, read(BROKEN_CLAUDE_CODE), "big.jsonl")
    assert response.status_code == 400
    assert "big.jsonl: The transcript is" in response.content.decode()
