"""pydantic-ai message histories: requests and responses, repairs as pydantic-ai makes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FormatError, load
from inspector.formats import pydantic_ai as pa
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    outline,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

HISTORIES = files(CORPUS / "pydantic-ai")
ISSUE_4190 = HISTORIES[0]


def _id(path: Path) -> str:
    return path.name


def request(*parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"parts": list(parts), "instructions": None, "kind": "request", **extra}


def response(*parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "parts": list(parts),
        "model_name": "gpt-4o",
        "timestamp": "2026-01-01T00:00:05Z",
        "kind": "response",
        **extra,
    }


def prompt(text: str) -> dict[str, Any]:
    return {"content": text, "timestamp": "2026-01-01T00:00:00Z", "part_kind": "user-prompt"}


def call(call_id: str, name: str = "search", args: Any = '{"q": "x"}') -> dict[str, Any]:
    return {"tool_name": name, "args": args, "tool_call_id": call_id, "part_kind": "tool-call"}


def ret(call_id: str, content: Any = "found", name: str = "search") -> dict[str, Any]:
    return {
        "tool_name": name,
        "content": content,
        "tool_call_id": call_id,
        "metadata": None,
        "timestamp": "2026-01-01T00:00:06Z",
        "part_kind": "tool-return",
    }


def text(said: str) -> dict[str, Any]:
    return {"content": said, "part_kind": "text"}


def dumps(*records: dict[str, Any]) -> bytes:
    return orjson.dumps(list(records))


# --- the corpus ------------------------------------------------------------------------


@pytest.mark.parametrize("path", HISTORIES, ids=_id)
def test_history_loads_as_pydantic_ai_and_round_trips_byte_for_byte(path: Path) -> None:
    data = read(path)
    parsed = load(data)
    assert parsed.format == "pydantic-ai"
    assert parsed.problems == []
    assert pa.serialise(parsed.messages, parsed) == data
    assert findings(parsed) == []


def test_the_issue_history_reads_as_a_call_and_its_return() -> None:
    parsed = pa.parse(read(ISSUE_4190))
    assert outline(parsed.messages) == [
        ("user", "Hello"),
        ("assistant", "", (("call_1", "my_tool"),)),
        ("tool", "call_1", '{"items":[{"name":"Example","url":"/some/path/12345"}]}'),
    ]
    assert parsed.sources == [[1], [2], [3]]
    assert parsed.messages[1]["metadata"]["tool_calls"][0]["arguments"] == "{}"


# --- broken variants --------------------------------------------------------------------


def test_a_lost_return_is_made_as_pydantic_ai_makes_it() -> None:
    doc = orjson.loads(read(ISSUE_4190))
    parsed = pa.parse(orjson.dumps(doc[:2]))
    assert findings(parsed) == [("PAIR-1", [2], "call_1")]
    data, _ = repaired_round_trip(pa, parsed)
    records = orjson.loads(data)
    assert records[:2] == doc[:2]
    assert records[2] == {
        "parts": [
            {
                "tool_name": "my_tool",
                "content": records[2]["parts"][0]["content"],
                "tool_call_id": "call_1",
                "metadata": {"pydantic_ai_synthesized_tool_return": True},
                "timestamp": "2026-02-03T22:26:39Z",  # the response's, as pydantic-ai stamps it
                "outcome": "interrupted",
                "part_kind": "tool-return",
            }
        ],
        "kind": "request",
    }
    assert records[2]["parts"][0]["content"].startswith("Tool call was interrupted; no result.")


def test_the_return_goes_into_the_next_request_before_its_prompt() -> None:
    data = dumps(
        request(prompt("look")),
        response(call("c1")),
        request(prompt("never mind")),
        response(text("ok")),
    )
    parsed = pa.parse(data)
    assert findings(parsed) == [("PAIR-1", [2], "c1")]
    out, _ = repaired_round_trip(pa, parsed)
    third = orjson.loads(out)[2]
    assert [p["part_kind"] for p in third["parts"]] == ["tool-return", "user-prompt"]
    assert third["instructions"] is None  # the request's own fields stay


def test_a_parallel_call_left_unanswered_gets_its_return_beside_the_other() -> None:
    data = dumps(
        request(prompt("look")),
        response(text("Two searches."), call("c1"), call("c2")),
        request(ret("c1")),
        response(text("done")),
    )
    parsed = pa.parse(data)
    assert findings(parsed) == [("PAIR-1", [2], "c2")]
    out, _ = repaired_round_trip(pa, parsed)
    records = orjson.loads(out)
    assert [r["kind"] for r in records] == ["request", "response", "request", "response"]
    assert [p["tool_call_id"] for p in records[2]["parts"]] == ["c1", "c2"]
    assert records[2]["parts"][0] == ret("c1")


def test_a_repeated_call_id_is_renamed_in_call_and_return() -> None:
    data = dumps(
        request(prompt("look")),
        response(call("c1")),
        request(ret("c1")),
        response(call("c1")),
        request(ret("c1", "again")),
    )
    parsed = pa.parse(data)
    assert {r for r, _, _ in findings(parsed)} == {"ID-1"}
    out, _ = repaired_round_trip(pa, parsed)
    records = orjson.loads(out)
    assert records[3]["parts"][0]["tool_call_id"] == "c1_1"
    assert records[4]["parts"][0]["tool_call_id"] == "c1_1"
    assert records[:3] == orjson.loads(data)[:3]


def test_a_return_without_its_call_becomes_a_user_prompt() -> None:
    data = dumps(request(prompt("look")), request(ret("ghost")), response(text("hm")))
    parsed = pa.parse(data)
    assert [r for r, _, _ in findings(parsed)] == ["PAIR-3"]
    out, _ = repaired_round_trip(pa, parsed)
    part = orjson.loads(out)[1]["parts"][0]
    assert part["part_kind"] == "user-prompt"
    assert "found" in part["content"]


# --- reading --------------------------------------------------------------------------


def test_parts_of_every_kind() -> None:
    data = dumps(
        request(
            {"content": "Be brief.", "part_kind": "system-prompt"},
            {
                "content": ["What is this?", {"url": "https://x/cat.png", "kind": "image-url"}],
                "part_kind": "user-prompt",
            },
        ),
        response(
            {"content": "Looking at it.", "part_kind": "thinking"},
            text("A cat."),
            call("c1", "validate", {"n": 1}),
            finish_reason="tool_call",
        ),
        request(
            {
                "content": [{"loc": ["n"], "msg": "too small"}],
                "tool_name": "validate",
                "tool_call_id": "c1",
                "part_kind": "retry-prompt",
            },
            {"content": "Please answer in one word.", "part_kind": "retry-prompt"},
        ),
        response(text("Cat"), finish_reason="length"),
    )
    parsed = pa.parse(data)
    assert [m["role"] for m in parsed.messages] == [
        "system", "user", "assistant", "tool", "user", "assistant",
    ]  # fmt: skip
    assert parsed.messages[1]["content"][1] == {"type": "image", "url": "https://x/cat.png"}
    assert parsed.messages[2]["content"][0] == {"type": "thinking", "thinking": "Looking at it."}
    assert parsed.messages[2]["metadata"]["tool_calls"][0]["arguments"] == {"n": 1}
    assert parsed.messages[3]["metadata"]["is_error"] is True
    assert parsed.causes == {5: "max_tokens"}
    assert findings(parsed) == []


def test_an_interrupted_response_is_a_cut_turn() -> None:
    data = dumps(request(prompt("go")), response(text("Half"), state="interrupted"))
    assert pa.parse(data).causes == {1: "turn_aborted"}


def test_bad_messages_and_parts_are_named() -> None:
    data = dumps(request(prompt("go")), {"kind": "banana"}, request(42), response(text("x")))  # type: ignore[arg-type]
    parsed = pa.parse(data)
    assert [(p.line, p.kind) for p in parsed.problems] == [(2, "unreadable"), (3, "skipped")]


@pytest.mark.parametrize(
    "data",
    [
        b'[{"role": "user", "content": "hi"}]',
        b'{"kind": "request"}',
        b"[]",
        b'[{"kind": "request", "parts": []}]',
    ],
    ids=["chat", "not-a-list", "empty", "no-parts"],
)
def test_other_json_is_refused(data: bytes) -> None:
    with pytest.raises(FormatError):
        pa.parse(data)


def test_sniff() -> None:
    assert pa.sniff(read(ISSUE_4190)) == 0.95
    assert pa.sniff(b'[{"role": "user", "content": "hi", "parts": []}]') == 0
    chat = (
        CORPUS
        / "openai-chat"
        / "pydantic-ai__test_openai__test_multiple_agent_tool_calls.extracted.json"
    )
    assert pa.sniff(read(chat)[:65536]) == 0


SEED = dumps(
    request({"content": "Be brief.", "part_kind": "system-prompt"}, prompt("look")),
    response(text("Two."), call("c1"), call("c2")),
    request(ret("c1"), ret("c2")),
    response(call("c3")),
    request(ret("c3"), prompt("thanks")),
    response(text("ok")),
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([SEED, orjson.dumps(orjson.loads(SEED), option=orjson.OPT_INDENT_2)]))
def test_damaged_histories_are_repaired_into_histories_that_need_no_more(data: bytes) -> None:
    check_written_back(data)
