"""Skeleton bodies: every provider check finds in them what it finds in the real body.

``inspector.diagnosis._skeleton`` writes, for a regular history, only what the
checks read. These tests hold it to ``to_wire`` and ``export_wire``: over
generated histories made mostly of regular messages (with ids the providers
refuse, duplicates, orphans and missing results, so the checks have
something to find), over every corpus transcript and its repair, and on the
messages that make a history irregular.
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.diagnosis import _skeleton as skeleton
from inspector.diagnosis import provider_verdicts, repair_parsed
from inspector.diagnosis.verdicts import _Wires
from inspector.engine import repair_history
from inspector.engine.providers import ANTHROPIC_ID_PATTERN, PROVIDERS, _validate_from, validate
from tests.diagnosis.test_diagnosis_equivalence import histories_and_repairs, plain_verdicts
from tests.diagnosis.test_diagnosis_equivalence import messages as any_messages
from tests.testdata import CORPUS, files, read

Message = dict[str, Any]

# ``make fuzz`` (HYPOTHESIS_PROFILE=fuzz) runs many more.
COUNT = {"ci": 300, "dev": 50, "fuzz": 5000}[os.environ.get("HYPOTHESIS_PROFILE", "ci")]
EXAMPLES = settings(max_examples=COUNT, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Ids each provider takes, and ids some refuse: Anthropic's pattern, Responses' 64 characters.
LONG_ID = "call_" + "7" * 60
IDS = ["c1", "c2", "c3", "functions.search:0", "x y", "é", "call_1", LONG_ID]
TEXTS = ["hi", "found 3", " padded ", "line\nline"]
THINKING = [
    {"type": "thinking", "thinking": "let me see", "signature": "sig"},
    {"type": "thinking", "thinking": "", "signature": "sig"},
    {"type": "redacted_thinking", "data": "opaque"},
]
# Arguments as text: JSON objects are regular (OpenAI Chat's, Codex's calls), anything
# else is not, and the real bodies are made.
OBJECT_TEXTS = ['{"q": 1}', "{}", ' \n{"q": {"r": [1, 2]}} ', '{"q": "\\u00e9"}']
OTHER_TEXTS = [
    '{"q": ',  # cut mid-stream
    "plain",
    "",
    " \t",
    "[1]",
    "[]",
    "3",
    "-0.5",
    '"text"',
    "null",
    "true",
    '\ufeff{"q": 1}',  # not JSON whitespace
    '\x0c{"q": 1}',
    '{"q": 1} trailing',
    '{"q": 1}{"r": 2}',
]
TOOL_PARTS = [
    [{"type": "text", "text": "ok"}],
    [{"type": "text", "text": ""}, {"type": "image", "media_type": "image/png", "data": "AAAA"}],
    [{"type": "tool_reference", "tool_name": "search"}],
    [],
]


@st.composite
def regular_messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["user", "assistant", "assistant", "tool", "tool"]))
    metadata: Message = {}
    if draw(st.integers(0, 3)) == 0:
        metadata["_src"] = draw(st.integers(0, 9))  # a shape module's private key
    if role == "tool":
        metadata["tool_call_id"] = draw(st.sampled_from(IDS))
        if draw(st.booleans()):
            metadata["name"] = "search"
        content = draw(st.sampled_from([*TEXTS, "", *TOOL_PARTS]))
        return {"role": role, "content": copy.deepcopy(content), "metadata": metadata}
    if role == "assistant" and draw(st.booleans()):
        metadata["tool_calls"] = [
            {
                draw(st.sampled_from(["tool_call_id", "id"])): draw(st.sampled_from(IDS)),
                "name": draw(st.sampled_from(["search", "read"])),
                "arguments": draw(
                    st.one_of(
                        st.builds(lambda q: {"q": q}, st.integers(0, 3)),
                        st.sampled_from(OBJECT_TEXTS),
                    )
                ),
            }
            for _ in range(draw(st.integers(1, 3)))
        ]
    if draw(st.booleans()):
        content: Any = draw(st.sampled_from(TEXTS))
    else:
        texts = draw(st.lists(st.sampled_from(TEXTS), min_size=1, max_size=3))
        content = [{"type": "text", "text": text} for text in texts]
        if role == "assistant":
            # Codex's message items: each text part may carry the phase of its item, and
            # a change of phase between parts is a new item in the Responses body.
            for part in content:
                phase = draw(st.sampled_from([None, None, "commentary", "final_answer"]))
                if phase is not None:
                    part["item"] = {"phase": phase}
            # Claude Code's thinking blocks, before, between and after the text.
            for _ in range(draw(st.integers(0, 3))):
                at = draw(st.integers(0, len(content)))
                content.insert(at, copy.deepcopy(draw(st.sampled_from(THINKING))))
            if metadata.get("tool_calls") and draw(st.booleans()):
                content = [part for part in content if part["type"] != "text"]
    if metadata.get("tool_calls") and draw(st.integers(0, 2)) == 0:
        content = draw(st.sampled_from(["", []]))
    return {"role": role, "content": content, "metadata": metadata}


@st.composite
def regular_histories(draw: st.DrawFn) -> list[Message]:
    systems = [
        {"role": "system", "content": "be brief", "metadata": {}}
        for _ in range(draw(st.integers(0, 2)))
    ]
    return systems + draw(st.lists(regular_messages(), min_size=1, max_size=14))


@st.composite
def mostly_regular_histories(draw: st.DrawFn) -> list[Message]:
    history = draw(regular_histories())
    if draw(st.integers(0, 3)) == 0:  # now and then one message of any kind
        history.insert(draw(st.integers(0, len(history))), draw(any_messages()))
    return history


@st.composite
def argued(draw: st.DrawFn, histories: st.SearchStrategy[list[Message]]) -> list[Message]:
    """A history of ``histories`` where, now and then, some calls carry text arguments of
    any kind: a JSON object's text keeps it regular, anything else makes it irregular (a
    regular start then ends there)."""
    history = draw(histories)
    calls = [call for m in history for call in m["metadata"].get("tool_calls") or ()]
    if calls and draw(st.integers(0, 2)):
        for call in draw(st.lists(st.sampled_from(calls), min_size=1, max_size=3)):
            call["arguments"] = draw(st.sampled_from([*OBJECT_TEXTS, *OTHER_TEXTS]))
    return history


@st.composite
def turned_histories(draw: st.DrawFn) -> list[Message]:
    """Rounds of a working session (answered calls, ids used once) with a few defects in.

    Unlike ``mostly_regular_histories``, these have long quiet stretches, so
    the checks start after a quiet prefix, and the defects (a missing or
    extra result, a reused id, an id Anthropic refuses, a result out of
    place...) fall before, inside and after it.
    """
    history: list[Message] = [msg("system", "be brief")] if draw(st.booleans()) else []
    number = 0
    for _ in range(draw(st.integers(1, 6))):
        if history or draw(st.booleans()):  # now and then the session opens with a call
            history.append(msg("user", draw(st.sampled_from(TEXTS))))
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"toolu_{number + k}" for k in range(draw(st.integers(1, 3)))]
            number += len(ids)
            calls = [
                {
                    "tool_call_id": cid,
                    "name": "read",
                    "arguments": copy.deepcopy(
                        draw(st.sampled_from([{}, {"path": "a"}, *OBJECT_TEXTS]))
                    ),
                }
                for cid in ids
            ]
            text = draw(st.sampled_from(["", "let me look", [{"type": "text", "text": "a"}]]))
            if draw(st.booleans()):
                history.append(msg("assistant", "first, a word"))
            history.append(msg("assistant", text, tool_calls=calls))
            for cid in draw(st.permutations(ids)):
                history.append(msg("tool", "ok", tool_call_id=cid))
        if draw(st.booleans()):
            history.append(msg("assistant", draw(st.sampled_from(TEXTS))))
    for _ in range(draw(st.integers(0, 2))):
        _break(draw, history)
    return history


def _break(draw: st.DrawFn, history: list[Message]) -> None:
    leading = 1 if history and history[0]["role"] == "system" else 0
    at = draw(st.integers(leading, len(history)))  # a later system message is irregular
    calls = [i for i, m in enumerate(history) if m["metadata"].get("tool_calls")]
    results = [i for i, m in enumerate(history) if m["role"] == "tool"]
    kind = draw(st.sampled_from(["drop", "repeat", "move", "stray", "reuse", "refused", "cut"]))
    if kind == "drop" and results:
        del history[draw(st.sampled_from(results))]
    elif kind == "repeat" and results:
        history.insert(at, copy.deepcopy(history[draw(st.sampled_from(results))]))
    elif kind == "move" and results:
        history.insert(at, history.pop(draw(st.sampled_from(results))))
    elif kind == "stray":
        history.insert(at, msg("tool", "lost", tool_call_id="toolu_stray"))
    elif kind in ("reuse", "refused") and calls:
        message = history[draw(st.sampled_from(calls))]
        call = message["metadata"]["tool_calls"][0]
        old = call["tool_call_id"]
        refused = ["x y", "functions.a:0", LONG_ID]
        new = "toolu_0" if kind == "reuse" else draw(st.sampled_from(refused))
        call["tool_call_id"] = new
        for other in history:
            if other["role"] == "tool" and other["metadata"]["tool_call_id"] == old:
                other["metadata"]["tool_call_id"] = new
    else:
        history.append(msg("assistant", "", tool_calls=[{**CALL, "tool_call_id": "toolu_end"}]))


def problems(provider: str, body: Any) -> list[tuple[Any, ...]]:
    return [(p.index, p.path, p.text, p.code, p.ids) for p in validate(provider, body)]


@EXAMPLES
@given(regular_histories())
def test_generated_regular_histories_are_regular(history):
    # Otherwise the equivalence tests below would only ever see the real bodies.
    assert skeleton.digests(formats.strip_private(history), {}) is not None


@EXAMPLES
@given(turned_histories())
def test_turned_histories_are_regular(history):
    assert skeleton.digests(formats.strip_private(history), {}) is not None


@EXAMPLES
@given(turned_histories(), turned_histories(), st.integers(0, 40), st.booleans())
def test_a_walk_resumed_from_a_shared_start_is_the_walk_from_scratch(first, second, keep, repair):
    # The repaired history, or the first one's start followed by another's messages.
    later = list(repair_history(first).messages) if repair else first[:keep] + second
    memo: dict[int, Any] = {}
    before, after = skeleton.digests(first, memo), skeleton.digests(later, memo)
    if after is None:  # a system message after the start
        return
    shared = 0
    while shared < min(len(before), len(after)) and before[shared] is after[shared]:
        shared += 1
    assert skeleton.walk(after, (skeleton.walk(before), shared)) == skeleton.walk(after)


@EXAMPLES
@given(st.one_of(turned_histories(), regular_histories()))
def test_the_digests_list_the_ids_the_messages_hold(history):
    digests = skeleton.digests(history, {})
    assert skeleton.ids(digests) == formats.history_ids(history)


@EXAMPLES
@given(st.one_of(turned_histories(), regular_histories()))
def test_each_cut_counts_the_items_of_the_body_before_it(history):
    digests = skeleton.digests(formats.strip_private(history), {})
    for cut in skeleton.walk(digests).cuts:
        for provider in PROVIDERS:
            wire = skeleton.BUILDERS[provider](digests[: cut.at])  # every item made
            assert cut.items[provider] == len(next(iter(wire.values()))), (provider, cut)
        # Strict: Anthropic's pattern takes every id before the cut.
        before = [cid for digest in digests[: cut.at] for cid in digest[4]]
        assert cut.strict == all(re.fullmatch(ANTHROPIC_ID_PATTERN, cid) for cid in before), cut


@EXAMPLES
@given(st.one_of(argued(turned_histories()), argued(mostly_regular_histories())))
def test_checks_after_a_quiet_prefix_find_what_they_find_in_the_body(history):
    repaired = list(repair_history(history).messages)
    wires = _Wires(history, repaired)
    for provider in PROVIDERS:
        expected = problems(provider, formats.to_wire(history, provider))
        assert [astuple(p) for p in wires.problems_before(provider)] == expected
        exported, _ = formats.export_wire(repaired, provider)
        assert [astuple(p) for p in wires.problems_after(provider)] == problems(provider, exported)


@EXAMPLES
@given(histories_and_repairs())
def test_checks_of_a_later_history_sharing_messages_find_what_they_find_in_its_body(pair):
    before, after = pair
    wires = _Wires(before, after)
    for provider in PROVIDERS:
        assert [astuple(p) for p in wires.problems_before(provider)] == problems(
            provider, formats.to_wire(before, provider)
        )
        exported, _ = formats.export_wire(after, provider)
        assert [astuple(p) for p in wires.problems_after(provider)] == problems(provider, exported)


def test_a_later_system_message_after_a_shared_start_is_still_irregular():
    start = [msg("system", "be brief"), msg("user", "hi")]
    later = [*start, msg("system", "now be long"), msg("assistant", "ok")]
    wires = _Wires(start, later)
    assert wires.problems_before("anthropic") == []
    exported, _ = formats.export_wire(later, "anthropic")
    assert [astuple(p) for p in wires.problems_after("anthropic")] == problems(
        "anthropic", exported
    )
    assert wires.after("anthropic", for_checks=True) == exported  # the real body, not a skeleton


def astuple(p: Any) -> tuple[Any, ...]:
    return (p.index, p.path, p.text, p.code, p.ids)


def test_the_checks_skip_the_quiet_turns_before_a_defect_and_find_it():
    rounds = []
    for n in range(3):
        call = {**CALL, "tool_call_id": f"toolu_{n}"}
        rounds += [
            msg("user", "go on"),
            msg("assistant", "reading", tool_calls=[call]),
            msg("tool", "ok", tool_call_id=f"toolu_{n}"),
            msg("assistant", "done"),
        ]
    cut_call = msg("assistant", "", tool_calls=[{**CALL, "tool_call_id": "toolu_9"}])
    history = [*rounds, msg("user", "once more"), cut_call]
    digests = skeleton.digests(history, {})
    found = skeleton.walk(digests)
    for provider in PROVIDERS:
        assert skeleton.quiet_prefix(provider, digests, found)[0] == len(rounds)
        wire, start = skeleton.quiet_body(provider, digests, {})
        assert start > 0
        assert problems(provider, wire) == problems(provider, formats.to_wire(history, provider))
        skipped = [astuple(p) for p in _validate_from(provider, wire, start)]
        assert skipped == problems(provider, wire)
    # The first round's id used again after the prefix ties it to the rest:
    # the prefix ends before that round, and the reuse is found.
    reused = [*history[:-1], msg("tool", "late", tool_call_id="toolu_0")]
    digests = skeleton.digests(reused, {})
    assert skeleton.quiet_prefix("openai-chat", digests, skeleton.walk(digests))[0] == 0
    reused = [*history[:-1], msg("assistant", "", tool_calls=[{**CALL, "tool_call_id": "toolu_1"}])]
    digests = skeleton.digests(reused, {})
    assert skeleton.quiet_prefix("anthropic", digests, skeleton.walk(digests))[0] == 4
    # Anthropic accepts an id used again in a later turn (oracle anthropic/..._c74b20);
    # Responses refuses it.
    found = [astuple(p) for p in _Wires(reused, reused).problems_before("anthropic")]
    assert found == problems("anthropic", formats.to_wire(reused, "anthropic"))
    assert [p[3] for p in found] == ["missing_result"]
    assert skeleton.quiet_prefix("responses", digests, skeleton.walk(digests))[0] == 4
    found = [astuple(p) for p in _Wires(reused, reused).problems_before("responses")]
    assert found == problems("responses", formats.to_wire(reused, "responses"))
    assert [p[3] for p in found] == ["duplicate_call_id"]
    # An id Anthropic refuses ends Anthropic's prefix only.
    refused = copy.deepcopy(history)
    refused[5]["metadata"]["tool_calls"][0]["tool_call_id"] = "functions.read:1"
    refused[6]["metadata"]["tool_call_id"] = "functions.read:1"
    digests = skeleton.digests(refused, {})
    found = skeleton.walk(digests)
    assert skeleton.quiet_prefix("anthropic", digests, found)[0] == 4
    assert skeleton.quiet_prefix("gemini", digests, found)[0] == len(rounds)


def test_a_regular_start_that_is_not_quiet_is_checked_as_its_skeleton():
    # A call left unanswered in the first turn: no quiet prefix. The history is regular
    # up to its last prompt, which holds an image: the body is the skeleton's items up
    # to the last user's message after a reply among the regular ones, then the real
    # body of the rest, and the checks find in it what they find in the real body.
    image = {"type": "image", "media_type": "image/png", "data": "iVBORw0K"}
    history = [
        msg("system", "be brief"),
        msg("user", "go"),
        msg("assistant", [THINKING[0], {"type": "text", "text": "a"}], tool_calls=[CALL]),
        msg("user", "what now"),
        msg("assistant", [THINKING[0], {"type": "text", "text": "b"}]),
        msg("user", "and then"),
        msg("assistant", "reading", tool_calls=[{**CALL, "tool_call_id": "x y"}]),
        msg("tool", "ok", tool_call_id="x y"),
        msg("assistant", [THINKING[0], {"type": "text", "text": "c"}]),
        msg("user", [{"type": "text", "text": "look"}, image]),
        msg("assistant", "I see"),
    ]
    start = skeleton.regular_start(history)
    assert len(start) == 9 and skeleton.turn_cut(start) == 5
    repaired = list(repair_history(history).messages)
    wires = _Wires(history, repaired)
    for provider in PROVIDERS:
        expected = problems(provider, formats.to_wire(history, provider))
        assert expected  # the unanswered call
        assert [astuple(p) for p in wires.problems_before(provider)] == expected
        assert wires._problems_after_regular_start(provider, 0, {}) is not None  # this path
        exported, _ = formats.export_wire(repaired, provider)
        assert [astuple(p) for p in wires.problems_after(provider)] == problems(provider, exported)


@EXAMPLES
@given(argued(mostly_regular_histories()))
def test_checks_find_in_the_skeleton_what_they_find_in_the_body(history):
    clean = formats.strip_private(history)
    digests = skeleton.digests(clean, {})
    for provider in PROVIDERS:
        expected = problems(provider, formats.to_wire(history, provider))
        if digests is not None:
            assert problems(provider, skeleton.body(provider, digests, {})) == expected
        assert (
            problems(provider, _Wires(history, history).before(provider, for_checks=True))
            == expected
        )


@EXAMPLES
@given(argued(mostly_regular_histories()))
def test_checks_find_in_the_exported_skeleton_what_they_find_in_the_export(history):
    repaired = list(repair_history(history).messages)
    wires = _Wires(history, repaired)
    for provider in PROVIDERS:
        exported, _ = formats.export_wire(repaired, provider)
        assert problems(provider, wires.after(provider, for_checks=True)) == problems(
            provider, exported
        )


@EXAMPLES
@given(st.one_of(argued(turned_histories()), argued(mostly_regular_histories())))
def test_verdicts_through_skeletons_match_the_plain_definition(history):
    repaired = list(repair_history(history).messages)
    if len(repaired) > 1 and repaired[-1]["role"] != "tool":
        repaired = repaired + copy.deepcopy(history[-1:])  # a repaired history that is not valid
    assert provider_verdicts(history, repaired) == plain_verdicts(history, repaired)


def corpus_files() -> list[Any]:
    return files(CORPUS)


def test_corpus_verdicts_through_skeletons_match_the_real_bodies():
    regular = 0
    for path in corpus_files():
        try:
            parsed = formats.load(read(path))
        except formats.FormatError:
            continue
        repaired = repair_parsed(parsed).messages
        got = provider_verdicts(parsed.messages, repaired)
        assert got == plain_verdicts(parsed.messages, repaired), path.name
        regular += skeleton.digests(formats.strip_private(parsed.messages), {}) is not None
    # Most of the corpus takes the skeleton path, so this compared something.
    assert regular >= 50


def msg(role: str, content: Any, **metadata: Any) -> Message:
    return {"role": role, "content": content, "metadata": metadata}


CALL = {"tool_call_id": "c1", "name": "read", "arguments": {"path": "a"}}


@pytest.mark.parametrize(
    "message",
    [
        msg("user", "   "),
        msg("user", ""),
        msg("user", []),
        msg("user", [{"type": "text", "text": ""}]),
        msg("user", [{"type": "image", "url": "https://example.com/a.png"}]),
        msg("assistant", [{"type": "thinking", "thinking": "hmm"}]),
        msg("user", [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "a"}]),
        msg("assistant", [{"type": "reasoning", "text": "r"}, {"type": "text", "text": "a"}]),
        msg("assistant", "", tool_calls=[{**CALL, "tool_call_id": 7}]),
        msg("assistant", ""),
        msg("user", "hi", tool_calls=[CALL]),
        msg("tool", ["ok"], tool_call_id="c1"),
        msg("tool", {"text": "ok"}, tool_call_id="c1"),
        msg("tool", "ok", tool_call_id=""),
        msg("tool", "ok"),
        msg("system", [{"type": "text", "text": " "}]),
        msg("developer", "hi"),
        {"role": "user", "content": "hi", "metadata": "not an object"},
        # Thinking another tool wrote without a signature: Anthropic's export leaves it out.
        msg("assistant", [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "a"}]),
        msg("assistant", [{"type": "redacted_thinking"}], tool_calls=[CALL]),
        # A Responses body's instructions: not an item of its input.
        msg("system", "be brief", instructions=True),
        # Arguments as text that is no JSON object: Anthropic's input and Gemini's args
        # would be something else than the object the skeleton stands for.
        *(msg("assistant", "", tool_calls=[{**CALL, "arguments": text}]) for text in OTHER_TEXTS),
        msg("assistant", "", tool_calls=[{"tool_call_id": "c1", "name": "read"}]),
        msg("assistant", "", tool_calls=[{**CALL, "arguments": None}]),
        msg("assistant", "", tool_calls=[{**CALL, "arguments": ["path", "a"]}]),
        # Codex's reasoning items, sent first in the Responses body.
        msg("assistant", "a", reasoning=[{"type": "reasoning", "summary": []}]),
        msg("assistant", "", tool_calls=[CALL], reasoning=[{"type": "reasoning", "summary": []}]),
        # One call's text arguments are enough.
        msg("assistant", "", tool_calls=[CALL, {**CALL, "tool_call_id": "c2", "arguments": "[]"}]),
        # The id of the Responses message item it was read from: the checks read item ids.
        msg("assistant", [{"type": "text", "text": "a", "item": {"id": "msg_1"}}]),
        msg("assistant", [{"type": "text", "text": "a", "item": "msg_1"}]),
    ],
)
def test_messages_the_skeletons_do_not_cover_are_irregular(message):
    assert skeleton.digest(message) is None


@pytest.mark.parametrize(
    "message",
    [
        msg("user", "hi"),
        msg("user", [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        msg("assistant", "", tool_calls=[CALL]),
        msg("assistant", [], tool_calls=[CALL]),
        msg("assistant", "let me look", tool_calls=[CALL, {**CALL, "tool_call_id": "c2"}]),
        msg("tool", "", tool_call_id="c1"),
        msg("tool", [{"type": "text", "text": "ok"}], tool_call_id="c1"),
        msg(
            "assistant",
            [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "a"},
            ],
        ),
        msg("assistant", [{"type": "redacted_thinking", "data": "x"}], tool_calls=[CALL]),
        msg("system", "be brief"),
        msg("system", [{"type": "text", "text": "be brief"}]),
        {"role": "user", "content": "hi"},
        msg("assistant", [{"type": "text", "text": "a", "item": {"phase": "commentary"}}]),
        # Arguments as the text of a JSON object (OpenAI Chat, Codex, tau-bench).
        msg("assistant", "", tool_calls=[{**CALL, "arguments": '{"path": "a"}'}]),
        *(msg("assistant", "", tool_calls=[{**CALL, "arguments": text}]) for text in OBJECT_TEXTS),
    ],
)
def test_plain_messages_are_regular(message):
    assert skeleton.digest(message) is not None


def test_a_system_message_after_the_first_turn_makes_the_history_irregular():
    leading = [msg("system", "be brief"), msg("user", "hi")]
    assert skeleton.digests(leading, {}) is not None
    assert skeleton.digests([*leading, msg("system", "now be long")], {}) is None


def test_a_part_whose_type_is_not_a_string_makes_the_history_irregular():
    # Found by make fuzz: a part typed with a list made the digest raise (unhashable).
    assert skeleton.digest({"role": "assistant", "content": [{"type": []}]}) is None
    assert skeleton.digest({"role": "assistant", "content": [{"type": {"a": 1}}]}) is None
