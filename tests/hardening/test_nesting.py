"""JSON nested deeper than the reader supports is a clear 400 naming the limit, on every path."""

from __future__ import annotations

import io

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from inspector.scan.models import ScanJob
from inspector.share.models import ShareLink
from inspector.web.models import ApiToken, Transcript
from inspector.web.store import DEPTH_LIMIT, TOO_DEEP

pytestmark = pytest.mark.django_db


def nested(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


def in_arguments(depth: int) -> bytes:
    call = b'{"tool_call_id": "a", "name": "f", "arguments": ' + nested(depth) + b"}"
    return b'[{"role": "assistant", "content": "", "metadata": {"tool_calls": [' + call + b"]}}]"


def in_tool_input(depth: int) -> bytes:
    use = b'{"type": "tool_use", "id": "t", "name": "Bash", "input": {"a": ' + nested(depth) + b"}}"
    message = b'{"id": "m", "role": "assistant", "content": [' + use + b"]}"
    return (
        b'{"type": "assistant", "uuid": "u1", "parentUuid": null, "sessionId": "s", '
        b'"message": ' + message + b"}\n"
    )


def in_record(depth: int) -> bytes:
    """Deep only in a field no page shows: read fine, but not written back."""
    return (
        b'{"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s", '
        b'"message": {"role": "user", "content": "hi"}, "extra": ' + nested(depth) + b"}\n"
    )


TOO_DEEP_FILES = {
    "arguments, past the writer": in_arguments(300),
    "tool input, past the writer": in_tool_input(260),
    "content, past the parser": b'[{"role": "user", "content": ' + nested(1100) + b"}]",
    "wrapped, past the parser": b'{"messages": ' + nested(1100) + b"}",
}


def test_the_message_names_the_limit():
    assert str(DEPTH_LIMIT) in TOO_DEEP


@pytest.mark.parametrize("data", TOO_DEEP_FILES.values(), ids=TOO_DEEP_FILES.keys())
def test_the_upload_form_refuses_a_file_nested_too_deep(owner_client, data):
    upload = SimpleUploadedFile("deep.json", data)
    response = owner_client.post(reverse("upload"), {"file": upload})
    assert response.status_code == 400
    assert f"more than {DEPTH_LIMIT} levels" in response.content.decode()
    assert not Transcript.objects.exists()


@pytest.mark.parametrize("data", TOO_DEEP_FILES.values(), ids=TOO_DEEP_FILES.keys())
def test_the_api_refuses_a_file_nested_too_deep(client, owner, data):
    _, token = ApiToken.issue(owner, "ci")
    response = client.post(
        reverse("api_upload"),
        data,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert orjson.loads(response.content)["error"] == TOO_DEEP


def test_a_scan_lists_a_file_nested_too_deep_as_unreadable_with_the_limit(owner, tmp_path):
    for name, data in TOO_DEEP_FILES.items():
        (tmp_path / f"{name.replace(' ', '-').replace(',', '')}.json").write_bytes(data)
    (tmp_path / "fine.json").write_bytes(b'[{"role": "user", "content": "hi"}]')
    call_command("scan", str(tmp_path), project="deep", owner=owner.username, stdout=io.StringIO())
    job = ScanJob.objects.latest("id")
    reasons = dict(job.files.filter(status="unreadable").values_list("path", "reason"))
    assert len(reasons) == len(TOO_DEEP_FILES)
    assert all(reason == TOO_DEEP for reason in reasons.values())
    assert Transcript.objects.count() == 1


def test_downloads_of_a_file_deep_where_no_page_looks_are_200_or_the_clear_400(
    client, owner_client, store_for
):
    transcript = store_for(in_record(300), "deep.jsonl")
    _, token = ShareLink.issue(transcript, ShareLink.FULL, "7")
    for kind in ("repaired", "canonical", "report", "original"):
        for response in (
            owner_client.get(reverse("download", args=[transcript.public_id, kind])),
            client.get(reverse("shared_download", args=[token, kind])),
        ):
            assert response.status_code in (200, 400), kind
            if response.status_code == 400:
                assert response.content.decode() == TOO_DEEP


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "١٢"])
def test_an_api_upload_with_a_content_length_that_is_no_number_is_400(client, owner, length):
    _, token = ApiToken.issue(owner, "ci")
    response = client.post(
        reverse("api_upload"),
        b"[]",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        CONTENT_LENGTH=length,
    )
    assert response.status_code == 400
    assert "Content-Length" in orjson.loads(response.content)["error"]


def test_an_upload_form_post_with_a_content_length_that_is_no_number_is_400(owner_client):
    response = owner_client.post(reverse("upload"), {"text": "[]"}, CONTENT_LENGTH="abc")
    assert response.status_code == 400
