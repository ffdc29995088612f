"""The agents of issue 27 (agents-b): found in their own folders, fixed in place, resumed.

Each agent's sessions are put where the agent keeps them under a temporary
HOME (or the folder its environment variable names); ``list`` must find
them with their verdicts, ``fix`` must repair the broken one in place (a
backup beside it, ``undo`` putting every byte back, a refusal while the agent
may be writing) and print the agent's own resume command, and nothing else in
the whole tree may change.
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from inspector import cli
from inspector.local import fix, sessions
from inspector.local.agents import AGENTS, BY_NAME
from tests.local.conftest import changed, snapshot
from tests.testdata import CORPUS, read


@dataclass(frozen=True)
class Placed:
    agent: str
    relative: str  # under the agent's own folder
    source: Path
    broken: bool
    session: str  # the id the agent resumes it under


CASES = [
    Placed(
        "copilot",
        "copilot-sess-1/events.jsonl",
        CORPUS / "copilot" / "kitfunso-hippo-memory__tests_fixtures_copilot_events.jsonl",
        False,
        "copilot-sess-1",
    ),
    Placed(
        "copilot",
        "00000000-0000-4000-8000-000000000003/events.jsonl",
        CORPUS / "copilot" / "derived__cadra-crashed-mid-tool.events.jsonl",
        True,
        "00000000-0000-4000-8000-000000000003",
    ),
    Placed(
        "qwen",
        "-home-dev-app/chats/6f1c2a9e-3b7d-4c1e-9a55-0d2f7e8b4c31.jsonl",
        CORPUS / "qwen" / "derived__qwen-writer-healthy.jsonl",
        False,
        "6f1c2a9e-3b7d-4c1e-9a55-0d2f7e8b4c31",
    ),
    Placed(
        "qwen",
        "-home-dev-app/chats/6f1c2a9e-3b7d-4c1e-9a55-0d2f7e8b4c31.jsonl",
        CORPUS / "qwen" / "derived__qwen-writer-crashed.jsonl",
        True,
        "6f1c2a9e-3b7d-4c1e-9a55-0d2f7e8b4c31",
    ),
    Placed(
        "kimi-code",
        "3f0a9c2e/9b1d7e40-2c3a-4f5e-8a6b-0c1d2e3f4a5b/agents/main/wire.jsonl",
        CORPUS / "kimi-code" / "derived__agent-core-basic-test__tool-turn.wire.jsonl",
        False,
        "9b1d7e40-2c3a-4f5e-8a6b-0c1d2e3f4a5b",
    ),
    Placed(
        "kimi-code",
        "3f0a9c2e/9b1d7e40-2c3a-4f5e-8a6b-0c1d2e3f4a5c/agents/main/wire.jsonl",
        CORPUS / "kimi-code" / "derived__agent-core-basic-test__crashed-in-tool.wire.jsonl",
        True,
        "9b1d7e40-2c3a-4f5e-8a6b-0c1d2e3f4a5c",
    ),
]
CASES += [
    Placed(
        "droid",
        "-work-app/699d3bc5-08dc-40c3-8ea6-febaebdecbaa.jsonl",
        CORPUS / "droid" / "Glubiz-zirv-dynamic-cli__tests_fixtures_droid_session.jsonl",
        False,
        "699d3bc5-08dc-40c3-8ea6-febaebdecbaa",
    ),
    Placed(
        "droid",
        "-work-app/699d3bc5-08dc-40c3-8ea6-febaebdecbab.jsonl",
        CORPUS / "droid" / "derived__zirv-crashed-in-tool.jsonl",
        True,
        "699d3bc5-08dc-40c3-8ea6-febaebdecbaa",
    ),
]
CASES += [
    Placed(
        "cline-cli",
        "1784094124598_rruoq/1784094124598_rruoq.messages.json",
        CORPUS / "cline" / "cline-cline__sdk_fixtures_session_session.messages.json",
        False,
        "1784094124598_rruoq",
    ),
    Placed(
        "cline-cli",
        "fixture-success-01/fixture-success-01.messages.json",
        CORPUS / "cline" / "derived__cline-sdk-success__crashed-in-tool.messages.json",
        True,
        "fixture-success-01",
    ),
]
RESUME = {
    "cline-cli": "cline --id {session}",
    "copilot": "copilot --resume={session}",
    "qwen": "qwen --resume {session}",
    "kimi-code": "kimi --session {session}",
    "droid": "droid --resume {session}",
}


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("HOME", str(root))
    for agent in AGENTS:
        monkeypatch.delenv(agent.env, raising=False)
    (tmp_path / "outside.txt").write_bytes(b"not a session")
    return root


def place(home: Path, case: Placed, *, env_root: Path | None = None) -> Path:
    agent = BY_NAME[case.agent]
    base = env_root if env_root is not None else home / agent.default_home
    path = base / agent.sessions / case.relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(read(case.source))
    stamp = time.time() - 3600
    os.utime(path, (stamp, stamp))
    return path


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.agent}-{c.relative}")
def test_list_finds_the_session_in_the_agents_own_folder_with_its_verdict(home, case):
    path = place(home, case)
    status, out = run("list", "--json")
    records = [orjson.loads(line) for line in out.splitlines()]
    ours = [r for r in records if r["path"] == str(path)]
    assert len(ours) == 1
    assert ours[0]["verdict"] == ("needs repair" if case.broken else "clean")
    assert status == (1 if case.broken else 0)
    # Run where the session was made when the file says where: ``cd <cwd> && <command>``.
    assert ours[0]["resume"].endswith(RESUME[case.agent].format(session=case.session))


@pytest.mark.parametrize("agent", sorted(a for a in RESUME if BY_NAME[a].env))
def test_the_agents_environment_variable_moves_its_folder(home, tmp_path, monkeypatch, agent):
    case = next(c for c in CASES if c.agent == agent)
    moved = tmp_path / "elsewhere"
    monkeypatch.setenv(BY_NAME[agent].env, str(moved))
    path = place(home, case, env_root=moved)
    _, out = run("list", "--json")
    assert str(path) in {orjson.loads(line)["path"] for line in out.splitlines()}


@pytest.mark.parametrize("case", [c for c in CASES if c.broken], ids=lambda c: c.agent)
def test_fix_repairs_in_place_prints_the_resume_command_and_undo_puts_it_back(home, case):
    path = place(home, case)
    original = path.read_bytes()
    tree = home.parent
    before = snapshot(tree)
    status, out = run("fix", str(path))
    assert status == 0, out
    assert f"Fixed {path}" in out
    assert RESUME[case.agent].format(session=case.session) in out
    after = snapshot(tree)
    backups = fix.backups_of(path)
    assert len(backups) == 1 and backups[0].read_bytes() == original
    # Only the session file changed, and its backup and the backup's note appeared.
    note = backups[0].with_name(backups[0].name + fix.NOTE_SUFFIX)
    assert changed(before, after) == {path, backups[0], note}
    checked = sessions.check(path, BY_NAME[case.agent])
    assert checked.verdict == "clean", checked.error
    assert checked.parsed is not None and checked.parsed.format == BY_NAME[case.agent].format
    status, out = run("fix", "--undo", str(path))
    assert status == 0 and "restored from" in out
    assert path.read_bytes() == original
    assert snapshot(tree) == before


@pytest.mark.parametrize("case", [c for c in CASES if c.broken], ids=lambda c: c.agent)
def test_fix_refuses_a_session_the_agent_may_still_be_writing(home, case):
    path = place(home, case)
    os.utime(path)  # written just now
    tree = home.parent
    before = snapshot(tree)
    outcome = fix.fix(path)
    assert outcome.status == "refused" and "may still be running" in outcome.reason
    assert snapshot(tree) == before


@pytest.mark.parametrize("case", [c for c in CASES if not c.broken], ids=lambda c: c.agent)
def test_fix_leaves_a_healthy_session_byte_for_byte(home, case):
    path = place(home, case)
    tree = home.parent
    before = snapshot(tree)
    status, out = run("fix", str(path))
    assert status == 0 and "clean, nothing to repair" in out
    assert snapshot(tree) == before


def test_the_python_kimi_clis_rotated_and_sub_agent_context_files_are_not_listed(home):
    """Kimi CLI rotates a cleared context to context_<n>.jsonl and keeps sub-agents'
    contexts under subagents/: neither is a session `kimi --session` resumes."""
    folder = home / ".kimi" / "sessions" / "5d41402abc4b2a76" / "531d195b"
    data = read(
        CORPUS
        / "openai-chat"
        / "MoonshotAI-kimi-cli__pr127__531d195b-6436-426e-b010-4bf723a992de.kimi-context.jsonl"
    )
    for relative in ("context.jsonl", "context_1.jsonl", "subagents/a1/context.jsonl"):
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    _, out = run("list", "--json")
    listed = {orjson.loads(line)["path"] for line in out.splitlines()}
    assert listed == {str(folder / "context.jsonl")}


def test_kimi_codes_resume_runs_in_the_folder_its_state_file_names_when_the_wire_does_not(home):
    """Kimi Code resumes a session only from the folder it was made in (``kimi -r`` elsewhere
    says "created under a different directory"); a newer wire records no cwd, the session's
    ``state.json`` (two folders above ``agents/main/wire.jsonl``) keeps it as ``workDir``."""
    case = next(c for c in CASES if c.agent == "kimi-code" and c.broken)
    path = place(home, case)
    assert sessions.check(path, BY_NAME["kimi-code"]).parsed.meta.get("cwd") is None
    command = RESUME["kimi-code"].format(session=case.session)
    # Nothing says where: the bare command.
    assert sessions.check(path, BY_NAME["kimi-code"]).resume_command() == command
    state = path.parents[2] / "state.json"
    state.write_bytes(orjson.dumps({"workDir": "/home/dev/my app", "title": "t"}))
    _, out = run("list", "--json")
    (listed,) = [orjson.loads(line) for line in out.splitlines() if str(path) in line]
    assert listed["resume"] == f"cd '/home/dev/my app' && {command}"
    status, out = run("fix", str(path))
    assert status == 0, out
    assert f"cd '/home/dev/my app' && {command}" in out
    state.write_bytes(b"not json")
    assert sessions.check(path, BY_NAME["kimi-code"]).resume_command() == command


@pytest.mark.parametrize(
    ("variable", "under"),
    [
        ("CLINE_SESSION_DATA_DIR", ""),
        ("CLINE_DATA_DIR", "sessions"),
        ("CLINE_DIR", "data/sessions"),
    ],
)
def test_each_variable_the_cline_cli_reads_moves_its_sessions(
    home, tmp_path, monkeypatch, variable, under
):
    """@cline/core's storage paths: CLINE_SESSION_DATA_DIR, else CLINE_DATA_DIR/sessions,
    else CLINE_DIR/data/sessions."""
    case = next(c for c in CASES if c.agent == "cline-cli" and c.broken)
    moved = tmp_path / "elsewhere"
    monkeypatch.setenv(variable, str(moved))
    path = moved / under / case.relative
    path.parent.mkdir(parents=True)
    path.write_bytes(read(case.source))
    _, out = run("list", "--json")
    (listed,) = [orjson.loads(line) for line in out.splitlines() if str(path) in line]
    assert listed["resume"] == f"cline --id {case.session}"


def test_the_cline_clis_sub_agent_files_beside_the_session_are_not_listed(home):
    """A sub-agent's <agent>.messages.json shares its root session's folder; `cline --id`
    resumes the root session, whose file carries the folder's name."""
    case = next(c for c in CASES if c.agent == "cline-cli" and c.broken)
    path = place(home, case)
    (path.parent / "agent-1.messages.json").write_bytes(read(case.source))
    (path.parent / "fixture-success-01.json").write_bytes(b"{}")  # its manifest
    _, out = run("list", "--json")
    listed = [orjson.loads(line)["path"] for line in out.splitlines()]
    assert [p for p in listed if str(path.parent) in p] == [str(path)]


def test_a_repair_the_shape_cannot_write_makes_fix_refuse_not_crash(home, monkeypatch, capsys):
    # Qwen's writer refuses a repair inside a chat compression's history (FormatError): fix
    # raised it (a traceback, the CLI's crash) instead of saying why it writes nothing.
    from inspector.formats import FormatError, qwen

    def refuses(messages, original):
        raise FormatError("a repair inside a chat compression's history cannot be written back")

    monkeypatch.setattr(qwen, "serialise", refuses)
    case = next(c for c in CASES if c.agent == "qwen" and c.broken)
    path = place(home, case)
    before = path.read_bytes()
    status, _ = run("fix", str(path))
    assert status == 2
    assert "cannot be written in its shape" in capsys.readouterr().err
    assert path.read_bytes() == before and fix.backups_of(path) == []
