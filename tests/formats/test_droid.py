"""Factory Droid sessions: Anthropic blocks in Droid's records, repaired in its own records."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FormatError, droid, load
from inspector.formats.jsondoc import text_of
from inspector.formats.private import calls_of
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    repair,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

FOLDER = CORPUS / "droid"
SESSIONS = files(FOLDER)
HEALTHY = FOLDER / "Glubiz-zirv-dynamic-cli__tests_fixtures_droid_session.jsonl"
CRASHED = FOLDER / "derived__zirv-crashed-in-tool.jsonl"


def records(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def unanswered(data: bytes) -> list[str]:
    """Counted from the records alone: tool_use ids no tool_result block answers."""
    blocks = [
        b
        for r in records(data)
        if r["type"] == "message" and isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
    ]
    answered = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
    return [b["id"] for b in blocks if b["type"] == "tool_use" and b["id"] not in answered]


def test_a_healthy_session_reads_as_droid_with_its_facts_and_comes_back_byte_for_byte():
    data = read(HEALTHY)
    parsed = load(data)
    assert parsed.format == "droid"
    assert [m["role"] for m in parsed.messages] == [
        "user",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert calls_of(parsed.messages[2])[0]["name"] == "Execute"
    assert parsed.messages[3]["metadata"]["is_error"] is True
    assert parsed.meta["session_id"] == "699d3bc5-08dc-40c3-8ea6-febaebdecbaa"
    assert droid.timeline_facts(parsed)[2]["model"] == "custom:Mock-Model-0"
    assert unanswered(data) == [] and repair(parsed).actions == []
    assert droid.serialise(list(parsed.messages), parsed) == data


def test_a_crashed_session_has_one_finding_per_unanswered_call_and_reads_back_clean():
    data = read(CRASHED)
    parsed = load(data)
    missing = unanswered(data)
    assert missing == ["call_1"]
    assert [(rule, call) for rule, _, call in findings(parsed)] == [("PAIR-1", c) for c in missing]
    written, again = repaired_round_trip(droid, parsed)
    lines = records(written)
    assert lines[: len(records(data))] == records(data)
    made = lines[-1]
    assert list(made) == ["type", "id", "parentId", "timestamp", "message"]
    assert made["parentId"] == lines[-2]["id"]
    assert made["message"]["content"][0]["tool_use_id"] == "call_1"
    assert droid.serialise(list(again.messages), again) == written


def test_a_results_record_keeps_its_blocks_when_one_result_becomes_a_note():
    data = read(HEALTHY).splitlines(keepends=True)
    # The result line twice: the second answers no call, so it becomes a note in its place.
    doubled = b"".join([*data[:5], data[4], *data[5:]])
    parsed = droid.parse(doubled)
    written, _ = repaired_round_trip(droid, parsed)
    out = records(written)
    assert out[4] == records(doubled)[4]
    note = out[5]["message"]["content"]
    assert note[0]["type"] == "text" and "arrived with no matching call" in note[0]["text"]


def test_a_compaction_restarts_from_its_summary():
    data = read(HEALTHY).splitlines(keepends=True)
    squeeze = {"type": "compaction_state", "id": "c", "summaryText": "S: the bug is fixed"}
    parsed = droid.parse(b"".join([*data[:5], orjson.dumps(squeeze) + b"\n", *data[5:]]))
    assert [text_of(m["content"]) for m in parsed.messages] == [
        "S: the bug is fixed",
        "Added GET /health returning 200 OK.",
    ]


# Droid's own message schema (Factory-AI/droid-sdk-python, schemas/messages.py): a document
# block a user attached (a PDF, or plain text), in a message and inside a tool_result.
PDF = {"type": "base64", "mediaType": "application/pdf", "data": "JVBERi0xLjQK", "name": "a.pdf"}
NOTES = {"type": "text", "mediaType": "text/plain", "data": "the spec", "name": "spec.txt"}


def _with_documents(data: bytes) -> bytes:
    lines = records(data)
    lines[2]["message"]["content"].append({"type": "document", "source": PDF})
    result = lines[4]["message"]["content"][0]
    result["content"] = [
        {"type": "text", "text": result["content"]},
        {"type": "document", "source": NOTES},
    ]
    return b"".join(orjson.dumps(r) + b"\n" for r in lines)


def test_document_blocks_are_read_kept_and_written_back_in_their_place():
    data = _with_documents(read(HEALTHY))
    parsed = load(data)
    assert parsed.format == "droid" and not parsed.problems
    assert {"type": "droid_block", "block": {"type": "document", "source": PDF}} in (
        parsed.messages[1]["content"]
    )
    assert parsed.messages[3]["content"][1]["block"]["source"] == NOTES
    assert repair(parsed).actions == []
    assert droid.serialise(list(parsed.messages), parsed) == data


def test_a_crashed_session_with_a_document_keeps_it_in_the_repair():
    crashed = _with_documents(read(HEALTHY)).splitlines(keepends=True)[:4]
    parsed = load(b"".join(crashed))
    written, again = repaired_round_trip(droid, parsed)
    out = records(written)
    assert out[2]["message"]["content"][-1] == {"type": "document", "source": PDF}
    assert out[-1]["message"]["content"][0]["tool_use_id"] == "call_1"
    assert droid.serialise(list(again.messages), again) == written


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"type": "branch_state"}, "'branch_state'"),
        (
            {"type": "message", "id": "x", "mood": 1, "message": {"role": "user", "content": "x"}},
            "mood",
        ),
        (
            {"type": "message", "message": {"role": "user", "content": [{"type": "video"}]}},
            "'video'",
        ),
        ({"type": "message", "message": {"role": "user", "x_content": "hi"}}, "x_content"),
        (
            {
                "type": "message",
                "message": {"role": "user", "content": ["plain", {"type": "text"}]},
            },
            # Droid's schema holds only blocks (see PDF above): a bare string is no Droid file.
            "a content item that is a str, not a block",
        ),
    ],
    ids=["type", "key", "block", "content", "bare string item"],
)
def test_a_record_this_reader_does_not_know_refuses_the_file_naming_it(record, field):
    data = read(HEALTHY).splitlines(keepends=True)
    bad = b"".join([*data[:3], orjson.dumps(record) + b"\n", *data[3:]])
    with pytest.raises(FormatError, match=field) as caught:
        load(bad)
    assert caught.value.unread


def test_sniff_sees_droid_and_leaves_claude_code_and_pi_alone():
    assert droid.sniff(read(HEALTHY)) == 0.96
    for other in ("claude-code/files/johejo-hocage__real_session.jsonl",):
        assert droid.sniff(read(CORPUS / other)) == 0
    for path in files(CORPUS / "pi"):
        assert load(read(path)).format == "pi"


def test_new_records_chain_only_where_the_file_chains():
    plain = [r for r in records(read(CRASHED))]
    for r in plain:
        r.pop("parentId", None)
    data = b"".join(orjson.dumps(r) + b"\n" for r in plain)
    parsed = droid.parse(data)
    written, _ = repaired_round_trip(droid, parsed)
    assert not any("parentId" in r for r in records(written))
    for before, after in itertools.pairwise(records(written)):
        assert before["id"] != after["id"]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(p) for p in SESSIONS]))
def test_damaged_sessions_are_repaired_into_sessions_that_need_no_more(data: bytes) -> None:
    check_written_back(data)
