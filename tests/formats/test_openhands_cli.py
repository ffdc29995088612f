"""The OpenHands CLI's conversations (the V1 SDK's events), read, diagnosed and written back.

The files are DERIVED from the SDK's event models (tests/data/corpus/README.md):
a healthy test-fixing session and the four ways its events break (a crash
while a tool ran, an observation written twice, an observation of no call,
and an older SDK's conversation whose unanswered action a user turn follows).
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.formats import FormatError, load, openhands_cli
from inspector.formats.jsondoc import text_of
from inspector.formats.private import calls_of
from tests.formats.shapes import findings, repaired_round_trip
from tests.testdata import CORPUS, files, read

FOLDER = CORPUS / "openhands-cli"
HEALTHY = FOLDER / "derived__healthy.json"
CRASHED = FOLDER / "derived__crashed-in-edit.json"
TWICE = FOLDER / "derived__observation-twice.json"
STRAY = FOLDER / "derived__stray-observation.json"
LEGACY = FOLDER / "derived__legacy-unanswered-then-user.json"
SDK = FOLDER / "derived__sdk-fixture-v1_49_4_mcp.events.json"  # the SDK's own events


def events(data: bytes) -> list[dict[str, Any]]:
    value = orjson.loads(data)
    assert isinstance(value, list)
    return value


def unmatched(stream: list[dict[str, Any]]) -> list[str]:
    """The SDK's ``get_unmatched_actions``: actions no observation, rejection or error answers."""
    by_action = {e.get("action_id") for e in stream if e["kind"] in openhands_cli.RESULTS}
    by_call = {e["tool_call_id"] for e in stream if e["kind"] == "AgentErrorEvent"}
    return [
        e["tool_call_id"]
        for e in stream
        if e["kind"] == "ActionEvent"
        and e.get("action") is not None
        and e["id"] not in by_action
        and e["tool_call_id"] not in by_call
    ]


@pytest.mark.parametrize("path", files(FOLDER), ids=lambda p: p.name)
def test_every_conversation_reads_as_its_shape_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "openhands-cli"
    assert parsed.problems == []
    assert openhands_cli.serialise(list(parsed.messages), parsed) == data


def test_a_healthy_conversation_reads_as_the_sdk_sends_it_and_needs_nothing():
    parsed = load(read(HEALTHY))
    assert findings(parsed) == []
    roles = [m["role"] for m in parsed.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "tool",
                     "assistant", "tool", "assistant", "tool"]  # fmt: skip
    # The two calls of one llm_response_id are one assistant message, as events_to_messages.
    pair = parsed.messages[4]
    assert [c["tool_call_id"] for c in calls_of(pair)] == ["toolu_01B", "toolu_01C"]
    assert text_of(pair["content"]).startswith("The parser chokes")
    assert parsed.sources[4] == [5, 6]
    stream = events(read(HEALTHY))
    facts = openhands_cli.timeline_facts(parsed)
    assert [f["at"] for f in facts if f] == [stream[r[0] - 1]["timestamp"] for r in parsed.sources]


def test_the_sdks_own_conversation_reads_with_every_call_answered():
    parsed = load(read(SDK))
    assert findings(parsed) == [] and parsed.not_started == set()
    calls = [c["name"] for m in parsed.messages for c in calls_of(m)]
    assert calls == ["terminal", "file_editor", "read_file", "no_such_tool", "finish"]
    results = [m for m in parsed.messages if m["role"] == "tool"]
    assert [r["metadata"]["tool_call_id"] for r in results] == [
        "call_terminal", "call_file_editor", "call_read_file", "call_no_such_tool", "call_finish"
    ]  # fmt: skip
    # The MCP tool's two text parts, and the SDK's error for the tool it does not have.
    assert results[2]["content"] == [
        {"type": "text", "text": "[Tool 'read_file' executed.]"},
        {"type": "text", "text": ""},
    ]
    assert results[3]["content"].startswith("Tool 'no_such_tool' not found.")


@pytest.mark.parametrize(("cut", "outcome"), [(7, "unknown"), (9, "not_started")])
def test_the_sdks_conversation_cut_where_a_crash_cuts_it_is_answered_as_it_ran(cut, outcome):
    """Cut after its MCP call (it may have run), or after its call the SDK could not
    validate (no ``action``: the SDK never runs it)."""
    stream = events(read(SDK))[:cut]
    parsed = openhands_cli.parse(orjson.dumps(stream, option=orjson.OPT_INDENT_2))
    written, _ = repaired_round_trip(openhands_cli, parsed)
    made = events(written)[-1]
    assert made["kind"] == "AgentErrorEvent" and made["tool_call_id"] == stream[-1]["tool_call_id"]
    said = {"unknown": "may have partly run", "not_started": "never started"}[outcome]
    assert said in made["error"], made["error"]
    assert unmatched(events(written)) == []


def test_a_crash_while_the_tool_ran_gets_the_error_event_the_sdk_itself_writes():
    data = read(CRASHED)
    stream = events(data)
    assert unmatched(stream) == ["toolu_01E"]
    parsed = load(data)
    assert [(rule, call) for rule, _, call in findings(parsed)] == [("PAIR-1", "toolu_01E")]
    written, again = repaired_round_trip(openhands_cli, parsed)
    out = events(written)
    assert out[: len(stream)] == stream
    made = out[-1]
    assert list(made) == ["id", "timestamp", "source", "parent_id", "tool_name",
                          "tool_call_id", "error", "kind"]  # fmt: skip
    assert made["kind"] == "AgentErrorEvent" and made["source"] == "agent"
    assert made["tool_call_id"] == "toolu_01E" and made["tool_name"] == "file_editor"
    assert made["parent_id"] == stream[-1]["id"]
    assert made["timestamp"] == stream[-1]["timestamp"]
    assert made["error"].startswith("Tool call was interrupted; no result.")
    # The SDK no longer finds the action pending, so it does not run it again on resume.
    assert unmatched(out) == []
    assert openhands_cli.serialise(list(again.messages), again) == written
    # Deterministic: the same conversation is repaired into the same bytes.
    assert repaired_round_trip(openhands_cli, load(data))[0] == written


def test_an_older_conversations_unanswered_action_is_answered_before_the_user_turn():
    data = read(LEGACY)
    stream = events(data)
    assert all("parent_id" not in e for e in stream)
    written, _ = repaired_round_trip(openhands_cli, load(data))
    out = events(written)
    at = next(i for i, e in enumerate(stream) if e.get("tool_call_id") == "toolu_01E")
    assert out[: at + 1] == stream[: at + 1] and out[at + 2 :] == stream[at + 1 :]
    assert out[at + 1]["kind"] == "AgentErrorEvent" and "parent_id" not in out[at + 1]
    assert unmatched(out) == []


@pytest.mark.parametrize(("path", "call"), [(TWICE, "toolu_01E"), (STRAY, "toolu_01X")])
def test_an_observation_that_answers_nothing_becomes_the_users_note_in_its_place(path, call):
    data = read(path)
    stream = events(data)
    parsed = load(data)
    assert ("PAIR-3", call) in {(rule, c) for rule, _, c in findings(parsed)}
    written, _ = repaired_round_trip(openhands_cli, parsed)
    out = events(written)
    assert len(out) == len(stream)
    changed = [(old, new) for old, new in zip(stream, out, strict=True) if old != new]
    assert len(changed) == 1
    old, new = changed[0]
    assert old["kind"] == "ObservationEvent" and new["kind"] == "MessageEvent"
    for key in ("id", "timestamp", "parent_id"):
        assert new[key] == old[key]
    assert new["source"] == "user" and new["llm_message"]["role"] == "user"
    said = new["llm_message"]["content"][0]["text"]
    assert said.startswith(f"[note: a tool result for call {call} arrived with no matching call")
    assert old["observation"]["content"][0]["text"] in said


def test_a_branched_conversation_is_refused_saying_why():
    stream = events(read(HEALTHY))
    stream[5] = {**stream[5], "parent_id": stream[2]["id"]}
    with pytest.raises(FormatError, match="branches") as caught:
        openhands_cli.parse(orjson.dumps(stream))
    assert caught.value.unread


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"kind": "MysteryEvent"}, "kind"),
        ({"source": "robot"}, "source"),
        ({"id": 7}, "id"),
        ({"timestamp": None}, "timestamp"),
        ({"tool_call": None}, "tool_call"),
    ],
    ids=["kind", "source", "id", "timestamp", "tool-call"],
)
def test_an_event_this_reader_does_not_know_refuses_the_file_naming_it(change, said):
    stream = events(read(HEALTHY))
    stream[2] = {**stream[2], **change}
    with pytest.raises(FormatError, match=said) as caught:
        openhands_cli.parse(orjson.dumps(stream))
    assert caught.value.unread


def test_an_action_that_never_validated_and_has_no_result_never_started():
    stream = events(read(CRASHED))
    stream[-1] = {**stream[-1]}
    del stream[-1]["action"]
    parsed = openhands_cli.parse(orjson.dumps(stream))
    assert parsed.not_started == {"toolu_01E"}


def test_sniff_sees_the_sdks_events_and_leaves_other_json_lists_alone():
    for path in files(FOLDER):
        assert openhands_cli.sniff(read(path)[:4096]) > 0.9
    for other in ("openhands", "openai-chat", "cline", "pydantic-ai", "ai-sdk", "goose"):
        for path in files(CORPUS / other):
            assert openhands_cli.sniff(read(path)[:4096]) == 0, path


@st.composite
def damaged_conversation(draw: st.DrawFn) -> bytes:
    """A conversation with events dropped, doubled (a new id) or swapped."""
    stream = events(read(draw(st.sampled_from([HEALTHY, CRASHED, LEGACY]))))
    linked = "parent_id" in stream[1]
    for n in range(draw(st.integers(1, 4))):
        at = draw(st.integers(1, len(stream) - 1))
        kind = draw(st.sampled_from(["drop", "double", "swap"]))
        if kind == "drop" and len(stream) > 2:
            del stream[at]
        elif kind == "double":
            stream.insert(at, {**stream[at], "id": f"dddd{n:04d}-0000-4000-8000-{at:012d}"})
        elif kind == "swap" and at + 1 < len(stream):
            stream[at], stream[at + 1] = stream[at + 1], stream[at]
    if linked:  # relinked as the SDK links what it appends
        nodes = [e for e in stream if e["kind"] not in openhands_cli.NOT_NODES]
        for before, event in itertools.pairwise(nodes):
            event["parent_id"] = before["id"]
    return orjson.dumps(stream, option=orjson.OPT_INDENT_2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_conversation())
def test_any_damaged_conversation_is_repaired_in_its_events_and_reads_back_clean(data):
    try:
        parsed = openhands_cli.parse(data)
    except FormatError:
        return
    written, again = repaired_round_trip(openhands_cli, parsed)
    assert openhands_cli.serialise(list(again.messages), again) == written
    out = events(written)
    assert unmatched(out) == []
    ids = [e["id"] for e in out]
    assert len(ids) == len(set(ids))
    if "parent_id" in events(data)[1]:
        nodes = [e for e in out if e["kind"] not in openhands_cli.NOT_NODES]
        assert all(b["parent_id"] == a["id"] for a, b in itertools.pairwise(nodes))


def test_bookkeeping_between_two_actions_of_one_response_splits_no_message():
    """The SDK batches a response's actions among the events it sends (events_to_messages)."""
    stream = events(read(HEALTHY))
    pair = [i for i, e in enumerate(stream) if e.get("llm_response_id") == "chatcmpl-7a2"]
    update = {"id": "99990000-0000-4000-8000-000000000001",
              "timestamp": stream[pair[0]]["timestamp"], "source": "environment",
              "key": "execution_status", "value": "running",
              "kind": "ConversationStateUpdateEvent"}  # fmt: skip
    between = [*stream[: pair[1]], update, *stream[pair[1] :]]
    parsed = openhands_cli.parse(orjson.dumps(between))
    assert findings(parsed) == []
    # Cut after the second action: both calls answered, the bookkeeping left where it was.
    cut = between[: pair[1] + 2]
    written, _ = repaired_round_trip(openhands_cli, openhands_cli.parse(orjson.dumps(cut)))
    out = events(written)
    assert out[: len(cut)] == cut
    assert [e["kind"] for e in out[len(cut) :]] == ["AgentErrorEvent", "AgentErrorEvent"]


@pytest.mark.parametrize("thought", ["fromisoformat reads the offset; I will use it.", ""])
def test_a_call_cut_mid_arguments_goes_its_thought_stays_and_the_cut_is_noted(thought):
    """A crash while the model streamed the call: its arguments are no JSON (INT-1, INT-2)."""
    stream = events(read(CRASHED))
    cut = {**stream[-1], "thought": [{"cache_prompt": False, "type": "text", "text": thought}]}
    cut["tool_call"] = {**cut["tool_call"], "arguments": '{"command": "str_repl'}
    del cut["action"]  # the SDK could not validate it
    parsed = openhands_cli.parse(orjson.dumps([*stream[:-1], cut], option=orjson.OPT_INDENT_2))
    assert {"INT-1", "INT-2"} <= {rule for rule, _, _ in findings(parsed)}
    written, _ = repaired_round_trip(openhands_cli, parsed)
    out = events(written)
    assert out[: len(stream) - 1] == stream[:-1]
    assert not any(e["kind"] == "ActionEvent" and e["id"] == cut["id"] for e in out)
    note = out[-1]
    assert note["kind"] == "MessageEvent" and note["source"] == "user"
    assert "interrupted before its call to file_editor" in note["llm_message"]["content"][0]["text"]
    if thought:  # the prose stays, as the agent's message in the action's place
        said = out[-2]
        assert said["id"] == cut["id"] and said["kind"] == "MessageEvent"
        assert said["llm_message"]["content"][0]["text"] == thought
    else:  # nothing but the cut call: no message is left of it
        assert len(out) == len(stream)
