"""SPEC §4's properties, checked by hypothesis over generated histories.

The generator builds agent turns the way real transcripts break: healthy
turns (so the fast path is exercised), whole turns whose ids collide (the
fast path's renaming), results missing, repeated, swapped
or late, steers typed while tools ran, blank placeholders, calls with
repeated, empty and Kimi-style ids, partial arguments, string arguments
that parse, empty and whitespace-only arguments (complete calls), images,
system messages and interruption notes already there.
Every text is unique, so "this text is in the output" means what it says.

The number of examples comes from the profile in ``conftest.py``
(``HYPOTHESIS_PROFILE``: ``ci`` by default).
"""

from __future__ import annotations

import copy
import os
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.engine.canonical import INTERRUPTED, call_id, is_blank, is_partial
from inspector.engine.providers import PROVIDERS
from inspector.engine.repair import Repair, _Repairer

from .helpers import assert_conserved, assert_valid, repair_history

PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

Message = dict[str, Any]

# Few ids, so they collide: Kimi's and Gemini's restarting ids, a generated
# name that ID-2 would also produce, and a suffix that ID-1 would produce.
IDS = ["c1", "c2", "functions.search:0", "functions.read_file:1", "call_0", "call_2_0", "c1_1", ""]
IDS += ["functions_search_0", "functions_search_0_1"]  # what ID-3 rewrites Kimi's id to
NAMES = ["search", "read_file", "create_ticket", None]
PARTIAL_ARGUMENTS = ['{"q": "mar', "[1]", '{"title": "March invoice run fai', " \n{"]
# An empty or all-whitespace string is no arguments, a complete call (SPEC §4 step 1).
WHOLE_ARGUMENTS = [{"q": "x"}, '{"q": "x"}', {}, "", " \n\t"]
IMAGE = {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}


@st.composite
def calls(draw: st.DrawFn, fresh: bool) -> list[Message]:
    made = []
    for _ in range(draw(st.integers(1, 3))):
        fresh_id = f"FRESH{len(made)}"
        cid = fresh_id if fresh or draw(st.booleans()) else draw(st.sampled_from(IDS))
        name = draw(st.sampled_from(NAMES))
        partial = not fresh and draw(st.integers(0, 5)) == 0
        arguments = draw(st.sampled_from(PARTIAL_ARGUMENTS if partial else WHOLE_ARGUMENTS))
        # MEM-11: the flat `id` spelling now and then; rarely no id key at all.
        spelling = "tool_call_id" if fresh else draw(st.sampled_from(["tool_call_id"] * 5 + ["id"]))
        call: Message = {spelling: cid}
        if not fresh and not cid and draw(st.booleans()):
            del call[spelling]
        if name is not None:
            call["name"] = name
        call["arguments"] = arguments
        made.append(call)
    return made


def _result(call: Message, content: Any, healed: bool = False) -> Message:
    metadata: Message = {"tool_call_id": call_id(call)}
    if not metadata["tool_call_id"] and call.get("name"):
        metadata["name"] = call["name"]
    if healed:
        metadata["healed"] = True
    return {"role": "tool", "content": content, "metadata": metadata}


@st.composite
def turn(draw: st.DrawFn) -> list[Message]:
    """One piece of history: usually an assistant turn with its results."""
    kind = draw(
        st.sampled_from(
            ["healthy", "healthy", "healthy", "reused", "reused", "broken", "broken", "broken",
             "prose", "user", "blank", "orphan", "note", "system"]
        )
    )  # fmt: skip
    if kind == "prose":
        return [{"role": "assistant", "content": "PROSE", "metadata": {}}]
    if kind == "user":
        content = "USER" if draw(st.booleans()) else [{"type": "text", "text": "USER"}, IMAGE]
        return [{"role": "user", "content": content, "metadata": {}}]
    if kind == "blank":
        content = draw(st.sampled_from(["", "  \n", None, [{"type": "text", "text": " "}]]))
        return [{"role": "assistant", "content": content, "metadata": {}}]
    if kind == "orphan":
        cid = draw(st.sampled_from(IDS))
        content = "RESULT" if draw(st.booleans()) else [{"type": "text", "text": "RESULT"}, IMAGE]
        return [{"role": "tool", "content": content, "metadata": {"tool_call_id": cid}}]
    if kind == "note":
        return [{"role": "user", "content": "NOTE", "metadata": {"note": "interruption"}}]
    if kind == "system":
        return [{"role": "system", "content": "SYSTEM", "metadata": {}}]

    healthy = kind == "healthy"
    made = draw(calls(fresh=healthy))
    content = draw(st.sampled_from(["", "PROSE"]))
    messages: list[Message] = [
        {"role": "assistant", "content": content, "metadata": {"tool_calls": made}}
    ]
    if healthy or kind == "reused":
        # Every call answered in order; "reused" ids collide (Kimi, Gemini).
        return messages + [_result(call, "RESULT") for call in made]
    order = draw(st.permutations(range(len(made))))
    for index in order:
        fate = draw(st.sampled_from(["answer", "answer", "answer", "missing", "twice", "steer"]))
        if fate == "missing":
            continue
        if fate == "steer":
            steer = draw(st.sampled_from(["user", "blank", "system"]))
            if steer == "blank":
                messages.append({"role": "assistant", "content": " ", "metadata": {}})
            else:
                messages.append({"role": steer, "content": steer.upper(), "metadata": {}})
        content = "RESULT" if draw(st.booleans()) else [{"type": "text", "text": "RESULT"}, IMAGE]
        messages.append(_result(made[index], content, healed=draw(st.integers(0, 9)) == 0))
        if fate == "twice":
            messages.append(_result(made[index], "RESULT"))
    return messages


def _number(history: list[Message]) -> list[Message]:
    """Give FRESH ids and every placeholder text a unique number, in history order.

    A turn's results come after its assistant message and before the next
    turn, so a result's ``FRESHk`` is the k-th fresh call of the latest
    assistant message with calls.
    """
    counter = 0
    fresh: dict[str, str] = {}
    for message in history:
        metadata = message["metadata"]
        if message["role"] == "assistant" and metadata.get("tool_calls"):
            fresh = {}
            for call in metadata["tool_calls"]:
                for key in ("tool_call_id", "id"):
                    value = call.get(key)
                    if isinstance(value, str) and value.startswith("FRESH"):
                        counter += 1
                        fresh[value] = call[key] = f"toolu_{counter:04d}"
        elif message["role"] == "tool" and metadata["tool_call_id"].startswith("FRESH"):
            metadata["tool_call_id"] = fresh[metadata["tool_call_id"]]
        content = message.get("content")
        holders = content if isinstance(content, list) else [message]
        for holder in holders:
            key = "content" if holder is message else "text"
            text = holder.get(key)
            if isinstance(text, str) and text.isalpha() and text.isupper():
                counter += 1
                holder[key] = f"{text.lower()} {counter}"
    return history


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    turns = draw(st.lists(turn(), max_size=12))
    return _number([message for piece in turns for message in piece])


def dumps(messages: list[Message]) -> bytes:
    return orjson.dumps(messages)


def surely_ends_a_span(message: Message) -> bool:
    """SPEC §4: non-blank content, or a call whose arguments parse (as an object)."""
    if message["role"] != "assistant":
        return False
    if not is_blank(message.get("content")):
        return True
    return any(
        not is_partial(call.get("arguments")) for call in message["metadata"].get("tool_calls", ())
    )


def repair_slowly(history: list[Message]) -> list[Message]:
    """The same repair with the fast loop switched off: plain path only.

    ``segment`` may start wherever no span is open, and returns where the
    next one starts, so walking the history with it alone is a complete,
    independent implementation to hold the fast loop against.
    """
    repairer = _Repairer(history, None, None, None)
    position = 0
    while position < len(history):
        position = repairer.segment(position)
    return repairer.out


@PROFILE
@given(histories())
def test_repaired_history_is_valid(history: list[Message]) -> None:
    assert_valid(repair_history(history).messages)


@PROFILE
@given(histories())
def test_repair_is_deterministic(history: list[Message]) -> None:
    twin = copy.deepcopy(history)
    assert dumps(repair_history(history).messages) == dumps(repair_history(twin).messages)


@PROFILE
@given(histories())
def test_repair_is_idempotent(history: list[Message]) -> None:
    once = repair_history(history)
    twice = repair_history(once.messages)
    assert dumps(twice.messages) == dumps(once.messages)
    assert twice.actions == []
    assert all(a is b for a, b in zip(twice.messages, once.messages, strict=True))


@PROFILE
@given(histories())
def test_repair_is_prefix_stable(history: list[Message]) -> None:
    whole = [dumps([m]) for m in repair_history(history).messages]
    for cut, message in enumerate(history):
        if surely_ends_a_span(message):
            shorter = [dumps([m]) for m in repair_history(history[:cut]).messages]
            assert shorter == whole[: len(shorter)], f"cut at {cut}"


@PROFILE
@given(histories())
def test_the_rest_after_a_cut_repairs_alone_given_its_offset_and_the_ids_before(
    history: list[Message],
) -> None:
    """``offset`` and ``assigned``: at each SPEC cut, repairing only what follows it, told
    its index in the whole and the ids the repair of the start gave out, gives what
    follows the start's repair in the repair of the whole (the guard's tail repair)."""
    whole = [dumps([m]) for m in repair_history(history).messages]
    for cut, message in enumerate(history):
        if not surely_ends_a_span(message):
            continue
        start = repair_history(history[:cut]).messages
        given = [call_id(c) for m in start for c in m["metadata"].get("tool_calls") or ()]
        rest = repair_history(history[cut:], offset=cut, assigned=given).messages
        assert [dumps([m]) for m in rest] == whole[len(start) :], f"cut at {cut}"


@PROFILE
@given(histories())
def test_the_defaults_repair_a_whole_history(history: list[Message]) -> None:
    """No offset and nothing assigned is the plain repair, byte for byte."""
    plain = repair_history(history)
    spelt = repair_history(history, offset=0, assigned=())
    assert dumps(spelt.messages) == dumps(plain.messages)
    assert spelt.actions == plain.actions


@PROFILE
@given(histories())
def test_repair_is_conservative(history: list[Message]) -> None:
    repaired = repair_history(history)
    out = repaired.messages
    texts = {m["content"] for m in out if isinstance(m.get("content"), str)}
    note_tails = {text.split("\n", 1)[1] for text in texts if text.startswith("[note:")}
    part_lists = [m["content"] for m in out if isinstance(m.get("content"), list)]
    kept_objects = {id(m) for m in out}
    for message in history:
        content = message.get("content")
        if message["role"] == "tool":
            if isinstance(content, str):
                assert content in texts or content in note_tails, content
            else:
                assert any(parts[-len(content) :] == content for parts in part_lists), content
        elif message["role"] in ("user", "system"):
            assert id(message) in kept_objects, content
        elif not is_blank(content):
            assert any(m["role"] == "assistant" and m["content"] == content for m in out)
    # A result the engine made is marked; a real one never is.
    real = {
        m["content"]
        for m in history
        if m["role"] == "tool" and isinstance(m["content"], str) and not m["metadata"].get("healed")
    }
    inputs = {id(m) for m in history}
    for message in out:
        if message["role"] != "tool":
            continue
        content = message["content"]
        healed = message["metadata"].get("healed") is True
        if isinstance(content, str) and content in real:
            assert not healed, content
        if healed and id(message) not in inputs:
            # Made by the engine, or a renamed copy of a result that was already healed.
            made = isinstance(content, str) and content.startswith(INTERRUPTED)
            assert made or any(m["content"] == content for m in history if m["role"] == "tool")


@PROFILE
@given(histories())
def test_the_plain_path_loses_nothing_either(history: list[Message]) -> None:
    # The fast loop's repairs are checked by ``helpers.repair_history`` in every test here.
    repairer = _Repairer(history, None, None, None)
    position = 0
    while position < len(history):
        position = repairer.segment(position)
    assert_conserved(history, Repair(repairer.out, repairer.interrupted, repairer.actions))


@PROFILE
@given(histories())
def test_repair_never_mutates_its_input(history: list[Message]) -> None:
    before = copy.deepcopy(history)
    repair_history(history)
    assert history == before
    assert dumps(history) == dumps(before)


@PROFILE
@given(histories())
def test_untouched_messages_keep_their_identity(history: list[Message]) -> None:
    repaired = repair_history(history)
    inputs = {id(m) for m in history}
    rewritten = {
        a.output_index
        for a in repaired.actions
        if a.rule in ("ID-1", "ID-2", "INT-1", "PAIR-1", "PAIR-3", "INT-2")
    }
    for index, message in enumerate(repaired.messages):
        if index not in rewritten:
            assert id(message) in inputs, f"output {index} is a copy of an untouched message"
        else:
            assert id(message) not in inputs, f"output {index} changed but is the input's object"


@PROFILE
@given(histories())
def test_actions_point_at_what_they_describe(history: list[Message]) -> None:
    repaired = repair_history(history)
    out = repaired.messages
    for action in repaired.actions:
        if action.rule == "PAIR-1":
            assert action.input_index is None
            assert out[action.output_index]["metadata"]["healed"] is True
            assert out[action.output_index]["metadata"]["tool_call_id"] == action.call_id
        elif action.rule == "PAIR-2":
            assert out[action.output_index]["content"] == history[action.from_index]["content"]
        elif action.rule == "PAIR-3":
            assert out[action.output_index]["metadata"]["note"] == "orphan_result"
            assert history[action.input_index]["role"] == "tool"
        elif action.rule == "MSG-1":
            assert action.output_index is None
            assert history[action.input_index]["role"] == "assistant"
        elif action.rule == "INT-2":
            assert out[action.output_index]["metadata"] == {"note": "interruption"}
        elif action.rule in ("ID-1", "ID-2"):
            assert action.old_id != action.new_id
            assert (action.rule == "ID-2") == (action.old_id == "")
    assert repaired.changed == (dumps(out) != dumps(history))


@PROFILE
@given(histories())
def test_fast_loop_agrees_with_the_plain_path(history: list[Message]) -> None:
    fast = repair_history(history).messages
    slow = repair_slowly(history)
    assert dumps(fast) == dumps(slow)


@PROFILE
@given(histories())
def test_partial_calls_stay_only_where_a_real_result_answers_them(history: list[Message]) -> None:
    repaired = repair_history(history)
    made = {a.output_index for a in repaired.actions if a.rule == "PAIR-1"}
    for index, message in enumerate(repaired.messages):
        for k, call in enumerate(message["metadata"].get("tool_calls", ())):
            if is_partial(call.get("arguments")):
                assert index + 1 + k not in made, f"partial call at {index} got a made-up result"


@PROFILE
@given(histories())
def test_every_cut_turn_carries_one_interruption_note(history: list[Message]) -> None:
    repaired = repair_history(history)
    out = repaired.messages

    def notes_after(position: int) -> list[int]:
        found = []
        for index in range(position + 1, len(out)):
            if out[index]["role"] == "assistant":
                break
            if out[index]["metadata"].get("note") == "interruption":
                found.append(index)
        return found

    added = {a.output_index for a in repaired.actions if a.rule == "INT-2"}
    for action in repaired.actions:
        if action.rule == "INT-1" and action.output_index is not None:
            assert notes_after(action.output_index), f"turn at {action.output_index} has no note"
    for index in added:
        # Never added where a note already stood before the next assistant message.
        assert not [i for i in notes_after(index) if i not in added]
    before = sum(1 for m in history if m["metadata"].get("note") == "interruption")
    after = sum(1 for m in out if m["metadata"].get("note") == "interruption")
    assert after == before + len(added)


# The list each provider's body holds the history in.
WIRE_LISTS = {"openai-chat": "messages", "anthropic": "messages", "responses": "input"}
WIRE_LISTS["gemini"] = "contents"


def ends_a_turn(messages: list[Message], cut: int) -> bool:
    """A user's message right after an assistant's reply with no calls: no body joins the two."""
    before = messages[cut - 1] if cut else None
    return (
        before is not None
        and messages[cut]["role"] == "user"
        and before["role"] == "assistant"
        and not before["metadata"].get("tool_calls")
    )


@PROFILE
@given(histories())
def test_export_is_prefix_stable(history: list[Message]) -> None:
    """The export of a repaired history's prefix is the prefix of its export (ID-3 too).

    Ids a provider refuses are rewritten so that what follows a call never
    changes the id it is sent under; cut where a turn ends, each provider's
    body of the prefix is the start of the whole one's.
    """
    repaired = repair_history(history).messages
    for provider in PROVIDERS:
        whole, renamed = formats.export_wire(repaired, provider)
        items = whole[WIRE_LISTS[provider]]
        for cut in range(len(repaired) + 1):
            part, part_renamed = formats.export_wire(repaired[:cut], provider)
            assert part_renamed == {k: v for k, v in renamed.items() if k in part_renamed}
            if cut == len(repaired) or ends_a_turn(repaired, cut):
                prefix = part[WIRE_LISTS[provider]]
                assert prefix == items[: len(prefix)], (provider, cut)
