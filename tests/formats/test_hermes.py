"""Hermes Agent's session logs and gateway transcripts: read as Hermes's, repaired in its shape."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.diagnosis.rows import message_facts
from inspector.formats import FormatError, hermes, load
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    repair,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

FILES = files(CORPUS / "hermes")
LOG = CORPUS / "hermes" / "derived__session_20260214_093012_a1b2c3.healthy.json"
CUT_LOG = CORPUS / "hermes" / "derived__session_20260214_093012_a1b2c3.cut-after-calls.json"
TRANSCRIPT = CORPUS / "hermes" / "derived__gateway-transcript.healthy.jsonl"
CUT_TRANSCRIPT = CORPUS / "hermes" / "derived__gateway-transcript.cut-after-call.jsonl"
# Session logs a session viewer keeps as fixtures, with Hermes's role-only session_meta rows.
VIEWER_LOGS = files(CORPUS / "hermes", "jazzyalex-agent-sessions__*")
META_LOG = CORPUS / "hermes" / "jazzyalex-agent-sessions__hermes_large.json"


def records(data: bytes) -> list[dict]:
    """The file's messages as Hermes wrote them (the log's list, or the transcript's lines)."""
    if data.lstrip().startswith(b'{"role"'):
        lines = [orjson.loads(line) for line in data.splitlines()]
        return [m for m in lines if m["role"] != "session_meta"]
    return [m for m in orjson.loads(data)["messages"] if m["role"] != "session_meta"]


def unanswered(data: bytes) -> list[str]:
    """Counted from the records: each call id (``call_id``, else ``id``) no result answers."""
    messages = records(data)
    called = [c.get("call_id") or c["id"] for m in messages for c in m.get("tool_calls") or []]
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    return [c for c in called if c not in answered]


def test_the_corpus_holds_a_healthy_and_a_cut_file_of_each_kind():
    assert FILES == sorted([LOG, CUT_LOG, TRANSCRIPT, CUT_TRANSCRIPT, *VIEWER_LOGS])
    assert len(VIEWER_LOGS) == 3


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_file_reads_as_hermes_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "hermes"
    assert parsed.problems == []
    assert hermes.serialise(list(parsed.messages), parsed) == data
    assert len(parsed.messages) == len(records(data))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_findings_are_the_calls_no_result_answers(path):
    data = read(path)
    found = [f for f in findings(load(data)) if f[0].startswith(("PAIR-", "ID-"))]
    assert sorted(call for _, _, call in found) == sorted(unanswered(data))
    assert {rule for rule, _, _ in found} <= {"PAIR-1"}
    assert ("cut-after" in path.name) == bool(found)


@pytest.mark.parametrize("path", [CUT_LOG, CUT_TRANSCRIPT], ids=lambda p: p.name)
def test_a_repair_is_written_in_hermess_shape_and_reads_back_clean(path):
    data = read(path)
    parsed = load(data)
    written, again = repaired_round_trip(hermes, parsed)
    assert again.format == "hermes" and repair(again).actions == []
    old, new = records(data), records(written)
    assert new[: len(old)] == old  # every message kept, with Hermes's own keys
    added = new[len(old) :]
    assert [m["tool_call_id"] for m in added] == unanswered(data)
    calls = {c.get("call_id") or c["id"]: c for m in old for c in m.get("tool_calls") or []}
    assert [m["tool_name"] for m in added] == [
        calls[m["tool_call_id"]]["function"]["name"] for m in added
    ]


def test_the_logs_wrapper_is_kept_and_its_count_follows_the_messages():
    data = read(CUT_LOG)
    parsed = load(data)
    written = hermes.serialise(repair(parsed).messages, parsed)
    before, after = orjson.loads(data), orjson.loads(written)
    assert {k: v for k, v in after.items() if k not in ("messages", "message_count")} == {
        k: v for k, v in before.items() if k not in ("messages", "message_count")
    }
    assert after["message_count"] == len(after["messages"]) == len(before["messages"]) + 2
    assert written.startswith(b'{\n  "session_id": ')  # json.dump(indent=2)'s layout
    assert not written.endswith(b"\n")


def test_a_logs_session_meta_rows_are_kept_where_they_stand_through_a_repair():
    # Hermes's store keeps role-only session_meta rows among the messages; a log holds them.
    doc = orjson.loads(read(META_LOG))
    assert [m["role"] for m in doc["messages"]][-1] == "session_meta"
    result = next(m for m in doc["messages"] if m["role"] == "tool")
    doc["messages"].remove(result)  # the shell call left unanswered
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    parsed = load(data)
    assert parsed.format == "hermes" and parsed.problems == []
    assert [f[0] for f in findings(parsed)] == ["PAIR-1"]
    written, again = repaired_round_trip(hermes, parsed)
    assert repair(again).actions == []
    after = orjson.loads(written)["messages"]
    assert after[-1] == {"role": "session_meta"}  # still last, untouched
    assert sum(m["role"] == "session_meta" for m in after) == 1
    assert [m["tool_call_id"] for m in after if m["role"] == "tool"] == ["call_001"]
    assert orjson.loads(written)["message_count"] == len(after) - 1


def test_the_transcripts_session_meta_line_stays_first_and_untouched():
    data = read(CUT_TRANSCRIPT)
    parsed = load(data)
    written = hermes.serialise(repair(parsed).messages, parsed)
    assert written.splitlines()[: len(data.splitlines())] == data.splitlines()


def test_the_timeline_shows_the_model_and_each_lines_time():
    log = load(read(LOG))
    model = orjson.loads(read(LOG))["model"]
    facts = message_facts(log)
    assert [f["model"] for f in facts] == [
        model if m["role"] == "assistant" else None for m in log.messages
    ]
    transcript = load(read(TRANSCRIPT))
    stamps = [m["timestamp"] for m in records(read(TRANSCRIPT))]
    assert [f["at"] for f in message_facts(transcript)] == stamps


def test_sniff_claims_hermes_files_and_not_plain_chat():
    for path in FILES:
        assert hermes.sniff(read(path)) == 0.95
    plain = orjson.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    assert hermes.sniff(plain) == 0
    assert hermes.sniff(b'{"role": "user", "content": "hi"}\n') == 0
    kimi = CORPUS / "openai-chat"
    assert all(hermes.sniff(read(p)) == 0 for p in files(kimi, "*kimi-context*"))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m: m.update(role="narrator"), "narrator"),
        (lambda m: m.update(content=7), "content"),
        (lambda m: m.pop("content") and m.update(text="moved"), "without 'content'"),
    ],
    ids=["role", "content-type", "content-elsewhere"],
)
def test_a_message_this_reader_cannot_read_refuses_the_file(change, field):
    for path in (LOG, TRANSCRIPT):
        data = read(path)
        if path == LOG:
            doc = orjson.loads(data)
            change(doc["messages"][0])
            bad = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
        else:
            lines = [orjson.loads(line) for line in data.splitlines()]
            change(lines[1])
            bad = b"".join(orjson.dumps(line) + b"\n" for line in lines)
        with pytest.raises(FormatError, match=field) as caught:
            load(bad)
        assert caught.value.unread, path.name


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(p) for p in FILES]))
def test_damaged_logs_and_transcripts_are_repaired_into_ones_that_need_no_more(data: bytes) -> None:
    # Logs and transcripts with lines dropped, doubled, swapped or cut, or a value replaced:
    # whatever they read as, the repair written back in that shape needs no more.
    check_written_back(data)
