"""repair_history, rule by rule (SPEC §4), plus its contract: bad input, no mutation, identity."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from inspector.engine import Action, InvalidTranscript
from inspector.engine.repair import MAY_HAVE_RUN, NOT_STARTED, READ_ONLY

from .helpers import assert_valid, assistant, call, repair_history, result, system, user

PARTIAL = '{"project": "BILLING", "title": "March invoice run fai'


def rules_of(repaired) -> list[str]:
    return [action.rule for action in repaired.actions]


def contents(messages) -> list:
    return [m["content"] for m in messages]


# -- PAIR-1 and OUT-1: synthetic results ---------------------------------------------


def test_unanswered_call_gets_synthetic_result_right_after_it() -> None:
    history = [user("go"), assistant("", [call("c1"), call("c2", "read_file")]), result("c1")]
    repaired = repair_history(history)
    assert repaired.messages[2] is history[2]
    assert repaired.messages[3] == {
        "role": "tool",
        "content": MAY_HAVE_RUN,
        "metadata": {
            "tool_call_id": "c2",
            "healed": True,
            "outcome": "unknown",
            "name": "read_file",
        },
    }
    assert repaired.interrupted == [history[1]["metadata"]["tool_calls"][1]]
    assert repaired.actions == [
        Action("PAIR-1", None, 3, call_id="c2", call_index=1, tool_name="read_file", turn_index=1)
    ]


def test_synthetic_result_metadata_keys_come_in_the_documented_order() -> None:
    repaired = repair_history([assistant("", [call("c1")])])
    assert list(repaired.messages[1]["metadata"]) == ["tool_call_id", "healed", "outcome", "name"]


def test_synthetic_result_for_nameless_call_has_no_name() -> None:
    repaired = repair_history([assistant("", [call("c1", name=None)])])
    assert repaired.messages[1]["metadata"] == {
        "tool_call_id": "c1",
        "healed": True,
        "outcome": "unknown",
    }


def test_read_only_tool_result_says_it_is_safe_to_call_again() -> None:
    history = [assistant("", [call("c1", "search"), call("c2", "create_ticket")])]
    repaired = repair_history(history, is_read_only=lambda name: name == "search")
    assert contents(repaired.messages[1:]) == [READ_ONLY, MAY_HAVE_RUN]
    assert READ_ONLY.startswith("Tool call was interrupted; no result.")


def test_is_read_only_is_not_asked_about_a_call_without_a_name() -> None:
    asked: list[object] = []
    repair_history([assistant("", [call("c1", name=None)])], asked.append)
    assert asked == []


def test_call_proved_never_started_gets_not_started_outcome() -> None:
    history = [assistant("", [call("c1", "create_ticket"), call("c2", "search")])]
    repaired = repair_history(history, lambda name: True, not_started={"c1"})
    first, second = repaired.messages[1:]
    assert first["content"] == NOT_STARTED
    assert first["metadata"]["outcome"] == "not_started"
    assert NOT_STARTED.startswith("Tool call was interrupted; no result.")
    assert "never started" in NOT_STARTED
    assert second["content"] == READ_ONLY
    assert second["metadata"]["outcome"] == "unknown"


def test_interrupted_holds_calls_under_the_ids_the_request_carries() -> None:
    history = [
        assistant("", [call("x")]),
        result("x"),
        assistant("", [call("x")]),
    ]
    repaired = repair_history(history)
    assert repaired.interrupted == [
        {"tool_call_id": "x_1", "name": "search", "arguments": {"q": "x"}}
    ]
    assert repaired.interrupted[0] is repaired.messages[2]["metadata"]["tool_calls"][0]


# -- PAIR-2: results next to their calls -------------------------------------------------


def test_steer_typed_while_tools_ran_moves_after_the_results() -> None:
    history = [
        assistant("", [call("a"), call("b")]),
        user("also March"),
        system("reminder"),
        result("b", "B"),
        result("a", "A"),
    ]
    repaired = repair_history(history)
    assert contents(repaired.messages) == ["", "A", "B", "also March", "reminder"]
    assert all(out is history[i] for out, i in zip(repaired.messages, [0, 4, 3, 1, 2], strict=True))
    moved = [a for a in repaired.actions if a.rule == "PAIR-2"]
    assert [(a.from_index, a.output_index, a.call_id) for a in moved] == [(4, 1, "a"), (3, 2, "b")]


def test_result_after_a_synthetic_one_has_not_moved() -> None:
    history = [assistant("", [call("a"), call("b")]), result("b")]
    assert rules_of(repair_history(history)) == ["PAIR-1"]


def test_result_already_first_is_not_flagged_when_a_later_one_moves() -> None:
    history = [assistant("", [call("a"), call("b")]), result("a"), user("steer"), result("b")]
    moved = [a.input_index for a in repair_history(history).actions if a.rule == "PAIR-2"]
    assert moved == [3]


def test_result_beyond_a_dropped_cut_turn_still_pairs_with_its_call() -> None:
    # The blank turn with only a partial call is dropped, so it ends no span.
    history = [
        assistant("", [call("c1")]),
        assistant("", [call("p1", "create_ticket", PARTIAL)]),
        user("hello?"),
        result("c1", "late but real"),
    ]
    repaired = repair_history(history)
    assert_valid(repaired.messages)
    assert repaired.messages[1] is history[3]
    assert set(rules_of(repaired)) == {"PAIR-2", "INT-1", "INT-2", "MSG-1"}


# -- PAIR-3: results that answer nothing ------------------------------------------------


def test_tool_message_before_any_assistant_becomes_a_note() -> None:
    repaired = repair_history([result("c0", "early"), user("hi")])
    assert repaired.messages[0] == user(
        "[note: a tool result for call c0 arrived with no matching call; its content follows]"
        "\nearly",
        note="orphan_result",
    )


def test_result_for_a_call_of_an_earlier_span_becomes_a_note_in_place() -> None:
    history = [assistant("", [call("c1")]), result("c1"), assistant("next"), result("c1", "again")]
    repaired = repair_history(history)
    assert repaired.messages[3]["metadata"] == {"note": "orphan_result"}
    assert repaired.actions == [Action("PAIR-3", 3, 3, call_id="c1")]


def test_orphan_note_keeps_images_and_other_parts() -> None:
    image = {"type": "image", "url": "https://example.com/a.png"}
    repaired = repair_history([assistant("hi"), result("g", [image])])
    note = repaired.messages[1]
    assert note["content"][1] is image
    assert note["content"][0]["type"] == "text"


def test_orphan_note_drops_tool_keys_and_keeps_the_rest() -> None:
    history = [assistant("hi"), result("g", "x", name="search", healed=True, _line=7, source="cc")]
    note = repair_history(history).messages[1]
    assert note["metadata"] == {"note": "orphan_result", "_line": 7, "source": "cc"}


def test_orphan_without_an_id_says_so() -> None:
    note = repair_history([assistant("hi"), result("", "x")]).messages[1]
    assert note["content"].startswith("[note: a tool result for call (no id) arrived")


def test_orphan_without_content_is_just_the_note_line() -> None:
    note = repair_history([assistant("hi"), {"role": "tool", "metadata": {"tool_call_id": "g"}}])
    assert note.messages[1]["content"].endswith("its content follows]")


# -- ID-1 and ID-2: ids ------------------------------------------------------------------


def test_repeated_id_in_one_message_renames_the_second_call_and_its_result() -> None:
    history = [assistant("", [call("x"), call("x")]), result("x", "1"), result("x", "2")]
    repaired = repair_history(history)
    ids = [c["tool_call_id"] for c in repaired.messages[0]["metadata"]["tool_calls"]]
    assert ids == ["x", "x_1"]
    assert [m["metadata"]["tool_call_id"] for m in repaired.messages[1:]] == ["x", "x_1"]
    renames = [(a.input_index, a.old_id, a.new_id) for a in repaired.actions]
    assert renames == [(0, "x", "x_1"), (2, "x", "x_1")]
    assert {a.rule for a in repaired.actions} == {"ID-1"}


def test_renaming_takes_the_smallest_free_suffix() -> None:
    history = [
        assistant("", [call("x"), call("x_1")]),
        result("x"),
        result("x_1"),
        assistant("", [call("x")]),
        result("x"),
    ]
    repaired = repair_history(history)
    assert repaired.messages[3]["metadata"]["tool_calls"][0]["tool_call_id"] == "x_2"


def test_an_id_only_clashes_with_what_came_before() -> None:
    # "x_1" is free when the second "x" is renamed; the later original "x_1" then moves on.
    history = [
        assistant("", [call("x")]),
        result("x"),
        assistant("", [call("x")]),
        result("x"),
        assistant("", [call("x_1")]),
        result("x_1"),
    ]
    repaired = repair_history(history)
    ids = [m["metadata"]["tool_calls"][0]["tool_call_id"] for m in repaired.messages[::2]]
    assert ids == ["x", "x_1", "x_1_1"]
    assert_valid(repaired.messages)


def test_rename_keeps_key_order_and_unknown_keys() -> None:
    first = call("x")
    second = {"type": "function", "tool_call_id": "x", "name": "search", "arguments": {}, "_raw": 1}
    history = [assistant("", [first], _line=3), result("x"), assistant("", [second], _line=5)]
    history.append(result("x", "B", _line=6))
    repaired = repair_history(history)
    renamed_call = repaired.messages[2]["metadata"]["tool_calls"][0]
    assert list(renamed_call) == ["type", "tool_call_id", "name", "arguments", "_raw"]
    assert repaired.messages[2]["metadata"]["_line"] == 5
    assert list(repaired.messages[3]["metadata"]) == ["tool_call_id", "_line"]


def test_rename_writes_the_id_under_the_spelling_it_was_read_from() -> None:
    history = [
        assistant("", [{"id": "x", "name": "search"}]),
        {"role": "tool", "content": "A", "metadata": {"id": "x"}},
        assistant("", [{"id": "x", "name": "search"}]),
        {"role": "tool", "content": "B", "metadata": {"id": "x"}},
    ]
    repaired = repair_history(history)
    assert repaired.messages[2]["metadata"]["tool_calls"][0] == {"id": "x_1", "name": "search"}
    assert repaired.messages[3]["metadata"] == {"id": "x_1"}


def test_empty_ids_use_the_input_index_even_after_dropped_messages() -> None:
    history = [assistant("  "), user("go"), assistant("", [call(""), call("")])]
    history += [result("", "one"), result("", "two")]
    repaired = repair_history(history)
    ids = [c["tool_call_id"] for c in repaired.messages[1]["metadata"]["tool_calls"]]
    assert ids == ["call_2_0", "call_2_1"]
    assert [m["metadata"]["tool_call_id"] for m in repaired.messages[2:]] == ids
    assert contents(repaired.messages[2:]) == ["one", "two"]


def test_empty_id_result_pairs_by_name_where_both_have_one() -> None:
    history = [
        assistant("", [call("", "search"), call("", "read_file")]),
        {"role": "tool", "content": "file", "metadata": {"tool_call_id": "", "name": "read_file"}},
        {"role": "tool", "content": "hits", "metadata": {"tool_call_id": "", "name": "search"}},
    ]
    repaired = repair_history(history)
    assert contents(repaired.messages[1:]) == ["hits", "file"]
    assert "PAIR-2" in rules_of(repaired)


def test_generated_id_that_is_taken_gets_a_suffix() -> None:
    history = [assistant("", [call("call_2_0")]), result("call_2_0"), assistant("", [call("")])]
    history.append(result(""))
    repaired = repair_history(history)
    assert repaired.messages[2]["metadata"]["tool_calls"][0]["tool_call_id"] == "call_2_0_1"
    assert [a.rule for a in repaired.actions] == ["ID-2", "ID-2"]


def test_flat_id_spelling_pairs_like_tool_call_id() -> None:
    history = [assistant("", [{"id": "c1", "name": "search"}]), result("c1")]
    repaired = repair_history(history)
    assert repaired.actions == []
    assert repaired.messages == history


# -- MSG-1: blank placeholders -----------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    ["", " \n\t", None, [], [{"type": "text", "text": "  "}], [{"type": "text", "text": ""}]],
    ids=["empty", "whitespace", "none", "no-parts", "blank-part", "empty-part"],
)
def test_blank_assistant_message_is_dropped(content) -> None:
    history = [user("hi"), assistant(content), user("still there?")]
    repaired = repair_history(history)
    assert repaired.messages == [history[0], history[2]]
    assert repaired.actions == [Action("MSG-1", 1, None)]


def test_assistant_message_with_only_an_image_is_kept() -> None:
    history = [assistant([{"type": "image", "url": "https://example.com/a.png"}])]
    assert repair_history(history).messages[0] is history[0]


def test_blank_assistant_with_calls_is_kept() -> None:
    history = [assistant(" ", [call("c1")]), result("c1")]
    assert repair_history(history).actions == []


# -- INT-1 and INT-2: cut turns ----------------------------------------------------------


def test_partial_call_is_removed_and_the_prose_stays() -> None:
    history = [user("raise it"), assistant("On it.", [call("t1", "create_ticket", PARTIAL)])]
    repaired = repair_history(history)
    assert repaired.messages[1] == {"role": "assistant", "content": "On it.", "metadata": {}}
    assert repaired.messages[2]["metadata"] == {"note": "interruption"}
    assert repaired.interrupted == []
    int1 = repaired.actions[0]
    assert (int1.rule, int1.input_index, int1.output_index, int1.call_id) == ("INT-1", 1, 1, "t1")


def test_partial_call_with_a_result_is_kept() -> None:
    history = [assistant("", [call("t1", "create_ticket", PARTIAL)]), result("t1", "T-9")]
    repaired = repair_history(history)
    assert repaired.actions == []
    assert repaired.messages[0] is history[0]


def test_string_arguments_that_parse_are_not_partial() -> None:
    history = [assistant("", [call("c1", "search", '{"q": "x"}')]), user("and?")]
    assert rules_of(repair_history(history)) == ["PAIR-1"]


# "" is not among them: an empty string is no arguments, a complete call (SPEC §4 step 1).
@pytest.mark.parametrize("arguments", ["[1, 2]", "42", '{"a": 1'])
def test_string_arguments_that_are_not_an_object_are_partial(arguments: str) -> None:
    history = [assistant("Sure.", [call("c1", "search", arguments)]), user("and?")]
    assert rules_of(repair_history(history)) == ["INT-1", "INT-2"]


def test_only_the_partial_call_goes_and_its_note_follows_the_results() -> None:
    history = [
        assistant("Checking.", [call("c1", "search"), call("c2", "create_ticket", PARTIAL)]),
        result("c1", "none open"),
        user("hello?"),
    ]
    repaired = repair_history(history)
    assert [c["tool_call_id"] for c in repaired.messages[0]["metadata"]["tool_calls"]] == ["c1"]
    assert repaired.messages[1] is history[1]
    assert repaired.messages[2]["content"] == (
        "[system note: the previous assistant turn was interrupted before its call to"
        " create_ticket was complete; the tool was not run.]"
    )
    assert repaired.messages[3] is history[2]


def test_note_names_every_lost_call() -> None:
    calls = [call("a", "alpha", "{"), call("b", "beta", "{"), call("c", "gamma", "{")]
    note = repair_history([assistant("Going.", calls)]).messages[1]["content"]
    assert "its calls to alpha, beta and gamma were complete; the tools were not run." in note


def test_result_after_the_next_assistant_does_not_save_a_partial_call() -> None:
    history = [
        assistant("Let me file it.", [call("t1", "create_ticket", PARTIAL)]),
        assistant("Anything else?"),
        result("t1", "late"),
    ]
    repaired = repair_history(history)
    assert [m["role"] for m in repaired.messages] == ["assistant", "user", "assistant", "user"]
    assert set(rules_of(repaired)) == {"INT-1", "INT-2", "PAIR-3"}


def test_an_interruption_note_already_present_is_not_added_again() -> None:
    standing = user("[system note: cut]", note="interruption")
    history = [assistant("On it.", [call("t1", "create_ticket", PARTIAL)]), user("ok?"), standing]
    repaired = repair_history(history)
    assert rules_of(repaired) == ["INT-1"]
    assert repaired.messages[1:] == [history[1], standing]


def test_a_dropped_turn_leaves_its_note_where_it_stood() -> None:
    history = [
        user("raise it"),
        assistant("", [call("t1", "create_ticket", PARTIAL)]),
        user("hello?"),
    ]
    repaired = repair_history(history)
    assert [m["metadata"].get("note") for m in repaired.messages] == [None, "interruption", None]
    assert {a.rule for a in repaired.actions} == {"MSG-1", "INT-1", "INT-2"}


@pytest.mark.parametrize(
    ("cause", "words"),
    [("user_stop", "interrupted by the user before"), ("max_tokens", "by the output token limit")],
)
def test_note_names_the_cause_the_format_saw(cause: str, words: str) -> None:
    history = [assistant("On it.", [call("t1", "create_ticket", PARTIAL)]), user("stop")]
    assert words in repair_history(history, causes={0: cause}).messages[1]["content"]
    # A marker message after the cut (Claude Code's user stop) counts too.
    assert words in repair_history(history, causes={1: cause}).messages[1]["content"]


# -- the contract --------------------------------------------------------------------------


def test_valid_history_comes_back_as_the_same_objects() -> None:
    history = [
        system(),
        user(),
        assistant("", [call("c1"), call("c2")]),
        result("c1"),
        result("c2"),
        assistant("Done."),
    ]
    repaired = repair_history(history)
    assert repaired.messages is not history
    assert all(out is original for out, original in zip(repaired.messages, history, strict=True))
    assert not repaired.changed


def test_input_is_never_mutated() -> None:
    history = [
        user("go"),
        assistant("", [call(""), call("x"), call("x"), call("p", "t", PARTIAL)]),
        user("steer"),
        result("", "one", name="search"),
        result("x", "two"),
        assistant(" "),
        result("ghost", [{"type": "text", "text": "img"}]),
    ]
    before = copy.deepcopy(history)
    repair_history(history)
    assert history == before


def test_top_level_keys_beyond_the_canonical_three_are_kept() -> None:
    history = [assistant("", [call("x")]), result("x"), assistant("", [call("x")], _line=2)]
    history[2]["uuid"] = "u-2"
    out = repair_history(history).messages[2]
    assert list(out) == ["role", "content", "metadata", "uuid"]


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ({"messages": []}, "the transcript must be a list of messages, not dict"),
        ([user(), "hello"], "message 1: a message must be an object, not str"),
        ([{"content": "x"}], "message 0: the message has no role"),
        (
            [user(), {"role": "bot"}],
            "message 1: role 'bot' is not one of system, user, assistant, tool",
        ),
        ([{"role": "user", "metadata": []}], "message 0: metadata is not an object"),
        ([{"role": "user", "metadata": None}], "message 0: metadata is not an object"),
        ([assistant("", {"c": 1})], "message 0: tool_calls is not a list"),
        ([assistant("", ["c1"])], "message 0: tool call 0 must be an object, not str"),
        ([assistant("", [call(7)])], "message 0: call id 7 is not a string"),
        ([user(), result(["x"])], "message 1: call id ['x'] is not a string"),
    ],
    ids=[
        "not-a-list",
        "message-not-object",
        "no-role",
        "unknown-role",
        "metadata-list",
        "metadata-null",
        "tool-calls-not-list",
        "call-not-object",
        "call-id-not-string",
        "result-id-not-string",
    ],
)
def test_bad_input_raises_one_documented_error(history, message: str) -> None:
    with pytest.raises(InvalidTranscript) as caught:
        repair_history(history)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_bad_input_deep_in_a_healthy_history_names_its_index() -> None:
    history = [user(), assistant("", [call("c1")]), result("c1"), assistant("ok")] * 50
    history.append({"role": "narrator", "content": "x"})
    with pytest.raises(InvalidTranscript, match=r"^message 200: role 'narrator'"):
        repair_history(history)


def test_missing_metadata_is_read_as_empty() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert repair_history(history).messages == history


def test_the_engine_imports_no_django() -> None:
    engine = Path(__file__).resolve().parents[2] / "inspector" / "engine"
    for source in engine.glob("*.py"):
        text = source.read_text()
        assert "import django" not in text and "from django" not in text, source.name
    code = (
        "import sys, inspector.engine; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=engine.parents[1],
    )
    assert run.stdout.strip() == "[]"


def test_output_serialises_with_orjson() -> None:
    history = [assistant("", [call("")]), result("", "x"), result("g", "y")]
    assert orjson.loads(orjson.dumps(repair_history(history).messages))


def test_ids_restarting_every_reply_are_renamed_turn_after_turn() -> None:
    history = []
    for turn in range(5):
        history += [user(f"q{turn}"), assistant("", [call("functions.search:0")])]
        history.append(result("functions.search:0", f"r{turn}"))
    repaired = repair_history(history)
    ids = [m["metadata"]["tool_call_id"] for m in repaired.messages if m["role"] == "tool"]
    assert ids == [
        "functions.search:0",
        "functions.search:0_1",
        "functions.search:0_2",
        "functions.search:0_3",
        "functions.search:0_4",
    ]
    assert [a.input_index for a in repaired.actions] == [4, 5, 7, 8, 10, 11, 13, 14]
    assert all(repaired.messages[i] is history[i] for i in range(3))
    assert_valid(repaired.messages)


def test_not_started_names_the_calls_original_id() -> None:
    history = [assistant("", [call("x")]), result("x"), assistant("", [call("x", "create_ticket")])]
    repaired = repair_history(history, not_started={"x"})
    last = repaired.messages[-1]
    assert last["metadata"]["tool_call_id"] == "x_1"
    assert last["metadata"]["outcome"] == "not_started"
