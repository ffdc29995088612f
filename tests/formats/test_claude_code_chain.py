"""Claude Code records in ``parentUuid`` order, wherever the file wrote them.

Claude Code builds the conversation from the ``parentUuid`` chain when it
resumes (it keeps the records in a map by uuid and walks up from the leaf),
so the order of the lines does not matter to it. Claude Code 2.1.79 wrote a
``tool_result`` line just before the assistant line holding its
``tool_use``: read in file order, the result was an orphan and the finished
call dangling, and a repair turned the real result into a note. These tests
take a real session's lines, byte for byte, and move them about.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from inspector.diagnosis import diagnose
from inspector.engine import repair_history
from inspector.formats import claude_code as cc
from inspector.formats.base import Parsed
from inspector.local import fix
from tests import testdata
from tests.formats.test_claude_code import sessions

EXAMPLES = {"ci": 60, "dev": 15, "fuzz": 2000}[os.environ.get("HYPOTHESIS_PROFILE", "ci")]

# A real Claude Code 2.1.71 session (see the corpus README): its first turn, the
# prompt (line 3) to the reply that ends it (line 74), with a single call (line
# 5, its result line 7), a split reply with two calls in separate records
# (lines 25 to 27, results 35 and 36), replies of one record each (line 15, its
# result line 17) and bookkeeping records between them.
REAL = (
    testdata.CORPUS
    / "claude-code"
    / "sessions"
    / (
        "MoonshotAI-kimi-cli__entire-checkpoints__29-77bc73228c-0-full"
        "__session-116e5aa5-77ff-42f7-b1e4-067c43f61818.jsonl"
    )
)
TURN_END = 74


def real_turn() -> list[bytes]:
    """The first turn's lines, each with its newline."""
    return testdata.read(REAL).splitlines(keepends=True)[:TURN_END]


def uuid_of(line: bytes) -> str | None:
    value = orjson.loads(line)
    return value.get("uuid") if isinstance(value, dict) else None


def find(lines: list[bytes], prefix: str) -> int:
    (at,) = [n for n, line in enumerate(lines) if (uuid_of(line) or "").startswith(prefix)]
    return at


def move_before(lines: list[bytes], moved: str, before: str) -> list[bytes]:
    """The lines with the record ``moved`` written just before the record ``before``."""
    out = list(lines)
    line = out.pop(find(out, moved))
    out.insert(find(out, before), line)
    return out


def actions(parsed: Parsed) -> list[tuple[str, int | None, str | None]]:
    repair = repair_history(parsed.messages, causes=parsed.causes)
    return [(a.rule, a.input_index, a.call_id) for a in repair.actions]


def history(parsed: Parsed) -> list[dict[str, Any]]:
    """The messages without the reader's private plumbing."""
    out = []
    for message in parsed.messages:
        metadata = {k: v for k, v in message["metadata"].items() if not k.startswith("_")}
        out.append({**message, "metadata": metadata})
    return out


def file_line(data: bytes, line: int) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads(data.splitlines()[line - 1])
    return value


# --- the case -------------------------------------------------------------


def test_result_written_before_its_call_is_read_after_it() -> None:
    lines = real_turn()
    in_order = cc.parse(b"".join(lines))
    moved = move_before(lines, "d92678af", "6d38ea2e")  # a result, before its call
    data = b"".join(moved)
    parsed = cc.parse(data)
    assert history(parsed) == history(in_order)
    assert actions(parsed) == [] == actions(in_order)
    assert parsed.meta["branches"] == in_order.meta["branches"]
    # Each message still names the line it was read from in this file.
    for message, lines_read in zip(parsed.messages, parsed.sources, strict=True):
        record = file_line(data, lines_read[0])
        assert record["message"]["role"] == (
            "user" if message["role"] == "tool" else message["role"]
        )
    call = next(n for n, s in enumerate(parsed.sources) if s == [find(moved, "6d38ea2e") + 1])
    assert parsed.messages[call + 1]["role"] == "tool"
    assert parsed.sources[call + 1] == [find(moved, "d92678af") + 1]
    assert parsed.sources[call + 1][0] < parsed.sources[call][-1]


def test_result_written_before_its_call_needs_no_repair_and_is_written_back_as_it_was() -> None:
    data = b"".join(move_before(real_turn(), "d92678af", "6d38ea2e"))
    parsed = cc.parse(data)
    diagnosis = diagnose(parsed)
    assert not diagnosis.needs_repair
    assert diagnosis.counts == diagnose(cc.parse(b"".join(real_turn()))).counts
    repair = repair_history(parsed.messages, causes=parsed.causes)
    assert repair.actions == [] and repair.interrupted == []
    assert cc.serialise(repair.messages, parsed) == data


def test_fix_leaves_a_session_with_a_result_written_before_its_call_as_it_was(
    tmp_path: Path,
) -> None:
    data = b"".join(move_before(real_turn(), "d92678af", "6d38ea2e"))
    session = tmp_path / "116e5aa5-77ff-42f7-b1e4-067c43f61818.jsonl"
    session.write_bytes(data)
    outcome = fix.fix(session, clock=lambda: 4e9)
    assert (outcome.status, outcome.reason) == ("clean", "nothing to repair")
    assert session.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == [session.name]


def test_timeline_rows_follow_the_chain_and_name_their_own_lines() -> None:
    moved = move_before(real_turn(), "d92678af", "6d38ea2e")
    data = b"".join(moved)
    rows = diagnose(cc.parse(data)).rows
    by_line = {find(moved, uid) + 1: uid for uid in ("6d38ea2e", "d92678af")}
    shown = [row["lines"] for row in rows if set(row["lines"]) & set(by_line)]
    # The call's row (line 16 now) before its result's (line 15), as the chain has them.
    assert shown == [[16], [15]]
    assert [row["state"] for row in rows] == ["kept"] * len(rows)
    assert all(not row["findings"] for row in rows)


# --- other orders the chain allows ----------------------------------------------------


def test_every_result_written_before_its_call_reads_the_same() -> None:
    lines = real_turn()
    in_order = cc.parse(b"".join(lines))
    moved = list(lines)
    for line in lines:  # each result record just before the record it answers
        value = orjson.loads(line)
        content = value.get("message", {}).get("content") if value.get("type") == "user" else None
        if isinstance(content, list) and content and content[0].get("type") == "tool_result":
            moved = move_before(moved, value["uuid"], value["parentUuid"])
    assert moved != lines
    parsed = cc.parse(b"".join(moved))
    assert history(parsed) == history(in_order)
    assert actions(parsed) == []


def test_split_reply_written_out_of_order_is_one_reply() -> None:
    lines = real_turn()
    in_order = cc.parse(b"".join(lines))
    # The second tool_use record of a reply split over three, before its first
    # record, and its result before both.
    moved = move_before(lines, "9b54694f", "d3401448")
    moved = move_before(moved, "795bed25", "9b54694f")
    parsed = cc.parse(b"".join(moved))
    assert history(parsed) == history(in_order)
    assert actions(parsed) == []
    reply = next(
        n for n, m in enumerate(parsed.messages) if len(m["metadata"].get("tool_calls", [])) == 2
    )
    assert sorted(parsed.sources[reply]) == [
        find(moved, u) + 1 for u in ("9b54694f", "d3401448", "aaa17bba")
    ]


def test_a_parallel_result_written_long_after_its_call_still_answers_it() -> None:
    lines = real_turn()
    in_order = cc.parse(b"".join(lines))
    moved = list(lines)
    moved.append(moved.pop(find(moved, "ca7d075a")))  # the first parallel result, last
    parsed = cc.parse(b"".join(moved))
    assert [m["role"] for m in parsed.messages] == [m["role"] for m in in_order.messages]
    assert actions(parsed) == []


def test_parent_written_after_its_children_without_a_leaf_of_its_own_is_not_the_leaf() -> None:
    lines = real_turn()
    in_order = cc.parse(b"".join(lines))
    # The last line holds a record whose whole chain of children came before it.
    moved = list(lines)
    at = find(moved, "3d151aec")
    moved.append(moved.pop(at))
    parsed = cc.parse(b"".join(moved))
    assert history(parsed) == history(in_order)
    assert parsed.meta["branches"][0]["leaf"] == in_order.meta["branches"][0]["leaf"]


def small(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def rec(kind: str, uid: str, parent: str | None, content: Any, at: int, **extra: Any) -> dict:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = extra.pop("mid", f"msg_{uid}")
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "5e55101d-0000-4000-8000-000000000000",
        "type": kind,
        "message": message,
        "uuid": uid,
        "timestamp": f"2026-03-01T10:00:{at:02d}.000Z",
        **extra,
    }


def test_cycle_written_out_of_order_ends_the_walk_and_keeps_every_record() -> None:
    data = small(
        rec("assistant", "a1", "u1", [{"type": "text", "text": "hi"}], 2),
        rec("user", "u1", "a1", "hello", 1),
    )
    parsed = cc.parse(data)
    assert sorted(m["role"] for m in parsed.messages) == ["assistant", "user"]
    assert parsed.meta["cycles"]


def test_parent_that_never_appears_starts_the_chain_and_keeps_the_rest() -> None:
    data = small(
        rec("assistant", "a1", "u1", [{"type": "text", "text": "answer"}], 2),
        rec("user", "u1", "gone", "question", 1),
        rec("user", "u2", "a1", "thanks", 3),
    )
    parsed = cc.parse(data)
    assert [m["content"] for m in parsed.messages] == [
        "question",
        [{"type": "text", "text": "answer"}],
        "thanks",
    ]
    assert parsed.sources == [[2], [1], [3]]


def test_fork_written_out_of_order_is_resumed_at_the_last_leaf() -> None:
    records = [
        rec("user", "u1", None, "pick a language", 1),
        rec("assistant", "a1", "u1", [{"type": "text", "text": "For what?"}], 2),
        rec("user", "u2a", "a1", "a CLI", 3),
        rec("assistant", "a2a", "u2a", [{"type": "text", "text": "Go."}], 4),
        rec("user", "u2b", "a1", "a web app", 5),
        rec("assistant", "a2b", "u2b", [{"type": "text", "text": "TypeScript."}], 6),
    ]
    in_order = cc.parse(small(*records))
    # Every parent after its children; the last leaf is still the last leaf.
    shuffled = [records[3], records[2], records[5], records[1], records[4], records[0]]
    parsed = cc.parse(small(*shuffled))
    assert history(parsed) == history(in_order)
    assert [(b["leaf"], b["active"]) for b in parsed.meta["branches"]] == [
        ("a2b", True),
        ("a2a", False),
    ]
    assert [f["uuid"] for f in parsed.meta["forks"]] == ["a1"]


def test_compact_boundary_written_before_the_record_it_continues_from() -> None:
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": "a1",
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "cb",
        "sessionId": "5e55101d-0000-4000-8000-000000000000",
        "timestamp": "2026-03-01T10:00:03.000Z",
    }
    records = [
        rec("user", "u1", None, "before", 1),
        rec("assistant", "a1", "u1", [{"type": "text", "text": "ok"}], 2),
        boundary,
        rec("user", "u2", "cb", "after", 4),
        rec("assistant", "a2", "u2", [{"type": "text", "text": "fine"}], 5),
    ]
    in_order = cc.parse(small(*records))
    parsed = cc.parse(small(records[2], records[3], records[0], records[4], records[1]))
    assert history(parsed) == history(in_order)


def test_sidechain_records_stay_out_of_the_history_in_any_order() -> None:
    use = {"type": "tool_use", "id": "task", "name": "Task", "input": {"prompt": "x"}}
    result = {"type": "tool_result", "tool_use_id": "task", "content": "summary"}
    records = [
        rec("user", "u1", None, "delegate", 1),
        rec("assistant", "a1", "u1", [use], 2),
        rec("user", "s1", "a1", "subagent prompt", 3, isSidechain=True),
        rec("assistant", "s2", "s1", [{"type": "text", "text": "sub"}], 4, isSidechain=True),
        rec("user", "r1", "a1", [result], 5),
        rec("assistant", "a2", "r1", [{"type": "text", "text": "Done."}], 6),
    ]
    in_order = cc.parse(small(*records))
    parsed = cc.parse(small(*records[::-1]))
    assert history(parsed) == history(in_order)
    assert parsed.meta["sidechain_records"] == 2


# --- a repair written back into an out-of-order file ------------------------------------


def chain_of(data: bytes) -> list[str]:
    """The uuids from the newest leaf to the root, as Claude Code walks them."""
    records = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    by_uuid = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
    parents = {r.get("parentUuid") for r in records}
    leaves = [
        r for r in records if r.get("type") in ("user", "assistant") and r["uuid"] not in parents
    ]
    cur: dict[str, Any] | None = max(leaves, key=lambda r: r.get("timestamp", ""))
    out: list[str] = []
    while cur is not None and cur["uuid"] not in out:
        out.append(cur["uuid"])
        link = cur.get("parentUuid") or cur.get("logicalParentUuid")
        cur = by_uuid.get(link) if isinstance(link, str) else None
    return out[::-1]


def test_repair_of_an_out_of_order_file_keeps_untouched_lines_and_links_new_records() -> None:
    lines = real_turn()
    # One of two parallel calls unanswered (its result lost), the other's result
    # written before the reply, and another call's result before its call.
    cut = [line for line in lines if not (uuid_of(line) or "").startswith("ca7d075a")]
    moved = move_before(cut, "795bed25", "d3401448")
    moved = move_before(moved, "d92678af", "6d38ea2e")
    data = b"".join(moved)
    parsed = cc.parse(data)
    found = actions(parsed)
    assert [(rule, call) for rule, _, call in found] == [("PAIR-1", _call_of(parsed, "aaa17bba"))]
    repair = repair_history(parsed.messages, causes=parsed.causes)
    out = cc.serialise(repair.messages, parsed)
    again = cc.parse(out)
    straight = cc.parse(b"".join(cut))  # the same lines in the order they were written
    assert history(again) == history(cc.parse(cc.serialise(*_repaired(straight))))
    assert actions(again) == []
    written = out.splitlines(keepends=True)
    (new,) = assert_kept(moved, written)
    assert new["message"]["content"][0]["tool_use_id"] == _call_of(parsed, "aaa17bba")
    assert new["message"]["content"][0]["is_error"] is True
    # Claude Code's own walk from the newest leaf goes through the new result.
    assert new["uuid"] in chain_of(out)
    assert {uuid_of(line) for line in moved if uuid_of(line)} >= set(chain_of(out)) - {new["uuid"]}


def assert_kept(original: list[bytes], written: list[bytes]) -> list[dict[str, Any]]:
    """Every original line is written, in its order, byte for byte but for a
    ``parentUuid`` relinked to a record the repair put before it; the new records."""
    by_uuid = {uuid_of(line): line for line in original}
    kept, new = [], []
    for line in written:
        value = orjson.loads(line)
        first = by_uuid.get(value.get("uuid")) if isinstance(value, dict) else None
        if line in original:
            kept.append(line)
        elif first is not None:
            assert {**orjson.loads(first), "parentUuid": value["parentUuid"]} == value
            kept.append(first)
        else:
            new.append(value)
    assert kept == original
    return new


def uuids(data: bytes) -> set[str]:
    return {u for line in data.splitlines() if (u := uuid_of(line))}


def one_chain(data: bytes) -> bool:
    """Is every leaf but the last record a result beside its reply, and is
    there one result a call?"""
    records = [orjson.loads(line) for line in data.splitlines()]
    answers = [
        b["tool_use_id"]
        for r in records
        if isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b["type"] == "tool_result"
    ]
    if len(answers) != len(set(answers)):
        return False
    by_uuid = {r["uuid"]: r for r in records}
    parents = {r["parentUuid"] for r in records}
    ends = [
        r
        for r in records[:-1]  # the last record, written in order, ends the chain
        if r["uuid"] not in parents
        and not (
            r["type"] == "user"
            and isinstance(r["message"]["content"], list)
            and any(b["type"] == "tool_result" for b in r["message"]["content"])
            and by_uuid.get(r["parentUuid"], {}).get("type") == "assistant"
        )
    ]
    return not ends


def _call_of(parsed: Parsed, record: str) -> str:
    for message, pieces in zip(parsed.messages, parsed.state.pieces, strict=True):
        uids = [parsed.state.records[rec].value.get("uuid", "") for rec, _ in pieces]
        if any(u.startswith(record) for u in uids):
            return str(message["metadata"]["tool_calls"][0]["tool_call_id"])
    raise AssertionError(record)


# --- any file order of a valid chain --------------------------------------------------------


@pytest.fixture(scope="module")
def turn() -> list[bytes]:
    return real_turn()


@settings(max_examples=EXAMPLES, deadline=None)
@given(seed=st.randoms(use_true_random=False), drop=st.booleans())
def test_any_file_order_of_a_chain_reads_and_repairs_the_same(
    seed: random.Random, drop: bool
) -> None:
    lines = real_turn()
    if drop:  # a parallel call left unanswered, so there is a repair to write back
        lines = [line for line in lines if not (uuid_of(line) or "").startswith("ca7d075a")]
    in_order = cc.parse(b"".join(lines))
    shuffled = list(lines)
    seed.shuffle(shuffled)
    data = b"".join(shuffled)
    parsed = cc.parse(data)
    assert history(parsed) == history(in_order)
    assert parsed.causes == in_order.causes
    assert actions(parsed) == actions(in_order)
    expected = diagnose(in_order)
    got = diagnose(parsed)
    assert (got.counts, got.needs_repair) == (expected.counts, expected.needs_repair)
    assert [r["state"] for r in got.rows] == [r["state"] for r in expected.rows]
    assert got.providers == expected.providers
    repair = repair_history(parsed.messages, causes=parsed.causes)
    out = cc.serialise(repair.messages, parsed)
    if not drop:
        assert out == data
        return
    again = cc.parse(out)
    assert actions(again) == []
    assert history(again) == history(cc.parse(cc.serialise(*_repaired(in_order))))
    assert_kept(shuffled, out.splitlines(keepends=True))


def _repaired(parsed: Parsed) -> tuple[list[dict[str, Any]], Parsed]:
    return repair_history(parsed.messages, causes=parsed.causes).messages, parsed


def test_records_in_a_cycle_off_the_branch_are_reported_by_line_not_lost() -> None:
    data = small(
        rec("user", "u1", None, "hello", 1),
        rec("user", "c1", "c2", "in a loop", 2),
        rec("assistant", "a1", "u1", [{"type": "text", "text": "hi"}], 3),
        rec("assistant", "c2", "c1", [{"type": "text", "text": "round"}], 4),
    )
    parsed = cc.parse(data)
    assert [m["content"] for m in parsed.messages] == ["hello", [{"type": "text", "text": "hi"}]]
    assert [(p.line, p.kind) for p in parsed.problems] == [(2, "skipped"), (4, "skipped")]
    assert all("cycle" in p.reason for p in parsed.problems)
    # Written back untouched, whatever the repair does to the branch.
    assert cc.serialise(parsed.messages, parsed) == data


def test_session_that_forked_and_ended_on_parallel_results_ends_on_them() -> None:
    call = [
        {"type": "tool_use", "id": "c1", "name": "Read", "input": {"p": "1"}},
        {"type": "tool_use", "id": "c2", "name": "Read", "input": {"p": "2"}},
    ]
    data = small(
        rec("user", "u1", None, "pick", 1),
        rec("assistant", "a1", "u1", [{"type": "text", "text": "which?"}], 2),
        rec("user", "u2a", "a1", "the old one", 3),
        rec("assistant", "a2a", "u2a", [{"type": "text", "text": "done"}], 4),
        rec("user", "u2b", "a1", "read both", 5),
        rec("assistant", "a2b", "u2b", call, 6),
        rec("user", "r1", "a2b", [{"type": "tool_result", "tool_use_id": "c1", "content": "1"}], 7),
        rec("user", "r2", "a2b", [{"type": "tool_result", "tool_use_id": "c2", "content": "2"}], 8),
    )
    parsed = cc.parse(data)
    roles = [m["role"] for m in parsed.messages]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "tool"]
    assert parsed.messages[2]["content"] == "read both"
    assert actions(parsed) == []


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(data=sessions(), seed=st.randoms(use_true_random=False))
def test_any_file_order_of_a_made_session_reads_and_repairs_the_same(
    data: bytes, seed: random.Random
) -> None:
    # Two leaves that are no results (a fork: a message typed while the tools
    # ran, left hanging) are told apart by where they stand (see the fork
    # test), and so are two results for one call (the first written counts).
    assume(one_chain(data))
    in_order = cc.parse(data)
    shuffled = data.splitlines(keepends=True)
    seed.shuffle(shuffled)
    moved = b"".join(shuffled)
    parsed = cc.parse(moved)
    assert history(parsed) == history(in_order)
    assert parsed.causes == in_order.causes
    assert actions(parsed) == actions(in_order)
    out = cc.serialise(*_repaired(parsed))
    again = cc.parse(out)
    assert actions(again) == []
    straight = cc.serialise(*_repaired(in_order))
    assert history(again) == history(cc.parse(straight))
    # The same records kept (changed, moved or not) and dropped as in order.
    assert uuids(moved) - uuids(out) == uuids(data) - uuids(straight)


def test_reply_that_went_on_after_a_steer_keeps_every_record_when_written_back() -> None:
    """A reply split over records with a result and a typed message between its
    parts: its results may not be put after its last part (the part comes
    after them), or the repaired file reads back as three messages."""

    def use_(call: str) -> list[dict[str, Any]]:
        return [{"type": "tool_use", "id": call, "name": "Read", "input": {"p": call}}]

    def result_(call: str, *more: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"type": "tool_result", "tool_use_id": call, "content": "ok"}, *more]

    steer = {"type": "text", "text": "and test it"}
    data = small(
        rec("user", "r1", None, "go", 1),
        rec("assistant", "r2", "r1", use_("t0c0"), 2, mid="m0"),
        rec("assistant", "r3", "r2", use_("t0c1"), 3, mid="m0"),
        rec("user", "r4", "r3", result_("t0c1", steer), 4),
        rec("assistant", "r5", "r4", use_("t0c2"), 5, mid="m0"),
        rec("user", "r6", "r5", result_("t0c1"), 6),
        rec("user", "r7", "r6", "go", 7),
        rec("assistant", "r8", "r7", [{"type": "text", "text": "Ok."}], 8),
        rec("user", "r9", "r8", "go", 9),
        rec("assistant", "r10", "r9", use_("t3c0"), 10, mid="m3"),
        rec("assistant", "r11", "r10", use_("t3c1"), 11, mid="m3"),
        rec("user", "r12", "r10", result_("t3c0"), 12),
    )
    parsed = cc.parse(data)
    out = cc.serialise(*_repaired(parsed))
    again = cc.parse(out)
    assert actions(again) == []
    assert len(again.state.branch) == len(out.splitlines())
    assert [m["role"] for m in again.messages][-4:] == ["user", "assistant", "tool", "tool"]
