"""A scan and a watch of every agent's own folder (issue 27, agents-c's check of item 4).

The home of ``tests/local/conftest.py`` holds a session (or several) of every
agent ``list`` knows, in the folder that agent keeps them in, beside the files
agents keep there that are no sessions. Scanning each agent's folder, and
watching it, must read every session as the shape its agent writes, with the
verdict ``list`` gives it.
"""

from __future__ import annotations

import pytest

from inspector.local import sessions
from inspector.local.agents import AGENTS
from inspector.watch.models import WatchedFile
from inspector.watch.watcher import Watcher
from inspector.web.models import Transcript
from tests.local.conftest import Home, agent_home, snapshot

__all__ = ["agent_home"]  # the fixture, used here


def _placed(home: Home) -> dict[str, list]:
    """Each agent's placed sessions (one-file ones), by agent name."""
    folders = sessions.roots()
    out: dict[str, list] = {}
    for path in home.all():
        agent = sessions.agent_for(path, folders)
        assert agent is not None, path
        # One-file sessions (Goose's JSONL and Hermes's logs among them: no database here).
        if (path.is_file() and not agent.store) or agent.name in ("goose", "hermes"):
            out.setdefault(agent.name, []).append(path)
    return out


def test_a_scan_of_each_agents_folder_reads_its_sessions_as_its_shape(agent_home: Home, run_scan):
    placed = _placed(agent_home)
    assert {"openclaw", "cursor", "cline", "cline-cli", "cline-vscode", "roo-code", "hermes",
            "goose", "kiro", "copilot", "qwen", "kimi-code", "droid"} <= set(placed)  # fmt: skip
    before = snapshot(agent_home.root)
    for agent in AGENTS:
        if agent.name not in placed:
            continue
        root = agent.root()
        job, _ = run_scan(root, project=f"scan-{agent.name}")
        for path in placed[agent.name]:
            # The file's own row (a copy beside it with the same bytes is one transcript).
            row = job.files.get(path=path.relative_to(root).as_posix())
            transcript = Transcript.objects.get(pk=row.transcript_id)
            assert transcript.format == agent.format, (agent.name, path)
            assert transcript.needs_repair == (path in agent_home.broken), (agent.name, path)
    assert snapshot(agent_home.root) == before  # a scan writes nothing in the folders


@pytest.mark.django_db
def test_a_watch_of_each_agents_folder_reads_its_sessions_as_its_shape(agent_home: Home, owner):
    placed = _placed(agent_home)
    before = snapshot(agent_home.root)
    roots = [a.root() for a in AGENTS if a.name in placed]
    watcher = Watcher(owner, roots)
    watcher.catch_up()
    folders = sessions.roots()
    for name, paths in placed.items():
        for path in paths:
            agent = sessions.agent_for(path, folders)
            assert agent is not None
            row = next(
                r
                for r in WatchedFile.objects.select_related("folder")
                if r.folder.path == str(agent.root().resolve())
                and r.relative_path == path.relative_to(agent.root()).as_posix()
            )
            assert row.needs_repair == (path in agent_home.broken), (name, path, row.error)
    assert snapshot(agent_home.root) == before


def test_fix_refuses_each_agents_broken_session_while_the_agent_may_be_writing(agent_home: Home):
    """Hermes's logs, Goose's JSONL and Kiro's sessions too (the others have their own test)."""
    import os
    import time

    from inspector.local import fix

    folders = sessions.roots()
    checked = set()
    for path in agent_home.broken:
        agent = sessions.agent_for(path, folders)
        if agent is None or agent.name not in ("hermes", "goose", "kiro") or not path.is_file():
            continue
        os.utime(path, (time.time(), time.time()))
        before = snapshot(agent_home.root)
        outcome = fix.fix(path, agent)
        assert outcome.status == "refused" and "may still be running" in outcome.reason
        assert snapshot(agent_home.root) == before
        checked.add(agent.name)
    assert checked == {"hermes", "goose", "kiro"}


def test_list_prints_each_agents_own_resume_command(agent_home: Home):
    """Every agent with a placed session, Kiro and Cursor's too, with the command it resumes by."""
    import io

    import orjson

    from inspector import cli

    out = io.StringIO()
    cli.main(["list", "--json"], out)
    records = {
        orjson.loads(line)["path"]: orjson.loads(line) for line in out.getvalue().splitlines()
    }
    folders = sessions.roots()
    seen = set()
    for path in agent_home.all():
        agent = sessions.agent_for(path, folders)
        assert agent is not None
        resume = records[str(path)]["resume"]
        if agent.name == "kiro":
            assert resume == f"kiro-cli chat --resume-id {path.stem}", resume
        template = agent.resume.replace("{editor}", agent.editor_of(path))  # an extension's
        head = template.split("{", 1)[0].split("#", 1)[0].strip()
        assert head and head in resume, (agent.name, resume)
        seen.add(agent.name)
    assert {"kiro", "cursor", "droid", "copilot", "qwen", "kimi-code", "openclaw"} <= seen


def test_a_scan_of_kiros_folder_leaves_the_facts_beside_each_session_out(agent_home, run_scan):
    kiro = next(p for p in agent_home.broken if ".kiro" in p.parts)
    facts = kiro.with_suffix(".json")
    assert facts.is_file()  # the conftest places Kiro's facts beside its session
    job, _ = run_scan(kiro.parent, project="scan-kiro-facts")
    assert {row.path for row in job.files.all()} == {kiro.name}
    assert facts.name in " ".join(job.notes)
