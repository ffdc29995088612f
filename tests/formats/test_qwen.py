"""Qwen Code chat recordings: the branch Qwen resumes, repaired in Qwen's own records."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FormatError, load, qwen
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

FOLDER = CORPUS / "qwen"
SESSIONS = files(FOLDER)
HEALTHY = FOLDER / "derived__qwen-writer-healthy.jsonl"
CRASHED = FOLDER / "derived__qwen-writer-crashed.jsonl"


def records(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def unanswered(data: bytes) -> list[str]:
    """Counted from the records alone: functionCall ids no functionResponse answers."""
    asked: list[str] = []
    answered: set[str] = set()
    for record in records(data):
        for part in (record.get("message") or {}).get("parts", []):
            if "functionCall" in part:
                asked.append(part["functionCall"]["id"])
            if "functionResponse" in part:
                answered.add(part["functionResponse"]["id"])
    return [ident for ident in asked if ident not in answered]


def test_a_healthy_recording_reads_as_qwen_with_its_facts_and_comes_back_byte_for_byte():
    data = read(HEALTHY)
    parsed = load(data)
    assert parsed.format == "qwen"
    assert [m["role"] for m in parsed.messages] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert unanswered(data) == [] and repair(parsed).actions == []
    reply = parsed.messages[1]
    assert reply["content"][0] == {
        "type": "thinking",
        "thinking": "Let me look at the test script first.",
    }
    assert calls_of(reply)[0]["name"] == "read_file"
    assert parsed.messages[4]["metadata"]["is_error"] is True
    facts = qwen.timeline_facts(parsed)[1]
    assert (facts["model"], facts["tokens_in"], facts["tokens_out"]) == (
        "qwen3-coder-plus",
        11873,
        64,
    )
    assert parsed.meta["session_id"] == "6f1c2a9e-3b7d-4c1e-9a55-0d2f7e8b4c31"
    assert qwen.serialise(list(parsed.messages), parsed) == data


def test_a_crashed_recording_has_one_finding_per_unanswered_call_and_reads_back_clean():
    data = read(CRASHED)
    parsed = load(data)
    missing = unanswered(data)
    assert missing == ["call_0e5b8c3d2a1f4e6b"]
    assert [(rule, call) for rule, _, call in findings(parsed)] == [("PAIR-1", c) for c in missing]
    written, again = repaired_round_trip(qwen, parsed)
    lines = records(written)
    assert lines[: len(records(data))] == records(data)
    for before, after in itertools.pairwise(lines):
        assert after["parentUuid"] == before["uuid"]
    made = lines[-1]
    assert made["type"] == "tool_result" and made["sessionId"] == lines[0]["sessionId"]
    assert made["toolCallResult"]["status"] == "error"
    assert qwen.serialise(list(again.messages), again) == written


def test_the_branch_resumed_is_followed_from_the_last_record():
    data = read(HEALTHY)
    lines = data.splitlines()
    # A record written off the branch (a rewind's abandoned reply) is not read.
    stray = records(data)[3] | {"uuid": "stray", "parentUuid": records(data)[2]["uuid"]}
    forked = b"\n".join([*lines[:4], orjson.dumps(stray), *lines[4:]]) + b"\n"
    parsed = qwen.parse(forked)
    assert parsed.meta["off_branch"] == 1
    assert [text_of(m["content"]) for m in parsed.messages] == [
        text_of(m["content"]) for m in qwen.parse(data).messages
    ]


def test_a_compression_restarts_the_history_from_its_own_contents():
    first = records(read(HEALTHY))[0]
    squeeze = first | {
        "uuid": "z1", "parentUuid": first["uuid"], "type": "system", "subtype": "chat_compression",
        "systemPayload": {"info": {}, "compressedHistory": [
            {"role": "user", "parts": [{"text": "Summary: the tests need TZ."}]},
            {"role": "model", "parts": [{"text": "Got it."}]},
        ]},
    }  # fmt: skip
    squeeze.pop("message")
    after = first | {
        "uuid": "z2",
        "parentUuid": "z1",
        "message": {"role": "user", "parts": [{"text": "go on"}]},
    }
    data = b"".join(orjson.dumps(r) + b"\n" for r in [first, squeeze, after])
    parsed = qwen.parse(data)
    assert [text_of(m["content"]) for m in parsed.messages] == [
        "Summary: the tests need TZ.", "Got it.", "go on",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"type": "checkpoint"}, "type 'checkpoint'"),
        ({"mood": 1}, "keys mood"),
        ({"message": {"role": "user", "parts": [{"video": "x"}]}}, "keys: video"),
        ({"message": {"role": "robot", "parts": []}}, "role 'robot'"),
    ],
    ids=["type", "key", "part", "role"],
)
def test_a_record_this_reader_does_not_know_refuses_the_file_naming_it(change, field):
    good = records(read(HEALTHY))
    bad = good[1] | change
    data = b"".join(orjson.dumps(r) + b"\n" for r in [good[0], bad])
    with pytest.raises(FormatError, match=field) as caught:
        load(data)
    assert caught.value.unread


def test_sniff_claims_qwen_records_ahead_of_claude_code_and_nothing_else():
    assert qwen.sniff(read(HEALTHY)) == 0.97
    claude = CORPUS / "claude-code" / "files" / "johejo-hocage__real_session.jsonl"
    assert qwen.sniff(read(claude)) == 0
    assert load(read(claude)).format == "claude-code"


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(p) for p in SESSIONS]))
def test_damaged_recordings_are_repaired_into_recordings_that_need_no_more(data: bytes) -> None:
    check_written_back(data)


def test_a_first_line_of_records_glued_together_is_still_qwens():
    # A newline lost between the first two records: the sniff sees both, as the reader does.
    lines = read(HEALTHY).splitlines(keepends=True)
    glued = lines[0].rstrip(b"\n") + b"".join(lines[1:])
    parsed = load(glued)
    assert parsed.format == "qwen"
    assert [p.kind for p in parsed.problems] == ["glued"]
    assert [m["role"] for m in parsed.messages] == [m["role"] for m in load(read(HEALTHY)).messages]
    assert qwen.serialise(repair(parsed).messages, parsed) == read(HEALTHY)


def test_a_recording_whose_resumed_branch_holds_no_message_is_refused_as_qwens():
    # The last record starts a chain of its own (parentUuid null), a system record: the
    # branch Qwen resumes holds no message, and no other shape reads Qwen's records instead.
    good = records(read(HEALTHY))
    telemetry = next(r for r in good if r["type"] == "system")
    last = telemetry | {"uuid": "9d0e4c55-0000-4000-8000-000000000001", "parentUuid": None}
    data = b"".join(orjson.dumps(r) + b"\n" for r in [*good, last])
    with pytest.raises(FormatError, match="no record holds a message") as caught:
        load(data)
    assert caught.value.unread


def test_a_repair_after_a_reply_written_twice_stays_on_the_branch_qwen_resumes():
    # A reply Qwen wrote twice under one uuid (its thought, then the whole reply), with a
    # title record between the copies that names it as parent: the result the repair adds
    # after the last copy must be on the chain from the last record, or the repaired file
    # resumes past it and still needs repair (found by the damaged-recordings property).
    source = (
        FOLDER / "jazzyalex-agent-sessions__qwen_019f0000-0000-7000-8000-000000000004.rewound.jsonl"
    )
    lines = read(source).splitlines(keepends=True)
    uuids = [orjson.loads(line)["uuid"] for line in lines]
    first, second = (n for n, u in enumerate(uuids) if uuids.count(u) == 2)
    title = next(
        n for n, line in enumerate(lines) if orjson.loads(line).get("parentUuid") == uuids[first]
    )
    assert title > second  # as the fixture has it; then moved between the two copies
    moved = [*lines[: first + 1], lines[title], *lines[first + 1 : title], *lines[title + 1 :]]
    parsed = load(b"".join(moved))
    fixed = repair(parsed)
    assert [a.rule for a in fixed.actions] == ["PAIR-1"]
    written = qwen.serialise(fixed.messages, parsed)
    again = load(written)
    assert repair(again).actions == []
    chain = {r["uuid"]: r["parentUuid"] for r in records(written)}
    added = next(r for r in records(written) if r["type"] == "tool_result")
    assert chain[orjson.loads(lines[title])["uuid"]] == added["uuid"]
    assert added["parentUuid"] == uuids[first]
    # Nothing else changed: every record but the re-linked title is as it was, in order.
    title_uuid = orjson.loads(lines[title])["uuid"]
    out = [line for line in written.splitlines(keepends=True) if b'"tool_result"' not in line]
    assert [line for line in out if orjson.loads(line)["uuid"] != title_uuid] == [
        line for line in moved if orjson.loads(line)["uuid"] != title_uuid
    ]
