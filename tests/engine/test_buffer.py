"""Buffer: the append-time rules of FlowDrop GR-MEM (SPEC §5)."""

from __future__ import annotations

import copy

import orjson
import pytest

from inspector.engine import Buffer, InvalidTranscript

from .helpers import assistant, call, result, user

PLACEHOLDER = "Tool call was interrupted; no result."


def placeholder(cid: str) -> dict:
    return {
        "role": "tool",
        "content": PLACEHOLDER,
        "metadata": {"tool_call_id": cid, "healed": True},
    }


# -- MEM-3 ---------------------------------------------------------------------------------


def test_user_turn_heals_a_dangling_call_right_after_its_turn() -> None:
    buffer = Buffer([assistant("", [call("c1")]), user("anything?"), assistant("lost it")])
    buffer.append(user("try again"))
    assert buffer.messages[1] == placeholder("c1")
    assert [m["role"] for m in buffer.messages] == [
        "assistant",
        "tool",
        "user",
        "assistant",
        "user",
    ]


@pytest.mark.parametrize("role", ["tool", "assistant", "system"])
def test_appending_anything_but_a_user_turn_never_heals(role: str) -> None:
    buffer = Buffer([assistant("", [call("c1")])])
    buffer.append({"role": role, "content": "x", "metadata": {"tool_call_id": "c9"}})
    assert all(not m["metadata"].get("healed") for m in buffer.messages)


def test_placeholders_keep_the_turns_results_in_call_order() -> None:
    turn = assistant("", [call("a"), call("b"), call("c")])
    buffer = Buffer([turn, result("b", "B")])
    buffer.append(user("next"))
    ids = [m["metadata"].get("tool_call_id") for m in buffer.messages]
    assert ids == [None, "a", "b", "c", None]
    assert buffer.messages[2]["content"] == "B"


def test_a_call_answered_anywhere_in_the_buffer_is_not_healed() -> None:
    buffer = Buffer([assistant("", [call("c1")]), user("wait"), result("c1", "late")])
    buffer.append(user("ok"))
    assert len(buffer) == 4


def test_healing_happens_once() -> None:
    buffer = Buffer([assistant("", [call("c1")])])
    buffer.append(user("one"))
    buffer.append(user("two"))
    assert [m["role"] for m in buffer.messages] == ["assistant", "tool", "user", "user"]


# -- MEM-1 and MEM-10 ----------------------------------------------------------------------


def test_second_real_result_for_a_call_is_dropped() -> None:
    buffer = Buffer([assistant("", [call("c1")]), result("c1", "first")])
    buffer.append(result("c1", "again"))
    assert [m["content"] for m in buffer.messages] == ["", "first"]


def test_real_result_replaces_its_placeholder_in_place() -> None:
    buffer = Buffer([assistant("", [call("c1")])])
    buffer.append(user("anything?"))
    real = result("c1", "3 hits")
    buffer.append(real)
    assert buffer.messages[1] is real
    assert "healed" not in buffer.messages[1]["metadata"]
    assert len(buffer) == 3
    buffer.append(result("c1", "3 hits again"))
    assert len(buffer) == 3


def test_a_healed_message_never_replaces_a_placeholder() -> None:
    buffer = Buffer([assistant("", [call("c1")])])
    buffer.append(user("anything?"))
    buffer.append(placeholder("c1") | {"content": "other words"})
    assert buffer.messages[1] == placeholder("c1")
    assert len(buffer) == 3


def test_result_for_an_unknown_call_is_appended_as_is() -> None:
    late = result("c9", "late")
    buffer = Buffer([assistant("", [call("c1")])])
    buffer.append(late)
    assert buffer.messages[-1] is late


# -- MEM-2 ---------------------------------------------------------------------------------


def test_assistant_turn_declaring_only_known_ids_is_dropped() -> None:
    buffer = Buffer([assistant("", [call("c1"), call("c2")]), result("c1"), result("c2")])
    buffer.append(assistant("", [call("c2"), call("c1")]))
    assert len(buffer) == 3


def test_assistant_turn_declaring_one_new_id_is_appended() -> None:
    buffer = Buffer([assistant("", [call("c1")]), result("c1")])
    buffer.append(assistant("", [call("c1"), call("c2")]))
    assert len(buffer) == 3


def test_assistant_turn_without_calls_is_always_appended() -> None:
    buffer = Buffer([assistant("hello")])
    buffer.append(assistant("hello"))
    assert len(buffer) == 2


# -- MEM-11 --------------------------------------------------------------------------------


def test_flat_id_spelling_counts_as_the_same_call() -> None:
    buffer = Buffer([assistant("", [{"id": "c1", "name": "search"}])])
    buffer.append({"role": "tool", "content": "ok", "metadata": {"tool_call_id": "c1"}})
    buffer.append(assistant("", [{"tool_call_id": "c1", "name": "search"}]))
    buffer.append(user("thanks"))
    assert [m["role"] for m in buffer.messages] == ["assistant", "tool", "user"]


# -- the contract --------------------------------------------------------------------------


def test_seed_example_byte_for_byte() -> None:
    dangling = {"tool_calls": [{"tool_call_id": "c1", "name": "search"}]}
    buffer = Buffer(
        [
            {"role": "assistant", "content": "", "metadata": dangling},
            {"role": "user", "content": "anything?", "metadata": {}},
            {"role": "assistant", "content": "sorry, lost it", "metadata": {}},
        ]
    )
    buffer.append({"role": "user", "content": "try again", "metadata": {}})
    assert orjson.dumps(buffer.messages) == (
        b'[{"role":"assistant","content":"","metadata":{"tool_calls":[{"tool_call_id":"c1",'
        b'"name":"search"}]}},{"role":"tool","content":"Tool call was interrupted; no result.",'
        b'"metadata":{"tool_call_id":"c1","healed":true}},{"role":"user","content":"anything?",'
        b'"metadata":{}},{"role":"assistant","content":"sorry, lost it","metadata":{}},'
        b'{"role":"user","content":"try again","metadata":{}}]'
    )


def test_buffer_never_mutates_what_it_was_given() -> None:
    start = [assistant("", [call("c1"), call("c2")]), result("c2")]
    before = copy.deepcopy(start)
    buffer = Buffer(start)
    buffer.append(user("go on"))
    buffer.append(result("c1", "real"))
    assert start == before


def test_messages_is_a_copy() -> None:
    buffer = Buffer([user()])
    buffer.messages.append(user("sneaky"))
    assert len(buffer) == 1


@pytest.mark.parametrize(
    "bad",
    ["hello", {"role": "bot"}, {"role": "assistant", "metadata": {"tool_calls": "c1"}}],
    ids=["not-object", "unknown-role", "tool-calls-not-list"],
)
def test_bad_message_raises_invalid_transcript(bad) -> None:
    with pytest.raises(InvalidTranscript):
        Buffer().append(bad)
    with pytest.raises(InvalidTranscript, match=r"^message 1: "):
        Buffer([user(), bad])
