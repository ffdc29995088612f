"""OpenAI Responses: flat items grouped into turns, call ids under either key, written back flat."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inspector import formats
from inspector.engine.providers import check
from inspector.formats import FormatError, responses
from inspector.formats.private import strip_private
from tests import testdata
from tests.engine.helpers import repair_history
from tests.testdata import read

CORPUS = testdata.CORPUS / "responses"
INTERLEAVED = (
    CORPUS / "pydantic-ai__test_deepseek_responses__test_deepseek_responses_rejects_"
    "interleaved_function_calls.extracted.json"
)


def fc(cid: str, name: str = "search", **extra: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": name, "arguments": "{}", **extra}


def out(cid: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": text}


REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"}


def test_sniff_recognises_items():
    assert responses.sniff(orjson.dumps([fc("a"), out("a")])) == 0.8
    assert responses.sniff(b'[{"role": "user", "content": "hi"}]') == 0.0


def test_assistant_side_items_form_one_turn_in_order():
    body = {
        "model": "gpt-5",
        "instructions": "be brief",
        "input": [
            {"role": "user", "content": "hi"},
            REASONING,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "let me"}],
            },
            fc("a", id="fc_1"),
            fc("b"),
            out("b"),
            out("a"),
        ],
    }
    parsed = responses.parse(orjson.dumps(body))
    plain = strip_private(parsed.messages)
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "tool", "tool"]
    assert plain[0] == {"role": "system", "content": "be brief", "metadata": {"instructions": True}}
    assert plain[2]["content"] == [REASONING, {"type": "text", "text": "let me"}]
    assert [c["tool_call_id"] for c in plain[2]["metadata"]["tool_calls"]] == ["a", "b"]
    assert plain[3]["metadata"] == {"tool_call_id": "b", "name": "search"}
    assert parsed.sources == [[0], [1], [2, 3, 4, 5], [6], [7]]
    repaired = repair_history(parsed.messages)
    assert {a.rule for a in repaired.actions} == {"PAIR-2"}
    items = orjson.loads(responses.serialise(repaired.messages, parsed))["input"]
    assert items == [*body["input"][:5], out("a"), out("b")]


def test_second_assistant_message_after_a_call_starts_a_new_turn():
    items = [
        {"role": "assistant", "content": "<think>a</think>"},
        fc("call-a"),
        {"role": "assistant", "content": "<think>b</think>"},
        fc("call-b"),
        out("call-a"),
        out("call-b"),
        {"role": "user", "content": "done?"},
    ]
    parsed = responses.parse(orjson.dumps(items))
    assert [m["role"] for m in parsed.messages] == [
        "assistant",
        "assistant",
        "tool",
        "tool",
        "user",
    ]
    rules = sorted({a.rule for a in repair_history(parsed.messages).actions})
    assert rules == ["PAIR-1", "PAIR-2", "PAIR-3"]


def test_interleaved_recording_shows_the_defect_the_provider_rejected():
    parsed = responses.parse(read(INTERLEAVED))
    assert parsed.meta["response_error"] == "No tool output found for tool call call-a."
    actions = repair_history(parsed.messages).actions
    assert ("PAIR-1", "call-a") in [(a.rule, a.call_id) for a in actions]


def test_writers_that_pair_by_id_are_read_and_written_by_id():
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "id": "x1", "name": "f", "arguments": "{}"},
        {"role": "user", "content": "still there?"},
    ]
    parsed = responses.parse(orjson.dumps(items))
    assert parsed.messages[1]["metadata"]["tool_calls"][0]["tool_call_id"] == "x1"
    repaired = repair_history(parsed.messages).messages
    written = orjson.loads(responses.serialise(repaired, parsed))
    assert written[2] == {
        "type": "function_call_output",
        "call_id": "x1",
        "output": repaired[2]["content"],
    }


def test_custom_tool_call_keeps_free_text_input_and_gets_a_custom_output():
    items = [
        {"role": "user", "content": "patch it"},
        {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** Begin"},
        {"role": "user", "content": "well?"},
    ]
    parsed = responses.parse(orjson.dumps(items))
    call = parsed.messages[1]["metadata"]["tool_calls"][0]
    assert call["arguments"] == {"input": "*** Begin"}
    repaired = repair_history(parsed.messages)
    assert [a.rule for a in repaired.actions] == ["PAIR-1"]  # free text is not a cut call
    written = orjson.loads(responses.serialise(repaired.messages, parsed))
    assert written[1] == items[1]
    assert written[2]["type"] == "custom_tool_call_output" and written[2]["call_id"] == "p1"


def test_unchanged_recording_round_trips_byte_for_byte():
    data = read(INTERLEAVED)
    parsed = responses.parse(data)
    assert responses.serialise(parsed.messages, parsed) == data


def test_response_asking_for_calls_is_pending():
    doc = {
        "interactions": [
            {
                "uri": "https://api.openai.com/v1/responses",
                "request_body": {"input": [{"role": "user", "content": "hi"}]},
                "response_status": 200,
                "response_body": {"status": "completed", "output": [fc("call_7")]},
            }
        ]
    }
    parsed = responses.parse(orjson.dumps(doc))
    assert parsed.meta["pending_calls"] == ["call_7"]
    assert [m["role"] for m in parsed.messages] == ["user"]


def test_bad_items_are_problems_with_their_number():
    parsed = responses.parse(orjson.dumps([{"role": "user", "content": "hi"}, 3, {"foo": 1}]))
    assert [(p.line, p.kind) for p in parsed.problems] == [(2, "unreadable"), (3, "unreadable")]


def test_other_shapes_are_refused():
    with pytest.raises(FormatError, match="gemini shape"):
        responses.parse(b'[{"role": "model", "parts": []}]')
    with pytest.raises(FormatError):
        responses.parse(b'{"messages": []}')


def test_to_wire_writes_items_for_canonical_turns():
    messages = [
        {"role": "system", "content": "sys", "metadata": {}},
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "metadata": {}},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "ok"}],
            "metadata": {"tool_calls": [{"tool_call_id": "a", "name": "f", "arguments": {"q": 1}}]},
        },
        {"role": "tool", "content": "r", "metadata": {"tool_call_id": "a"}},
    ]
    assert responses.to_wire(messages) == {
        "input": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            },
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": '{"q":1}'},
            {"type": "function_call_output", "call_id": "a", "output": "r"},
        ]
    }


# --- other call and output kinds ------------------------------------------------------------


def search_call(cid: str | None, execution: str = "client") -> dict[str, Any]:
    return {
        "type": "tool_search_call",
        "id": f"ts_{cid}",
        "call_id": cid,
        "execution": execution,
        "status": "completed",
        "arguments": {"query": "notes"},
    }


def search_output(cid: str | None, execution: str = "client") -> dict[str, Any]:
    tools = [{"type": "function", "name": "read_note", "parameters": {}}]
    return {
        "type": "tool_search_output",
        "id": f"tso_{cid}",
        "call_id": cid,
        "execution": execution,
        "status": "completed",
        "tools": tools,
    }


def said(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def test_tool_search_output_answers_its_client_tool_search_call():
    items = [
        {"role": "user", "content": "notes?"},
        search_call("c1"),
        search_output("c1"),
        said("ok"),
    ]
    data = orjson.dumps(items)
    parsed = responses.parse(data)
    plain = strip_private(parsed.messages)
    assert [m["role"] for m in plain] == ["user", "assistant", "tool", "assistant"]
    assert plain[1]["metadata"]["tool_calls"][0]["tool_call_id"] == "c1"
    assert plain[2]["metadata"]["tool_call_id"] == "c1"
    assert orjson.loads(plain[2]["content"]) == {"tools": items[2]["tools"]}
    assert repair_history(parsed.messages).actions == []
    assert responses.serialise(parsed.messages, parsed) == data


def test_tool_search_the_server_ran_stays_in_the_assistant_turn():
    items = [
        {"role": "user", "content": "notes?"},
        search_call(None, "server"),
        search_output(None, "server"),
        said("ok"),
    ]
    parsed = responses.parse(orjson.dumps(items))
    plain = strip_private(parsed.messages)
    assert [m["role"] for m in plain] == ["user", "assistant"]
    assert [p["type"] for p in plain[1]["content"]] == [
        "tool_search_call",
        "tool_search_output",
        "text",
    ]
    assert repair_history(parsed.messages).actions == []


def test_missing_tool_search_output_is_written_as_a_tool_search_output():
    items = [{"role": "user", "content": "notes?"}, search_call("c1")]
    parsed = responses.parse(orjson.dumps(items))
    repaired = repair_history(parsed.messages)
    assert [(a.rule, a.call_id) for a in repaired.actions] == [("PAIR-1", "c1")]
    written = orjson.loads(responses.serialise(repaired.messages, parsed))
    assert written[:2] == items
    assert written[2]["type"] == "tool_search_output" and written[2]["call_id"] == "c1"
    again = responses.parse(orjson.dumps(written))
    assert repair_history(again.messages).actions == []


@pytest.mark.parametrize(
    "output",
    [
        {"type": "shell_call_output", "call_id": "c1", "output": [{"stdout": "ok"}]},
        {"type": "future_tool_output", "call_id": "c1", "result": {"ok": True}},
        {"type": "function_call_output", "call_id": "c1", "output": 42},
        {"type": "function_call_output", "call_id": "c1", "output": None},
    ],
    ids=["shell-list", "unknown-kind", "number", "null"],
)
def test_other_output_kinds_and_values_are_read_without_crashing(output):
    call = {"type": "function_call", "call_id": "c1", "name": "go", "arguments": "{}"}
    parsed = responses.parse(orjson.dumps([{"role": "user", "content": "go"}, call, output]))
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "tool"]
    assert repair_history(parsed.messages).actions == []


def test_instructions_go_back_as_instructions_so_the_item_numbers_are_the_files():
    long_id = "call_" + "9" * 70
    body = {
        "model": "gpt-5",
        "instructions": "be brief",
        "input": [{"role": "user", "content": "hi"}, fc(long_id), out(long_id)],
    }
    parsed = responses.parse(orjson.dumps(body))
    wire = formats.to_wire(parsed.messages, "responses")
    assert wire["instructions"] == "be brief"
    assert wire["input"] == body["input"]
    # The provider names the long id at input[1], as the body it was sent has it.
    texts = [p.text for p in check("responses", wire).problems]
    assert texts == [p.text for p in check("responses", body).problems]
    assert texts and "input[1].call_id" in texts[0]
    # A system message that was no body's instructions stays an item.
    plain = [{"role": "system", "content": "be brief", "metadata": {}}, *parsed.messages[1:]]
    assert formats.to_wire(plain, "responses")["input"][0]["role"] == "system"
