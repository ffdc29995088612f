"""Goose's sessions.db: a session listed, fixed in place in one transaction, undone, refused."""

from __future__ import annotations

import io
import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from inspector import cli
from inspector.local import fix, goose_db, sessions
from inspector.local.agents import BY_NAME
from tests.local.conftest import changed, snapshot
from tests.testdata import CORPUS, read

CUT = CORPUS / "goose" / "derived__20250929_140310.cut-after-calls.jsonl"
HEALTHY = CORPUS / "goose" / "derived__20250929_140310.healthy.jsonl"
# Goose's own tables (crates/goose/src/session/session_manager.rs and migrations.rs, as they
# stand after its migration 13), the columns fix reads and those it must leave alone.
SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER, schedule_id TEXT, recipe_json TEXT,
    user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT,
    goose_mode TEXT NOT NULL DEFAULT 'auto', thread_id TEXT, archived_at TIMESTAMP,
    project_id TEXT, accumulated_cost REAL
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT,
    session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT
);
CREATE INDEX idx_messages_session ON messages(session_id);
"""
BROKEN_ID, OTHER_ID = "20250929_140310", "20250930_091500"


def _insert(connection: sqlite3.Connection, session: str, data: bytes) -> None:
    meta, *lines = [orjson.loads(line) for line in data.splitlines()]
    connection.execute(
        "INSERT INTO sessions (id, name, working_dir, updated_at) VALUES (?, ?, ?, ?)",
        (session, meta["description"], meta["working_dir"], "2025-09-29 14:03:40"),
    )
    for line in lines:
        content = orjson.dumps(line["content"]).decode()
        metadata = orjson.dumps(line["metadata"]).decode()
        row = (line["id"] + session[-4:], session, line["role"], content, line["created"], metadata)
        connection.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp,"
            " metadata_json) VALUES (?, ?, ?, ?, ?, ?)",
            row,
        )


def rows_of(db: Path) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return connection.execute("SELECT * FROM messages ORDER BY id").fetchall()
    finally:
        connection.close()


@pytest.fixture
def goose_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("GOOSE_PATH_ROOT", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    folder = home / ".local" / "share" / "goose" / "sessions"
    folder.mkdir(parents=True)
    db = folder / "sessions.db"
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode = wal")
    connection.executescript(SCHEMA)
    _insert(connection, BROKEN_ID, read(CUT))
    _insert(connection, OTHER_ID, read(HEALTHY))  # a second session, which fix must not touch
    connection.commit()
    connection.close()
    stamp = time.time() - 3600
    for file in folder.iterdir():
        os.utime(file, (stamp, stamp))
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.txt").write_bytes(b"not yours")
    return tmp_path


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def _db(tree: Path) -> Path:
    return tree / "home" / ".local" / "share" / "goose" / "sessions" / "sessions.db"


def test_list_reads_each_session_of_the_database_and_its_resume_command(goose_home: Path):
    _, out = run("list", "--json")
    records = {r["path"]: r for r in map(orjson.loads, out.splitlines()) if r["agent"] == "goose"}
    db = _db(goose_home)
    assert set(records) == {str(db / BROKEN_ID), str(db / OTHER_ID)}
    broken = records[str(db / BROKEN_ID)]
    assert broken["verdict"] == "needs repair" and "PAIR-1" in broken["counts"]
    assert records[str(db / OTHER_ID)]["verdict"] == "clean"
    cwd = orjson.loads(read(CUT).split(b"\n", 1)[0])["working_dir"]
    assert broken["resume"] == f"cd {cwd} && goose session --resume --session-id {BROKEN_ID}"


def test_fix_adds_the_answers_in_one_row_and_undo_puts_every_row_back(goose_home: Path):
    db, session = _db(goose_home), _db(goose_home) / BROKEN_ID
    before_rows, before = rows_of(db), snapshot(goose_home)
    outcome = fix.fix(session, BY_NAME["goose"])
    assert outcome.status == "fixed", outcome.reason
    assert outcome.records == [f"messages row {len(before_rows) + 1} added"]
    after_rows = rows_of(db)
    assert after_rows[: len(before_rows)] == before_rows  # every row as it was, the other session's
    (added,) = after_rows[len(before_rows) :]
    assert added[2:4] == (BROKEN_ID, "user")
    items = orjson.loads(added[4])
    asked = [i["id"] for r in before_rows if r[2] == BROKEN_ID for i in orjson.loads(r[4])
             if i["type"] == "toolRequest"]  # fmt: skip
    answered = {i["id"] for r in before_rows if r[2] == BROKEN_ID for i in orjson.loads(r[4])
                if i["type"] == "toolResponse"}  # fmt: skip
    assert [i["id"] for i in items] == [c for c in asked if c not in answered]
    assert sessions.check(session, BY_NAME["goose"]).verdict == "clean"
    # Only the database (and its journal) and the backup set outside it changed.
    backup = goose_home / "home/.local/share/goose/sessions" / goose_db.BACKUPS
    moved = changed(before, snapshot(goose_home))
    in_db = {p for p in moved if p.parent == db.parent and p.name.startswith("sessions.db")}
    assert all(p == backup or backup in p.parents for p in moved - in_db), moved
    assert db in in_db
    assert outcome.backup is not None and outcome.backup.is_relative_to(backup)

    undone = fix.undo(session)
    assert undone.status == "restored", undone.reason
    assert rows_of(db) == before_rows
    assert fix.backups_of(session) == []


def test_a_database_written_moments_ago_is_refused_and_nothing_changes(goose_home: Path):
    db = _db(goose_home)
    os.utime(db, (time.time(), time.time()))  # Goose is writing
    rows = rows_of(db)  # a reader makes the -wal and -shm files: before the snapshot
    before = snapshot(goose_home)
    outcome = fix.fix(db / BROKEN_ID, BY_NAME["goose"])
    assert outcome.status == "refused" and "Goose may still be running" in outcome.reason
    assert rows_of(db) == rows and snapshot(goose_home) == before


def test_rows_goose_wrote_while_fix_was_reading_refuse_the_write(goose_home: Path, monkeypatch):
    db = _db(goose_home)
    read_export = goose_db.Database.export

    def goose_writes_meanwhile(self, connection, where, session_id):
        data = read_export(self, connection, where, session_id)
        with sqlite3.connect(db) as writer:  # Goose appends a row after fix read them
            writer.execute(
                "INSERT INTO messages (session_id, role, content_json, created_timestamp)"
                " VALUES (?, 'user', '[]', 1759154700)",
                (BROKEN_ID,),
            )
        stamp = time.time() - 3600
        os.utime(db, (stamp, stamp))
        for side in db.parent.glob("sessions.db-*"):
            os.utime(side, (stamp, stamp))
        return data

    monkeypatch.setattr(goose_db.Database, "export", goose_writes_meanwhile)
    count = len(rows_of(db))
    outcome = fix.fix(db / BROKEN_ID, BY_NAME["goose"])
    rows = rows_of(db)
    assert outcome.status == "refused" and "changed while it was being fixed" in outcome.reason
    assert len(rows) == count + 1 and rows[-1][4] == "[]"  # only Goose's own row was added
    assert not (db.parent / goose_db.BACKUPS / BROKEN_ID).exists() or not any(
        (db.parent / goose_db.BACKUPS / BROKEN_ID).iterdir()
    )


def test_a_session_id_that_climbs_out_is_refused(goose_home: Path):
    db = _db(goose_home)
    before = snapshot(goose_home)
    outcome = fix.fix(db / ".." / ".." / "outside", BY_NAME["goose"])
    assert outcome.status in ("refused", "failed")
    assert snapshot(goose_home) == before
