"""Goose's session JSONL and its session export: read as Goose's messages, repaired in place."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.diagnosis import diagnose
from inspector.diagnosis.rows import message_facts
from inspector.formats import FormatError, goose, load
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    repair,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

FILES = files(CORPUS / "goose")
HEALTHY = CORPUS / "goose" / "derived__20250929_140310.healthy.jsonl"
CUT = CORPUS / "goose" / "derived__20250929_140310.cut-after-calls.jsonl"
# What ``goose session export --format json`` writes (serde's pretty ``Session``).
EXPORT = CORPUS / "goose" / "derived__20250929_1.export.healthy.json"
EXPORT_CUT = CORPUS / "goose" / "derived__20250929_1.export.cut-after-calls.json"


def lines(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines()]


def session_of(data: bytes) -> tuple[dict, list[dict]]:
    """The session's fields and its messages, from the file: an export's ``Session`` object,
    or a session file's metadata line and message lines."""
    if data.lstrip().startswith(b"{\n"):
        doc = orjson.loads(data)
        return {k: v for k, v in doc.items() if k != "conversation"}, doc["conversation"]
    records = lines(data)
    return records[0], records[1:]


def unanswered(data: bytes) -> list[str]:
    """Counted from the file: each toolRequest id no toolResponse item answers."""
    items = [i for record in session_of(data)[1] for i in record["content"]]
    asked = [i["id"] for i in items if i["type"] == "toolRequest"]
    answered = {i["id"] for i in items if i["type"] == "toolResponse"}
    return [c for c in asked if c not in answered]


def test_the_corpus_holds_a_healthy_and_a_cut_session_each_as_lines_and_as_an_export():
    assert FILES == sorted([HEALTHY, CUT, EXPORT, EXPORT_CUT])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_session_reads_as_goose_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "goose"
    assert parsed.problems == []
    session, messages = session_of(data)
    assert parsed.meta["cwd"] == session["working_dir"]
    assert goose.serialise(list(parsed.messages), parsed) == data
    items = [i for record in messages for i in record["content"]]
    results = [m for m in parsed.messages if m["role"] == "tool"]
    assert len(results) == sum(i["type"] == "toolResponse" for i in items)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_findings_are_the_calls_no_response_answers(path):
    data = read(path)
    found = [f for f in findings(load(data)) if f[0].startswith(("PAIR-", "ID-"))]
    assert sorted(call for _, _, call in found) == sorted(unanswered(data))
    assert {rule for rule, _, _ in found} <= {"PAIR-1"}
    assert (path in (CUT, EXPORT_CUT)) == bool(found)


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
    assert goose.sniff(read(EXPORT)) == goose.sniff(read(EXPORT_CUT)) == 0.95
    for other in files(CORPUS / "cursor") + files(CORPUS / "hermes") + files(CORPUS / "openhands"):
        assert goose.sniff(read(other)) == 0, other.name
    assert load(read(CUT)).format == load(read(EXPORT_CUT)).format == "goose"


def test_an_export_written_compact_is_read_as_one_too():
    doc = orjson.loads(read(EXPORT_CUT))
    data = orjson.dumps(doc)  # serde_json::to_string, as Goose's API exports it
    assert goose.sniff(data) == 0.95
    parsed = load(data)
    assert parsed.format == "goose" and goose.serialise(list(parsed.messages), parsed) == data
    written, again = repaired_round_trip(goose, parsed)
    assert b"\n" not in written and repair(again).actions == []


def test_the_cut_export_repaired_is_goose_s_export_with_the_calls_answered():
    data = read(EXPORT_CUT)
    written, again = repaired_round_trip(goose, load(data))
    assert again.format == "goose" and repair(again).actions == []
    before, after = orjson.loads(data), orjson.loads(written)
    assert list(after) == list(before)  # the Session's fields, in serde's order
    fields = [k for k in before if k not in ("conversation", "message_count")]
    assert {k: after[k] for k in fields} == {k: before[k] for k in fields}
    old = before["conversation"]
    assert after["conversation"][: len(old)] == old  # each message as it was
    (added,) = after["conversation"][len(old) :]  # one user message answering both calls
    assert after["message_count"] == len(old) + 1
    # A Message as serde writes one: Goose's reader requires each of these fields.
    assert list(added) == ["id", "role", "created", "content", "metadata"]
    assert added["role"] == "user" and added["id"] is None
    assert added["created"] == old[-1]["created"]
    assert added["metadata"] == {"userVisible": True, "agentVisible": True}
    assert [i["id"] for i in added["content"]] == unanswered(data)
    # The file's results are CallToolResults ({"content", "isError"}): the new ones too.
    for item in added["content"]:
        assert item["type"] == "toolResponse" and item["toolResult"]["status"] == "success"
        assert set(item["toolResult"]["value"]) == {"content", "isError"}
    assert unanswered(written) == []
    # Laid out as serde's to_string_pretty, and like the file, without a final newline.
    assert written == orjson.dumps(after, option=orjson.OPT_INDENT_2)
    assert data.endswith(b"}") and written.endswith(b"}")


def test_an_export_s_conversation_is_read_with_the_rules_of_the_lines():
    """The same session as lines and as an export: the same messages, the same findings."""
    for lines_file, export in ((HEALTHY, EXPORT), (CUT, EXPORT_CUT)):
        a, b = load(read(lines_file)), load(read(export))
        assert [m["role"] for m in a.messages] == [m["role"] for m in b.messages]
        assert [r for r, _, _ in findings(a)] == [r for r, _, _ in findings(b)]
        assert message_facts(a) == message_facts(b)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (read(EXPORT)[:-200], "not a single JSON document"),
        (
            orjson.dumps({**orjson.loads(read(EXPORT)), "conversation": None}),
            "'conversation' holds no messages",
        ),
        (
            orjson.dumps(
                {k: v for k, v in orjson.loads(read(EXPORT)).items() if k != "conversation"}
            ),
            "without 'conversation'",
        ),
    ],
    ids=["cut-short", "null-conversation", "no-conversation"],
)
def test_an_export_that_holds_no_readable_conversation_is_refused_as_goose_s(data, reason):
    with pytest.raises(FormatError, match=reason) as caught:
        goose.parse(data)
    assert caught.value.unread


def test_an_unknown_item_in_an_export_names_the_message_it_is_in():
    doc = orjson.loads(read(EXPORT))
    doc["conversation"][2]["content"].append({"type": "hologram"})
    with pytest.raises(FormatError, match=r"message 3: .*hologram") as caught:
        goose.parse(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    assert caught.value.unread


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


def test_an_export_s_first_message_is_a_message_not_a_metadata_line():
    doc = orjson.loads(read(EXPORT))
    doc["conversation"][0].pop("role")
    with pytest.raises(FormatError, match="message 1: role None") as caught:
        goose.parse(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    assert caught.value.unread


def test_two_orphan_results_of_one_line_are_written_back_as_two_notes():
    # The reply that made two calls lost (a damaged file): its results' line holds two
    # orphans, each a note. Goose reads a line's words as one message, so each note is
    # written in a line of its own: read back, the file says what the repair said (found
    # by the damaged-sessions property).
    lines = read(HEALTHY).split(b"\n")
    two_results = next(n for n, line in enumerate(lines) if line.count(b'"toolResponse"') == 2)
    data = b"\n".join(lines[: two_results - 1] + lines[two_results:])
    parsed = load(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["PAIR-3", "PAIR-3"]
    out, _ = repaired_round_trip(goose, parsed)  # read back as the two notes, needing no more
    noted = [line for line in out.splitlines() if b"[note: a tool result" in line]
    assert [line.count(b"[note: a tool result") for line in noted] == [1, 1]


def test_a_prompt_written_after_the_results_it_stood_before_moves_after_them():
    # A damaged file: the prompt's line after the reply whose results follow it. The repair
    # puts the results after their call, then the prompt, whose line is written where it
    # now stands, as it was (found by the damaged-sessions property).
    lines = read(HEALTHY).splitlines(keepends=True)
    data = b"".join([lines[0], lines[2], lines[1], *lines[3:]])
    parsed = load(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["PAIR-2"]
    out, _ = repaired_round_trip(goose, parsed)  # read back as repaired, needing no more
    written = out.splitlines(keepends=True)
    assert written == [lines[0], lines[2], lines[3], lines[1], *lines[4:]]


def test_a_note_for_the_first_lines_orphan_result_goes_after_the_metadata_line():
    # A session whose first message line holds a result with no call (the reply before it
    # lost): the note was written before the metadata line, which Goose reads first, and
    # the file no longer read as Goose's (found by the damaged-sessions property, fuzzed).
    lines = read(HEALTHY).splitlines(keepends=True)
    first_results = next(n for n, line in enumerate(lines) if b'"toolResponse"' in line)
    data = b"".join([lines[0], *lines[first_results:]])
    parsed = load(data)
    assert [rule for rule, _, _ in findings(parsed)][:1] == ["PAIR-3"]
    out, _ = repaired_round_trip(goose, parsed)  # read back as repaired, needing no more
    assert out.splitlines(keepends=True)[0] == lines[0]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(p) for p in FILES]))
def test_damaged_sessions_and_exports_are_repaired_into_ones_that_need_no_more(data: bytes) -> None:
    # Sessions and exports with lines dropped, doubled, swapped or cut, or a value replaced:
    # whatever they read as, the repair written back in that shape needs no more.
    check_written_back(data)
