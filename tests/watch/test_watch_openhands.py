"""manage.py watch follows an OpenHands session (agents-c): its events folder read as one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
from django.urls import reverse

from inspector.local import fix, sessions
from inspector.watch.models import WatchedFile
from inspector.watch.views import IN_PLACE_BACKUPS, can_repair_here
from inspector.watch.watcher import Watcher
from inspector.web.models import Transcript
from tests.local.conftest import changed, snapshot
from tests.testdata import CORPUS, read

CRASHED = CORPUS / "openhands" / "derived__basic.crashed-in-edit.json"
FULL = CORPUS / "openhands" / "All-Hands-AI-OpenHands__tests_runtime_trajs_basic.json"


def _store(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "home" / ".openhands"  # the server's own media is beside home/
    (tmp_path / "home" / "outside").mkdir(parents=True)
    (tmp_path / "home" / "outside" / "victim.json").write_bytes(b"not yours")
    events = store / "sessions" / "abc123" / "events"
    events.mkdir(parents=True)
    for event in orjson.loads(read(CRASHED)):
        (events / f"{event['id']}.json").write_bytes(orjson.dumps(event))
    stamp = time.time() - 3600
    for file in events.iterdir():
        os.utime(file, (stamp, stamp))
    return store, events


def test_a_session_is_one_row_read_as_openhands_and_an_event_landing_is_seen(db, owner, tmp_path):
    store, events = _store(tmp_path)
    watcher = Watcher(owner, [store])
    assert watcher.catch_up() == 1  # one session, not one row per event file
    (row,) = WatchedFile.objects.all()
    assert row.relative_path == "sessions/abc123/events" and row.needs_repair
    assert Transcript.objects.get(relative_path=row.relative_path).format == "openhands"
    # OpenHands writes the observation it was running when it was killed, and finishes.
    for event in orjson.loads(read(FULL)):
        if event["id"] > 3:
            (events / f"{event['id']}.json").write_bytes(orjson.dumps(event))
    again = watcher.changed(events / "4.json")
    assert again is not None and not again.needs_repair
    assert WatchedFile.objects.count() == 1


def test_repair_in_place_writes_only_inside_the_watched_store(db, owner, tmp_path, owner_client):
    store, events = _store(tmp_path)
    watcher = Watcher(owner, [store])
    watcher.catch_up()
    (row,) = WatchedFile.objects.all()
    assert can_repair_here(row)
    before = snapshot(tmp_path / "home")
    url = reverse("watch:repair", args=[row.folder.project.slug, row.pk])
    response = owner_client.post(url, follow=True)
    assert "Repaired" in response.content.decode()
    assert sessions.check(events).verdict == "clean"
    touched = changed(before, snapshot(tmp_path / "home"))
    assert touched and [p for p in touched if not p.is_relative_to(store)] == []
    # Where fix keeps them, inside the watched store: no other backup folder is made.
    (backup,) = fix.backups_of(events)
    assert backup.is_relative_to(store) and not (store / IN_PLACE_BACKUPS).exists()
    assert fix.undo(events).status == "restored"
