"""An agent's SQLite database uploaded on its own in the upload form: known by its header and
tables (whatever its name), read read-only from a private temporary copy that is gone
afterwards, each session its own transcript (``<file>/<sessionID>``, as a zip's); one that
cannot be read is refused with its reason and nothing is stored.

The databases are built here through each agent's own schema, as the local tests build them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from django.urls import reverse

from inspector.local import databases, stores
from inspector.web.models import Transcript
from inspector.web.store import read_raw
from tests.local.conftest import make_database, opencode_records
from tests.local.test_goose_db import BROKEN_ID, CUT, HEALTHY, OTHER_ID, SCHEMA, _insert
from tests.local.test_hermes_db import HEALTHY as HERMES_HEALTHY
from tests.local.test_hermes_db import LOG, SID, make_db
from tests.local.test_opencode_v2 import SESSION, make_v2_database
from tests.private_copies import HELD
from tests.testdata import read
from tests.web.test_upload import _form_error, post_file

pytestmark = pytest.mark.django_db


def _gone(private_copies: list[Path]) -> None:
    assert len(private_copies) == 1
    assert not private_copies[0].exists()


def goose_database(db: Path) -> bytes:
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode = wal")
    connection.executescript(SCHEMA)
    _insert(connection, BROKEN_ID, read(CUT))
    _insert(connection, OTHER_ID, read(HEALTHY))
    connection.commit()
    connection.close()
    return db.read_bytes()


def test_an_opencode_v2_database_under_any_name_opens_its_one_session(
    owner_client, tmp_path: Path, private_copies: list[Path]
):
    make_v2_database(tmp_path / "opencode.db", "interrupted", age=3600)
    data = (tmp_path / "opencode.db").read_bytes()
    assert data[18:20] == b"\x02\x02"  # OpenCode's database is in WAL mode
    response = post_file(owner_client, data, "backup-from-laptop.bin")
    assert response.status_code == 302, response.content.decode()[:2000]
    transcript = Transcript.objects.get()
    assert response["Location"] == transcript.get_absolute_url()
    assert (transcript.format, transcript.needs_repair) == ("opencode", True)
    assert transcript.relative_path == f"backup-from-laptop.bin/{SESSION}"
    assert transcript.file_name == SESSION
    _gone(private_copies)
    # Named as OpenCode names it (so its store reads it), and no journal made beside it.
    assert list(HELD.values()) == [["opencode.db"]]


def test_several_sessions_are_listed_each_its_own_transcript(
    owner_client, tmp_path: Path, private_copies: list[Path]
):
    data = goose_database(tmp_path / "sessions.db")
    response = post_file(owner_client, data, "goose.sqlite", project="Agents")
    assert response.status_code == 200
    html = response.content.decode()
    stored = {t.relative_path: t for t in Transcript.objects.all()}
    assert set(stored) == {f"goose.sqlite/{BROKEN_ID}", f"goose.sqlite/{OTHER_ID}"}
    assert {t.format for t in stored.values()} == {"goose"}
    assert stored[f"goose.sqlite/{BROKEN_ID}"].needs_repair
    assert not stored[f"goose.sqlite/{OTHER_ID}"].needs_repair
    assert {t.project.name for t in stored.values()} == {"Agents"}
    assert "Goose&#x27;s sessions.db" in html or "Goose's sessions.db" in html
    for transcript in stored.values():
        assert transcript.get_absolute_url() in html
    assert 'class="form-error"' not in html
    _gone(private_copies)
    assert list(HELD.values()) == [["sessions.db"]]


def test_the_list_comes_back_to_the_upload_script_as_the_page(owner_client, tmp_path: Path):
    data = goose_database(tmp_path / "sessions.db")
    upload = {"file": _file(data, "sessions.db")}
    response = owner_client.post(reverse("upload"), upload, HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert "Sessions of sessions.db" in response.content.decode()


def test_one_session_answers_the_upload_script_with_its_timeline(owner_client, tmp_path: Path):
    make_db(tmp_path / "state.db", LOG)
    upload = {"file": _file((tmp_path / "state.db").read_bytes(), "state.db")}
    response = owner_client.post(reverse("upload"), upload, HTTP_ACCEPT="application/json")
    transcript = Transcript.objects.get()
    assert response.json() == {"location": transcript.get_absolute_url(), "created": True}
    assert (transcript.format, transcript.relative_path) == ("hermes", f"state.db/{SID}")


def test_hermes_and_the_older_opencode_database_are_read_as_their_own_shape(
    owner_client, tmp_path: Path
):
    make_db(tmp_path / "state.db", LOG)
    make_db(tmp_path / "state.db", HERMES_HEALTHY, sid="20260215_100000_ffffff")
    post_file(owner_client, (tmp_path / "state.db").read_bytes(), "hermes.db")
    make_database(
        tmp_path / "opencode.db",
        opencode_records("derived__export-interrupted.opencode.json"),
        age=3600,
    )
    post_file(owner_client, (tmp_path / "opencode.db").read_bytes(), "oc.db")
    shapes = dict(Transcript.objects.values_list("relative_path", "format"))
    assert shapes == {
        f"hermes.db/{SID}": "hermes",
        "hermes.db/20260215_100000_ffffff": "hermes",
        "oc.db/ses_64d1b0e5effeXQpJzNIBnjjYgH": "opencode",
    }


def test_an_sqlite_database_of_no_agent_is_refused_naming_its_tables(
    owner_client, tmp_path: Path, private_copies: list[Path]
):
    db = tmp_path / "opencode.db"  # its name says nothing: its tables do
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    connection.close()
    html = _form_error(post_file(owner_client, db.read_bytes(), "opencode.db"))
    assert "not one of an agent" in html and "invoices" in html
    assert "Nothing was stored" in html
    assert not Transcript.objects.exists()
    _gone(private_copies)


def test_a_damaged_database_is_refused_and_nothing_stored(owner_client, private_copies: list[Path]):
    data = databases.SQLITE_HEADER + b"\x00" * 84 + b"not a database at all" * 200
    html = _form_error(post_file(owner_client, data, "state.db"))
    assert "no SQLite database that can be read" in html
    assert "inspector-db" not in html  # our temporary path is not shown
    assert not Transcript.objects.exists()
    _gone(private_copies)


def test_a_database_with_no_session_is_refused(owner_client, tmp_path: Path):
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as connection:
        connection.executescript((Path(__file__).parents[1] / "data" / "hermes-state-schema.sql")
                                 .read_text())  # fmt: skip
    connection.close()
    html = _form_error(post_file(owner_client, db.read_bytes(), "state.db"))
    assert "Hermes&#x27;s state.db, but it holds no session" in html
    assert not Transcript.objects.exists()


def test_a_session_id_naming_a_path_reads_no_file_and_stores_nothing(
    owner_client, tmp_path: Path, private_copies: list[Path]
):
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(read(CUT))
    make_db(tmp_path / "state.db", LOG, sid=f"../../../../../../../../..{secret}")
    html = _form_error(post_file(owner_client, (tmp_path / "state.db").read_bytes(), "s.db"))
    assert "no session name" in html and "Nothing was stored" in html
    assert not Transcript.objects.exists()
    _gone(private_copies)


def _small_and_large(db: Path) -> None:
    """A Hermes database of a healthy session ``small`` and a session ``large`` whose one
    message is over the limit the test sets (each control character six in its JSON)."""
    make_db(db, HERMES_HEALTHY, sid="small")
    with sqlite3.connect(db) as connection:
        connection.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES ('large', 'cli', 1771061412)"
        )
        connection.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) "
            "VALUES ('large', 'user', ?, 1771061413)",
            ("\x01" * 50_000,),
        )
    connection.close()


def test_a_session_too_large_is_listed_unread_and_the_others_stored(
    owner_client, tmp_path: Path, settings
):
    _small_and_large(tmp_path / "state.db")
    data = (tmp_path / "state.db").read_bytes()
    settings.INSPECTOR_MAX_UPLOAD_BYTES = len(data)
    response = post_file(owner_client, data, "state.db")
    assert response.status_code == 200
    html = response.content.decode()
    assert set(Transcript.objects.values_list("relative_path", flat=True)) == {"state.db/small"}
    assert "Sessions that could not be read" in html
    assert "state.db/large</span>: It is over the" in html


def test_a_database_over_the_upload_limit_is_refused_on_the_form(
    owner_client, tmp_path: Path, settings, private_copies: list[Path]
):
    make_db(tmp_path / "state.db", LOG)
    data = (tmp_path / "state.db").read_bytes()
    settings.INSPECTOR_MAX_UPLOAD_BYTES = len(data) - 1
    html = _form_error(post_file(owner_client, data, "state.db"))
    assert f"{len(data) - 1:,} bytes" in html
    assert not Transcript.objects.exists()
    assert private_copies == []  # refused before any copy


def test_a_database_upload_needs_a_signed_in_user(client, tmp_path: Path):
    make_db(tmp_path / "state.db", LOG)
    response = post_file(client, (tmp_path / "state.db").read_bytes(), "state.db")
    assert response.status_code == 302 and "login" in response["Location"]
    assert not Transcript.objects.exists()


@pytest.mark.usefixtures("any_storage")
def test_the_session_is_kept_as_its_store_reads_it_never_the_database(owner_client, tmp_path: Path):
    make_db(tmp_path / "state.db", LOG)
    post_file(owner_client, (tmp_path / "state.db").read_bytes(), "state.db")
    transcript = Transcript.objects.get()
    kept = read_raw(transcript)
    assert not databases.is_sqlite(kept)
    assert kept == stores.for_path(tmp_path / "state.db" / SID).read(tmp_path / "state.db" / SID)


def test_a_reader_bug_is_a_form_error_and_the_copy_goes(
    owner_client, tmp_path: Path, private_copies: list[Path], monkeypatch: pytest.MonkeyPatch
):
    class Failing:
        def read(self, path: Path) -> bytes:
            raise RuntimeError("a reader bug")

    make_db(tmp_path / "state.db", LOG)
    monkeypatch.setattr(stores, "for_path", lambda path: Failing())
    html = _form_error(post_file(owner_client, (tmp_path / "state.db").read_bytes(), "state.db"))
    assert "bug in Transcript Inspector" in html and "Nothing was stored" in html
    assert not Transcript.objects.exists()
    _gone(private_copies)


def _file(data: bytes, name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


# --- the JSON API (POST /api/transcripts) takes a database the same way ----------------


@pytest.fixture
def token(owner) -> str:
    from inspector.web.models import ApiToken

    _, issued = ApiToken.issue(owner, "ci")
    return issued


def _api_post(token: str | None, data: bytes, multipart_name: str = "", **params: str):
    from urllib.parse import urlencode

    from django.test import Client

    api = Client(enforce_csrf_checks=True)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = reverse("api_upload") + ("?" + urlencode(params) if params else "")
    if multipart_name:
        return api.post(url, {"file": _file(data, multipart_name)}, headers=headers)
    return api.post(url, data, content_type="application/octet-stream", headers=headers)


def test_the_api_stores_a_databases_session_and_answers_with_its_summary(
    token: str, tmp_path: Path, private_copies: list[Path]
):
    make_v2_database(tmp_path / "opencode.db", "interrupted", age=3600)
    data = (tmp_path / "opencode.db").read_bytes()
    response = _api_post(token, data, name="laptop.bin", project="Agents")
    assert response.status_code == 201, response.content
    body = response.json()
    transcript = Transcript.objects.get()
    assert body["database"] == {"name": "laptop.bin", "kind": "opencode.db", "agent": "OpenCode"}
    (summary,) = body["transcripts"]
    assert summary["id"] == transcript.public_id and summary["created"] is True
    assert summary["summary"]["format"] == "opencode" and summary["summary"]["needs_repair"]
    assert summary["summary"]["counts"] == {"PAIR-1": 1}
    assert body["unread"] == []
    assert transcript.relative_path == f"laptop.bin/{SESSION}"
    assert transcript.file_name == SESSION and transcript.project.name == "Agents"
    _gone(private_copies)
    assert list(HELD.values()) == [["opencode.db"]]
    # The same database again: nothing new, the same transcript.
    again = _api_post(token, data, name="laptop.bin", project="Agents")
    assert again.status_code == 200
    assert [t["id"] for t in again.json()["transcripts"]] == [transcript.public_id]
    assert Transcript.objects.count() == 1


def test_the_api_takes_a_database_as_a_multipart_file_each_session_its_own(
    token: str, tmp_path: Path
):
    data = goose_database(tmp_path / "sessions.db")
    response = _api_post(token, data, multipart_name="goose.sqlite")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["database"]["kind"] == "sessions.db" and body["database"]["agent"] == "Goose"
    stored = {t.relative_path: t for t in Transcript.objects.all()}
    assert set(stored) == {f"goose.sqlite/{BROKEN_ID}", f"goose.sqlite/{OTHER_ID}"}
    ids = {t["id"]: t["summary"]["needs_repair"] for t in body["transcripts"]}
    assert ids == {t.public_id: t.needs_repair for t in stored.values()}
    assert sorted(ids.values()) == [False, True]


def test_the_api_lists_a_session_it_could_not_read_beside_those_it_stored(
    token: str, tmp_path: Path, settings
):
    _small_and_large(tmp_path / "state.db")
    data = (tmp_path / "state.db").read_bytes()
    settings.INSPECTOR_MAX_UPLOAD_BYTES = len(data)
    response = _api_post(token, data, name="state.db")
    assert response.status_code == 201
    body = response.json()
    assert [t["summary"]["file_name"] for t in body["transcripts"]] == ["small"]
    (unread,) = body["unread"]
    assert unread["session"] == "large" and "over the" in unread["reason"]


def test_the_api_refuses_a_database_of_no_agent_and_stores_nothing(
    token: str, tmp_path: Path, private_copies: list[Path]
):
    db = tmp_path / "opencode.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    connection.close()
    response = _api_post(token, db.read_bytes())
    assert response.status_code == 400
    error = response.json()["error"]
    assert "not one of an agent" in error and "invoices" in error and "Nothing was stored" in error
    assert "inspector-db" not in error
    assert not Transcript.objects.exists()
    _gone(private_copies)


def test_the_api_refuses_a_database_with_no_session(token: str, tmp_path: Path):
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as connection:
        connection.executescript((Path(__file__).parents[1] / "data" / "hermes-state-schema.sql")
                                 .read_text())  # fmt: skip
    connection.close()
    response = _api_post(token, db.read_bytes(), name="state.db")
    assert response.status_code == 400
    assert "Hermes's state.db, but it holds no session" in response.json()["error"]
    assert not Transcript.objects.exists()


def test_the_api_answers_a_reader_bug_as_its_own_and_the_copy_goes(
    token: str, tmp_path: Path, private_copies: list[Path], monkeypatch: pytest.MonkeyPatch
):
    class Failing:
        def read(self, path: Path) -> bytes:
            raise RuntimeError("a reader bug")

    make_db(tmp_path / "state.db", LOG)
    monkeypatch.setattr(stores, "for_path", lambda path: Failing())
    response = _api_post(token, (tmp_path / "state.db").read_bytes())
    assert response.status_code == 500
    assert "bug in Transcript Inspector" in response.json()["error"]
    assert not Transcript.objects.exists()
    _gone(private_copies)


def test_the_api_wants_a_token_for_a_database_too(tmp_path: Path, private_copies: list[Path]):
    make_db(tmp_path / "state.db", LOG)
    response = _api_post(None, (tmp_path / "state.db").read_bytes())
    assert response.status_code == 401
    assert not Transcript.objects.exists() and private_copies == []
