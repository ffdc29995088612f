"""The conservation check: it finds every piece a repair lost, and only those."""

from __future__ import annotations

import pytest

from inspector.engine import Action, Repair
from inspector.engine import repair_history as engine_repair
from inspector.engine.conservation import ContentLost, check, losses

from .helpers import assistant, call, result, user

THINKING = {"type": "thinking", "thinking": "let me look", "signature": "sig"}
IMAGE = {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}


def lossy(messages, keep, actions=()):
    """A repair that kept only the messages at ``keep`` (what a buggy engine might do)."""
    return Repair([messages[i] for i in keep], [], list(actions))


def kinds(found):
    return [(loss.kind, loss.input_index) for loss in found]


def test_a_history_left_alone_loses_nothing():
    history = [user("go"), assistant("ok", [call("c1")]), result("c1"), assistant("done")]
    assert losses(history, engine_repair(history)) == []


def test_a_dropped_message_is_a_loss_of_each_of_its_pieces():
    history = [
        user("go"),
        assistant([{"type": "text", "text": "looking"}, THINKING, IMAGE], [call("c1")]),
        result("c1", "found it"),
    ]
    found = losses(history, lossy(history, [0]))
    assert kinds(found) == [
        ("text", 1),
        ("thinking", 1),
        ("image", 1),
        ("tool call", 1),
        ("tool result", 2),
    ]


def test_a_part_taken_out_of_a_kept_message_is_a_loss():
    history = [user("go"), assistant([{"type": "text", "text": "x"}, THINKING])]
    changed = {**history[1], "content": [{"type": "text", "text": "x"}]}
    found = losses(history, Repair([history[0], changed], [], []))
    assert kinds(found) == [("thinking", 1)]


def test_a_repeated_text_elsewhere_does_not_hide_a_lost_one():
    history = [user("same"), user("same")]
    assert kinds(losses(history, Repair([history[0]], [], []))) == [("text", 1)]


def test_renamed_moved_and_noted_pieces_are_found_again():
    history = [
        assistant("", [call("dup"), call("c2")]),
        user("steer while the tools ran"),
        result("c2", [{"type": "text", "text": "late"}, IMAGE]),
        result("dup", "first"),
        assistant("", [call("dup")]),
        result("dup", "second"),
        result("nobody-asked", "orphan text"),
        result("nobody-asked", [{"type": "text", "text": "orphan"}, IMAGE]),
    ]
    repaired = engine_repair(history)
    assert {a.rule for a in repaired.actions} >= {"ID-1", "PAIR-2", "PAIR-3"}
    assert losses(history, repaired) == []


def test_a_partial_call_removed_by_int_1_is_accounted_for_and_only_that_call():
    history = [user("go"), assistant("writing", [call("c1", arguments='{"title": "Mar')])]
    repaired = engine_repair(history)
    assert [a.rule for a in repaired.actions] == ["INT-1", "INT-2"]
    assert losses(history, repaired) == []
    # The same removal with no INT-1 action saying so is a loss.
    silent = Repair(repaired.messages, [], [a for a in repaired.actions if a.rule != "INT-1"])
    assert kinds(losses(history, silent)) == [("tool call", 1)]


def test_int_1_accounts_for_its_own_call_not_the_others_of_its_message():
    history = [assistant("", [call("c1", arguments='{"a'), call("c2")]), result("c2")]
    removed = Action("INT-1", 0, None, call_id="c1", call_index=0)
    found = losses(history, Repair([], [], [removed]))
    assert kinds(found) == [("tool call", 0), ("tool result", 1)]
    assert "call 1" in found[0].detail


def test_a_blank_placeholder_dropped_loses_nothing_but_one_with_thinking_does():
    blank = [user("go"), assistant(" "), assistant("answer")]
    repaired = engine_repair(blank)
    assert [a.rule for a in repaired.actions] == ["MSG-1"]
    assert losses(blank, repaired) == []
    thinking = [user("go"), assistant([{"type": "text", "text": " "}, THINKING])]
    assert kinds(losses(thinking, lossy(thinking, [0], [Action("MSG-1", 1, None)]))) == [
        ("thinking", 1)
    ]


def test_a_result_turned_into_a_note_with_its_content_changed_is_a_loss():
    history = [result("c9", "the real output")]
    repaired = engine_repair(history)
    assert losses(history, repaired) == []
    note = repaired.messages[0]
    altered = {**note, "content": note["content"].replace("real", "fake")}
    assert kinds(losses(history, Repair([altered], [], repaired.actions))) == [("tool result", 0)]


def test_check_refuses_a_lossy_repair_naming_what_it_would_lose():
    history = [user("go"), assistant("the answer the user waited for")]
    with pytest.raises(ContentLost, match="text of message 1") as raised:
        check(history, lossy(history, [0]))
    assert raised.value.index == 1
    check(history, engine_repair(history))
