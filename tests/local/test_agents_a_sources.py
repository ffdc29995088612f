"""Kiro CLI's and OpenClaw's folders, lock and resume command as their own sources have them.

OpenClaw: ``src/config/paths.ts`` (``resolveStateDir``: ``$OPENCLAW_STATE_DIR``, then the
older ``$CLAWDBOT_STATE_DIR``, else ``.openclaw`` in the home folder or the first of its older
names found there) and ``src/infra/home-dir.ts`` (``$OPENCLAW_HOME`` stands for the home).
Kiro CLI (closed source): its docs' ``kiro-cli chat --resume-id <id>``, the ``<id>.lock`` a
running kiro-cli keeps beside the session, ``$KIRO_HOME`` for ``~/.kiro``.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from inspector import cli
from inspector.local import fix
from inspector.local.agents import BY_NAME
from tests.local.conftest import Home, snapshot
from tests.testdata import CORPUS, read

OPENCLAW = BY_NAME["openclaw"]
KIRO = BY_NAME["kiro"]
PI_CUT = "openclaw-openclaw__8555a0a4-0b79-459d-939c-e17cdbbf4fe2.cut-after-call.jsonl"


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def kiro_broken(home: Home) -> Path:
    return next(p for p in home.broken if ".kiro" in p.parts)


def test_openclaw_reads_its_older_state_variable_after_its_own(tmp_path: Path):
    home = Path("/h")
    assert OPENCLAW.root({"CLAWDBOT_STATE_DIR": str(tmp_path)}, home) == tmp_path / "agents"
    both = {"OPENCLAW_STATE_DIR": str(tmp_path / "new"), "CLAWDBOT_STATE_DIR": str(tmp_path)}
    assert OPENCLAW.root(both, home) == tmp_path / "new" / "agents"
    # A blank value is no value, as OpenClaw trims it.
    assert OPENCLAW.root({"OPENCLAW_STATE_DIR": "  "}, home) == home / ".openclaw" / "agents"


def test_openclaw_home_moves_the_home_folder_its_state_folder_is_in(tmp_path: Path):
    assert OPENCLAW.root({"OPENCLAW_HOME": str(tmp_path)}, Path("/h")) == (
        tmp_path / ".openclaw" / "agents"
    )
    moved = {"OPENCLAW_HOME": str(tmp_path), "OPENCLAW_STATE_DIR": str(tmp_path / "state")}
    assert OPENCLAW.root(moved, Path("/h")) == tmp_path / "state" / "agents"


def test_openclaw_uses_an_older_state_folder_only_where_the_new_one_is_not_there(tmp_path):
    assert OPENCLAW.root({}, tmp_path) == tmp_path / ".openclaw" / "agents"  # neither there
    (tmp_path / ".moltbot").mkdir()
    (tmp_path / ".clawdbot").mkdir()
    assert OPENCLAW.root({}, tmp_path) == tmp_path / ".clawdbot" / "agents"  # its first name
    (tmp_path / ".openclaw").mkdir()
    assert OPENCLAW.root({}, tmp_path) == tmp_path / ".openclaw" / "agents"


def test_list_finds_openclaw_sessions_under_openclaw_home(agent_home: Home, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    session = elsewhere / ".openclaw" / "agents" / "main" / "sessions" / "8555a0a4.jsonl"
    session.parent.mkdir(parents=True)
    session.write_bytes(read(CORPUS / "pi" / PI_CUT))
    monkeypatch.setenv("OPENCLAW_HOME", str(elsewhere))
    _, out = run("list", "--json")
    records = {r["path"]: r for r in map(orjson.loads, out.splitlines())}
    assert records[str(session)]["agent"] == "openclaw"
    assert records[str(session)]["verdict"] == "needs repair"
    # The default folder is no longer OpenClaw's: its sessions there are not listed as its.
    default = [p for p in agent_home.all() if ".openclaw" in p.parts]
    assert default and all(records.get(str(p), {}).get("agent") != "openclaw" for p in default)


def test_fix_prints_kiros_own_resume_command_by_id(agent_home: Home):
    path = kiro_broken(agent_home)
    status, out = run("fix", str(path))
    assert status == 0, out
    assert f"kiro-cli chat --resume-id {path.stem}" in out


def _dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, check=True, text=True)  # fmt: skip
    return int(child.stdout)


@pytest.mark.parametrize(
    ("lock", "fixed"),
    [
        (lambda: {"pid": _live_pid(), "started_at": "2026-12-03T13:00:00Z"}, False),
        (lambda: "not json", False),
        (lambda: {"started_at": "2026-12-03T13:00:00Z"}, False),
        (lambda: {"pid": _dead_pid(), "started_at": "2026-12-03T13:00:00Z"}, True),
    ],
    ids=["live", "unreadable", "no-pid", "stale"],
)
def test_a_kiro_session_whose_lock_names_a_running_kiro_is_refused(agent_home: Home, lock, fixed):
    path = kiro_broken(agent_home)
    value = lock()
    lock_file = path.with_name(f"{path.stem}.lock")
    lock_file.write_bytes(value.encode() if isinstance(value, str) else orjson.dumps(value))
    before = snapshot(agent_home.root)
    status, out = run("fix", str(path))
    if fixed:  # a lock left by a kiro-cli that no longer runs holds nothing
        assert status == 0 and "Resume it with:" in out, out
        return
    assert status == 2
    assert snapshot(agent_home.root) == before
    assert run("fix", "--dry-run", str(path))[0] == 1  # a dry run reads past the lock


def _live_pid() -> int:
    import os

    return os.getppid()  # the process that started this test run: running, and not this one


def test_the_lock_refusal_says_which_process_holds_the_session(agent_home: Home, capsys):
    path = kiro_broken(agent_home)
    path.with_name(f"{path.stem}.lock").write_bytes(orjson.dumps({"pid": _live_pid()}))
    assert run("fix", str(path))[0] == 2
    err = capsys.readouterr().err
    assert f"process {_live_pid()}" in err and "Kiro CLI" in err and "nothing was changed" in err


# --- Hermes Agent's named profiles (hermes_constants.named_profile_home, `hermes -p`) ---

HERMES = BY_NAME["hermes"]
HERMES_LOG = CORPUS / "hermes" / "derived__session_20260214_093012_a1b2c3.cut-after-calls.json"
HERMES_SID = "20260214_093012_a1b2c3"


def test_hermes_lists_each_named_profile_as_a_home_of_its_own(tmp_path: Path):
    (tmp_path / ".hermes" / "profiles" / "work").mkdir(parents=True)
    (tmp_path / ".hermes" / "profiles" / ".deleted").mkdir()  # Hermes's tombstones: none
    assert HERMES.roots({}, tmp_path) == [
        tmp_path / ".hermes" / "sessions",
        tmp_path / ".hermes" / "profiles" / "work" / "sessions",
    ]
    # HERMES_HOME names one home (a profile, as `hermes -p` sets it): only that one.
    moved = {"HERMES_HOME": str(tmp_path / "elsewhere")}
    assert HERMES.roots(moved, tmp_path) == [tmp_path / "elsewhere" / "sessions"]
    assert BY_NAME["kiro"].roots({}, tmp_path) == [BY_NAME["kiro"].root({}, tmp_path)]


def test_hermes_data_dir_suffix_is_appended_to_its_default_home_as_it_is(tmp_path: Path):
    suffixed = {"HERMES_DATA_DIR_SUFFIX": "-dev"}
    assert HERMES.root(suffixed, tmp_path) == tmp_path / ".hermes-dev" / "sessions"
    assert (
        HERMES.root({"HERMES_DATA_DIR_SUFFIX": ""}, tmp_path) == tmp_path / ".hermes" / "sessions"
    )
    # The suffixed home has its profiles as the default one has.
    (tmp_path / ".hermes-dev" / "profiles" / "work").mkdir(parents=True)
    assert HERMES.roots(suffixed, tmp_path) == [
        tmp_path / ".hermes-dev" / "sessions",
        tmp_path / ".hermes-dev" / "profiles" / "work" / "sessions",
    ]
    # $HERMES_HOME names the home whatever the suffix.
    both = {"HERMES_HOME": str(tmp_path / "h"), "HERMES_DATA_DIR_SUFFIX": "-dev"}
    assert HERMES.root(both, tmp_path) == tmp_path / "h" / "sessions"


def test_list_finds_hermes_sessions_in_the_suffixed_home(agent_home: Home, monkeypatch):
    import os

    monkeypatch.setenv("HERMES_DATA_DIR_SUFFIX", "-dev")
    folder = agent_home.root / ".hermes-dev" / "sessions"
    folder.mkdir(parents=True)
    path = folder / f"session_{HERMES_SID}.json"
    path.write_bytes(read(HERMES_LOG))
    os.utime(path, (path.stat().st_mtime - 3600,) * 2)
    record = record_of(path)
    assert record["agent"] == "hermes" and record["verdict"] == "needs repair"
    assert record["resume"] == f"hermes --resume {HERMES_SID}"
    # The unsuffixed home is not Hermes's now: its sessions there are not listed as its.
    default = [p for p in agent_home.all() if ".hermes" in p.parts]
    _, out = run("list", "--json")
    records = {r["path"]: r for r in map(orjson.loads, out.splitlines())}
    assert default and all(records.get(str(p), {}).get("agent") != "hermes" for p in default)


def test_a_profiles_session_is_listed_fixed_and_resumed_with_its_profile(agent_home: Home):
    folder = agent_home.root / ".hermes" / "profiles" / "work" / "sessions"
    folder.mkdir(parents=True)
    path = folder / f"session_{HERMES_SID}.json"
    path.write_bytes(read(HERMES_LOG))
    stamp = path.stat().st_mtime - 3600
    import os

    os.utime(path, (stamp, stamp))
    _, out = run("list", "--json")
    record = {r["path"]: r for r in map(orjson.loads, out.splitlines())}[str(path)]
    assert record["agent"] == "hermes" and record["verdict"] == "needs repair"
    assert record["resume"] == f"hermes -p work --resume {HERMES_SID}"
    status, out = run("fix", str(path))
    assert status == 0, out
    assert f"hermes -p work --resume {HERMES_SID}" in out
    # The default home's session keeps the plain command.
    default = next(p for p in agent_home.broken if ".hermes" in p.parts and p != path)
    assert f"hermes --resume {HERMES_SID}" == record_of(default)["resume"]


def record_of(path: Path) -> dict:
    _, out = run("list", "--json")
    return {r["path"]: r for r in map(orjson.loads, out.splitlines())}[str(path)]


def test_a_profiles_state_db_sits_in_that_profiles_home(tmp_path: Path):
    db_session = tmp_path / ".hermes" / "profiles" / "work" / "state.db" / HERMES_SID
    assert HERMES.profile_of(db_session) == "work"
    assert HERMES.resume_command(HERMES_SID, db_session) == f"hermes -p work --resume {HERMES_SID}"
    plain = tmp_path / ".hermes" / "state.db" / HERMES_SID
    assert HERMES.profile_of(plain) == ""
    assert HERMES.resume_command(HERMES_SID, plain) == f"hermes --resume {HERMES_SID}"


def test_list_reads_a_profiles_state_db_and_fix_repairs_its_rows(agent_home: Home):
    from tests.local.test_hermes_db import make_db

    work = agent_home.root / ".hermes" / "profiles" / "work"
    work.mkdir(parents=True)
    make_db(work / "state.db", HERMES_LOG)
    session = work / "state.db" / HERMES_SID
    record = record_of(session)
    assert record["agent"] == "hermes" and record["verdict"] == "needs repair"
    assert record["resume"] == f"hermes -p work --resume {HERMES_SID}"
    status, out = run("fix", str(session))
    assert status == 0, out
    assert record_of(session)["verdict"] == "clean"


# --- Factory Droid: its home from $FACTORY_HOME_OVERRIDE, sessions by project or kept flat ---

DROID = BY_NAME["droid"]
DROID_CUT = CORPUS / "droid" / "derived__zirv-crashed-in-tool.jsonl"


def test_factory_home_override_moves_the_home_droids_folder_is_in(tmp_path: Path):
    moved = {"FACTORY_HOME_OVERRIDE": str(tmp_path)}
    assert DROID.root(moved, Path("/h")) == tmp_path / ".factory" / "sessions"
    assert DROID.root({}, Path("/h")) == Path("/h/.factory/sessions")


def test_list_finds_droid_sessions_by_project_and_kept_flat_and_fix_resumes_them(
    agent_home: Home, tmp_path: Path, monkeypatch
):
    import os

    monkeypatch.setenv("FACTORY_HOME_OVERRIDE", str(tmp_path / "other"))
    sessions_dir = tmp_path / "other" / ".factory" / "sessions"
    by_project = sessions_dir / "-work-app" / "5d1c0b7e-6a2f-4c8e-9b3d-1f0e2a4c6b8d.jsonl"
    flat = sessions_dir / "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d.jsonl"
    for path in (by_project, flat):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(read(DROID_CUT))
        os.utime(path, (path.stat().st_mtime - 3600,) * 2)
    # Droid resumes by the id its session_start line names, in the folder the session ran in.
    sid = orjson.loads(read(DROID_CUT).split(b"\n", 1)[0])["id"]
    for path in (by_project, flat):
        record = record_of(path)
        assert record["agent"] == "droid" and record["verdict"] == "needs repair"
        assert record["resume"].endswith(f" && droid --resume {sid}")
    status, out = run("fix", str(flat))
    assert status == 0 and f"droid --resume {sid}" in out, out


@pytest.mark.parametrize("name", ["openclaw", "copilot", "cursor", "kiro", "droid", "hermes"])
def test_the_readme_names_each_agents_variables_and_resume_command(name):
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    agent = BY_NAME[name]
    for template in (agent.resume, agent.profile_resume):
        if template:
            assert template.split("{", 1)[0].strip() in readme, template
    variables = [agent.env, agent.home_env, agent.home_suffix_env, *(e for e, _ in agent.more_env)]
    for variable in filter(None, variables):
        assert f"${variable}" in readme, variable


def test_the_facts_kiro_and_droid_keep_beside_a_session_are_not_watched(tmp_path: Path):
    from inspector.watch.watcher import is_watched

    kiro = tmp_path / "cli"
    kiro.mkdir()
    (kiro / "3f2a.jsonl").write_bytes(b"{}\n")
    (kiro / "3f2a.json").write_bytes(b'{"session_id": "3f2a", "cwd": "/w"}')
    (kiro / "lonely.json").write_bytes(b"[]")  # no session beside it: maybe one of its own
    (kiro / "7b1c.settings.json").write_bytes(b"{}")
    (kiro / "7b1c.jsonl").write_bytes(b"{}\n")
    watched = {p.name for p in kiro.iterdir() if is_watched(p, tmp_path)}
    assert watched == {"3f2a.jsonl", "7b1c.jsonl", "lonely.json"}


def test_an_openclaw_session_whose_write_lock_names_a_running_openclaw_is_refused(
    agent_home: Home,
):
    path = next(p for p in agent_home.broken if ".openclaw" in p.parts)
    lock = path.with_name(path.name + ".lock")  # session-write-lock.ts: `${sessionFile}.lock`
    lock.write_bytes(orjson.dumps({"pid": _live_pid(), "createdAt": "2026-12-03T13:00:00Z"}))
    before = snapshot(agent_home.root)
    assert run("fix", str(path))[0] == 2
    assert snapshot(agent_home.root) == before
    lock.write_bytes(orjson.dumps({"pid": _dead_pid(), "createdAt": "2026-12-03T13:00:00Z"}))
    status, out = run("fix", str(path))  # a lock its process left behind holds nothing
    assert status == 0, out


def test_a_state_db_sessions_timeline_shows_each_rows_time_and_a_replys_tokens(tmp_path: Path):
    import sqlite3

    from inspector.diagnosis.rows import message_facts
    from inspector.local import sessions
    from tests.local.test_hermes_db import make_db

    db = tmp_path / ".hermes" / "state.db"
    db.parent.mkdir(parents=True)
    make_db(db, HERMES_LOG)
    connection = sqlite3.connect(db)
    connection.execute("UPDATE messages SET token_count = 40 + id WHERE role = 'assistant'")
    connection.commit()
    connection.close()
    checked = sessions.check(db / HERMES_SID)
    assert checked.parsed is not None and checked.parsed.format == "hermes"
    facts = message_facts(checked.parsed)
    roles = [m["role"] for m in checked.parsed.messages]
    # make_db stamps the n-th row 1771061412.48 + n seconds (2026-02-14T09:30:12Z on).
    assert facts[0]["at"].startswith("2026-02-14T09:30:12")
    replies = [f for f, role in zip(facts, roles, strict=True) if role == "assistant"]
    assert replies and all(f["tokens_out"] is not None and f["tokens_out"] > 40 for f in replies)
    others = [f for f, role in zip(facts, roles, strict=True) if role != "assistant"]
    assert all(f["tokens_out"] is None for f in others)


# --- OpenClaw's named profiles (src/cli/profile.ts: `--profile <name>` -> ~/.openclaw-<name>) ---


def test_openclaw_lists_each_profiles_state_folder_beside_the_default_one(tmp_path: Path):
    odd = (".openclaw-default", ".openclaw-", ".openclaw-.x", ".openclaw-bad name", ".openclawwork")
    for name in (".openclaw-work", ".openclaw-dev", *odd):
        (tmp_path / name).mkdir()
    (tmp_path / ".openclaw-file").write_bytes(b"")  # a file, not a state folder
    assert OPENCLAW.roots({}, tmp_path) == [
        tmp_path / ".openclaw" / "agents",
        tmp_path / ".openclaw-dev" / "agents",
        tmp_path / ".openclaw-work" / "agents",
    ]
    # $OPENCLAW_HOME moves the home the profiles are in too.
    moved = tmp_path / "moved"
    (moved / ".openclaw-team").mkdir(parents=True)
    assert OPENCLAW.roots({"OPENCLAW_HOME": str(moved)}, tmp_path) == [
        moved / ".openclaw" / "agents",
        moved / ".openclaw-team" / "agents",
    ]
    # A state folder named by its variable is the only one OpenClaw reads, whatever the profile.
    named = {"OPENCLAW_STATE_DIR": str(tmp_path / "state")}
    assert OPENCLAW.roots(named, tmp_path) == [tmp_path / "state" / "agents"]


def test_openclaw_profile_of_a_session_is_its_state_folders_suffix(tmp_path: Path):
    work = tmp_path / ".openclaw-work" / "agents" / "main" / "sessions" / "a.jsonl"
    assert OPENCLAW.profile_of(work) == "work"
    assert OPENCLAW.resume_command("a", work) == (
        "openclaw --profile work agent --agent main --session-id a --message continue"
    )
    plain = tmp_path / ".openclaw" / "agents" / "main" / "sessions" / "a.jsonl"
    assert OPENCLAW.profile_of(plain) == ""
    assert OPENCLAW.resume_command("a", plain).startswith("openclaw agent --agent main ")
    # An agent folder named like a profile is not one: only the state folder counts.
    odd = tmp_path / ".openclaw" / "agents" / ".openclaw-x" / "sessions" / "a.jsonl"
    assert OPENCLAW.profile_of(odd) == ""
    assert OPENCLAW.profile_of(Path("a.jsonl")) == ""


def test_a_profiles_openclaw_session_is_listed_fixed_and_resumed_with_its_profile(
    agent_home: Home,
):
    import os

    sessions_dir = agent_home.root / ".openclaw-work" / "agents" / "ops" / "sessions"
    sessions_dir.mkdir(parents=True)
    path = sessions_dir / "8555a0a4.jsonl"
    path.write_bytes(read(CORPUS / "pi" / PI_CUT))
    os.utime(path, (path.stat().st_mtime - 3600,) * 2)
    record = record_of(path)
    assert record["agent"] == "openclaw" and record["verdict"] == "needs repair"
    sid = orjson.loads(read(CORPUS / "pi" / PI_CUT).split(b"\n", 1)[0])["id"]  # its header's id
    resume = f"openclaw --profile work agent --agent ops --session-id {sid} --message continue"
    assert record["resume"].endswith(f" && {resume}")  # in the folder the session ran in
    before = snapshot(agent_home.root)
    status, out = run("fix", str(path))
    assert status == 0 and resume in out, out
    # The fix wrote the session, its backup and its note, nothing else in the tree.
    after = snapshot(agent_home.root)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert {p.parent for p in changed} == {sessions_dir}, sorted(map(str, changed))
    assert {p.name.split(".ti-backup-")[0] for p in changed} == {path.name}
    assert record_of(path)["verdict"] == "clean"


def test_a_locked_kiro_session_in_no_agents_folder_is_refused_too(tmp_path: Path):
    # fix told no agent (a file in no agent's folder, or Repair in place of a folder watched
    # under another path) still heeds the lock of every agent that writes the file's shape.
    path = tmp_path / "copied" / "6110.jsonl"
    path.parent.mkdir()
    path.write_bytes(read(CORPUS / "kiro" / "derived__kiro-cli-session.issue-6110.jsonl"))
    path.with_name("6110.lock").write_bytes(orjson.dumps({"pid": _live_pid()}))
    stamp = time.time() - 3600
    os.utime(path, (stamp, stamp))
    before = snapshot(tmp_path)
    outcome = fix.fix(path, None, quiet_seconds=0)
    assert outcome.status == "refused" and "6110.lock" in outcome.reason, outcome.reason
    assert snapshot(tmp_path) == before
    path.with_name("6110.lock").unlink()  # the lock gone, the same file is fixed
    assert fix.fix(path, None, quiet_seconds=0).status == "fixed"
