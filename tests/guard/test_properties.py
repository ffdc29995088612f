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
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector import formats
from inspector.engine.canonical import is_blank, is_partial
from inspector.engine.providers import PROVIDERS, RESPONSES_CALLS, RESPONSES_OUTPUTS, check
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
    key = HISTORY_KEYS[provider]
    refused = [
        cut
        for cut in cuts(body, provider)
        if not check(provider, {**body, key: body[key][:cut]}).accepted
    ]
    if check(provider, body).accepted and all(
        provider == "responses" and splits_a_response(body, c) for c in refused
    ):
        assert dumps(guarded.body) == dumps(body)
        assert not guarded.changed and guarded.findings == []
    elif check(provider, body).accepted:
        # Accepted only for an output sent after a later turn (Responses): the history cut
        # before that turn was refused, so the guard sends what it sent then, with more
        # turns (test_guarding_is_prefix_stable holds it to that), and says why.
        assert provider == "responses"
        assert guarded.changed
        assert guarded.findings[0]["rule"] == "PROV-RESPONSES"
        assert "comes after a later turn" in guarded.findings[0]["text"]
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


@st.composite
def late_outputs(draw: st.DrawFn) -> dict[str, Any]:
    """A Responses body whose agent sent a call's output after the next user message (the
    tool answered while the user had already written again): accepted by the provider."""
    items = body_of(draw(histories()), "responses")["input"]
    outputs = [n for n, item in enumerate(items) if item.get("type") in RESPONSES_OUTPUTS]
    users = [n for n, item in enumerate(items) if item.get("role") == "user"]
    moves = [(o, u) for o in outputs for u in users if u > o]
    if moves:
        output, user = draw(st.sampled_from(moves))
        at = draw(st.integers(user, len(items) - 1))
        items = [*items[:output], *items[output + 1 : at + 1], items[output], *items[at + 1 :]]
    return {**EXTRA["responses"], "input": items}


@PROFILE
@pytest.mark.parametrize("provider", PROVIDERS)
@given(data=st.data())
def test_guarding_is_prefix_stable(provider: str, data: st.DataObject) -> None:
    """Guard a conversation, then the same one with more turns: the first turns go out the same."""
    _prefix_stable(provider, body_of(data.draw(histories()), provider))


@PROFILE
@given(late_outputs())
def test_a_late_responses_output_keeps_what_was_sent_before(body: dict[str, Any]) -> None:
    _prefix_stable("responses", body)


def test_a_kept_start_whose_repair_drops_a_call_keeps_its_id_taken_for_the_rest() -> None:
    """The start goes out as sent, its call cut mid-stream (``c1``) too: the rest's own
    ``c1`` is renamed, though the repair of that start alone left the call out (found by
    hypothesis: the rest reused ``c1``, the provider refused the duplicate, and the guard
    fell back to the whole repair, which moved the start's late output)."""
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}

    def call(cid: str, arguments: str = '{"q": "mar') -> dict[str, Any]:
        return {"type": "function_call", "call_id": cid, "name": "search", "arguments": arguments}

    def output(cid: str, n: int) -> dict[str, Any]:
        text = {"type": "input_text", "text": f"result {n}"}
        return {"type": "function_call_output", "call_id": cid, "output": [text, image]}

    user = {"role": "user", "content": [{"type": "input_text", "text": "user 3"}, image]}
    prose = {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "prose 9"}]}  # fmt: skip
    late = {"type": "function_call_output", "call_id": "toolu_0001", "output": "result 2"}
    start = [call("toolu_0001", '{"q":"x"}'), user, call("c1"), late, call("c2"),
             call("toolu_0004"), output("c1", 5), output("c2", 6),
             output("toolu_0004", 7)]  # fmt: skip
    rest = [prose, call("c1"), call("c1"), call("toolu_0008"), output("c1", 10),
            output("c1", 11), output("toolu_0008", 12)]  # fmt: skip
    body = {"model": "gpt-5", "store": False, "reasoning": {"effort": "low"},
            "input": start + rest}  # fmt: skip
    assert guard({**body, "input": start}, "responses").changed is False  # sent so before
    guarded = guard(body, "responses")
    assert guarded.changed and guarded.body["input"][: len(start)] == start
    assert check("responses", guarded.body).accepted
    ids = [i["call_id"] for i in guarded.body["input"][len(start) :] if "call_id" in i]
    assert "c1" not in ids[:3] and len(set(ids[:3])) == 3  # each call of the rest its own id
    _prefix_stable("responses", body)


def test_a_late_output_is_answered_where_the_shorter_history_was() -> None:
    call = {"type": "function_call", "call_id": "call_x", "name": "grep", "arguments": "{}"}
    body = {
        "model": "gpt-5",
        "input": [
            {"role": "user", "content": "Find it."},
            call,
            {"role": "user", "content": "Still there?"},
            {"role": "assistant", "content": "Still looking."},
            {"type": "function_call_output", "call_id": "call_x", "output": "found"},
            {"role": "user", "content": "And?"},
        ],
    }
    assert check("responses", body).accepted
    sent_before = guard({**body, "input": body["input"][:3]}, "responses")
    guarded = guard(body, "responses")
    assert guarded.changed
    assert guarded.body["input"][:4] == sent_before.body["input"]
    assert guarded.body["input"][2]["call_id"] == "call_x"  # the interrupted answer, as before
    assert guarded.body["input"][5]["content"].endswith("\nfound")  # the real one kept, as a note
    assert [f["rule"] for f in guarded.findings] == ["PROV-RESPONSES", "PAIR-1", "PAIR-3"]
    assert guard(guarded.body, "responses").changed is False


def _prefix_stable(provider: str, body: dict[str, Any]) -> None:
    key = HISTORY_KEYS[provider]
    whole = guard(body, provider).body[key]
    found = cuts(body, provider)
    for cut in found:
        shorter = {**body, key: body[key][:cut]}
        if (
            provider == "responses"
            and splits_a_response(body, cut)
            and not check(provider, shorter).accepted
            and _a_longer_start_is_accepted(provider, body, found, cut)
        ):
            # No request ends inside one model response (DeepSeek interleaves its calls
            # with messages, each call answered after them all): no body sent before ends
            # here, and the longer start the provider accepts goes out as it is. Where no
            # other cut is refused, so does the body (test_an_accepted_body_comes_back...).
            continue
        part = guard(shorter, provider).body[key]
        assert [dumps(item) for item in part] == [dumps(item) for item in whole[: len(part)]], cut


def _a_longer_start_is_accepted(
    provider: str, body: dict[str, Any], found: list[int], cut: int
) -> bool:
    key = HISTORY_KEYS[provider]
    longer = [c for c in found if c > cut] + [len(body[key])]
    return any(check(provider, {**body, key: body[key][:c]}).accepted for c in longer)


def splits_a_response(body: dict[str, Any], cut: int) -> bool:
    """Whether the cut falls inside what the model sent in one response: each call before
    it with no output before it is answered after it, with only the model's items (its
    messages, reasoning, calls) and outputs in between (only Responses lets outputs come
    after such items)."""
    items = body["input"]
    open_calls = []
    for n, item in enumerate(items[:cut]):
        if isinstance(item, dict) and item.get("type") in RESPONSES_CALLS:
            output = RESPONSES_CALLS[item["type"]]
            answered = any(
                isinstance(later, dict)
                and later.get("type") == output
                and later.get("call_id") == item.get("call_id")
                for later in items[n + 1 : cut]
            )
            if not answered:
                open_calls.append((n, output, item.get("call_id")))
    if not open_calls:
        return False
    for n, output, cid in open_calls:
        answer = next(
            (
                m
                for m in range(cut, len(items))
                if isinstance(items[m], dict)
                and items[m].get("type") == output
                and items[m].get("call_id") == cid
            ),
            None,
        )
        if answer is None or not all(_by_model_or_output(i) for i in items[n + 1 : answer]):
            return False
    return True


def _by_model_or_output(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if kind in (None, "message"):
        return bool(item.get("role") == "assistant")
    return kind in RESPONSES_CALLS or kind in RESPONSES_OUTPUTS or kind == "reasoning"


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
