"""OpenClaw sessions are pi's format: read by ``pi``, written back as they were, repaired."""

from __future__ import annotations

import orjson
import pytest

from inspector.diagnosis.rows import message_facts
from inspector.formats import load, pi
from tests.formats.shapes import findings, repair, repaired_round_trip
from tests.testdata import CORPUS, files, read

SESSIONS = files(CORPUS / "pi", "openclaw-*")
HEALTHY = (
    CORPUS / "pi" / "openclaw-openclaw__8555a0a4-0b79-459d-939c-e17cdbbf4fe2.first-18-lines.jsonl"
)
BROKEN = (
    CORPUS / "pi" / "openclaw-openclaw__8555a0a4-0b79-459d-939c-e17cdbbf4fe2.cut-after-call.jsonl"
)


def unanswered(data: bytes) -> list[str]:
    """Counted from the lines themselves: each toolCall id no toolResult line answers."""
    entries = [orjson.loads(line) for line in data.splitlines()]
    messages = [e["message"] for e in entries if e.get("type") == "message"]
    called = [b["id"] for m in messages for b in m.get("content") or [] if b["type"] == "toolCall"]
    answered = {m["toolCallId"] for m in messages if m["role"] == "toolResult"}
    return [c for c in called if c not in answered]


def test_both_files_are_there():
    assert SESSIONS == sorted([HEALTHY, BROKEN])


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name)
def test_an_openclaw_session_reads_as_pi_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "pi"
    assert parsed.problems == []
    assert parsed.meta["session_id"] == "8555a0a4-0b79-459d-939c-e17cdbbf4fe2"
    assert pi.serialise(list(parsed.messages), parsed) == data


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name)
def test_findings_are_the_calls_no_result_answers(path):
    data = read(path)
    parsed = load(data)
    expected = unanswered(data)
    found = [f for f in findings(parsed) if f[0].startswith(("PAIR-", "ID-"))]
    assert sorted(call for _, _, call in found) == sorted(expected)
    assert {rule for rule, _, _ in found} <= {"PAIR-1"}
    assert (path == BROKEN) == bool(expected)


def test_the_cut_session_repaired_in_pis_shape_reads_back_clean():
    parsed = load(read(BROKEN))
    assert len(unanswered(read(BROKEN))) == 5
    written, again = repaired_round_trip(pi, parsed)
    assert again.format == "pi" and repair(again).actions == []
    # The file as it was, then one toolResult entry a call, chained after the call.
    old = read(BROKEN).splitlines()
    new = written.splitlines()
    assert new[: len(old)] == old
    added = [orjson.loads(line) for line in new[len(old) :]]
    assert [e["message"]["role"] for e in added] == ["toolResult"] * 5
    assert [e["message"]["toolCallId"] for e in added] == unanswered(read(BROKEN))
    assert added[0]["parentId"] == orjson.loads(old[-1])["id"]


def test_the_timeline_shows_when_which_model_and_the_tokens_each_reply_cost():
    parsed = load(read(HEALTHY))
    facts = message_facts(parsed)
    assert len(facts) == len(parsed.messages)
    entries = [orjson.loads(line) for line in read(HEALTHY).splitlines()]
    replies = [e for e in entries if e.get("message", {}).get("model") == "gpt-5.4"]
    shown = [f for f in facts if f and f["model"] == "gpt-5.4"]
    assert [f["at"] for f in shown] == [e["timestamp"] for e in replies]
    usage = [e["message"]["usage"] for e in replies]
    assert [f["tokens_out"] for f in shown] == [u["output"] for u in usage]
    assert [f["tokens_in"] for f in shown] == [
        u["input"] + u["cacheRead"] + u["cacheWrite"] for u in usage
    ]
