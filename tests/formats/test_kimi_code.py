"""Kimi Code agent wire logs: the history Kimi rebuilds, repaired in its own loop records."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.diagnosis.rows import message_facts
from inspector.formats import FormatError, kimi_code, load
from inspector.formats.jsondoc import text_of
from inspector.formats.private import calls_of
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    repair,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

FOLDER = CORPUS / "kimi-code"
SESSIONS = files(FOLDER)
TURN = FOLDER / "derived__agent-core-basic-test__tool-turn.wire.jsonl"
CRASHED = FOLDER / "derived__agent-core-basic-test__crashed-in-tool.wire.jsonl"
HEALTHY = [p for p in SESSIONS if p != CRASHED]
KIMI_CLI = (
    CORPUS
    / "openai-chat"
    / "MoonshotAI-kimi-cli__pr127__531d195b-6436-426e-b010-4bf723a992de.kimi-context.jsonl"
)


def records(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def unanswered(data: bytes) -> list[str]:
    """Counted from the records alone: tool.call events no tool.result answers."""
    events = [r["event"] for r in records(data) if r["type"] == "context.append_loop_event"]
    answered = {e["toolCallId"] for e in events if e["type"] == "tool.result"}
    return [
        e["toolCallId"]
        for e in events
        if e["type"] == "tool.call" and e["toolCallId"] not in answered
    ]


def jsonl(*values: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(v) + b"\n" for v in values)


@pytest.mark.parametrize("path", HEALTHY, ids=lambda p: p.name)
def test_a_healthy_log_reads_as_kimi_code_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "kimi-code"
    assert unanswered(data) == [] and repair(parsed).actions == []
    assert kimi_code.serialise(list(parsed.messages), parsed) == data


def test_a_step_is_one_assistant_message_with_its_parts_calls_and_tokens():
    parsed = load(read(TURN))
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "tool", "assistant"]
    step = parsed.messages[1]
    assert text_of(step["content"]) == "I will run that."
    assert calls_of(step) == [
        {
            "tool_call_id": "call_bash",
            "name": "Bash",
            "arguments": {"command": "printf lookup-result", "timeout": 60},
        }
    ]
    assert parsed.messages[2]["content"] == "lookup-result"
    facts = kimi_code.timeline_facts(parsed)[1]
    assert (facts["tokens_in"], facts["tokens_out"], facts["model"]) == (11, 22, "mock-model")
    assert facts["at"].startswith("2026-")


def test_a_crashed_log_has_one_finding_per_unanswered_call_and_reads_back_clean():
    data = read(CRASHED)
    parsed = load(data)
    missing = unanswered(data)
    assert missing == ["call_bash"]
    assert [(rule, call) for rule, _, call in findings(parsed)] == [("PAIR-1", c) for c in missing]
    written, again = repaired_round_trip(kimi_code, parsed)
    lines = records(written)
    assert lines[:-1] == records(data)
    made = lines[-1]["event"]
    assert made["type"] == "tool.result" and made["parentUuid"] == "call_bash"
    assert made["result"]["isError"] is True
    assert kimi_code.serialise(list(again.messages), again) == written


def test_a_compaction_restarts_from_its_summary_and_an_undo_takes_back_a_turn():
    parsed = load(read(FOLDER / "MoonshotAI-kimi-code__vis-fixture-sample-compaction.wire.jsonl"))
    assert [text_of(m["content"]) for m in parsed.messages] == [
        "compacted summary",
        "after compaction",
    ]

    def user(text: str) -> dict[str, Any]:
        message = {"role": "user", "content": [{"type": "text", "text": text}], "toolCalls": []}
        return {"type": "context.append_message", "message": message, "time": 1}

    data = jsonl(
        {"type": "metadata", "protocol_version": "1.1", "created_at": 0},
        user("one"), user("two"), {"type": "context.undo", "count": 1, "time": 2}, user("three"),
    )  # fmt: skip
    assert [text_of(m["content"]) for m in load(data).messages] == ["one", "three"]


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"type": "context.rewind", "time": 1}, "'context.rewind'"),
        ({"type": "context.append_loop_event", "event": {"type": "step.pause"}}, "'step.pause'"),
        (
            {
                "type": "context.append_message",
                "message": {"role": "user", "content": [{"type": "doc"}]},
            },
            "'doc'",
        ),
        ({"type": "context.append_message", "message": {"role": "robot", "content": []}}, "'role'"),
    ],
    ids=["type", "event", "part", "role"],
)
def test_a_record_this_reader_does_not_know_refuses_the_file_naming_it(record, field):
    data = read(TURN).splitlines(keepends=True)
    bad = b"".join([*data[:3], orjson.dumps(record) + b"\n", *data[3:]])
    with pytest.raises(FormatError, match=field) as caught:
        load(bad)
    assert caught.value.unread


def test_the_python_kimi_clis_context_file_is_still_read_as_openai_chat():
    assert kimi_code.sniff(read(KIMI_CLI)) == 0
    assert load(read(KIMI_CLI)).format == "openai-chat"
    claude = CORPUS / "claude-code" / "files" / "johejo-hocage__real_session.jsonl"
    assert kimi_code.sniff(read(claude)) == 0


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(p) for p in SESSIONS]))
def test_damaged_logs_are_repaired_into_logs_that_need_no_more(data: bytes) -> None:
    check_written_back(data)


def test_a_repeated_call_id_is_renamed_in_its_own_tool_call_record():
    lines = read(TURN).splitlines(keepends=True)
    values = records(read(TURN))
    # The second step calls again under the first call's id, and is cut there.
    step = next(n for n, v in enumerate(values) if v.get("event", {}).get("type") == "tool.call")
    second = next(
        n
        for n, v in enumerate(values)
        if n > step and v.get("event", {}).get("type") == "step.begin"
    )
    again = {
        **values[step],
        "event": {**values[step]["event"], "stepUuid": values[second]["event"]["uuid"]},
    }
    data = b"".join([*lines[: second + 1], orjson.dumps(again) + b"\n"])
    parsed = load(data)
    assert {rule for rule, _, _ in findings(parsed)} >= {"ID-1"}
    written, _ = repaired_round_trip(kimi_code, parsed)
    out = records(written)
    renamed = [
        v["event"]["toolCallId"] for v in out if v.get("event", {}).get("type") == "tool.call"
    ]
    assert renamed[0] == "call_bash" and renamed[1] != "call_bash"
    assert written.splitlines()[: second + 1] == data.splitlines()[: second + 1]


def test_the_v2_engines_bookkeeping_records_are_kept_as_they_are():
    # Records agent-core-v2 writes beside the context (seen in a newer Kimi Code's wire log).
    extra = [
        {"type": "plugin.session_start", "content": None, "time": 1, "agentId": "main"},
        {"type": "runtime.set_binding", "time": 2, "agentId": "main"},
        {"type": "turn.ended", "turnId": 0, "reason": "completed", "durationMs": 5, "time": 3},
        {"type": "token_counting.turn_recorded", "turnId": 0, "length": 2, "tokens": 50},
    ]
    base = read(TURN)
    data = base + jsonl(*extra)
    parsed = load(data)
    assert parsed.format == "kimi-code" and parsed.problems == []
    assert parsed.messages == load(base).messages
    assert kimi_code.serialise(list(parsed.messages), parsed) == data


CANCELLED = FOLDER / "jazzyalex-agent-sessions__kimi_small.wire.jsonl"


def test_a_step_begun_in_a_cancelled_turn_with_nothing_in_it_is_no_message():
    # Kimi never sends such a step: agent-core-v2 drops it from the history it rebuilds,
    # agent-core's projection from every request. So it is no message and needs no finding.
    data = read(CANCELLED)
    parsed = load(data)
    assert [(m["role"], text_of(m["content"])) for m in parsed.messages] == [
        ("user", "hi"),
        ("user", "hi"),
        ("user", "stop"),
    ]
    assert repair(parsed).actions == []
    assert kimi_code.serialise(list(parsed.messages), parsed) == data


def step(uuid: str, *parts: dict[str, Any]) -> list[dict[str, Any]]:
    begin = {"type": "step.begin", "uuid": uuid, "turnId": "0", "step": 1}
    events = [begin, *({"type": "content.part", "stepUuid": uuid, "part": p} for p in parts)]
    events.append({"type": "step.end", "uuid": uuid, "turnId": "0", "step": 1})
    return [{"type": "context.append_loop_event", "event": e, "time": 1} for e in events]


def test_a_step_of_only_blank_parts_is_dropped_as_kimi_drops_it_a_signed_thought_is_kept():
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}], "toolCalls": []}
    blank = [{"type": "text", "text": " \n"}, {"type": "think", "think": ""}]
    signed = {"type": "think", "think": "", "encrypted": "sig"}
    data = jsonl(
        {"type": "metadata", "protocol_version": "1.4", "created_at": 1},
        {"type": "context.append_message", "message": user, "time": 1},
        *step("a", *blank),
        *step("b", signed),
        *step("c", {"type": "text", "text": "hello"}),
    )
    parsed = load(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "assistant"]
    assert [m["content"] for m in parsed.messages[1:]] == [
        [{"type": "thinking", "thinking": ""}],
        [{"type": "text", "text": "hello"}],
    ]
    assert all("_blank" not in m["metadata"] for m in parsed.messages)
    assert kimi_code.serialise(list(parsed.messages), parsed) == data


@pytest.mark.parametrize("odd", [1e300, float("nan"), -(2**62), "soon"])
def test_a_record_time_no_clock_can_show_leaves_the_fact_unsaid_and_the_file_read(odd):
    lines = read(TURN).splitlines(keepends=True)
    records = [orjson.loads(line) for line in lines]
    first = next(i for i, r in enumerate(records) if r["type"] == "context.append_message")
    records[first]["time"] = odd
    lines[first] = orjson.dumps(records[first], option=orjson.OPT_APPEND_NEWLINE)
    parsed = load(b"".join(lines), "kimi-code")
    facts = message_facts(parsed)
    assert len(facts) == len(parsed.messages) == len(load(read(TURN), "kimi-code").messages)
    assert facts[0] is not None and facts[0]["at"] is None
    assert all(f and f["at"] for f in facts[1:])
