"""GitHub Copilot CLI session events: read as Copilot writes them, repaired in its own events."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FormatError, copilot, load
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

FOLDER = CORPUS / "copilot"
SESSIONS = files(FOLDER)
# Other projects' fixtures and files derived from Copilot's schema are healthy; the other
# derived files are crashes.
HEALTHY = [p for p in SESSIONS if not p.name.startswith("derived__") or ".healthy." in p.name]
BROKEN = [p for p in SESSIONS if p not in HEALTHY]
WRITER = FOLDER / "derived__copilot-1.0.102-writer.healthy.events.jsonl"
HIPPO = FOLDER / "kitfunso-hippo-memory__tests_fixtures_copilot_events.jsonl"


def events(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def unanswered(data: bytes) -> list[str]:
    """Counted from the events alone: the main agent's tool requests no completion answers."""
    asked: list[str] = []
    answered: set[str] = set()
    for event in events(data):
        body = event["data"]
        if "agentId" in event or "parentToolCallId" in body:
            continue
        if event["type"] == "assistant.message":
            asked += [r["toolCallId"] for r in body.get("toolRequests", [])]
        elif event["type"] == "tool.execution_complete":
            answered.add(body["toolCallId"])
    return [ident for ident in asked if ident not in answered]


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def event(kind: str, n: int, **data: Any) -> dict[str, Any]:
    parent = f"e{n - 1}" if n > 1 else None
    return {
        "type": kind,
        "data": data,
        "id": f"e{n}",
        "timestamp": f"2026-01-01T00:00:{n:02}Z",
        "parentId": parent,
    }


def test_the_corpus_has_healthy_and_broken_sessions():
    assert len(HEALTHY) >= 2 and len(BROKEN) >= 2


@pytest.mark.parametrize("path", HEALTHY, ids=lambda p: p.name)
def test_a_healthy_session_reads_as_copilot_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "copilot"
    assert parsed.problems == []
    assert unanswered(data) == []
    assert repair(parsed).actions == []
    assert copilot.serialise(list(parsed.messages), parsed) == data


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.name)
def test_a_crashed_session_has_one_finding_per_unanswered_call_and_reads_back_clean(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "copilot"
    missing = unanswered(data)
    assert missing
    assert [(rule, call) for rule, _, call in findings(parsed)] == [("PAIR-1", c) for c in missing]
    written, again = repaired_round_trip(copilot, parsed)
    lines = events(written)
    # Every event before is there, in its order; the chain runs through the new events.
    old = {e["id"] for e in events(data)}
    assert [e["id"] for e in lines if e["id"] in old] == [e["id"] for e in events(data)]
    for before, after in itertools.pairwise(lines):
        assert after["parentId"] == before["id"]
    made = [e for e in lines if e["data"].get("error", {}).get("code") == copilot.HEALED_CODE]
    assert [e["data"]["toolCallId"] for e in made] == missing
    assert all(
        e["type"] == "tool.execution_complete" and e["data"]["success"] is False for e in made
    )
    assert copilot.serialise(list(again.messages), again) == written


def test_a_call_never_started_is_known_and_one_that_started_is_not():
    before = load(read(FOLDER / "derived__hippo-crashed-before-tool.events.jsonl"))
    assert before.not_started == {"call_1"}
    midway = load(read(FOLDER / "derived__cadra-crashed-mid-tool.events.jsonl"))
    assert midway.not_started == set()
    written = copilot.serialise(repair(midway).messages, midway)
    # The made result follows the call's start: the start stays with its call.
    kinds = [e["type"] for e in events(written)]
    assert kinds[-2:] == ["tool.execution_start", "tool.execution_complete"]


def test_the_main_history_leaves_sub_agent_events_out_and_keeps_reasoning_and_facts():
    parsed = load(read(HIPPO))
    assert [m["role"] for m in parsed.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "user",
    ]
    assert parsed.meta["subagent_events"] == 2
    first = parsed.messages[1]
    assert first["content"][0] == {"type": "thinking", "thinking": "..."}
    assert text_of(first["content"]) == "Looking at the login client first."
    assert calls_of(first) == [
        {"tool_call_id": "call_1", "name": "read_file", "arguments": '{"filePath":"auth.spec.ts"}'}
    ]
    assert parsed.messages[2]["metadata"] == {
        "tool_call_id": "call_1",
        "name": "read_file",
        "_rec": 5,
    }
    assert parsed.meta["session_id"] == "copilot-sess-1"
    assert parsed.meta["cwd"] == "c:\\proj"
    assert [f["at"] for f in copilot.timeline_facts(parsed)][:2] == [
        "2026-10-07T12:00:01.000Z",
        "2026-10-07T12:00:03.000Z",
    ]
    assert parsed.sources[0] == [2]


def test_a_failed_call_is_an_error_result_and_facts_carry_model_and_tokens():
    data = jsonl(
        event("session.start", 1, sessionId="s", context={"cwd": "/w"}),
        event("user.message", 2, content="go"),
        event(
            "assistant.message",
            3,
            messageId="m",
            content="",
            model="gpt-5",
            outputTokens=12,
            toolRequests=[{"toolCallId": "t1", "name": "bash", "arguments": {"command": "make"}}],
        ),
        event("tool.execution_start", 4, toolCallId="t1", toolName="bash"),
        event(
            "tool.execution_complete",
            5,
            toolCallId="t1",
            success=False,
            error={"message": "denied"},
        ),
        event("abort", 6, reason="user initiated"),
    )
    parsed = copilot.parse(data)
    result = parsed.messages[-1]
    assert (result["content"], result["metadata"]["is_error"]) == ("denied", True)
    assert parsed.causes == {2: "user_stop"}
    assert copilot.timeline_facts(parsed)[1]["model"] == "gpt-5"
    assert copilot.timeline_facts(parsed)[1]["tokens_out"] == 12
    assert repair(parsed).actions == []


def test_a_note_is_a_user_message_event_and_a_dropped_message_loses_only_its_line():
    data = read(HIPPO)
    parsed = copilot.parse(data)
    note = {"role": "user", "content": "[note: checked]", "metadata": {}}
    written = copilot.serialise([*parsed.messages[:1], note, *parsed.messages[1:]], parsed)
    out = events(written)
    assert out[2]["type"] == "user.message" and out[2]["data"] == {"content": "[note: checked]"}
    assert out[2]["parentId"] == "e2" and out[3]["parentId"] == out[2]["id"]
    assert text_of(copilot.parse(written).messages[1]["content"]) == "[note: checked]"
    kept = [m for i, m in enumerate(parsed.messages) if i != 4]  # the user message of line 8
    dropped = events(copilot.serialise(kept, parsed))
    assert [e["id"] for e in dropped] == [e["id"] for e in events(data) if e["id"] != "e8"]
    assert next(e for e in dropped if e["id"] == "e9")["parentId"] == "e7"


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"type": "session.telepathy", "data": {}}, "'session.telepathy'"),
        ({"type": "user.message", "data": {"content": "x"}, "mood": 1}, "keys mood"),
        ({"type": "user.message", "data": {"content": ["x"]}}, "data.content"),
        ({"type": "user.message", "data": "x"}, "'data' is not an object"),
        (
            {
                "type": "tool.execution_complete",
                "data": {"toolCallId": "t", "result": {"text": "x"}},
            },
            "result.content",
        ),
        (["a"], "not an object"),
    ],
    ids=["type", "envelope", "content", "data", "result", "list"],
)
def test_an_event_this_reader_does_not_know_refuses_the_file_naming_it(record, field):
    data = jsonl(
        event("session.start", 1, sessionId="s"), event("user.message", 2, content="go"), record
    )
    with pytest.raises(FormatError, match=field) as caught:
        copilot.parse(data)
    assert "line 3" in str(caught.value) and caught.value.unread
    with pytest.raises(FormatError) as loaded:
        load(data)
    assert loaded.value.unread


def test_sniff_sees_copilot_events_and_nothing_else():
    assert copilot.sniff(read(HIPPO)) == 0.95
    for other in [
        "claude-code/files/johejo-hocage__real_session.jsonl",
        "cursor/Tdexixi-code-with-ai-contest__cursor_agent_transcript.jsonl",
    ]:
        assert copilot.sniff(read(CORPUS / other)) == 0
    assert copilot.sniff(b'{"type": "message", "data": {}}\n') == 0


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(p) for p in SESSIONS]))
def test_damaged_sessions_are_repaired_into_sessions_that_need_no_more(data: bytes) -> None:
    check_written_back(data)


def test_the_timeline_takes_each_messages_time_model_and_tokens_from_the_shape():
    from inspector.diagnosis.rows import message_facts, totals

    parsed = load(read(HIPPO))
    facts = message_facts(parsed)
    assert len(facts) == len(parsed.messages)
    stamps = [e["timestamp"] for e in events(read(HIPPO)) if e["id"] in {"e2", "e9"}]
    assert totals(facts)["first"] == stamps[0] and totals(facts)["last"] == stamps[1]


def test_the_durable_events_copilot_1_0_102_writes_are_carried_not_refused():
    data = read(WRITER)
    parsed = load(data)
    kinds = {e["type"] for e in events(data)}
    assert {"session.usage_record", "assistant.turn_start"} <= kinds <= copilot.EVENT_TYPES
    # The receipts are no messages: the history is the user's prompt and three replies.
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "tool", "assistant",
                                                    "tool", "assistant"]  # fmt: skip
    assert copilot.serialise(list(parsed.messages), parsed) == data
    facts = copilot.timeline_facts(parsed)
    assert facts[1]["model"] == "claude-sonnet-4.5" and facts[1]["tokens_out"] == 61


def test_a_parent_that_is_no_id_does_not_stop_the_repair_being_written() -> None:
    # Found by the property above: a damaged start whose ``parentId`` is a list.
    lines = [
        {"type": "session.start", "id": "e01", "parentId": [], "data": {"sessionId": "s"}},
        {"type": "user.message", "id": "e02", "parentId": "e01", "data": {"content": "Go"}},
        {
            "type": "assistant.message",
            "id": "e03",
            "parentId": "e02",
            "data": {
                "messageId": "m1",
                "content": "Reading.",
                "toolRequests": [{"toolCallId": "t1", "name": "view", "arguments": {}}],
            },
        },
    ]
    check_written_back(b"".join(orjson.dumps(line) + b"\n" for line in lines))
