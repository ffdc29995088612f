"""`manage.py repair` as scripts and CI call it: output, report and exit status."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from tests.testdata import CASES, CORPUS, REPO, files, read


def run_repair(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "repair", *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        check=False,
    )


def case_input(name: str) -> bytes:
    return orjson.dumps(orjson.loads(read(CASES / name))["input"])


def test_clean_history_exits_0_and_is_written_back_unchanged(tmp_path):
    path = tmp_path / "clean.json"
    path.write_bytes(case_input("15-valid-history-unchanged.json"))
    result = run_repair(str(path))
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout) == orjson.loads(read(path))


def test_broken_history_exits_1_with_the_repaired_json(tmp_path):
    case = orjson.loads(read(CASES / "04-dangling-read-only.json"))
    path = tmp_path / "broken.json"
    path.write_bytes(orjson.dumps(case["input"]))
    result = run_repair(str(path), "--read-only", "search")
    assert result.returncode == 1, result.stderr
    assert orjson.loads(result.stdout) == case["expected"]["messages"]


def test_report_lists_findings_and_provider_verdicts():
    result = run_repair("-", "--report", stdin=case_input("07-orphan-result.json"))
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert report["format"] == "canonical" and report["messages"] == 3
    assert [f["rule"] for f in report["findings"]] == ["PAIR-3"]
    assert report["providers"]["openai-chat"]["before"]
    assert report["providers"]["openai-chat"]["after"] == []


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00\x01\x02 binary", b'{"hello": "world"}', b"[1, 2, 3]", b"\xff\xfe not utf-8"],
    ids=["empty", "binary", "not-a-transcript", "not-messages", "bad-utf8"],
)
def test_bad_input_exits_2_with_one_line(data):
    result = run_repair("-", stdin=data)
    assert result.returncode == 2
    assert result.stdout == b""
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("repair: ")


def test_missing_file_exits_2():
    result = run_repair("/nonexistent/transcript.json")
    assert result.returncode == 2
    assert b"No such file" in result.stderr


def test_claude_code_session_is_written_back_in_its_own_shape(tmp_path):
    name = files(CORPUS / "claude-code" / "broken", "*4c-02af2759b6*")[0]
    source = tmp_path / name.name
    source.write_bytes(read(name))
    out = tmp_path / "repaired.jsonl"
    result = run_repair(str(source), "--output", str(out))
    assert result.returncode == 1, result.stderr
    again = run_repair(str(out), "--report")
    assert again.returncode == 0, again.stdout
    assert orjson.loads(again.stdout)["format"] == "claude-code"
