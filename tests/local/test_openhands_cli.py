"""The OpenHands CLI (issue 27): its conversations listed, fixed event file by event file, undone.

A conversation is put where the CLI keeps it (``~/.openhands/conversations/
<id>/``, or under ``$OPENHANDS_CONVERSATIONS_DIR`` / ``$OPENHANDS_PERSISTENCE_DIR``):
``base_state.json`` and ``events/event-<index>-<id>.json``, one event a file
as the SDK's ``EventLog`` writes them (compact JSON), from the corpus'
DERIVED conversations. ``list`` must find it with its verdict and
``openhands --resume <id>``, ``fix`` must repair it in its event files (and
the leaf ``base_state.json`` names) with a backup outside
``conversations/``, ``undo`` must put every byte back, a conversation the CLI
may be writing is refused, and nothing else in the whole tree may change.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from inspector import cli
from inspector.formats.openhands_cli import NOT_NODES
from inspector.local import files, fix, openhands_cli, sessions, stores
from inspector.local.agents import AGENTS, BY_NAME
from tests.local.conftest import changed, snapshot
from tests.testdata import CORPUS, read

AGENT = BY_NAME["openhands-cli"]
FOLDER = CORPUS / "openhands-cli"
CRASHED = FOLDER / "derived__crashed-in-edit.json"
HEALTHY = FOLDER / "derived__healthy.json"
LEGACY = FOLDER / "derived__legacy-unanswered-then-user.json"
TWICE = FOLDER / "derived__observation-twice.json"
CID = "51b45f91d38a498e9f7f718ad9ec1c60"
AGE = 3600.0


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("HOME", str(root))
    for agent in AGENTS:
        for name in (agent.env, *(n for n, _ in agent.more_env), agent.home_env):
            if name:
                monkeypatch.delenv(name, raising=False)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.json").write_bytes(b"not yours")
    return root


def place(
    conversations: Path, source: Path, cid: str = CID, *, age: float = AGE, workspace: str = ""
) -> Path:
    """The conversation's events as the SDK's EventLog writes them, and its base_state.json."""
    stream: list[dict[str, Any]] = orjson.loads(read(source))
    events = conversations / cid / "events"
    events.mkdir(parents=True)
    for index, event in enumerate(stream):
        (events / f"event-{index:05d}-{event['id']}.json").write_bytes(orjson.dumps(event))
    state: dict[str, Any] = {"id": cid, "execution_status": "idle"}
    if workspace:
        state["workspace"] = {"working_dir": workspace, "kind": "LocalWorkspace"}
    nodes = [e for e in stream if e["kind"] not in NOT_NODES]
    if any("parent_id" in e for e in stream):
        state["leaf_event_id"] = nodes[-1]["id"]
    state["stats"] = {"usage_to_metrics": {}}
    (conversations / cid / "base_state.json").write_bytes(orjson.dumps(state))
    stamp = time.time() - age
    for file in (conversations / cid).rglob("*.json"):
        os.utime(file, (stamp, stamp))
    return events


def listed(out: str) -> dict[str, dict[str, Any]]:
    return {orjson.loads(line)["path"]: orjson.loads(line) for line in out.splitlines()}


def test_list_finds_conversations_with_their_verdict_and_the_clis_resume_command(home):
    conversations = home / ".openhands" / "conversations"
    broken = place(conversations, CRASHED)
    healthy = place(conversations, HEALTHY, "0123456789abcdef0123456789abcdef")
    status, out = run("list", "--json")
    records = listed(out)
    assert records[str(broken)]["verdict"] == "needs repair"
    assert records[str(healthy)]["verdict"] == "clean"
    assert records[str(broken)]["resume"] == f"openhands --resume {CID}"
    assert records[str(broken)]["agent"] == "openhands-cli"
    assert status == 1


def test_the_resume_command_runs_in_the_conversations_workspace(home):
    """The CLI makes the folder it runs in the resumed conversation's workspace."""
    path = place(home / ".openhands" / "conversations", CRASHED, workspace="/home/dev/my project")
    _, out = run("list", "--json")
    resume = f"cd '/home/dev/my project' && openhands --resume {CID}"
    assert listed(out)[str(path)]["resume"] == resume
    status, out = run("fix", str(path))
    assert status == 0 and resume in out, out


@pytest.mark.parametrize("variable", ["OPENHANDS_CONVERSATIONS_DIR", "OPENHANDS_PERSISTENCE_DIR"])
def test_the_clis_variables_move_the_folder_as_locations_py_reads_them(
    variable, home, tmp_path, monkeypatch
):
    moved = tmp_path / "elsewhere"
    monkeypatch.setenv(variable, str(moved))
    where = moved if variable == "OPENHANDS_CONVERSATIONS_DIR" else moved / "conversations"
    path = place(where, CRASHED)
    place(home / ".openhands" / "conversations", CRASHED, "not-read-now")
    _, out = run("list", "--json")
    assert str(path) in listed(out)
    assert not any("not-read-now" in p for p in listed(out))


def test_the_conversations_variable_wins_over_the_persistence_one(home, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENHANDS_CONVERSATIONS_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("OPENHANDS_PERSISTENCE_DIR", str(tmp_path / "b"))
    assert AGENT.root() == tmp_path / "a"


def test_a_conversation_is_its_own_store_not_an_openhands_v0_session(home):
    path = place(home / ".openhands" / "conversations", CRASHED)
    assert stores.for_path(path) is openhands_cli.STORE
    assert sessions.check(path, AGENT).verdict == "needs repair"


def test_fix_writes_the_missing_result_moves_the_leaf_and_undo_puts_every_byte_back(home):
    path = place(home / ".openhands" / "conversations", CRASHED)
    tree = home.parent
    before = snapshot(tree)
    status, out = run("fix", str(path))
    assert status == 0, out
    assert f"openhands --resume {CID}" in out
    after = snapshot(tree)
    backups = home / ".openhands" / files.BACKUPS
    (backup,) = fix.backups_of(path)
    assert backup.is_relative_to(backups)
    made = sorted(path.glob("event-00009-*.json"))
    state = path.parent / "base_state.json"
    assert {p for p in changed(before, after) if not p.is_relative_to(backups)} == {
        *made,
        state,
    }
    (new,) = made
    event = orjson.loads(new.read_bytes())
    assert new.name == f"event-00009-{event['id']}.json"
    assert event["kind"] == "AgentErrorEvent" and event["tool_call_id"] == "toolu_01E"
    assert orjson.loads(state.read_bytes())["leaf_event_id"] == event["id"]
    # Only the leaf changed in base_state.json, in place.
    old_state = before[state][1]
    assert isinstance(old_state, bytes)
    assert state.read_bytes() == old_state.replace(
        orjson.loads(old_state)["leaf_event_id"].encode(), event["id"].encode()
    )
    assert sessions.check(path, AGENT).verdict == "clean"
    status, out = run("fix", "--undo", str(path))
    assert status == 0 and "restored from" in out, out
    restored = snapshot(tree)
    assert {p for p in changed(before, restored) if restored.get(p) != ("dir",)} == set()


def test_fix_takes_the_conversation_by_its_id_or_its_own_folder(home):
    path = place(home / ".openhands" / "conversations", CRASHED)
    for named in (CID, str(path.parent), f"{path.parent}/"):
        status, out = run("fix", "--dry-run", named)
        assert status == 1 and "Dry run: nothing was written." in out, (named, out)
        assert str(path / "event-00009-") in out


def test_a_result_inserted_before_later_events_renames_them_to_their_next_index(home):
    path = place(home / ".openhands" / "conversations", LEGACY)
    names = sorted(p.name for p in path.iterdir())
    outcome = fix.fix(path)
    assert outcome.status == "fixed", outcome.reason
    now = sorted(p.name for p in path.iterdir())
    assert len(now) == len(names) + 1
    assert now[:9] == names[:9]  # the events before the unanswered action's result
    last = names[9].split("-", 2)[2]  # the user's message, one index later, same id
    assert now[10] == f"event-00010-{last}" and not (path / names[9]).exists()
    assert (path / now[10]).read_bytes() == read_event(names[9], LEGACY)
    assert sessions.check(path, AGENT).verdict == "clean"
    assert fix.undo(path).status == "restored"
    assert sorted(p.name for p in path.iterdir()) == names


def read_event(name: str, source: Path) -> bytes:
    index = int(name.split("-")[1])
    return orjson.dumps(orjson.loads(read(source))[index])


def test_a_second_observation_is_rewritten_in_its_own_file_as_the_users_note(home):
    path = place(home / ".openhands" / "conversations", TWICE)
    before = snapshot(home.parent)
    outcome = fix.fix(path)
    assert outcome.status == "fixed", outcome.reason
    backups = home / ".openhands" / files.BACKUPS
    (one,) = [p for p in changed(before, snapshot(home.parent)) if not p.is_relative_to(backups)]
    assert one.name.startswith("event-00010-")
    assert orjson.loads(one.read_bytes())["kind"] == "MessageEvent"


def test_fix_refuses_a_conversation_the_cli_may_still_be_writing(home):
    path = place(home / ".openhands" / "conversations", CRASHED)
    os.utime(path.parent / "base_state.json")  # its state written just now
    before = snapshot(home.parent)
    outcome = fix.fix(path)
    assert outcome.status == "refused" and "may still be running" in outcome.reason
    assert snapshot(home.parent) == before


def test_fix_leaves_a_healthy_conversation_byte_for_byte(home):
    path = place(home / ".openhands" / "conversations", HEALTHY)
    before = snapshot(home.parent)
    status, out = run("fix", str(path))
    assert status == 0 and "clean, nothing to repair" in out
    assert snapshot(home.parent) == before


def test_undo_refuses_when_the_cli_wrote_after_the_fix(home):
    path = place(home / ".openhands" / "conversations", CRASHED)
    assert fix.fix(path).status == "fixed"
    (new,) = path.glob("event-00009-*.json")
    new.write_bytes(new.read_bytes().replace(b"interrupted", b"INTERRUPTED"))
    undone = fix.undo(path)
    assert undone.status == "refused" and "--force" in undone.reason


@pytest.mark.parametrize(
    ("craft", "said"),
    [
        ("gap", "after a gap"),
        ("twice", "twice"),
        ("leaf", "branched"),
        ("not-json", "not JSON"),
    ],
)
def test_a_conversation_the_sdk_would_misread_is_refused_saying_why(home, craft, said):
    path = place(home / ".openhands" / "conversations", CRASHED)
    files = sorted(path.iterdir())
    if craft == "gap":
        files[4].unlink()
    elif craft == "twice":
        files[4].rename(path / files[4].name.replace("00004", "00003"))
    elif craft == "leaf":
        state = path.parent / "base_state.json"
        value = orjson.loads(state.read_bytes())
        value["leaf_event_id"] = orjson.loads(files[3].read_bytes())["id"]
        state.write_bytes(orjson.dumps(value))
    else:
        files[2].write_bytes(b"{")
    for file in path.parent.rglob("*.json"):
        os.utime(file, (time.time() - AGE,) * 2)
    before = snapshot(home.parent)
    outcome = fix.fix(path)
    assert outcome.status == "refused" and said in outcome.reason, outcome.reason
    assert snapshot(home.parent) == before
