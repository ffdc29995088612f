"""The console command: list, check, report, repair, with no server and no database."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import orjson

from inspector import cli
from inspector.local import fix as fix_module
from inspector.local import sessions
from tests.local.conftest import Home
from tests.testdata import CASES, read


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def test_the_command_is_installed_with_the_package_and_needs_no_django():
    scripts = entry_points(group="console_scripts")
    (script,) = [e for e in scripts if e.name == "transcript-inspector"]
    assert script.value == "inspector.cli:main"
    code = "import sys, inspector.cli; sys.exit(0 if 'django' not in sys.modules else 3)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_list_shows_every_session_newest_first_with_its_verdict(agent_home: Home, capsys):
    status, out = run("list")
    assert status == 1  # some need repair
    paths = [line.strip() for line in out.splitlines() if line.startswith("    /")]
    assert sorted(paths) == sorted(str(p) for p in agent_home.all())
    mtimes = [Path(p).stat().st_mtime for p in paths]
    assert mtimes == sorted(mtimes, reverse=True)
    assert f"{len(paths)} sessions, {len(agent_home.broken)} need repair" in out
    assert capsys.readouterr().err == ""


def test_a_missing_folder_is_named_and_the_others_still_listed(agent_home: Home, capsys):
    shutil.rmtree(agent_home.root / ".kimi")
    status, out = run("list")
    assert status == 1
    assert "Kimi CLI: no folder at" in capsys.readouterr().err
    assert "/.kimi/" not in out and ".claude" in out and ".pi" in out  # .kimi-code stays


def test_list_broken_shows_only_those_that_need_repair(agent_home: Home):
    status, out = run("list", "--broken", "--json")
    records = [orjson.loads(line) for line in out.splitlines()]
    assert status == 1
    assert {r["path"] for r in records} == {str(p) for p in agent_home.broken}
    assert all(r["verdict"] == "needs repair" and r["counts"] and r["resume"] for r in records)


def test_a_root_can_be_given_for_an_agent(agent_home: Home, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "-proj").mkdir(parents=True)
    source = next(iter(agent_home.broken))
    (elsewhere / "-proj" / source.name).write_bytes(source.read_bytes())
    _, out = run("list", "--json", "--root", f"claude-code={elsewhere}")
    claude = [orjson.loads(line) for line in out.splitlines()]
    claude = [r for r in claude if r["agent"] == "claude-code"]
    assert [r["path"] for r in claude] == [str(elsewhere / "-proj" / source.name)]
    assert run("list", "--root", "nobody=/x")[0] == 2


def test_check_report_and_repair_on_files(tmp_path: Path):
    case = orjson.loads((CASES / "03-dangling-call.json").read_bytes())
    broken = tmp_path / "broken.json"
    broken.write_bytes(orjson.dumps(case["input"]))
    clean = tmp_path / "clean.json"
    clean.write_bytes(orjson.dumps(case["expected"]["messages"]))
    status, out = run("check", str(broken), str(clean))
    assert status == 1
    assert f"{broken}: needs repair (PAIR-1 x1)" in out and f"{clean}: clean" in out

    status, out = run("report", str(broken))
    assert status == 1
    assert "Verdict: needs repair" in out and "PAIR-1" in out and "Providers" in out
    status, out = run("report", "--json", str(broken))
    assert orjson.loads(out)["counts"] == {"PAIR-1": 1}

    target = tmp_path / "repaired.json"
    assert run("repair", str(broken), "-o", str(target))[0] == 1
    assert run("check", str(target)) == (0, f"{target}: clean\n")
    assert broken.read_bytes() == orjson.dumps(case["input"])  # repair never edits FILE


def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys):
    garbage = tmp_path / "x.json"
    garbage.write_bytes(b"{this is not json")
    assert run("check", str(garbage))[0] == 2
    assert run("report", str(garbage))[0] == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("report: ")


def test_repair_reads_a_real_session_the_same_way_manage_py_does(tmp_path: Path):
    from tests.testdata import CORPUS, files

    source = files(CORPUS / "claude-code" / "broken", "*4c-02af2759b6*")[0]
    path = tmp_path / "session.jsonl"
    path.write_bytes(read(source))
    ours = subprocess.run(
        [sys.executable, "-m", "inspector.cli", "repair", str(path)], capture_output=True
    )
    theirs = subprocess.run(
        [sys.executable, "manage.py", "repair", str(path)],
        capture_output=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert ours.returncode == theirs.returncode == 1
    assert ours.stdout == theirs.stdout and ours.stdout


def test_a_second_list_reads_only_the_sessions_that_changed(agent_home: Home, monkeypatch):
    from inspector.local import sessions

    first = run("list", "--json")
    assert (agent_home.root / ".cache" / "transcript-inspector" / "sessions.json").is_file()
    diagnosed: list[Path] = []
    real_check = sessions.check
    monkeypatch.setattr(
        sessions, "check", lambda path, *a: diagnosed.append(path) or real_check(path, *a)
    )
    assert run("list", "--json") == first
    assert diagnosed == []
    changed = next(iter(agent_home.broken))
    assert fix_module.fix(changed).status == "fixed"
    _, out = run("list", "--json")
    assert diagnosed == [changed]
    record = next(r for r in map(orjson.loads, out.splitlines()) if r["path"] == str(changed))
    assert record["verdict"] == "clean"


def test_fix_then_resume_in_one_shell_line_resumes_after_a_repair(agent_home: Home, tmp_path):
    # `fix ID && claude --resume ID` must go on to resume when fix repaired the session.
    script = Path(sys.executable).with_name("transcript-inspector")
    path = next(p for p in agent_home.broken if ".claude" in p.parts)
    resumed = tmp_path / "resumed"
    line = f'"{script}" fix "{path}" && touch "{resumed}"'
    done = subprocess.run(["sh", "-c", line], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert resumed.exists() and "Fixed" in done.stdout
    resumed.unlink()
    again = subprocess.run(["sh", "-c", line], check=False, capture_output=True, text=True)
    assert again.returncode == 0 and "clean, nothing to repair" in again.stdout  # clean: resume
    assert resumed.exists()


def test_list_and_fix_title_each_session_by_its_first_prompt(agent_home: Home):
    """Issue 31: a session is known by what was asked in it, not by its file name."""
    titles = {}
    for path in agent_home.all():
        checked = sessions.check(path, sessions.agent_for(path, sessions.roots({})))
        title = checked.diagnosis.meta.get("first_prompt") if checked.diagnosis else None
        if title:
            titles[str(path)] = title
    assert titles, "the sample sessions have prompts"
    _, out = run("list")
    lines = out.splitlines()
    for path, title in titles.items():
        at = lines.index(f"    {path}")
        assert lines[at - 1] == f"    “{cli._short(title)}”", (path, lines[at - 1])
    _, out = run("list", "--json")
    records = {r["path"]: r for r in map(orjson.loads, out.splitlines())}
    assert all(records[path]["title"] == title for path, title in titles.items())
    _, out = run("fix")  # no terminal to ask in: it lists the broken ones, then says to name one
    for path in agent_home.broken:
        if str(path) in titles:
            assert f"“{cli._short(titles[str(path)])}” {path}" in out


def test_report_html_and_markdown_run_from_a_fresh_console_and_leave_nothing(tmp_path: Path):
    """Issue 31: ``report --html`` and ``--markdown`` start the web's templates by
    themselves (no settings in the environment, no server, no database) and keep nothing;
    every other command still runs without Django."""
    import os

    from tests.web.conftest import BROKEN_CANONICAL

    path = tmp_path / "broken.json"
    path.write_bytes(BROKEN_CANONICAL)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "SECRET_KEY", "INSPECTOR_VAR_DIR", "DATABASE_URL")
    } | {"TMPDIR": str(scratch)}

    def console(*options: str) -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable, "-m", "inspector.cli", "report", str(path), *options]
        return subprocess.run(command, capture_output=True, env=env, cwd=tmp_path, check=False)

    html = console("--html")
    assert html.returncode == cli.NEEDS_REPAIR, html.stderr
    page = html.stdout.decode()
    assert page.startswith("<!doctype html>") and "This history needs repair." in page
    assert "<style>" in page and "<script>" in page and 'src="' not in page
    markdown = console("--markdown")
    assert markdown.returncode == cli.NEEDS_REPAIR, markdown.stderr
    assert markdown.stdout.decode().startswith("# Transcript diagnosis: broken.json")
    assert list(scratch.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "broken.json",
        "tmp",
    ]
    assert console("--markdown", "--redacted").returncode == cli.BAD_INPUT
    assert b"--redacted goes with --html" in console("--redacted").stderr
    assert console("--html", "--conversation", "2").returncode == cli.BAD_INPUT
