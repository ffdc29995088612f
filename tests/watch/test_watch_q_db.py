"""manage.py watch follows the conversations of Amazon Q's and Kiro CLI's data.sqlite3 (kirodb)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from inspector.local import q_db
from inspector.watch.models import WatchedFile
from inspector.watch.watcher import Watcher, database_of, is_watched
from inspector.web.models import Transcript
from tests.local.conftest import snapshot
from tests.local.test_q_db import CWD, HEALTHY, KILLED, make_db, other_conversation
from tests.testdata import read


def test_each_conversation_is_a_row_and_q_answering_it_is_seen(db, owner, tmp_path: Path):
    folder = tmp_path / "home" / ".local" / "share" / "amazon-q"
    data = folder / "data.sqlite3"
    make_db(data, {CWD: read(KILLED), "/home/dev/other": other_conversation()})
    before = snapshot(tmp_path / "home")
    watcher = Watcher(owner, [folder])
    watcher.catch_up()
    rows = {r.relative_path: r for r in WatchedFile.objects.all()}
    broken = f"data.sqlite3/{q_db.session_name(CWD)}"
    assert set(rows) == {broken, f"data.sqlite3/{q_db.session_name('/home/dev/other')}"}
    assert rows[broken].needs_repair
    assert {t.format for t in Transcript.objects.all()} == {"q-chat"}
    assert snapshot(tmp_path / "home") == before  # read only
    # Q's next reply writes the row with the tool's results: it reads clean.
    connection = sqlite3.connect(data)
    connection.execute(
        "UPDATE conversations SET value = ? WHERE key = ?", (read(HEALTHY).decode(), CWD)
    )
    connection.commit()
    connection.close()
    assert watcher.changed(data) is not None
    assert not WatchedFile.objects.get(relative_path=broken).needs_repair


def test_the_database_and_its_rollback_journal_are_watched(tmp_path: Path):
    for name in ("data.sqlite3", "data.sqlite3-journal"):
        assert database_of(tmp_path / name) == tmp_path / "data.sqlite3"
        assert is_watched(tmp_path / name, tmp_path)
