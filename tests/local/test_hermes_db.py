"""Hermes Agent's state.db (agents-c, issue 27): its rows listed, fixed in one transaction, undone.

The database is made from Hermes's own schema (``tests/data/hermes-state-schema.sql``,
read from its ``SCHEMA_SQL``) and its rows from the corpus' Hermes session log,
written as ``SessionDB.append_message`` writes them (``tool_calls`` as JSON
text). ``list`` must name the session in the database and leave the JSON logs
beside it out, ``fix`` must add the missing results as rows after the
session's last one (backup outside the database, refusal while Hermes writes,
a rollback if the rows changed meanwhile) and print ``hermes --resume``,
``undo`` must put every row back, and nothing outside the folder may change.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import cli
from inspector.local import fix, hermes_db, sessions
from inspector.local.agents import AGENTS, BY_NAME
from tests.local.conftest import changed, snapshot
from tests.testdata import CORPUS, DATA, read

SCHEMA = DATA / "hermes-state-schema.sql"
LOG = CORPUS / "hermes" / "derived__session_20260214_093012_a1b2c3.cut-after-calls.json"
HEALTHY = CORPUS / "hermes" / "derived__session_20260214_093012_a1b2c3.healthy.json"
SID = "20260214_093012_a1b2c3"
AGE = 3600.0


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def make_db(db: Path, source: Path, sid: str = SID, *, age: float = AGE) -> None:
    """A state.db holding the log's messages as Hermes's append_message writes them."""
    log = orjson.loads(read(source))
    connection = sqlite3.connect(db)
    connection.executescript(SCHEMA.read_text())
    started = 1771061412.48
    connection.execute(
        "INSERT INTO sessions (id, source, model, started_at) VALUES (?, 'cli', ?, ?)",
        (sid, log["model"], started),
    )
    for n, m in enumerate(log["messages"]):
        calls = m.get("tool_calls")
        connection.execute(
            "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, "
            "tool_name, timestamp, finish_reason, reasoning) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (sid, m["role"], m.get("content"), m.get("tool_call_id"),
             json.dumps(calls) if calls else None, m.get("tool_name"), started + n,
             m.get("finish_reason"), m.get("reasoning")),
        )  # fmt: skip
    connection.commit()
    connection.close()
    stamp = time.time() - age
    os.utime(db, (stamp, stamp))


def rows(db: Path) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return list(connection.execute("SELECT * FROM messages ORDER BY id"))
    finally:
        connection.close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    (root / ".hermes" / "sessions").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(root))
    for agent in AGENTS:
        monkeypatch.delenv(agent.env, raising=False)
    (tmp_path / "outside.txt").write_bytes(b"not yours")
    return root


def test_list_reads_the_database_hermes_resumes_from_and_not_the_logs_beside_it(home):
    db = home / ".hermes" / "state.db"
    make_db(db, LOG)
    (home / ".hermes" / "sessions" / f"session_{SID}.json").write_bytes(read(LOG))
    status, out = run("list", "--json")
    records = [orjson.loads(line) for line in out.splitlines()]
    assert [r["path"] for r in records] == [str(db / SID)]
    assert records[0]["verdict"] == "needs repair"
    assert records[0]["resume"] == f"hermes --resume {SID}"
    assert status == 1


def test_hermes_home_moves_the_database(home, tmp_path, monkeypatch):
    moved = tmp_path / "profile"
    (moved / "sessions").mkdir(parents=True)
    monkeypatch.setenv("HERMES_HOME", str(moved))
    make_db(moved / "state.db", LOG)
    _, out = run("list", "--json")
    assert {orjson.loads(line)["path"] for line in out.splitlines()} == {
        str(moved / "state.db" / SID)
    }


def test_fix_adds_the_missing_results_as_rows_and_undo_puts_every_row_back(home):
    db = home / ".hermes" / "state.db"
    make_db(db, LOG)
    session = db / SID
    before_rows = rows(db)
    tree = home.parent
    before = snapshot(tree)
    status, out = run("fix", str(session))
    assert status == 0, out
    assert f"hermes --resume {SID}" in out
    after_rows = rows(db)
    assert after_rows[: len(before_rows)] == before_rows  # every row read is as it was
    added = after_rows[len(before_rows) :]
    # The second call's result, after the session's last row: id, session, role, content, call.
    log = orjson.loads(read(LOG))["messages"]
    answered = {m.get("tool_call_id") for m in log if m["role"] == "tool"}
    missing = [
        (SID, "tool", c["id"], c["function"]["name"])
        for m in log
        for c in m.get("tool_calls") or []
        if c["id"] not in answered
    ]
    assert len(missing) == 2
    assert [(r[1], r[2], r[4], r[6]) for r in added] == missing
    assert added[0][0] == before_rows[-1][0] + 1
    (backup,) = fix.backups_of(session)
    assert backup.parent.parent == home / ".hermes" / hermes_db.BACKUPS
    stray = {
        p
        for p in changed(before, snapshot(tree))
        if not p.is_relative_to(home / ".hermes" / hermes_db.BACKUPS)
        and p.name not in ("state.db", "state.db-wal", "state.db-shm")
    }
    assert stray == set()
    checked = sessions.check(session, BY_NAME["hermes"])
    assert checked.verdict == "clean", checked.error
    status, out = run("fix", "--undo", str(session))
    assert status == 0 and "restored from" in out, out
    assert rows(db) == before_rows


def test_fix_refuses_while_hermes_may_be_writing_and_leaves_a_healthy_session_alone(home):
    db = home / ".hermes" / "state.db"
    make_db(db, LOG, age=0)
    before = rows(db)
    outcome = fix.fix(db / SID)
    assert outcome.status == "refused" and "Hermes may still be running" in outcome.reason
    assert rows(db) == before
    healthy = home / "healthy" / ".hermes"
    healthy.mkdir(parents=True)
    make_db(healthy / "state.db", HEALTHY)
    kept = (healthy / "state.db").read_bytes()
    assert fix.fix(healthy / "state.db" / SID).status == "clean"
    assert (healthy / "state.db").read_bytes() == kept


def test_rows_written_after_the_read_roll_the_fix_back(home, monkeypatch):
    db = home / ".hermes" / "state.db"
    make_db(db, LOG)
    real = hermes_db.Database.write_backup

    def then_hermes_writes(self, *args, **kwargs):
        real(self, *args, **kwargs)
        connection = sqlite3.connect(db)
        connection.execute(
            "INSERT INTO messages (session_id, role, content, timestamp)"
            " VALUES (?, 'user', 'hi', 1)",
            (SID,),
        )
        connection.commit()
        connection.close()

    monkeypatch.setattr(hermes_db.Database, "write_backup", then_hermes_writes)
    before = rows(db)
    outcome = fix.fix(db / SID)
    assert outcome.status == "refused" and "changed while it was being fixed" in outcome.reason
    assert len(rows(db)) == len(before) + 1  # Hermes's row, and nothing of fix's
    assert fix.backups_of(db / SID) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(sid=st.one_of(st.sampled_from(["../../outside", "a/b", "..", "x\u0000", " x", "-rf"]),
                     st.text(alphabet="./\\ab_-~ ", min_size=1, max_size=10)))  # fmt: skip
def test_a_hostile_session_id_changes_nothing_outside_the_hermes_folder(sid, tmp_path_factory):
    tree = tmp_path_factory.mktemp("t")
    (tree / "outside").mkdir()
    (tree / "outside" / "victim.txt").write_bytes(b"not yours")
    hermes = tree / "home" / ".hermes"
    hermes.mkdir(parents=True)
    make_db(hermes / "state.db", LOG, sid)
    before = snapshot(tree)
    outcome = fix.fix(hermes / "state.db" / sid, quiet_seconds=0)
    after = snapshot(tree)
    assert all(p.is_relative_to(hermes) for p in changed(before, after))
    if outcome.status == "fixed":
        assert fix.undo(hermes / "state.db" / sid).status == "restored"
    else:
        assert changed(before, after) == set(), outcome.reason


def test_a_database_that_is_a_link_and_a_note_naming_another_session_are_refused(home, tmp_path):
    real = tmp_path / "outside" / "state.db"
    real.parent.mkdir()
    make_db(real, LOG)
    (home / ".hermes" / "state.db").symlink_to(real)
    before = snapshot(tmp_path)
    outcome = fix.fix(home / ".hermes" / "state.db" / SID, quiet_seconds=0)
    assert outcome.status == "refused" and "state.db" in outcome.reason
    assert snapshot(tmp_path) == before
    (home / ".hermes" / "state.db").unlink()
    db = home / ".hermes" / "state.db"
    make_db(db, LOG)
    assert fix.fix(db / SID).status == "fixed"
    (backup,) = fix.backups_of(db / SID)
    saved = orjson.loads((backup / hermes_db.ROWS).read_bytes())
    note = orjson.loads((backup / hermes_db.NOTE).read_bytes())
    for entry in note["rows"]:
        if entry["written"]:
            entry["written"]["session_id"] = "another"
    (backup / hermes_db.NOTE).write_bytes(orjson.dumps(note))
    kept = rows(db)
    assert fix.undo(db / SID).status == "refused"
    assert rows(db) == kept and saved


SECOND = "20260214_093012_second"


def wal_database(folder: Path) -> dict[str, bytes]:
    """A real WAL database, as a zip of an agent's folder holds it while the agent runs: a
    session in ``state.db``, a second committed only to ``state.db-wal`` (never checkpointed),
    and SQLite's ``-shm``: each file's bytes, read while the writer still has it open."""
    make_db(folder / "state.db", LOG)
    make_db(folder / "second.db", LOG, sid=SECOND)
    connection = sqlite3.connect(folder / "state.db")
    try:
        assert connection.execute("PRAGMA journal_mode = wal").fetchone() == ("wal",)
        connection.execute("PRAGMA wal_autocheckpoint = 0")
        connection.execute("ATTACH ? AS second", (str(folder / "second.db"),))
        for table in ("sessions", "messages"):
            columns = [r[1] for r in connection.execute(f"PRAGMA second.table_info({table})")]
            if table == "messages":
                columns.remove("id")  # new rows of this database
            names = ", ".join(columns)
            connection.execute(f"INSERT INTO main.{table} ({names}) "
                               f"SELECT {names} FROM second.{table}")  # fmt: skip
        connection.commit()
        connection.execute("DETACH second")
        files = {name: (folder / name).read_bytes() for name in
                 ("state.db", "state.db-wal", "state.db-shm")}  # fmt: skip
    finally:
        connection.close()
    assert len(files["state.db-wal"]) > 0
    return files
