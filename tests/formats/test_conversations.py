"""Files of many conversations: every one read, diagnosed and repaired, and counted."""

from __future__ import annotations

import io

import orjson
import pytest

from inspector import cli, formats
from inspector.diagnosis import diagnose, diagnose_all, repaired_bytes_all, report_all
from inspector.formats import anthropic, openai_chat
from tests.testdata import CORPUS, read

TAU = CORPUS / "openai-chat" / "sierra-research-tau-bench__gpt-4o-airline.json"
TRACE = CORPUS / "anthropic" / "badlogic-lemmy-via-zkcpku-claude-trace-dev__test-traffic.jsonl"


def tau_jsonl(count: int) -> bytes:
    tasks = orjson.loads(read(TAU))[:count]
    return b"".join(orjson.dumps(task) + b"\n" for task in tasks)


def test_every_trajectory_of_a_tau_bench_file_is_read_in_order():
    data = read(TAU)
    every = formats.load_all(data)
    tasks = orjson.loads(data)
    assert len(every) == len(tasks) == 200
    for k in (0, 1, 57, 199):
        assert every[k].messages == openai_chat.parse(data, conversation=k).messages
        assert every[k].meta["conversation"] == k


def test_a_repaired_tau_bench_file_repairs_every_trajectory_and_changes_no_other():
    data = read(TAU)
    every = formats.load_all(data)
    diagnoses = diagnose_all(every)
    broken = [k for k, d in enumerate(diagnoses) if d.needs_repair]
    assert 1 < len(broken) < 200
    repaired = repaired_bytes_all(every)
    again = formats.load_all(repaired)
    assert len(again) == 200
    assert not any(d.needs_repair for d in diagnose_all(again))
    before, after = orjson.loads(data), orjson.loads(repaired)
    for k in range(200):
        if k not in broken:
            assert after[k] == before[k], k
        else:
            assert after[k]["traj"] != before[k]["traj"]
            assert {key: v for key, v in after[k].items() if key != "traj"} == {
                key: v for key, v in before[k].items() if key != "traj"
            }


def test_one_conversation_per_line_keeps_untouched_lines_byte_for_byte():
    data = tau_jsonl(6)
    every = formats.load_all(data)
    assert len(every) == 6
    needs = [diagnose(one).needs_repair for one in every]
    assert any(needs) and not all(needs)
    repaired = repaired_bytes_all(every)
    for k, (old, new) in enumerate(zip(data.splitlines(), repaired.splitlines(), strict=True)):
        assert (old == new) == (not needs[k]), k
    assert not any(d.needs_repair for d in diagnose_all(formats.load_all(repaired)))


def test_a_claude_trace_capture_holds_its_main_loop_and_its_other_conversations():
    every = formats.load_all(read(TRACE))
    # The main loop, the compaction request beside it, and the session continued after it.
    assert [one.meta["exchange"] for one in every] == [12, 13, 16]
    assert every[-1].messages == anthropic.parse(read(TRACE)).messages  # the default one
    assert "continued from a previous conversation" in orjson.dumps(every[2].messages).decode()


def trace_line(system: str, messages: list[dict], marked: int | None = None) -> bytes:
    blocks = [
        {"role": m["role"], "content": [{"type": "text", "text": m["text"]}]} for m in messages
    ]
    if marked is not None:
        blocks[marked]["content"][0]["cache_control"] = {"type": "ephemeral"}
    body = {"model": "claude", "system": system, "tools": [{"name": "Bash"}], "messages": blocks}
    return orjson.dumps({"request": {"body": body}, "response": {"body": {}}}) + b"\n"


def test_trace_conversations_are_told_apart_by_their_beginning_not_by_cache_marks():
    hello = [{"role": "user", "text": "hello"}]
    longer = [*hello, {"role": "assistant", "text": "hi"}, {"role": "user", "text": "more"}]
    data = (
        trace_line("main", hello, marked=0)
        + trace_line("sub", [{"role": "user", "text": "find files"}])
        + trace_line("main", longer, marked=2)  # Claude Code moved the mark: same conversation
    )
    parsed = anthropic.parse(data)
    assert parsed.meta["conversations"] == 2 and parsed.meta["conversation_keys"] == [2, 1]
    # Each read at its last exchange; the system prompt leads as a system message.
    assert [len(one.messages) for one in formats.load_all(data)] == [4, 2]


def test_a_file_of_one_conversation_is_one():
    data = read(
        CORPUS
        / "openai-chat"
        / "pydantic-ai__test_openai__test_multiple_agent_tool_calls.extracted.json"
    )
    (one,) = formats.load_all(data)
    assert one.messages == formats.load(data).messages
    assert formats.conversation_keys(one) == []


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def test_the_cli_repairs_reports_and_counts_every_conversation(tmp_path):
    path = tmp_path / "tau.jsonl"
    path.write_bytes(tau_jsonl(6))
    every = formats.load_all(path.read_bytes())
    broken = sum(diagnose(one).needs_repair for one in every)
    status, out = run("check", str(path))
    assert status == 1 and f"needs repair in {broken} of 6 conversations" in out
    status, out = run("report", "--json", str(path))
    report = orjson.loads(out)
    assert report["conversations"] == 6 and report["conversations_needing_repair"] == broken
    assert [item["conversation"] for item in report["each"]] == [1, 2, 3, 4, 5, 6]
    assert report["counts"] == {
        rule: sum(item["counts"].get(rule, 0) for item in report["each"])
        for rule in report["counts"]
    }
    status, out = run("report", str(path))
    assert (
        "6 conversations" in out
        and f"conversation {1 + [diagnose(o).needs_repair for o in every].index(True)}" in out
    )
    target = tmp_path / "repaired.jsonl"
    assert run("repair", str(path), "-o", str(target))[0] == 1
    assert run("check", str(target)) == (0, f"{target}: clean (6 conversations)\n")
    status, out = run("repair", "--canonical", str(path))
    assert len(orjson.loads(out)) == 6


@pytest.mark.parametrize("fmt", ["source", "canonical"])
def test_a_single_conversation_is_repaired_as_before(fmt):
    data = read(CORPUS / "codex" / "kvsankar-agent-history__codex_with_escalation.jsonl")
    from inspector.diagnosis import repaired_bytes

    parsed = formats.load(data)
    assert repaired_bytes_all([parsed], fmt) == repaired_bytes(parsed, fmt)
    assert report_all([parsed], [diagnose(parsed)])["needs_repair"] is True
