"""OpenAI Chat Completions: lists, request bodies, recordings, conversation lists, Kimi JSONL."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inspector.formats import FormatError, openai_chat
from tests import testdata
from tests.engine.helpers import repair_history
from tests.testdata import read

CORPUS = testdata.CORPUS / "openai-chat"
KIMI = (
    CORPUS / "MoonshotAI-kimi-cli__pr127__531d195b-6436-426e-b010-4bf723a992de.kimi-context.jsonl"
)
TAU = CORPUS / "sierra-research-tau-bench__gpt-4o-airline.json"


def call(cid: str, name: str = "search", arguments: str = '{"q": "x"}') -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


BODY = {
    "model": "gpt-4o",
    "messages": [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_1")]},
        {"role": "tool", "tool_call_id": "call_1", "name": "search", "content": "found"},
        {"role": "assistant", "content": "Found it."},
    ],
    "tools": [],
}


def test_sniff_prefers_chat_markers():
    assert openai_chat.sniff(orjson.dumps(BODY)) >= 0.8
    assert openai_chat.sniff(b'[{"role": "user", "content": "hi"}]') == 0.5
    assert openai_chat.sniff(b"plain text") == 0.0


def test_request_body_reads_to_canonical():
    parsed = openai_chat.parse(orjson.dumps(BODY))
    plain = [
        {**m, "metadata": {k: v for k, v in m["metadata"].items() if not k.startswith("_")}}
        for m in parsed.messages
    ]
    assert plain == [
        {"role": "system", "content": "be brief", "metadata": {}},
        {"role": "user", "content": "hi", "metadata": {}},
        {
            "role": "assistant",
            "content": "",
            "metadata": {
                "tool_calls": [
                    {"tool_call_id": "call_1", "name": "search", "arguments": '{"q": "x"}'}
                ]
            },
        },
        {
            "role": "tool",
            "content": "found",
            "metadata": {"tool_call_id": "call_1", "name": "search"},
        },
        {"role": "assistant", "content": "Found it.", "metadata": {}},
    ]
    assert parsed.sources == [[1], [2], [3], [4], [5]]
    assert repair_history(parsed.messages).actions == []


def test_image_parts_become_canonical_images():
    content = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
    ]
    parsed = openai_chat.parse(orjson.dumps([{"role": "user", "content": content}]))
    assert parsed.messages[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "media_type": "image/png", "data": "AAAA"},
        {"type": "image", "url": "https://x/y.png"},
    ]


def test_legacy_function_call_pairs_with_its_function_message():
    data = orjson.dumps(
        [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "f", "arguments": "{}"},
            },
            {"role": "function", "name": "f", "content": "ok"},
        ]
    )
    parsed = openai_chat.parse(data)
    assert parsed.messages[1]["metadata"]["tool_calls"][0]["tool_call_id"] == ""
    assert parsed.messages[2]["role"] == "tool"
    # ID-2 names the empty id; the result follows it: nothing is unpaired.
    rules = {a.rule for a in repair_history(parsed.messages).actions}
    assert rules == {"ID-2"}


def test_bad_records_are_reported_and_the_rest_read():
    data = orjson.dumps([{"role": "user", "content": "hi"}, 7, {"role": "wizard", "content": "x"}])
    parsed = openai_chat.parse(data)
    assert len(parsed.messages) == 1
    assert [p.line for p in parsed.problems] == [2, 3]


def test_other_shapes_are_refused():
    with pytest.raises(FormatError, match="anthropic shape"):
        openai_chat.parse(
            orjson.dumps(
                [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}]
            )
        )
    with pytest.raises(FormatError):
        openai_chat.parse(b'{"contents": []}')


def exchange(request: list[Any], response: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "uri": "https://api.openai.com/v1/chat/completions",
        "request_body": {"model": "m", "messages": request},
        "response_status": 200,
        "response_body": {"choices": [{"message": response, "finish_reason": finish}]},
    }


def test_recording_reads_last_request_plus_its_response():
    first = [{"role": "user", "content": "hi"}]
    doc = {
        "interactions": [
            exchange(first, {"role": "assistant", "content": "one"}),
            exchange(
                [*first, {"role": "user", "content": "again"}],
                {"role": "assistant", "content": "two"},
            ),
        ]
    }
    parsed = openai_chat.parse(orjson.dumps(doc))
    assert [m["content"] for m in parsed.messages] == ["hi", "again", "two"]
    assert parsed.sources[-1] == [3]
    assert parsed.meta["exchanges"] == 2 and parsed.meta["exchange"] == 1


def test_response_that_asks_for_calls_is_pending_not_history():
    response = {"role": "assistant", "content": None, "tool_calls": [call("call_9")]}
    doc = {"interactions": [exchange([{"role": "user", "content": "hi"}], response, "tool_calls")]}
    parsed = openai_chat.parse(orjson.dumps(doc))
    assert [m["role"] for m in parsed.messages] == ["user"]
    assert parsed.meta["pending_calls"] == ["call_9"]


def test_response_cut_by_the_token_limit_is_read_with_its_cause():
    response = {
        "role": "assistant",
        "content": "I will",
        "tool_calls": [call("c", arguments='{"q"')],
    }
    doc = {"interactions": [exchange([{"role": "user", "content": "hi"}], response, "length")]}
    parsed = openai_chat.parse(orjson.dumps(doc))
    assert parsed.causes == {1: "max_tokens"}
    repaired = repair_history(parsed.messages, causes=parsed.causes)
    assert [a.rule for a in repaired.actions] == ["INT-1", "INT-2"]
    assert "output token limit" in repaired.messages[-1]["content"]


def test_recording_changed_gets_one_more_interaction_and_reads_back_repaired():
    request = [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call("a")]}]
    doc = {"interactions": [exchange(request, {"role": "assistant", "content": "done"})]}
    data = orjson.dumps(doc)
    parsed = openai_chat.parse(data)
    repaired = repair_history(parsed.messages).messages
    out = openai_chat.serialise(repaired, parsed)
    written = orjson.loads(out)
    assert written["interactions"][0] == doc["interactions"][0]
    assert set(written["interactions"][1]) == {"uri", "request_body"}
    again = openai_chat.parse(out)
    assert repair_history(again.messages).actions == []
    assert [m["role"] for m in again.messages] == ["user", "assistant", "tool", "assistant"]


def test_exchange_sent_to_another_provider_is_refused():
    doc = {"interactions": [{"uri": "https://api.anthropic.com/v1/messages", "request_body": {}}]}
    with pytest.raises(FormatError, match="sent to anthropic"):
        openai_chat.parse(orjson.dumps(doc))


def test_conversation_list_reads_one_conversation_and_writes_only_that_one():
    data = read(TAU)
    parsed = openai_chat.parse(data)
    assert parsed.meta["conversations"] == 200 and parsed.meta["conversation"] == 0
    second = openai_chat.parse(data, conversation=1)
    assert second.messages != parsed.messages
    repaired = repair_history(second.messages).messages
    out = orjson.loads(openai_chat.serialise(repaired, second))
    original = orjson.loads(data)
    assert out[0] == original[0] and out[2:] == original[2:]
    assert out[1]["task_id"] == original[1]["task_id"]
    with pytest.raises(FormatError, match="200 conversations"):
        openai_chat.parse(data, conversation=200)


def test_kimi_context_bookkeeping_rows_are_kept_but_not_messages():
    data = read(KIMI)
    parsed = openai_chat.parse(data)
    assert parsed.meta["special_records"] == 85
    assert all(not m["role"].startswith("_") for m in parsed.messages)
    assert parsed.sources[0] == [2]
    assert openai_chat.serialise(parsed.messages, parsed) == data


KIMI_BROKEN = b"""{"role": "_checkpoint", "id": 0}
{"role":"user","content":"fix it"}
{"role":"assistant","content":[],"tool_calls":[{"type":"function","id":"Bash:0","function":{"name":"Bash","arguments":"{}"}}]}
{"role": "_usage", "token_count": 11}
{"role":"assistant","content":"next"}
{"role":"assistant","content":"cut"
"""


def test_kimi_repaired_file_keeps_untouched_lines_byte_for_byte():
    parsed = openai_chat.parse(KIMI_BROKEN)
    assert [(p.line, p.kind) for p in parsed.problems] == [(6, "unreadable")]
    repaired = repair_history(parsed.messages).messages
    out = openai_chat.serialise(repaired, parsed)
    lines = out.split(b"\n")
    source = KIMI_BROKEN.split(b"\n")
    assert lines[:3] == source[:3]
    healed = orjson.loads(lines[3])
    assert healed["role"] == "tool" and healed["tool_call_id"] == "Bash:0"
    assert lines[4:6] == source[3:5]
    assert b'"cut"' not in out  # the unreadable line was reported, not carried into the repair
    assert repair_history(openai_chat.parse(out).messages).actions == []


def test_jsonl_with_one_conversation_per_line():
    lines = [orjson.dumps([{"role": "user", "content": f"q{i}"}]) for i in range(3)]
    parsed = openai_chat.parse(b"\n".join(lines) + b"\n", conversation=2)
    assert parsed.messages[0]["content"] == "q2"
    assert parsed.meta["conversations"] == 3


def test_to_wire_writes_string_arguments_and_leaves_foreign_parts_out():
    messages = [
        {"role": "user", "content": "hi", "metadata": {}},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "ok"}],
            "metadata": {"tool_calls": [{"tool_call_id": "a", "name": "f", "arguments": {"x": 1}}]},
        },
        {
            "role": "tool",
            "content": [{"type": "text", "text": "t"}, {"type": "image", "url": "u"}],
            "metadata": {"tool_call_id": "a"},
        },
    ]
    wire = openai_chat.to_wire(messages)
    assert wire["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}
        ],
    }
    assert wire["messages"][2] == {"role": "tool", "content": "t\n[image]", "tool_call_id": "a"}


# --- hermes-agent: calls with both id and call_id -------------------------------------------


def hermes_call(cid: str, item: str | None = None, name: str = "terminal") -> dict[str, Any]:
    """A call as hermes-agent stores it: the result answers ``call_id``."""
    return {
        "id": item or cid,
        "call_id": cid,
        "response_item_id": f"fc_{cid}",
        "type": "function",
        "function": {"name": name, "arguments": '{"command": "ls"}'},
    }


def hermes(*calls: dict[str, Any], answered: tuple[str, ...]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "", "tool_calls": list(calls)},
        *({"role": "tool", "tool_call_id": cid, "content": "ok"} for cid in answered),
        {"role": "assistant", "content": "done"},
    ]


@pytest.mark.parametrize("item", [None, "call_a|fc_a", "fc_a"], ids=["same", "joined", "item-id"])
def test_call_with_id_and_call_id_is_answered_under_its_call_id(item):
    data = orjson.dumps(hermes(hermes_call("call_a", item), answered=("call_a",)))
    parsed = openai_chat.parse(data)
    assert parsed.messages[1]["metadata"]["tool_calls"][0]["tool_call_id"] == "call_a"
    assert repair_history(parsed.messages).actions == []
    assert openai_chat.serialise(parsed.messages, parsed) == data
    lines = b"\n".join(orjson.dumps(m) for m in orjson.loads(data)) + b"\n"
    assert repair_history(openai_chat.parse(lines).messages).actions == []


def test_renamed_hermes_call_keeps_its_own_item_id_and_its_result_follows():
    history = hermes(hermes_call("call_a", "fc_x"), answered=("call_a",))
    history += [
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "", "tool_calls": [hermes_call("call_a")]},
        {"role": "tool", "tool_call_id": "call_a", "content": "ok"},
    ]
    parsed = openai_chat.parse(orjson.dumps(history))
    repaired = repair_history(parsed.messages)
    assert {(a.rule, a.new_id) for a in repaired.actions} == {("ID-1", "call_a_1")}
    written = orjson.loads(openai_chat.serialise(repaired.messages, parsed))
    assert written[1]["tool_calls"][0] == history[1]["tool_calls"][0]  # untouched
    renamed = written[5]["tool_calls"][0]
    assert (renamed["id"], renamed["call_id"]) == ("call_a_1", "call_a_1")
    assert written[6]["tool_call_id"] == "call_a_1"
    assert repair_history(openai_chat.parse(orjson.dumps(written)).messages).actions == []


def test_hermes_call_with_an_item_id_keeps_it_when_its_call_id_is_renamed():
    first = hermes(hermes_call("call_a"), answered=("call_a",))
    second = [
        {"role": "assistant", "content": "", "tool_calls": [hermes_call("call_a", "fc_y")]},
        {"role": "tool", "tool_call_id": "call_a", "content": "ok"},
    ]
    parsed = openai_chat.parse(orjson.dumps(first + second))
    repaired = repair_history(parsed.messages)
    written = orjson.loads(openai_chat.serialise(repaired.messages, parsed))
    renamed = written[4]["tool_calls"][0]
    assert (renamed["id"], renamed["call_id"]) == ("fc_y", "call_a_1")
    assert written[5]["tool_call_id"] == "call_a_1"


def test_unanswered_hermes_call_is_reported_under_its_call_id():
    parsed = openai_chat.parse(orjson.dumps(hermes(hermes_call("call_a", "fc_a"), answered=())))
    actions = repair_history(parsed.messages).actions
    assert [(a.rule, a.call_id) for a in actions] == [("PAIR-1", "call_a")]
