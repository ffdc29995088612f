"""Other agents' files are read by their own reader or refused, never read as a generic shape.

Read on a guess, such a file comes out as blank messages (their content sits
in fields the shape does not have) or as calls that are never answered (their
answers are written some other way), and a repair would drop every message or
invent a result for every call. Each sniff needs the fields that make its
shape, each reader refuses records that keep their content elsewhere, and a
read whose messages are all blank is refused by the loader. Cursor's and
Cline's files have readers of their own (``cursor``, ``cline``); every other
shape must still refuse them, and a layout of theirs that no reader knows is
refused by all.

The inputs are small and written here, in the layouts the agents write:

- Cursor's agent transcripts (``~/.cursor/projects/<p>/agent-transcripts/<id>/<id>.jsonl``):
  one ``{"role", "message": {"content": [...]}}`` a line, tool_use blocks
  without ids and no results, as the public readers of those files quote them
  in their tests;
- Cline's and Roo Code's task history (``api_conversation_history.json``):
  Anthropic messages whose tools are answered by the next user message's text,
  ``[read_file for 'x'] Result:``, as a real 1.4 MB session in
  mike4567/MRA04242026 (commit 7644913) has them: 231 calls, no tool_result,
  223 answered that way.
"""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.engine.canonical import is_blank
from inspector.formats import FORMATS, FormatError, load
from inspector.formats.base import Parsed


def lines(*records: object) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def cursor(role: str, *blocks: dict) -> dict:
    return {"role": role, "message": {"content": list(blocks)}}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


CURSOR = {
    "text": lines(
        cursor("user", text("<user_query>\nrun ls command\n</user_query>")),
        cursor("assistant", text("Running it.")),
    ),
    "thinking and tools": lines(
        cursor("user", text("<user_query>hello cursor</user_query>")),
        cursor(
            "assistant",
            {"type": "thinking", "thinking": "plan"},
            text("hi"),
            {"type": "tool_use", "name": "Read", "input": {"path": "a.go"}},
        ),
        cursor("assistant", {"type": "tool_use", "name": "CallMcpTool", "input": {}}),
    ),
    "string content": lines(
        cursor("user", text("Hello cursor")),
        {"role": "system", "message": {"content": "system prompt"}},
    ),
    "one line": lines(cursor("assistant", text("ok"))),
    "as a list": orjson.dumps([cursor("user", text("fix it")), cursor("assistant", text("done"))]),
}


def cline_history(answered_in_text: bool = True) -> bytes:
    """Cline's task history: tools answered in the next user message's text."""

    def use(cid: str, name: str, **arguments: str) -> dict:
        return {"type": "tool_use", "id": cid, "name": name, "input": arguments}

    def answer(label: str, output: str) -> dict:
        said = f"[{label}] Result:\n{output}" if answered_in_text else output
        return {"role": "user", "content": [text(said), text("<environment_details>\n...")]}

    return orjson.dumps(
        [
            {"role": "user", "content": [text("<task>\nfix the login page\n</task>")]},
            {
                "role": "assistant",
                "content": [text("Reading it."), use("t1", "read_file", path="a.ts")],
            },
            answer("read_file for 'a.ts'", "export const login = () => {}"),
            {
                "role": "assistant",
                "content": [use("t2", "execute_command", command="ls [a-z]*\nls")],
            },
            answer("execute_command for 'ls [a-z]*\nls'", "a.ts"),
            {"role": "assistant", "content": [use("t3", "attempt_completion", result="done")]},
        ]
    )


def blank_from_content(parsed: Parsed) -> list[int]:
    """Messages read blank (no content, call or result): what a misread record becomes."""
    return [
        i
        for i, m in enumerate(parsed.messages)
        if m["role"] != "tool"
        and not (m.get("metadata") or {}).get("tool_calls")
        and is_blank(m.get("content"))
    ]


# The layouts Cursor's own reader takes; the JSON list is none of Cursor's.
CURSOR_READ = [sample for sample in CURSOR if sample != "as a list"]


@pytest.mark.parametrize("sample", CURSOR_READ, ids=str)
def test_a_cursor_transcript_is_read_as_cursor_and_refused_as_chat(sample: str):
    parsed = load(CURSOR[sample])
    assert parsed.format == "cursor"
    assert blank_from_content(parsed) == []
    # The reader its roles would have fooled names the line and the field it could not read.
    with pytest.raises(FormatError) as refused:
        load(CURSOR[sample], "openai-chat")
    assert "without 'content'" in str(refused.value)
    assert "an user" not in str(refused.value)
    assert "'message'" in str(refused.value)


def test_a_cursor_like_layout_no_reader_knows_is_refused_saying_what_was_tried():
    with pytest.raises(FormatError) as refused:
        load(CURSOR["as a list"])
    assert {name for name, _ in refused.value.attempts} == set(FORMATS)
    reasons = dict(refused.value.attempts)
    assert "without 'content'" in reasons["openai-chat"]
    assert "'message'" in reasons["openai-chat"]


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("sample", [*CURSOR, "cline"], ids=str)
def test_no_shape_reads_another_agents_file_as_blank_messages_or_dangling_calls(
    name: str, sample: str
):
    data = cline_history() if sample == "cline" else CURSOR[sample]
    own = "cline" if sample == "cline" else "cursor"
    try:
        parsed = formats.load(data, name)
    except FormatError:
        assert name != own or sample == "as a list", "its own reader refused it"
        return
    assert blank_from_content(parsed) == []
    # Only the agent's own reader may find a call unanswered: the sample's last
    # attempt_completion really is (Cline answers the others in text).
    expected = 1 if name == own == "cline" else 0
    assert diagnose(parsed).counts.get("PAIR-1", 0) == expected, "calls read as never answered"


def test_the_openai_chat_sniff_needs_content_beside_the_role():
    chat = FORMATS["openai-chat"]
    assert chat.sniff(CURSOR["text"]) < 0.1
    assert chat.sniff(CURSOR["as a list"]) < 0.1
    real = lines({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"})
    assert chat.sniff(real) >= 0.5


def test_a_chat_line_without_content_refuses_the_file_naming_the_line():
    data = lines({"role": "user", "content": "hi"}, cursor("assistant", text("hello")))
    with pytest.raises(FormatError, match=r"line 2: an assistant message without 'content'"):
        load(data, "openai-chat")


def test_a_canonical_message_without_content_that_holds_other_fields_is_refused():
    data = orjson.dumps([{"role": "user", "content": "hi"}, cursor("assistant", text("x"))])
    with pytest.raises(FormatError, match=r"message 2: .*'message'"):
        load(data, "canonical")
    # One without content and nothing else is an empty message, as written.
    assert load(orjson.dumps([{"role": "user", "content": "hi"}, {"role": "user"}]), "canonical")


def test_messages_blank_in_the_file_are_still_read_and_dropped_as_placeholders():
    data = orjson.dumps(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""},
            {"role": "assistant", "content": "hello"},
        ]
    )
    parsed = load(data, "openai-chat")
    assert diagnose(parsed).counts == {"MSG-1": 1}


def test_cline_history_is_read_as_cline_and_not_as_anthropic_with_invented_results():
    parsed = load(cline_history())
    assert parsed.format == "cline"
    assert diagnose(parsed).counts == {"PAIR-1": 1}
    with pytest.raises(FormatError, match="not an Anthropic Messages history") as refused:
        load(cline_history(), "anthropic")
    assert "3 tool_use blocks and not one tool_result" in str(refused.value)
    assert "2 of them are answered in plain text" in str(refused.value)


def test_calls_never_answered_though_the_talk_goes_on_are_refused_too():
    with pytest.raises(FormatError, match="the conversation goes on after 2 of the turns"):
        load(cline_history(answered_in_text=False), "anthropic")


def test_a_real_anthropic_history_with_one_dangling_call_is_still_repaired():
    data = orjson.dumps(
        [
            {"role": "user", "content": "find it"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}],
            },
            {"role": "user", "content": "stop, try again"},
        ]
    )
    parsed = load(data)
    assert parsed.format == "anthropic"
    assert diagnose(parsed).counts == {"PAIR-1": 1}


def test_the_loader_refuses_a_read_whose_every_message_is_blank(monkeypatch: pytest.MonkeyPatch):
    def parse(data: bytes) -> Parsed:
        blank = {"role": "assistant", "content": "", "metadata": {}}
        return Parsed("guess", [blank, dict(blank)], [[1], [2]])

    guess = SimpleNamespace(NAME="guess", sniff=lambda head: 1.0, parse=parse)
    monkeypatch.setitem(FORMATS, "guess", guess)
    with pytest.raises(FormatError, match="every one of the 2 messages read is empty"):
        load(b'{"x": 1}', "guess")
