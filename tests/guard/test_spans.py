"""The guard's windows (``inspector.guard.spans``) send what the plain path sends.

A refused body whose breaks come early is made from the
stretches the repair may change alone, each read, repaired and written by itself. Each body here is
guarded that way (the tail shortcut off, so the windows see every refused body)
and the plain way, and the two must agree: the same bytes, ``changed`` and
findings. The generated bodies are shuffled and damaged so that what the windows
must leave to the engine (ids used again or empty, blank messages, results out
of place) comes up everywhere in the body, the kept start included.
"""

from __future__ import annotations

import importlib.util
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
from inspector.engine.canonical import call_id, call_id_key
from inspector.engine.providers import check
from tests.engine.test_properties import PROFILE, histories
from tests.guard.test_properties import body_of
from tests.guard.test_real_bodies import ORACLE_CASES, RECORDED, _case, _drop_first_result
from tests.guard.test_shortcut import assert_same, stopped
from tests.guard.test_tail import _turns, checked_bodies, shuffled
from transcript_inspector import HISTORY_KEYS, Guarded, guard

# The providers whose bodies the windows make: all four.
WINDOWED = ("openai-chat", "responses", "anthropic", "gemini")


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
@given(checked_bodies())
def test_bodies_with_thinking_or_signatures_come_out_the_same(
    case: tuple[str, dict[str, Any]],
) -> None:
    """Anthropic's thinking on, Gemini's model one that signs: the checks that walk back
    from the end, so a window's edge is not always a cut no check looks across."""
    provider, body = case
    assert_same(*both_ways(body, provider))


@PROFILE
@given(st.sampled_from(WINDOWED), histories(), st.booleans(), st.booleans())
def test_stopped_bodies_come_out_the_same(
    provider: str, history: list[dict[str, Any]], with_call: bool, read_only: bool
) -> None:
    body = body_of(stopped(history, with_call), provider)
    assert_same(*both_ways(body, provider, read_only=["grep"] if read_only else ()))


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
@given(st.sampled_from(WINDOWED), damaged(), st.booleans())
def test_damaged_bodies_come_out_the_same(
    provider: str, history: list[dict[str, Any]], read_only: bool
) -> None:
    body = body_of(history, provider)
    assert_same(*both_ways(body, provider, read_only=["grep"] if read_only else ()))


@PROFILE
@given(st.sampled_from(WINDOWED), damaged(), st.data())
def test_damaged_bodies_with_their_ids_left_out_come_out_the_same(
    provider: str, history: list[dict[str, Any]], data: st.DataObject
) -> None:
    """Some calls and results written without their ids (Gemini's usual body, whose
    reader makes ids up from positions; an Anthropic block or a Responses item with no
    id), anywhere."""
    body = body_of(history, provider)
    key = HISTORY_KEYS[provider]
    items = orjson.loads(orjson.dumps(body[key]))
    for item in items:
        for block in _id_holders(item):
            if data.draw(st.booleans()):
                for name in ("id", "tool_use_id", "call_id"):
                    block.pop(name, None)
    assert_same(*both_ways({**body, key: items}, provider))


def _id_holders(item: Any) -> list[dict[str, Any]]:
    """The dicts of a record that carry a call's or a result's id."""
    found = []
    if isinstance(item, dict) and str(item.get("type")).endswith(("_call", "_call_output")):
        found.append(item)  # a Responses call or output item
    for part in (item.get("content") or item.get("parts") or []) if isinstance(item, dict) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("tool_use", "tool_result"):
            found.append(part)
        for name in ("functionCall", "functionResponse"):
            if isinstance(part.get(name), dict):
                found.append(part[name])
    return found


def _with_a_result_lost(body: dict[str, Any], provider: str, **kwargs: Any) -> None:
    """``body`` and, where it has a result, ``body`` without its first (broken early,
    which is where the windows come in) come out the same both ways."""
    for each in (body, (_drop_first_result(body, provider) or (None,))[0]):
        if each is not None:
            assert_same(*both_ways(each, provider, **kwargs))


@pytest.mark.parametrize("path", ORACLE_CASES, ids=[p.name[:80] for p in ORACLE_CASES])
def test_oracle_bodies_come_out_the_same(path: Path) -> None:
    case = _case(path)
    _with_a_result_lost(case["request"], case["provider"], model=case.get("model"))


@pytest.mark.parametrize(("name", "provider", "body"), RECORDED, ids=[r[0][:90] for r in RECORDED])
def test_recorded_requests_come_out_the_same(
    name: str, provider: str, body: dict[str, Any]
) -> None:
    _with_a_result_lost(body, provider)


def _bench_bodies() -> list[tuple[str, int, dict[str, Any]]]:
    """``bench/bench_guard.py``'s 5%-broken bodies (the module puts ``bench`` on the path)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_guard.py"
    spec = importlib.util.spec_from_file_location("bench_guard", path)
    assert spec is not None and spec.loader is not None
    bench_guard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_guard)
    return [
        (provider, size, bench_guard.bodies(size, provider)["5% broken"])
        for provider in WINDOWED
        for size in (200, 600)
    ]


@pytest.mark.parametrize(("provider", "size", "body"), _bench_bodies())
def test_the_bench_bodies_broken_early_are_made_from_their_windows(
    provider: str, size: int, body: dict[str, Any]
) -> None:
    """The bench's 5%-broken bodies (a result lost, a call cut, ids left empty, a blank
    message): the windows make them, as the plain path does. A Responses output sent
    after a later user message (a user message between a call and its output) is the
    plain path's (``guard._late_output``): the bench's at 600 messages has one."""
    late = provider == "responses" and guard_module._late_output(body["input"])
    assert _made_by_windows(body, provider) == (not late)
    fast, plain = both_ways(body, provider)
    assert fast.changed
    assert_same(fast, plain)


@pytest.mark.parametrize("provider", WINDOWED)
def test_a_body_broken_early_is_made_from_its_windows(provider: str) -> None:
    """A long body broken in its first turn and again in later ones (a result lost, an
    id used again, a blank message): the windows make it, as the plain path does.
    Responses' reader takes an output's kind from the first call under its id, so there
    the call's id is left empty instead (see the test after this one)."""
    reused = "" if provider == "responses" else "c0"
    history = _turns(30)
    del history[2]  # the first turn's result
    history[40]["metadata"]["tool_calls"][0]["tool_call_id"] = reused  # turn 10's call
    history.insert(80, {"role": "assistant", "content": "", "metadata": {}})
    body = body_of(history, provider)
    assert _made_by_windows(body, provider)
    fast, plain = both_ways(body, provider)
    assert fast.changed
    assert_same(fast, plain)
    assert reused == "" or b'"c0_1"' in orjson.dumps(fast.body)


def test_a_responses_call_under_an_id_called_before_its_window_is_left_to_the_plain_path() -> None:
    """A Responses call in a window under the id of a call before it (Kimi's ids
    restart): the reader gives an output the kind of the first call under its id, which
    the window read alone does not see."""
    history = _turns(30)
    del history[2]
    history[40]["metadata"]["tool_calls"][0]["tool_call_id"] = "c0"
    history[41]["metadata"]["tool_call_id"] = "c0"
    _left_to_the_plain_path(body_of(history, "responses"), "responses")


def test_gemini_ids_made_up_in_a_window_are_the_whole_body_s() -> None:
    """Gemini calls and responses without ids in a later turn, its call unanswered: the
    reader makes their ids up from the turn's place in the whole (``call_{turn}_{part}``),
    and so does the window read alone, moved to that place."""
    history = _turns(12)
    del history[2]  # a window at the start
    body = body_of(history, "gemini")
    for content in body["contents"][20:]:
        for part in content["parts"]:
            for name in ("functionCall", "functionResponse"):
                if isinstance(part.get(name), dict):
                    part[name].pop("id", None)
    body["contents"].insert(len(body["contents"]) - 3, {"role": "user", "parts": [{"text": "hm"}]})
    assert _made_by_windows(body, "gemini")
    fast, plain = both_ways(body, "gemini")
    assert fast.changed
    assert_same(fast, plain)


def test_an_anthropic_result_named_after_a_call_before_its_window_is_left_to_the_plain_path() -> (
    None
):
    """A result in a window under the id of a call before it (a result sent twice): the
    reader names it after that call, which the window read alone does not see."""
    history = _turns(6)
    del history[2]  # a window at the start
    again = {"role": "tool", "content": "again", "metadata": {"tool_call_id": "c1"}}
    history.insert(16, again)  # turn 4, after its own result: an orphan of turn 1's call
    _left_to_the_plain_path(body_of(history, "anthropic"), "anthropic")


def _left_to_the_plain_path(body: dict[str, Any], provider: str) -> None:
    assert not _made_by_windows(body, provider)
    fast, plain = both_ways(body, provider)
    assert fast.changed
    assert_same(fast, plain)


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
