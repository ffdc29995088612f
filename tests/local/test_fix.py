"""``fix`` in place: broken sessions come out clean, healthy ones untouched, none half-written."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector import cli
from inspector.local import confine, fix, sessions
from tests.local.conftest import Home

FIX_PAUSED = """
import os, sys, time
from pathlib import Path
from inspector.local import confine, fix

point, marker = int(os.environ["PAUSE_AT"]), Path(os.environ["PAUSE_MARKER"])
calls = [0]

def pausing(name, real):
    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == point:
            marker.write_text(name)
            time.sleep(60)
        result = real(*args, **kwargs)
        calls[0] += 1
        if calls[0] == point:
            marker.write_text(name + " done")
            time.sleep(60)
        return result
    return wrapped

confine.write_durably = pausing("write", confine.write_durably)
confine.sync_folder = pausing("sync", confine.sync_folder)
os.replace = pausing("replace", os.replace)
outcome = fix.fix(Path(sys.argv[1]))
print(outcome.status, outcome.reason)
"""


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def test_fix_makes_each_broken_session_clean_and_leaves_healthy_ones_byte_identical(
    agent_home: Home,
):
    one_file = {p: r for p, r in agent_home.broken.items() if p not in agent_home.stores}
    assert len(one_file) == 10 and len(agent_home.healthy) >= 14  # agents-a: +5 broken, +6 healthy
    before = {path: path.read_bytes() for path in agent_home.all()}
    for path in agent_home.healthy:
        status, out = run("fix", str(path))
        assert status == 0, out
        assert "clean, nothing to repair" in out
        assert path.read_bytes() == before[path]
        assert fix.backups_of(path) == []
    for path, rule in one_file.items():
        outcome = fix.fix(path)
        assert outcome.status == "fixed", outcome.reason
        assert outcome.checked is not None and outcome.checked.diagnosis is not None
        assert any(r.startswith(rule) for r in outcome.checked.diagnosis.counts)
        after = sessions.check(path, outcome.checked.agent)
        assert after.verdict == "clean", after.error
        # Every line fix did not report touching is there, byte for byte, in its order.
        old = before[path].splitlines()
        kept = [line for n, line in enumerate(old, 1) if n not in set(outcome.touched)]
        new = iter(path.read_bytes().splitlines())
        assert all(any(line == other for other in new) for line in kept)
        assert outcome.backup is not None and outcome.backup.read_bytes() == before[path]
        assert path.stat().st_mode == outcome.backup.stat().st_mode


def test_the_cli_says_what_changed_and_how_to_resume(agent_home: Home):
    claude = next(p for p in agent_home.broken if ".claude" in p.parts)
    status, out = run("fix", agent_home.ids[claude])
    assert status == 0, out  # fixed: success, so `fix && resume` resumes
    assert f"Fixed {claude}" in out
    assert "PAIR-" in out and "added" in out
    assert f"Backup: {claude}{fix.BACKUP_MARK}" in out
    assert f"claude --resume {agent_home.ids[claude]}" in out
    assert out.splitlines()[-1].startswith("  cd ")  # run it where the session was made

    codex = next(p for p in agent_home.broken if "019c8a70" in p.name)
    status, out = run("fix", str(codex))
    assert status == 0, out  # fixed: success, so `fix && resume` resumes
    assert "codex resume 019c8a70-dda7-7f33-98ea-f30553347322" in out

    pi = next(p for p in agent_home.broken if ".pi" in p.parts)
    status, out = run("fix", str(pi))
    assert status == 0, out  # fixed: success, so `fix && resume` resumes
    assert f"pi --session {pi}" in out


def test_dry_run_shows_the_same_and_writes_nothing(agent_home: Home):
    path = next(iter(agent_home.broken))
    data = path.read_bytes()
    status, out = run("fix", "--dry-run", str(path))
    assert status == 1 and "Would fix" in out and "Dry run: nothing was written." in out
    assert path.read_bytes() == data
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        p.name for p in path.parent.iterdir() if fix.BACKUP_MARK not in p.name
    )


def test_undo_restores_the_original_byte_for_byte(agent_home: Home):
    path = next(iter(agent_home.broken))
    original = path.read_bytes()
    assert fix.fix(path).status == "fixed"
    assert path.read_bytes() != original
    status, out = run("fix", "--undo", str(path))
    assert status == 0 and "restored from" in out
    assert path.read_bytes() == original
    assert fix.backups_of(path) == []
    status, _ = run("fix", "--undo", str(path))
    assert status == 2  # nothing left to undo


def test_undo_refuses_when_the_agent_wrote_after_the_fix(agent_home: Home):
    path = next(iter(agent_home.broken))
    original = path.read_bytes()
    assert fix.fix(path).status == "fixed"
    with path.open("ab") as handle:
        handle.write(b'{"type":"summary","summary":"later"}\n')
    grown = path.read_bytes()
    assert fix.undo(path).status == "refused"
    assert path.read_bytes() == grown
    assert fix.undo(path, force=True).status == "restored"
    assert path.read_bytes() == original


def test_a_write_during_fix_makes_it_refuse_and_keeps_the_agents_write(
    agent_home: Home, monkeypatch: pytest.MonkeyPatch
):
    path = next(iter(agent_home.broken))
    real = confine.write_durably
    line = b'{"type":"summary","summary":"written while fix ran"}\n'

    def agent_writes_meanwhile(target: Path, data: bytes, before_mode: int | None) -> None:
        real(target, data, before_mode)
        if fix.BACKUP_MARK in target.name and not target.name.endswith(fix.NOTE_SUFFIX):
            with path.open("ab") as handle:
                handle.write(line)

    monkeypatch.setattr(confine, "write_durably", agent_writes_meanwhile)
    data = path.read_bytes()
    outcome = fix.fix(path)
    assert outcome.status == "refused" and "changed while it was being fixed" in outcome.reason
    assert path.read_bytes() == data + line
    assert fix.backups_of(path) == []
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]


def test_a_session_written_to_seconds_ago_is_refused(agent_home: Home):
    path = next(iter(agent_home.broken))
    os.utime(path)  # now: the agent may still be writing
    data = path.read_bytes()
    status, _ = run("fix", str(path))
    assert status == 2
    outcome = fix.fix(path)
    assert outcome.status == "refused" and "may still be running" in outcome.reason
    assert path.read_bytes() == data
    assert fix.fix(path, quiet_seconds=0).status == "fixed"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\x00\x01binary", "binary"),
        (b'{"not": "a transcript"}', "not a transcript"),
        (b"", "empty"),
    ],
)
def test_an_unreadable_session_is_left_as_it_is_with_the_reason(
    agent_home: Home, data: bytes, words: str
):
    path = agent_home.root / ".claude" / "projects" / "-work-app" / "bad.jsonl"
    path.write_bytes(data)
    os.utime(path, (time.time() - 3600,) * 2)
    outcome = fix.fix(path)
    assert outcome.status == "refused" and words in outcome.reason
    assert "nothing was changed" in outcome.reason
    assert path.read_bytes() == data


@pytest.mark.slow
@pytest.mark.parametrize("point", range(1, 11))
def test_a_fix_killed_at_any_point_leaves_the_old_file_or_the_new_one(
    agent_home: Home, tmp_path: Path, point: int
):
    path = next(iter(agent_home.broken))
    old = path.read_bytes()
    new = fix.fix(path, dry_run=True)
    assert new.status == "would-fix"
    marker = tmp_path / "paused"
    env = {**os.environ, "PAUSE_AT": str(point), "PAUSE_MARKER": str(marker)}
    process = subprocess.Popen([sys.executable, "-c", FIX_PAUSED, str(path)], env=env)
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marker.exists(), f"fix never reached point {point}"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    data = path.read_bytes()
    fixed = sessions.check(path, None, data)
    assert data == old or (data != old and fixed.verdict == "clean"), marker.read_text()
    # The next fix sweeps what the killed one left and finishes the job.
    outcome = fix.fix(path)
    assert outcome.status in ("fixed", "clean")
    assert sessions.check(path).verdict == "clean"
    assert not [p for p in path.parent.iterdir() if ".ti-fix-" in p.name]
