"""ID-3: the ids a provider refuses are rewritten on export, prefix-stably.

A rewritten id depends only on the history up to its call: appending
messages never changes an id the export already gave (the export of a prefix
is the prefix of the export, which keeps a provider's prompt cache hitting).
It is deterministic, accepted by the provider, and never one that an id
before it in the history already uses; an accepted id that an earlier
rewrite took is rewritten too. Checked on the renames an export makes for
lists of ids and on whole exported bodies.
"""

from __future__ import annotations

import os
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.engine.providers import PROVIDERS, RESPONSES_CALL_ID_MAX, validate
from inspector.formats import canonical
from tests.engine.helpers import repair_history

EXAMPLES = {"ci": 300, "dev": 50, "fuzz": 5000}[os.environ.get("HYPOTHESIS_PROFILE", "ci")]
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

LONG = "call_" + "x" * 70  # over Responses' 64
# Ids that collide with what their rewrites give, in either order, and with suffixes.
POOL = [
    "functions.search:0",
    "functions_search_0",
    "functions_search_0_1",
    "functions search 0",
    "a:1",
    "a_1",
    "a_1_1",
    "",
    "call",
    "call_1",
    "é",
    "_",
    LONG,
    LONG + "y",
    LONG[:64],
    LONG[:62] + "_1",
    "call_" + "x" * 47 + "_12345678",
]
IDS = st.lists(st.sampled_from(POOL) | st.text(max_size=6), max_size=10, unique=True)


def turn(cid: str, text: str) -> list[dict[str, Any]]:
    call = {"tool_call_id": cid, "name": "search", "arguments": {"q": text}}
    return [
        {"role": "user", "content": f"ask {text}", "metadata": {}},
        {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}},
        {"role": "tool", "content": f"found {text}", "metadata": {"tool_call_id": cid}},
        {"role": "assistant", "content": f"said {text}", "metadata": {}},
    ]


def session(ids: list[str]) -> list[dict[str, Any]]:
    """One turn (user, call, result, reply) per id, in order."""
    return [m for n, cid in enumerate(ids) for m in turn(cid, str(n))]


def renames(ids: list[str], provider: str) -> dict[str, str]:
    return formats.export_wire(session(ids), provider)[1]


@PROPERTY
@given(IDS)
def test_a_rewritten_id_depends_only_on_the_ids_before_it(ids):
    for provider in PROVIDERS:
        whole = renames(ids, provider)
        for cut in range(len(ids) + 1):
            prefix = renames(ids[:cut], provider)
            assert prefix == {old: whole[old] for old in ids[:cut] if old in whole}


@PROPERTY
@given(IDS)
def test_rewritten_ids_are_accepted_and_collide_with_nothing(ids):
    for provider in PROVIDERS:
        wire, renamed = formats.export_wire(session(ids), provider)
        assert validate(provider, wire) == []  # every id sent is one the provider takes
        assert renamed == renames(list(ids), provider)  # deterministic
        sent = [renamed.get(old, old) for old in ids]
        assert len(set(sent)) == len(sent), sent  # no two ids sent as one
        for position, old in enumerate(ids):
            if old in renamed:
                # Never an id used before it, as it is or as rewritten.
                assert renamed[old] not in sent[:position]
                assert renamed[old] not in ids[:position]
        # An id kept is one the provider takes: the check of a body holding it alone.
        for old in ids:
            if old not in renamed:
                assert validate(provider, formats.to_wire(turn(old, "x"), provider)) == []


def test_an_id_the_provider_takes_keeps_it_unless_an_earlier_rewrite_took_it():
    assert renames(["a_1", "a:1"], "anthropic") == {"a:1": "a_1_1"}
    assert renames(["a:1", "a_1"], "anthropic") == {"a:1": "a_1", "a_1": "a_1_1"}
    assert renames(["a:1", "a_1", "a_1_1"], "anthropic") == {
        "a:1": "a_1",
        "a_1": "a_1_1",
        "a_1_1": "a_1_1_1",
    }
    # Responses' limit: a long id that an earlier rewrite took is shortened with its hash.
    first = renames([LONG], "responses")[LONG]
    renamed = renames([LONG, first], "responses")
    assert renamed[LONG] == first and renamed[first] != first
    assert len(renamed[first]) <= RESPONSES_CALL_ID_MAX


# --- whole bodies ---------------------------------------------------------------------------


@st.composite
def sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Turns (user, call, result, reply) whose ids collide with each other's rewrites."""
    return session(draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=6)))


KEYS = {"openai-chat": "messages", "anthropic": "messages", "responses": "input"}
KEYS["gemini"] = "contents"


@PROPERTY
@given(sessions())
def test_the_export_of_a_prefix_is_the_prefix_of_the_export(history):
    repaired = repair_history(history).messages
    for provider in PROVIDERS:
        whole, renamed = formats.export_wire(repaired, provider)
        items = whole[KEYS[provider]]
        assert validate(provider, whole) == []
        # Cut before each user message (after the assistant's reply of a turn).
        cuts = [c for c, m in enumerate(repaired) if m["role"] == "user" and c] + [len(repaired)]
        for cut in cuts:
            part, part_renamed = formats.export_wire(repaired[:cut], provider)
            assert part[KEYS[provider]] == items[: len(part[KEYS[provider]])], (provider, cut)
            assert part_renamed == {k: v for k, v in renamed.items() if k in part_renamed}


def test_appending_a_turn_keeps_the_ids_already_exported():
    first = turn("functions.search:0", "a")
    both = first + turn("functions_search_0", "b")
    short, _ = formats.export_wire(first, "anthropic")
    longer, renamed = formats.export_wire(both, "anthropic")
    assert longer["messages"][: len(short["messages"])] == short["messages"]
    assert renamed["functions_search_0"] == "functions_search_0_1"
    assert validate("anthropic", longer) == []


def test_the_finding_says_why_an_id_the_provider_takes_was_rewritten():
    history = turn("functions.search:0", "a") + turn("functions_search_0", "b")
    data = orjson.dumps(history)
    findings = [f for f in diagnose(canonical.parse(data)).findings if f["rule"] == "ID-3"]
    assert [f["text"] for f in findings] == [
        "call id functions.search:0 is refused by a provider: the export sends it to"
        " Anthropic as functions_search_0",
        "call id functions_search_0 is an earlier call's new id: the export sends it to"
        " Anthropic as functions_search_0_1",
    ]


# pi-mono#1022: ids another agent made, a Responses call_id and item id joined by "|".
LONG_FOREIGN = "call_N7iYNRPXLl9czpXh3bDyMpIL|fc_" + "0e76718634eca88f016a76fdc89aec8191" * 12


def test_an_id_of_452_characters_is_refused_by_openai_chat_and_fits_every_export():
    assert len(LONG_FOREIGN) > 400
    history = turn(LONG_FOREIGN, "a")
    # As it is: OpenAI Chat answers with its quoted length error.
    problems = validate("openai-chat", formats.to_wire(history, "openai-chat"))
    assert any("maximum length 40" in problem.text for problem in problems), problems
    limits = {"openai-chat": 40, "responses": 64, "anthropic": 64}
    for provider in PROVIDERS:
        wire, renamed = formats.export_wire(history, provider)
        assert validate(provider, wire) == []
        if provider in limits:
            assert len(renamed[LONG_FOREIGN]) <= limits[provider]
            # The same input gives the same id, call and result alike.
            assert renamed == formats.export_wire(history, provider)[1]
            body = orjson.dumps(wire).decode()
            assert LONG_FOREIGN not in body and body.count(renamed[LONG_FOREIGN]) == 2


def test_the_verdict_that_changes_for_a_long_id_is_explained_by_id3():
    diagnosis = diagnose(canonical.parse(orjson.dumps(turn(LONG_FOREIGN, "a"))))
    id3 = [f for f in diagnosis.findings if f["rule"] == "ID-3"]
    assert any("OpenAI Chat" in f["text"] for f in id3), id3
    verdict = diagnosis.providers["openai-chat"]
    assert verdict["before"] and not verdict["after"], verdict
    assert any("maximum length 40" in issue["text"] for issue in verdict["before"])


def _chat_turn(cid: str, text: str) -> list[dict[str, Any]]:
    call = {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"ask {text}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": cid, "content": "r"},
        {"role": "assistant", "content": "ok"},
    ]


def test_a_reused_id_the_bodys_own_provider_takes_is_reported_as_taken():
    # OpenAI Chat takes an id used again in a later turn; Responses refuses it.
    body = {"messages": _chat_turn("call_1", "a") + _chat_turn("call_1", "b")}
    diagnosis = diagnose(formats.load(orjson.dumps(body)))
    assert not diagnosis.providers["openai-chat"]["before"]
    id1 = [f["text"] for f in diagnosis.findings if f["rule"] == "ID-1"]
    assert id1 and all(
        "OpenAI Chat, which this file is written for, takes the id as it is: the new id is"
        " for OpenAI Responses, which refuses it." in text
        for text in id1
    )


def test_a_reused_id_the_bodys_own_provider_refuses_says_nothing_of_taking_it():
    # Two calls of one message under one id: OpenAI Chat refuses it too.
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call, dict(call)]},
            {"role": "tool", "tool_call_id": "call_1", "content": "r"},
            {"role": "tool", "tool_call_id": "call_1", "content": "s"},
        ]
    }
    diagnosis = diagnose(formats.load(orjson.dumps(body)))
    assert diagnosis.providers["openai-chat"]["before"]
    id1 = [f["text"] for f in diagnosis.findings if f["rule"] == "ID-1"]
    assert id1 and not any("takes the id as it is" in text for text in id1)
