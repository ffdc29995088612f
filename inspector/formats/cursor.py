"""Cursor's agent transcripts (``~/.cursor/projects/<workspace>/agent-transcripts/``).

Cursor (the IDE's agent and the ``cursor-agent`` CLI) mirrors each
conversation into ``agent-transcripts/<id>/<id>.jsonl`` (older builds:
``agent-transcripts/<id>.jsonl``; subagents under ``subagents/``), one line
a message, written by its ``TranscriptStore`` (``formatSingleMessageJsonl``):

- ``{"role": "user" | "assistant", "message": {"content": [...]}}`` whose
  blocks are ``{"type": "text", "text"}`` (an assistant's thinking is folded
  into its text, a redacted one as ``[REDACTED]``; images and files as
  ``[Image]`` / ``[File: name]``) and ``{"type": "tool_use", "name",
  "input"}`` (some readers' samples also hold ``thinking`` blocks, string
  content and system lines: read as they are);
- ``{"type": "turn_ended", "status": "success" | "error" | "aborted",
  "error"?}`` after a turn;
- ``{"type": "metadata", "metadata": {"overview"}}`` as the first line,
  sometimes.

Tool calls carry no id and their results are never written (tool messages
have no text, so ``formatSingleMessageJsonl`` leaves them out): the file
cannot say whether a call was answered. So a ``tool_use`` block is read as a
content part of its own, ``{"type": "cursor_tool_use", "name", "input"}``,
never as a call: reading it as one would make every call look unanswered and
a repair invent a result for each. ``meta["calls_without_results"]`` counts
them. Conversations are in Cursor's own store; this file is a mirror Cursor
rewrites from it, and does not read back.

Reading (``parse``)
-------------------
- Each message line is one canonical message; its text blocks are text
  parts. ``sources`` are 1-based line numbers.
- ``turn_ended`` with ``aborted`` gives the message before it the cause
  ``"user_stop"``, with ``error`` ``"api_error"``; turns are listed in
  ``meta["turns_ended"]``; ``metadata`` is ``meta["overview"]``.
- A line that is not JSON is a ``Problem``, as in every JSONL reader; a
  record this reader does not know (another ``type``, another role, a block
  of another type, a message without ``content``) makes it refuse the file
  (``FormatError`` naming the line and the field; after a Cursor line,
  ``unread``: no other shape is tried): a guess would read blanks.

Cursor's two other layouts of the same transcript, plain text (``.txt``,
what older builds write) and JSON (``.json``, ``{"mode", "messages":
[{"role", "text", "thinking", "toolCalls"}]}``), are refused with a reason
(``unread``), never read as another shape's blank messages.

Writing (``serialise``)
-----------------------
An unchanged transcript comes back byte for byte (a glued line split in
two). Otherwise every line whose message did not change is written as it
was, with the non-message lines in their places; a note the repair added is
a user line. A tool result cannot be written: the shape has none.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from inspector.formats.base import FormatError, Parsed
from inspector.formats.jsonl import (
    Record,
    head_records,
    read_jsonl,
)
from inspector.formats.private import REC, Message, public
from inspector.formats.private import metadata as _md
from inspector.formats.records import ANY_ROLE, DROP, LogState, RecordWriter

NAME = "cursor"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Cursor agent transcript (JSONL)"
EXTENSION = "jsonl"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 140

# The part a tool_use block becomes: a call the file records without an id or a result.
TOOL_PART = "cursor_tool_use"

# The formatter leaves system messages out; a system line (some builds, hand edits) is read.
_ROLES = ("user", "assistant", "system")
_MARKS = ("turn_ended", "metadata")
_CAUSES = {"aborted": "user_stop", "error": "api_error"}
# The JSON layout's "mode" (``agentModeToString``).
_JSON_MODE = re.compile(
    rb'^\{\s*"mode"\s*:\s*"(agent|ask|plan|debug|triage|project|multitask|custom)"'
)
_OTHER_LAYOUTS = {
    "txt": "this is Cursor's plain-text transcript (.txt: 'user:' / 'assistant:' blocks,"
    " '[Tool call]' lines), which cannot be read back into messages exactly; newer Cursor"
    " builds write a .jsonl transcript beside it, which this tool reads",
    "json": "this is Cursor's JSON transcript (.json: 'text' and 'toolCalls' without ids, tool"
    " results without their content), which this tool does not read; the .jsonl transcript"
    " Cursor writes beside it is read",
}


def _other_layout(head: bytes) -> str:
    """Which of Cursor's two other transcript layouts ``head`` starts, or ""."""
    start = head.lstrip()[:4096]
    if start.startswith(b"user:\n") and b"<user_query>" in start:
        return "txt"
    if start.startswith(b"{") and _JSON_MODE.search(start) and b'"messages"' in start:
        return "json"
    return ""


def sniff(head: bytes) -> float:
    """Cursor's message lines and marks: every record one (sure), or most of them.

    A file most of whose lines are Cursor's is still tried first, so that the
    lines this reader cannot read refuse it (``unread``) instead of another
    shape reading it.
    """
    if _other_layout(head):
        return 0.9  # claimed, to be refused with a reason (``parse``)
    records = head_records(head)
    ours = [r for r in records if _is_line(r)]
    if not any("role" in r for r in ours):
        return 0.0
    if len(ours) == len(records):
        return 0.95
    return 0.8 if 2 * len(ours) > len(records) else 0.0


def _is_line(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    if "role" in record:
        message = record.get("message")
        return (
            set(record) == {"role", "message"}
            and record["role"] in _ROLES
            and isinstance(message, dict)
            and isinstance(message.get("content"), list | str)
        )
    return set(record) <= {"type", "status", "error", "metadata"} and record.get("type") in _MARKS


def parse(data: bytes) -> Parsed:
    layout = _other_layout(data[:4096])
    if layout:
        raise FormatError(_OTHER_LAYOUTS[layout], unread=True)
    read = read_jsonl(data)
    messages: list[Message] = []
    sources: list[list[int]] = []
    causes: dict[int, str] = {}
    meta: dict[str, Any] = {"calls_without_results": 0, "turns_ended": []}
    for rec, record in enumerate(read.records):
        if not record.ok:
            continue  # named in read.problems
        try:
            _read(record, rec, messages, sources, causes, meta)
        except FormatError as exc:
            # After a Cursor line the file is Cursor's: refused as unread, never guessed at.
            sure = bool(messages or meta["turns_ended"] or "overview" in meta)
            raise FormatError(str(exc), unread=sure) from None
    if not messages:
        raise FormatError("no line holds a Cursor message ('role' and 'message.content')")
    state = LogState.of(data, read)
    return Parsed(NAME, messages, sources, read.problems, causes=causes, meta=meta, state=state)


def _read(
    record: Record,
    rec: int,
    messages: list[Message],
    sources: list[list[int]],
    causes: dict[int, str],
    meta: dict[str, Any],
) -> None:
    value = record.value
    line = record.line
    if not isinstance(value, dict):
        raise FormatError(f"line {line}: a record that is not an object")
    if "role" in value:
        message = _message(value, line, meta)
        message["metadata"][REC] = rec
        messages.append(message)
        sources.append([line])
        return
    kind = value.get("type")
    if kind == "turn_ended":
        status = value.get("status")
        meta["turns_ended"].append({"line": line, "status": status})
        cause = _CAUSES.get(status) if isinstance(status, str) else None
        if cause is not None and messages:
            causes[len(messages) - 1] = cause
    elif kind == "metadata" and isinstance(value.get("metadata"), dict):
        meta["overview"] = value["metadata"].get("overview")
    elif "type" in value:
        raise FormatError(f"line {line}: a record of type {kind!r} this reader does not know")
    else:
        keys = ", ".join(sorted(map(str, value))) or "none"
        raise FormatError(f"line {line}: a record with no 'role' or 'type' (keys: {keys})")


def _message(value: dict[str, Any], line: int, meta: dict[str, Any]) -> Message:
    role = value["role"]
    if role not in _ROLES:
        raise FormatError(f"line {line}: role {role!r} is not one Cursor writes")
    body = value.get("message")
    content = body.get("content") if isinstance(body, dict) else None
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise FormatError(f"line {line}: 'message.content' is not a list of blocks")
    parts: list[Any] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            parts.append({"type": "thinking", "thinking": block["thinking"]})
        elif kind == "tool_use" and role == "assistant" and isinstance(block.get("name"), str):
            parts.append({"type": TOOL_PART, "name": block["name"], "input": block.get("input")})
            meta["calls_without_results"] += 1
        else:
            what = f"of type {kind!r}" if kind is not None else "that is not a typed object"
            raise FormatError(f"line {line}: a {role} content block {what} this reader cannot read")
    return {"role": role, "content": parts, "metadata": {}}


class _Writer(RecordWriter[LogState]):
    STATE = LogState
    # One line, one message: it keeps its line whatever role the repair gave it.
    ROLE_CHANGES = dict.fromkeys(_ROLES, ANY_ROLE)
    UNGLUES = True
    KEEPS_UNREADABLE = False

    def __init__(self, state: LogState, before: list[Message]) -> None:
        super().__init__(state, before)
        self.index = {_md(m)[REC]: n for n, m in enumerate(before)}  # record -> message
        self.at = -1  # the last message line kept in its place

    def source(self, m: Message) -> int | None:
        rec = _md(m).get(REC)
        return self.index.get(rec) if isinstance(rec, int) else None

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        rec = _md(self.before[src])[REC]
        same = public(self.before[src]) == public(m)
        if moved:  # written where it now stands
            self.changed[rec] = DROP
            self.insert(self.at, self.state.records[rec].raw if same else _line(m))
        else:
            self.at = rec
            if not same:
                self.changed[rec] = _line(m)

    def on_new(self, m: Message) -> None:
        self.insert(self.at, _line(m))

    def on_dropped(self, src: int) -> None:
        self.changed[_md(self.before[src])[REC]] = DROP


serialise = _Writer.serialise


def _line(m: Message) -> dict[str, Any]:
    role = m.get("role")
    if role not in _ROLES:
        raise FormatError("a Cursor transcript holds no tool results, so none can be written")
    content = m.get("content")
    blocks: list[Any] = []
    for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == TOOL_PART:
            name, arguments = part.get("name"), part.get("input")
            blocks.append({"type": "tool_use", "name": name, "input": arguments})
        elif part.get("type") == "text":
            blocks.append({"type": "text", "text": part.get("text", "")})
        elif part.get("type") == "thinking":
            blocks.append({"type": "thinking", "thinking": part.get("thinking", "")})
        else:
            blocks.append({"type": "text", "text": orjson.dumps(part).decode()})
    return {"role": role, "message": {"content": blocks}}
