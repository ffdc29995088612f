"""Uploads that go wrong half-way: afterwards every transcript is whole or absent.

Whole means its row, its stored bytes and their sha256 agree; absent means no
row and no bytes left in storage. Requests go through ``inspector.wsgi`` (the
entry point gunicorn and runserver use) with a ``wsgi.input`` that ends or
breaks early, the way a server hands over the body of a client that went away.
"""

from __future__ import annotations

import errno
import hashlib
import io
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.signals import request_finished, request_started
from django.db import OperationalError, close_old_connections
from django.test import Client, RequestFactory
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from inspector.web import store
from inspector.web.models import ApiToken, Transcript
from tests.hardening.conftest import assert_consistent
from tests.web.conftest import BROKEN_CLAUDE_CODE

pytestmark = pytest.mark.django_db

CSRF_SECRET = "hardeningcsrfsecret0123456789abc"
# JSONL, so a body cut at a line break still reads as a (shorter) session:
# only a check that the whole body arrived can tell it from the real one.
SESSION = BROKEN_CLAUDE_CODE.read_bytes()
SESSION_NAME = "session.jsonl"


class CutInput(io.RawIOBase):
    """A request body that stops after ``limit`` bytes: it ends, or the connection resets.

    A reset fails the first read that asks for more than was delivered, as a
    socket read does when the peer resets the connection.
    """

    def __init__(self, body: bytes, limit: int, how: str) -> None:
        self.stream = io.BytesIO(body[:limit])
        self.left = limit
        self.how = how

    def read(self, size: int = -1) -> bytes:
        if self.how == "resets" and (size < 0 or size > self.left):
            raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
        data = self.stream.read(size)
        self.left -= len(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        line = self.stream.readline(size)
        self.left -= len(line)
        return line


def call_wsgi(environ: dict[str, Any]) -> int:
    """Run one request through ``inspector.wsgi.application``; returns the status code."""
    from inspector.wsgi import application

    # As Django's test client does: the request signals would otherwise close
    # the connection that holds the test's transaction.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    statuses: list[str] = []
    try:
        response = application(
            environ, lambda status, headers, exc_info=None: statuses.append(status)
        )
        b"".join(response)
        response.close()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return int(statuses[0].split()[0])


def cut_request(path: str, body: bytes, content_type: str, cut: int, how: str, **headers: str):
    """The environ of a POST whose Content-Length promises ``body`` but delivers ``cut`` bytes."""
    environ = RequestFactory().generic("POST", path, body, content_type, **headers).environ
    environ["wsgi.input"] = CutInput(body, cut, how)
    environ["CONTENT_LENGTH"] = str(len(body))
    return environ


def line_break_after(data: bytes, fraction: float) -> int:
    """Where the line that ``fraction`` of the way through ``data`` ends (never its end)."""
    ends = [index + 1 for index, byte in enumerate(data[:-1]) if byte == ord("\n")]
    return ends[int(fraction * (len(ends) - 1))]


@pytest.fixture
def session_cookie(owner) -> str:
    client = Client()
    client.force_login(owner)
    return f"sessionid={client.cookies['sessionid'].value}; csrftoken={CSRF_SECRET}"


@pytest.fixture
def api_token(owner) -> str:
    return ApiToken.issue(owner, "ci")[1]


def web_form(field: str) -> tuple[bytes, int]:
    """A multipart upload form with the session as a file or as pasted text; where it sits."""
    value = SimpleUploadedFile(SESSION_NAME, SESSION) if field == "file" else SESSION.decode()
    body = encode_multipart(BOUNDARY, {field: value, "project": "cut"})
    return body, body.index(SESSION)


# An upload body cut short at each of these points of the transcript inside it.
FRACTIONS = [0.1, 0.5, 0.95]


@pytest.mark.parametrize("fraction", FRACTIONS)
@pytest.mark.parametrize(
    ("field", "how"),
    [
        ("file", "ends"),
        ("file", "resets"),
        ("text", "ends"),
        ("text", "resets"),
    ],
)
def test_upload_form_cut_mid_body_stores_nothing(session_cookie, media_root, field, how, fraction):
    body, start = web_form(field)
    cut = start + line_break_after(SESSION, fraction)
    environ = cut_request(
        "/upload/",
        body,
        MULTIPART_CONTENT,
        cut,
        how,
        HTTP_COOKIE=session_cookie,
        HTTP_X_CSRFTOKEN=CSRF_SECRET,
    )
    assert call_wsgi(environ) >= 400
    assert not Transcript.objects.exists()
    assert_consistent(media_root)


@pytest.mark.parametrize("fraction", FRACTIONS)
@pytest.mark.parametrize(
    ("shape", "how"),
    [
        ("raw", "ends"),
        ("raw", "resets"),
        ("multipart", "ends"),
        ("multipart", "resets"),
    ],
)
def test_api_upload_cut_mid_body_stores_nothing(api_token, media_root, shape, how, fraction):
    if shape == "raw":
        body, start, content_type = SESSION, 0, "application/jsonl"
    else:
        file = SimpleUploadedFile(SESSION_NAME, SESSION)
        body, content_type = encode_multipart(BOUNDARY, {"file": file}), MULTIPART_CONTENT
        start = body.index(SESSION)
    cut = start + line_break_after(SESSION, fraction)
    environ = cut_request(
        "/api/transcripts",
        body,
        content_type,
        cut,
        how,
        HTTP_AUTHORIZATION=f"Bearer {api_token}",
    )
    # The client's fault, so a 4xx: a 500 would page someone for nothing.
    assert 400 <= call_wsgi(environ) < 500
    assert not Transcript.objects.exists()
    assert_consistent(media_root)


def test_the_same_uploads_whole_are_stored_whole(session_cookie, api_token, media_root):
    """The control for the cut uploads: the same requests with every byte delivered.

    The second and third find the first's transcript: the same sha256, so the same bytes.
    """
    statuses = []
    for field in ("file", "text"):
        body, _ = web_form(field)
        environ = cut_request(
            "/upload/",
            body,
            MULTIPART_CONTENT,
            len(body),
            "resets",
            HTTP_COOKIE=session_cookie,
            HTTP_X_CSRFTOKEN=CSRF_SECRET,
        )
        statuses.append(call_wsgi(environ))
    environ = cut_request(
        "/api/transcripts",
        SESSION,
        "application/jsonl",
        len(SESSION),
        "resets",
        HTTP_AUTHORIZATION=f"Bearer {api_token}",
    )
    statuses.append(call_wsgi(environ))
    assert statuses == [302, 302, 200]
    assert Transcript.objects.get().sha256 == hashlib.sha256(SESSION).hexdigest()
    assert_consistent(media_root)


# --- storage and crashes inside store_upload --------------------------------

REAL_SAVE = FileSystemStorage._save


def disk_full(after_saves: int, partial: bool) -> Any:
    """A ``_save`` that works ``after_saves`` times, then fails with ENOSPC.

    With ``partial`` the failing save first writes half the file, as a disk
    that fills up in the middle of a write leaves it.
    """
    calls = {"count": 0}

    def save(self: FileSystemStorage, name: str, content: Any) -> str:
        calls["count"] += 1
        if calls["count"] <= after_saves:
            return REAL_SAVE(self, name, content)
        if partial:
            data = content.read()
            REAL_SAVE(self, name, ContentFile(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    return save


def fail_on_write(number: int, error: BaseException) -> Any:
    """``store._write`` that raises ``error`` on its ``number``-th call."""
    real_write, calls = store._write, {"count": 0}

    def write(path: str, data: bytes) -> None:
        calls["count"] += 1
        if calls["count"] == number:
            raise error
        real_write(path, data)

    return write


FAULTS = {
    "disk full before the bytes": lambda mp: mp.setattr(
        FileSystemStorage, "_save", disk_full(0, partial=False)
    ),
    "disk full half-way through the bytes": lambda mp: mp.setattr(
        FileSystemStorage, "_save", disk_full(0, partial=True)
    ),
    "disk full half-way through the diagnosis": lambda mp: mp.setattr(
        FileSystemStorage, "_save", disk_full(1, partial=True)
    ),
    "crash between the bytes and the diagnosis": lambda mp: mp.setattr(
        store, "_write", fail_on_write(2, RuntimeError("worker crashed"))
    ),
    # gunicorn ends a worker past its timeout with SystemExit, wherever it is.
    "worker timeout between the bytes and the diagnosis": lambda mp: mp.setattr(
        store, "_write", fail_on_write(2, SystemExit(1))
    ),
    "database gone between the files and the row": lambda mp: mp.setattr(
        Transcript, "save", _raise(OperationalError("server closed the connection"))
    ),
    "worker timeout between the files and the row": lambda mp: mp.setattr(
        Transcript, "save", _raise(SystemExit(1))
    ),
}


def _raise(error: BaseException) -> Any:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise error

    return fail


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_while_storing_leaves_nothing_and_the_retry_stores_it_whole(
    owner, media_root, monkeypatch, fault
):
    with monkeypatch.context() as patched:
        FAULTS[fault](patched)
        with pytest.raises((OSError, RuntimeError, SystemExit, OperationalError)):
            store.store_upload(owner, SESSION, SESSION_NAME)
    assert not Transcript.objects.exists()
    assert_consistent(media_root)

    transcript, created = store.store_upload(owner, SESSION, SESSION_NAME)
    assert created and transcript.sha256 == hashlib.sha256(SESSION).hexdigest()
    assert store.read_raw(transcript) == SESSION
    assert_consistent(media_root)


def test_disk_full_during_a_web_upload_is_an_error_not_a_success(owner, media_root, monkeypatch):
    monkeypatch.setattr(FileSystemStorage, "_save", disk_full(0, partial=True))
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    upload = SimpleUploadedFile(SESSION_NAME, SESSION)
    response = client.post("/upload/", {"file": upload})
    assert response.status_code == 507
    assert "disk is full" in response.content.decode()
    assert "Nothing was stored" in response.content.decode()
    assert not Transcript.objects.exists()
    assert_consistent(media_root)


@pytest.mark.parametrize("when", ["before the bytes", "half-way through the diagnosis"])
def test_disk_full_during_an_api_upload_is_a_507_that_says_so(
    api_token, media_root, monkeypatch, when
):
    monkeypatch.setattr(
        FileSystemStorage, "_save", disk_full(0 if when == "before the bytes" else 1, True)
    )
    client = Client(raise_request_exception=False)
    response = client.post(
        "/api/transcripts",
        SESSION,
        content_type="text/plain",
        HTTP_AUTHORIZATION=f"Bearer {api_token}",
    )
    assert response.status_code == 507
    assert "disk is full" in response.json()["error"]
    assert not Transcript.objects.exists()
    assert_consistent(media_root)


def test_a_database_that_is_out_of_space_is_a_507_too(owner, media_root, monkeypatch):
    # SQLite's own words when it cannot grow its file.
    monkeypatch.setattr(Transcript, "save", _raise(OperationalError("database or disk is full")))
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    response = client.post("/upload/", {"file": SimpleUploadedFile(SESSION_NAME, SESSION)})
    assert response.status_code == 507
    assert "disk is full" in response.content.decode()
    assert not Transcript.objects.exists()
    assert_consistent(media_root)


def test_other_storage_failures_are_still_a_plain_500(owner, media_root, monkeypatch):
    def broken(self: FileSystemStorage, name: str, content: Any) -> str:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(FileSystemStorage, "_save", broken)
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    response = client.post("/upload/", {"file": SimpleUploadedFile(SESSION_NAME, SESSION)})
    assert response.status_code == 500
    assert not Transcript.objects.exists()


def test_losing_the_race_for_the_same_bytes_keeps_one_row_and_no_stray_files(
    owner, media_root, monkeypatch
):
    winner, _ = store.store_upload(owner, SESSION, SESSION_NAME)
    # The second upload looks before the first has committed, so it finds nothing,
    # stores its own files and then meets the unique constraint.
    real_filter, looked = Transcript.objects.filter, {"first": True}

    def filter_missing_once(*args: Any, **kwargs: Any) -> Any:
        if looked["first"] and "sha256" in kwargs:
            looked["first"] = False
            return Transcript.objects.none()
        return real_filter(*args, **kwargs)

    monkeypatch.setattr(Transcript.objects, "filter", filter_missing_once)
    loser, created = store.store_upload(owner, SESSION, "again.jsonl")
    assert not created and loser.pk == winner.pk
    assert Transcript.objects.count() == 1
    assert_consistent(media_root)
