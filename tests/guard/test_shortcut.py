"""The guard repairs only what follows the kept start, and that changes nothing it gives.

For a refused body the guard keeps the longest accepted start as sent and
repairs the rest alone (``diagnosis.repair_parsed_after``: the engine told the
rest's offset and the ids the start gave out), instead of repairing the whole
history and slicing it. Each body here is guarded both ways, the second with
that shortcut turned off (the guard then repairs the whole, as it did before),
and the two must agree: the same bytes, the same ``changed``, the same
findings.
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
from inspector import diagnosis, formats
from inspector.engine.providers import PROVIDERS
from tests.engine.test_properties import PROFILE, histories
from tests.guard.test_properties import bodies, body_of
from tests.guard.test_real_bodies import ORACLE_CASES, RECORDED, _case, _drop_first_result
from transcript_inspector import Guarded, guard


@contextmanager
def whole_repair_only() -> Iterator[None]:
    """The guard as it was: no repair of the rest alone, so the whole is repaired."""
    with mock.patch.object(guard_module, "repair_parsed_after", return_value=None):
        yield


def both_ways(body: Any, provider: str, **kwargs: Any) -> tuple[Guarded, Guarded]:
    fast = guard(body, provider, **kwargs)
    with whole_repair_only():
        slow = guard(body, provider, **kwargs)
    return fast, slow


def assert_same(fast: Guarded, slow: Guarded) -> None:
    assert orjson.dumps(fast.body) == orjson.dumps(slow.body)
    assert fast.changed == slow.changed
    assert fast.findings == slow.findings


def stopped(history: list[dict[str, Any]], with_call: bool) -> list[dict[str, Any]]:
    """``history`` and then a call whose result never came (the agent was stopped)."""
    call = {"tool_call_id": "toolu_last", "name": "grep", "arguments": {"q": "x"}}
    last = {"role": "assistant", "content": "Let me look.", "metadata": {"tool_calls": [call]}}
    steer = {"role": "user", "content": "Stop, look elsewhere.", "metadata": {}}
    return [*history, last, steer] if with_call else [*history, steer]


@PROFILE
@given(bodies())
def test_generated_bodies_come_out_the_same(case: tuple[str, dict[str, Any]]) -> None:
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


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_body_stopped_in_its_last_turn_is_not_repaired_whole(provider: str) -> None:
    """The shortcut is taken: only the kept start (to know its ids) and the rest are
    repaired, never the whole history, until the findings are read."""
    turns = []
    for n in range(20):
        call = {"tool_call_id": f"c{n}", "name": "grep", "arguments": {"q": str(n)}}
        turns += [
            {"role": "user", "content": f"question {n}", "metadata": {}},
            {"role": "assistant", "content": f"look {n}", "metadata": {"tool_calls": [call]}},
            {"role": "tool", "content": f"found {n}", "metadata": {"tool_call_id": f"c{n}"}},
            {"role": "assistant", "content": f"answer {n}", "metadata": {}},
        ]
    body = body_of(stopped(turns, True), provider)
    lengths: list[int] = []
    real = diagnosis.repair_parsed

    def counted(parsed: Any, is_read_only: Any = None, **kwargs: Any) -> Any:
        lengths.append(len(parsed.messages))
        return real(parsed, is_read_only, **kwargs)

    with mock.patch.object(guard_module, "repair_parsed", counted):
        guarded = guard(body, provider)
        assert guarded.changed
        whole = len(formats.load(orjson.dumps(body), provider).messages)
        assert lengths and max(lengths) < whole  # the start only
        fast_findings = guarded.findings  # now the whole is repaired, for the timeline
        assert max(lengths) == whole
    with whole_repair_only():
        slow = guard(body, provider)
    assert orjson.dumps(guarded.body) == orjson.dumps(slow.body)
    assert fast_findings == slow.findings
