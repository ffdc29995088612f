"""Codex ``exec --json`` event logs, bare and wrapped: calls, results, repairs written back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FormatError, codex, load
from inspector.formats import codex_exec as cx
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    outline,
    repair,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

LOGS = files(CORPUS / "codex-exec")
TAKOPI = CORPUS / "codex-exec" / "banteg-takopi__codex_exec_json_all_formats.jsonl"
ARVO = (
    CORPUS
    / "codex-exec"
    / "soldudo-ARVO-Codex-Logger__arvo-42513136-vul-1766251130.codex-exec-json.log"
)


def _id(path: Path) -> str:
    return path.name


def lines_of(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def command(item_id: str, status: str = "completed", output: str = "ok") -> dict[str, Any]:
    done = status != "in_progress"
    return {
        "type": "item.completed" if done else "item.started",
        "item": {
            "id": item_id,
            "type": "command_execution",
            "command": "ls",
            "aggregated_output": output if done else "",
            "exit_code": 0 if status == "completed" else None,
            "status": status,
        },
    }


def text(item_id: str, said: str) -> dict[str, Any]:
    return {
        "type": "item.completed",
        "item": {"id": item_id, "type": "agent_message", "text": said},
    }


THREAD = {"type": "thread.started", "thread_id": "t-1"}
TURN = {"type": "turn.started"}
DONE = {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}


# --- the corpus ------------------------------------------------------------------------


@pytest.mark.parametrize("path", LOGS, ids=_id)
def test_log_loads_as_codex_exec_and_round_trips_byte_for_byte(path: Path) -> None:
    data = read(path)
    parsed = load(data)
    assert parsed.format == "codex-exec"
    assert parsed.problems == []
    assert cx.serialise(parsed.messages, parsed) == data
    assert findings(parsed) == []


def test_the_rollout_reader_still_refuses_an_exec_log() -> None:
    with pytest.raises(FormatError):
        codex.parse(read(ARVO))


def test_items_become_calls_results_and_text() -> None:
    parsed = cx.parse(read(TAKOPI))
    assert parsed.meta["session_id"] == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    calls = [c for m in parsed.messages for c in m["metadata"].get("tool_calls", [])]
    assert [(c["tool_call_id"], c["name"]) for c in calls] == [
        ("item_1", "shell"),
        ("item_2", "shell"),
        ("item_3", "apply_patch"),
        ("item_4", "apply_patch"),
        ("item_5", "github__search_issues"),
        ("item_6", "github__search_issues"),
    ]
    assert calls[0]["arguments"] == {"command": "pytest -q"}
    results = {m["metadata"]["tool_call_id"]: m for m in parsed.messages if m["role"] == "tool"}
    assert results["item_2"]["content"] == "....F\n"
    assert results["item_2"]["metadata"]["is_error"] is True
    assert results["item_5"]["content"] == "Found 3 matches."
    assert results["item_6"]["content"] == "tool timeout"
    # A file change is only ever completed: call and result from one line.
    assert parsed.sources[4] == parsed.sources[5] == [10]
    last = parsed.messages[-1]
    assert last["content"] == [
        {"type": "text", "text": "Updated src/compute_answer.py and tests pass."}
    ]
    assert last["metadata"]["reasoning"][0]["text"] == "Root cause: compute_answer() returned 0."
    assert last["metadata"]["web_search"][0]["query"] == "codex exec --json schema"
    assert {"line": 19, "error": "command output truncated"} in parsed.meta["errors"]


def test_a_wrapped_log_starts_with_the_prompt_of_its_command_line() -> None:
    parsed = cx.parse(read(ARVO))
    first = parsed.messages[0]
    assert first["role"] == "user"
    assert first["content"].startswith("Find and fix the bug in binutils-preconditions")
    assert parsed.sources[0] == [1]
    assert parsed.meta["command"][:3] == ["codex", "exec", "--json"]
    assert sum(1 for m in parsed.messages if m["role"] == "tool") == 43


# --- broken variants of real logs ---------------------------------------------------------


def test_a_command_that_never_completed_gets_its_completed_event() -> None:
    raw = read(ARVO).splitlines(keepends=True)
    assert b'"item.completed", "item": {"id": "item_3"' in raw[7]
    broken = b"".join(raw[:7] + raw[8:])
    parsed = cx.parse(broken)
    # With no result between them, item_3 and item_5 read as one reply's calls.
    assert findings(parsed) == [("PAIR-1", [4, 6, 7, 8, 9], "item_3")]
    data, _ = repaired_round_trip(cx, parsed)
    out = data.splitlines(keepends=True)
    assert b'"item_5", "type": "command_execution"' in out[8]
    assert out[:9] == broken.splitlines(keepends=True)[:9]  # then the new line
    assert out[10:] == broken.splitlines(keepends=True)[9:]
    new = orjson.loads(out[9])
    assert new["log_type"] == "tool_event"
    before = orjson.loads(out[8])
    assert new["timestamp_iso"] == before["timestamp_iso"]
    event = new["data"]
    assert event["type"] == "item.completed"
    item = event["item"]
    assert item["id"] == "item_3" and item["type"] == "command_execution"
    assert item["command"] == "/bin/bash -lc ls"
    assert item["status"] == "failed" and item["exit_code"] is None
    assert item["aggregated_output"].startswith("Tool call was interrupted; no result.")


def test_a_log_cut_while_a_command_ran_ends_its_turn_as_cut() -> None:
    raw = read(TAKOPI).splitlines(keepends=True)
    cut = b"".join(raw[:8])  # item_2 started, then nothing
    parsed = cx.parse(cut)
    assert parsed.causes == {2: "stream_ended"}
    assert findings(parsed) == [("PAIR-1", [8], "item_2")]
    data, again = repaired_round_trip(cx, parsed)
    assert lines_of(data)[-1]["item"]["status"] == "failed"
    assert again.causes == {2: "stream_ended"}


def test_a_failed_turn_marks_its_last_reply() -> None:
    data = jsonl(
        THREAD,
        TURN,
        command("c1", "in_progress"),
        {"type": "turn.failed", "error": {"message": "boom"}},
    )
    parsed = cx.parse(data)
    assert parsed.causes == {0: "api_error"}
    assert [r for r, _, _ in findings(parsed)] == ["PAIR-1"]
    repaired_round_trip(cx, parsed)


def test_an_mcp_call_left_open_is_completed_with_an_error() -> None:
    raw = read(TAKOPI).splitlines(keepends=True)
    broken = b"".join(raw[:12] + raw[13:])  # item_5's completion is gone
    parsed = cx.parse(broken)
    assert findings(parsed) == [("PAIR-1", [12, 13], "item_5")]
    data, _ = repaired_round_trip(cx, parsed)
    records = lines_of(data)
    assert len(records) == len(lines_of(broken)) + 1
    item = records[13]["item"]  # after the reply's last line, item_6's start
    assert (item["id"], item["type"], item["status"], item["result"]) == (
        "item_5",
        "mcp_tool_call",
        "failed",
        None,
    )
    assert item["error"]["message"].startswith("Tool call was interrupted")
    assert item["arguments"] == {"q": "exec --json"}


def test_ids_that_restart_in_a_second_run_are_renamed_in_every_event_of_the_item() -> None:
    run = jsonl(
        THREAD,
        TURN,
        command("item_0", "in_progress"),
        command("item_0"),
        text("item_1", "hi"),
        DONE,
    )
    parsed = cx.parse(run + run)
    assert {r for r, _, _ in findings(parsed)} == {"ID-1"}
    data, _ = repaired_round_trip(cx, parsed)
    records = lines_of(data)
    assert [r["item"]["id"] for r in records[8:10]] == ["item_0_1", "item_0_1"]
    assert [r["item"]["id"] for r in records[2:4]] == ["item_0", "item_0"]


def test_a_completion_seen_twice_is_a_second_run_of_its_item() -> None:
    data = jsonl(
        THREAD,
        TURN,
        command("c1", "in_progress"),
        command("c1"),
        command("c1", output="again"),
        DONE,
    )
    parsed = cx.parse(data)
    # The third line is a second run of c1 (no start): call and result at once.
    assert {r for r, _, _ in findings(parsed)} == {"ID-1"}
    assert outline(parsed.messages)[-1] == ("tool", "c1", "again")


def test_a_declined_command_never_ran() -> None:
    data = jsonl(THREAD, TURN, command("c1", "declined", output=""), DONE)
    parsed = cx.parse(data)
    assert parsed.not_started == {"c1"}
    assert parsed.messages[1]["metadata"]["is_error"] is True


def test_reasoning_alone_is_no_message() -> None:
    reasoning = {"type": "item.completed", "item": {"id": "r", "type": "reasoning", "text": "hm"}}
    data = jsonl(THREAD, TURN, command("c1"), reasoning, DONE)
    assert [m["role"] for m in cx.parse(data).messages] == ["assistant", "tool"]


def test_a_note_is_written_as_an_error_item_and_read_back_as_a_note() -> None:
    parsed = cx.parse(jsonl(THREAD, TURN, command("c1"), DONE))
    note = {"role": "user", "content": "[note: something]", "metadata": {"note": "orphan_result"}}
    data = cx.serialise([*parsed.messages, note], parsed)
    assert lines_of(data)[3] == {
        "type": "item.completed",
        "item": {"id": "repair_note", "type": "error", "message": "[note: something]"},
    }
    assert outline(cx.parse(data).messages) == outline([*parsed.messages, note])


def test_notes_the_repair_wrote_read_back_as_notes() -> None:
    note = {
        "type": "item.completed",
        "item": {"id": "n", "type": "error", "message": "[system note: x]"},
    }
    parsed = cx.parse(jsonl(THREAD, TURN, command("c1"), note, DONE))
    assert parsed.messages[-1] == {
        "role": "user",
        "content": "[system note: x]",
        "metadata": {"note": "interruption", "_src": 2},
    }
    assert repair(parsed).actions == []


# --- not an exec log ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        read(CORPUS / "codex" / "kvsankar-agent-history__codex_with_escalation.jsonl"),
        b'{"type": "thread.started", "thread_id": "t"}\n{"type": "turn.started"}\n',
        b'{"log_type": "session_end", "data": {"exit_code": 0}}\n',
        b"[1, 2]\n",
    ],
    ids=["rollout", "no-items", "no-events", "not-objects"],
)
def test_other_files_are_refused_with_a_reason(data: bytes) -> None:
    with pytest.raises(FormatError) as caught:
        cx.parse(data)
    assert str(caught.value)


def test_sniff() -> None:
    assert cx.sniff(read(ARVO)[:65536]) == 0.9
    assert cx.sniff(read(TAKOPI)) == 0.9
    assert (
        cx.sniff(read(CORPUS / "codex" / "kvsankar-agent-history__codex_with_escalation.jsonl"))
        == 0
    )


# --- damaged logs -------------------------------------------------------------------------


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(TAKOPI), b"".join(read(ARVO).splitlines(keepends=True)[:40])]))
def test_damaged_logs_are_repaired_into_logs_that_need_no_more(data: bytes) -> None:
    check_written_back(data)
