"""Cursor agent transcripts: read as Cursor writes them, never as blank OpenAI Chat messages."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from inspector.formats import FORMATS, FormatError, cursor, load
from inspector.formats.jsondoc import text_of
from inspector.formats.private import calls_of
from tests.formats.shapes import check_written_back, damaged, examples, repair
from tests.testdata import CORPUS, files, read

TRANSCRIPTS = files(CORPUS / "cursor")
REAL = CORPUS / "cursor" / "Tdexixi-code-with-ai-contest__cursor_agent_transcript.jsonl"


def line(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "message": {"content": list(blocks)}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": args}


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


TRANSCRIPT = jsonl(
    {"type": "metadata", "metadata": {"overview": "Fixing the build"}},
    line("user", text("<user_query>\nbuild it\n</user_query>")),
    line("assistant", text("Building.\n\n[REDACTED]"), use("Shell", command="make")),
    line("assistant", text("It builds.")),
    {"type": "turn_ended", "status": "success"},
    line("user", text("<user_query>\nnow test\n</user_query>")),
    line("assistant", text("[REDACTED]"), use("Shell", command="make test")),
    {"type": "turn_ended", "status": "aborted", "error": "User aborted/interrupted manually."},
)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
def test_real_transcript_loads_as_cursor_with_every_reply_kept(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "cursor"
    assert parsed.problems == []
    assert all(text_of(m["content"]).strip() for m in parsed.messages)
    assert repair(parsed).actions == []
    assert cursor.serialise(list(parsed.messages), parsed) == data


def test_the_real_transcript_has_its_calls_as_parts_and_no_finding():
    parsed = load(read(REAL))
    roles = [m["role"] for m in parsed.messages]
    assert (len(roles), roles.count("assistant")) == (56, 50)
    assert parsed.meta["calls_without_results"] == 26
    parts = [p for m in parsed.messages for p in m["content"] if p["type"] == cursor.TOOL_PART]
    assert len(parts) == 26
    assert parts[0]["name"] == "Read"
    assert not any(calls_of(m) for m in parsed.messages)


def test_calls_without_ids_or_results_are_shown_not_paired():
    parsed = cursor.parse(TRANSCRIPT)
    roles = [m["role"] for m in parsed.messages]
    assert roles == ["user", "assistant", "assistant", "user", "assistant"]
    reply = parsed.messages[1]
    assert reply["content"] == [
        {"type": "text", "text": "Building.\n\n[REDACTED]"},
        {"type": cursor.TOOL_PART, "name": "Shell", "input": {"command": "make"}},
    ]
    assert repair(parsed).actions == []
    assert parsed.meta["overview"] == "Fixing the build"
    assert [t["status"] for t in parsed.meta["turns_ended"]] == ["success", "aborted"]
    assert parsed.sources[0] == [2]


def test_an_aborted_turn_is_a_user_stop_on_its_last_reply():
    parsed = cursor.parse(TRANSCRIPT)
    assert parsed.causes == {len(parsed.messages) - 1: "user_stop"}
    errored = jsonl(line("user", text("go")), {"type": "turn_ended", "status": "error"})
    assert cursor.parse(errored).causes == {0: "api_error"}


def test_sniff_sees_cursor_lines_and_nothing_else():
    assert cursor.sniff(TRANSCRIPT) == 0.95
    assert cursor.sniff(read(REAL)) == 0.95
    claude = CORPUS / "claude-code" / "files" / "johejo-hocage__real_session.jsonl"
    assert cursor.sniff(read(claude)) == 0
    assert cursor.sniff(b'{"role": "user", "content": "hi"}\n') == 0
    assert cursor.sniff(jsonl({"type": "turn_ended", "status": "success"})) == 0
    assert load(TRANSCRIPT).format == "cursor"


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"type": "checkpoint", "id": 1}, "type 'checkpoint'"),
        (line("tool", text("x")), "role 'tool'"),
        (line("assistant", {"type": "image", "src": "x.png"}), "type 'image'"),
        ({"role": "user", "message": {}}, "message.content"),
        ({"note": "x"}, "keys: note"),
        (["a"], "not an object"),
    ],
    ids=["type", "role", "block", "content", "untyped", "list"],
)
def test_a_record_this_reader_does_not_know_refuses_the_file_naming_it(record, field):
    data = jsonl(line("user", text("go")), record)
    with pytest.raises(FormatError, match=field) as caught:
        cursor.parse(data)
    assert "line 2" in str(caught.value)


def test_a_cut_last_line_is_reported_and_the_rest_read():
    data = TRANSCRIPT + b'{"role":"assistant","message":{"content":[{"type":"te'
    parsed = cursor.parse(data)
    assert [p.kind for p in parsed.problems] == ["truncated"]
    assert len(parsed.messages) == 5


def test_a_note_is_written_as_a_user_line_and_every_other_line_stays():
    parsed = cursor.parse(TRANSCRIPT)
    note = {"role": "user", "content": "[note: checked by hand]", "metadata": {}}
    messages = [*parsed.messages[:2], note, *parsed.messages[2:]]
    written = cursor.serialise(messages, parsed)
    lines = TRANSCRIPT.splitlines()
    out = written.splitlines()
    assert out[:3] == lines[:3]
    assert orjson.loads(out[3]) == line("user", text("[note: checked by hand]"))
    assert out[4:] == lines[3:]
    again = cursor.parse(written)
    assert [text_of(m["content"]) for m in again.messages][2] == "[note: checked by hand]"


def test_a_dropped_message_loses_only_its_line():
    parsed = cursor.parse(TRANSCRIPT)
    written = cursor.serialise([m for i, m in enumerate(parsed.messages) if i != 2], parsed)
    assert written.splitlines() == [x for i, x in enumerate(TRANSCRIPT.splitlines()) if i != 3]


def test_a_tool_result_cannot_be_written_into_a_transcript_that_has_none():
    parsed = cursor.parse(TRANSCRIPT)
    result = {"role": "tool", "content": "ok", "metadata": {"tool_call_id": "x"}}
    with pytest.raises(FormatError, match="no tool results"):
        cursor.serialise([*parsed.messages, result], parsed)


def test_the_shape_is_registered():
    assert FORMATS["cursor"] is cursor


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([TRANSCRIPT, read(REAL)]))
def test_damaged_transcripts_are_repaired_into_transcripts_that_need_no_more(data: bytes) -> None:
    check_written_back(data)


def test_load_refuses_a_transcript_it_cannot_read_instead_of_guessing_another_shape():
    odd = {"role": "assistant", "content": "as OpenAI would"}
    data = jsonl(line("user", text("go")), line("assistant", text("ok")), odd)
    with pytest.raises(FormatError, match="line 3") as caught:
        load(data)
    assert caught.value.unread
    assert "Cursor" in str(caught.value)
    # The first line alone says nothing of Cursor: then other shapes are tried.
    assert not cursor.sniff(jsonl({"role": "user", "content": "hi"}))


# Cursor's TranscriptStore writes the same conversation as text and as JSON too.
TEXT_LAYOUT = (
    b"user:\n<user_query>\nbuild it\n</user_query>\n\nassistant:\n[Thinking] plan\nBuilding."
    b"\n[Tool call] Shell\n  command: make\n\n[Tool result] Shell\n\nTurn ended: success."
)
JSON_LAYOUT = orjson.dumps(
    {
        "mode": "agent",
        "messages": [
            {"role": "user", "text": "<user_query>\nbuild it\n</user_query>"},
            {"role": "assistant", "text": "Building.", "toolCalls": [{"toolName": "Shell"}]},
            {"role": "tool", "toolResult": {"toolName": "Shell"}},
        ],
        "turnEnded": {"status": "success"},
    },
    option=orjson.OPT_INDENT_2,
)


@pytest.mark.parametrize(
    ("data", "words"), [(TEXT_LAYOUT, "plain-text"), (JSON_LAYOUT, "JSON")], ids=["txt", "json"]
)
def test_cursors_other_layouts_are_refused_with_a_reason_not_read_as_blanks(data, words):
    assert cursor.sniff(data) == 0.9
    with pytest.raises(FormatError, match=words) as caught:
        load(data)
    assert caught.value.unread
    assert ".jsonl" in str(caught.value)


def test_thinking_blocks_string_content_and_system_lines_are_read_as_they_are():
    data = jsonl(
        {"role": "system", "message": {"content": "be brief"}},
        {"role": "user", "message": {"content": "hello cursor"}},
        line("assistant", {"type": "thinking", "thinking": "plan"}, text("hi"), use("Read")),
    )
    parsed = load(data)
    assert parsed.format == "cursor"
    assert [(m["role"], text_of(m["content"])) for m in parsed.messages] == [
        ("system", "be brief"),
        ("user", "hello cursor"),
        ("assistant", "hi"),
    ]
    assert parsed.messages[2]["content"][0] == {"type": "thinking", "thinking": "plan"}
    assert repair(parsed).actions == []
