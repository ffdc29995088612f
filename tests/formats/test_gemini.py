"""Gemini contents (ids made up by order and name, never written back) and Gemini CLI sessions."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inspector import formats
from inspector.engine.providers import check
from inspector.formats import FormatError, gemini
from inspector.formats.private import strip_private
from tests import testdata
from tests.engine.helpers import repair_history
from tests.testdata import read

CORPUS = testdata.CORPUS / "gemini"
STREAMED = (
    CORPUS
    / "pydantic-ai__test_google__test_google_streaming_tool_call_thought_signature.extracted.json"
)
CLI_LINES = CORPUS / "kvsankar-agent-history__gemini_cli_with_tool_error.jsonl"


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def call(name: str, **extra: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": {"n": name}, **extra}}


def response(name: str, **extra: Any) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"output": name.upper()}, **extra}}


def body(*contents: dict[str, Any], **extra: Any) -> bytes:
    return orjson.dumps({"contents": list(contents), **extra})


def test_sniff_recognises_contents_and_cli_sessions():
    assert gemini.sniff(body({"role": "user", "parts": [text("hi")]})) == 0.8
    assert gemini.sniff(read(CLI_LINES)) == 0.9
    assert gemini.sniff(b'[{"role": "user", "content": "hi"}]') == 0.0


def test_calls_without_ids_pair_with_responses_by_order_and_name():
    data = body(
        {"role": "user", "parts": [text("hi")]},
        {"role": "model", "parts": [call("a"), call("b"), call("a")]},
        {"role": "user", "parts": [response("b"), response("a"), response("a")]},
    )
    parsed = gemini.parse(data)
    calls = parsed.messages[1]["metadata"]["tool_calls"]
    assert [c["tool_call_id"] for c in calls] == ["call_1_0", "call_1_1", "call_1_2"]
    results = [m["metadata"]["tool_call_id"] for m in parsed.messages[2:]]
    assert results == ["call_1_1", "call_1_0", "call_1_2"]
    assert parsed.state["synthetic_ids"] == {"call_1_0", "call_1_1", "call_1_2"}
    assert parsed.messages[2]["content"] == '{"output":"B"}'


def test_made_up_ids_are_never_written_back():
    data = body(
        {"role": "user", "parts": [text("hi")]},
        {"role": "model", "parts": [call("a"), call("b")]},
        {"role": "user", "parts": [response("b")]},
        {"role": "model", "parts": [text("done")]},
    )
    parsed = gemini.parse(data)
    repaired = repair_history(parsed.messages)
    assert [(a.rule, a.call_id) for a in repaired.actions] == [("PAIR-1", "call_1_0")]
    written = orjson.loads(gemini.serialise(repaired.messages, parsed))["contents"]
    assert written[1] == {"role": "model", "parts": [call("a"), call("b")]}
    assert written[2]["parts"][0] == {
        "functionResponse": {
            "name": "a",
            "response": {"error": repaired.messages[2]["content"]},
        }
    }
    assert written[2]["parts"][1] == response("b")
    assert (
        repair_history(gemini.parse(gemini.serialise(repaired.messages, parsed)).messages).actions
        == []
    )


def test_real_ids_are_kept():
    data = body(
        {"role": "user", "parts": [text("hi")]},
        {"role": "model", "parts": [call("a", id="x1")]},
        {"role": "user", "parts": [response("a", id="x1")]},
    )
    parsed = gemini.parse(data)
    assert parsed.messages[2]["metadata"]["tool_call_id"] == "x1"
    assert parsed.state["synthetic_ids"] == set()


def test_user_turn_with_responses_and_text_splits_and_joins_again():
    data = body(
        {"role": "user", "parts": [text("hi")]},
        {"role": "model", "parts": [call("a")]},
        {"role": "user", "parts": [response("a"), text("also this")]},
        systemInstruction={"parts": [text("be brief")]},
    )
    parsed = gemini.parse(data)
    roles = [m["role"] for m in parsed.messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert parsed.messages[0]["content"] == "be brief"
    assert gemini.serialise(parsed.messages, parsed) == data
    changed = [
        *parsed.messages[:4],
        {**parsed.messages[4], "content": [{"type": "text", "text": "edited"}]},
    ]
    written = orjson.loads(gemini.serialise(changed, parsed))
    assert written["contents"][2]["parts"] == [response("a"), text("edited")]
    assert written["systemInstruction"] == {"parts": [text("be brief")]}


def test_streamed_response_text_is_glued_back_together():
    parsed = gemini.parse(read(STREAMED))
    last = parsed.messages[-1]
    assert last["role"] == "assistant"
    assert last["content"][0]["text"].startswith("The capital of Mexico")
    assert len([p for p in last["content"] if p["type"] == "text"]) == 1


def test_response_asking_for_calls_is_pending():
    doc = {
        "interactions": [
            {
                "uri": "https://generativelanguage.googleapis.com/v1beta/models/x:generateContent",
                "request_body": {"contents": [{"role": "user", "parts": [text("hi")]}]},
                "response_status": 200,
                "response_body": {
                    "candidates": [
                        {"content": {"role": "model", "parts": [call("f")]}, "finishReason": "STOP"}
                    ]
                },
            }
        ]
    }
    parsed = gemini.parse(orjson.dumps(doc))
    assert parsed.meta["pending_calls"] == ["f"]
    assert len(parsed.messages) == 1


def test_bad_turns_are_problems_with_their_number():
    data = body({"role": "user", "parts": [text("hi")]}, {"role": "user"}, "x")
    parsed = gemini.parse(data)
    assert [p.line for p in parsed.problems] == [2, 3]


def test_other_shapes_are_refused():
    with pytest.raises(FormatError, match="no 'contents'"):
        gemini.parse(b'{"messages": [{"role": "user", "content": "hi"}]}')


CLI = {
    "sessionId": "s1",
    "projectHash": "h",
    "messages": [
        {"id": "u1", "timestamp": "t1", "type": "user", "content": "read both"},
        {
            "id": "g1",
            "timestamp": "t2",
            "type": "gemini",
            "content": "",
            "toolCalls": [
                {"id": "read-1", "name": "read_file", "args": {"p": "a"}, "status": "cancelled"},
                {
                    "id": "read-2",
                    "name": "read_file",
                    "args": {"p": "b"},
                    "result": [
                        {
                            "functionResponse": {
                                "id": "read-2",
                                "name": "read_file",
                                "response": {"output": "B"},
                            }
                        }
                    ],
                    "status": "success",
                },
            ],
        },
        {"id": "i1", "timestamp": "t3", "type": "info", "content": "note"},
        {"id": "u2", "timestamp": "t4", "type": "user", "content": "thanks"},
    ],
}


def test_cli_tool_calls_become_calls_and_results():
    parsed = gemini.parse(orjson.dumps(CLI))
    plain = strip_private(parsed.messages)
    assert [m["role"] for m in plain] == ["user", "assistant", "tool", "user"]
    assert [c["tool_call_id"] for c in plain[1]["metadata"]["tool_calls"]] == ["read-1", "read-2"]
    assert plain[2] == {
        "role": "tool",
        "content": '{"output":"B"}',
        "metadata": {"tool_call_id": "read-2", "name": "read_file"},
    }
    assert parsed.sources == [[1], [2], [2], [4]]
    assert parsed.not_started == {"read-1"}  # declined, so it never ran


def test_cli_repair_nests_the_result_in_its_call_and_keeps_other_records():
    parsed = gemini.parse(orjson.dumps(CLI))
    repaired = repair_history(parsed.messages, not_started=parsed.not_started)
    assert [a.rule for a in repaired.actions] == ["PAIR-1"]
    assert repaired.messages[2]["metadata"]["outcome"] == "not_started"
    written = orjson.loads(gemini.serialise(repaired.messages, parsed))
    records = written["messages"]
    assert [r["id"] for r in records] == ["u1", "g1", "i1", "u2"]
    first = records[1]["toolCalls"][0]
    assert first["result"][0]["functionResponse"]["response"] == {
        "error": repaired.messages[2]["content"]
    }
    assert records[1]["toolCalls"][1] == CLI["messages"][1]["toolCalls"][1]
    assert repair_history(gemini.parse(orjson.dumps(written)).messages).actions == []


def test_cli_json_lines_round_trip_byte_for_byte():
    data = read(CLI_LINES)
    parsed = gemini.parse(data)
    assert parsed.meta["container"] == "cli-lines"
    assert parsed.sources[0] == [2]
    assert gemini.serialise(parsed.messages, parsed) == data


def test_claude_code_lines_are_not_mistaken_for_a_cli_session():
    line = {"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": []}}
    with pytest.raises(FormatError):
        gemini.parse(
            orjson.dumps({"type": "user", "sessionId": "s"}) + b"\n" + orjson.dumps(line) + b"\n"
        )


def test_to_wire_alternates_turns_and_never_starts_with_a_call():
    messages = [
        {"role": "system", "content": "sys", "metadata": {}},
        {
            "role": "assistant",
            "content": "",
            "metadata": {
                "tool_calls": [{"tool_call_id": "a", "name": "f", "arguments": '{"x": 1}'}]
            },
        },
        {"role": "tool", "content": '{"v": 2}', "metadata": {"tool_call_id": "a"}},
        {"role": "user", "content": "[note]", "metadata": {}},
        {"role": "system", "content": "later rule", "metadata": {}},
    ]
    wire = gemini.to_wire(messages)
    assert wire["systemInstruction"] == {"parts": [{"text": "sys"}]}
    assert [c["role"] for c in wire["contents"]] == ["user", "model", "user"]
    assert wire["contents"][1]["parts"] == [
        {"functionCall": {"id": "a", "name": "f", "args": {"x": 1}}}
    ]
    assert wire["contents"][2]["parts"] == [
        {"functionResponse": {"id": "a", "name": "f", "response": {"v": 2}}},
        {"text": "[note]"},
        {"text": "[system message]\nlater rule"},
    ]


def test_cli_record_of_unknown_type_is_reported_not_dropped_silently():
    doc = {**CLI, "messages": [*CLI["messages"], {"id": "z", "type": "compression"}]}
    parsed = gemini.parse(orjson.dumps(doc))
    assert [(p.line, p.kind) for p in parsed.problems] == [(5, "skipped")]
    assert "'compression'" in parsed.problems[0].reason


# --- thoughtSignature: kept on the parts it was read with, never made up -------------------


def signed(part: dict[str, Any], signature: str = "c2lnLWE=") -> dict[str, Any]:
    return {**part, "thoughtSignature": signature}


def test_a_calls_signature_goes_out_with_it():
    data = body(
        {"role": "user", "parts": [text("hi")]},
        {"role": "model", "parts": [signed(call("a", id="x1")), call("b", id="x2")]},
        {"role": "user", "parts": [response("a", id="x1"), response("b", id="x2")]},
    )
    parsed = gemini.parse(data)
    calls = parsed.messages[1]["metadata"]["tool_calls"]
    assert [c.get("thought_signature") for c in calls] == ["c2lnLWE=", None]
    contents = formats.to_wire(parsed.messages, "gemini")["contents"]
    assert contents == orjson.loads(data)["contents"]
    # Gemini 3 refuses the current turn's calls unsigned; as exported they are signed.
    assert check("gemini", {"contents": contents}, model="gemini-3-pro-preview").accepted


def test_signatures_stay_on_their_calls_after_repair():
    data = body(
        {"role": "user", "parts": [text("hi")]},
        {"role": "model", "parts": [signed(call("a", id="x1")), call("b", id="x2")]},
        {"role": "user", "parts": [response("b", id="x2")]},
        {"role": "model", "parts": [signed(call("c", id="x1"), "c2lnLWM=")]},
    )
    parsed = gemini.parse(data)
    repaired = repair_history(parsed.messages)
    # x1's result is missing (PAIR-1) and x1 is used again (ID-1).
    assert {a.rule for a in repaired.actions} >= {"PAIR-1", "ID-1"}
    exported, _ = formats.export_wire(repaired.messages, "gemini")
    written = orjson.loads(gemini.serialise(repaired.messages, parsed))["contents"]
    for contents in (exported["contents"], written):
        calls = [p for turn in contents for p in turn["parts"] if "functionCall" in p]
        assert [(p["functionCall"]["id"], p.get("thoughtSignature")) for p in calls] == [
            ("x1", "c2lnLWE="),
            ("x2", None),
            ("x1_1", "c2lnLWM="),
        ]
        assert check("gemini", {"contents": contents}, model="gemini-3-pro-preview").accepted


def test_a_text_parts_signature_goes_out_with_it_even_when_the_text_is_empty():
    data = body(
        {"role": "user", "parts": [text("hi")]},
        {"role": "model", "parts": [signed(text("Mexico City.")), signed(text(""), "ZW5k")]},
        {"role": "user", "parts": [text("thanks")]},
        {"role": "model", "parts": [text("you are welcome"), text("")]},
    )
    parsed = gemini.parse(data)
    assert parsed.messages[1]["content"][0] == {
        "type": "text",
        "text": "Mexico City.",
        "thought_signature": "c2lnLWE=",
    }
    contents = formats.to_wire(parsed.messages, "gemini")["contents"]
    assert contents[1]["parts"] == [signed(text("Mexico City.")), signed(text(""), "ZW5k")]
    assert contents[3]["parts"] == [text("you are welcome")]  # an empty text alone is left out


def test_a_signature_is_never_made_up():
    data = body(
        {"role": "user", "parts": [text("hi")]},
        {"role": "model", "parts": [text("let me see"), call("a"), call("b")]},
    )
    parsed = gemini.parse(data)
    repaired = repair_history(parsed.messages).messages
    exported, _ = formats.export_wire(repaired, "gemini")
    written = orjson.loads(gemini.serialise(repaired, parsed))["contents"]
    for contents in (exported["contents"], written):
        assert [len(turn["parts"]) for turn in contents] == [1, 3, 2]
        assert b"ignature" not in orjson.dumps(contents)
    # A call another provider made has none either.
    messages = [
        {"role": "user", "content": "hi", "metadata": {}},
        {
            "role": "assistant",
            "content": "ok",
            "metadata": {"tool_calls": [{"tool_call_id": "toolu_1", "name": "f", "arguments": {}}]},
        },
        {"role": "tool", "content": "{}", "metadata": {"tool_call_id": "toolu_1"}},
    ]
    assert b"ignature" not in orjson.dumps(formats.to_wire(messages, "gemini"))


def test_the_signature_read_snake_case_is_written_back_as_it_was():
    part = {"functionCall": {"name": "a", "args": {}}, "thought_signature": "c25ha2U="}
    data = body({"role": "user", "parts": [text("hi")]}, {"role": "model", "parts": [part]})
    parsed = gemini.parse(data)
    repaired = repair_history(parsed.messages).messages
    written = orjson.loads(gemini.serialise(repaired, parsed))["contents"]
    assert written[1]["parts"] == [part]
    exported = formats.to_wire(repaired, "gemini")["contents"]
    assert exported[1]["parts"][0]["thoughtSignature"] == "c25ha2U="


def test_a_streamed_calls_signature_goes_out_with_it():
    parsed = gemini.parse(read(STREAMED))
    contents = formats.to_wire(parsed.messages, "gemini")["contents"]
    calls = [p for turn in contents for p in turn["parts"] if "functionCall" in p]
    assert len(calls) == 1 and calls[0]["thoughtSignature"].startswith("EpwICpkIAXLI2nxl")


ORACLE_CASES = testdata.files(testdata.ORACLE / "gemini")


def _call_signatures(contents: list[Any]) -> list[Any]:
    """The signature of every function call part of a model turn, in order."""
    return [
        part.get("thoughtSignature")
        for turn in contents
        if isinstance(turn, dict) and turn.get("role") == "model"
        for part in turn.get("parts") or ()
        if isinstance(part, dict) and isinstance(part.get("functionCall"), dict)
    ]


@pytest.mark.parametrize("path", ORACLE_CASES, ids=[p.name[:80] for p in ORACLE_CASES])
def test_an_oracle_body_goes_out_with_its_signatures(path):
    case = orjson.loads(read(path))
    request = case["request"]
    try:
        parsed = gemini.parse(orjson.dumps(request))
    except FormatError:
        pytest.skip("not a history reading takes")
    sent = _call_signatures(request["contents"])
    exported = formats.to_wire(parsed.messages, "gemini")
    assert _call_signatures(exported["contents"]) == sent
    repaired = repair_history(parsed.messages).messages
    assert _call_signatures(formats.export_wire(repaired, "gemini")[0]["contents"]) == sent
    model = case.get("model")
    assert (
        check("gemini", exported, model=model).state == check("gemini", request, model=model).state
    )


@pytest.mark.parametrize(
    "path", [*testdata.files(CORPUS), *ORACLE_CASES], ids=lambda p: p.name[:80]
)
def test_an_unchanged_file_round_trips_byte_for_byte(path):
    data = read(path)
    if path.parent.name == "gemini" and path.parent.parent.name == "oracle":
        data = orjson.dumps(orjson.loads(data)["request"], option=orjson.OPT_INDENT_2)
    try:
        parsed = gemini.parse(data)
    except FormatError:
        pytest.skip("not a history reading takes")
    assert gemini.serialise(parsed.messages, parsed) == data


def _call_turn(*names: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"functionCall": {"name": n, "args": {}}} for n in names]}


def _response(name: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": {"name": name, "response": {"ok": 1}}}]}


def test_parallel_calls_answered_in_consecutive_contents_pair_as_gemini_pairs_them() -> None:
    # Three parallel calls answered by three user contents of one response each: Gemini
    # accepts it, so no call is unanswered and no response an orphan.
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            _call_turn("a", "b", "c"),
            _response("a"),
            _response("b"),
            _response("c"),
            {"role": "model", "parts": [{"text": "done"}]},
        ]
    }
    data = orjson.dumps(body)
    assert check("gemini", body).accepted
    parsed = gemini.parse(data)
    calls = parsed.messages[1]["metadata"]["tool_calls"]
    answers = [m["metadata"]["tool_call_id"] for m in parsed.messages if m["role"] == "tool"]
    assert answers == [c["tool_call_id"] for c in calls]
    assert repair_history(parsed.messages).actions == []
    assert gemini.serialise(parsed.messages, parsed) == data


def test_a_response_after_the_users_words_answers_nothing_of_the_turn_before() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            _call_turn("a", "b"),
            _response("a"),
            {"role": "user", "parts": [{"text": "stop"}]},
            _response("b"),
        ]
    }
    parsed = gemini.parse(orjson.dumps(body))
    rules = sorted(a.rule for a in repair_history(parsed.messages).actions)
    assert rules == ["PAIR-1", "PAIR-3"]


def test_consecutive_model_turns_are_read_as_one_turn_as_gemini_takes_them():
    # pydantic-ai's cross-provider replay, answered 200: a call in each of two model
    # turns, both answered by the one user turn after them.
    data = body(
        {"role": "user", "parts": [text("refund?")]},
        {"role": "model", "parts": [call("load", id="c1")]},
        {"role": "model", "parts": [call("search", id="c2")]},
        {"role": "user", "parts": [response("load", id="c1"), response("search", id="c2")]},
    )
    parsed = gemini.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "tool", "tool"]
    assert repair_history(parsed.messages).actions == []
    assert gemini.serialise(parsed.messages, parsed) == data
    longer = orjson.loads(data)
    longer["contents"].append({"role": "model", "parts": [call("more", id="c3")]})
    parsed = gemini.parse(orjson.dumps(longer))
    repaired = repair_history(parsed.messages)
    assert [a.rule for a in repaired.actions] == ["PAIR-1"]
    out = orjson.loads(gemini.serialise(repaired.messages, parsed))
    assert out["contents"][:5] == longer["contents"]  # the two model turns kept apart
