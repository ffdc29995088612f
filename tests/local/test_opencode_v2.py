"""A session of OpenCode 1.18.33's event-sourced tables (its /api/session server): listed, fixed
by the event OpenCode itself writes for an interrupted tool, refused while written, undone.

The rows are OpenCode 1.18.33's own (tests/data/opencode-1.18.33-v2-sessions.json): a session
its server ran until it was killed while a tool ran, and what OpenCode wrote when that session
was prompted again."""

from __future__ import annotations

import io
import os
import sqlite3
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from inspector import cli
from inspector.local import fix, opencode, opencode_v2, sessions, stores
from inspector.local.agents import AGENTS
from tests.local.conftest import OPENCODE_SCHEMA, changed, snapshot

DATA = OPENCODE_SCHEMA.parent
SESSIONS = orjson.loads((DATA / "opencode-1.18.33-v2-sessions.json").read_bytes())
SESSION = SESSIONS["interrupted"]["session"][0]["id"]
ASSISTANT = "msg_2374ed32a001KHw4GLpr0Aosas"
TABLES = ("project", "session", "event_sequence", "event", "session_input", "session_message")


def make_v2_database(db: Path, which: str, age: float) -> None:
    write_v2_tables(db, SESSIONS[which], age)


def write_v2_tables(db: Path, tables: dict[str, list[dict[str, object]]], age: float) -> None:
    """OpenCode 1.18.33's database holding these rows of its event-sourced tables (WAL),
    its files last written ``age`` seconds ago."""
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode = wal")
    connection.executescript(OPENCODE_SCHEMA.read_text())
    connection.executescript((DATA / "opencode-1.18.33-v2-schema.sql").read_text())
    for table in TABLES:
        for row in tables[table]:
            columns = ", ".join(row)
            marks = ", ".join("?" for _ in row)
            connection.execute(
                f"INSERT INTO {table} ({columns}) VALUES ({marks})",
                tuple(row.values()),
            )
    connection.commit()
    connection.close()
    stamp = time.time() - age
    for file in db.parent.glob(db.name + "*"):
        os.utime(file, (stamp, stamp), follow_symlinks=False)


def rows_of(db: Path) -> dict[str, list[tuple[object, ...]]]:
    connection = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return {t: connection.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                for t in TABLES}  # fmt: skip
    finally:
        connection.close()


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for agent in AGENTS:
        monkeypatch.delenv(agent.env, raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    data = home / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    make_v2_database(data / "opencode.db", "interrupted", age=3600)
    return data / "opencode.db"


def test_the_session_is_listed_in_opencodes_folder_and_needs_repair(db: Path) -> None:
    assert stores.for_path(db / SESSION) is opencode_v2.STORE
    status, out = run("list", "--json")
    assert status == 1  # a session needs repair
    (record,) = [r for r in map(orjson.loads, out.splitlines()) if r["agent"] == "opencode"]
    assert record["path"] == str(db / SESSION)
    assert record["verdict"] == "needs repair" and record["counts"] == {"PAIR-1": 1}
    assert "/api/session/" + SESSION + "/prompt" in record["resume"]


def test_a_healthy_session_reads_clean(tmp_path: Path) -> None:
    make_v2_database(tmp_path / "opencode.db", "healthy", age=3600)
    session = SESSIONS["healthy"]["session"][0]["id"]
    opencode_agent = next(a for a in AGENTS if a.name == "opencode")
    checked = sessions.check(tmp_path / "opencode.db" / session, opencode_agent)
    assert checked.verdict == "clean", checked.error


def test_fix_writes_the_event_and_projection_opencode_writes(db: Path) -> None:
    root = db.parent.parent.parent.parent
    before, tree = rows_of(db), snapshot(root)
    outcome = fix.fix(db / SESSION)
    assert outcome.status == "fixed", outcome.reason
    after = rows_of(db)
    assert sessions.check(db / SESSION).verdict == "clean"
    # One event more, the sequence at it, the assistant's row rewritten; nothing else.
    (event,) = [r for r in after["event"] if r not in before["event"]]
    ours = dict(zip(("id", "aggregate_id", "seq", "type", "data"), event, strict=True))
    (theirs,) = SESSIONS["resumed_by_opencode"]["event"]
    assert ours["type"] == theirs["type"] == opencode_v2.FAILED
    assert ours["seq"] == 9 and after["event_sequence"] == [(SESSION, 9, None)]
    mine, opencodes = orjson.loads(ours["data"]), orjson.loads(theirs["data"])
    assert list(mine) == list(opencodes)  # the same fields, in OpenCode's order
    assert {k: v for k, v in mine.items() if k not in ("timestamp", "error")} == {
        k: v for k, v in opencodes.items() if k not in ("timestamp", "error")
    }
    assert mine["error"]["type"] == "unknown" and "interrupted" in mine["error"]["message"]
    # The tool item as OpenCode's own projector left it (but its words and times).
    (row,) = [r for r in after["session_message"] if r[0] == ASSISTANT]
    tool = orjson.loads(str(row[6]))["content"][1]
    (resumed,) = SESSIONS["resumed_by_opencode"]["session_message"]
    expected = orjson.loads(resumed["data"])["content"][1]
    for item in (tool, expected):
        item["state"]["error"]["message"] = ""
        item["time"]["completed"] = 0
    assert orjson.dumps(tool) == orjson.dumps(expected)
    for table in ("project", "session", "session_input"):
        assert after[table] == before[table]
    # Only the database and the backup set were written.
    backup = outcome.backup
    assert backup is not None and backup.parent == db.parent / opencode.BACKUPS / SESSION
    written = {p for p in changed(tree, snapshot(root))}
    assert all(p.name.startswith("opencode.db") or backup.parent.parent in p.parents
               or p == backup.parent.parent for p in written), written  # fmt: skip


def test_undo_puts_every_row_back(db: Path) -> None:
    before = rows_of(db)
    assert fix.fix(db / SESSION).status == "fixed"
    status, out = run("fix", "--undo", SESSION)
    assert status == 0 and "restored from" in out
    assert rows_of(db) == before


def test_undo_refuses_when_opencode_wrote_after_the_fix(db: Path) -> None:
    assert fix.fix(db / SESSION).status == "fixed"
    with sqlite3.connect(db) as connection:  # OpenCode takes the next prompt
        connection.execute("UPDATE event_sequence SET seq = 10 WHERE aggregate_id = ?", (SESSION,))
    after = rows_of(db)
    outcome = fix.undo(db / SESSION)
    assert outcome.status == "refused" and "--force" in outcome.reason
    assert rows_of(db) == after


def test_a_database_written_seconds_ago_is_refused(db: Path) -> None:
    os.utime(db, None)
    before = rows_of(db)
    outcome = fix.fix(db / SESSION)
    assert outcome.status == "refused", outcome.reason
    assert rows_of(db) == before and not (db.parent / opencode.BACKUPS).exists()


def test_a_write_during_fix_rolls_back(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = opencode_v2.Database.plan

    def and_opencode_writes(self: opencode_v2.Database, *args: object) -> object:
        out = plan(self, *args)  # type: ignore[arg-type]
        with sqlite3.connect(db) as connection:
            connection.execute("UPDATE session_message SET time_updated = 1 WHERE id = ?",
                               (ASSISTANT,))  # fmt: skip
        return out

    monkeypatch.setattr(opencode_v2.Database, "plan", and_opencode_writes)
    before = rows_of(db)
    outcome = fix.fix(db / SESSION)
    assert outcome.status == "refused" and "changed while" in outcome.reason
    assert len(rows_of(db)["event"]) == len(before["event"])


# --- ids: any text OpenCode's rows may hold ---------------------------------------------

USER = "msg_2374ec9fc001KYrDALFtVZlJIg"
CALL = "call_1"
FIRST_EVENT = "evt_2374eb66f001QihSx7Ty3Awgbp"
HOSTILE_IDS = st.one_of(
    st.sampled_from(
        [
            "",
            " msg_1",
            "a/b",
            "a\\b",
            "../../../OUTSIDE/PWNED_MSG",
            "msg.x",
            "msg_\u00e9\u4e2d",
            "msg_\u0000x",
            "msg_a\nb",
            "m" * 5000,
            "evt_x",
            FIRST_EVENT,  # an event's id, in the other table
            opencode_v2.SEQUENCE,  # the id fix gives the session's event_sequence row
            "prt_x",
            "0",
            "msg_0",  # sorts before the user's message, which comes first
            "zzzz",
        ]
    ),
    st.text(max_size=40),
)


def _swap(value: object, ids: dict[str, str]) -> object:
    """``value`` with every string that is a key of ``ids`` made its value, JSON held in a
    string included (whole strings only: an id is not a part of another)."""
    if isinstance(value, str):
        if value.startswith(("{", "[")):
            return orjson.dumps(_swap(orjson.loads(value), ids)).decode()
        return ids.get(value, value)
    if isinstance(value, dict):
        return {k: _swap(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, ids) for v in value]
    return value


def _interrupted_with(db: Path, ids: dict[str, str]) -> None:
    tables = _swap(SESSIONS["interrupted"], ids)
    connection = sqlite3.connect(db)
    connection.executescript(OPENCODE_SCHEMA.read_text())
    connection.executescript((DATA / "opencode-1.18.33-v2-schema.sql").read_text())
    for table in TABLES:
        for row in tables[table]:  # type: ignore[index]
            marks = ", ".join("?" for _ in row)
            connection.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})",
                               tuple(row.values()))  # fmt: skip
    connection.commit()
    connection.close()
    stamp = time.time() - 3600
    os.utime(db, (stamp, stamp))


def _fixed_and_undone(ids: dict[str, str]) -> None:
    """The interrupted session with these ids reads broken, fix closes its tool as OpenCode
    does (or refuses, naming the id), and undo puts every row back."""
    opencode_agent = next(a for a in AGENTS if a.name == "opencode")
    with tempfile.TemporaryDirectory(prefix="inspector-v2ids-") as temporary:
        db = Path(temporary) / "opencode.db"
        _interrupted_with(db, ids)
        checked = sessions.check(db / SESSION, opencode_agent)
        assert checked.verdict == "needs repair", (ids, checked.verdict, checked.error)
        assert checked.diagnosis is not None and checked.diagnosis.counts["PAIR-1"] == 1
        before = rows_of(db)
        outcome = fix.fix(db / SESSION)
        if checked.diagnosis.counts != {"PAIR-1": 1}:  # a call id the repair renames too
            assert outcome.status == "refused" and "more than" in outcome.reason, outcome.reason
            assert rows_of(db) == before and not (db.parent / opencode.BACKUPS).exists()
            return
        assert outcome.status == "fixed", (ids, outcome.status, outcome.reason)
        after = rows_of(db)
        (event,) = [r for r in after["event"] if r not in before["event"]]
        data = orjson.loads(str(event[4]))
        assert data["assistantMessageID"] == ids.get(ASSISTANT, ASSISTANT)
        assert data["callID"] == ids.get(CALL, CALL)
        assert sessions.check(db / SESSION, opencode_agent).verdict == "clean"
        undone = fix.undo(db / SESSION)
        assert undone.status == "restored", (ids, undone.reason)
        assert rows_of(db) == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(assistant=HOSTILE_IDS, user=HOSTILE_IDS, call=HOSTILE_IDS)
def test_an_interrupted_session_reads_broken_and_is_fixed_whatever_its_ids(
    assistant: str, user: str, call: str
) -> None:
    assume(assistant != user)  # one table's primary key
    _fixed_and_undone({ASSISTANT: assistant, USER: user, CALL: call})


@pytest.mark.parametrize(
    "assistant",
    ["", " msg_1", "a/b", "../../../OUTSIDE/PWNED_MSG", "m" * 5000, FIRST_EVENT,
     opencode_v2.SEQUENCE, "msg_0"],
)  # fmt: skip
def test_an_assistant_message_id_of_no_msg_prefix_is_still_read(assistant: str) -> None:
    # Such a message was left out of the export: the session read as "nothing to repair".
    _fixed_and_undone({ASSISTANT: assistant})


@pytest.mark.parametrize("value", [None, b"msg_blob"])
def test_an_assistant_message_id_that_is_not_text_reads_broken_and_fix_refuses(
    value: object,
) -> None:
    opencode_agent = next(a for a in AGENTS if a.name == "opencode")
    with tempfile.TemporaryDirectory(prefix="inspector-v2ids-") as temporary:
        db = Path(temporary) / "opencode.db"
        _interrupted_with(db, {})
        with sqlite3.connect(db) as connection:
            connection.execute("UPDATE session_message SET id = ? WHERE id = ?", (value, ASSISTANT))
        stamp = time.time() - 3600
        os.utime(db, (stamp, stamp))
        assert sessions.check(db / SESSION, opencode_agent).verdict == "needs repair"
        before = rows_of(db)
        outcome = fix.fix(db / SESSION)
        assert outcome.status == "refused" and repr(value) in outcome.reason, outcome.reason
        assert rows_of(db) == before and not (db.parent / opencode.BACKUPS).exists()


@pytest.mark.parametrize("content", ["Running it.", {"type": "text"}, ["an item", {"x": 1}]])
def test_content_that_is_no_list_of_objects_is_refused_naming_its_message(content: object) -> None:
    opencode_agent = next(a for a in AGENTS if a.name == "opencode")
    with tempfile.TemporaryDirectory(prefix="inspector-v2ids-") as temporary:
        db = Path(temporary) / "opencode.db"
        _interrupted_with(db, {})
        with sqlite3.connect(db) as connection:
            (raw,) = connection.execute(
                "SELECT data FROM session_message WHERE id = ?", (ASSISTANT,)
            ).fetchone()
            data = {**orjson.loads(raw), "content": content}
            connection.execute("UPDATE session_message SET data = ? WHERE id = ?",
                               (orjson.dumps(data).decode(), ASSISTANT))  # fmt: skip
        stamp = time.time() - 3600
        os.utime(db, (stamp, stamp))
        checked = sessions.check(db / SESSION, opencode_agent)
        assert checked.verdict == "unreadable" and ASSISTANT in checked.error, checked.error
        before = rows_of(db)
        outcome = fix.fix(db / SESSION)
        assert outcome.status == "refused" and ASSISTANT in outcome.reason, outcome.reason
        assert rows_of(db) == before
