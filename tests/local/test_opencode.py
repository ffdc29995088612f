"""OpenCode's storage folder: listed with verdicts, fixed file by file, undone, left alone
when OpenCode keeps its sessions in SQLite."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import orjson
import pytest

from inspector import cli
from inspector.local import agents, fix, opencode, sessions
from tests.local.conftest import (
    OPENCODE_BROKEN,
    Home,
    make_database,
    opencode_records,
    place_store,
    rows_of,
)

RUNNING = "toolu_01Fp3Kd8Zr6Vy2Nc9Qw5Hs7T"
PENDING = "toolu_01Jb7Ts4Mx9Lq2Wd6Rk3Vn8P"


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def broken(home: Home) -> Path:
    return next(p for p in home.broken if p in home.stores)


def storage_files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_agent_table_knows_opencode_and_its_folder(tmp_path: Path) -> None:
    agent = agents.BY_NAME["opencode"]
    home = tmp_path / "h"
    assert agent.root({}, home) == home / ".local/share/opencode/storage"
    assert agent.root({"XDG_DATA_HOME": "/data"}, home) == Path("/data/opencode/storage")
    assert agents.BY_FORMAT["opencode"] is agent
    assert agent.resume_command("ses_1", cwd="/w") == "cd /w && opencode --session ses_1"


def test_list_shows_opencode_sessions_with_their_verdicts(agent_home: Home) -> None:
    status, out = run("list", "--json")
    assert status == 1
    records = {r["path"]: r for r in map(orjson.loads, out.splitlines())}
    path = broken(agent_home)
    record = records[str(path)]
    assert record["agent"] == "opencode" and record["verdict"] == "needs repair"
    assert record["counts"] == {"PAIR-1": 2}
    assert record["session"] == path.stem
    assert record["resume"] == f"cd /home/dev/todo-app && opencode --session {path.stem}"
    assert record["bytes"] > path.stat().st_size  # its messages and parts count
    healthy = next(p for p in agent_home.healthy if p in agent_home.stores)
    assert records[str(healthy)]["verdict"] == "clean"


def test_fix_rewrites_only_the_cut_parts_and_keeps_its_backup_outside_storage(
    agent_home: Home,
) -> None:
    path = broken(agent_home)
    storage = opencode.storage_root(path)
    before = storage_files(storage)
    outcome = fix.fix(path)
    assert outcome.status == "fixed", outcome.reason
    after = storage_files(storage)
    assert set(after) == set(before)  # no file added, none left behind (no temporary file)
    changed = [p for p in before if before[p] != after[p]]
    assert sorted(changed) == sorted(outcome.files)
    assert len(changed) == 2 and all(p.parent.parent.name == "part" for p in changed)
    for name in changed:
        part = orjson.loads(after[name])
        assert part["callID"] in (RUNNING, PENDING)
        assert part["state"]["status"] == "error"
        # Written the way OpenCode writes its files: JSON.stringify(part, null, 2).
        assert after[name] == orjson.dumps(part, option=orjson.OPT_INDENT_2)
    assert sessions.check(path).verdict == "clean"
    backup = outcome.backup
    assert backup is not None and storage not in backup.parents
    assert backup.parent.parent == storage.parent / opencode.BACKUPS
    assert fix.backups_of(path) == [backup]


def test_the_cli_names_the_files_and_how_to_resume(agent_home: Home) -> None:
    path = broken(agent_home)
    status, out = run("fix", path.stem)
    assert status == 0, out  # fixed: success, so `fix && resume` resumes
    assert f"Fixed {path}" in out and "PAIR-1" in out
    assert "2 files of the session rewritten or removed, 0 added" in out
    assert out.count("/part/msg_") == 2
    assert f"opencode --session {path.stem}" in out.splitlines()[-1]


def test_dry_run_writes_nothing(agent_home: Home) -> None:
    path = broken(agent_home)
    storage = opencode.storage_root(path)
    before = storage_files(storage)
    status, out = run("fix", "--dry-run", str(path))
    assert status == 1 and "Would fix" in out and "Dry run: nothing was written." in out
    assert storage_files(storage) == before
    assert not (storage.parent / opencode.BACKUPS).exists()


def test_undo_restores_every_file_byte_for_byte(agent_home: Home) -> None:
    path = broken(agent_home)
    storage = opencode.storage_root(path)
    before = storage_files(storage)
    assert fix.fix(path).status == "fixed"
    assert storage_files(storage) != before
    status, out = run("fix", "--undo", str(path))
    assert status == 0 and "restored from" in out
    assert storage_files(storage) == before
    assert fix.backups_of(path) == []
    assert run("fix", "--undo", str(path))[0] == 2  # nothing left to undo


def test_undo_refuses_when_opencode_wrote_after_the_fix(agent_home: Home) -> None:
    path = broken(agent_home)
    storage = opencode.storage_root(path)
    before = storage_files(storage)
    outcome = fix.fix(path)
    later = outcome.files[0]
    later.write_bytes(later.read_bytes().replace(b'"status": "error"', b'"status": "completed"'))
    assert fix.undo(path).status == "refused"
    assert fix.undo(path, force=True).status == "restored"
    assert storage_files(storage) == before


def test_a_session_written_seconds_ago_is_refused(agent_home: Home) -> None:
    path = broken(agent_home)
    part = next(p for p in opencode.session_files(path) if p.parent.parent.name == "part")
    os.utime(part, None)  # OpenCode just wrote one of its parts
    outcome = fix.fix(path)
    assert outcome.status == "refused" and "OpenCode may still be running" in outcome.reason
    assert fix.fix(path, quiet_seconds=0).status == "fixed"


def test_a_write_during_fix_makes_it_refuse(
    agent_home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = broken(agent_home)
    storage = opencode.storage_root(path)
    real = opencode.changes
    victim = opencode.session_files(path)[-1]

    def and_opencode_writes(store: opencode.Store, repaired: bytes) -> list[opencode.Change]:
        planned = real(store, repaired)
        victim.write_bytes(victim.read_bytes() + b" ")
        return planned

    monkeypatch.setattr(opencode, "changes", and_opencode_writes)
    before = storage_files(storage)
    outcome = fix.fix(path)
    assert outcome.status == "refused" and "changed while it was being fixed" in outcome.reason
    now = storage_files(storage)
    assert now[victim] == before[victim] + b" "  # OpenCode's own write, kept
    assert {p: d for p, d in now.items() if p != victim} == {
        p: d for p, d in before.items() if p != victim
    }
    assert fix.backups_of(path) == []


def test_where_opencode_keeps_sessions_in_sqlite_they_are_listed_from_it_and_the_json_left(
    agent_home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    path = broken(agent_home)
    storage = opencode.storage_root(path)
    db = storage.parent / "opencode.db"
    make_database(db, opencode_records(OPENCODE_BROKEN), age=3600)
    status, out = run("list", "--json")
    assert status == 1 and capsys.readouterr().err == ""
    mine = [r for r in map(orjson.loads, out.splitlines()) if r["agent"] == "opencode"]
    # From the database only: the JSON files are the copy OpenCode made it from.
    assert [r["path"] for r in mine] == [str(db / path.stem)]
    assert mine[0]["verdict"] == "needs repair" and mine[0]["counts"] == {"PAIR-1": 2}
    assert mine[0]["resume"] == f"cd /home/dev/todo-app && opencode --session {path.stem}"
    # The same history as the files it was migrated from.
    from_db = sessions.check(db / path.stem)
    from_files = sessions.check(path)
    assert from_db.parsed is not None and from_files.parsed is not None
    assert from_db.parsed.messages == from_files.parsed.messages
    stored = rows_of(db)
    before = storage_files(storage)
    outcome = fix.fix(path, quiet_seconds=0)  # the JSON copy: OpenCode no longer reads it
    assert outcome.status == "refused" and "no longer reads" in outcome.reason
    assert f"transcript-inspector fix {db / path.stem}" in outcome.reason
    assert rows_of(db) == stored and storage_files(storage) == before


def test_a_note_adds_a_message_and_its_part_and_undo_takes_them_away(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    ses = "ses_1"
    info = {"id": ses, "projectID": "p1", "directory": "/w", "title": "t", "time": {"created": 1}}
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
    path = place_store(storage, records, 3600)
    before = storage_files(storage)
    outcome = fix.fix(path)
    assert outcome.status == "fixed", outcome.reason
    now = storage_files(storage)
    added = sorted(set(now) - set(before))
    assert len(added) == 2 and outcome.added == 2
    message_file = next(p for p in added if p.parent.parent.name == "message")
    assert "msg_b1" < message_file.stem < "msg_c1"  # OpenCode reads it in its place
    assert storage / "part" / "msg_b1" / "prt_b2.json" not in now  # the cut call is gone
    assert sessions.check(path).verdict == "clean"
    assert fix.undo(path).status == "restored"
    assert storage_files(storage) == before


def test_a_moved_data_folder_is_found_through_xdg_data_home(
    agent_home: Home, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "xdg"
    path = broken(agent_home)
    storage = opencode.storage_root(path)
    elsewhere.mkdir()
    storage.parent.rename(elsewhere / "opencode")
    monkeypatch.setenv("XDG_DATA_HOME", str(elsewhere))
    found, _ = sessions.find(sessions.roots())
    mine = [s for s in found if s.agent.name == "opencode"]
    assert {s.path.parent.parent.parent for s in mine} == {elsewhere / "opencode" / "storage"}
    assert time.time() - max(s.mtime for s in mine) > 60
