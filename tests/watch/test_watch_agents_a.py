"""Watching OpenClaw's, Cursor's, Cline's and Hermes's folders: their sessions, nothing else."""

from __future__ import annotations

from inspector.watch.models import WatchedFile
from inspector.watch.watcher import Watcher
from inspector.web.models import Transcript
from tests.local.conftest import Home, agent_home, snapshot

__all__ = ["agent_home"]  # the fixture, used here


def test_catch_up_stores_each_agents_sessions_as_its_shape_and_writes_nothing(
    db, owner, agent_home: Home
):
    roots = {
        "pi": agent_home.root / ".openclaw" / "agents",
        "cursor": agent_home.root / ".cursor" / "projects",
        "cline": agent_home.root / ".cline" / "data" / "tasks",
        "hermes": agent_home.root / ".hermes" / "sessions",
    }
    before = snapshot(agent_home.root)
    watcher = Watcher(owner, roots.values())
    sessions = [p for p in agent_home.all() if any(p.is_relative_to(r) for r in roots.values())]
    assert watcher.catch_up() == len(sessions) == 6
    stored = {row.relative_path for row in WatchedFile.objects.all()}
    assert len(stored) == 6  # no index, checkpoint, trace or UI log among them
    for shape, root in roots.items():
        mine = [p for p in sessions if p.is_relative_to(root)]
        formats = {t.format for t in Transcript.objects.filter(relative_path__in=[
            p.relative_to(root).as_posix() for p in mine])}  # fmt: skip
        assert formats == {shape}
    broken = {p.name for p in agent_home.broken}
    for row in WatchedFile.objects.all():
        assert row.needs_repair == (row.relative_path.rsplit("/", 1)[-1] in broken), row
    assert snapshot(agent_home.root) == before
