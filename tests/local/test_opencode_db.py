"""A session in OpenCode's SQLite database (OpenCode 1.18): listed, fixed in place in one
transaction with its rows backed up, refused while OpenCode may be writing, undone."""

from __future__ import annotations

import io
import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from inspector import cli
from inspector.local import fix, opencode, opencode_db, sessions
from inspector.local.agents import AGENTS
from tests.local.conftest import make_database, opencode_records, rows_of

INTERRUPTED = "derived__export-interrupted.opencode.json"  # what OpenCode 1.18.33 imported
SESSION = "ses_64d1b0e5effeXQpJzNIBnjjYgH"
CUT = {"prt_19b2e4f1da60aWe9R6yqmufenv", "prt_19b2e4f1dc33oGFDDYtNrkROHy"}  # running, pending


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home where OpenCode 1.18 keeps only ``opencode.db``: no ``storage/`` folder at all."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for agent in AGENTS:
        monkeypatch.delenv(agent.env, raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    data = home / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    make_database(data / "opencode.db", opencode_records(INTERRUPTED), age=3600)
    assert not (data / "storage").exists()
    return data / "opencode.db"


def by_id(
    rows: dict[str, list[tuple[object, ...]]],
) -> dict[tuple[str, object], tuple[object, ...]]:
    return {(table, row[0]): row for table, found in rows.items() for row in found}


def test_a_database_without_a_storage_folder_is_listed(db: Path) -> None:
    status, out = run("list", "--json")
    assert status == 1
    (record,) = [r for r in map(orjson.loads, out.splitlines()) if r["agent"] == "opencode"]
    assert record["path"] == str(db / SESSION)
    assert record["verdict"] == "needs repair" and record["counts"] == {"PAIR-1": 2}
    assert record["resume"] == f"cd /home/dev/todo-app && opencode --session {SESSION}"


def test_fix_rewrites_only_the_cut_parts_in_one_transaction(db: Path) -> None:
    before = rows_of(db)
    outcome = fix.fix(db / SESSION)
    assert outcome.status == "fixed", outcome.reason
    assert outcome.records == [f"part {i} rewritten" for i in sorted(CUT)]
    assert sessions.check(db / SESSION).verdict == "clean"
    old, new = by_id(before), by_id(rows_of(db))
    assert set(old) == set(new)  # no row added, none removed
    changed = {key for key in old if old[key] != new[key]}
    assert changed == {("part", i) for i in CUT}
    for key in changed:
        was, now = old[key], new[key]
        # id, message_id, session_id, time_created kept; time_updated now, as OpenCode writes
        assert now[:4] == was[:4] and int(str(now[4])) > int(str(was[4]))
        part = orjson.loads(str(now[5]))
        assert part["state"]["status"] == "error"
        assert now[5] == orjson.dumps(part).decode()  # JSON.stringify(part): compact
        assert "id" not in part and "messageID" not in part
    # The backup set: outside the database, the original rows and a note.
    backup = outcome.backup
    assert backup is not None and backup.parent == db.parent / opencode.BACKUPS / SESSION
    saved = orjson.loads((backup / opencode_db.ROWS).read_bytes())
    originals = {(r["table"], r["id"]): r["original"] for r in saved["records"]}
    assert {k: tuple(v.values()) for k, v in originals.items()} == {k: old[k] for k in changed}
    assert fix.backups_of(db / SESSION) == [backup]


def test_the_cli_names_the_rows_and_how_to_resume(db: Path) -> None:
    status, out = run("fix", SESSION)
    assert status == 0, out  # fixed: success, so `fix && resume` resumes
    assert f"Fixed {db / SESSION}" in out and "PAIR-1" in out
    assert "2 rows of the session rewritten or removed, 0 added, in one transaction" in out
    assert out.count(" rewritten\n") == 2
    assert f"transcript-inspector fix --undo {db / SESSION}" in out
    assert out.splitlines()[-1].strip() == (
        f"cd /home/dev/todo-app && opencode --session {SESSION}"
    )


def test_dry_run_writes_nothing(db: Path) -> None:
    before = rows_of(db)
    files = {p: p.read_bytes() for p in db.parent.glob("opencode.db*")}
    status, out = run("fix", "--dry-run", SESSION)
    assert status == 1 and "Would fix" in out and "Dry run: nothing was written." in out
    assert "part prt_19b2e4f1da60aWe9R6yqmufenv rewritten" in out
    assert rows_of(db) == before
    assert {p: p.read_bytes() for p in db.parent.glob("opencode.db*")} == files
    assert not (db.parent / opencode.BACKUPS).exists()


def test_undo_restores_the_rows_exactly(db: Path) -> None:
    before = rows_of(db)
    assert fix.fix(db / SESSION).status == "fixed"
    assert rows_of(db) != before
    status, out = run("fix", "--undo", SESSION)
    assert status == 0 and "restored from" in out
    assert rows_of(db) == before
    assert fix.backups_of(db / SESSION) == []
    assert run("fix", "--undo", SESSION)[0] == 2  # nothing left to undo


def test_undo_refuses_when_opencode_wrote_after_the_fix(db: Path) -> None:
    before = rows_of(db)
    assert fix.fix(db / SESSION).status == "fixed"
    with sqlite3.connect(db) as connection:  # OpenCode answers one of the calls itself
        connection.execute(
            "UPDATE part SET time_updated = time_updated + 1 WHERE id = ?", (sorted(CUT)[0],)
        )
    after = rows_of(db)
    outcome = fix.undo(db / SESSION)
    assert outcome.status == "refused" and "--force" in outcome.reason
    assert rows_of(db) == after
    assert fix.undo(db / SESSION, force=True).status == "restored"
    assert rows_of(db) == before


def test_a_session_written_seconds_ago_is_refused(db: Path) -> None:
    before = rows_of(db)
    now = int(time.time() * 1000)
    with sqlite3.connect(db) as connection:  # OpenCode just wrote a part
        connection.execute("UPDATE part SET time_updated = ? WHERE id = ?", (now, sorted(CUT)[0]))
    for file in db.parent.glob("opencode.db*"):
        os.utime(file, (time.time() - 3600, time.time() - 3600))
    written = rows_of(db)
    outcome = fix.fix(db / SESSION)
    assert outcome.status == "refused" and "OpenCode may still be running" in outcome.reason
    assert rows_of(db) == written and written != before
    assert not (db.parent / opencode.BACKUPS).exists()
    assert fix.fix(db / SESSION, quiet_seconds=0).status == "fixed"


def test_a_database_written_seconds_ago_is_refused(db: Path) -> None:
    os.utime(db, None)  # OpenCode wrote another session just now
    before = rows_of(db)
    outcome = fix.fix(db / SESSION)
    assert outcome.status == "refused" and "OpenCode may still be running" in outcome.reason
    assert rows_of(db) == before and not (db.parent / opencode.BACKUPS).exists()


def test_a_write_during_fix_makes_it_roll_back(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = opencode_db.plan

    def and_opencode_writes(*args: object, **kwargs: object) -> list[opencode_db.RowChange]:
        planned = real(*args, **kwargs)  # type: ignore[arg-type]
        with sqlite3.connect(db) as connection:  # between the read and the transaction
            connection.execute(
                "UPDATE part SET data = json_set(data, '$.text', 'more') "
                "WHERE id = 'prt_19b2e4f1a3a6shykP8Z38qouC9'"
            )
        return planned

    monkeypatch.setattr(opencode_db, "plan", and_opencode_writes)
    old = by_id(rows_of(db))
    outcome = fix.fix(db / SESSION)
    assert outcome.status == "refused" and "changed while it was being fixed" in outcome.reason
    victim = ("part", "prt_19b2e4f1a3a6shykP8Z38qouC9")
    now = by_id(rows_of(db))
    assert "more" in str(now[victim][5])  # OpenCode's own write, kept
    assert {k: v for k, v in now.items() if k != victim} == {
        k: v for k, v in old.items() if k != victim
    }  # and nothing of the fix
    assert fix.backups_of(db / SESSION) == []


def test_a_repair_that_does_not_read_back_clean_is_put_back(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = rows_of(db)
    real = opencode_db.diagnosed
    calls = {"n": 0}

    def unclean_after_commit(*args: object, **kwargs: object) -> sessions.Checked:
        checked = real(*args, **kwargs)  # type: ignore[arg-type]
        calls["n"] += 1
        checked.error = "simulated"  # the read back after the commit (the read is store's)
        return checked

    monkeypatch.setattr(opencode_db, "diagnosed", unclean_after_commit)
    outcome = fix.fix(db / SESSION)
    assert outcome.status == "failed" and "it is back" in outcome.reason
    assert calls["n"] == 1
    assert rows_of(db) == before
    assert fix.backups_of(db / SESSION) == []


def test_a_note_adds_a_message_and_its_part_and_undo_deletes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ses = "ses_1"
    info = {"id": ses, "projectID": "p1", "directory": "/w", "title": "t",
            "time": {"created": 1, "updated": 4}}  # fmt: skip
    user = {"id": "msg_a1", "sessionID": ses, "role": "user", "time": {"created": 1},
            "agent": "build", "model": {"providerID": "x", "modelID": "y"}}  # fmt: skip
    reply = {"id": "msg_b1", "sessionID": ses, "role": "assistant", "parentID": "msg_a1",
             "time": {"created": 2}, "finish": "length", "modelID": "y"}  # fmt: skip
    after = {**reply, "id": "msg_c1", "time": {"created": 3, "completed": 4}, "finish": "stop"}
    records = [
        info,
        user,
        reply,
        after,
        {"id": "prt_a1", "sessionID": ses, "messageID": "msg_a1", "type": "text", "text": "go"},
        {"id": "prt_b1", "sessionID": ses, "messageID": "msg_b1", "type": "text", "text": "On it."},
        {
            "id": "prt_b2",
            "sessionID": ses,
            "messageID": "msg_b1",
            "type": "tool",
            "callID": "c1",
            "tool": "write",
            "state": {"status": "pending", "input": '{"path": "/x'},
        },
        {"id": "prt_c1", "sessionID": ses, "messageID": "msg_c1", "type": "text", "text": "next"},
    ]
    db = tmp_path / "opencode.db"
    make_database(db, records, age=3600)
    before = rows_of(db)
    outcome = fix.fix(db / ses)
    assert outcome.status == "fixed", outcome.reason
    # The note: a message added in its place, and the cut call's part rewritten into it.
    assert outcome.added == 1
    old, new = by_id(before), by_id(rows_of(db))
    (added,) = sorted(set(new) - set(old))
    assert added[0] == "message" and "msg_b1" < str(added[1]) < "msg_c1"
    assert set(old) - set(new) == set()
    assert outcome.records == [
        f"message {added[1]} added",
        f"part prt_b2 rewritten (now in {added[1]})",
    ]
    message = new[added]
    assert message[1] == ses and message[2] == 2  # session_id, time_created = its time.created
    part = new[("part", "prt_b2")]
    assert part[1] == message[0] and part[2] == ses  # message_id, session_id
    assert orjson.loads(str(part[5]))["type"] == "text"  # the cut call is gone
    assert sessions.check(db / ses).verdict == "clean"
    exported = orjson.loads(opencode.db_export_bytes(db / ses))
    assert [m["info"]["id"] for m in exported["messages"]].index(message[0]) == 2  # in its place
    assert fix.undo(db / ses).status == "restored"
    assert rows_of(db) == before
