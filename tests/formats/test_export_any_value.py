"""No exception escapes an export or a check, whatever value a history holds.

Real histories of every shape the corpus holds, read to canonical messages,
with one value replaced anywhere by one of another JSON type, are exported to
every provider and checked there: each gives a body and a verdict, never an
exception (a reader keeps odd values as they were written, such as a tool's
number returned as pydantic-ai may; found: the OpenAI Chat export iterated an
int content).
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.engine import providers
from tests.formats.shapes import replace_somewhere
from tests.testdata import CORPUS, read

EXAMPLES = {"ci": 60, "dev": 20, "fuzz": 3000}[os.environ.get("HYPOTHESIS_PROFILE", "ci")]
WEIRD: list[Any] = [None, 0, -1, 7, 1.5, True, False, "", "x", [], {}, [[]], [5], {"type": []}]


def _one_history_per_shape() -> list[tuple[str, list[dict[str, Any]]]]:
    """The first small corpus file of each shape that reads, as canonical messages."""
    chosen: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or path.suffix == ".md" or path.stat().st_size > 200_000:
            continue
        try:
            parsed = formats.load(read(path))
        except formats.FormatError:
            continue
        if parsed.format not in chosen and len(parsed.messages) >= 3:
            chosen[parsed.format] = formats.strip_private(parsed.messages)
    return sorted(chosen.items())


HISTORIES = _one_history_per_shape()


def test_the_histories_cover_the_shapes_the_corpus_holds() -> None:
    # The property below is only as wide as its seeds: one per shape read, most of them.
    assert len(HISTORIES) >= len(formats.FORMATS) // 2, [name for name, _ in HISTORIES]


def test_a_partly_answered_set_of_parallel_calls_with_a_number_as_its_result() -> None:
    # pydantic-ai's repair tests: two parallel calls, one answered by a bare number.
    calls = [
        {"tool_call_id": "a", "name": "f", "arguments": {}},
        {"tool_call_id": "b", "name": "g", "arguments": {}},
    ]
    messages = [
        {"role": "user", "content": "hi", "metadata": {}},
        {"role": "assistant", "content": "", "metadata": {"tool_calls": calls}},
        {"role": "tool", "content": 5, "metadata": {"tool_call_id": "a", "name": "f"}},
    ]
    wire, _ = formats.export_wire(messages, "openai-chat")
    # The number travels as its text, and the unanswered call is what the check refuses.
    assert wire["messages"][2]["content"] == "5"
    assert providers.check("openai-chat", wire).rejected


@pytest.mark.parametrize("provider", list(formats.WIRE_FORMATS))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_export_and_check_never_raise_on_a_history_with_any_value_replaced(
    provider: str, data: st.DataObject
) -> None:
    _, messages = data.draw(st.sampled_from(HISTORIES))
    weird = data.draw(st.sampled_from(WEIRD))
    # Inside one message: a reader always gives messages as objects with one of the
    # four roles, and anything below that as the file had it.
    changed = copy.deepcopy(messages)
    at = data.draw(st.integers(0, len(changed) - 1))
    message = replace_somewhere(data.draw, changed[at], weird)
    assume(isinstance(message, dict) and message.get("role") == changed[at]["role"])
    changed[at] = message
    wire, renamed = formats.export_wire(changed, provider)
    assert isinstance(renamed, dict)
    verdict = providers.check(provider, wire)
    assert verdict.state in (providers.ACCEPTED, providers.REJECTED, providers.CANNOT_TELL)
