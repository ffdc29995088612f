"""manage.py watch follows the sessions of an agent's database (Hermes's state.db here)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from inspector.watch.models import WatchedFile
from inspector.watch.watcher import Watcher, database_of, is_watched
from inspector.web.models import Transcript
from tests.local.conftest import changed, snapshot
from tests.local.test_goose_db import BROKEN_ID, OTHER_ID, goose_home
from tests.local.test_hermes_db import HEALTHY, LOG, SID, make_db

__all__ = ["goose_home"]  # the fixture, used here


def test_each_session_of_the_database_is_a_row_and_a_new_row_is_seen(db, owner, tmp_path: Path):
    hermes = tmp_path / "home" / ".hermes"  # the server's own media is beside home/
    (hermes / "sessions").mkdir(parents=True)
    make_db(hermes / "state.db", LOG)
    before = snapshot(tmp_path / "home")
    watcher = Watcher(owner, [hermes])
    assert watcher.catch_up() == 1
    (row,) = WatchedFile.objects.all()
    assert row.relative_path == f"state.db/{SID}" and row.needs_repair
    assert Transcript.objects.get(relative_path=row.relative_path).format == "hermes"
    assert snapshot(tmp_path / "home") == before  # read only: the database is as it was
    # Hermes answers the calls it was running: its rows land, and the session reads clean.
    connection = sqlite3.connect(hermes / "state.db")
    connection.execute("DELETE FROM messages")
    connection.commit()
    connection.close()
    fresh = tmp_path / "fresh.db"
    make_db(fresh, HEALTHY)
    connection = sqlite3.connect(hermes / "state.db")
    connection.execute("ATTACH DATABASE ? AS fresh", (str(fresh),))
    connection.execute("INSERT INTO messages SELECT * FROM fresh.messages")
    connection.commit()
    connection.close()
    again = watcher.changed(hermes / "state.db")
    assert again is not None and not again.needs_repair
    assert WatchedFile.objects.count() == 1
    assert watcher.changed(hermes / "state.db") is None  # nothing new: not read as new


def test_a_database_and_its_journal_are_watched_and_a_backup_folder_is_not(tmp_path: Path):
    for name in ("opencode.db", "sessions.db", "state.db", "state.db-wal", "opencode.db-shm"):
        assert database_of(tmp_path / name) is not None
        assert is_watched(tmp_path / name, tmp_path)
    assert database_of(tmp_path / "other.db") is None
    assert not is_watched(tmp_path / "transcript-inspector-backups" / "state.db", tmp_path)


def test_each_session_of_gooses_database_is_a_row_with_its_verdict(db, owner, goose_home: Path):
    """Goose's sessions.db (WAL): both sessions, the cut one needing repair, nothing written."""
    folder = goose_home / "home" / ".local" / "share" / "goose" / "sessions"
    before = snapshot(goose_home / "home")
    watcher = Watcher(owner, [folder])
    watcher.catch_up()
    rows = {r.relative_path: r for r in WatchedFile.objects.all()}
    assert set(rows) == {f"sessions.db/{BROKEN_ID}", f"sessions.db/{OTHER_ID}"}
    assert rows[f"sessions.db/{BROKEN_ID}"].needs_repair
    assert not rows[f"sessions.db/{OTHER_ID}"].needs_repair
    assert {t.format for t in Transcript.objects.all()} == {"goose"}
    # Read only: nothing changed, the database's own bytes included, and no -wal or -shm
    # is left beside it (opencode._connect).
    after = snapshot(goose_home / "home")
    assert changed(before, after) == set()


def test_a_session_of_opencodes_database_is_a_row_read_as_opencode(db, owner, tmp_path: Path):
    from tests.local.conftest import OPENCODE_BROKEN, make_database, opencode_records

    data = tmp_path / "home" / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    records = opencode_records(OPENCODE_BROKEN)
    make_database(data / "opencode.db", records, 3600)
    watcher = Watcher(owner, [data])
    watcher.catch_up()
    (row,) = WatchedFile.objects.all()
    assert row.relative_path == f"opencode.db/{records[0]['id']}" and row.needs_repair
    assert Transcript.objects.get(relative_path=row.relative_path).format == "opencode"


def test_opencodes_event_sourced_database_alone_is_followed(db, owner, tmp_path: Path):
    """OpenCode 1.18's event-sourced sessions (opencode_v2), its database the only store:
    the session killed while a tool ran is a row needing repair, read as OpenCode's, nothing
    written beside the database; when OpenCode itself closes the tool, the row reads clean."""
    from tests.local.test_opencode_v2 import SESSION, SESSIONS, make_v2_database

    data = tmp_path / "home" / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    make_v2_database(data / "opencode.db", "interrupted", age=3600)
    before = snapshot(tmp_path / "home")
    watcher = Watcher(owner, [data])
    assert watcher.catch_up() == 1
    (row,) = WatchedFile.objects.all()
    assert row.relative_path == f"opencode.db/{SESSION}" and row.needs_repair
    assert Transcript.objects.get(relative_path=row.relative_path).format == "opencode"
    assert snapshot(tmp_path / "home") == before  # read only: not even a -wal or -shm made
    # OpenCode takes the session on again: its failure event, the sequence, the projection.
    resumed = SESSIONS["resumed_by_opencode"]
    (event,) = resumed["event"]
    (message,) = resumed["session_message"]
    connection = sqlite3.connect(data / "opencode.db")
    with connection:
        connection.execute("INSERT INTO event (id, aggregate_id, seq, type, data) "
                           "VALUES (:id, :aggregate_id, :seq, :type, :data)", event)  # fmt: skip
        connection.execute("UPDATE event_sequence SET seq = ? WHERE aggregate_id = ?",
                           (event["seq"], SESSION))  # fmt: skip
        connection.execute("UPDATE session_message SET data = :data, seq = :seq, "
                           "time_updated = :time_updated WHERE id = :id", message)  # fmt: skip
    connection.close()
    again = watcher.changed(data / "opencode.db")
    assert again is not None and not again.needs_repair
    assert WatchedFile.objects.count() == 1
    assert watcher.changed(data / "opencode.db") is None  # nothing new: not read as new


def test_each_session_of_kilos_database_is_a_row_read_as_opencode(db, owner, tmp_path: Path):
    """Kilo's kilo.db (kilocli, issue 27; DERIVED from Kilo's schema): both sessions, the
    cut one needing repair, read as OpenCode's rows, nothing written beside the database."""
    from tests.local.conftest import make_database
    from tests.local.test_kilo_db import BROKEN, HEALTHY, KILO_SCHEMA, kilo_records

    data = tmp_path / "home" / ".local" / "share" / "kilo"
    data.mkdir(parents=True)
    make_database(data / "kilo.db", kilo_records(), 3600, schema=KILO_SCHEMA)
    assert database_of(data / "kilo.db-wal") == data / "kilo.db"
    before = snapshot(tmp_path / "home")
    watcher = Watcher(owner, [data])
    watcher.catch_up()
    rows = {r.relative_path: r for r in WatchedFile.objects.all()}
    assert set(rows) == {f"kilo.db/{BROKEN}", f"kilo.db/{HEALTHY}"}
    assert rows[f"kilo.db/{BROKEN}"].needs_repair and not rows[f"kilo.db/{HEALTHY}"].needs_repair
    assert {t.format for t in Transcript.objects.all()} == {"opencode"}
    assert changed(before, snapshot(tmp_path / "home")) == set()
