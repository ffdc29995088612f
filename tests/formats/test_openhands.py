"""OpenHands event streams: a trajectory (or a session's events) read, repaired in its events."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.formats import FormatError, load, openhands
from inspector.formats.jsondoc import text_of
from inspector.formats.private import calls_of
from tests.formats.shapes import examples, findings, outline, repaired_round_trip
from tests.testdata import CORPUS, files, read

FOLDER = CORPUS / "openhands"
REAL = [p for p in files(FOLDER) if not p.name.startswith("derived__")]
BASIC = FOLDER / "All-Hands-AI-OpenHands__tests_runtime_trajs_basic.json"
GUI = FOLDER / "All-Hands-AI-OpenHands__tests_runtime_trajs_basic_gui_mode.json"
TALK = FOLDER / "All-Hands-AI-OpenHands__tests_runtime_trajs_basic_interactions.json"
CRASHED = FOLDER / "derived__basic.crashed-in-edit.json"


def events(data: bytes) -> list[dict[str, Any]]:
    value = orjson.loads(data)
    assert isinstance(value, list)
    return value


def unanswered(stream: list[dict[str, Any]]) -> list[str]:
    """Counted from the events alone: tool actions (not finish) no observation answers."""
    answered = {
        e["tool_call_metadata"]["tool_call_id"]
        for e in stream
        if "observation" in e and e.get("tool_call_metadata")
    }
    return [
        e["tool_call_metadata"]["tool_call_id"]
        for e in stream
        if e.get("action") not in (None, "finish")
        and e.get("tool_call_metadata")
        and e["tool_call_metadata"]["tool_call_id"] not in answered
    ]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_a_real_trajectory_reads_as_openhands_clean_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "openhands"
    assert unanswered(events(data)) == []
    assert findings(parsed) == []
    assert openhands.serialise(list(parsed.messages), parsed) == data


def test_each_call_is_read_with_its_result_and_the_timeline_has_the_events_facts():
    parsed = load(read(GUI))
    assert [m["role"] for m in parsed.messages] == [
        "user",
        *["assistant", "tool"] * 4,
        "assistant",
    ]
    for call, result in zip(parsed.messages[1::2], parsed.messages[2::2], strict=False):
        if result["role"] != "tool":
            break
        assert calls_of(call)[0]["tool_call_id"] == result["metadata"]["tool_call_id"]
    facts = openhands.timeline_facts(parsed)
    assert facts[1]["model"].startswith("claude") and facts[1]["tokens_in"] > 0
    assert facts[0]["at"] == events(read(GUI))[4]["timestamp"]


def test_a_finish_is_the_agents_last_words_not_a_call():
    parsed = load(read(TALK))
    last = parsed.messages[-1]
    assert last["role"] == "assistant" and not calls_of(last)
    assert text_of(last["content"]) == "All done! What's next on the agenda?"


def test_a_crashed_session_gets_an_error_observation_appended_as_openhands_appends():
    data = read(CRASHED)
    stream = events(data)
    assert unanswered(stream) == ["toolu_017nBp7UfiGqyrA7j77HgtFP"]
    parsed = load(data)
    assert [(rule, call) for rule, _, call in findings(parsed)] == [
        ("PAIR-1", "toolu_017nBp7UfiGqyrA7j77HgtFP")
    ]
    written, again = repaired_round_trip(openhands, parsed)
    out = events(written)
    assert out[: len(stream)] == stream
    made = out[-1]
    assert made["id"] == stream[-1]["id"] + 1
    assert made["observation"] == "error" and made["cause"] == stream[-1]["id"]
    assert made["tool_call_metadata"] == stream[-1]["tool_call_metadata"]
    assert unanswered(out) == []
    assert openhands.serialise(list(again.messages), again) == written


def test_a_result_that_arrives_late_is_read_after_its_call_in_call_order():
    stream = events(read(GUI))
    # The first call's result moved to the end of the stream, after later calls and results.
    first = next(i for i, e in enumerate(stream) if e.get("observation") == "run")
    moved = [*stream[:first], *stream[first + 1 :], stream[first]]
    parsed = openhands.parse(orjson.dumps(moved))
    assert outline(parsed.messages) == outline(load(read(GUI)).messages)
    assert findings(parsed) == []


def test_a_second_result_for_one_call_becomes_a_users_message_in_its_place():
    stream = events(read(BASIC))
    result = next(e for e in stream if e.get("observation") == "edit")
    twice = [*stream, {**result, "id": 99}]
    parsed = openhands.parse(orjson.dumps(twice, option=orjson.OPT_INDENT_2))
    assert "PAIR-3" in {rule for rule, _, _ in findings(parsed)}
    written, _ = repaired_round_trip(openhands, parsed)
    out = events(written)
    assert out[:-1] == stream
    assert out[-1]["id"] == 99 and out[-1]["action"] == "message"
    assert out[-1]["source"] == "user"


@pytest.mark.parametrize(
    ("event", "said"),
    [
        ({"id": 7, "timestamp": "t", "source": "agent"}, "neither an action"),
        ({"id": 7, "source": "robot", "action": "message", "args": {}}, "source"),
        ({"id": "7", "source": "agent", "action": "message", "args": {}}, "id"),
        ({"id": 7, "source": "agent", "action": "run", "args": {}}, "no tool call"),
        ({"id": 7, "source": "agent", "observation": "run", "content": 5}, "not text"),
    ],
    ids=["kind", "source", "id", "untied-run", "content"],
)
def test_an_event_this_reader_does_not_know_refuses_the_file_naming_it(event, said):
    stream = events(read(BASIC))
    bad = orjson.dumps([*stream[:2], event, *stream[2:]])
    with pytest.raises(FormatError, match=said) as caught:
        openhands.parse(bad)
    assert caught.value.unread


def test_sniff_sees_openhands_and_leaves_other_json_lists_alone():
    for path in files(FOLDER):
        assert openhands.sniff(read(path)[:4096]) > 0.9
    for other in ("openai-chat", "cline", "pydantic-ai", "ai-sdk"):
        for path in files(CORPUS / other):
            assert openhands.sniff(read(path)[:4096]) == 0, path


@st.composite
def damaged_stream(draw: st.DrawFn) -> bytes:
    """A real stream with events dropped, doubled or swapped."""
    stream = events(read(draw(st.sampled_from([BASIC, GUI, CRASHED]))))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(stream) - 1))
        kind = draw(st.sampled_from(["drop", "double", "swap"]))
        if kind == "drop" and len(stream) > 1:
            del stream[at]
        elif kind == "double":
            stream.insert(at, {**stream[at], "id": 1000 + at})
        elif kind == "swap" and at + 1 < len(stream):
            stream[at], stream[at + 1] = stream[at + 1], stream[at]
    return orjson.dumps(stream, option=orjson.OPT_INDENT_2)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_stream())
def test_any_damaged_stream_is_repaired_in_its_events_and_reads_back_clean(data):
    try:
        parsed = openhands.parse(data)
    except FormatError:
        return
    written, again = repaired_round_trip(openhands, parsed)
    assert openhands.serialise(list(again.messages), again) == written
    had = [e.get("id") for e in events(data)]
    made = [e["id"] for e in events(written) if e not in events(data)]
    # An event the repair made or rewrote has the next free id, or the id it had.
    assert all(n in had or n > max(had) for n in made)
    assert len(set(made) - set(had)) == len([n for n in made if n not in had])
