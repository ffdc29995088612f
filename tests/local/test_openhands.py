"""OpenHands (agents-c, issue 27): its file store's sessions listed, fixed event by event, undone.

A session is put where OpenHands keeps it (``~/.openhands/sessions/<sid>/
events/<id>.json``, or under ``$FILE_STORE_PATH``), one event a file as its
``EventStore`` writes them, from the corpus' trajectories. ``list`` must find
it with its verdict and resume command, ``fix`` must repair it in its event
files with a backup set outside ``sessions/``, ``undo`` must put every byte
back, a session OpenHands may be writing is refused, and nothing else in the
whole tree may change; crafted names, ids and links are refused naming them.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import cli
from inspector.local import files, fix, sessions
from inspector.local.agents import AGENTS, BY_NAME
from inspector.local.confine import Refused, safe_name
from tests.local.conftest import changed, snapshot
from tests.testdata import CORPUS, read

AGENT = BY_NAME["openhands"]
CRASHED = CORPUS / "openhands" / "derived__basic.crashed-in-edit.json"
HEALTHY = CORPUS / "openhands" / "All-Hands-AI-OpenHands__tests_runtime_trajs_basic_gui_mode.json"
SID = "8c1f0e7a2b3d4e5f9a0b1c2d3e4f5a6b"
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
        monkeypatch.delenv(agent.env, raising=False)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.json").write_bytes(b"not yours")
    return root


def place(store: Path, source: Path, sid: str = SID, *, cache: bool = False) -> Path:
    """The trajectory's events as OpenHands' EventStore writes them: one file each."""
    events = store / "sessions" / sid / "events"
    events.mkdir(parents=True)
    stream = orjson.loads(read(source))
    for event in stream:
        (events / f"{event['id']}.json").write_bytes(orjson.dumps(event))
    if cache:  # a page of 25 events as its cache holds them
        page = store / "sessions" / sid / "event_cache" / "0-25.json"
        page.parent.mkdir()
        page.write_bytes(orjson.dumps([e for e in stream if e["id"] < 25]))
    stamp = time.time() - AGE
    for file in (store / "sessions" / sid).rglob("*.json"):
        os.utime(file, (stamp, stamp))
    return events


def test_list_finds_a_session_in_openhands_store_with_its_verdict_and_resume_command(home):
    broken = place(home / ".openhands", CRASHED)
    healthy = place(home / ".openhands", HEALTHY, "healthy-one")
    status, out = run("list", "--json")
    records = {orjson.loads(line)["path"]: orjson.loads(line) for line in out.splitlines()}
    assert records[str(broken)]["verdict"] == "needs repair"
    assert records[str(healthy)]["verdict"] == "clean"
    assert records[str(broken)]["resume"] == f"openhands --conversation {SID}"
    assert status == 1


def test_file_store_path_moves_the_store_as_openhands_reads_it(home, tmp_path, monkeypatch):
    moved = tmp_path / "elsewhere"
    monkeypatch.setenv("FILE_STORE_PATH", str(moved))
    path = place(moved, CRASHED)
    place(home / ".openhands", CRASHED, "not-read-now")
    _, out = run("list", "--json")
    listed = {orjson.loads(line)["path"] for line in out.splitlines()}
    assert str(path) in listed
    assert not any("not-read-now" in p for p in listed)


def test_fix_appends_the_missing_observation_prints_the_resume_command_and_undo_puts_it_back(home):
    path = place(home / ".openhands", CRASHED, cache=True)
    tree = home.parent
    before = snapshot(tree)
    status, out = run("fix", str(path))
    assert status == 0, out
    assert f"openhands --conversation {SID}" in out
    after = snapshot(tree)
    made = path / "4.json"
    page = path.parent / "event_cache" / "0-25.json"
    (backup,) = fix.backups_of(path)
    assert backup.parent.parent == home / ".openhands" / files.BACKUPS
    changes = changed(before, after)
    # The new event's file, the cache page that held a stale copy, and the backup set.
    kept = home / ".openhands" / files.BACKUPS  # the backup set and fix's temporary folder
    assert {p for p in changes if not p.is_relative_to(kept)} == {made, page}
    event = orjson.loads(made.read_bytes())
    assert event["observation"] == "error" and event["cause"] == 3
    assert event["tool_call_metadata"]["tool_call_id"] == "toolu_017nBp7UfiGqyrA7j77HgtFP"
    checked = sessions.check(path, AGENT)
    assert checked.verdict == "clean", checked.error
    status, out = run("fix", "--undo", str(path))
    assert status == 0 and "restored from" in out, out
    restored = snapshot(tree)
    assert {p for p in changed(before, restored) if restored.get(p) != ("dir",)} == set()


def test_fix_refuses_a_session_openhands_may_still_be_writing(home):
    path = place(home / ".openhands", CRASHED)
    os.utime(path / "3.json")  # its last event written just now
    before = snapshot(home.parent)
    outcome = fix.fix(path)
    assert outcome.status == "refused" and "may still be running" in outcome.reason
    assert snapshot(home.parent) == before


def test_fix_leaves_a_healthy_session_byte_for_byte(home):
    path = place(home / ".openhands", HEALTHY)
    before = snapshot(home.parent)
    status, out = run("fix", str(path))
    assert status == 0 and "clean, nothing to repair" in out
    assert snapshot(home.parent) == before


def test_undo_refuses_when_openhands_wrote_after_the_fix(home):
    path = place(home / ".openhands", CRASHED)
    assert fix.fix(path).status == "fixed"
    (path / "4.json").write_bytes(b'{"id": 4}')
    undone = fix.undo(path)
    assert undone.status == "refused" and "--force" in undone.reason


# --- confinement: crafted stores, whole-tree snapshots ---------------------------------

HOSTILE = st.one_of(
    st.sampled_from(["../../outside/x", "..", "a/b", "/etc/passwd", " x", "x\u0000y", "-rf"]),
    st.text(alphabet="./\\ab_-~ \u00e9", min_size=1, max_size=10),
)
CRAFTS = ("", "event-link", "events-link", "id-mismatch", "page-link", "undo-note", "sid")


def crafted(tree: Path, craft: str, name: str) -> tuple[Path, str]:
    """The broken session crafted as ``craft`` says; the file its refusal must name ('' none)."""
    store = tree / "home" / ".openhands"
    outside = tree / "outside"
    if craft == "sid":  # the session's folder named as an attacker names it (one folder name)
        if "/" in name or "\0" in name or name in (".", ".."):
            return place(store, CRASHED, "plain"), ""
        path = place(store, CRASHED, name)
        try:
            safe_name(name)
        except Refused:
            return path, repr(name)
        return path, ""
    path = place(store, CRASHED, cache=craft == "page-link")
    if craft == "event-link":
        target = outside / "3.json"
        (path / "3.json").rename(target)
        (path / "3.json").symlink_to(target)
        return path, str(path / "3.json")
    if craft == "events-link":
        real = outside / "events"
        path.rename(real)
        path.symlink_to(real)
        return path, str(path)
    if craft == "id-mismatch":
        event = orjson.loads((path / "3.json").read_bytes())
        event["id"] = name
        (path / "3.json").write_bytes(orjson.dumps(event))
        return path, "3.json"
    if craft == "page-link":
        page = path.parent / "event_cache" / "0-25.json"
        page.unlink()
        page.symlink_to(outside / "victim.json")
        return path, str(page)
    return path, ""


def check(craft: str, name: str, tmp: Path) -> None:
    tree = tmp / craft.replace("-", "_")
    (tree / "outside").mkdir(parents=True)
    (tree / "outside" / "victim.json").write_bytes(b"not yours")
    path, named = crafted(tree, craft, name)
    allowed = [tree / "home" / ".openhands"]
    before = snapshot(tree)
    outcome = fix.fix(path, quiet_seconds=0)
    after = snapshot(tree)
    stray = [p for p in changed(before, after) if not any(p.is_relative_to(a) for a in allowed)]
    assert not stray, stray
    if named:
        assert outcome.status == "refused", (craft, name, outcome.reason)
        assert named in outcome.reason, outcome.reason
        assert changed(before, after) == set()
        return
    assert outcome.status == "fixed", (craft, outcome.reason)
    (backup,) = fix.backups_of(path)
    if craft == "undo-note":  # a note that names files outside, and copies outside
        note = orjson.loads((backup / files.NOTE).read_bytes())
        note["files"][0]["path"] = str(tree / "outside" / "victim.json")
        (backup / files.NOTE).write_bytes(orjson.dumps(note))
        tampered = snapshot(tree)
        assert fix.undo(path).status == "refused"
        assert snapshot(tree) == tampered
        return
    assert fix.undo(path).status == "restored"
    restored = snapshot(tree)
    assert {p for p in changed(before, restored) if restored.get(p) != ("dir",)} == set()


@pytest.mark.parametrize("craft", CRAFTS)
def test_each_crafted_store_is_refused_naming_it_or_fixed_and_undone_inside_it(craft, tmp_path):
    check(craft, "../../outside/x" if craft != "sid" else "..x", tmp_path)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(craft=st.sampled_from(["sid", "id-mismatch"]), name=HOSTILE)
def test_hostile_ids_and_names_change_nothing_outside_the_store(craft, name, tmp_path_factory):
    check(craft, name, tmp_path_factory.mktemp("c"))
