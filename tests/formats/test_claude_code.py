"""Claude Code session files: reading the tree, writing repairs back.

The corpus tests run over every real file in ``corpus/claude-code``; the
small sessions built here pin down one behaviour each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.engine import repair_history
from inspector.formats import claude_code as cc
from inspector.formats.base import FormatError, Parsed
from tests import testdata
from tests.testdata import read

CORPUS = testdata.CORPUS / "claude-code"
SESSION = "5e55101d-0000-4000-8000-000000000000"

ALL_FILES = testdata.files(CORPUS)
REAL = [p for p in ALL_FILES if p.parent.name != "broken" and "files" not in p.parts]
FIXTURES = testdata.files(CORPUS / "files")
BROKEN = testdata.files(CORPUS / "broken")


def _id(path: Path) -> str:
    return str(path.relative_to(CORPUS))


def findings(parsed: Parsed) -> list[tuple[str, list[int] | None, str | None]]:
    """(rule, source lines of the message concerned, call id) for each repair action."""
    repair = repair_history(parsed.messages, causes=parsed.causes)
    out = []
    for action in repair.actions:
        lines = parsed.sources[action.input_index] if action.input_index is not None else None
        if lines is None and action.turn_index is not None:
            lines = parsed.sources[action.turn_index]
        out.append((action.rule, lines, action.call_id))
    return out


def repaired_file(parsed: Parsed) -> bytes:
    repair = repair_history(parsed.messages, causes=parsed.causes)
    return cc.serialise(repair.messages, parsed)


# --- building small sessions -------------------------------------------------------


def rec(kind: str, uid: str | None, parent: str | None, content: Any, **extra: Any) -> dict:
    """One record the way Claude Code writes it."""
    record: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "sessionId": SESSION}
    record["type"] = kind
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"id": extra.pop("mid", f"msg_{uid}"), "role": "assistant", "content": content}
        if "stop_reason" in extra:
            message["stop_reason"] = extra.pop("stop_reason")
    record["message"] = message
    if uid is not None:
        record["uuid"] = uid
    record["timestamp"] = f"2026-01-01T00:00:{len(uid or ''):02d}Z"
    record.update(extra)
    return record


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def use(call_id: str, name: str = "Read", **arguments: Any) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments or {"p": call_id}}


def result(call_id: str, content: Any = "ok", **extra: Any) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


def jsonl(*records: dict) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def roles(parsed: Parsed) -> list[str]:
    return [m["role"] for m in parsed.messages]


def lines_of(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def chain_from_last(records: list[dict]) -> list[str]:
    """uuids from the last message record up by parentUuid, as Claude Code walks it."""
    by_uuid = {r["uuid"]: r for r in records if "uuid" in r}
    last = [r for r in records if r.get("type") in ("user", "assistant")][-1]
    out, cur = [], last
    while cur is not None and cur["uuid"] not in out:
        out.append(cur["uuid"])
        cur = by_uuid.get(cur.get("parentUuid"))
    return out[::-1]


# --- the corpus --------------------------------------------------------------------


def unglued(data: bytes) -> bytes:
    """The file with the newlines a glued line lost put back, found independently."""
    out = []
    for line in data.split(b"\n"):
        try:
            orjson.loads(line or b"null")
        except orjson.JSONDecodeError as exc:
            if exc.msg == "unexpected content after document":
                cut = len(line.decode()[: exc.pos].encode())
                out.extend([line[:cut], line[cut:]])
                continue
        out.append(line)
    return b"\n".join(out)


@pytest.mark.parametrize("path", ALL_FILES, ids=_id)
def test_corpus_file_round_trips_byte_for_byte(path: Path) -> None:
    # Byte for byte, but for a line that held two records: a lost newline is
    # LINE-1, and the file comes back with the newline put back.
    data = read(path)
    parsed = cc.parse(data)
    expected = unglued(data) if any(p.kind == "glued" for p in parsed.problems) else data
    assert cc.serialise(parsed.messages, parsed) == expected
    assert len(parsed.sources) == len(parsed.messages)


@pytest.mark.parametrize("path", REAL, ids=_id)
def test_real_session_has_no_pairing_findings(path: Path) -> None:
    parsed = cc.parse(read(path))
    assert findings(parsed) == []
    assert parsed.problems == []


# What the fixtures from viewer projects really hold: excerpts and hand-made
# files whose calls were cut out of them. Any other finding is a parser bug.
FIXTURE_FINDINGS = {
    "arcreflex-agent-transcripts__multiple-tools.input.jsonl": [
        ("PAIR-1", [2], "tool-1"),
        ("PAIR-1", [2], "tool-2"),
        ("PAIR-1", [2], "tool-3"),
    ],
    "daaain-claude-code-log__edge_cases.jsonl": [
        ("PAIR-1", [9], "tool_edge_002"),  # its result's record spells "contenst"
        ("PAIR-1", [17], "toolu_todowrite_002"),
    ],
    "daaain-claude-code-log__memory_sidechain.jsonl": [("PAIR-1", [2], "toolu_task")],
    "daaain-claude-code-log__sidechain.jsonl": [("PAIR-1", [1], "toolu_01VJzVGXqdaUe6AYX6CAJUHz")],
    "daaain-claude-code-log__sidechain_agent.jsonl": [
        ("PAIR-1", [1, 2], "toolu_01BWgwmyj8gGuqFNHMPqqtN2"),
        ("PAIR-3", [3], "toolu_011V1hetiJ3pC79EoLTY53Ni"),
    ],
    "daaain-claude-code-log__workflow_basic__11110000-0000-4000-8000-000000000001"
    "__subagents__workflows__wf_demo01__agent-ag000001.jsonl": [
        ("PAIR-1", [2], "toolu_ag000001_so")
    ],
    "daaain-claude-code-log__workflow_basic__11110000-0000-4000-8000-000000000001"
    "__subagents__workflows__wf_demo01__agent-ag000002.jsonl": [
        ("PAIR-1", [2], "toolu_ag000002_so")
    ],
}


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_fixture_file_has_only_the_findings_it_really_has(path: Path) -> None:
    parsed = cc.parse(read(path))
    assert findings(parsed) == FIXTURE_FINDINGS.get(path.name, [])


BROKEN_DEFECTS = {
    "17-55e38d324c": ([("PAIR-3", [1], "toolu_015kN44icPLY5CNBrzNHnt4a")], []),
    "37-995ebed6e4": ([], [(128, "glued")]),
    "4c-02af2759b6": ([("PAIR-1", [4, 5, 6], "toolu_01Y2W8G7AnRZx2Q7vWrRL9vA")], []),
}


@pytest.mark.parametrize("path", BROKEN, ids=_id)
def test_broken_session_shows_exactly_its_real_defects(path: Path) -> None:
    key = next(k for k in BROKEN_DEFECTS if k in path.name)
    expected_findings, expected_problems = BROKEN_DEFECTS[key]
    parsed = cc.parse(read(path))
    assert findings(parsed) == expected_findings
    assert [(p.line, p.kind) for p in parsed.problems] == expected_problems


@pytest.mark.parametrize("path", BROKEN + FIXTURES, ids=_id)
def test_repaired_export_reloads_with_nothing_left_to_repair(path: Path) -> None:
    parsed = cc.parse(read(path))
    again = cc.parse(repaired_file(parsed))
    assert repair_history(again.messages, causes=again.causes).actions == []
    assert [p.kind for p in again.problems if p.kind != "glued"] == [
        p.kind for p in parsed.problems if p.kind != "glued"
    ]


def test_glued_line_alone_is_written_back_as_two_lines_each_record_as_it_was() -> None:
    path = next(p for p in BROKEN if "37-995ebed6e4" in p.name)
    data = read(path)
    parsed = cc.parse(data)
    out = repaired_file(parsed)
    lines, original = out.split(b"\n"), data.split(b"\n")
    assert len(lines) == len(original) + 1
    assert lines[:127] == original[:127] and lines[129:] == original[128:]
    assert lines[127] + lines[128] == original[127]  # line 128, both records byte for byte
    again = cc.parse(out)
    assert again.problems == []
    assert again.messages == parsed.messages


def test_glued_line_in_a_crlf_session_is_split_with_its_line_endings() -> None:
    one = orjson.dumps(rec("user", "u1", None, "hi"))
    two = orjson.dumps(rec("assistant", "a1", "u1", [use("c1")]))
    data = one + two + b"\r\n"
    parsed = cc.parse(data)
    assert cc.serialise(parsed.messages, parsed) == one + b"\r\n" + two + b"\r\n"
    out = repaired_file(parsed)  # a synthetic result after a1 too
    assert out.startswith(one + b"\r\n" + two + b"\r\n")
    assert all(line.endswith(b"\r") for line in out.split(b"\n")[:-1])


def test_repaired_glued_line_is_written_as_two_lines() -> None:
    path = next(p for p in BROKEN if "37-995ebed6e4" in p.name)
    parsed = cc.parse(read(path))
    messages = [*parsed.messages, {"role": "user", "content": "next", "metadata": {}}]
    again = cc.parse(cc.serialise(messages, parsed))
    assert again.problems == []
    assert len(again.messages) == len(parsed.messages) + 1


def test_orphan_at_the_start_becomes_a_note_record_before_the_rest() -> None:
    path = next(p for p in BROKEN if "17-55e38d324c" in p.name)
    parsed = cc.parse(read(path))
    records = lines_of(repaired_file(parsed))
    note = records[0]
    assert note["type"] == "user"
    assert note["message"]["content"].startswith(
        "[note: a tool result for call toolu_015kN44icPLY5CNBrzNHnt4a arrived"
    )
    assert records[1]["parentUuid"] == note["uuid"]
    assert not any(
        b.get("tool_use_id") == "toolu_015kN44icPLY5CNBrzNHnt4a"
        for r in records
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
    )


def test_unanswered_call_at_the_end_gets_a_result_record_in_the_chain() -> None:
    path = next(p for p in BROKEN if "4c-02af2759b6" in p.name)
    parsed = cc.parse(read(path))
    records = lines_of(repaired_file(parsed))
    healed = records[-1]
    block = healed["message"]["content"][0]
    assert block["type"] == "tool_result"
    assert block["tool_use_id"] == "toolu_01Y2W8G7AnRZx2Q7vWrRL9vA"
    assert block["is_error"] is True
    assert block["content"].startswith("Tool call was interrupted; no result.")
    assert healed["parentUuid"] == records[-2]["uuid"]
    assert healed["sessionId"] == records[-2]["sessionId"]
    assert healed["timestamp"] == records[-2]["timestamp"]


def test_repair_writes_the_same_bytes_every_time() -> None:
    path = next(p for p in BROKEN if "4c-02af2759b6" in p.name)
    first = repaired_file(cc.parse(read(path)))
    assert repaired_file(cc.parse(read(path))) == first


# --- reading the tree --------------------------------------------------------------


SUBAGENT_FILES = [
    p
    for p in testdata.files(CORPUS / "projects", "*.jsonl")
    if p.name.startswith("agent-") or p.parent.name == "subagents"
]


@pytest.mark.parametrize("path", SUBAGENT_FILES, ids=_id)
def test_subagent_file_in_a_project_is_its_own_conversation(path: Path) -> None:
    parsed = cc.parse(read(path))
    assert parsed.meta["sidechain"] is True
    assert parsed.meta["parent_session"] == parsed.meta["session_id"]
    assert parsed.messages


def test_real_fork_fixture_follows_the_branch_that_ends_last() -> None:
    parsed = cc.parse(read(CORPUS / "files" / "daaain-claude-code-log__dag_fork.jsonl"))
    texts = [m["content"][0]["text"] for m in parsed.messages]
    assert texts == ["Start", "Reply 1", "Middle", "Fork from c", "Forked reply", "End of s3"]
    assert parsed.meta["forks"] == [{"uuid": "c", "line": 3, "leaves": ["h"]}]


def test_split_reply_becomes_one_message_with_its_parallel_results_after_it() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [text("Looking.")], mid="m1"),
        rec("assistant", "a2", "a1", [use("c1")], mid="m1"),
        rec("user", "r1", "a2", [result("c1")]),
        rec("assistant", "a3", "r1", [use("c2")], mid="m1"),
        rec("user", "r2", "a3", [result("c2", is_error=True)]),
        rec("assistant", "a4", "r2", [text("Done.")], mid="m2"),
    )
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    reply = parsed.messages[1]
    assert reply["content"] == [text("Looking.")]
    assert reply["metadata"]["tool_calls"] == [
        {"tool_call_id": "c1", "name": "Read", "arguments": {"p": "c1"}},
        {"tool_call_id": "c2", "name": "Read", "arguments": {"p": "c2"}},
    ]
    assert parsed.messages[3]["metadata"]["is_error"] is True
    assert parsed.sources == [[1], [2, 3, 5], [4], [6], [7]]
    assert findings(parsed) == []


def test_parallel_results_hanging_off_their_calls_belong_to_the_branch() -> None:
    # Claude Code links each result to its own tool_use record and the next
    # reply to whichever result came last, so the chain skips the others.
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1")], mid="m1"),
        rec("assistant", "a2", "a1", [use("c2")], mid="m1"),
        rec("assistant", "a3", "a2", [use("c3")], mid="m1"),
        rec("user", "r2", "a2", [result("c2")]),
        rec("user", "r3", "a3", [result("c3")]),
        rec("user", "r1", "a1", [result("c1")]),
        rec("assistant", "a4", "r1", [text("All read.")], mid="m2"),
    )
    parsed = cc.parse(data)
    assert [m["metadata"].get("tool_call_id") for m in parsed.messages[2:5]] == ["c1", "c2", "c3"]
    assert findings(parsed) == []
    assert [b["active"] for b in parsed.meta["branches"]] == [True]


def test_steer_in_a_parallel_result_record_answers_its_call_and_follows_the_results() -> None:
    # Newer Claude Code writes what the user typed while the tools ran into
    # the record of the next result to arrive, which hangs off its own
    # tool_use record beside the chain (real: entireio-cli 82-060566ec4b, line 117).
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1")], mid="m1"),
        rec("assistant", "a2", "a1", [use("c2")], mid="m1"),
        rec("assistant", "a3", "a2", [use("c3")], mid="m1"),
        rec("user", "r1", "a1", [result("c1")]),
        rec("user", "r2", "a2", [result("c2"), text("and make sure this is tested")]),
        rec("user", "r3", "a3", [result("c3")]),
        rec("assistant", "a4", "r3", [text("Tested too.")], mid="m2"),
    )
    parsed = cc.parse(data)
    assert roles(parsed) == ["user", "assistant", "tool", "tool", "tool", "user", "assistant"]
    assert [m["metadata"].get("tool_call_id") for m in parsed.messages[2:5]] == ["c1", "c2", "c3"]
    assert parsed.messages[5]["content"] == [text("and make sure this is tested")]
    assert parsed.sources == [[1], [2, 3, 4], [5], [6], [7], [6], [8]]
    assert findings(parsed) == []  # no PAIR-1 for c2, no PAIR-2 for c3
    assert [b["active"] for b in parsed.meta["branches"]] == [True]
    assert cc.serialise(parsed.messages, parsed) == data


def test_steer_waits_for_the_whole_run_of_results_across_records() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1"), use("c2")]),
        rec("user", "r1", "a1", [result("c1"), text("first")]),
        rec("user", "r2", "r1", [result("c2"), text("second")]),
        rec("user", "u2", "r2", "and then this"),
    )
    parsed = cc.parse(data)
    assert roles(parsed) == ["user", "assistant", "tool", "tool", "user", "user", "user"]
    assert [m["content"] for m in parsed.messages[4:]] == [
        [text("first")],
        [text("second")],
        "and then this",
    ]
    assert findings(parsed) == []


def test_steer_beside_the_chain_is_kept_when_a_parallel_result_is_missing() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1")], mid="m1"),
        rec("assistant", "a2", "a1", [use("c2")], mid="m1"),
        rec("assistant", "a3", "a2", [use("c3")], mid="m1"),
        rec("user", "r1", "a1", [result("c1"), text("also check the docs")]),
        rec("user", "r3", "a3", [result("c3")]),
        rec("assistant", "a4", "r3", [text("Two of three.")], mid="m2"),
    )
    parsed, out, again = repair_and_write(data)
    assert [(rule, call) for rule, _, call in findings(parsed)] == [("PAIR-1", "c2")]
    assert roles(again) == ["user", "assistant", "tool", "tool", "tool", "user", "assistant"]
    assert [m["metadata"].get("tool_call_id") for m in again.messages[2:5]] == ["c1", "c2", "c3"]
    assert again.messages[5]["content"] == [text("also check the docs")]
    records = lines_of(out)
    assert {"a1", "a2", "a3", "a4"} <= set(chain_from_last(records))


def test_results_are_put_in_call_order() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1"), use("c2")]),
        rec("user", "r1", "a1", [result("c2"), result("c1")]),
    )
    parsed = cc.parse(data)
    assert [m["metadata"]["tool_call_id"] for m in parsed.messages[2:]] == ["c1", "c2"]
    assert cc.serialise(parsed.messages, parsed) == data


def test_active_branch_ends_at_the_last_leaf_and_forks_are_reported() -> None:
    data = jsonl(
        rec("user", "u1", None, "pick a language"),
        rec("assistant", "a1", "u1", [text("For what?")]),
        rec("user", "u2a", "a1", "a CLI"),
        rec("assistant", "a2a", "u2a", [text("Go.")]),
        rec("user", "u2b", "a1", "a web app"),
        rec("assistant", "a2b", "u2b", [text("TypeScript.")]),
    )
    parsed = cc.parse(data)
    assert [m["content"] for m in parsed.messages] == [
        "pick a language",
        [text("For what?")],
        "a web app",
        [text("TypeScript.")],
    ]
    branches = parsed.meta["branches"]
    assert [(b["leaf"], b["active"], b["length"]) for b in branches] == [
        ("a2b", True, 4),
        ("a2a", False, 4),
    ]
    assert parsed.meta["forks"] == [{"uuid": "a1", "line": 2, "leaves": ["a2a"]}]


def test_record_repeated_on_resume_is_read_once() -> None:
    first = rec("assistant", "a1", "u1", [text("Hi.")])
    data = jsonl(rec("user", "u1", None, "hi"), first, first, rec("user", "u2", "a1", "bye"))
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "user"]
    assert parsed.meta["duplicates"] == [{"uuid": "a1", "line": 3, "first_line": 2}]
    assert parsed.problems == []


def test_compact_boundary_continues_the_chain_by_logical_parent() -> None:
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": "a1",
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "cb",
        "sessionId": SESSION,
    }
    data = jsonl(
        rec("user", "u1", None, "before"),
        rec("assistant", "a1", "u1", [text("ok")]),
        boundary,
        rec("user", "u2", "cb", "after"),
        rec("assistant", "a2", "u2", [text("fine")]),
    )
    parsed = cc.parse(data)
    assert [m["content"] for m in parsed.messages][::2] == ["before", "after"]
    assert parsed.sources == [[1], [2], [4], [5]]


def test_records_without_links_are_read_in_file_order() -> None:
    records = [
        {"type": "user", "message": {"role": "user", "content": "a"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [use("c1")]}},
        {"type": "user", "message": {"role": "user", "content": [result("c1")]}},
    ]
    parsed = cc.parse(jsonl(*records))
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "tool"]
    assert findings(parsed) == []


def test_parent_cycle_ends_the_walk_instead_of_hanging() -> None:
    data = jsonl(
        rec("user", "u1", "a1", "hello"),
        rec("assistant", "a1", "u1", [text("hi")]),
    )
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant"]
    assert parsed.meta["cycles"] == ["u1"]


def test_sidechain_records_in_a_main_file_are_not_history() -> None:
    data = jsonl(
        rec("user", "u1", None, "delegate"),
        rec("assistant", "a1", "u1", [use("task", "Task")]),
        rec("user", "s1", "a1", "subagent prompt", isSidechain=True),
        rec("assistant", "s2", "s1", [text("subagent answer")], isSidechain=True),
        rec(
            "user",
            "r1",
            "a1",
            [result("task", [text("summary")])],
            toolUseResult={"agentId": "agent-7", "status": "completed"},
        ),
        rec("assistant", "a2", "r1", [text("Done.")]),
    )
    parsed = cc.parse(data)
    assert len(parsed.messages) == 4
    assert not any("subagent" in str(m["content"]) for m in parsed.messages)
    assert parsed.meta["sidechain"] is False
    assert parsed.meta["sidechain_records"] == 2
    assert parsed.meta["subagents"] == {"task": "agent-7"}


def test_subagent_file_is_read_as_the_subagents_conversation() -> None:
    data = jsonl(
        rec("user", "s1", None, "find it", isSidechain=True, agentId="ab12"),
        rec("assistant", "s2", "s1", [text("found")], isSidechain=True, agentId="ab12"),
    )
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant"]
    assert parsed.meta["sidechain"] is True
    assert parsed.meta["parent_session"] == SESSION
    assert parsed.meta["agent_id"] == "ab12"


def test_bookkeeping_records_make_no_messages_but_are_kept() -> None:
    data = jsonl(
        {"type": "summary", "summary": "a chat", "leafUuid": "a1"},
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        rec("user", "u1", None, "hi"),
        {"type": "progress", "uuid": "p1", "parentUuid": "u1", "data": {}},
        rec("assistant", "a1", "p1", [text("hello")]),
    )
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant"]
    assert parsed.sources == [[3], [5]]
    assert cc.serialise(parsed.messages, parsed) == data


def test_tool_result_images_and_text_become_parts() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AA=="},
    }
    data = jsonl(
        rec("user", "u1", None, "shot"),
        rec("assistant", "a1", "u1", [use("c1", "Screenshot")]),
        rec("user", "r1", "a1", [result("c1", [text("here"), image])]),
    )
    parsed = cc.parse(data)
    assert parsed.messages[2]["content"] == [
        text("here"),
        {"type": "image", "media_type": "image/png", "data": "AA=="},
    ]


def test_text_after_results_in_one_record_becomes_a_user_message_after_them() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1")]),
        rec("user", "r1", "a1", [result("c1"), text("and also this")]),
    )
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "tool", "user"]
    assert parsed.messages[3]["content"] == [text("and also this")]
    assert parsed.sources[2:] == [[3], [3]]


# --- causes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "marker",
    [
        "[Request interrupted by user]",
        [text("[Request interrupted by user for tool use]")],
    ],
    ids=["string", "text-block"],
)
def test_user_stop_marker_marks_the_assistant_message_before_it(marker: Any) -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [text("Starting")]),
        rec("user", "u2", "a1", marker),
    )
    assert cc.parse(data).causes == {1: "user_stop"}


def test_max_tokens_and_api_error_are_causes() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [text("long...")], stop_reason="max_tokens"),
        rec("user", "u2", "a1", "again"),
        rec("assistant", "a2", "u2", [text("API Error: 500")], isApiErrorMessage=True),
    )
    parsed = cc.parse(data)
    assert parsed.causes == {1: "max_tokens", 3: "api_error"}
    assert parsed.messages[3]["content"] == [text("API Error: 500")]


# --- bad lines ----------------------------------------------------------------------


def test_glued_records_are_both_read_and_reported() -> None:
    one = orjson.dumps(rec("user", "u1", None, "hi"))
    two = orjson.dumps(rec("assistant", "a1", "u1", [text("hello")]))
    data = one + two + b"\n"
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant"]
    assert [(p.line, p.kind) for p in parsed.problems] == [(1, "glued")]
    assert parsed.sources == [[1], [1]]
    # Nothing else to repair: the file comes back with the lost newline put back.
    assert cc.serialise(parsed.messages, parsed) == one + b"\n" + two + b"\n"


def test_truncated_last_line_is_reported_and_the_rest_read() -> None:
    data = jsonl(rec("user", "u1", None, "hi"), rec("assistant", "a1", "u1", [text("ok")]))
    data += orjson.dumps(rec("user", "u2", "a1", "more"))[:30]
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant"]
    assert [(p.line, p.kind) for p in parsed.problems] == [(3, "truncated")]
    assert cc.serialise(parsed.messages, parsed) == data


def test_bad_line_in_the_middle_is_reported_and_skipped_over() -> None:
    data = (
        orjson.dumps(rec("user", "u1", None, "hi"))
        + b"\n{not json\n"
        + orjson.dumps(rec("assistant", "a1", "u1", [text("ok")]))
        + b"\n42\n"
    )
    parsed = cc.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant"]
    assert [(p.line, p.kind) for p in parsed.problems] == [(2, "unreadable"), (4, "unreadable")]
    assert parsed.sources == [[1], [3]]


def test_not_a_session_at_all_is_a_format_error() -> None:
    with pytest.raises(FormatError):
        cc.parse(b'{"role": "user", "content": "hi"}\n')


def test_sniff_knows_a_session_from_other_jsonl() -> None:
    session = jsonl(rec("user", "u1", None, "hi"))
    assert cc.sniff(session) >= 0.9
    assert cc.sniff(b'{"role": "user", "content": "hi"}\n') == 0
    codex = b'{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}\n'
    assert cc.sniff(codex) < 0.5


# --- writing repairs back -------------------------------------------------------------


def repair_and_write(data: bytes) -> tuple[Parsed, bytes, Parsed]:
    parsed = cc.parse(data)
    out = repaired_file(parsed)
    again = cc.parse(out)
    assert repair_history(again.messages, causes=again.causes).actions == []
    return parsed, out, again


def test_missing_parallel_result_is_inserted_and_the_chain_relinked() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1")], mid="m1"),
        rec("assistant", "a2", "a1", [use("c2")], mid="m1"),
        rec("assistant", "a3", "a2", [use("c3")], mid="m1"),
        rec("user", "r1", "a1", [result("c1")]),
        rec("user", "r3", "a3", [result("c3")]),
        rec("assistant", "a4", "r3", [text("Two of three.")], mid="m2"),
        rec("user", "u2", "a4", "thanks"),
    )
    _parsed, out, again = repair_and_write(data)
    records = lines_of(out)
    healed = [r for r in records if r["uuid"] not in {x["uuid"] for x in lines_of(data)}]
    assert len(healed) == 1
    assert healed[0]["message"]["content"][0]["tool_use_id"] == "c2"
    # The next reply now follows the inserted record, and walking up from the
    # last record passes every tool_use record: one unbroken chain.
    a4 = next(r for r in records if r["uuid"] == "a4")
    assert a4["parentUuid"] == healed[0]["uuid"]
    assert {"a1", "a2", "a3", healed[0]["uuid"], "a4", "u2"} <= set(chain_from_last(records))
    assert [m["metadata"].get("tool_call_id") for m in again.messages[2:5]] == ["c1", "c2", "c3"]
    # Records the repair did not touch keep their bytes.
    original_lines = set(data.splitlines())
    kept = [line for line in out.splitlines() if line in original_lines]
    assert len(kept) == len(lines_of(data)) - 1  # all but a4, which was relinked


def test_synthetic_result_uuid_is_uuid5_of_session_and_call() -> None:
    import uuid

    data = jsonl(rec("user", "u1", None, "go"), rec("assistant", "a1", "u1", [use("c1")]))
    _, out, _ = repair_and_write(data)
    healed = lines_of(out)[-1]
    name = f"{SESSION}:c1"
    assert healed["uuid"] == str(uuid.uuid5(cc._NAMESPACE, name))
    assert healed["parentUuid"] == "a1"


def test_result_missing_between_results_of_a_streamed_reply() -> None:
    # Claude Code ran c1 while the model was still writing c2 and c3, so the
    # result of c1 sits between the records of one reply.
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1")], mid="m1"),
        rec("user", "r1", "a1", [result("c1")]),
        rec("assistant", "a2", "r1", [use("c2")], mid="m1"),
        rec("assistant", "a3", "a2", [use("c3")], mid="m1"),
        rec("user", "r3", "a3", [result("c3")]),
        rec("assistant", "a4", "r3", [text("done")], mid="m2"),
    )
    _, out, again = repair_and_write(data)
    records = lines_of(out)
    assert [m["metadata"].get("tool_call_id") for m in again.messages[2:5]] == ["c1", "c2", "c3"]
    assert {"a1", "a2", "a3", "a4"} <= set(chain_from_last(records))


def test_user_message_between_call_and_result_is_moved_after_the_result() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1")]),
        rec("user", "u2", "a1", "hurry up"),
        rec("user", "r1", "u2", [result("c1")]),
        rec("assistant", "a2", "r1", [text("done")]),
    )
    parsed, out, again = repair_and_write(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["PAIR-2"]
    assert [m["role"] for m in again.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert [r["uuid"] for r in lines_of(out)] == ["u1", "a1", "r1", "u2", "a2"]
    assert chain_from_last(lines_of(out)) == ["u1", "a1", "r1", "u2", "a2"]


def test_repeated_call_id_is_renamed_in_call_and_result() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("call_0", "Read")]),
        rec("user", "r1", "a1", [result("call_0", "first")]),
        rec("assistant", "a2", "r1", [use("call_0", "Grep")]),
        rec("user", "r2", "a2", [result("call_0", "second")]),
    )
    parsed, out, _again = repair_and_write(data)
    assert {rule for rule, _, _ in findings(parsed)} == {"ID-1"}
    records = {r["uuid"]: r for r in lines_of(out)}
    assert records["a2"]["message"]["content"][0]["id"] == "call_0_1"
    assert records["r2"]["message"]["content"][0]["tool_use_id"] == "call_0_1"
    assert records["r1"]["message"]["content"][0]["tool_use_id"] == "call_0"
    assert set(data.splitlines()[:3]) <= set(out.splitlines())


def test_blank_assistant_record_is_dropped_and_the_chain_closed() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [text("  ")], mid="m1"),
        rec("user", "u2", "a1", "hello?"),
        rec("assistant", "a2", "u2", [text("hi")], mid="m2"),
    )
    parsed, out, _again = repair_and_write(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["MSG-1"]
    records = lines_of(out)
    assert [r["uuid"] for r in records] == ["u1", "u2", "a2"]
    assert records[1]["parentUuid"] == "u1"
    assert chain_from_last(records) == ["u1", "u2", "a2"]


def test_partial_call_is_removed_from_its_record_and_a_note_written() -> None:
    partial = {"type": "tool_use", "id": "c1", "name": "create_ticket", "input": '{"title": "Mar'}
    data = jsonl(
        rec("user", "u1", None, "raise it"),
        rec("assistant", "a1", "u1", [text("Raising a ticket."), partial]),
        rec("user", "u2", "a1", "[Request interrupted by user]"),
    )
    parsed, out, _again = repair_and_write(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["INT-1", "INT-2"]
    records = lines_of(out)
    assert records[1]["message"]["content"] == [text("Raising a ticket.")]
    note = records[2]
    assert note["parentUuid"] == "a1"
    assert "interrupted by the user" in note["message"]["content"]
    assert records[3]["uuid"] == "u2"
    assert records[3]["parentUuid"] == note["uuid"]


def test_missing_result_goes_before_text_of_the_same_record() -> None:
    data = jsonl(
        rec("user", "u1", None, "go"),
        rec("assistant", "a1", "u1", [use("c1"), use("c2")]),
        rec("user", "r1", "a1", [result("c1"), text("[Request interrupted by user for tool use]")]),
        rec("user", "u2", "r1", "what happened?"),
    )
    _parsed, out, again = repair_and_write(data)
    assert [m["role"] for m in again.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "user",
    ]
    records = lines_of(out)
    assert records[2]["uuid"] == "r1"
    assert records[2]["message"]["content"] == [result("c1")]
    assert records[3]["message"]["content"][0]["tool_use_id"] == "c2"
    assert records[4]["message"]["content"] == [text("[Request interrupted by user for tool use]")]
    assert chain_from_last(records)[-3:] == [records[3]["uuid"], records[4]["uuid"], "u2"]


def test_loglines_export_round_trips_and_repairs() -> None:
    doc = {
        "loglines": [
            rec("user", "u1", None, "go"),
            rec("assistant", "a1", "u1", [use("c1")]),
        ]
    }
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    parsed = cc.parse(data)
    assert cc.sniff(data) >= 0.9
    assert cc.serialise(parsed.messages, parsed) == data
    again = cc.parse(repaired_file(parsed))
    assert [m["role"] for m in again.messages] == ["user", "assistant", "tool"]


def test_src_key_points_each_message_at_its_own_index() -> None:
    data = jsonl(rec("user", "u1", None, "hi"), rec("assistant", "a1", "u1", [text("yo")]))
    parsed = cc.parse(data)
    assert [m["metadata"][cc.SRC] for m in parsed.messages] == [0, 1]


# --- property: any repair written back reads back clean -----------------------------


@st.composite
def sessions(draw: st.DrawFn) -> bytes:
    """Sessions written the ways Claude Code writes them, with pieces missing.

    Each turn: a prompt, one reply split over records (a record a block),
    results that may be missing, out of order, duplicated or left over, in
    each layout Claude Code uses: a linear chain; results hanging off their
    tool_use records with the next record after the last result; or results
    written while the reply was still streaming, between its records. A
    message typed while the tools ran may sit before the results, or in a
    result's own record after its tool_result.
    """
    records: list[dict] = []
    last = None
    n = 0

    def add(kind: str, parent: str | None, content: Any, **extra: Any) -> str:
        nonlocal n
        n += 1
        uid = f"r{n}"
        records.append(rec(kind, uid, parent, content, **extra))
        return uid

    for turn in range(draw(st.integers(1, 4))):
        last = add("user", last, draw(st.sampled_from(["go", "[Request interrupted by user]"])))
        calls = [f"t{turn}c{k}" for k in range(draw(st.integers(0, 3)))]
        mid = f"m{turn}"
        uses = {}
        if draw(st.booleans()) or not calls:
            last = add("assistant", last, [text(draw(st.sampled_from(["Ok.", " "])))], mid=mid)
        answered = draw(st.lists(st.sampled_from(calls), unique=True)) if calls else []
        if draw(st.booleans()) and answered:
            answered.append(answered[0])  # a second result for one call
        layout = draw(st.sampled_from(["linear", "hanging", "streamed"]))
        for c in calls:
            last = uses[c] = add("assistant", last, [use(c)], mid=mid)
            if layout == "streamed" and c in answered:
                # Claude Code ran the call while the reply was still streaming.
                steer = [text("and test it")] if draw(st.booleans()) else []
                last = add("user", last, [result(c), *steer])
                answered.remove(c)
        if calls and draw(st.booleans()):
            last = add("user", last, "hurry up")  # typed while the tools ran
        for c in answered:
            # Newer Claude Code puts what was typed meanwhile in a result's record.
            steer = [text("and test it")] if draw(st.booleans()) else []
            last = add("user", uses[c] if layout == "hanging" else last, [result(c), *steer])
        if draw(st.booleans()):
            last = add("user", last, [result(f"ghost{turn}", "stray")])
    return jsonl(*records)


@settings(max_examples=150, deadline=None)
@given(sessions())
def test_any_repair_written_back_reads_back_with_nothing_to_repair(data: bytes) -> None:
    parsed = cc.parse(data)
    assert cc.serialise(parsed.messages, parsed) == data
    out = repaired_file(parsed)
    again = cc.parse(out)
    assert repair_history(again.messages, causes=again.causes).actions == []
    assert repaired_file(cc.parse(data)) == out


@pytest.mark.parametrize(
    ("value", "text"),
    [(3, "3"), (True, "true"), (False, "false"), (None, ""), (2.5, "2.5")],
    ids=["int", "true", "false", "null", "float"],
)
def test_tool_result_content_that_is_a_number_a_boolean_or_null_is_read_as_text(
    value: Any, text: str
) -> None:
    data = jsonl(
        rec("user", "u1", None, "count"),
        rec("assistant", "a1", "u1", [use("c1", "Count"), use("c2", "Count")]),
        rec("user", "r1", "a1", [result("c1", value)]),
    )
    parsed = cc.parse(data)
    assert parsed.messages[2]["content"] == text
    assert parsed.messages[2]["metadata"]["tool_call_id"] == "c1"
    assert cc.serialise(parsed.messages, parsed) == data
    _, out, again = repair_and_write(data)
    assert lines_of(out)[2] == lines_of(data)[2]  # the odd value is kept as it was
    assert [m["metadata"].get("tool_call_id") for m in again.messages[2:]] == ["c1", "c2"]
