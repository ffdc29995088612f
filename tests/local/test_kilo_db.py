"""Kilo's kilo.db (Kilo-Org/kilocode, OpenCode's fork; kilocli, issue 27): its sessions listed
where Kilo keeps them (``$XDG_DATA_HOME/kilo``, ``$KILO_DB``), fixed in place in one
transaction with the rows backed up outside the database, refused while Kilo may be writing,
undone, and resumed with ``kilo --session``. The database is DERIVED: built by this test from
Kilo's own table definitions (``tests/data/derived__kilo-schema.sql``)."""

from __future__ import annotations

import io
import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from inspector import cli
from inspector.local import databases, fix, opencode, opencode_db, sessions
from inspector.local.agents import AGENTS, BY_NAME
from tests.local.conftest import (
    _renamed,
    changed,
    make_database,
    opencode_records,
    rows_of,
    snapshot,
)
from tests.testdata import DATA

KILO_SCHEMA = DATA / "derived__kilo-schema.sql"
BROKEN = "ses_64d1b0e5effeXQpJzNIBnjjYgH"  # derived__export-interrupted: two cut tool calls
HEALTHY_FILE = "derived__export-healthy.opencode.json"
CUT = {"prt_19b2e4f1da60aWe9R6yqmufenv", "prt_19b2e4f1dc33oGFDDYtNrkROHy"}  # running, pending


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


HEALTHY = "ses_74d1b0e5effeXQpJzNIBnjjYgH"


def healthy_records() -> list[dict]:
    """The healthy one of the same session, its ids made its own (a second session)."""
    records = _renamed(opencode_records(HEALTHY_FILE), "ses_64d1", "ses_74d1")
    return _renamed(_renamed(records, "msg_19b2", "msg_29b2"), "prt_19b2", "prt_29b2")


def kilo_records() -> list[dict]:
    """A broken session and a healthy one, as Kilo's rows hold them (OpenCode's records)."""
    broken = opencode_records("derived__export-interrupted.opencode.json")
    healthy = healthy_records()
    assert {r["id"] for r in broken}.isdisjoint({r["id"] for r in healthy})
    return broken + healthy


def healthy_id() -> str:
    return HEALTHY


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for agent in AGENTS:
        for name in (agent.env, agent.home_env, *(env for env, _ in agent.more_env)):
            if name:
                monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("KILO_DB", raising=False)
    return home


@pytest.fixture
def db(home: Path) -> Path:
    """A home where Kilo keeps kilo.db in its data folder: no storage/ folder, no OpenCode."""
    data = home / ".local" / "share" / "kilo"
    data.mkdir(parents=True)
    make_database(data / "kilo.db", kilo_records(), age=3600, schema=KILO_SCHEMA)
    return data / "kilo.db"


def listed() -> list[dict]:
    status, out = run("list", "--json")
    assert status in (0, 1), out
    return [r for r in map(orjson.loads, out.splitlines()) if r["agent"] == "kilo"]


def by_id(
    rows: dict[str, list[tuple[object, ...]]],
) -> dict[tuple[str, object], tuple[object, ...]]:
    return {(table, row[0]): row for table, found in rows.items() for row in found}


def test_the_schema_has_every_column_the_store_reads_and_writes(db: Path) -> None:
    with sqlite3.connect(db) as connection:
        columns = {
            table: [r[1] for r in connection.execute(f"PRAGMA table_info({table})")]
            for table in ("session", "message", "part")
        }
    assert columns["message"] == ["id", "session_id", "time_created", "time_updated", "data"]
    assert columns["part"] == [
        "id", "message_id", "session_id", "time_created", "time_updated", "data",
    ]  # fmt: skip
    read = {"id", "project_id", "parent_id", "slug", "directory", "title", "version"}
    assert read | {"time_created", "time_updated"} <= set(columns["session"])


def test_kilo_db_is_listed_as_kilo_with_its_resume_command(db: Path) -> None:
    records = {r["path"]: r for r in listed()}
    assert set(records) == {str(db / BROKEN), str(db / healthy_id())}
    broken = records[str(db / BROKEN)]
    assert broken["verdict"] == "needs repair" and broken["counts"] == {"PAIR-1": 2}
    assert broken["resume"] == f"cd /home/dev/todo-app && kilo --session {BROKEN}"
    assert records[str(db / healthy_id())]["verdict"] == "clean"
    _, out = run("list", "--json")
    assert not [r for r in map(orjson.loads, out.splitlines()) if r["agent"] == "opencode"]


def test_xdg_data_home_and_kilo_db_move_it(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = tmp_path / "xdg" / "kilo" / "kilo.db"
    moved.parent.mkdir(parents=True)
    make_database(moved, kilo_records(), age=3600, schema=KILO_SCHEMA)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert {r["path"] for r in listed()} == {str(moved / BROKEN), str(moved / healthy_id())}
    # $KILO_DB: absolute, or from the data folder; ":memory:" keeps nothing on disk.
    named = tmp_path / "elsewhere" / "mine.db"
    named.parent.mkdir()
    make_database(named, healthy_records(), age=3600, schema=KILO_SCHEMA)
    monkeypatch.setenv("KILO_DB", str(named))
    assert [r["path"] for r in listed()] == [str(named / healthy_id())]
    monkeypatch.setenv("KILO_DB", "kilo.db")
    assert len(listed()) == 2
    monkeypatch.setenv("KILO_DB", ":memory:")
    assert listed() == []


def test_a_kilo_db_not_named_dot_db_is_warned_of(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    named = tmp_path / "mine.sqlite"
    make_database(named, healthy_records(), age=3600, schema=KILO_SCHEMA)
    monkeypatch.setenv("KILO_DB", str(named))
    assert listed() == []
    assert f"Kilo CLI: $KILO_DB names {named}, which is not read here" in capsys.readouterr().err


def test_a_dev_channel_database_is_listed_too(db: Path) -> None:
    dev = db.with_name("opencode-dev.db")  # packages/core database.ts: a channel's database
    make_database(dev, healthy_records(), age=3600, schema=KILO_SCHEMA)
    paths = {r["path"] for r in listed()}
    assert str(dev / healthy_id()) in paths and str(db / BROKEN) in paths


def test_no_database_no_sessions_and_no_warning(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / ".local" / "share" / "kilo").mkdir(parents=True)
    _, out = run("list", "--json")
    assert "Kilo CLI" not in out + capsys.readouterr().err and listed() == []


def test_fix_rewrites_only_the_cut_parts_backs_up_outside_and_resumes(db: Path) -> None:
    before = rows_of(db)
    status, out = run("fix", BROKEN)
    assert status == 0, out
    assert "2 rows of the session rewritten or removed, 0 added, in one transaction" in out
    assert out.splitlines()[-1].strip() == f"cd /home/dev/todo-app && kilo --session {BROKEN}"
    assert sessions.check(db / BROKEN).verdict == "clean"
    old, new = by_id(before), by_id(rows_of(db))
    assert set(old) == set(new)
    assert {key for key in old if old[key] != new[key]} == {("part", i) for i in CUT}
    (backup,) = fix.backups_of(db / BROKEN)
    assert backup.parent == db.parent / opencode.BACKUPS / BROKEN
    saved = orjson.loads((backup / opencode_db.ROWS).read_bytes())
    assert {r["id"] for r in saved["records"]} == CUT
    # The healthy session is untouched, and reads the same.
    assert next(r for r in listed() if r["path"].endswith(healthy_id()))["verdict"] == "clean"


def test_fix_changes_nothing_outside_the_database_and_its_backup(db: Path, home: Path) -> None:
    # Crafted neighbours: another agent's database beside it, a file named like a session.
    (db.parent / "opencode.db").write_bytes(b"not Kilo's")
    (db.parent / f"{BROKEN}.json").write_bytes(b"{}")
    tree = home.parent
    before = snapshot(tree)
    outcome = fix.fix(db / BROKEN, BY_NAME["kilo"])
    assert outcome.status == "fixed", outcome.reason
    assert outcome.backup is not None
    after = snapshot(tree)
    backups = db.parent / opencode.BACKUPS
    journals = {db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal")}
    for path in changed(before, after):
        assert path == db or path in journals or path == backups or backups in path.parents, path
    assert fix.undo(db / BROKEN).status == "restored"


def test_undo_restores_the_rows_and_refuses_after_kilo_wrote(db: Path) -> None:
    before = rows_of(db)
    assert fix.fix(db / BROKEN, BY_NAME["kilo"]).status == "fixed"
    with sqlite3.connect(db) as connection:  # Kilo answers one of the calls itself
        connection.execute(
            "UPDATE part SET time_updated = time_updated + 1 WHERE id = ?", (sorted(CUT)[0],)
        )
    after = rows_of(db)
    outcome = fix.undo(db / BROKEN)
    assert outcome.status == "refused" and "--force" in outcome.reason
    assert rows_of(db) == after
    status, out = run("fix", "--undo", "--force", BROKEN)
    assert status == 0 and "restored from" in out, out
    assert rows_of(db) == before and fix.backups_of(db / BROKEN) == []


def test_a_session_kilo_wrote_seconds_ago_is_refused(db: Path) -> None:
    now = int(time.time() * 1000)
    with sqlite3.connect(db) as connection:  # Kilo just wrote a part
        connection.execute("UPDATE part SET time_updated = ? WHERE id = ?", (now, sorted(CUT)[0]))
    for file in db.parent.glob("kilo.db*"):
        os.utime(file, (time.time() - 3600, time.time() - 3600))
    written = rows_of(db)
    outcome = fix.fix(db / BROKEN, BY_NAME["kilo"])
    assert outcome.status == "refused" and "Kilo CLI may still be running" in outcome.reason
    assert rows_of(db) == written and not (db.parent / opencode.BACKUPS).exists()
    os.utime(db, None)  # or it wrote another session just now
    assert fix.fix(db / BROKEN, BY_NAME["kilo"]).status == "refused"


def test_a_write_during_fix_rolls_it_back(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = opencode_db.plan
    victim = "prt_19b2e4f1a3a6shykP8Z38qouC9"

    def and_kilo_writes(*args: object, **kwargs: object) -> list[opencode_db.RowChange]:
        planned = real(*args, **kwargs)  # type: ignore[arg-type]
        with sqlite3.connect(db) as connection:
            connection.execute(
                "UPDATE part SET data = json_set(data, '$.text', 'more') WHERE id = ?", (victim,)
            )
        return planned

    monkeypatch.setattr(opencode_db, "plan", and_kilo_writes)
    old = by_id(rows_of(db))
    outcome = fix.fix(db / BROKEN, BY_NAME["kilo"])
    assert outcome.status == "refused" and "Kilo CLI may be running" in outcome.reason
    now = by_id(rows_of(db))
    assert {k: v for k, v in now.items() if k != ("part", victim)} == {
        k: v for k, v in old.items() if k != ("part", victim)
    }
    assert fix.backups_of(db / BROKEN) == []


def test_a_healthy_session_is_left_as_it_is(db: Path) -> None:
    before = snapshot(db.parent)
    outcome = fix.fix(db / healthy_id(), BY_NAME["kilo"])
    assert outcome.status == "clean", outcome.reason
    assert snapshot(db.parent) == before


def test_an_uploaded_kilo_db_is_read_as_the_opencode_tables_it_holds(db: Path) -> None:
    # A scan or an upload knows a database by its tables, not its name: Kilo's are OpenCode's.
    with sqlite3.connect(db) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    kind, found = databases.read_sessions([db.read_bytes()], 10_000_000)
    assert kind == "opencode.db"
    assert {s.name for s in found} == {BROKEN, HEALTHY} and not [s for s in found if s.reason]
    verdicts = {s.name: sessions.check(Path(s.name), data=s.data).verdict for s in found}
    assert verdicts == {BROKEN: "needs repair", HEALTHY: "clean"}


def test_a_scanned_folder_holding_kilo_db_yields_its_sessions(db: Path) -> None:
    from inspector.scan import sources

    found, unread = sources.walk(db.parent)
    assert {f.path for f in found} == {f"kilo.db/{BROKEN}", f"kilo.db/{HEALTHY}"}
    assert unread == [] and not [f for f in found if f.reason]
