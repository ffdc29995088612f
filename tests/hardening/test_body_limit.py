"""A declared Content-Length past the limit is refused before the body is read."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpRequest
from django.test import Client

from inspector.web.models import Transcript
from tests.web.conftest import BROKEN_CLAUDE_CODE

pytestmark = pytest.mark.django_db


def post_declaring(client: Client, path: str, length: str, monkeypatch) -> tuple[int, Any]:
    # Any read of the body fails the test: the refusal must come from the header alone.
    def no_reading(self: HttpRequest, *args: object) -> bytes:
        raise AssertionError("the body was read")

    monkeypatch.setattr(HttpRequest, "read", no_reading)
    response = client.generic("POST", path, b"x" * 10, "text/plain", CONTENT_LENGTH=length)
    return response.status_code, response


@pytest.mark.parametrize("path", ["/upload/", "/api/transcripts", "/scan/"])
def test_a_declared_length_past_the_limit_is_413_unread(owner_client, path, settings, monkeypatch):
    limit = (
        settings.INSPECTOR_SCAN_MAX_BYTES
        if path == "/scan/"
        else settings.INSPECTOR_MAX_UPLOAD_BYTES
    )
    status, response = post_declaring(owner_client, path, str(limit + 2 * 2**20), monkeypatch)
    assert status == 413
    assert f"{limit:,} bytes" in response.content.decode()
    assert not Transcript.objects.exists()


@pytest.mark.parametrize("length", ["1" + "0" * 22, "9" * 40])
def test_a_length_of_many_digits_is_413(owner_client, length, monkeypatch):
    status, _ = post_declaring(owner_client, "/upload/", length, monkeypatch)
    assert status == 413


@pytest.mark.parametrize("length", ["12abc", "-5", "1e9", "\u0661\u0662"])
def test_a_length_that_is_not_a_number_of_bytes_is_400(owner_client, length, monkeypatch):
    status, response = post_declaring(owner_client, "/api/transcripts", length, monkeypatch)
    assert status == 400
    assert "Content-Length must be a number of bytes" in response.json()["error"]


def test_an_upload_under_the_limit_still_goes_in(owner_client):
    upload = SimpleUploadedFile("s.jsonl", BROKEN_CLAUDE_CODE.read_bytes())
    assert owner_client.post("/upload/", {"file": upload}).status_code == 302
    assert Transcript.objects.count() == 1
