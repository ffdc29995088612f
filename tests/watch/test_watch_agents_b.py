"""manage.py watch follows the sessions of the agents of issue 27 in their own folders."""

from __future__ import annotations

import os
import time
from pathlib import Path

from inspector.watch.models import WatchedFile
from inspector.watch.watcher import Watcher
from inspector.web.models import Transcript
from tests.testdata import CORPUS, read

# (where it lies under the agent's folder, the healthy file, the file cut as a crash leaves it)
SESSIONS = {
    "copilot": (
        "session-state/00000000-0000-4000-8000-000000000003/events.jsonl",
        "NishantCadra-Cadra-Claude-Code-Plugin__tests_fixtures_copilot_events.jsonl",
        "derived__cadra-crashed-mid-tool.events.jsonl",
    ),
    "qwen": (
        "projects/-home-dev-app/chats/6f1c2a9e-3b7d-4c1e-9a55-0d2f7e8b4c31.jsonl",
        "derived__qwen-writer-healthy.jsonl",
        "derived__qwen-writer-crashed.jsonl",
    ),
    "kimi-code": (
        "sessions/3f0a9c2e/9b1d7e40/agents/main/wire.jsonl",
        "derived__agent-core-basic-test__tool-turn.wire.jsonl",
        "derived__agent-core-basic-test__crashed-in-tool.wire.jsonl",
    ),
    "droid": (
        "sessions/-work-app/699d3bc5-08dc-40c3-8ea6-febaebdecbaa.jsonl",
        "Glubiz-zirv-dynamic-cli__tests_fixtures_droid_session.jsonl",
        "derived__zirv-crashed-in-tool.jsonl",
    ),
}


def test_each_agents_session_is_read_as_its_shape_and_a_crash_is_seen_as_it_lands(
    db, owner, tmp_path: Path
):
    roots = []
    paths = {}
    for shape, (relative, healthy, _) in SESSIONS.items():
        root = tmp_path / shape
        path = root / relative
        path.parent.mkdir(parents=True)
        path.write_bytes(read(CORPUS / shape / healthy))
        stamp = time.time() - 3600
        os.utime(path, (stamp, stamp))
        roots.append(root)
        paths[shape] = path
    watcher = Watcher(owner, roots)
    assert watcher.catch_up() == len(SESSIONS)
    for shape in paths:
        stored = Transcript.objects.get(relative_path=SESSIONS[shape][0])
        assert stored.format == shape
        assert not WatchedFile.objects.get(relative_path=SESSIONS[shape][0]).needs_repair
    for shape, path in paths.items():
        # The agent is killed mid-tool: the file it leaves is the cut one.
        path.write_bytes(read(CORPUS / shape / SESSIONS[shape][2]))
        row = watcher.changed(path)
        assert row is not None and row.needs_repair, shape
