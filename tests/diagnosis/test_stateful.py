"""A Responses body that continues a history the provider stores.

Its input opens with the outputs of the calls its previous response made,
which the body does not hold (``previous_response_id``, or a
``conversation`` named by id or by an object): those are real answers, so
the repair keeps them as they are, and the verdict is "cannot tell from the
body alone" with its reason, for either key, as the direct check gives it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inspector import formats
from inspector.diagnosis import diagnose, repair_parsed, repaired_bytes
from inspector.engine import providers

OUTPUT = {"type": "function_call_output", "call_id": "call_prev", "output": "42"}
CALL = {"type": "function_call", "call_id": "call_new", "name": "f", "arguments": "{}"}
KEYS = [
    ("previous_response_id", "resp_abc"),
    ("conversation", "conv_123"),
    ("conversation", {"id": "conv_123"}),
]


def body(key: str, value: Any, *items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "gpt-5", key: value, "input": list(items)}


@pytest.mark.parametrize(("key", "value"), KEYS)
def test_an_output_of_the_stored_response_is_kept_and_the_verdict_cannot_tell(key, value):
    request = body(key, value, OUTPUT, {"role": "user", "content": "and then?"})
    data = orjson.dumps(request)
    parsed = formats.load(data)
    assert repair_parsed(parsed).actions == []
    assert repaired_bytes(parsed) == data
    diagnosis = diagnose(parsed)
    assert diagnosis.findings == []
    verdict = diagnosis.providers["responses"]
    direct = providers.check("responses", request)
    assert direct.state == providers.CANNOT_TELL
    assert verdict["before"] == [] and verdict["undecided_before"] == [direct.reason]
    assert verdict["undecided_after"] == [direct.reason]


@pytest.mark.parametrize(("key", "value"), KEYS)
def test_the_rest_of_a_stateful_body_is_repaired_as_any_history(key, value):
    # Its own call, cut: answered, with the finding on that call; the stored answer stays.
    request = body(key, value, OUTPUT, {"role": "user", "content": "go"}, CALL)
    parsed = formats.load(orjson.dumps(request))
    repair = repair_parsed(parsed)
    assert [(a.rule, a.call_id, a.turn_index) for a in repair.actions] == [
        ("PAIR-1", "call_new", 2)
    ]
    written = orjson.loads(repaired_bytes(parsed))
    assert written["input"][0] == OUTPUT
    assert written["input"][-1]["call_id"] == "call_new"
    assert written[key] == value
    assert [f["rule"] for f in diagnose(parsed).findings] == ["PAIR-1"]


def test_without_a_stored_history_an_output_of_no_call_is_an_orphan():
    request = {"model": "gpt-5", "input": [OUTPUT, {"role": "user", "content": "and then?"}]}
    parsed = formats.load(orjson.dumps(request))
    assert [a.rule for a in repair_parsed(parsed).actions] == ["PAIR-3"]


def test_an_output_after_the_bodys_own_call_for_an_id_it_never_made_is_an_orphan():
    # Only the outputs that open the body answer the stored response.
    stray = {**OUTPUT, "call_id": "call_other"}
    answer = {"type": "function_call_output", "call_id": "call_new", "output": "1"}
    request = body("previous_response_id", "resp_abc", OUTPUT, CALL, answer, stray)
    parsed = formats.load(orjson.dumps(request))
    assert [(a.rule, a.call_id) for a in repair_parsed(parsed).actions] == [
        ("PAIR-3", "call_other")
    ]
