"""A folder scan takes the sessions kept in agents' databases: each session of OpenCode's
opencode.db (its event-sourced ones too) is its own transcript, read without a write; a
database it cannot read is named in a note, and the other files are still scanned."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from inspector.web.models import Transcript
from tests.local.conftest import snapshot
from tests.local.test_hermes_db import LOG, make_db
from tests.local.test_opencode_v2 import SESSION, make_v2_database
from tests.scan.conftest import CODEX
from tests.testdata import read

pytestmark = pytest.mark.django_db


def test_each_session_of_an_agents_database_is_scanned_read_only(run_scan, tmp_path: Path):
    folder = tmp_path / "project"
    data = folder / "opencode"
    data.mkdir(parents=True)
    make_v2_database(data / "opencode.db", "interrupted", age=3600)
    before = snapshot(folder)
    job, output = run_scan(folder, project="dbs")
    stored = dict(Transcript.objects.values_list("relative_path", "needs_repair"))
    assert stored == {f"opencode/opencode.db/{SESSION}": True}, output
    assert job.unreadable == 0
    # Nothing written: the database as it was; SQLite's reader of a WAL database makes only its
    # shared-memory index and an empty log beside it, as OpenCode's own readers do.
    after = snapshot(folder)
    journals = {data / "opencode.db-shm", data / "opencode.db-wal"}
    assert {p: n for p, n in after.items() if p not in journals} == before
    assert not (data / "opencode.db-wal").exists() or (data / "opencode.db-wal").stat().st_size == 0


def test_a_database_it_cannot_read_is_named_and_the_rest_scanned(run_scan, tmp_path: Path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "sessions.db").write_bytes(b"not a database at all" * 100)
    (folder / "codex.jsonl").write_bytes(
        read(CODEX / "kvsankar-agent-history__codex_with_escalation.jsonl")
    )
    job, _ = run_scan(folder, project="dbs")
    assert set(Transcript.objects.values_list("relative_path", flat=True)) == {"codex.jsonl"}
    assert any("sessions.db could not be read as sessions.db" in note for note in job.notes)
    shutil.rmtree(folder)


def test_a_session_id_naming_a_path_reads_no_file(run_scan, tmp_path: Path):
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(read(CODEX / "kvsankar-agent-history__codex_with_escalation.jsonl"))
    folder = tmp_path / "project"
    folder.mkdir()
    make_db(folder / "state.db", LOG, sid=f"../../../../../../../../..{secret}")
    job, _ = run_scan(folder, project="dbs")
    assert not Transcript.objects.exists()
    assert any("no session name" in note for note in job.notes)


def test_a_session_whose_last_write_is_no_time_is_still_scanned(run_scan, tmp_path: Path):
    folder = tmp_path / "project"
    folder.mkdir()
    make_db(folder / "state.db", LOG)
    with sqlite3.connect(folder / "state.db") as connection:
        connection.execute("UPDATE messages SET timestamp = 1e300")
        connection.execute("UPDATE sessions SET started_at = 1e300")
    connection.close()
    job, output = run_scan(folder, project="dbs")
    assert job.new == 1, output
