"""One reading of a call's id (SPEC MEM-11), the engine's, wherever an id is read."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.engine.canonical import call_id, call_id_text
from inspector.formats import private
from tests.engine.test_properties import histories

SPELLINGS = [
    {"tool_call_id": "abc"},
    {"id": "abc"},
    {"tool_call_id": "", "id": "abc"},  # an empty tool_call_id is no id: the flat id is read
    {"tool_call_id": None, "id": "abc"},
    {"tool_call_id": "abc", "id": "other"},
]


@pytest.mark.parametrize("holder", SPELLINGS, ids=repr)
def test_every_reader_reads_the_engines_id(holder):
    assert call_id(holder) == "abc"
    assert call_id_text(holder) == "abc"
    assert private.call_id(holder) == "abc"


# The canonical reader refuses a null id outright (an unreadable record), so it is left out here.
@pytest.mark.parametrize("spelling", [s for s in SPELLINGS if None not in s.values()], ids=repr)
def test_the_timeline_shows_the_id_the_engine_paired(spelling):
    call = {"name": "ls", "arguments": {}, **spelling}
    result = {"role": "tool", "content": "x", "metadata": dict(spelling)}
    messages = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}},
        result,
        {"role": "assistant", "content": "done"},
    ]
    parsed = formats.load(orjson.dumps(messages), "canonical")
    diagnosis = diagnose(parsed)
    assert not diagnosis.findings  # answered: the engine paired them by that id
    calls = [c for row in diagnosis.rows for c in row["calls"]]
    results = [row["result"] for row in diagnosis.rows if row["result"]]
    assert [c["id"] for c in calls] == ["abc"]
    assert [r["id"] for r in results] == ["abc"]


def test_an_id_that_is_no_string_is_refused_by_the_engine_and_shown_as_text():
    from inspector.engine.errors import InvalidTranscript

    with pytest.raises(InvalidTranscript):
        call_id({"tool_call_id": 7})
    assert call_id_text({"tool_call_id": 7}) == "7"
    assert call_id_text(None) == ""


def _plain_history_ids(messages):
    # The definition ``formats.history_ids`` inlines: every call's and result's id, once each.
    seen = {}
    for message in messages:
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        if message.get("role") == "tool":
            seen[call_id_text(metadata)] = None
        calls = metadata.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                seen[call_id_text(call)] = None
    return list(seen)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories())
def test_history_ids_is_the_plain_definition(history):
    assert formats.history_ids(history) == _plain_history_ids(history)


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic", "responses", "gemini"])
def test_every_export_writes_the_id_the_engine_reads(provider):
    # A canonical history whose result names its call under the flat ``id`` (MEM-11):
    # every provider's body must carry that id on the result, and accept the pair.
    from inspector.engine.providers import validate

    messages = [
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": "",
            "metadata": {"tool_calls": [{"id": "call_1", "name": "ls", "arguments": {}}]},
        },
        {"role": "tool", "content": "a b", "metadata": {"id": "call_1", "name": "ls"}},
        {"role": "assistant", "content": "done"},
    ]
    body = formats.to_wire(messages, provider)
    assert validate(provider, body) == []
    assert "call_1" in orjson.dumps(body).decode()
