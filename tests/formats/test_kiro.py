"""Kiro CLI's session logs: read as Kiro's records, written back as they were, repaired in them."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.diagnosis.rows import message_facts
from inspector.formats import FormatError, kiro, load
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    repair,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

FILES = files(CORPUS / "kiro")
HEALTHY = CORPUS / "kiro" / "derived__kiro-cli-session.healthy.jsonl"
BROKEN = CORPUS / "kiro" / "derived__kiro-cli-session.issue-6110.jsonl"


def lines(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines()]


def items(data: bytes, kind: str) -> list[dict]:
    return [i["data"] for r in lines(data) if r["data"] for i in r["data"]["content"]
            if i["kind"] == kind]  # fmt: skip


def unpaired(data: bytes) -> list[str]:
    """Counted from the lines: each call the results line right after its reply does not answer."""
    records = lines(data)
    out = []
    for n, record in enumerate(records):
        if record["kind"] != "AssistantMessage":
            continue
        after = records[n + 1] if n + 1 < len(records) else None
        answered = set()
        if after is not None and after["kind"] == "ToolResults":
            answered = {i["data"]["toolUseId"] for i in after["data"]["content"]}
        uses = [i["data"]["toolUseId"] for i in record["data"]["content"] if i["kind"] == "toolUse"]
        out += [u for u in uses if u not in answered]
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_log_reads_as_kiro_and_comes_back_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "kiro" and parsed.problems == []
    assert kiro.serialise(list(parsed.messages), parsed) == data
    results = [m for m in parsed.messages if m["role"] == "tool"]
    assert len(results) == len(items(data, "toolResult"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_unanswered_calls_are_the_ones_no_results_line_answers_after_their_reply(path):
    data = read(path)
    found = findings(load(data))
    unanswered = sorted(call for rule, _, call in found if rule == "PAIR-1")
    assert unanswered == sorted(unpaired(data))
    assert (path == BROKEN) == bool(found)


def test_the_issue_6110_log_repaired_in_kiro_records_reads_back_clean():
    data = read(BROKEN)
    written, again = repaired_round_trip(kiro, load(data))
    assert again.format == "kiro" and repair(again).actions == []
    assert unpaired(written) == []
    old, new = lines(data), lines(written)
    assert new[:2] == old[:2]  # the prompt and the first reply as they were
    assert all(r["version"] == "v1" for r in new)
    assert {r["kind"] for r in new} <= {"Prompt", "AssistantMessage", "ToolResults"}
    assert written.splitlines()[0] == data.splitlines()[0]


def test_what_is_before_the_last_clear_is_kept_and_not_read():
    records = lines(read(BROKEN))
    data = b"\n".join(orjson.dumps(r) for r in [*records, {"version": "v1", "kind": "Clear",
                      "data": None}, *lines(read(HEALTHY))]) + b"\n"  # fmt: skip
    parsed = load(data)
    assert parsed.meta["cleared_lines"] == [len(records) + 1]
    assert findings(parsed) == []  # the broken turns were cleared
    assert kiro.serialise(list(parsed.messages), parsed) == data


def test_the_timeline_shows_each_prompts_time():
    parsed = load(read(HEALTHY))
    assert message_facts(parsed)[0]["at"] == "2026-01-27T08:00:00Z"


def test_sniff_claims_kiro_and_no_other_agent():
    assert kiro.sniff(read(HEALTHY)) == kiro.sniff(read(BROKEN)) == 0.95
    for other in files(CORPUS / "goose") + files(CORPUS / "cursor") + files(CORPUS / "hermes"):
        assert kiro.sniff(read(other)) == 0, other.name


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.update(kind="Compaction"), "not a Kiro record"),
        (lambda r: r["data"]["content"].append({"kind": "hologram", "data": 1}), "hologram"),
        (lambda r: r["data"].pop("content"), "data.content"),
        (lambda r: r.update(version="v9"), "not a Kiro record"),
    ],
    ids=["kind", "item", "content", "version"],
)
def test_a_record_this_reader_does_not_know_refuses_the_file(change, field):
    records = lines(read(HEALTHY))
    change(records[1])
    data = b"\n".join(orjson.dumps(r) for r in records) + b"\n"
    with pytest.raises(FormatError, match=field) as caught:
        kiro.parse(data)
    assert caught.value.unread and "line 2" in str(caught.value)


# A reply as Kiro CLI 2.x writes one: a thinking item with its signature, redacted content and
# model, and a results line with its "results" map (the shapes of a 2.28 session's records).
def _reply(message_id: str, use: str, model: str) -> dict:
    thinking = {"text": f"plan {message_id}", "signature": None, "redactedContent": [46, 75],
                "modelId": model}  # fmt: skip
    call = {"toolUseId": use, "name": "read", "input": {"operations": [{"path": "/w"}]}}
    content = [{"kind": "thinking", "data": thinking}, {"kind": "toolUse", "data": call}]
    return {"version": "v1", "kind": "AssistantMessage",
            "data": {"message_id": message_id, "content": content}}  # fmt: skip


def _results(message_id: str, use: str) -> dict:
    answer = {"toolUseId": use, "content": [{"kind": "text", "data": "ok"}], "status": "success"}
    return {"version": "v1", "kind": "ToolResults",
            "data": {"message_id": message_id, "content": [{"kind": "toolResult", "data": answer}],
                     "results": {}}}  # fmt: skip


def _prompt(message_id: str, at: float) -> dict:
    return {"version": "v1", "kind": "Prompt", "data": {"message_id": message_id,
            "content": [{"kind": "text", "data": "go on"}], "meta": {"timestamp": at}}}  # fmt: skip


def _log(*records: dict) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def test_a_reply_rewritten_by_a_repair_keeps_its_thinking_item_whole():
    # Two replies under one call id: the repair renames the second (ID-1), rewriting its line.
    first = [_prompt("p1", 1791564802.5), _reply("a1", "t1", "auto"), _results("r1", "t1")]
    data = _log(*first, _prompt("p2", 1791564900), _reply("a2", "t1", "auto"), _results("r2", "t1"))
    assert "ID-1" in {rule for rule, _, _ in findings(load(data))}
    written, again = repaired_round_trip(kiro, load(data))
    assert again.format == "kiro" and repair(again).actions == []
    old, new = lines(data), lines(written)
    assert new[:4] == old[:4]
    second = new[4]["data"]["content"]
    assert second[0] == old[4]["data"]["content"][0]  # signature, redacted content, model kept
    assert second[1]["data"]["toolUseId"] != "t1"


def test_the_timeline_shows_a_replys_model_and_a_prompts_fractional_time():
    data = _log(_prompt("p1", 1791564802.5), _reply("a1", "t1", "claude-sonnet-4.5"),
                _results("r1", "t1"))  # fmt: skip
    facts = message_facts(load(data))
    assert facts[0]["at"].startswith("2026-10-09T") and facts[0]["model"] is None
    assert facts[1]["model"] == "claude-sonnet-4.5"


def test_a_prompt_time_no_clock_can_show_is_no_time_not_a_crash():
    data = _log(_prompt("p1", 1e300), _reply("a1", "t1", "auto"), _results("r1", "t1"))
    assert message_facts(load(data))[0]["at"] is None


def test_a_prompt_written_after_the_results_it_stood_before_moves_after_them():
    # A damaged file: the first prompt's line after the reply whose results follow it. The
    # repair puts the results right after their call, then the prompt: the prompt's line is
    # written where it now stands, under its own message id (found by the damaged-sessions
    # property; the results' line stayed before it and the file still needed repair).
    lines = read(HEALTHY).splitlines(keepends=True)
    data = b"".join([lines[1], lines[0], *lines[2:]])
    parsed = load(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["PAIR-2"]
    out, _ = repaired_round_trip(kiro, parsed)  # read back as repaired, needing no more
    written = [orjson.loads(line) for line in out.splitlines()]
    assert [r["kind"] for r in written][:3] == ["AssistantMessage", "ToolResults", "Prompt"]
    assert sorted(out.splitlines()) == sorted(data.splitlines())  # every line as it was


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(p) for p in FILES]))
def test_damaged_sessions_are_repaired_into_sessions_that_need_no_more(data: bytes) -> None:
    # Sessions with lines dropped, doubled, swapped or cut, or a value replaced:
    # whatever they read as, the repair written back in that shape needs no more.
    check_written_back(data)
