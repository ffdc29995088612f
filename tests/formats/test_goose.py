"""Goose's session JSONL: read as Goose's messages, repaired in its lines."""

from __future__ import annotations

import orjson
import pytest

from inspector.diagnosis import diagnose
from inspector.diagnosis.rows import message_facts
from inspector.formats import FormatError, goose, load
from tests.formats.shapes import findings, repair, repaired_round_trip
from tests.testdata import CORPUS, files, read

FILES = files(CORPUS / "goose")
HEALTHY = CORPUS / "goose" / "derived__20250929_140310.healthy.jsonl"
CUT = CORPUS / "goose" / "derived__20250929_140310.cut-after-calls.jsonl"


def lines(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines()]


def unanswered(data: bytes) -> list[str]:
    """Counted from the lines: each toolRequest id no toolResponse item answers."""
    items = [i for record in lines(data)[1:] for i in record["content"]]
    asked = [i["id"] for i in items if i["type"] == "toolRequest"]
    answered = {i["id"] for i in items if i["type"] == "toolResponse"}
    return [c for c in asked if c not in answered]


def test_the_corpus_holds_a_healthy_and_a_cut_session():
    assert FILES == sorted([HEALTHY, CUT])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_session_reads_as_goose_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "goose"
    assert parsed.problems == []
    assert parsed.meta["cwd"] == lines(data)[0]["working_dir"]
    assert goose.serialise(list(parsed.messages), parsed) == data
    items = [i for record in lines(data)[1:] for i in record["content"]]
    results = [m for m in parsed.messages if m["role"] == "tool"]
    assert len(results) == sum(i["type"] == "toolResponse" for i in items)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_findings_are_the_calls_no_response_answers(path):
    data = read(path)
    found = [f for f in findings(load(data)) if f[0].startswith(("PAIR-", "ID-"))]
    assert sorted(call for _, _, call in found) == sorted(unanswered(data))
    assert {rule for rule, _, _ in found} <= {"PAIR-1"}
    assert (path == CUT) == bool(found)


def test_the_cut_session_repaired_in_goose_lines_reads_back_clean():
    data = read(CUT)
    written, again = repaired_round_trip(goose, load(data))
    assert again.format == "goose" and repair(again).actions == []
    old, new = data.splitlines(), written.splitlines()
    assert new[: len(old)] == old  # every line as it was, the metadata line first
    (added,) = lines(written)[len(old) :]  # one user line answering both calls
    assert added["role"] == "user"
    assert added["created"] == lines(data)[-1]["created"]
    assert [i["id"] for i in added["content"]] == unanswered(data)
    assert {i["type"] for i in added["content"]} == {"toolResponse"}
    assert unanswered(written) == []


def test_a_hidden_message_is_kept_and_not_read():
    records = lines(read(HEALTHY))
    hidden = {**records[3], "metadata": {"userVisible": True, "agentVisible": False}}
    data = b"\n".join(orjson.dumps(r) for r in [*records[:3], hidden, *records[3:]]) + b"\n"
    parsed = load(data)
    assert parsed.meta["hidden_messages"] == [4]
    assert len(parsed.messages) == len(load(read(HEALTHY)).messages)
    note = {"role": "user", "content": "[checked]", "metadata": {}}
    written = goose.serialise([*parsed.messages, note], parsed)
    assert written.splitlines()[3] == data.splitlines()[3]


def test_the_timeline_shows_when_each_line_was_written():
    parsed = load(read(HEALTHY))
    created = {r["id"]: r["created"] for r in lines(read(HEALTHY))[1:]}
    facts = message_facts(parsed)
    assert len(facts) == len(parsed.messages)
    assert facts[0]["at"] == "2025-09-29T14:03:10Z"
    assert created["msg_4c1f0a7e"] == 1759154590


def test_sniff_claims_goose_and_no_other_agent():
    assert goose.sniff(read(HEALTHY)) == goose.sniff(read(CUT)) == 0.95
    for other in files(CORPUS / "cursor") + files(CORPUS / "hermes"):
        assert goose.sniff(read(other)) == 0, other.name
    assert load(read(CUT)).format == "goose"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.update(role="system"), "role 'system'"),
        (lambda r: r["content"].append({"type": "hologram"}), "hologram"),
        (lambda r: r.pop("content") and r.update(parts=[]), "without a 'content' list"),
        (lambda r: r["content"][0].pop("text") and r["content"][0].update(body="x"), "text"),
    ],
    ids=["role", "item", "content", "text"],
)
def test_a_record_this_reader_does_not_know_refuses_the_file(change, field):
    records = lines(read(HEALTHY))
    change(records[1])
    data = b"\n".join(orjson.dumps(r) for r in records) + b"\n"
    with pytest.raises(FormatError, match=field) as caught:
        goose.parse(data)
    assert caught.value.unread
    assert "line 2" in str(caught.value)


def test_a_result_lost_from_a_user_line_is_written_back_into_that_line():
    records = lines(read(HEALTHY))
    answers = records[5]["content"]  # the user line answering both calls of line 5
    records[5] = {**records[5], "content": answers[1:]}  # the first answer lost
    data = b"\n".join(orjson.dumps(r) for r in records) + b"\n"
    parsed = load(data)
    assert unanswered(data) == [answers[0]["id"]]
    written, again = repaired_round_trip(goose, parsed)
    assert again.format == "goose"
    old, new = data.splitlines(), written.splitlines()
    assert len(new) == len(old)
    assert [n for n, (a, b) in enumerate(zip(old, new, strict=True)) if a != b] == [5]
    line = orjson.loads(new[5])
    assert {i["id"] for i in line["content"]} == {a["id"] for a in answers}
    assert {k: v for k, v in line.items() if k != "content"} == {
        k: v for k, v in records[5].items() if k != "content"
    }
    assert unanswered(written) == []


def test_a_created_time_no_clock_can_show_leaves_the_fact_unsaid_and_the_session_diagnosed():
    lines = read(HEALTHY).splitlines(keepends=True)
    record = orjson.loads(lines[1])
    record["created"] = 2**62
    lines[1] = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    parsed = load(b"".join(lines), "goose")
    facts = message_facts(parsed)
    assert facts[0] is not None and facts[0]["at"] is None
    assert all(f and f["at"] for f in facts[1:])
    assert not diagnose(parsed).needs_repair
