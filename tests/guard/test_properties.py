"""The guard's promises as properties, over the engine's generated histories sent as bodies.

Each canonical history from ``tests/engine/test_properties.py``'s generator
(healthy turns, lost and repeated results, reused and empty ids, partial
calls, blank placeholders) is written as each provider's request body the
way an agent would send it today (``formats.to_wire``: ids as they are),
with the keys a real body carries beside the history.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from inspector import formats
from inspector.engine.canonical import is_blank, is_partial
from inspector.engine.providers import PROVIDERS, check
from tests.engine.test_properties import PROFILE, histories
from transcript_inspector import HISTORY_KEYS, UNREAD, guard

# What a body holds beside its history, per provider: kept as it is.
EXTRA: dict[str, dict[str, Any]] = {
    "openai-chat": {"model": "gpt-4.1", "tools": [{"type": "function"}], "temperature": 0},
    "responses": {"model": "gpt-5", "store": False, "reasoning": {"effort": "low"}},
    "anthropic": {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "Be brief."},
    "gemini": {"generationConfig": {"temperature": 0.2}, "tools": [{"functionDeclarations": []}]},
}


def body_of(history: list[dict[str, Any]], provider: str) -> dict[str, Any]:
    wire = formats.to_wire(history, provider)
    return {**EXTRA[provider], **wire}


@st.composite
def bodies(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    provider = draw(st.sampled_from(PROVIDERS))
    return provider, body_of(draw(histories()), provider)


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def cuts(body: dict[str, Any], provider: str) -> list[int]:
    """The SPEC's cuts of the body's list: just before an assistant message that surely
    ends a span (non-blank content, or a call whose arguments parse), as the reader reads it."""
    try:
        parsed = formats.load(dumps(body), provider)
    except formats.FormatError:
        return []
    found = []
    for message, lines in zip(parsed.messages, parsed.sources, strict=True):
        calls = message["metadata"].get("tool_calls") or ()
        sure = not is_blank(message.get("content")) or any(
            not is_partial(call.get("arguments")) for call in calls
        )
        if message["role"] == "assistant" and sure and lines and min(lines) > 0:
            found.append(min(lines) - 1)
    return sorted(set(found))


@PROFILE
@given(bodies())
def test_guarding_twice_gives_the_same_bytes(case: tuple[str, dict[str, Any]]) -> None:
    provider, body = case
    twin = copy.deepcopy(body)
    first, second = guard(body, provider), guard(twin, provider)
    assert dumps(first.body) == dumps(second.body)
    assert first.findings == second.findings


@PROFILE
@given(bodies())
def test_a_guarded_body_needs_no_more_guarding(case: tuple[str, dict[str, Any]]) -> None:
    provider, body = case
    once = guard(body, provider)
    twice = guard(once.body, provider)
    assert dumps(twice.body) == dumps(once.body)
    assert not twice.changed


@PROFILE
@given(bodies())
def test_the_guarded_body_is_accepted(case: tuple[str, dict[str, Any]]) -> None:
    provider, body = case
    guarded = guard(body, provider)
    verdict = check(provider, guarded.body)
    assert verdict.accepted, ([p.text for p in verdict.problems], guarded.findings)


@PROFILE
@given(bodies())
def test_an_accepted_body_comes_back_as_sent(case: tuple[str, dict[str, Any]]) -> None:
    provider, body = case
    guarded = guard(body, provider)
    if check(provider, body).accepted:
        assert dumps(guarded.body) == dumps(body)
        assert not guarded.changed and guarded.findings == []
    else:
        assert guarded.changed
        assert guarded.findings[0]["rule"] == f"PROV-{provider.upper()}"


@PROFILE
@given(bodies())
def test_everything_beside_the_history_is_kept(case: tuple[str, dict[str, Any]]) -> None:
    provider, body = case
    sent = dumps(body)
    guarded = guard(body, provider)
    assert dumps(body) == sent  # the input is not mutated
    assert guarded.body is not body
    key = HISTORY_KEYS[provider]
    assert {k: v for k, v in guarded.body.items() if k != key} == {
        k: v for k, v in body.items() if k != key
    }


@PROFILE
@given(bodies())
def test_guarding_is_prefix_stable(case: tuple[str, dict[str, Any]]) -> None:
    """Guard a conversation, then the same one with more turns: the first turns go out the same."""
    provider, body = case
    key = HISTORY_KEYS[provider]
    whole = guard(body, provider).body[key]
    found = cuts(body, provider)
    for cut in found:
        shorter = {**body, key: body[key][:cut]}
        if not check(provider, shorter).accepted and _a_longer_start_is_accepted(
            provider, body, found, cut
        ):
            # The provider takes the longer history only for what follows the cut (a
            # Responses output sent after the next turn): it goes out as it came, while
            # the shorter one had to be repaired. An accepted body is never changed.
            continue
        part = guard(shorter, provider).body[key]
        assert [dumps(item) for item in part] == [dumps(item) for item in whole[: len(part)]], cut


def _a_longer_start_is_accepted(
    provider: str, body: dict[str, Any], found: list[int], cut: int
) -> bool:
    key = HISTORY_KEYS[provider]
    longer = [c for c in found if c > cut] + [len(body[key])]
    return any(check(provider, {**body, key: body[key][:c]}).accepted for c in longer)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
ITEM_KEYS = ["role", "content", "type", "parts", "tool_calls", "call_id", "id", "name"]
ITEMS = st.dictionaries(st.sampled_from(ITEM_KEYS), JSON | st.sampled_from(["user", "assistant"]))


@PROFILE
@given(
    st.sampled_from(PROVIDERS),
    JSON
    | st.dictionaries(
        st.sampled_from(list(set(HISTORY_KEYS.values()))), st.lists(ITEMS | JSON, max_size=5)
    ),
)
def test_an_odd_body_never_raises(provider: str, body: Any) -> None:
    sent = dumps(body)
    guarded = guard(body, provider)
    assert dumps(body) == sent
    if guarded.changed:
        assert check(provider, guarded.body).accepted or any(
            f["text"].startswith("after repair: ") for f in guarded.findings
        )
    else:
        assert dumps(guarded.body) == sent
        if not check(provider, body).accepted:
            assert guarded.findings
    assert all(
        f["rule"] == UNREAD or f["rule"].startswith(("PROV-", "PAIR-", "ID-", "MSG-", "INT-"))
        for f in guarded.findings
    )
