"""Anthropic Messages: results split and joined again, system, server tools, traces, streams."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inspector.formats import FormatError, anthropic
from inspector.formats.private import strip_private
from tests import testdata
from tests.engine.helpers import repair_history
from tests.testdata import read

CORPUS = testdata.CORPUS / "anthropic"
TRACE = CORPUS / "badlogic-lemmy-via-zkcpku-claude-trace-dev__test-traffic.jsonl"
PAUSE = CORPUS / "pydantic-ai__test_anthropic__test_pause_turn_web_search_vcr.extracted.json"


def use(tid: str, name: str = "search") -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": {"q": tid}}


def result(tid: str, text: str = "found") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tid, "content": text}


BODY = {
    "model": "claude",
    "max_tokens": 100,
    "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "looking"}, use("t1"), use("t2")],
        },
        {
            "role": "user",
            "content": [result("t1"), result("t2"), {"type": "text", "text": "thanks"}],
        },
        {"role": "assistant", "content": "done"},
    ],
}


def test_sniff_recognises_blocks_and_traces():
    assert anthropic.sniff(orjson.dumps(BODY)) >= 0.75
    assert anthropic.sniff(read(TRACE)[:65536]) >= 0.85
    assert anthropic.sniff(b"[]") == 0.0


def test_tool_results_become_tool_messages_and_system_a_leading_message():
    parsed = anthropic.parse(orjson.dumps(BODY))
    plain = strip_private(parsed.messages)
    assert [m["role"] for m in plain] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
    ]
    assert plain[0]["content"] == [{"type": "text", "text": "be brief"}]
    assert plain[2]["metadata"]["tool_calls"] == [
        {"tool_call_id": "t1", "name": "search", "arguments": {"q": "t1"}},
        {"tool_call_id": "t2", "name": "search", "arguments": {"q": "t2"}},
    ]
    assert plain[3] == {
        "role": "tool",
        "content": "found",
        "metadata": {"tool_call_id": "t1", "name": "search"},
    }
    assert parsed.sources == [[0], [1], [2], [3], [3], [3], [4]]
    assert repair_history(parsed.messages).actions == []


def test_unchanged_body_round_trips_byte_for_byte():
    data = orjson.dumps(BODY, option=orjson.OPT_INDENT_2)
    parsed = anthropic.parse(data)
    assert anthropic.serialise(parsed.messages, parsed) == data


def test_healed_result_joins_the_results_message_first_and_marks_an_error():
    body = dict(BODY)
    body["messages"] = [
        *BODY["messages"][:2],
        {"role": "user", "content": [result("t2"), {"type": "text", "text": "and?"}]},
    ]
    parsed = anthropic.parse(orjson.dumps(body))
    repaired = repair_history(parsed.messages).messages
    out = orjson.loads(anthropic.serialise(repaired, parsed))
    assert out["system"] == BODY["system"]  # untouched, cache_control kept
    assert out["messages"][:2] == body["messages"][:2]
    blocks = out["messages"][2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert blocks[0]["tool_use_id"] == "t1" and blocks[0]["is_error"] is True
    assert blocks[1] == result("t2")
    assert len(out["messages"]) == 3


def test_renamed_ids_keep_the_block_order_of_the_source():
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use("same")]},
            {"role": "user", "content": [result("same")]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "a"},
                    use("same"),
                    {"type": "text", "text": "b"},
                ],
            },
            {"role": "user", "content": [result("same")]},
        ],
    }
    parsed = anthropic.parse(orjson.dumps(body))
    repaired = repair_history(parsed.messages)
    assert {a.rule for a in repaired.actions} == {"ID-1"}
    out = orjson.loads(anthropic.serialise(repaired.messages, parsed))
    assert [b.get("id", b.get("text")) for b in out["messages"][3]["content"]] == [
        "a",
        "same_1",
        "b",
    ]
    assert out["messages"][4]["content"][0]["tool_use_id"] == "same_1"


def test_server_tools_stay_content_and_a_pause_is_reported():
    parsed = anthropic.parse(read(PAUSE))
    assert all("tool_calls" not in m["metadata"] for m in parsed.messages)
    assert parsed.meta["paused_server_tools"] == [
        {
            "message": 1,
            "id": "srvtoolu_01RGq5wiPsxhz5Wk3Nj1w2JU",
            "name": "web_search",
            "result_in": 2,
        }
    ]
    assert repair_history(parsed.messages).actions == []


def test_response_asking_for_tool_use_is_pending():
    doc = {
        "interactions": [
            {
                "uri": "https://api.anthropic.com/v1/messages",
                "request_body": {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
                "response_status": 200,
                "response_body": {
                    "role": "assistant",
                    "content": [use("toolu_5")],
                    "stop_reason": "tool_use",
                },
            }
        ]
    }
    parsed = anthropic.parse(orjson.dumps(doc))
    assert len(parsed.messages) == 1
    assert parsed.meta["pending_calls"] == ["toolu_5"]


def test_trace_reads_the_last_main_loop_request_and_its_streamed_response():
    parsed = anthropic.parse(read(TRACE))
    assert parsed.meta["container"] == "claude-trace"
    assert parsed.meta["line"] == 64
    assert parsed.messages[-1]["role"] == "assistant"
    assert parsed.messages[-1]["content"]  # assembled from the event stream
    earlier = anthropic.parse(read(TRACE), conversation=9)
    assert earlier.meta["line"] < 64


def stream(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}\n\n" for e in events)


CUT = stream(
    {"type": "message_start", "message": {"role": "assistant", "content": []}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "On it"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": use("toolu_9", "create_ticket")},
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"title": "Mar'},
    },
)


def trace(body_raw: str) -> bytes:
    request = {
        "body": {"tools": [], "max_tokens": 9, "messages": [{"role": "user", "content": "go"}]}
    }
    line = {"request": request, "response": {"status_code": 200, "body_raw": body_raw}}
    return orjson.dumps(line) + b"\n"


def test_cut_stream_keeps_the_prose_and_the_partial_call_is_removed():
    data = trace(CUT)
    parsed = anthropic.parse(data)
    assistant = parsed.messages[-1]
    assert assistant["content"] == [{"type": "text", "text": "On it"}]
    assert assistant["metadata"]["tool_calls"][0]["arguments"] == '{"title": "Mar'
    assert parsed.causes == {1: "stream_ended"}
    repaired = repair_history(parsed.messages, causes=parsed.causes)
    assert [a.rule for a in repaired.actions] == ["INT-1", "INT-2"]
    out = anthropic.serialise(repaired.messages, parsed)
    lines = out.rstrip(b"\n").split(b"\n")
    assert lines[0] == data.rstrip(b"\n")  # the capture itself is untouched
    written = orjson.loads(lines[1])["request"]["body"]["messages"]
    assert written[1] == {"role": "assistant", "content": [{"type": "text", "text": "On it"}]}
    assert "interrupted" in written[2]["content"]


def test_complete_stream_assembles_tool_input():
    events = stream(
        {"type": "message_start", "message": {"role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": use("toolu_1")},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"q": '},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '"x"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}},
        {"type": "message_stop"},
    )
    parsed = anthropic.parse(trace(events))
    assert parsed.messages[-1]["metadata"]["tool_calls"][0]["arguments"] == {"q": "x"}
    assert parsed.causes == {1: "max_tokens"}


def test_chat_lists_are_refused():
    chat = [
        {"role": "assistant", "tool_calls": [{"id": "a"}]},
        {"role": "tool", "tool_call_id": "a"},
    ]
    with pytest.raises(FormatError, match="openai-chat shape"):
        anthropic.parse(orjson.dumps(chat))


def test_to_wire_groups_results_and_drops_what_the_api_refuses():
    messages = [
        {"role": "system", "content": "sys", "metadata": {}},
        {"role": "user", "content": [{"type": "text", "text": ""}], "metadata": {}},
        {
            "role": "assistant",
            "content": [{"type": "reasoning", "summary": []}, {"type": "text", "text": "hm"}],
            "metadata": {
                "tool_calls": [{"tool_call_id": "a", "name": "f", "arguments": '{"x": 1'}]
            },
        },
        {"role": "tool", "content": "r", "metadata": {"tool_call_id": "a", "healed": True}},
        {"role": "user", "content": "[note]", "metadata": {"note": "interruption"}},
    ]
    wire = anthropic.to_wire(messages)
    assert wire["system"] == "sys"
    assert wire["messages"] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "hm"},
                {"type": "tool_use", "id": "a", "name": "f", "input": {"raw_arguments": '{"x": 1'}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "r", "is_error": True},
                {"type": "text", "text": "[note]"},
            ],
        },
    ]


def test_trace_lines_that_are_not_exchanges_are_reported():
    data = orjson.dumps({"note": "proxy restarted"}) + b"\n" + trace(CUT) + b"{broken\n"
    parsed = anthropic.parse(data)
    assert [(p.line, p.kind) for p in parsed.problems] == [(1, "skipped"), (3, "unreadable")]


# --- odd but real values ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [(3, "3"), (1.5, "1.5"), (True, "true"), (False, "false"), (None, ""), ({"n": 1}, '{"n":1}')],
    ids=["int", "float", "true", "false", "null", "object"],
)
def test_tool_result_content_that_is_not_text_or_blocks_is_read_as_text(value, text):
    body = {
        "messages": [
            {"role": "user", "content": "add"},
            {"role": "assistant", "content": [use("t1", "calc"), use("t2", "calc")]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": value}],
            },
        ]
    }
    data = orjson.dumps(body)
    parsed = anthropic.parse(data)
    assert strip_private(parsed.messages)[2] == {
        "role": "tool",
        "content": text,
        "metadata": {"tool_call_id": "t1", "name": "calc"},
    }
    assert anthropic.serialise(parsed.messages, parsed) == data
    # Repaired (t2 never answered), the odd value is written back as it was.
    repaired = repair_history(parsed.messages)
    assert [(a.rule, a.call_id) for a in repaired.actions] == [("PAIR-1", "t2")]
    written = orjson.loads(anthropic.serialise(repaired.messages, parsed))
    blocks = written["messages"][2]["content"]
    assert blocks[0] == body["messages"][2]["content"][0]
    assert blocks[1]["tool_use_id"] == "t2" and blocks[1]["is_error"] is True


# The API combines consecutive assistant messages into one turn (pydantic-ai's
# cross-provider replays, answered 200): one call in each, both answered after them.
RUN_BODY = {
    "messages": [
        {"role": "user", "content": "refund?"},
        {"role": "assistant", "content": [{"type": "text", "text": "loading"}, use("t1", "load")]},
        {"role": "assistant", "content": [use("t2")]},
        {"role": "user", "content": [result("t1"), result("t2")]},
    ],
}


def test_consecutive_assistant_messages_are_read_as_the_one_turn_the_api_makes():
    data = orjson.dumps(RUN_BODY)
    parsed = anthropic.parse(data)
    roles = [m["role"] for m in parsed.messages]
    assert roles == ["user", "assistant", "tool", "tool"]
    assert [c["tool_call_id"] for c in parsed.messages[1]["metadata"]["tool_calls"]] == ["t1", "t2"]
    assert parsed.sources[1] == [2, 3]  # both records
    assert repair_history(parsed.messages).actions == []
    assert anthropic.serialise(parsed.messages, parsed) == data


def test_a_repaired_run_is_written_back_as_the_records_it_was_read_from():
    body = {"messages": [*RUN_BODY["messages"], {"role": "assistant", "content": [use("t3")]}]}
    parsed = anthropic.parse(orjson.dumps(body))
    repaired = repair_history(parsed.messages)
    assert [a.rule for a in repaired.actions] == ["PAIR-1"]  # only the last call
    out = orjson.loads(anthropic.serialise(repaired.messages, parsed))
    assert out["messages"][:4] == RUN_BODY["messages"]  # both records as they were
    assert out["messages"][4] == body["messages"][4]
    assert out["messages"][5]["content"][0]["tool_use_id"] == "t3"


def test_renamed_ids_in_a_run_go_back_to_the_record_that_held_each_call():
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use("same")]},
            {"role": "user", "content": [result("same")]},
            {"role": "assistant", "content": "next"},
            {"role": "assistant", "content": [use("same"), use("other")]},
            {"role": "user", "content": [result("same"), result("other")]},
        ],
    }
    parsed = anthropic.parse(orjson.dumps(body))
    repaired = repair_history(parsed.messages)
    assert {a.rule for a in repaired.actions} == {"ID-1"}
    out = orjson.loads(anthropic.serialise(repaired.messages, parsed))
    assert out["messages"][3] == {"role": "assistant", "content": "next"}  # a text stays a text
    assert [b["id"] for b in out["messages"][4]["content"]] == ["same_1", "other"]
    assert [b["tool_use_id"] for b in out["messages"][5]["content"]] == ["same_1", "other"]
    assert len(out["messages"]) == 6


def test_a_blank_assistant_message_is_not_joined_and_is_still_dropped():
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use("t1")]},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": [result("t1")]},
        ],
    }
    parsed = anthropic.parse(orjson.dumps(body))
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "assistant", "tool"]
