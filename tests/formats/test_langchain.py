"""LangChain / LangGraph messages in their three JSON forms: reading, repairs written back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FormatError, load
from inspector.formats import langchain as lc
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    outline,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

STATES = files(CORPUS / "langchain")
HITL = CORPUS / "langchain" / "vercel-ai__langgraph__LANGGRAPH_RESPONSE_1.interrupted-state.json"
REACT = CORPUS / "langchain" / "vercel-ai__langgraph__REACT_AGENT_TOOL_CALLING.final-state.json"


def _id(path: Path) -> str:
    return path.name


def human(text: str) -> dict[str, Any]:
    return {"type": "human", "data": {"content": text, "additional_kwargs": {}, "type": "human"}}


def ai(text: str = "", *calls: tuple[str, str], **extra: Any) -> dict[str, Any]:
    tool_calls = [{"name": n, "args": {"q": i}, "id": i, "type": "tool_call"} for i, n in calls]
    data = {"content": text, "additional_kwargs": {}, "response_metadata": {}, "type": "ai"}
    return {"type": "ai", "data": {**data, "tool_calls": tool_calls, **extra}}


def tool(call_id: str, text: str = "ok", name: str = "search") -> dict[str, Any]:
    data = {"content": text, "type": "tool", "name": name, "tool_call_id": call_id}
    return {"type": "tool", "data": {**data, "status": "success"}}


def dumps(*records: dict[str, Any]) -> bytes:
    return orjson.dumps(list(records))


# --- the corpus ------------------------------------------------------------------------


@pytest.mark.parametrize("path", STATES, ids=_id)
def test_state_loads_as_langchain_and_round_trips_byte_for_byte(path: Path) -> None:
    data = read(path)
    parsed = load(data)
    assert parsed.format == "langchain"
    assert parsed.problems == []
    assert lc.serialise(parsed.messages, parsed) == data


# The graph stopped at a human-in-the-loop interrupt: delete_file awaits approval,
# so the state holds the call and no result yet.
STATE_FINDINGS = {HITL.name: [("PAIR-1", [2], "call_LOd3dMxgYxmNLWZVWXra9xWQ")]}


@pytest.mark.parametrize("path", STATES, ids=_id)
def test_state_has_only_its_real_findings(path: Path) -> None:
    assert findings(lc.parse(read(path))) == STATE_FINDINGS.get(path.name, [])


def test_lc_constructor_messages_are_read() -> None:
    parsed = lc.parse(read(REACT))
    assert outline(parsed.messages) == [
        ("user", "What's the weather in Tokyo and what time is it there?"),
        (
            "assistant",
            "",
            (
                ("call_lxFuvuhpu9gvtx04WrmXZF9h", "get_weather"),
                ("call_U3RijXRN09TXMyKWFZwqWjnJ", "get_datetime"),
            ),
        ),
        ("tool", "call_lxFuvuhpu9gvtx04WrmXZF9h", "Weather in Tokyo: 20°C, Clear skies"),
        (
            "tool",
            "call_U3RijXRN09TXMyKWFZwqWjnJ",
            "Current date and time in Asia/Tokyo: Wednesday, December 17, 2025 at 04:00:28 AM",
        ),
        (
            "assistant",
            "Here\u2019s the latest for Tokyo:\n- Weather: 20°C, clear skies\n"
            "- Local time: Wednesday, December 17, 2025 at 04:00:28 AM (Asia/Tokyo)",
            (),
        ),
    ]
    assert parsed.messages[1]["metadata"]["tool_calls"][0]["arguments"] == {
        "city": "Tokyo",
        "units": "celsius",
    }
    assert parsed.meta == {"form": "lc", "container": "messages"}


def test_the_interrupted_state_gets_a_tool_message_of_its_own_form() -> None:
    parsed = lc.parse(read(HITL))
    data, _ = repaired_round_trip(lc, parsed)
    doc = orjson.loads(data)
    assert doc["messages"][:2] == orjson.loads(read(HITL))["messages"]
    new = doc["messages"][2]
    assert new["lc"] == 1 and new["type"] == "constructor"
    assert new["id"] == ["langchain_core", "messages", "ToolMessage"]
    kwargs = new["kwargs"]
    assert kwargs["tool_call_id"] == "call_LOd3dMxgYxmNLWZVWXra9xWQ"
    assert kwargs["name"] == "delete_file"
    assert kwargs["status"] == "error"
    assert kwargs["content"].startswith("Tool call was interrupted; no result.")
    assert data.startswith(b'{\n  "messages": [\n')  # laid out as it was


# --- broken variants --------------------------------------------------------------------


def test_one_of_two_parallel_results_lost_is_put_back_after_the_other() -> None:
    doc = orjson.loads(read(REACT))
    del doc["messages"][3]
    parsed = lc.parse(orjson.dumps(doc))
    assert findings(parsed) == [("PAIR-1", [2], "call_U3RijXRN09TXMyKWFZwqWjnJ")]
    data, _ = repaired_round_trip(lc, parsed)
    ids = [m["id"][-1] for m in orjson.loads(data)["messages"]]
    assert ids == ["HumanMessage", "AIMessageChunk", "ToolMessage", "ToolMessage", "AIMessageChunk"]


def test_a_repeated_call_id_is_renamed_in_every_copy_of_the_call() -> None:
    first = ai("", ("c1", "search"))
    second = ai("", ("c1", "search"))
    second["data"]["tool_call_chunks"] = [{"name": "search", "args": "{}", "id": "c1", "index": 0}]
    second["data"]["additional_kwargs"] = {
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
        ]
    }
    data = dumps(human("go"), first, tool("c1"), second, tool("c1", "again"))
    parsed = lc.parse(data)
    assert {r for r, _, _ in findings(parsed)} == {"ID-1"}
    out, _ = repaired_round_trip(lc, parsed)
    records = orjson.loads(out)
    fourth = records[3]["data"]
    assert fourth["tool_calls"][0]["id"] == "c1_1"
    assert fourth["tool_call_chunks"][0]["id"] == "c1_1"
    assert fourth["additional_kwargs"]["tool_calls"][0]["id"] == "c1_1"
    assert records[4]["data"]["tool_call_id"] == "c1_1"
    assert records[:3] == orjson.loads(data)[:3]


def test_a_call_cut_mid_stream_is_removed_and_the_cut_noted() -> None:
    cut = ai(
        "Let me look.",
        invalid_tool_calls=[{"name": "search", "args": '{"q": "wea', "id": "c9", "error": None}],
        response_metadata={"finish_reason": "length"},
    )
    data = dumps(human("weather?"), cut, human("hello?"))
    parsed = lc.parse(data)
    assert parsed.causes == {1: "max_tokens"}
    assert [r for r, _, _ in findings(parsed)] == ["INT-1", "INT-2"]
    out, _ = repaired_round_trip(lc, parsed)
    records = orjson.loads(out)
    assert records[1]["data"]["invalid_tool_calls"] == []
    assert records[1]["data"]["content"] == "Let me look."
    assert records[2]["type"] == "human"
    assert "output token limit" in records[2]["data"]["content"]


def test_a_result_whose_call_is_gone_becomes_a_human_message() -> None:
    data = dumps(human("go"), tool("ghost", "late"), ai("done"))
    parsed = lc.parse(data)
    assert [r for r, _, _ in findings(parsed)] == ["PAIR-3"]
    out, _ = repaired_round_trip(lc, parsed)
    note = orjson.loads(out)[1]
    assert note["type"] == "human" and "late" in note["data"]["content"]


# --- the other forms --------------------------------------------------------------------


def test_messages_to_dict_output_is_read_and_written_back_in_its_form() -> None:
    data = dumps(
        {"type": "system", "data": {"content": "Be brief.", "type": "system"}},
        human("look"),
        ai("", ("c1", "search")),
        {"type": "chat", "data": {"content": "(aside)", "role": "user", "type": "chat"}},
    )
    parsed = lc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["system", "user", "assistant", "user"]
    assert parsed.meta["form"] == "dict"
    out, _ = repaired_round_trip(lc, parsed)
    new = orjson.loads(out)[3]
    assert new["type"] == "tool"
    assert new["data"]["type"] == "tool" and new["data"]["tool_call_id"] == "c1"


def test_message_fields_in_a_checkpoint_are_read() -> None:
    doc = {
        "v": 1,
        "channel_values": {
            "messages": [
                {"content": "hi", "additional_kwargs": {}, "type": "human", "id": "1"},
                {
                    "content": "",
                    "additional_kwargs": {},
                    "response_metadata": {},
                    "type": "ai",
                    "tool_calls": [{"name": "f", "args": {}, "id": "c1", "type": "tool_call"}],
                },
            ]
        },
    }
    parsed = lc.parse(orjson.dumps(doc))
    assert parsed.meta == {"form": "fields", "container": "channel_values.messages"}
    out, _ = repaired_round_trip(lc, parsed)
    written = orjson.loads(out)
    assert written["v"] == 1
    assert written["channel_values"]["messages"][2]["type"] == "tool"


def test_openai_tool_calls_are_read_where_tool_calls_is_missing() -> None:
    old = ai("")
    del old["data"]["tool_calls"]
    old["data"]["additional_kwargs"] = {
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]
    }
    parsed = lc.parse(dumps(human("go"), old, tool("c1")))
    assert parsed.messages[1]["metadata"]["tool_calls"] == [
        {"tool_call_id": "c1", "name": "f", "arguments": "{}"}
    ]
    assert findings(parsed) == []


@pytest.mark.parametrize(
    "data",
    [
        b'[{"role": "user", "content": "hi"}]',
        b'{"messages": []}',
        b'[{"type": "banana", "data": {}}]',
        b'{"hello": "world"}',
    ],
    ids=["chat", "empty", "unknown-type", "no-list"],
)
def test_other_json_is_refused(data: bytes) -> None:
    with pytest.raises(FormatError):
        lc.parse(data)


def test_sniff() -> None:
    assert lc.sniff(read(REACT)) == 0.9
    assert lc.sniff(dumps(human("x"), ai("y"))) == 0.9
    chat = (
        CORPUS
        / "openai-chat"
        / "pydantic-ai__test_openai__test_multiple_agent_tool_calls.extracted.json"
    )
    assert lc.sniff(read(chat)[:65536]) == 0
    responses = (
        CORPUS
        / "responses"
        / "pydantic-ai__test_openai_responses__test_openai_responses_model_retry.extracted.json"
    )
    assert lc.sniff(read(responses)[:65536]) == 0


SEED = dumps(
    {"type": "system", "data": {"content": "Be brief.", "type": "system"}},
    human("look"),
    ai("Two.", ("c1", "search"), ("c2", "read")),
    tool("c1"),
    tool("c2", name="read"),
    ai("done"),
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(REACT), orjson.dumps(orjson.loads(SEED), option=orjson.OPT_INDENT_2)]))
def test_damaged_messages_are_repaired_into_messages_that_need_no_more(data: bytes) -> None:
    check_written_back(data)
