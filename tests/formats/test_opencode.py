"""OpenCode sessions: exports, message lists, storage records; repairs written into the parts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.diagnosis.rows import message_facts
from inspector.engine.providers import PROVIDERS, validate
from inspector.formats import FormatError, export_wire, load, opencode, to_wire
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

FOLDER = CORPUS / "opencode"
SESSIONS = files(FOLDER)
HEALTHY = FOLDER / "derived__export-healthy.opencode.json"
INTERRUPTED = FOLDER / "derived__export-interrupted.opencode.json"
RECORDS = FOLDER / "derived__storage-records-interrupted.opencode.json"
# Written by OpenCode 1.18.33 itself: ``opencode export`` of the interrupted session above
# once ``opencode import`` had taken it, and of our repair of that export once imported.
TOOL_EXPORT = FOLDER / "opencode-1.18.33-export__interrupted.opencode.json"
TOOL_REEXPORT = FOLDER / "opencode-1.18.33-export__repaired-by-us.opencode.json"
REAL = FOLDER / "mikaelwills-SpaceNotes-Client__tool_use.json"

RUNNING = "toolu_01Fp3Kd8Zr6Vy2Nc9Qw5Hs7T"  # bash, still running when OpenCode died
PENDING = "toolu_01Jb7Ts4Mx9Lq2Wd6Rk3Vn8P"  # glob, its arguments half streamed

SES = "ses_1"


def _id(path: Path) -> str:
    return path.name


def export(*messages: dict[str, Any]) -> bytes:
    info = {"id": SES, "projectID": "p", "directory": "/w", "title": "t", "time": {"created": 1}}
    return orjson.dumps({"info": info, "messages": list(messages)}, option=orjson.OPT_INDENT_2)


def user(mid: str, text: str) -> dict[str, Any]:
    info = {"id": mid, "sessionID": SES, "role": "user", "time": {"created": 10},
            "agent": "build", "model": {"providerID": "anthropic", "modelID": "m"}}  # fmt: skip
    return {"info": info, "parts": [part(mid, "a", {"type": "text", "text": text})]}


def part(mid: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"prt_{mid[4:]}{key}", "sessionID": SES, "messageID": mid, **body}


def tool(call: str, status: str, output: str = "ok", inp: Any = None) -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": {"n": call} if inp is None else inp}
    if status == "completed":
        state |= {"output": output, "title": "", "metadata": {}, "time": {"start": 5, "end": 6}}
    elif status == "error":
        state |= {"error": output, "time": {"start": 5, "end": 6}}
    elif status == "running":
        state |= {"time": {"start": 5}}
    return {"type": "tool", "callID": call, "tool": "bash", "state": state}


def assistant(mid: str, *bodies: dict[str, Any], **info: Any) -> dict[str, Any]:
    base = {"id": mid, "sessionID": SES, "role": "assistant", "parentID": "msg_a",
            "time": {"created": 20, "completed": 30}, "modelID": "m", "providerID": "anthropic",
            "mode": "build", "path": {"cwd": "/w", "root": "/w"}, "finish": "stop"}  # fmt: skip
    parts = [part(mid, f"{n:02d}", body) for n, body in enumerate(bodies)]
    return {"info": {**base, **info}, "parts": parts}


STEP = {"type": "step-start"}
FINISH = {"type": "step-finish", "reason": "tool-calls"}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def parts_of(data: bytes) -> list[dict[str, Any]]:
    return [p for m in orjson.loads(data)["messages"] for p in m["parts"]]


# --- the corpus ------------------------------------------------------------------------


@pytest.mark.parametrize("path", SESSIONS, ids=_id)
def test_file_loads_as_opencode_and_round_trips_byte_for_byte(path: Path) -> None:
    data = read(path)
    parsed = load(data)
    assert parsed.format == "opencode"
    assert parsed.problems == []
    assert opencode.serialise(parsed.messages, parsed) == data
    assert len(parsed.sources) == len(parsed.messages)


SESSION_FINDINGS = {
    INTERRUPTED.name: [("PAIR-1", [8], RUNNING), ("PAIR-1", [8], PENDING)],
    RECORDS.name: [("PAIR-1", [9], RUNNING), ("PAIR-1", [9], PENDING)],
    TOOL_EXPORT.name: [("PAIR-1", [8], RUNNING), ("PAIR-1", [8], PENDING)],
}


def test_opencode_took_our_repair_and_gives_it_back_as_written() -> None:
    # What OpenCode exported after importing our repaired file is the repair we wrote:
    # the same canonical history, every cut call answered by its interruption note.
    ours = opencode.parse(
        opencode.serialise(
            repair(opencode.parse(read(TOOL_EXPORT))).messages, opencode.parse(read(TOOL_EXPORT))
        )
    )
    theirs = opencode.parse(read(TOOL_REEXPORT))
    assert [m["role"] for m in theirs.messages] == [m["role"] for m in ours.messages]
    assert [m["content"] for m in theirs.messages] == [m["content"] for m in ours.messages]
    assert findings(theirs) == []


@pytest.mark.parametrize("path", SESSIONS, ids=_id)
def test_file_has_only_its_real_findings(path: Path) -> None:
    assert findings(opencode.parse(read(path))) == SESSION_FINDINGS.get(path.name, [])


@pytest.mark.parametrize("path", SESSIONS, ids=_id)
def test_every_provider_takes_the_history_as_it_is_when_healthy_and_once_repaired(
    path: Path,
) -> None:
    parsed = opencode.parse(read(path))
    broken = path.name in SESSION_FINDINGS
    for provider in PROVIDERS:
        assert bool(validate(provider, to_wire(parsed.messages, provider))) == broken, provider
        wire, _ = export_wire(repair(parsed).messages, provider)
        assert validate(provider, wire) == [], provider


def test_reasoning_keeps_its_anthropic_signature() -> None:
    reply = opencode.parse(read(HEALTHY)).messages[1]
    assert reply["content"][0]["signature"].startswith("EqQBCkgIBxABGAIqQK")


def test_a_session_is_read_as_opencode_sends_it() -> None:
    parsed = opencode.parse(read(HEALTHY))
    assert parsed.meta["session_id"].startswith("ses_")
    assert parsed.meta["cwd"] == "/home/dev/todo-app"
    assert parsed.meta["container"] == "export"
    first, reply = parsed.messages[0], parsed.messages[1]
    assert first["role"] == "user"
    # Reasoning as thinking, then the text, then the call; its result right after it.
    assert [p["type"] for p in reply["content"]] == ["thinking", "text"]
    (call,) = reply["metadata"]["tool_calls"]
    assert call["name"] == "bash" and call["arguments"]["command"] == "npm test -- src/store"
    result = parsed.messages[2]
    assert result["metadata"]["tool_call_id"] == call["tool_call_id"]
    assert result["content"].startswith("FAIL src/store/todos.test.ts")
    # The grep part in state error is an answered call with an error result.
    errors = [m for m in parsed.messages if m["metadata"].get("is_error")]
    assert len(errors) == 1 and "ripgrep failed" in errors[0]["content"]


def test_a_pending_call_never_started_and_a_running_one_may_have_run() -> None:
    parsed = opencode.parse(read(INTERRUPTED))
    assert parsed.not_started == {PENDING}
    assert parsed.causes == {len(parsed.messages) - 1: "stream_ended"}
    healed = {m["metadata"]["tool_call_id"]: m for m in repair(parsed).messages[-2:]}
    assert healed[PENDING]["metadata"]["outcome"] == "not_started"
    assert healed[RUNNING]["metadata"]["outcome"] == "unknown"


@pytest.mark.parametrize("path", [INTERRUPTED, RECORDS], ids=_id)
def test_the_repair_sets_the_cut_parts_to_the_error_state_opencode_gives_an_aborted_tool(
    path: Path,
) -> None:
    data = read(path)
    parsed = opencode.parse(data)
    out, again = repaired_round_trip(opencode, parsed)
    assert again.not_started == set()
    before, after = orjson.loads(data), orjson.loads(out)
    if parsed.meta["container"] == "export":
        old_parts, new_parts = parts_of(data), parts_of(out)
        assert [m["info"] for m in before["messages"]] == [m["info"] for m in after["messages"]]
        assert before["info"] == after["info"]
    else:
        old_parts, new_parts = before, after
    assert len(old_parts) == len(new_parts)
    changed = [(a, b) for a, b in zip(old_parts, new_parts, strict=True) if a != b]
    assert [a["callID"] for a, _ in changed] == [RUNNING, PENDING]
    for old, new in changed:
        assert {k: v for k, v in new.items() if k != "state"} == {
            k: v for k, v in old.items() if k != "state"
        }
        state = new["state"]
        # What OpenCode's schema takes for ToolStateError (opencode import decodes it).
        assert state["status"] == "error"
        assert isinstance(state["input"], dict) and isinstance(state["error"], str)
        assert state["error"].startswith("Tool call was interrupted; no result.")
        assert set(state["time"]) == {"start", "end"}
        assert state["time"]["start"] == state["time"]["end"]
    running = changed[0][1]["state"]
    assert running["input"] == changed[0][0]["state"]["input"]
    assert running["metadata"] == changed[0][0]["state"]["metadata"]  # kept as it was
    assert running["time"]["start"] == changed[0][0]["state"]["time"]["start"]
    assert "never started" in changed[1][1]["state"]["error"]
    # Only the changed parts' lines differ; the rest is as OpenCode wrote it.
    assert out[-2:] == data[-2:]
    assert opencode.serialise(repair(parsed).messages, parsed) == out  # deterministic


def test_storage_records_hold_the_same_history_as_the_export() -> None:
    records, exported = opencode.parse(read(RECORDS)), opencode.parse(read(INTERRUPTED))
    assert records.meta["container"] == "records"
    assert outline(records.messages) == outline(exported.messages)
    assert records.meta["session_id"] == exported.meta["session_id"]


def test_records_of_other_sessions_are_left_out_and_share_api_records_are_read() -> None:
    rows = orjson.loads(read(RECORDS))
    stranger = {**rows[1], "id": "msg_zzz", "sessionID": "ses_other"}
    stray = {**rows[-1], "id": "prt_zzz", "messageID": "msg_zzz"}
    parsed = opencode.parse(orjson.dumps([*rows, stranger, stray]))
    assert parsed.meta["other_records"] == 2
    assert outline(parsed.messages) == outline(opencode.parse(read(RECORDS)).messages)
    kinds = ["session"] + ["message"] * 9 + ["part"] * (len(rows) - 10)
    shared = [{"type": kind, "data": row} for kind, row in zip(kinds, rows, strict=True)]
    data = orjson.dumps(shared)
    parsed = opencode.parse(data)
    out, _ = repaired_round_trip(opencode, parsed)
    assert all(set(item) == {"type", "data"} for item in orjson.loads(out))


def test_one_message_and_a_list_of_messages_are_read_too() -> None:
    one = read(REAL)
    parsed = load(one)
    assert parsed.meta["container"] == "message"
    assert parsed.meta["session_id"] == "ses_51f0a865bffe017zxdaUB6I31j"
    assert parsed.messages[0]["content"][0]["text"].startswith("I can see the current directory")
    listed = orjson.dumps(orjson.loads(read(INTERRUPTED))["messages"])
    assert load(listed).meta["container"] == "messages"
    assert outline(load(listed).messages) == outline(load(read(INTERRUPTED)).messages)


# --- what OpenCode sends ----------------------------------------------------------------


def test_each_step_of_a_message_is_an_assistant_message_with_its_results() -> None:
    data = export(
        user("msg_a", "go"),
        assistant(
            "msg_b",
            STEP,
            text("one"),
            tool("c1", "completed"),
            FINISH,
            STEP,
            tool("c2", "error", "boom"),
            FINISH,
            STEP,
            text("done"),
        ),
    )
    parsed = opencode.parse(data)
    assert outline(parsed.messages) == [
        ("user", "go"),
        ("assistant", "one", (("c1", "bash"),)),
        ("tool", "c1", "ok"),
        ("assistant", "", (("c2", "bash"),)),
        ("tool", "c2", "boom"),
        ("assistant", "done", ()),
    ]
    assert parsed.messages[4]["metadata"]["is_error"] is True


def test_failed_replies_are_left_out_as_opencode_leaves_them_out() -> None:
    api_error = {"name": "APIError", "data": {"message": "overloaded", "isRetryable": True}}
    aborted = {"name": "MessageAbortedError", "data": {"message": "aborted"}}
    data = export(
        user("msg_a", "go"),
        assistant("msg_b", STEP, tool("c1", "pending"), error=api_error),
        assistant(
            "msg_c", STEP, {"type": "reasoning", "text": "hm", "time": {"start": 1}}, error=aborted
        ),
        assistant("msg_d", STEP, text("partial"), tool("c2", "running"), error=aborted),
    )
    parsed = opencode.parse(data)
    assert parsed.meta["skipped_turns"] == [
        {"message": 2, "error": "APIError", "text": "overloaded"},
        {"message": 3, "error": "MessageAbortedError", "text": "aborted"},
    ]
    # Aborted after it did something: OpenCode sends it, so its running call needs a result.
    assert findings(parsed) == [("PAIR-1", [4], "c2")]
    assert parsed.causes == {1: "user_stop"}


def test_the_history_starts_at_the_last_completed_compaction() -> None:
    data = export(
        user("msg_a", "old work"),
        assistant("msg_b", STEP, tool("c0", "running")),  # cut, then compacted away
        {
            "info": user("msg_c", "")["info"],
            "parts": [part("msg_c", "a", {"type": "compaction", "auto": True})],
        },
        assistant("msg_d", STEP, text("summary of it"), parentID="msg_c", summary=True),
        user("msg_e", "go on"),
    )
    parsed = opencode.parse(data)
    assert parsed.meta["compacted"] == 2
    assert outline(parsed.messages) == [
        ("user", opencode.COMPACTION_TEXT),
        ("assistant", "summary of it", ()),
        ("user", "go on"),
    ]
    assert findings(parsed) == []


def test_user_files_and_ignored_text() -> None:
    image = {
        "type": "file",
        "mime": "image/png",
        "filename": "a.png",
        "url": "data:image/png;base64,AAAA",
    }
    listing = {"type": "file", "mime": "text/plain", "filename": "b.txt", "url": "file:///b.txt"}
    pdf = {"type": "file", "mime": "application/pdf", "filename": "c.pdf", "url": "file:///c.pdf"}
    hidden = {"type": "text", "text": "not sent", "ignored": True}
    bodies = [text("look"), image, listing, pdf, hidden]
    message = {
        "info": user("msg_a", "")["info"],
        "parts": [part("msg_a", str(n), p) for n, p in enumerate(bodies)],
    }
    parsed = opencode.parse(export(message, assistant("msg_b", STEP, text("seen"))))
    assert parsed.messages[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "media_type": "image/png", "data": "AAAA"},
        {"type": "text", "text": "[file: c.pdf (application/pdf)]"},
    ]


# --- repairs written back ----------------------------------------------------------------


def test_a_repeated_call_id_is_renamed_in_its_part() -> None:
    data = export(
        user("msg_a", "go"),
        assistant("msg_b", STEP, tool("c1", "completed")),
        assistant("msg_c", STEP, tool("c1", "completed", "second")),
    )
    parsed = opencode.parse(data)
    assert {a[0] for a in findings(parsed)} == {"ID-1"}
    out, _ = repaired_round_trip(opencode, parsed)
    assert [p.get("callID") for p in parts_of(out) if p["type"] == "tool"] == ["c1", "c1_1"]


def test_a_blank_reply_loses_its_message() -> None:
    data = export(
        user("msg_a", "go"),
        assistant("msg_b", STEP, text("   "), FINISH),
        assistant("msg_c", STEP, text("done")),
    )
    parsed = opencode.parse(data)
    assert [a[0] for a in findings(parsed)] == ["MSG-1"]
    out, _ = repaired_round_trip(opencode, parsed)
    assert [m["info"]["id"] for m in orjson.loads(out)["messages"]] == ["msg_a", "msg_c"]


def test_a_call_cut_mid_arguments_goes_and_a_note_sorts_into_its_place() -> None:
    data = export(
        user("msg_a", "go"),
        assistant(
            "msg_b",
            STEP,
            text("Writing."),
            tool("c1", "pending", inp='{"path": "/x'),
            finish="length",
        ),
        assistant("msg_c", STEP, text("next")),
    )
    parsed = opencode.parse(data)
    assert [a[0] for a in findings(parsed)] == ["INT-1", "INT-2"]
    out, again = repaired_round_trip(opencode, parsed)
    messages = orjson.loads(out)["messages"]
    ids = [m["info"]["id"] for m in messages]
    assert ids[:2] == ["msg_a", "msg_b"] and ids[-1] == "msg_c"
    assert ids == sorted(ids)  # OpenCode lists a session's messages by id
    note = messages[2]
    assert note["info"]["role"] == "user" and note["info"]["agent"] == "build"
    assert note["info"]["model"] == {"providerID": "anthropic", "modelID": "m"}
    (body,) = note["parts"]
    assert body["synthetic"] is True and body["messageID"] == ids[2]
    assert "by the output token limit" in body["text"]
    assert all(p["type"] != "tool" for p in messages[1]["parts"])  # the cut call is gone
    assert outline(again.messages)[2][0] == "user"


# --- not OpenCode -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"messages": [{"role": "user", "content": "hi"}]}',
        b'[{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]',
        b'{"info": {"id": "ses_1"}, "messages": []}',
        b"[]",
        b"not json",
    ],
    ids=["chat", "ui-messages", "empty-export", "empty-list", "not-json"],
)
def test_other_files_are_refused_with_a_reason(data: bytes) -> None:
    with pytest.raises(FormatError) as caught:
        opencode.parse(data)
    assert str(caught.value)


def test_sniff_knows_opencode_and_the_ai_sdk_does_not_take_its_exports() -> None:
    assert opencode.sniff(read(INTERRUPTED)[:65536]) == 0.95
    assert opencode.sniff(read(RECORDS)[:65536]) == 0.95
    assert opencode.sniff(b'[{"role": "user", "content": "hi"}]') == 0
    ui = CORPUS / "ai-sdk"
    for path in files(ui):
        assert opencode.sniff(read(path)[:65536]) == 0
    assert load(read(INTERRUPTED)).format == "opencode"


# --- damaged sessions -------------------------------------------------------------------

SEEDS = [
    read(INTERRUPTED),
    export(
        user("msg_a", "go"),
        assistant(
            "msg_b",
            STEP,
            text("a"),
            tool("c1", "completed"),
            tool("c1", "running"),
            STEP,
            tool("", "pending", inp='{"x'),
            FINISH,
        ),
        assistant("msg_c", STEP, text(" ")),
        user("msg_d", "more"),
    ),
]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged(SEEDS))
def test_damaged_sessions_are_repaired_into_sessions_that_need_no_more(data: bytes) -> None:
    check_written_back(data)


# --- agents-b (issue 27): one message per line ---
LINES_BROKEN = CORPUS / "opencode" / "derived__lines-interrupted.opencode.jsonl"
LINES_HEALTHY = CORPUS / "opencode" / "derived__lines-healthy.opencode.jsonl"
# The same session as OpenCode's own export of it, a message a line: the same findings.
SESSION_FINDINGS[LINES_BROKEN.name] = SESSION_FINDINGS[TOOL_EXPORT.name]


def _running_tools(data: bytes) -> list[str]:
    """Counted from the lines alone: tool parts left pending or running."""
    return [
        part["callID"]
        for line in data.splitlines()
        for part in orjson.loads(line)["parts"]
        if part.get("type") == "tool" and part["state"]["status"] in ("pending", "running")
    ]


def test_a_session_one_message_a_line_is_read_as_opencode_and_kept_byte_for_byte():
    data = read(LINES_HEALTHY)
    parsed = load(data)
    assert (parsed.format, parsed.meta["container"]) == ("opencode", "lines")
    assert repair(parsed).actions == []
    assert opencode.serialise(list(parsed.messages), parsed) == data


def test_a_cut_session_one_message_a_line_is_repaired_in_its_own_line_only():
    data = read(LINES_BROKEN)
    parsed = load(data)
    missing = _running_tools(data)
    actions = repair(parsed).actions
    assert sorted(a.call_id for a in actions if a.rule == "PAIR-1") == sorted(missing)
    written = opencode.serialise(repair(parsed).messages, parsed)
    again = opencode.parse(written)
    assert again.meta["container"] == "lines"
    assert repair(again).actions == []
    before, after = data.splitlines(), written.splitlines()
    changed = [n for n, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 1  # the message holding the two running tools
    assert _running_tools(written) == []


def test_a_line_that_is_not_an_opencode_message_refuses_the_file():
    data = read(LINES_HEALTHY) + b'{"type": "summary", "text": "later"}\n'
    with pytest.raises(FormatError, match="not an OpenCode message") as caught:
        load(data)
    assert caught.value.unread


def _stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def test_the_timeline_shows_each_steps_time_model_and_tokens_as_opencode_wrote_them() -> None:
    parsed = load(read(TOOL_EXPORT), "opencode")
    export = orjson.loads(read(TOOL_EXPORT))
    facts = message_facts(parsed)
    assert len(facts) == len(parsed.messages)
    times = {m["info"]["time"]["created"] for m in export["messages"]}
    ends = {
        p["state"]["time"]["end"]
        for m in export["messages"]
        for p in m["parts"]
        if p["type"] == "tool" and "end" in p["state"].get("time", {})
    }
    for message, fact in zip(parsed.messages, facts, strict=True):
        assert fact is not None
        assert fact["at"] in {_stamp(t) for t in (ends if message["role"] == "tool" else times)}
        if message["role"] == "assistant":
            assert fact["model"] in {m["info"].get("modelID") for m in export["messages"]}
    # Each step's step-finish tokens; a message of one step that never finished, its own.
    finished = []
    for m in export["messages"]:
        steps = [p["tokens"] for p in m["parts"] if p["type"] == "step-finish"]
        if not steps and m["info"]["role"] == "assistant" and "tokens" in m["info"]:
            steps = [m["info"]["tokens"]]
        finished.extend(steps)
    assert sum(f["tokens_out"] or 0 for f in facts if f) == sum(
        t["output"] + t["reasoning"] for t in finished
    )
    assert sum(f["tokens_in"] or 0 for f in facts if f) == sum(
        t["input"] + t["cache"]["read"] + t["cache"]["write"] for t in finished
    )
    assert sum(f.get("cache_read") or 0 for f in facts if f) == sum(
        t["cache"]["read"] for t in finished
    )


def test_a_session_one_message_a_line_shows_the_same_facts_as_its_export() -> None:
    lines = FOLDER / "derived__lines-healthy.opencode.jsonl"
    from_lines = message_facts(load(read(lines), "opencode"))
    assert from_lines == message_facts(load(read(HEALTHY), "opencode"))
    assert any(f and f["tokens_out"] for f in from_lines)


def test_without_step_finish_one_step_has_its_messages_tokens_and_two_steps_none() -> None:
    export = orjson.loads(read(HEALTHY))
    one, two = [m for m in export["messages"] if m["info"]["role"] == "assistant"][:2]
    for message in (one, two):
        message["parts"] = [p for p in message["parts"] if p["type"] != "step-finish"]
    two["parts"] = two["parts"] + [{**two["parts"][0], "id": two["parts"][0]["id"] + "x"}]
    two["info"]["time"]["created"] = 2**62  # no time a clock can show
    parsed = load(orjson.dumps(export), "opencode")
    facts = message_facts(parsed)
    by_message = {}
    for origin, fact in zip(parsed.state.origin, facts, strict=True):
        if origin.kind == "assistant":
            by_message.setdefault(parsed.state.messages[origin.message].info["id"], fact)
    tokens = one["info"]["tokens"]
    assert by_message[one["info"]["id"]]["tokens_out"] == tokens["output"] + tokens["reasoning"]
    assert by_message[two["info"]["id"]]["tokens_out"] is None
    assert by_message[two["info"]["id"]]["at"] is None
