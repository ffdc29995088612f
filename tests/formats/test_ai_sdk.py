"""Vercel AI SDK UIMessage and ModelMessage lists: steps, tool parts, repairs written back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FormatError, load
from inspector.formats import ai_sdk as ai
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    outline,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

LISTS = files(CORPUS / "ai-sdk")
FOLDER = CORPUS / "ai-sdk"
UI = (
    FOLDER / "vercel-ai__convert-to-model-messages.test__multiple-tool-invocations.ui-messages.json"
)
SNAP = "vercel-ai__convert-to-model-messages.test.snap"
MODEL = FOLDER / f"{SNAP}__multiple-tool-invocations.model-messages.json"
APPEND = "vercel-ai__append-response-messages.test.snap"
UI_V4 = FOLDER / f"{APPEND}__chain-of-assistant-messages.ui-messages-v4.json"


def _id(path: Path) -> str:
    return path.name


def tool_part(call_id: str, state: str = "output-available", **extra: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool-search", "toolCallId": call_id, "state": state}
    part["input"] = {"q": call_id}
    if state == "output-available":
        part["output"] = "found"
    return {**part, **extra}


def ui_list(*parts: dict[str, Any]) -> bytes:
    return orjson.dumps(
        [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "look"}]},
            {"id": "a1", "role": "assistant", "parts": list(parts)},
        ]
    )


# --- the corpus ------------------------------------------------------------------------


@pytest.mark.parametrize("path", LISTS, ids=_id)
def test_list_loads_as_ai_sdk_and_round_trips_byte_for_byte(path: Path) -> None:
    data = read(path)
    parsed = load(data)
    assert parsed.format == "ai-sdk"
    assert parsed.problems == []
    assert ai.serialise(parsed.messages, parsed) == data
    assert findings(parsed) == []


def test_ui_steps_read_as_the_model_messages_the_sdk_makes_of_them() -> None:
    """convertToModelMessages turned the UI list into the model list: both read the same."""
    assert outline(ai.parse(read(UI)).messages) == outline(ai.parse(read(MODEL)).messages)
    parsed = ai.parse(read(UI))
    assert parsed.meta == {"kind": "ui", "version": 5}
    assert [m["role"] for m in parsed.messages][:3] == ["assistant", "tool", "assistant"]


def test_ai_sdk_4_tool_invocations_are_read() -> None:
    parsed = ai.parse(read(UI_V4))
    assert parsed.meta == {"kind": "ui", "version": 4}
    assert outline(parsed.messages)[1:3] == [
        ("assistant", "", (("call-1", "some-tool"),)),
        ("tool", "call-1", '{"answer":"Tool result data"}'),
    ]


# --- broken variants --------------------------------------------------------------------


def test_a_ui_tool_part_left_waiting_is_completed_with_an_error() -> None:
    doc = orjson.loads(read(UI))
    part = doc[0]["parts"][4]
    assert part["toolCallId"] == "call-3"
    doc[0]["parts"][4] = {k: v for k, v in part.items() if k != "output"} | {
        "state": "input-available"
    }
    parsed = ai.parse(orjson.dumps(doc))
    assert findings(parsed) == [("PAIR-1", [1], "call-3")]
    data, _ = repaired_round_trip(ai, parsed)
    written = orjson.loads(data)
    fixed = written[0]["parts"][4]
    assert fixed["state"] == "output-error"
    assert fixed["errorText"].startswith("Tool call was interrupted; no result.")
    assert fixed["input"] == {"value": "value-3"} and "output" not in fixed
    assert written[0]["parts"][:4] == doc[0]["parts"][:4]
    assert written[1] == doc[1]


def test_a_streaming_part_marks_its_step_cut_and_is_completed() -> None:
    parsed = ai.parse(ui_list({"type": "step-start"}, tool_part("c1", "input-streaming")))
    assert parsed.causes == {1: "stream_ended"}
    data, _ = repaired_round_trip(ai, parsed)
    assert orjson.loads(data)[1]["parts"][1]["state"] == "output-error"


def test_a_part_awaiting_approval_never_ran() -> None:
    part = tool_part("c1", "approval-requested", approval={"id": "ap-1"})
    parsed = ai.parse(ui_list(part))
    assert parsed.not_started == {"c1"}
    data, _ = repaired_round_trip(ai, parsed)
    assert "never started" in orjson.loads(data)[1]["parts"][0]["errorText"]
    assert "approval" not in orjson.loads(data)[1]["parts"][0]


def test_a_denied_part_is_an_error_result_that_never_ran() -> None:
    part = tool_part(
        "c1", "output-denied", approval={"id": "ap", "approved": False, "reason": "no"}
    )
    parsed = ai.parse(ui_list(part))
    assert outline(parsed.messages)[-1] == ("tool", "c1", "no")
    assert parsed.messages[-1]["metadata"]["is_error"] is True
    assert findings(parsed) == []


def test_a_repeated_ui_call_id_is_renamed_in_its_part() -> None:
    data = ui_list(tool_part("c1"), {"type": "step-start"}, tool_part("c1"))
    parsed = ai.parse(data)
    assert {r for r, _, _ in findings(parsed)} == {"ID-1"}
    out, _ = repaired_round_trip(ai, parsed)
    parts = orjson.loads(out)[1]["parts"]
    assert [p.get("toolCallId") for p in parts] == ["c1", None, "c1_1"]


def test_an_ai_sdk_4_call_gets_a_result_state() -> None:
    doc = orjson.loads(read(UI_V4))
    invocation = doc[1]["parts"][3]["toolInvocation"]
    invocation["state"] = "call"
    del invocation["result"]
    parsed = ai.parse(orjson.dumps(doc))
    assert findings(parsed) == [("PAIR-1", [2], "call-2")]
    data, _ = repaired_round_trip(ai, parsed)
    fixed = orjson.loads(data)[1]["parts"][3]["toolInvocation"]
    assert fixed["state"] == "result"
    assert fixed["result"].startswith("Tool call was interrupted")


def test_a_lost_model_result_is_put_back_in_its_tool_message() -> None:
    doc = orjson.loads(read(MODEL))
    del doc[3]["content"][1]  # call-3's result
    parsed = ai.parse(orjson.dumps(doc))
    assert findings(parsed) == [("PAIR-1", [3], "call-3")]
    data, _ = repaired_round_trip(ai, parsed)
    written = orjson.loads(data)
    assert len(written) == len(doc)
    results = written[3]["content"]
    assert results[0] == doc[3]["content"][0]
    assert results[1]["toolCallId"] == "call-3" and results[1]["toolName"] == "screenshot"
    assert results[1]["output"]["type"] == "error-text"


def test_a_model_call_with_no_tool_message_gets_one() -> None:
    doc = orjson.loads(read(MODEL))
    del doc[1]
    parsed = ai.parse(orjson.dumps(doc))
    data, _ = repaired_round_trip(ai, parsed)
    written = orjson.loads(data)
    assert written[1]["role"] == "tool"
    assert written[1]["content"][0]["toolCallId"] == "call-1"


def test_a_model_result_whose_call_is_gone_becomes_a_user_message() -> None:
    doc = orjson.loads(read(MODEL))
    del doc[2]  # the assistant message of call-2 and call-3
    parsed = ai.parse(orjson.dumps(doc))
    assert {r for r, _, _ in findings(parsed)} == {"PAIR-3"}
    data, again = repaired_round_trip(ai, parsed)
    assert [m["role"] for m in orjson.loads(data)][:4] == ["assistant", "tool", "user", "user"]
    assert again.format == "ai-sdk"


# --- not an AI SDK list -----------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'[{"role": "user", "content": "hi"}]',
        b'{"messages": []}',
        b'[{"role": "user", "parts": [{"text": "hi"}]}]',
        b'{"hello": "world"}',
    ],
    ids=["chat", "empty", "gemini", "no-list"],
)
def test_other_json_is_refused(data: bytes) -> None:
    with pytest.raises(FormatError):
        ai.parse(data)


def test_sniff() -> None:
    assert ai.sniff(read(UI)) == 0.9
    assert ai.sniff(read(MODEL)) == 0.9
    gemini = CORPUS / "gemini" / "kvsankar-agent-history__gemini_cli_golden.json"
    assert ai.sniff(read(gemini)) == 0
    chat = (
        CORPUS
        / "openai-chat"
        / "pydantic-ai__test_openai__test_multiple_agent_tool_calls.extracted.json"
    )
    assert ai.sniff(read(chat)[:65536]) == 0


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(UI), read(MODEL), read(UI_V4)]))
def test_damaged_lists_are_repaired_into_lists_that_need_no_more(data: bytes) -> None:
    check_written_back(data)
