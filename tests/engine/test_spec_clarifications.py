"""This round's three clarifications of SPEC §4, one behaviour per test.

1. Step 1: an empty or all-whitespace ``arguments`` string is no arguments,
   as ``{}``: that call is complete (never partial, never removed, never
   claimed "not run"). Only a non-empty string that does not parse as a JSON
   object is partial.
2. Step 4: in ``call_{m}_{c}`` the call index c counts calls that step 1
   removed too, so an id never depends on what follows.
3. Step 5: an orphan note reads ``(no id)`` for an empty id.
"""

from __future__ import annotations

from typing import Any

import pytest

from inspector import formats
from inspector.engine.canonical import arguments_object, is_partial
from inspector.engine.providers import PROVIDERS, validate
from inspector.engine.repair import MAY_HAVE_RUN

from .helpers import Message, assert_valid, assistant, call, repair_history, result, user

PARTIAL = '{"project": "BIL'
BLANK_ARGUMENTS = ["", " ", "\n", " \t\r\n "]


def rules_of(history: list[Message]) -> list[str]:
    return [action.rule for action in repair_history(history).actions]


# -- 1. the one reading of arguments -------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("", {}),
        ("   ", {}),
        ("\n\t", {}),
        ("{}", {}),
        ('{"a": 1}', {"a": 1}),
        (' \n{"a": 1}', {"a": 1}),
        ({"a": 1}, {"a": 1}),
        ({}, {}),
        (PARTIAL, PARTIAL),
        ("[1, 2]", "[1, 2]"),
        ("42", "42"),
        ('"text"', '"text"'),
        ("null", "null"),
        ("plain words", "plain words"),
        (None, None),
        ([1], [1]),
    ],
)
def test_arguments_object_reads_blank_text_as_no_arguments(arguments: Any, expected: Any) -> None:
    assert arguments_object(arguments) == expected


@pytest.mark.parametrize("arguments", [*BLANK_ARGUMENTS, "{}", '{"q": "x"}', {}, {"q": 1}, None])
def test_blank_or_object_arguments_are_not_partial(arguments: Any) -> None:
    assert not is_partial(arguments)


@pytest.mark.parametrize("arguments", [PARTIAL, "[1]", "42", "null", '"s"', " x", "{"])
def test_non_empty_text_that_is_no_object_is_partial(arguments: str) -> None:
    assert is_partial(arguments)


# -- 1. an empty-arguments call in the repair ----------------------------------------


@pytest.mark.parametrize("arguments", BLANK_ARGUMENTS)
def test_unanswered_blank_arguments_call_is_kept_and_healed(arguments: str) -> None:
    history = [user("what files?"), assistant("", [call("c1", "list_files", arguments)]), user()]
    repaired = repair_history(history)
    assert [a.rule for a in repaired.actions] == ["PAIR-1"]
    # The call stays as it was (the same object), arguments and all; no INT note.
    assert repaired.messages[1] is history[1]
    assert repaired.messages[2]["content"] == MAY_HAVE_RUN
    assert repaired.messages[2]["metadata"]["outcome"] == "unknown"
    assert repaired.interrupted == [history[1]["metadata"]["tool_calls"][0]]
    assert not any(m["metadata"].get("note") == "interruption" for m in repaired.messages)
    assert_valid(repaired.messages)


@pytest.mark.parametrize("arguments", BLANK_ARGUMENTS)
def test_answered_blank_arguments_call_needs_nothing(arguments: str) -> None:
    history = [assistant("", [call("c1", "list_files", arguments)]), result("c1", "a.txt")]
    repaired = repair_history(history)
    assert repaired.actions == []
    assert all(a is b for a, b in zip(repaired.messages, history, strict=True))


def test_blank_arguments_call_in_a_blank_message_keeps_the_message() -> None:
    # Step 2 only drops a message with no calls; this one keeps its call.
    history = [assistant("  ", [call("c1", "list_files", "")]), user("hello?")]
    repaired = repair_history(history)
    assert [m["role"] for m in repaired.messages] == ["assistant", "tool", "user"]
    assert "MSG-1" not in {a.rule for a in repaired.actions}


def test_blank_arguments_call_ends_a_span_like_any_complete_call() -> None:
    # A result after it answers it, not the partial call before it.
    history = [
        assistant("", [call("p1", "create_ticket", PARTIAL)]),
        assistant("", [call("c1", "list_files", "")]),
        result("c1", "a.txt"),
    ]
    repaired = repair_history(history)
    assert [a.rule for a in repaired.actions] == ["MSG-1", "INT-1", "INT-2"]
    assert repaired.messages[1] is history[1]
    assert repaired.messages[2] is history[2]


def test_only_the_partial_call_goes_beside_a_blank_arguments_call() -> None:
    history = [
        assistant("On it.", [call("c1", "list_files", " "), call("p1", "create_ticket", PARTIAL)]),
        user("and?"),
    ]
    repaired = repair_history(history)
    kept = repaired.messages[0]["metadata"]["tool_calls"]
    assert [c["tool_call_id"] for c in kept] == ["c1"]
    assert [(a.rule, a.call_id) for a in repaired.actions] == [
        ("INT-1", "p1"),
        ("PAIR-1", "c1"),
        ("INT-2", None),
    ]
    note = repaired.messages[2]["content"]
    assert "create_ticket" in note and "list_files" not in note


# -- 2. call_{m}_{c} counts the calls step 1 removed ---------------------------------


def test_empty_id_counts_a_removed_call_before_it() -> None:
    history = [
        user("raise it"),
        assistant("Sure.", [call("p1", "create_ticket", PARTIAL), call("", "search")]),
        result("", "found", name="search"),
    ]
    repaired = repair_history(history)
    kept = repaired.messages[1]["metadata"]["tool_calls"]
    assert [c["tool_call_id"] for c in kept] == ["call_1_1"]
    assert repaired.messages[2]["metadata"]["tool_call_id"] == "call_1_1"
    id2 = [a for a in repaired.actions if a.rule == "ID-2"]
    assert {(a.new_id, a.call_index) for a in id2} == {("call_1_1", 1)}
    int1 = next(a for a in repaired.actions if a.rule == "INT-1")
    assert (int1.call_id, int1.call_index) == ("p1", 0)


def test_empty_id_counts_a_removed_call_that_had_no_id_either() -> None:
    history = [
        assistant("Sure.", [call("", "create_ticket", PARTIAL), call("", "search")]),
        result("", "found", name="search"),
    ]
    repaired = repair_history(history)
    kept = repaired.messages[0]["metadata"]["tool_calls"]
    assert [c["tool_call_id"] for c in kept] == ["call_0_1"]
    assert repaired.messages[1]["metadata"]["tool_call_id"] == "call_0_1"


def test_empty_id_does_not_depend_on_whether_the_partial_call_was_answered() -> None:
    # Answered, the partial call stays; unanswered, it goes. Either way the
    # call after it is call_0_1: the id never depends on what follows.
    turn = assistant("", [call("p1", "create_ticket", PARTIAL), call("", "search")])
    answered = repair_history([turn, result("p1", "T-9"), result("", "found", name="search")])
    unanswered = repair_history([turn, result("", "found", name="search")])
    ids_answered = [c["tool_call_id"] for c in answered.messages[0]["metadata"]["tool_calls"]]
    ids_unanswered = [c["tool_call_id"] for c in unanswered.messages[0]["metadata"]["tool_calls"]]
    assert ids_answered == ["p1", "call_0_1"]
    assert ids_unanswered == ["call_0_1"]


def test_empty_id_counts_removed_calls_after_dropped_messages_too() -> None:
    # m is the input index (the blank placeholder before still counts), c the
    # index among all the message's calls.
    history = [
        user("go"),
        assistant(" "),
        assistant("", [call("", "a", PARTIAL), call("", "b", PARTIAL), call("", "search")]),
        user("and?"),
    ]
    repaired = repair_history(history)
    kept = repaired.messages[1]["metadata"]["tool_calls"]
    assert [c["tool_call_id"] for c in kept] == ["call_2_2"]
    assert repaired.messages[2]["metadata"]["tool_call_id"] == "call_2_2"


# -- 3. the orphan note for an empty id ----------------------------------------------

NO_ID_LINE = (
    "[note: a tool result for call (no id) arrived with no matching call; its content follows]"
)


@pytest.mark.parametrize("spelling", [{"tool_call_id": ""}, {"id": ""}, {}])
def test_orphan_with_an_empty_id_reads_no_id(spelling: dict[str, str]) -> None:
    orphan: Message = {"role": "tool", "content": "stray output", "metadata": dict(spelling)}
    repaired = repair_history([user("hi"), assistant("Hello."), orphan])
    note = repaired.messages[2]
    assert note == {
        "role": "user",
        "content": f"{NO_ID_LINE}\nstray output",
        "metadata": {"note": "orphan_result"},
    }
    pair3 = repaired.actions[0]
    assert (pair3.rule, pair3.input_index, pair3.call_id) == ("PAIR-3", 2, "")


def test_orphan_with_an_empty_id_keeps_its_parts_after_the_no_id_line() -> None:
    image = {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}
    orphan = result("", [{"type": "text", "text": "shot"}, image])
    repaired = repair_history([assistant("Hello."), orphan])
    assert repaired.messages[1]["content"] == [
        {"type": "text", "text": NO_ID_LINE},
        {"type": "text", "text": "shot"},
        image,
    ]


def test_second_empty_id_result_for_one_call_reads_no_id() -> None:
    history = [
        assistant("", [call("", "search")]),
        result("", "first", name="search"),
        result("", "second", name="search"),
    ]
    repaired = repair_history(history)
    assert repaired.messages[1]["metadata"]["tool_call_id"] == "call_0_0"
    assert repaired.messages[2]["content"] == f"{NO_ID_LINE}\nsecond"


# -- 1. an empty-arguments call exported to each provider ----------------------------


def _blank_arguments_history(arguments: str) -> list[Message]:
    return [
        user("what files?"),
        assistant("Looking.", [call("c1", "list_files", arguments), call("c2", "search", "")]),
        result("c1", "a.txt"),
        user("hello?"),
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("arguments", BLANK_ARGUMENTS)
def test_blank_arguments_export_passes_every_provider_check(provider: str, arguments: str) -> None:
    repaired = repair_history(_blank_arguments_history(arguments))
    assert [a.rule for a in repaired.actions] == ["PAIR-1"]
    wire, _ = formats.export_wire(repaired.messages, provider)
    assert validate(provider, wire) == []


def _wire_calls(provider: str, wire: Any) -> list[Any]:
    if provider == "openai-chat":
        return [c for m in wire["messages"] for c in m.get("tool_calls") or []]
    if provider == "anthropic":
        return [
            b
            for m in wire["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        ]
    if provider == "responses":
        return [item for item in wire["input"] if item.get("type") == "function_call"]
    return [
        part["functionCall"]
        for turn in wire["contents"]
        for part in turn["parts"]
        if "functionCall" in part
    ]


@pytest.mark.parametrize("arguments", BLANK_ARGUMENTS)
def test_blank_arguments_take_each_providers_own_shape(arguments: str) -> None:
    repaired = repair_history(_blank_arguments_history(arguments)).messages
    shapes = {}
    for provider in PROVIDERS:
        wire, _ = formats.export_wire(repaired, provider)
        shapes[provider] = _wire_calls(provider, wire)
    # OpenAI's shapes carry arguments as a string: the string as it was.
    chat = [c["function"]["arguments"] for c in shapes["openai-chat"]]
    assert chat == [arguments, ""]
    assert [c["arguments"] for c in shapes["responses"]] == [arguments, ""]
    # Anthropic and Gemini take an object: no arguments is {}, never "" or raw_arguments.
    assert [b["input"] for b in shapes["anthropic"]] == [{}, {}]
    assert [c["args"] for c in shapes["gemini"]] == [{}, {}]
