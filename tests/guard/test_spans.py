"""The guard's windows (``inspector.guard.spans``) send what the plain path sends.

A refused Chat body whose breaks come early is made from the stretches the repair
may change alone, each read, repaired and written by itself. Each body here is
guarded that way (the tail shortcut off, so the windows see every refused body)
and the plain way, and the two must agree: the same bytes, ``changed`` and
findings. The generated bodies are shuffled and damaged so that what the windows
must leave to the engine (ids used again or empty, blank messages, results out
of place) comes up everywhere in the body, the kept start included.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import orjson
from hypothesis import given
from hypothesis import strategies as st

import inspector.guard as guard_module
from inspector.engine.canonical import call_id, call_id_key
from inspector.engine.providers import check
from tests.engine.test_properties import PROFILE, histories
from tests.guard.test_properties import body_of
from tests.guard.test_shortcut import assert_same, stopped
from tests.guard.test_tail import _turns, shuffled
from transcript_inspector import Guarded, guard


@contextmanager
def windows_only() -> Iterator[None]:
    with mock.patch.object(guard_module, "_from_the_rest", return_value=None):
        yield


def both_ways(body: Any, provider: str, **kwargs: Any) -> tuple[Guarded, Guarded]:
    with windows_only():
        fast = guard(body, provider, **kwargs)
    with (
        mock.patch.object(guard_module, "_from_the_rest", return_value=None),
        mock.patch.object(guard_module, "_from_the_spans", return_value=None),
    ):
        plain = guard(body, provider, **kwargs)
        plain.findings  # noqa: B018 (worked out here, with the windows off)
    return fast, plain


def _made_by_windows(body: Any, provider: str) -> bool:
    real = guard_module.spans.body
    with windows_only(), mock.patch.object(guard_module.spans, "body", side_effect=real) as made:
        guard(body, provider)
    return any(result is not None for result in _results(made, real))


def _results(made: mock.MagicMock, real: Any) -> list[Any]:
    return [real(*call.args, **call.kwargs) for call in made.call_args_list]


@PROFILE
@given(st.one_of(shuffled(), st.tuples(st.just("openai-chat"), st.builds(dict))))
def test_shuffled_bodies_come_out_the_same(case: tuple[str, dict[str, Any]]) -> None:
    provider, body = case
    assert_same(*both_ways(body, provider))


@PROFILE
@given(histories(), st.booleans(), st.booleans())
def test_stopped_chat_bodies_come_out_the_same(
    history: list[dict[str, Any]], with_call: bool, read_only: bool
) -> None:
    body = body_of(stopped(history, with_call), "openai-chat")
    assert_same(*both_ways(body, "openai-chat", read_only=["grep"] if read_only else ()))


@st.composite
def damaged(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A generated history with some of its call ids used again later or emptied
    (Kimi's ids restart, Gemini's are left out), a result dropped or a blank
    assistant message put in, anywhere."""
    history = orjson.loads(orjson.dumps(draw(histories())))
    calls = [c for m in history for c in m["metadata"].get("tool_calls") or ()]
    for _ in range(draw(st.integers(0, 3))):
        if len(calls) >= 2:
            early = draw(st.integers(0, len(calls) - 2))
            late = draw(st.integers(early + 1, len(calls) - 1))
            reused = draw(st.sampled_from([call_id(calls[early]), ""]))
            calls[late][call_id_key(calls[late])] = reused
    results = [n for n, m in enumerate(history) if m["role"] == "tool"]
    if results and draw(st.booleans()):
        del history[draw(st.sampled_from(results))]
    if history and draw(st.booleans()):
        blank = {"role": "assistant", "content": " ", "metadata": {}}
        history.insert(draw(st.integers(0, len(history))), blank)
    return history


@PROFILE
@given(damaged(), st.booleans())
def test_damaged_chat_bodies_come_out_the_same(
    history: list[dict[str, Any]], read_only: bool
) -> None:
    body = body_of(history, "openai-chat")
    assert_same(*both_ways(body, "openai-chat", read_only=["grep"] if read_only else ()))


def test_a_body_broken_early_is_made_from_its_windows() -> None:
    """A long body broken in its first turn and again in later ones (a result lost, an
    id used again, a blank message): the windows make it, as the plain path does."""
    history = _turns(30)
    del history[2]  # the first turn's result
    history[40]["metadata"]["tool_calls"][0]["tool_call_id"] = "c0"  # turn 10's call
    history.insert(80, {"role": "assistant", "content": "", "metadata": {}})
    body = body_of(history, "openai-chat")
    assert _made_by_windows(body, "openai-chat")
    fast, plain = both_ways(body, "openai-chat")
    assert fast.changed
    assert_same(fast, plain)
    assert b'"c0_1"' in orjson.dumps(fast.body)


def test_a_kept_start_ending_at_a_message_of_parts_comes_out_the_same() -> None:
    """The kept start ends just before an assistant message of text parts whose call was
    cut (a SPEC cut for its text, which the walk cannot judge), after a blank message
    the plain path keeps as sent: left to the plain path, the same body."""
    history = _turns(4)
    history.append({"role": "assistant", "content": "", "metadata": {}})
    cut = {"tool_call_id": "cut", "name": "grep", "arguments": '{"q": "x'}
    history.append(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Let me look."}],
            "metadata": {"tool_calls": [cut]},
        }
    )
    history.append({"role": "user", "content": "Stop.", "metadata": {}})
    body = body_of(history, "openai-chat")
    assert isinstance(body["messages"][-2]["content"], list)
    fast, plain = both_ways(body, "openai-chat")
    assert fast.changed
    assert_same(fast, plain)


def test_a_problem_between_windows_leaves_the_body_to_the_plain_path() -> None:
    """A problem the repair does not touch (an assistant message with an empty
    ``tool_calls`` list, which the engine reads as prose) lies between the windows: the
    body they make keeps it, so the plain path, which writes it the export's way, sends
    the body."""
    history = _turns(6)
    del history[2]  # the first turn's result: a window at the start
    body = body_of(history, "openai-chat")
    later = body["messages"][14]
    assert later["role"] == "assistant" and "tool_calls" not in later
    body["messages"][14] = {**later, "tool_calls": []}
    fast, plain = both_ways(body, "openai-chat")
    assert fast.changed
    assert_same(fast, plain)
    assert check("openai-chat", fast.body).accepted
