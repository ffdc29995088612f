"""A call with empty arguments, read from each format, is complete in the diagnosis.

SPEC §4 step 1: an empty or all-whitespace ``arguments`` string is no
arguments, as ``{}``. The readers that default a missing ``arguments`` to
``""`` (OpenAI Chat, Responses, Codex) and the shapes that can store ``""``
as the arguments themselves (Anthropic and Claude Code ``input``) must not
turn such a call into a cut one: no INT-1, no interruption note, no call
shown as removed, only the missing result healed (PAIR-1), and the repaired
history passes every provider's check.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inspector import formats
from inspector.diagnosis import Diagnosis, diagnose, repair_parsed
from inspector.engine.providers import PROVIDERS

SESSION = "5e55101d-0000-4000-8000-0000000000e0"


def _chat(arguments: Any) -> bytes:
    function: dict[str, Any] = {"name": "list_files"}
    if arguments is not None:
        function["arguments"] = arguments
    return orjson.dumps(
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "user", "content": "what files are there?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": function}],
                },
                {"role": "user", "content": "hello?"},
            ],
        }
    )


def _responses(arguments: Any) -> bytes:
    item: dict[str, Any] = {"type": "function_call", "call_id": "call_1", "name": "list_files"}
    if arguments is not None:
        item["arguments"] = arguments
    return orjson.dumps(
        {
            "model": "gpt-5",
            "input": [
                {"role": "user", "content": "what files are there?"},
                item,
                {"role": "user", "content": "hello?"},
            ],
        }
    )


def _anthropic(arguments: Any) -> bytes:
    use = {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": arguments}
    return orjson.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "messages": [
                {"role": "user", "content": "what files are there?"},
                {"role": "assistant", "content": [{"type": "text", "text": "Looking."}, use]},
                {"role": "user", "content": "hello?"},
            ],
        }
    )


def _claude_code(arguments: Any) -> bytes:
    def record(kind: str, uid: str, parent: str | None, content: Any, second: int) -> bytes:
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message = {"id": f"msg_{uid}", **message}
        line = {
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": SESSION,
            "type": kind,
            "message": message,
            "uuid": uid,
            "timestamp": f"2026-01-01T00:00:{second:02d}Z",
        }
        return orjson.dumps(line) + b"\n"

    use = {"type": "tool_use", "id": "toolu_1", "name": "LS", "input": arguments}
    return (
        record("user", "u1", None, "what files are there?", 1)
        + record("assistant", "a1", "u1", [use], 2)
        + record("user", "u2", "a1", "hello?", 3)
    )


def _codex(arguments: Any) -> bytes:
    def line(kind: str, payload: dict[str, Any], second: int) -> bytes:
        stamp = f"2026-01-01T00:00:{second:02d}Z"
        return orjson.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + b"\n"

    def message(role: str, kind: str, text: str) -> dict[str, Any]:
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    call: dict[str, Any] = {"type": "function_call", "name": "list_files", "call_id": "call_1"}
    if arguments is not None:
        call["arguments"] = arguments
    return (
        line("session_meta", {"id": "s-1", "cwd": "/repo", "cli_version": "0.77.0"}, 0)
        + line("response_item", message("user", "input_text", "what files are there?"), 1)
        + line("response_item", call, 2)
        + line("response_item", message("user", "input_text", "hello?"), 3)
    )


# (format, how its file is made, arguments as the file holds them: None leaves the key out)
CASES = [
    ("openai-chat", _chat, ""),
    ("openai-chat", _chat, "  "),
    ("openai-chat", _chat, None),
    ("responses", _responses, ""),
    ("responses", _responses, "\n"),
    ("responses", _responses, None),
    ("codex", _codex, ""),
    ("codex", _codex, None),
    ("anthropic", _anthropic, ""),
    ("claude-code", _claude_code, ""),
    ("claude-code", _claude_code, " "),
]


IDS = [
    f"{name}-{'missing' if arguments is None else repr(arguments)}" for name, _, arguments in CASES
]


def _diagnose(name: str, make: Any, arguments: Any) -> Diagnosis:
    parsed = formats.load(make(arguments))
    assert parsed.format == name
    return diagnose(parsed)


@pytest.mark.parametrize(("name", "make", "arguments"), CASES, ids=IDS)
def test_empty_arguments_call_is_not_reported_as_cut(name: str, make: Any, arguments: Any) -> None:
    diagnosis = _diagnose(name, make, arguments)
    assert diagnosis.counts == {"PAIR-1": 1}
    assert {finding["rule"] for finding in diagnosis.findings} == {"PAIR-1"}
    calls = [call for row in diagnosis.rows for call in row["calls"]]
    assert len(calls) == 1
    assert calls[0]["removed"] is False
    assert not any(row["state"] == "dropped" for row in diagnosis.rows)
    # The call is the one interrupted: kept, healed, never claimed "not run".
    assert [call["name"] for call in diagnosis.interrupted] == [calls[0]["name"]]
    text = orjson.dumps(diagnosis.to_dict()).decode()
    assert "cut off mid-arguments" not in text
    assert "the tool was not run" not in text


@pytest.mark.parametrize(("name", "make", "arguments"), CASES, ids=IDS)
def test_empty_arguments_call_repairs_to_what_every_provider_accepts(
    name: str, make: Any, arguments: Any
) -> None:
    diagnosis = _diagnose(name, make, arguments)
    for provider in PROVIDERS:
        assert diagnosis.providers[provider]["after"] == [], provider


@pytest.mark.parametrize(("name", "make", "arguments"), CASES, ids=IDS)
def test_empty_arguments_call_written_back_reads_as_repaired(
    name: str, make: Any, arguments: Any
) -> None:
    parsed = formats.load(make(arguments))
    written = formats.FORMATS[name].serialise(repair_parsed(parsed).messages, parsed)
    again = formats.load(written)
    assert repair_parsed(again).actions == []
    assert [call["name"] for call in again.messages[1]["metadata"]["tool_calls"]] == [
        parsed.messages[1]["metadata"]["tool_calls"][0]["name"]
    ]
