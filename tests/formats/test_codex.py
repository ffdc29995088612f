"""Codex rollouts: reading turns and calls, writing repairs back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.formats import codex as cx
from inspector.formats.base import FormatError, Parsed
from tests.engine.helpers import repair_history
from tests.testdata import CORPUS, files, read

ROLLOUTS = files(CORPUS / "codex")


def _id(path: Path) -> str:
    return path.name


def findings(parsed: Parsed) -> list[tuple[str, list[int] | None, str | None]]:
    repair = repair_history(parsed.messages, causes=parsed.causes)
    out = []
    for action in repair.actions:
        index = action.input_index if action.input_index is not None else action.turn_index
        out.append(
            (action.rule, parsed.sources[index] if index is not None else None, action.call_id)
        )
    return out


def repaired_file(parsed: Parsed) -> bytes:
    repair = repair_history(parsed.messages, causes=parsed.causes)
    return cx.serialise(repair.messages, parsed)


def roles(parsed: Parsed) -> list[str]:
    return [m["role"] for m in parsed.messages]


def line(kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2026-01-01T00:00:{second:02d}Z", "type": kind, "payload": payload}


def item(payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return line("response_item", payload, second)


def meta(session: str = "s-1", second: int = 0) -> dict[str, Any]:
    return line("session_meta", {"id": session, "cwd": "/repo", "cli_version": "0.77.0"}, second)


def user(t: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}


def said(t: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}


def call(call_id: str, name: str = "shell", arguments: str = '{"cmd": "ls"}') -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id}


def output(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def records_of(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


# --- the corpus --------------------------------------------------------------------


@pytest.mark.parametrize("path", ROLLOUTS, ids=_id)
def test_corpus_rollout_round_trips_byte_for_byte(path: Path) -> None:
    data = read(path)
    parsed = cx.parse(data)
    assert cx.serialise(parsed.messages, parsed) == data
    assert parsed.problems == []


# Two rollouts really have unanswered calls: a fixture where the user turned
# down an escalation and then aborted, and a Desktop rollout copied while its
# last command ran (its arguments were redacted to text that is not JSON, so
# the repair takes the call for one cut mid-stream). Everything else is healthy.
ROLLOUT_FINDINGS = {
    "kvsankar-agent-history__codex_with_escalation.jsonl": [
        ("PAIR-1", [10, 11], "call_esc_002"),
        ("PAIR-1", [19], "call_esc_004"),
    ],
    "madshn-localpush__rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl": [
        ("INT-1", [15, 17, 18], "call_UtYwHmwWekzvq83m8Rb9K8jJ"),
        ("INT-2", [15, 17, 18], None),
    ],
}


@pytest.mark.parametrize("path", ROLLOUTS, ids=_id)
def test_corpus_rollout_has_only_its_real_findings(path: Path) -> None:
    parsed = cx.parse(read(path))
    assert findings(parsed) == ROLLOUT_FINDINGS.get(path.name, [])


@pytest.mark.parametrize("path", ROLLOUTS, ids=_id)
def test_repaired_rollout_reloads_with_nothing_left_to_repair(path: Path) -> None:
    parsed = cx.parse(read(path))
    again = cx.parse(repaired_file(parsed))
    assert repair_history(again.messages, causes=again.causes).actions == []
    assert again.problems == []


def test_codex_exec_event_stream_is_not_a_rollout() -> None:
    path = files(CORPUS / "codex-exec", "*codex-exec-json.log")[0]
    assert cx.sniff(read(path)[:65536]) == 0
    with pytest.raises(FormatError):
        cx.parse(read(path))


# --- reading --------------------------------------------------------------------


def test_one_turns_parallel_calls_become_one_assistant_message() -> None:
    data = jsonl(
        meta(),
        item(user("look around")),
        item({"type": "reasoning", "summary": [], "encrypted_content": "xx"}),
        item(said("Looking.")),
        item(call("c1")),
        line("event_msg", {"type": "token_count"}),
        item(call("c2")),
        item(output("c1", "a")),
        item(output("c2", "b")),
        item(said("Done.")),
    )
    parsed = cx.parse(data)
    assert roles(parsed) == ["user", "assistant", "tool", "tool", "assistant"]
    reply = parsed.messages[1]
    assert reply["content"] == [{"type": "text", "text": "Looking."}]
    assert reply["metadata"]["reasoning"] == [
        {"type": "reasoning", "summary": [], "encrypted_content": "xx"}
    ]
    assert reply["metadata"]["tool_calls"] == [
        {"tool_call_id": "c1", "name": "shell", "arguments": '{"cmd": "ls"}'},
        {"tool_call_id": "c2", "name": "shell", "arguments": '{"cmd": "ls"}'},
    ]
    assert parsed.sources[:4] == [[2], [3, 4, 5, 7], [8], [9]]
    assert findings(parsed) == []
    assert parsed.meta["session_id"] == "s-1"
    assert parsed.meta["envelope"] is True


def test_developer_note_written_while_a_call_runs_is_not_a_pairing_problem() -> None:
    developer = {"type": "message", "role": "developer", "content": []}
    data = jsonl(meta(), item(user("go")), item(call("c1")), item(developer), item(output("c1")))
    parsed = cx.parse(data)
    assert roles(parsed) == ["user", "assistant", "tool", "system"]
    assert findings(parsed) == []
    assert cx.serialise(parsed.messages, parsed) == data


def test_custom_tool_input_is_never_taken_for_cut_arguments() -> None:
    patch = {
        "type": "custom_tool_call",
        "name": "apply_patch",
        "input": "*** Begin",
        "call_id": "p1",
    }
    parsed = cx.parse(jsonl(meta(), item(user("edit")), item(patch)))
    assert parsed.messages[1]["metadata"]["tool_calls"] == [
        {"tool_call_id": "p1", "name": "apply_patch", "arguments": {"input": "*** Begin"}}
    ]
    assert [rule for rule, _, _ in findings(parsed)] == ["PAIR-1"]
    healed = records_of(repaired_file(parsed))[-1]["payload"]
    assert healed["type"] == "custom_tool_call_output"
    assert healed["call_id"] == "p1"


def test_local_shell_call_is_a_call_with_its_action_as_arguments() -> None:
    action = {"type": "exec", "command": ["ls"]}
    shell = {"type": "local_shell_call", "call_id": "s1", "status": "completed", "action": action}
    parsed = cx.parse(jsonl(meta(), item(user("ls")), item(shell), item(output("s1"))))
    assert parsed.messages[1]["metadata"]["tool_calls"] == [
        {"tool_call_id": "s1", "name": "local_shell", "arguments": action}
    ]
    assert findings(parsed) == []


def test_web_search_call_stays_in_its_turn() -> None:
    search = {"type": "web_search_call", "status": "completed"}
    parsed = cx.parse(jsonl(meta(), item(user("news?")), item(search), item(said("Here."))))
    assert roles(parsed) == ["user", "assistant"]
    assert parsed.messages[1]["metadata"]["web_search"] == [search]


def test_turn_stopped_after_its_reasoning_makes_no_message() -> None:
    thinking = {"type": "reasoning", "summary": [], "encrypted_content": "e"}
    data = jsonl(
        meta(),
        item(user("go")),
        item(thinking),
        line("event_msg", {"type": "turn_aborted"}),
        item(user("never mind")),
    )
    parsed = cx.parse(data)
    assert roles(parsed) == ["user", "user"]
    assert parsed.causes == {}
    assert findings(parsed) == []


def test_turn_aborted_marks_the_last_assistant_message_of_its_turn() -> None:
    data = jsonl(
        meta(),
        item(user("delete it")),
        item(said("Deleting.")),
        item(call("c1")),
        line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
    )
    assert cx.parse(data).causes == {1: "turn_aborted"}


def test_compaction_restarts_history_from_its_replacement() -> None:
    data = jsonl(
        meta(),
        item(user("old question")),
        item(said("old answer")),
        line("compacted", {"message": "summary", "replacement_history": [user("kept")]}),
        item(user("new question")),
        item(call("c1")),
        item(output("c1")),
    )
    parsed = cx.parse(data)
    assert [m["content"] for m in parsed.messages][:2] == [
        [{"type": "text", "text": "kept"}],
        [{"type": "text", "text": "new question"}],
    ]
    assert parsed.sources[0] == [4]
    assert parsed.meta["compactions"] == [{"line": 4, "replaced": 2}]


def test_compaction_without_replacement_keeps_its_summary() -> None:
    data = jsonl(meta(), item(user("old")), line("compacted", {"message": "we did X"}))
    parsed = cx.parse(data)
    assert parsed.messages == [
        {"role": "user", "content": "we did X", "metadata": {cx.SRC: 0}},
    ]


def test_repeated_session_meta_is_reported_as_a_fork() -> None:
    data = jsonl(meta("child"), meta("parent", 1), item(user("hi")))
    parsed = cx.parse(data)
    assert parsed.meta["session_id"] == "child"
    assert parsed.meta["forks"] == [
        {"line": 2, "session_id": "parent", "timestamp": None},
    ]


def test_rollout_without_envelopes_is_read_and_written_back_without_them() -> None:
    data = jsonl(
        {"id": "old-1", "timestamp": "2025-05-01T00:00:00Z", "instructions": None},
        {"record_type": "state"},
        user("list files"),
        call("c1"),
        {"record_type": "state"},
    )
    parsed = cx.parse(data)
    assert cx.sniff(data) > 0.5
    assert roles(parsed) == ["user", "assistant"]
    assert parsed.meta["session_id"] == "old-1"
    assert parsed.meta["envelope"] is False
    assert cx.serialise(parsed.messages, parsed) == data
    healed = records_of(repaired_file(parsed))[4]
    assert healed["type"] == "function_call_output"
    assert healed["call_id"] == "c1"
    assert "payload" not in healed


def test_bad_lines_are_reported_and_the_rest_read() -> None:
    data = jsonl(meta(), item(user("hi"))) + b"{oops\n" + orjson.dumps(item(said("yo")))[:25]
    parsed = cx.parse(data)
    assert roles(parsed) == ["user"]
    assert [(p.line, p.kind) for p in parsed.problems] == [(3, "unreadable"), (4, "truncated")]
    assert cx.serialise(parsed.messages, parsed) == data


def test_other_jsonl_is_not_a_rollout() -> None:
    chat = b'{"role": "user", "content": "hi"}\n'
    assert cx.sniff(chat) == 0
    with pytest.raises(FormatError):
        cx.parse(chat)
    claude = b'{"type":"user","uuid":"u","message":{"role":"user","content":"hi"}}\n'
    assert cx.sniff(claude) < 0.5


# --- writing repairs back ---------------------------------------------------------


def test_synthetic_output_is_inserted_after_the_call_with_its_timestamp() -> None:
    data = jsonl(
        meta(),
        item(user("go"), 1),
        item(call("c1"), 2),
        item(call("c2"), 3),
        item(output("c2"), 4),
        item(user("well?"), 5),
    )
    parsed = cx.parse(data)
    out = repaired_file(parsed)
    records = records_of(out)
    assert [r["payload"].get("call_id") for r in records[2:6]] == ["c1", "c2", "c1", "c2"]
    healed = records[4]
    assert healed["timestamp"] == "2026-01-01T00:00:03Z"
    assert healed["payload"]["output"].startswith("Tool call was interrupted; no result.")
    assert set(data.splitlines()) <= set(out.splitlines())
    assert repaired_file(cx.parse(data)) == out


def test_call_in_a_compactions_replacement_gets_its_output_after_it() -> None:
    replacement = [user("q"), call("c1"), user("kept too")]
    data = jsonl(
        meta(),
        line("compacted", {"message": "s", "replacement_history": replacement}, 5),
        item(user("next"), 6),
    )
    parsed = cx.parse(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["PAIR-1"]
    out = repaired_file(parsed)
    records = records_of(out)
    assert records[1]["payload"]["replacement_history"] == replacement[:2]
    assert records[2]["payload"]["call_id"] == "c1"
    assert records[3]["payload"] == user("kept too")
    assert records[4] == item(user("next"), 6)
    again = cx.parse(out)
    assert repair_history(again.messages, causes=again.causes).actions == []


def test_repeated_call_id_is_renamed_in_call_and_output() -> None:
    data = jsonl(
        meta(),
        item(user("go")),
        item(call("call_0")),
        item(output("call_0")),
        item(said("next")),
        item(call("call_0", "grep")),
        item(output("call_0", "second")),
    )
    parsed = cx.parse(data)
    assert {rule for rule, _, _ in findings(parsed)} == {"ID-1"}
    records = records_of(repaired_file(parsed))
    assert records[5]["payload"]["call_id"] == "call_0_1"
    assert records[6]["payload"]["call_id"] == "call_0_1"
    assert records[2]["payload"]["call_id"] == "call_0"


def test_rename_is_written_where_the_writer_put_the_id() -> None:
    first = {"type": "function_call", "name": "read", "arguments": "{}", "id": "t1"}
    second = {"type": "function_call", "name": "grep", "arguments": "{}", "id": "t1"}
    data = jsonl(
        meta(),
        item(user("go")),
        item(first),
        item(output("t1")),
        item(said("again")),
        item(second),
        item(output("t1")),
    )
    records = records_of(repaired_file(cx.parse(data)))
    assert records[5]["payload"] == {**second, "id": "t1_1"}
    assert records[6]["payload"]["call_id"] == "t1_1"


def test_user_message_between_call_and_output_is_moved_after_it() -> None:
    data = jsonl(
        meta(),
        item(user("go"), 1),
        item(call("c1"), 2),
        item(user("hurry"), 3),
        item(output("c1"), 4),
    )
    parsed = cx.parse(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["PAIR-2"]
    out = repaired_file(parsed)
    lines = data.splitlines()
    assert out.splitlines() == [lines[0], lines[1], lines[2], lines[4], lines[3]]


def test_blank_assistant_message_is_dropped_from_the_file() -> None:
    data = jsonl(meta(), item(user("go")), item(said("  ")), item(user("hello?")))
    parsed = cx.parse(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["MSG-1"]
    out = repaired_file(parsed)
    assert out.splitlines() == [data.splitlines()[i] for i in (0, 1, 3)]


def test_orphan_output_becomes_a_user_note_record() -> None:
    data = jsonl(meta(), item(user("go")), item(said("hi")), item(output("ghost", "stray")))
    parsed = cx.parse(data)
    assert [rule for rule, _, _ in findings(parsed)] == ["PAIR-3"]
    note = records_of(repaired_file(parsed))[-1]["payload"]
    assert note["type"] == "message"
    assert note["role"] == "user"
    assert note["content"][0]["text"].startswith("[note: a tool result for call ghost")


def test_src_key_points_each_message_at_its_own_index() -> None:
    parsed = cx.parse(jsonl(meta(), item(user("a")), item(said("b"))))
    assert [m["metadata"][cx.SRC] for m in parsed.messages] == [0, 1]


# --- property: any repair written back reads back clean -----------------------------


@st.composite
def rollouts(draw: st.DrawFn) -> bytes:
    """Rollouts with turns of parallel calls whose outputs may be missing,
    duplicated, left over, or have a note or a typed message before them."""
    records: list[dict[str, Any]] = [meta()]
    for turn in range(draw(st.integers(1, 4))):
        records.append(item(user(f"turn {turn}")))
        if draw(st.booleans()):
            records.append(item({"type": "reasoning", "summary": [], "encrypted_content": "e"}))
        if draw(st.booleans()):
            records.append(item(said(draw(st.sampled_from(["Ok.", " "])))))
        calls = [f"t{turn}c{k}" for k in range(draw(st.integers(0, 3)))]
        custom = draw(st.booleans())
        for c in calls:
            if custom and c.endswith("c0"):
                patch = {"type": "custom_tool_call", "name": "patch", "input": "x", "call_id": c}
                records.append(item(patch))
            else:
                records.append(item(call(c)))
        records.append(line("event_msg", {"type": "token_count"}))
        if calls and draw(st.booleans()):
            records.append(item({"type": "message", "role": "developer", "content": []}))
        if calls and draw(st.booleans()):
            records.append(item(user("hurry")))
        answered = draw(st.permutations(calls))[: draw(st.integers(0, len(calls)))]
        for c in answered:
            kind = "custom_tool_call_output" if custom and c.endswith("c0") else None
            records.append(item({**output(c), **({"type": kind} if kind else {})}))
        if answered and draw(st.booleans()):
            records.append(item(output(answered[0], "again")))
        if draw(st.booleans()):
            records.append(item(output(f"ghost{turn}")))
        if draw(st.booleans()):
            records.append(line("event_msg", {"type": "turn_aborted"}))
    return jsonl(*records)


@settings(max_examples=150, deadline=None)
@given(rollouts())
def test_any_repair_written_back_reads_back_with_nothing_to_repair(data: bytes) -> None:
    parsed = cx.parse(data)
    assert cx.serialise(parsed.messages, parsed) == data
    out = repaired_file(parsed)
    again = cx.parse(out)
    assert repair_history(again.messages, causes=again.causes).actions == []
    assert repaired_file(cx.parse(data)) == out


def test_the_phase_of_each_message_goes_out_with_it() -> None:
    # gpt-5 codex models write a phase on each message and want it sent back with it:
    # the Responses export keeps it, one message item for each phase it read.
    commentary = {**said("Looking."), "phase": "commentary"}
    final = {**said("Done."), "phase": "final_answer"}
    parsed = cx.parse(jsonl(meta(), item(user("look")), item(commentary), item(final)))
    assert [p["item"] for p in parsed.messages[1]["content"]] == [
        {"phase": "commentary"},
        {"phase": "final_answer"},
    ]
    sent = formats.to_wire(parsed.messages, "responses")["input"]
    assert [(i.get("phase"), i["content"][0]["text"]) for i in sent[1:]] == [
        ("commentary", "Looking."),
        ("final_answer", "Done."),
    ]
    # The other providers get the text alone.
    assert formats.to_wire(parsed.messages, "anthropic")["messages"][1]["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "text", "text": "Done."},
    ]


# Codex pairs a tool search it ran (``execution: "client"``) with its output by call_id,
# as its own ``tool_pairing`` does; one the server ran has its output beside it.
def _search_rollout(*, answered: bool, execution: str = "client") -> bytes:
    stamp = "2026-03-01T10:00:00.000Z"
    payloads: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {
            "type": "tool_search_call",
            "call_id": "search-1",
            "status": "completed",
            "execution": execution,
            "arguments": {"query": "calendar create", "limit": 1},
        },
    ]
    if answered:
        payloads.append(
            {
                "type": "tool_search_output",
                "call_id": "search-1",
                "status": "completed",
                "execution": execution,
                "tools": [{"type": "function", "name": "calendar_create"}],
            }
        )
    payloads.append(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "next"}]}
    )
    lines = [
        orjson.dumps({"timestamp": stamp, "type": "response_item", "payload": p}) for p in payloads
    ]
    return b"\n".join(lines) + b"\n"


def test_a_tool_search_codex_ran_is_a_call_answered_by_its_output() -> None:
    data = _search_rollout(answered=True)
    parsed = cx.parse(data)
    calls = [c for m in parsed.messages for c in m["metadata"].get("tool_calls", [])]
    assert [c["tool_call_id"] for c in calls] == ["search-1"]
    result = next(m for m in parsed.messages if m["role"] == "tool")
    assert "calendar_create" in result["content"]
    assert repair_history(parsed.messages).actions == []
    assert cx.serialise(parsed.messages, parsed) == data


def test_a_tool_search_cut_before_its_output_is_answered_in_the_rollout_and_the_export() -> None:
    parsed = cx.parse(_search_rollout(answered=False))
    repaired = repair_history(parsed.messages)
    assert [a.rule for a in repaired.actions] == ["PAIR-1"]
    written = cx.serialise(repaired.messages, parsed)
    added = [orjson.loads(line)["payload"] for line in written.splitlines()][2]
    # The output Codex pairs with the call, finding no tools: nothing made up.
    assert added == {
        "type": "tool_search_output",
        "call_id": "search-1",
        "status": "completed",
        "execution": "client",
        "tools": [],
    }
    assert repair_history(cx.parse(written).messages).actions == []
    wire, _ = formats.export_wire(repaired.messages, "responses")
    assert [i.get("type") for i in wire["input"][1:3]] == ["tool_search_call", "tool_search_output"]


def test_a_tool_search_the_server_ran_waits_for_nothing() -> None:
    parsed = cx.parse(_search_rollout(answered=False, execution="server"))
    assert not any(m["metadata"].get("tool_calls") for m in parsed.messages)
    assert repair_history(parsed.messages).actions == []
