"""OpenClaw, Cursor, Cline / Roo Code and Hermes on this machine: listed, fixed, resumed."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import orjson
import pytest

from inspector import cli
from inspector.local import fix, sessions
from inspector.local.agents import BY_NAME, never_a_session
from tests.local.conftest import CLINE_BROKEN, Home, changed, snapshot
from tests.testdata import CORPUS, read


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def listed(home: Home) -> dict[str, dict]:
    _, out = run("list", "--json")
    return {r["path"]: r for r in map(orjson.loads, out.splitlines())}


def _pi_header_id(path: Path) -> str:
    return str(orjson.loads(path.read_bytes().split(b"\n", 1)[0])["id"])


def test_list_finds_each_agents_sessions_in_its_own_folder_and_nothing_beside_them(
    agent_home: Home,
):
    records = listed(agent_home)
    agents = {BY_NAME[r["agent"]].label: r for r in records.values()}
    labels = {"OpenClaw", "Cursor", "Cline CLI", "Cline (VS Code)", "Roo Code (VS Code)"}
    assert labels | {"Hermes Agent", "Goose", "Kiro CLI"} <= set(agents)
    for path in agent_home.all():
        assert str(path) in records
    # The OpenClaw index, its compaction checkpoint and trace, Cline's UI log: not sessions.
    names = {Path(p).name for p in records}
    assert "sessions.json" not in names and "ui_messages.json" not in names
    assert not any(".checkpoint." in n or n.endswith(".trajectory.jsonl") for n in names)
    by_path = {Path(p): r for p, r in records.items()}
    for path, rule in agent_home.broken.items():
        assert by_path[path]["verdict"] == "needs repair"
        assert any(k.startswith(rule) for k in by_path[path]["counts"])
    for path in agent_home.healthy:
        assert by_path[path]["verdict"] == "clean", by_path[path]


def test_each_agent_has_its_own_resume_command(agent_home: Home):
    records = {Path(p): r for p, r in listed(agent_home).items()}
    claw = next(p for p in agent_home.broken if ".openclaw" in p.parts)
    # OpenClaw resumes by the session id its header names, for the agent whose folder holds it.
    assert records[claw]["resume"].endswith(
        f"openclaw agent --agent main --session-id {_pi_header_id(claw)} --message continue"
    )
    cline = next(p for p in agent_home.broken if ".cline" in p.parts)
    assert records[cline]["resume"] == "cline task open 1769053680585"
    cursor = next(p for p in agent_home.healthy if ".cursor" in p.parts)
    assert records[cursor]["resume"] == f"cursor-agent --resume {cursor.stem}"
    roo = next(p for p in agent_home.healthy if "rooveterinaryinc.roo-cline" in p.parts)
    assert "Roo Code > History > task 1769053680587" in records[roo]["resume"]
    hermes = next(p for p in agent_home.broken if ".hermes" in p.parts)
    assert records[hermes]["resume"] == "hermes --resume 20260214_093012_a1b2c3"
    gateway = next(p for p in agent_home.healthy if ".hermes" in p.parts)
    assert records[gateway]["resume"] == f"hermes --resume {gateway.stem}"
    goose = next(p for p in agent_home.broken if "goose" in p.parts)
    # Goose resumes an old session by its file's name, in the folder it was started in.
    cwd = orjson.loads(goose.read_bytes().split(b"\n", 1)[0])["working_dir"]
    assert records[goose]["resume"] == f"cd {cwd} && goose session --resume --name 20250929_140310"


@pytest.mark.parametrize(
    ("agent", "env", "under"),
    [
        ("openclaw", "OPENCLAW_STATE_DIR", "agents"),
        ("cursor", "CURSOR_CONFIG_DIR", "projects"),
        ("cline", "CLINE_DIR", "data/tasks"),
        ("cline-vscode", "XDG_CONFIG_HOME", "Code/User/globalStorage/saoudrizwan.claude-dev/tasks"),
        ("hermes", "HERMES_HOME", "sessions"),
        ("goose", "GOOSE_PATH_ROOT", "data/sessions"),
        ("kiro", "KIRO_HOME", "sessions/cli"),
    ],
)
def test_the_agents_own_variable_moves_its_folder(agent, env, under, tmp_path: Path):
    if not BY_NAME[agent].env:
        pytest.skip("no variable moves this folder on this platform")  # macOS: VS Code's
    assert BY_NAME[agent].env == env
    assert BY_NAME[agent].root({env: str(tmp_path)}, Path("/nowhere")) == tmp_path / under
    assert str(BY_NAME[agent].root({}, Path("/h"))).startswith("/h/")


def test_fix_repairs_openclaw_cline_and_hermes_in_place_touching_only_the_session_and_backup(
    agent_home: Home,
):
    mine = {".openclaw", ".cline", ".hermes", "goose", ".kiro"}
    for path in [p for p in agent_home.broken if mine & set(p.parts)]:
        before = snapshot(agent_home.root)
        status, out = run("fix", str(path))
        assert status == 0, out
        assert "Resume it with:" in out
        after = snapshot(agent_home.root)
        (backup,) = fix.backups_of(path)
        assert path in changed(before, after) and backup in after
        note = backup.with_name(backup.name + fix.NOTE_SUFFIX)
        assert changed(before, after) - {path} == {backup, note}
        assert sessions.check(path, sessions.agent_for(path, sessions.roots())).verdict == "clean"
        # The repair is in the agent's own shape, and the agent's own reader takes it.
        assert sessions.check(path).parsed.format in ("pi", "cline", "hermes", "goose", "kiro")
        status, out = run("fix", "--undo", str(path))
        assert status == 0, out
        assert {p: n for p, n in snapshot(agent_home.root).items() if p in before} == before


def test_a_session_the_agent_is_writing_is_refused_and_nothing_changes(agent_home: Home, capsys):
    for path in [p for p in agent_home.broken if {".openclaw", ".cline"} & set(p.parts)]:
        os.utime(path, (time.time(), time.time()))  # just written: the agent may be running
        before = snapshot(agent_home.root)
        status, _ = run("fix", str(path))
        assert status == 2 and "may still be running" in capsys.readouterr().err
        assert snapshot(agent_home.root) == before


def test_the_repaired_cline_task_is_the_same_list_with_only_the_answer_added(agent_home: Home):
    cline = next(p for p in agent_home.broken if ".cline" in p.parts)
    old = orjson.loads(cline.read_bytes())
    assert fix.fix(cline).status == "fixed"
    new = orjson.loads(cline.read_bytes())
    assert new[: len(old)] == old  # every message kept as it was
    (added,) = new[len(old) :]  # the answer to the last call, in a user message of its own
    assert added["role"] == "user"
    assert [b["type"] for b in added["content"]] == ["tool_result"]
    assert added["content"][0]["tool_use_id"] == old[-1]["content"][-1]["id"]


def test_goose_honours_xdg_data_home_after_its_own_root(tmp_path: Path):
    goose = BY_NAME["goose"]
    assert goose.root({"XDG_DATA_HOME": str(tmp_path)}, Path("/h")) == tmp_path / "goose/sessions"
    both = {"XDG_DATA_HOME": "/x", "GOOSE_PATH_ROOT": str(tmp_path)}
    assert goose.root(both, Path("/h")) == tmp_path / "data/sessions"
    assert goose.root({}, Path("/h")) == Path("/h/.local/share/goose/sessions")


def test_the_watcher_leaves_out_what_agents_keep_beside_their_sessions():
    checkpoint = "s.checkpoint.9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b.jsonl"
    for name in ("sessions.json", "ui_messages.json", "task_metadata.json",
                 "x.trajectory.jsonl", checkpoint):  # fmt: skip
        assert never_a_session(name), name
    for name in ("api_conversation_history.json", "0c1d2e3f.jsonl", "session-1.json"):
        assert not never_a_session(name), name


# --- Cline / Roo Code in the other editors they run in (VS Code's forks, remote servers) ---

CLINE_TASK = "1769053680585"


@pytest.mark.parametrize(
    ("agent", "extension", "folder", "command"),
    [
        ("cline-vscode", "saoudrizwan.claude-dev", ".config/Cursor", "cursor"),
        ("cline-vscode", "saoudrizwan.claude-dev", ".config/VSCodium", "codium"),
        ("roo-code", "rooveterinaryinc.roo-cline", ".config/Windsurf", "windsurf"),
        ("roo-code", "rooveterinaryinc.roo-cline", ".config/Code - Insiders", "code-insiders"),
        ("cline-vscode", "saoudrizwan.claude-dev", ".vscode-server/data", "code"),
        ("roo-code", "rooveterinaryinc.roo-cline", ".cursor-server/data", "cursor"),
        ("kilo-code", "kilocode.kilo-code", ".config/Code", "code"),
        ("kilo-code", "kilocode.kilo-code", ".config/Cursor", "cursor"),
    ],
)
def test_an_extensions_task_in_another_editor_is_listed_fixed_and_reopened_there(
    agent_home: Home, monkeypatch, agent, extension, folder, command
):
    if BY_NAME[agent].env:  # Linux: VS Code's appData is $XDG_CONFIG_HOME, else ~/.config
        monkeypatch.delenv(BY_NAME[agent].env, raising=False)
    tasks = agent_home.root / folder / "User" / "globalStorage" / extension / "tasks"
    path = tasks / CLINE_TASK / "api_conversation_history.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(read(CORPUS / "cline" / CLINE_BROKEN))
    os.utime(path, (time.time() - 3600,) * 2)
    assert tasks in BY_NAME[agent].roots()
    record = listed(agent_home)[str(path)]
    assert record["agent"] == agent and record["verdict"] == "needs repair"
    assert record["resume"].startswith(f"{command} .  # then ")
    before = snapshot(agent_home.root)
    status, out = run("fix", str(path))
    assert status == 0 and f"{command} .  # then " in out, out
    (backup,) = fix.backups_of(path)
    note = backup.with_name(backup.name + fix.NOTE_SUFFIX)
    assert changed(before, snapshot(agent_home.root)) == {path, backup, note}


def test_an_editor_folder_with_no_tasks_is_not_listed_and_vs_code_stays_first(tmp_path: Path):
    (tmp_path / ".config" / "Cursor" / "User").mkdir(parents=True)  # Cursor, no Cline in it
    cline = BY_NAME["cline-vscode"]
    first = tmp_path / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
    assert cline.roots({}, tmp_path) == [first / "tasks"]
    assert cline.resume_command("t", first / "tasks" / "t" / "api_conversation_history.json") == (
        "code .  # then Cline > History > task t"
    )
