"""The guard's shortcut (``inspector.guard.tail``) sends what the plain path sends.

For a refused body the guard reads, repairs and writes only the items after
the kept start when it can be sure that gives the same body as reading the
whole (``_from_the_rest``); the plain path (``_plain``) reads the whole as the
inspector does. Each body here is guarded both ways, and the two must agree:
the same bytes, the same ``changed``, the same findings. The generated bodies
are also shuffled about (an item moved or copied later, one left out, an
assistant item doubled) so that the cases the shortcut must leave to the plain
path (ids used again across the cut, made-up ids, runs the reader joins) come up.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import inspector.guard as guard_module
from inspector.engine.providers import PROVIDERS, check, check_after, local_cut
from tests.engine.test_properties import PROFILE, histories
from tests.guard.test_properties import bodies, body_of
from tests.guard.test_real_bodies import ORACLE_CASES, RECORDED, _case, _drop_first_result
from tests.guard.test_shortcut import assert_same, stopped
from transcript_inspector import HISTORY_KEYS, Guarded, guard


@contextmanager
def plain_only() -> Iterator[None]:
    """The guard without the shortcut: every refused body read whole."""
    with mock.patch.object(guard_module, "_from_the_rest", return_value=None):
        yield


def both_ways(body: Any, provider: str, **kwargs: Any) -> tuple[Guarded, Guarded]:
    fast = guard(body, provider, **kwargs)
    with plain_only():
        plain = guard(body, provider, **kwargs)
        plain.findings  # noqa: B018 (worked out here, with the shortcut off)
    return fast, plain


@st.composite
def shuffled(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A generated body with one of its items moved, copied, left out or doubled."""
    provider, body = draw(bodies())
    key = HISTORY_KEYS[provider]
    items = list(body[key])
    if len(items) >= 2:
        at = draw(st.integers(0, len(items) - 1))
        to = draw(st.integers(0, len(items)))
        how = draw(st.sampled_from(["move", "copy", "drop", "double"]))
        item = items[at]
        if how == "drop":
            del items[at]
        elif how == "double":
            items.insert(at, item)
        else:
            if how == "move":
                del items[at]
                to = min(to, len(items))
            items.insert(to, item)
    return provider, {**body, key: items}


@PROFILE
@given(bodies())
def test_generated_bodies_come_out_the_same(case: tuple[str, dict[str, Any]]) -> None:
    provider, body = case
    assert_same(*both_ways(body, provider))


@PROFILE
@given(shuffled())
def test_shuffled_bodies_come_out_the_same(case: tuple[str, dict[str, Any]]) -> None:
    provider, body = case
    assert_same(*both_ways(body, provider))


@PROFILE
@given(st.sampled_from(PROVIDERS), histories(), st.booleans(), st.booleans())
def test_stopped_bodies_come_out_the_same(
    provider: str, history: list[dict[str, Any]], with_call: bool, read_only: bool
) -> None:
    body = body_of(stopped(history, with_call), provider)
    assert_same(*both_ways(body, provider, read_only=["grep"] if read_only else ()))


@pytest.mark.parametrize("path", ORACLE_CASES, ids=[p.name[:80] for p in ORACLE_CASES])
def test_oracle_bodies_come_out_the_same(path: Path) -> None:
    case = _case(path)
    provider, body, model = case["provider"], case["request"], case.get("model")
    assert_same(*both_ways(body, provider, model=model))
    lost = _drop_first_result(body, provider)
    if lost is not None:
        assert_same(*both_ways(lost[0], provider, model=model))


@pytest.mark.parametrize(("name", "provider", "body"), RECORDED, ids=[r[0][:90] for r in RECORDED])
def test_recorded_requests_come_out_the_same(
    name: str, provider: str, body: dict[str, Any]
) -> None:
    assert_same(*both_ways(body, provider))


def _turns(count: int) -> list[dict[str, Any]]:
    turns = []
    for n in range(count):
        call = {"tool_call_id": f"c{n}", "name": "grep", "arguments": {"q": str(n)}}
        turns += [
            {"role": "user", "content": f"question {n}", "metadata": {}},
            {"role": "assistant", "content": f"look {n}", "metadata": {"tool_calls": [call]}},
            {"role": "tool", "content": f"found {n}", "metadata": {"tool_call_id": f"c{n}"}},
            {"role": "assistant", "content": f"answer {n}", "metadata": {}},
        ]
    return turns


# The items after the cut of a body stopped in its last turn: the last call (a Responses
# assistant message and its call item) and the user's message after it.
_LAST_TURN = {"openai-chat": 2, "anthropic": 2, "gemini": 2, "responses": 3}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_body_stopped_in_its_last_turn_takes_the_shortcut(provider: str) -> None:
    """The usual refused body is made from its last turn alone, and is what the plain
    path makes of it."""
    body = body_of(stopped(_turns(20), True), provider)
    key = HISTORY_KEYS[provider]
    read = []
    real = guard_module.formats.load

    def counted(data: bytes, format: str = "auto") -> Any:
        read.append(len(orjson.loads(data)[key]))
        return real(data, format)

    with mock.patch.object(guard_module.tail.formats, "load", counted):
        fast = guard(body, provider)
    assert read == [_LAST_TURN[provider]]  # the last call and the user's message after it
    assert fast.changed and check(provider, fast.body).accepted
    with plain_only():
        plain = guard(body, provider)
    assert_same(fast, plain)


def _reusing(answered: bool = False, cut: bool = False) -> list[dict[str, Any]]:
    """Three turns, then a call under the first turn's id (Kimi's ids restart) whose
    result never came, or came under that id (``answered``); with ``cut``, the first
    turn's call was cut mid-stream and still answered."""
    history = stopped(_turns(3), True)
    history[-2]["metadata"]["tool_calls"][0]["tool_call_id"] = "c0"  # the first turn's id
    if answered:
        result = {"role": "tool", "content": "found", "metadata": {"tool_call_id": "c0"}}
        history.insert(len(history) - 1, result)
    if cut:
        history[1]["metadata"]["tool_calls"][0]["arguments"] = '{"q": "0'
    return history


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_call_after_the_start_under_an_id_of_it_takes_the_shortcut(provider: str) -> None:
    """The rest is repaired alone, told the start's call ids: the call is renamed as
    in the repair of the whole, and the body is the plain path's."""
    body = body_of(_reusing(), provider)
    real = guard_module.tail.written
    with mock.patch.object(guard_module.tail, "written", side_effect=real) as written:
        guarded = guard(body, provider)
    written.assert_called_once()
    assert_same(guarded, both_ways(body, provider)[1])
    assert guarded.changed
    assert b'"c0_1"' in orjson.dumps(guarded.body)


@pytest.mark.parametrize(
    ("provider", "answered", "cut"),
    [
        *((provider, True, False) for provider in PROVIDERS),
        # Anthropic's and Gemini's bodies carry a call's arguments as an object: never cut.
        ("openai-chat", False, True),
        ("responses", False, True),
    ],
)
def test_an_id_of_the_start_used_again_after_it_is_left_to_the_plain_path(
    provider: str, answered: bool, cut: bool
) -> None:
    """A result after the start under the start's id (the reader names it from the
    whole's calls), or a start with a call cut mid-stream (its repair may not give that
    id out): read whole."""
    body = body_of(_reusing(answered, cut), provider)
    with mock.patch.object(guard_module.tail, "written") as written:
        guarded = guard(body, provider)
    written.assert_not_called()
    assert_same(guarded, both_ways(body, provider)[1])


@st.composite
def checked_bodies(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A generated body, shuffled or not, with Anthropic's thinking on or Gemini's model
    one that signs its calls (the two rules that walk back from the end)."""
    provider, body = draw(st.one_of(bodies(), shuffled()))
    if provider == "anthropic" and draw(st.booleans()):
        body = {**body, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    if provider == "gemini":
        body = {**body, "model": draw(st.sampled_from(["gemini-3-pro", "gemini-2.5-flash"]))}
    return provider, body


@PROFILE
@given(checked_bodies())
def test_a_local_cut_splits_the_check(case: tuple[str, dict[str, Any]]) -> None:
    """Where ``local_cut`` holds, the check of the start has the whole's problems before
    the cut and ``check_after`` the whole's from the cut on: what lets the shortcut
    take the start as accepted and check only what it sends after it."""
    provider, body = case
    key = HISTORY_KEYS[provider]
    whole = check(provider, body)
    for start in range(len(body[key])):
        if not local_cut(provider, body, start):
            continue
        head = check(provider, {**body, key: body[key][:start]})
        after = check_after(provider, body, start)
        assert list(head.problems) == [p for p in whole.problems if p.index < start]
        assert list(after.problems) == [p for p in whole.problems if p.index >= start]


@PROFILE
@given(checked_bodies())
def test_the_sent_body_checked_from_its_kept_start_gets_the_whole_verdict(
    case: tuple[str, dict[str, Any]],
) -> None:
    """The plain path checks what it sends from the kept start's cut on where that
    start is the body's own accepted items (``_check_sent``): at every start of the body
    that the provider accepts, that verdict is the check of the whole sent body."""
    provider, body = case
    key = HISTORY_KEYS[provider]
    with plain_only():
        sent = guard(body, provider).body
    for start in range(1, len(body[key])):
        if not check(provider, {**body, key: body[key][:start]}).accepted:
            continue
        split = guard_module._check_sent(body, sent, provider, start, None)
        whole = check(provider, sent)
        assert (split.state, split.problems) == (whole.state, whole.problems)


def test_a_responses_body_whose_start_a_later_output_answers_is_left_to_the_plain_path() -> None:
    """A call of the start answered only after the cut (no later turn between them, so
    the provider takes it): the start alone is refused, so it is not the kept one."""

    def call(cid: str) -> dict[str, Any]:
        return {"type": "function_call", "call_id": cid, "name": "grep", "arguments": "{}"}

    def output(cid: str) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": cid, "output": "found"}

    text = [{"type": "output_text", "text": "hm"}]
    look = {"type": "message", "role": "assistant", "content": text}
    items = [{"role": "user", "content": "go"}, call("c1"), call("c2"), output("c2"), look]
    items += [call("c3"), output("c1"), {"role": "user", "content": "stop"}]
    body = {"model": "gpt-5", "input": items}
    with mock.patch.object(guard_module.tail, "written") as written:
        guarded = guard(body, "responses")
    written.assert_not_called()
    assert guarded.changed and check("responses", guarded.body).accepted
    assert_same(guarded, both_ways(body, "responses")[1])
