"""manage.py watch follows an OpenHands CLI conversation: its events folder read as one."""

from __future__ import annotations

from pathlib import Path

import orjson
from django.urls import reverse

from inspector.local import fix, sessions
from inspector.watch.models import WatchedFile
from inspector.watch.views import IN_PLACE_BACKUPS, can_repair_here
from inspector.watch.watcher import Watcher
from inspector.web.models import Transcript
from tests.local.conftest import changed, snapshot
from tests.local.test_openhands_cli import CRASHED, HEALTHY, place
from tests.testdata import read

CID = "51b45f91d38a498e9f7f718ad9ec1c60"


def _store(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "home" / ".openhands"  # the server's own media is beside home/
    (tmp_path / "home" / "outside").mkdir(parents=True)
    (tmp_path / "home" / "outside" / "victim.json").write_bytes(b"not yours")
    return store, place(store / "conversations", CRASHED, CID)


def test_a_conversation_is_one_row_and_the_observation_landing_is_seen(db, owner, tmp_path):
    store, events = _store(tmp_path)
    watcher = Watcher(owner, [store])
    assert watcher.catch_up() == 1  # one conversation, not one row per event file
    (row,) = WatchedFile.objects.all()
    assert row.relative_path == f"conversations/{CID}/events" and row.needs_repair
    assert Transcript.objects.get(relative_path=row.relative_path).format == "openhands-cli"
    # The CLI, still running, writes the edit's observation: the conversation is whole again.
    crashed = orjson.loads(read(CRASHED))
    action = crashed[-1]
    observation = next(e for e in orjson.loads(read(HEALTHY)) if e.get("tool_call_id") ==
                       action["tool_call_id"] and e["kind"] == "ObservationEvent")  # fmt: skip
    observation = {**observation, "parent_id": action["id"], "action_id": action["id"]}
    landed = events / f"event-{len(crashed):05d}-{observation['id']}.json"
    landed.write_bytes(orjson.dumps(observation))
    again = watcher.changed(landed)
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
    (backup,) = fix.backups_of(events)
    assert backup.is_relative_to(store) and not (store / IN_PLACE_BACKUPS).exists()
    assert fix.undo(events).status == "restored"
