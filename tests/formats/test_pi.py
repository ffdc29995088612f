"""pi coding-agent sessions: the active branch, compactions, skipped turns, repairs written back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FormatError, load, pi
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    outline,
    repair,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

SESSIONS = files(CORPUS / "pi")
LARGE = CORPUS / "pi" / "badlogic-pi-mono__large-session.jsonl"
COMPACTED = CORPUS / "pi" / "badlogic-pi-mono__before-compaction.jsonl"
AGENTICLAW = CORPUS / "pi" / "agentiagency-agenticlaw__real-session.pi.jsonl"


def _id(path: Path) -> str:
    return path.name


def lines_of(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-01-01T00:00:00.000Z"}


def entry(key: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": key,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {**message, "timestamp": 1767225601000},
    }


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def calls(*ids: str, text: str = "", stop: str = "toolUse") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": i, "name": "bash", "arguments": {"n": i}} for i in ids]
    return {"role": "assistant", "content": content, "provider": "anthropic", "stopReason": stop}


def said(text: str, stop: str = "stop") -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": stop}


def result(call: str, text: str = "ok") -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call,
        "toolName": "bash",
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }


# --- the corpus ------------------------------------------------------------------------


@pytest.mark.parametrize("path", SESSIONS, ids=_id)
def test_session_loads_as_pi_and_round_trips_byte_for_byte(path: Path) -> None:
    data = read(path)
    parsed = load(data)
    assert parsed.format == "pi"
    assert parsed.problems == []
    assert pi.serialise(parsed.messages, parsed) == data
    assert len(parsed.sources) == len(parsed.messages)


# The one real defect: Mario's session was compacted while a bash call ran, so the
# call kept after the compaction (line 628) never got its result.
SESSION_FINDINGS = {
    COMPACTED.name: [("PAIR-1", [628], "toolu_01571BXn2nSXvrR7sxVHAXXE")],
    # OpenClaw's session cut after a reply of five reads (tests/formats/test_openclaw.py).
    "openclaw-openclaw__8555a0a4-0b79-459d-939c-e17cdbbf4fe2.cut-after-call.jsonl": [
        ("PAIR-1", [12], f"call_{call}")
        for call in (
            "sE22NNcRv2GNZ1WFeBLL8YQB|fc_0b652338ac8406ca0169ad73bbfb488191be6925e11eb214ac",
            "sLRlMc0CDKyExmuZjUNfxZIT|fc_0b652338ac8406ca0169ad73bbfb5881918240a8de6cbd30d9",
            "Qgbxai0w3IxdHYBtSROMnQ7q|fc_0b652338ac8406ca0169ad73bbfb648191a84a5b13e4401917",
            "n38mHWvI20WxFwmskKaawaBM|fc_0b652338ac8406ca0169ad73bbfb6c81919dd427087e104eb4",
            "1ShcL4qZXwDHnmnhzfQUjHCr|fc_0b652338ac8406ca0169ad73bbfb708191842ed23dd96f67bc",
        )
    ],
}


@pytest.mark.parametrize("path", SESSIONS, ids=_id)
def test_session_has_only_its_real_findings(path: Path) -> None:
    assert findings(pi.parse(read(path))) == SESSION_FINDINGS.get(path.name, [])


def test_stopped_turns_are_left_out_as_pi_leaves_them_out() -> None:
    parsed = pi.parse(read(LARGE))
    skipped = parsed.meta["skipped_turns"]
    assert len(skipped) == 22
    assert skipped[0] == {"line": 3, "stop_reason": "aborted", "error": "Request was aborted"}
    # Sixteen calls in a reply the API cut off ("terminated"): pi never ran them and
    # sends the next request without them, so they are no unanswered calls.
    assert {"line": 33, "stop_reason": "error", "error": "terminated"} in skipped
    assert all(line != [33] for line in parsed.sources)
    assert parsed.meta["version"] == 1


def test_a_compaction_restarts_the_history_at_its_summary() -> None:
    parsed = pi.parse(read(COMPACTED))
    first = parsed.messages[0]
    assert first["metadata"]["pi"] == "compaction"
    assert first["content"][0]["text"].startswith(pi.COMPACTION_PREFIX)
    assert parsed.sources[0] == [629]  # the last compaction of the branch
    # What it keeps (firstKeptEntryIndex) follows, then what came after it.
    assert parsed.sources[1][0] < 629 < parsed.sources[-1][0]
    bash = [m for m in parsed.messages if m["metadata"].get("pi") == "bashExecution"]
    assert bash and bash[0]["content"][0]["text"].startswith("Ran `ls`\n```\n")


def test_the_repaired_compacted_session_gets_its_result_in_pis_shape() -> None:
    parsed = pi.parse(read(COMPACTED))
    data, _ = repaired_round_trip(pi, parsed)
    records = lines_of(data)
    assert len(records) == len(lines_of(read(COMPACTED))) + 1
    new = records[628]  # right after the call's line
    assert new["type"] == "message"
    assert set(new) == {"type", "timestamp", "message"}  # version 1: no id, no parentId
    message = new["message"]
    assert message["role"] == "toolResult"
    assert message["toolCallId"] == "toolu_01571BXn2nSXvrR7sxVHAXXE"
    assert message["toolName"] == "bash"
    assert message["isError"] is True
    assert message["content"][0]["text"].startswith("Tool call was interrupted; no result.")
    assert isinstance(message["timestamp"], int)
    assert new["timestamp"] == records[627]["timestamp"]
    # The compaction still keeps from the same entry.
    assert (
        records[629]["firstKeptEntryIndex"] == lines_of(read(COMPACTED))[628]["firstKeptEntryIndex"]
    )


# --- broken variants of real sessions ---------------------------------------------------


def test_a_dropped_result_in_a_real_session_is_repaired_in_place() -> None:
    data = read(LARGE)
    raw = data.splitlines(keepends=True)
    assert b'"toolCallId":"toolu_013kDm2vuwUuffT6cFFdqdge"' in raw[31]
    broken = b"".join(raw[:31] + raw[32:])
    parsed = pi.parse(broken)
    assert findings(parsed) == [("PAIR-1", [31], "toolu_013kDm2vuwUuffT6cFFdqdge")]
    fixed, _ = repaired_round_trip(pi, parsed)
    out = fixed.splitlines(keepends=True)
    assert out[:31] == raw[:31] and out[32:] == raw[32:]  # only the new line differs
    assert orjson.loads(out[31])["message"]["toolCallId"] == "toolu_013kDm2vuwUuffT6cFFdqdge"


def test_a_session_cut_mid_line_is_repaired_without_the_cut_line() -> None:
    raw = read(LARGE).splitlines(keepends=True)
    assert b'"toolCall"' in raw[30]
    cut = b"".join(raw[:31]) + raw[31][:40]  # the call's result is half written
    parsed = pi.parse(cut)
    assert [(p.line, p.kind) for p in parsed.problems] == [(32, "truncated")]
    data, again = repaired_round_trip(pi, parsed)
    assert again.problems == []
    assert data.splitlines(keepends=True)[:31] == raw[:31]


def test_a_blank_reply_is_dropped_and_compactions_keep_from_the_same_entries() -> None:
    raw = read(COMPACTED).splitlines(keepends=True)
    # Inside what the last compaction keeps (from its firstKeptEntryIndex, 551).
    blank = orjson.dumps({"type": "message", "timestamp": "2025-12-08T23:50:00.000Z",
                          "message": said("   ")}) + b"\n"  # fmt: skip
    broken = b"".join([*raw[:600], blank, *raw[600:]])
    parsed = pi.parse(broken)
    assert [(a[0], a[1]) for a in findings(parsed)] == [("MSG-1", [601]), ("PAIR-1", [629])]
    data, again = repaired_round_trip(pi, parsed)
    before, after = lines_of(read(COMPACTED)), lines_of(data)
    assert len(after) == len(before) + 1  # the blank reply went, a result came
    kept = [r["firstKeptEntryIndex"] for r in after if r["type"] == "compaction"]
    assert kept == [r["firstKeptEntryIndex"] for r in before if r["type"] == "compaction"]
    assert outline(again.messages) == outline(repair(parsed).messages)


def test_a_removed_entry_before_a_kept_index_moves_it() -> None:
    """Version 1 counts entries: a line the repair removes before one moves it."""
    head = {"type": "session", "id": "s-1", "timestamp": "2026-01-01T00:00:00.000Z"}
    rows = [
        {"type": "message", "timestamp": "t", "message": user("one")},
        {"type": "message", "timestamp": "t", "message": said(" ")},
        {"type": "message", "timestamp": "t", "message": user("two")},
        {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 2},
    ]
    parsed = pi.parse(jsonl(head, *rows))
    # What pi sends: the summary, then from entry 2 (the blank reply) on.
    assert outline(parsed.messages)[1:] == [("assistant", " ", ()), ("user", "two")]
    out, again = repaired_round_trip(pi, parsed)
    assert lines_of(out)[-1]["firstKeptEntryIndex"] == 2  # now "two", which moved up
    assert outline(again.messages)[1:] == [("user", "two")]


# --- the tree ---------------------------------------------------------------------------


def test_only_the_branch_ending_at_the_last_entry_is_read() -> None:
    data = jsonl(
        HEADER,
        entry("u1", None, user("first")),
        entry("a1", "u1", said("one answer")),
        entry("a2", "u1", said("another answer")),
        entry("u2", "a2", user("go on")),
    )
    parsed = pi.parse(data)
    assert outline(parsed.messages) == [
        ("user", "first"),
        ("assistant", "another answer", ()),
        ("user", "go on"),
    ]
    assert parsed.sources == [[2], [4], [5]]
    assert parsed.meta["off_branch"] == 1


def test_a_call_left_unanswered_on_the_branch_gets_an_entry_linked_into_it() -> None:
    data = jsonl(
        HEADER,
        entry("u1", None, user("look")),
        entry("a1", "u1", calls("c1", "c2", text="Looking.")),
        entry("t1", "a1", result("c1")),
        entry("x1", "u1", said("an abandoned branch")),
        {"type": "label", "id": "l1", "parentId": "t1", "timestamp": "t", "targetId": "a1"},
        entry("u2", "l1", user("and now?")),
    )
    parsed = pi.parse(data)
    assert findings(parsed) == [("PAIR-1", [3], "c2")]
    out, again = repaired_round_trip(pi, parsed)
    records = lines_of(out)
    assert [r["id"] for r in records[1:]] == ["u1", "a1", "t1", records[4]["id"], "x1", "l1", "u2"]
    new = records[4]
    assert len(new["id"]) == 8 and int(new["id"], 16) >= 0
    assert new["parentId"] == "t1"
    assert records[6]["parentId"] == new["id"]  # the label now follows the new result
    assert new["message"]["toolCallId"] == "c2" and new["message"]["isError"] is True
    assert again.meta["off_branch"] == 1
    # Deterministic: the same repair writes the same file.
    assert pi.serialise(repair(parsed).messages, parsed) == out


def test_a_call_at_the_end_of_the_branch_gets_a_result_that_is_the_new_leaf() -> None:
    data = jsonl(HEADER, entry("u1", None, user("look")), entry("a1", "u1", calls("c1")))
    parsed = pi.parse(data)
    out, again = repaired_round_trip(pi, parsed)
    last = lines_of(out)[-1]
    assert last["parentId"] == "a1" and last["message"]["role"] == "toolResult"
    assert [m["role"] for m in again.messages] == ["user", "assistant", "tool"]


def test_a_result_that_answers_nothing_becomes_a_user_note_in_its_entry() -> None:
    data = jsonl(
        HEADER,
        entry("u1", None, user("look")),
        entry("t0", "u1", result("ghost", "late output")),
        entry("a1", "t0", said("done")),
    )
    parsed = pi.parse(data)
    assert [a[0] for a in findings(parsed)] == ["PAIR-3"]
    out, _ = repaired_round_trip(pi, parsed)
    note = lines_of(out)[2]
    assert note["id"] == "t0" and note["parentId"] == "u1"
    assert note["message"]["role"] == "user"
    assert "late output" in note["message"]["content"][-1]["text"]


def test_a_repeated_call_id_is_renamed_in_call_and_result() -> None:
    data = jsonl(
        HEADER,
        entry("u1", None, user("look")),
        entry("a1", "u1", calls("c1")),
        entry("t1", "a1", result("c1")),
        entry("a2", "t1", calls("c1")),
        entry("t2", "a2", result("c1", "second")),
    )
    parsed = pi.parse(data)
    assert {a[0] for a in findings(parsed)} == {"ID-1"}
    out, _ = repaired_round_trip(pi, parsed)
    records = lines_of(out)
    assert records[4]["message"]["content"][0]["id"] == "c1_1"
    assert records[5]["message"]["toolCallId"] == "c1_1"
    assert out.splitlines()[:4] == data.splitlines()[:4]


def test_length_stop_is_a_max_tokens_cause() -> None:
    data = jsonl(
        HEADER, entry("u1", None, user("write")), entry("a1", "u1", said("Once", "length"))
    )
    assert pi.parse(data).causes == {1: "max_tokens"}


def test_bash_excluded_from_context_and_unknown_roles() -> None:
    bash = {"role": "bashExecution", "command": "ls", "output": "", "exitCode": 0,
            "cancelled": False, "truncated": False, "excludeFromContext": True}  # fmt: skip
    data = jsonl(
        HEADER,
        entry("u1", None, user("hi")),
        entry("b1", "u1", bash),
        entry("w1", "b1", {"role": "wizard"}),
        entry("a1", "w1", said("hello")),
    )
    parsed = pi.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant"]
    assert [(p.line, p.kind) for p in parsed.problems] == [(4, "skipped")]


# --- not a pi session -------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"type": "message", "message": {"role": "user", "content": "hi"}}\n',
        b'{"type": "session"}\n',
        jsonl(HEADER, entry("a1", None, said("x", "aborted"))),
        b"not json\n",
    ],
    ids=["no-header", "header-without-id", "only-a-stopped-turn", "not-json"],
)
def test_other_files_are_refused_with_a_reason(data: bytes) -> None:
    with pytest.raises(FormatError) as caught:
        pi.parse(data)
    assert str(caught.value)


def test_sniff_knows_the_header_and_nothing_else() -> None:
    assert pi.sniff(read(AGENTICLAW)[:65536]) == 0.95
    assert (
        pi.sniff(read(CORPUS / "codex" / "kvsankar-agent-history__codex_with_escalation.jsonl"))
        == 0
    )
    assert pi.sniff(b'[{"role": "user", "content": "hi"}]') == 0


# --- damaged sessions -------------------------------------------------------------------

TREE = jsonl(
    HEADER,
    entry("u1", None, user("look")),
    entry("a1", "u1", calls("c1", "c2", text="Looking.")),
    entry("t1", "a1", result("c1")),
    entry("x1", "u1", said("an abandoned branch")),
    {"type": "label", "id": "l1", "parentId": "t1", "timestamp": "t", "targetId": "a1"},
    entry("u2", "l1", user("and now?")),
    entry("a2", "u2", calls("c1")),
    entry("t3", "a2", result("c1")),
    entry("t4", "t3", result("zz")),
    {
        "type": "compaction",
        "id": "k",
        "parentId": "t4",
        "timestamp": "t",
        "summary": "s",
        "firstKeptEntryId": "a1",
    },
    entry("u9", "k", user("x")),
    entry("a9", "u9", calls("q")),
)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([TREE, b"".join(read(LARGE).splitlines(keepends=True)[:80])]))
def test_damaged_sessions_are_repaired_into_sessions_that_need_no_more(data: bytes) -> None:
    check_written_back(data)
