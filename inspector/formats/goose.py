"""Goose's sessions (block/goose): the JSON Lines files of versions before its database,
and what ``goose session export --format json`` writes.

Goose kept each session as ``sessions/<name>.jsonl`` under its data folder
(``~/.local/share/goose/``; ``$XDG_DATA_HOME/goose``): a first line of
session metadata (``working_dir``, ``description``, ``message_count``,
``total_tokens``, ``accumulated_*_tokens``, ...), then one ``Message`` a line
as serde writes it (``crates/goose/src/conversation/message.rs``)::

    {"id"?, "role": "user" | "assistant", "created": <unix seconds>,
     "content": [...], "metadata"?: {"userVisible", "agentVisible"}}

Content items, by ``type``: ``text`` (``text``), ``image`` (``data``,
``mimeType``), ``thinking`` (``thinking``, ``signature``),
``redactedThinking`` (``data``), ``toolRequest`` and ``frontendToolRequest``
(``id``, ``toolCall``: ``{"status": "success", "value": {"name",
"arguments"}}`` or ``{"status": "error", "error"}``), ``toolResponse``
(``id``, ``toolResult``: ``{"status": "success", "value": [content...] |
{"content": [...], "isError"}}`` or ``{"status": "error", "error"}``), and
Goose's own notes (``toolConfirmationRequest``, ``systemNotification``,
``contextLengthExceeded``, ``summarizationRequested``, ``conversationCompacted``,
``actionRequired``), which are kept as they are and not sent to a model.
Newer Goose moved sessions into a database (``sessions.db``), importing these
files once; ``local/goose_db.py`` reads and fixes that one.

An export (``crates/goose-cli/src/commands/session.rs``,
``handle_session_export``) is ``serde_json::to_string_pretty`` of the
``Session`` (``crates/goose/src/session/model.rs``): one object whose first
fields are ``id`` and ``working_dir``, then ``name``, ``created_at``, the
token counts (newer Goose nests them in ``usage`` / ``accumulated_usage``),
... and ``conversation``, the list of those same ``Message`` objects (printed
with a final newline, or written by ``--output`` without one). Newer Goose
writes a successful result's ``value`` as ``CallToolResult`` (``{"content":
[...], "isError"}``) and still reads the older content list.
``goose session import <file>`` reads one back into a new session
(``serde_json::from_str::<Session>``, its conversation replacing the new
one's). The ``--format yaml`` and ``markdown`` exports are not read: the
markdown one does not hold the calls' ids, and a YAML one is read by no
reader here yet.

Reading (``parse``)
-------------------
- An export's ``conversation`` is read as a session file's message lines
  (``sources``: each message's 1-based place in it; ``meta["session"]``: the
  ``Session``'s other fields). An export cut short (not one JSON document),
  or without a conversation list, is refused as Goose's.
- A ``toolRequest`` is a call of the assistant message it is in; each
  ``toolResponse`` (Goose writes them in the user message after the call) is
  a tool message of its own, before the rest of that user message.
- A message whose ``metadata.agentVisible`` is false is not what Goose sends
  the model: kept in the file, not read (``meta["hidden_messages"]``).
- ``sources`` are 1-based line numbers; ``created`` is the timeline's time.
- A line that is not JSON is a ``Problem``, as in every JSONL reader. A
  record this reader does not know (another role, a content item of another
  type, a message without ``content``) refuses the file (``FormatError``
  naming the line; ``unread`` once a Goose line was seen): a guess would
  read blanks.

Writing (``serialise``)
-----------------------
The writer is a ``records.RecordWriter`` (the record-log base). An
unchanged session comes back byte for byte. Otherwise every line whose
messages did not change is written as it was, the metadata line and hidden
messages in their places; a changed line keeps its ``id``, ``created`` and
``metadata``. A result the repair adds is a ``toolResponse`` item (success,
its text as a text item: a ``CallToolResult`` where the file's results are
ones, else a content list as older Goose writes them) in the user line after
the call, or a new user line written as serde writes a new ``Message``
(``id`` null, ``created`` the line before's, ``metadata`` visible to both,
which Goose's reader requires). An export comes back as the ``Session``
object with its conversation so repaired, each untouched message as it was,
``message_count`` the conversation's, laid out as serde wrote it (indented
by two, or compact) and ending as it did; ``goose session import`` reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from inspector.formats.base import FormatError, Parsed, epoch_time
from inspector.formats.jsondoc import dump_like, read_json, text_of
from inspector.formats.jsonl import Record, RecordReader, head_records, read_jsonl
from inspector.formats.private import (
    REC,
    Message,
    by_origin,
    call_id,
    calls_of,
    metadata,
    origin,
    public,
)
from inspector.formats.records import DROP, LogState, RecordWriter

NAME = "goose"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Goose session (JSONL) or session export (JSON)"
EXTENSION = "jsonl"

# A Goose message is read with the content written in it: a blank one is blank in the file.
BLANK_IS_WRITTEN = True

_ROLES = ("user", "assistant")
_CALLS = ("toolRequest", "frontendToolRequest")
# Goose's own notes in a message: kept in the file and in the message, never sent.
_NOTES = (
    "toolConfirmationRequest",
    "systemNotification",
    "contextLengthExceeded",
    "summarizationRequested",
    "conversationCompacted",
    "actionRequired",
)
_KNOWN = ("text", "image", "thinking", "redactedThinking", "toolResponse", *_CALLS, *_NOTES)
# The part a Goose note is read as: its item, kept whole.
NOTE_PART = "goose_note"
# The keys of the session metadata line (``SessionMetadata``), any of which marks one.
_META_KEYS = frozenset(
    {
        "working_dir",
        "description",
        "schedule_id",
        "project_id",
        "message_count",
        "total_tokens",
        "input_tokens",
        "output_tokens",
        "accumulated_total_tokens",
        "accumulated_input_tokens",
        "accumulated_output_tokens",
        "extension_data",
        "recipe",
    }
)


# How ``goose session export --format json`` opens: serde's ``Session``, whose first
# fields are ``id`` then ``working_dir`` (pretty-printed, or compact as the API's export).
_EXPORT_OPEN = re.compile(
    rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"id"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"working_dir"\s*:'
)


def sniff(head: bytes) -> float:
    """An export (a ``Session`` object), or a metadata line then Goose messages (``created``
    and a list of typed items)."""
    if _EXPORT_OPEN.match(head):
        return 0.95
    records = head_records(head)
    if not records:
        return 0.0
    first = records[0]
    rest = records[1:] if _is_metadata(first) else records
    ours = [r for r in rest if _is_message(r)]
    if not ours and not (_is_metadata(first) and len(records) == 1):
        return 0.0
    if len(ours) == len(rest):
        return 0.95
    return 0.8 if 2 * len(ours) > len(rest) else 0.0


def _is_metadata(value: Any) -> bool:
    return isinstance(value, dict) and "role" not in value and "working_dir" in value


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("role") in _ROLES
        and isinstance(value.get("created"), int)
        and isinstance(value.get("content"), list)
    )


def parse(data: bytes) -> Parsed:
    doc = _export(data)
    if doc is not None:
        return _parse_export(data, doc)
    read = read_jsonl(data)
    reader = _Reader()
    reader.read_all(read)
    if not reader.messages:
        raise FormatError("no line holds a Goose message ('role', 'created', 'content')")
    meta: dict[str, Any] = {"hidden_messages": reader.hidden, "session": reader.session}
    if isinstance(reader.session.get("working_dir"), str):
        meta["cwd"] = reader.session["working_dir"]
    state = LineState(data, read.records, read.final_newline, read.crlf, by_origin(reader.messages))
    return Parsed(NAME, reader.messages, reader.sources, read.problems, meta=meta, state=state)


def _export(data: bytes) -> dict[str, Any] | None:
    """The ``Session`` object of an export, or None for a file of lines.

    A file that opens as an export but is not one JSON document (cut short)
    is refused: its messages cannot be told apart line by line.
    """
    opens = _EXPORT_OPEN.match(data) is not None
    if not opens and not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return None
    try:
        doc = read_json(data)
    except FormatError as exc:
        if opens:
            raise FormatError(f"a Goose session export that is {exc}", unread=True) from None
        return None  # lines, each its own document
    if not isinstance(doc, dict) or "working_dir" not in doc or "conversation" not in doc:
        if opens:
            raise FormatError("a Goose session export without 'conversation'", unread=True)
        return None
    return doc


def _parse_export(data: bytes, doc: dict[str, Any]) -> Parsed:
    """An export: its ``conversation``'s messages read as the lines of a session file."""
    conversation = doc["conversation"]
    if not isinstance(conversation, list):
        raise FormatError(
            "a Goose session export whose 'conversation' holds no messages", unread=True
        )
    records = [Record(n, b"", value) for n, value in enumerate(conversation, 1)]
    reader = _Reader("message")
    reader.sure = True  # the export's opening and its 'working_dir' say it is Goose's
    for rec, record in enumerate(records):
        try:
            reader.record(rec, record)
        except FormatError as exc:
            raise FormatError(f"the export's conversation, {exc}", unread=True) from None
    if not reader.messages:
        raise FormatError(
            "the export's conversation holds no message Goose sends the model", unread=True
        )
    session = {k: v for k, v in doc.items() if k != "conversation"}
    meta: dict[str, Any] = {"hidden_messages": reader.hidden, "session": session}
    if isinstance(doc.get("working_dir"), str):
        meta["cwd"] = doc["working_dir"]
    final_newline = data.endswith(b"\n")
    originals = by_origin(reader.messages)
    state = ExportState(data, records, final_newline, False, originals, doc=doc)
    return Parsed(NAME, reader.messages, reader.sources, [], meta=meta, state=state)


class _Reader(RecordReader):
    def __init__(self, unit: str = "line") -> None:
        # What a record is: a line (the first may be the session's metadata), or a message
        # of an export's conversation; a refusal names it so.
        self.unit = unit
        self.messages: list[Message] = []
        self.sources: list[list[int]] = []
        self.hidden: list[int] = []
        self.session: dict[str, Any] = {}
        super().__init__()

    def record(self, rec: int, record: Record) -> None:
        value, line = record.value, record.line
        if rec == 0 and self.unit == "line" and isinstance(value, dict) and "role" not in value:
            if not set(value) & _META_KEYS:
                keys = ", ".join(sorted(map(str, value))) or "none"
                raise FormatError(f"line {line}: not Goose's session metadata (keys: {keys})")
            self.session = value
            self.sure = "working_dir" in value
            return
        if not isinstance(value, dict):
            raise FormatError(f"{self.unit} {line}: a record that is not an object")
        role = value.get("role")
        if role not in _ROLES:
            raise FormatError(f"{self.unit} {line}: role {role!r} is not one Goose writes")
        content = value.get("content")
        if not isinstance(content, list):
            raise FormatError(f"{self.unit} {line}: a {role} message without a 'content' list")
        self.sure = self.sure or isinstance(value.get("created"), int)
        md = value.get("metadata")
        if isinstance(md, dict) and md.get("agentVisible") is False:
            self.hidden.append(line)
            return
        for message in _messages(role, content, f"{self.unit} {line}"):
            message["metadata"][REC] = rec
            self.messages.append(message)
            self.sources.append([line])


def _messages(role: str, content: list[Any], where: str) -> list[Message]:
    parts: list[Any] = []
    calls: list[dict[str, Any]] = []
    results: list[Message] = []
    for item in content:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in _KNOWN:
            what = f"of type {kind!r}" if kind is not None else "that is not a typed object"
            raise FormatError(f"{where}: a {role} content item {what} this reader cannot read")
        assert isinstance(item, dict)
        if kind == "text":
            if not isinstance(item.get("text"), str):
                raise FormatError(f"{where}: a text item without a string 'text'")
            parts.append({"type": "text", "text": item["text"]})
        elif kind == "thinking" and isinstance(item.get("thinking"), str):
            part = {"type": "thinking", "thinking": item["thinking"]}
            if isinstance(item.get("signature"), str):
                part["signature"] = item["signature"]
            parts.append(part)
        elif kind == "redactedThinking" and isinstance(item.get("data"), str):
            parts.append({"type": "redacted_thinking", "data": item["data"]})
        elif kind == "image" and isinstance(item.get("data"), str):
            media = item.get("mimeType") if isinstance(item.get("mimeType"), str) else "image/png"
            parts.append({"type": "image", "media_type": media, "data": item["data"]})
        elif kind in _CALLS and role == "assistant" and isinstance(item.get("id"), str):
            calls.append(_call(item))
        elif kind == "toolResponse" and role == "user" and isinstance(item.get("id"), str):
            results.append(_result(item, where))
        elif kind in _NOTES:
            parts.append({"type": NOTE_PART, "item": item})
        else:
            raise FormatError(f"{where}: a {role} {kind} item this reader cannot read")
    md: dict[str, Any] = {"tool_calls": calls} if calls else {}
    out = list(results)
    if parts or calls or not results:
        out.append({"role": role, "content": parts, "metadata": md})
    return out


def _call(item: dict[str, Any]) -> dict[str, Any]:
    found = item.get("toolCall")
    call: dict[str, Any] = found if isinstance(found, dict) else {}
    raw = call.get("value")
    value: dict[str, Any] = raw if isinstance(raw, dict) else {}
    name = value.get("name") if isinstance(value.get("name"), str) else ""
    return {"tool_call_id": item["id"], "name": name, "arguments": value.get("arguments", {})}


def _result(item: dict[str, Any], where: str) -> Message:
    found = item.get("toolResult")
    result: dict[str, Any] = found if isinstance(found, dict) else {}
    md: dict[str, Any] = {"tool_call_id": item["id"]}
    if result.get("status") == "error":
        md["is_error"] = True
        error = result.get("error")
        text = error if isinstance(error, str) else orjson.dumps(error).decode()
        return {"role": "tool", "content": text, "metadata": md}
    value = result.get("value")
    items = value.get("content") if isinstance(value, dict) else value
    if isinstance(value, dict) and value.get("isError") is True:
        md["is_error"] = True
    if not isinstance(items, list):
        raise FormatError(f"{where}: a toolResponse whose result holds no content list")
    texts = []
    for content in items:
        if isinstance(content, dict) and isinstance(content.get("text"), str):
            texts.append(content["text"])
        else:
            texts.append(orjson.dumps(content).decode())
    return {"role": "tool", "content": "\n".join(texts), "metadata": md}


# --------------------------------------------------------------------------- writing


@dataclass(slots=True)
class LineState(LogState):
    """The file as read, and the messages read from each of its records."""

    originals: dict[int, list[Message]] = field(default_factory=dict)


@dataclass(slots=True)
class ExportState(LineState):
    """An export as read: its ``conversation``'s messages are the records, ``doc`` the
    ``Session`` object around them."""

    doc: dict[str, Any] = field(default_factory=dict)


class LineGroupsWriter(RecordWriter[LineState]):
    """A writer for a log whose line holds several messages (Goose's user line: its results,
    then its words; Kiro's ``ToolResults`` line: its results).

    The walk gathers the repaired messages of each original line; a line whose
    messages changed is written again from them (``record``), one left with
    none is dropped. A result the repair made joins the line of results it
    stands in (after the line's own results, or before its first message),
    else goes in a new line with the other new results (and, where
    ``JOINS_NOTES``, the note after them). A shape says which lines take
    results (``answers``), how a line is written from its messages
    (``record``) and what a new line starts from (``template``).
    """

    STATE = LineState
    UNGLUES = True
    JOINS_NOTES: bool = True

    def __init__(self, state: LineState, before: list[Message]) -> None:
        super().__init__(state, before)
        self.groups: dict[int, list[Message]] = {}
        # The last original line met: at first the line before the first message's, so that
        # nothing goes before a line that holds none (Goose's metadata line comes first).
        self.at = min(state.originals, default=0) - 1
        self.pending: list[Message] = []  # new results not placed yet
        self.new: list[Message] | None = None  # the new line being filled
        self._moving: dict[int, int] = {}  # a line of moved messages (its id()): their line
        self._moved: list[list[Any]] = []  # each such line as inserted: [group, template]

    def answers(self, rec: int) -> bool:
        """Hook: whether original line ``rec`` is one a result goes in."""
        raise NotImplementedError

    def record(self, group: list[Message], template: Any) -> Any:
        """Hook: the line holding ``group``, from ``template`` (its original, or ``template()``)."""
        raise NotImplementedError

    def template(self) -> Any:
        """Hook: what a new line after the last original one met starts from."""
        return {}

    def source(self, m: Message) -> int | None:
        rec = origin(m)
        if rec is None:
            return None
        at = [n for n, b in enumerate(self.before) if origin(b) == rec and n not in self.used]
        return next((n for n in at if self.before[n]["role"] == m.get("role")), None)

    def unnamed(self, value: Any) -> Any:
        """Hook: original line ``value`` without the id naming it, for a line made of its
        messages the repair moved while the line itself stays (a new id is made then)."""
        return value

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        rec = origin(self.before[src])
        assert rec is not None
        if moved:
            self._move(m, rec)
            return
        group = self.groups.setdefault(rec, [])
        joins = m["role"] == "tool" or (self.JOINS_NOTES and m["role"] == "user")
        if self.pending and self.answers(rec) and joins:
            group.extend(self.pending)  # results before the line's own words
            self.pending = []
        self._flush()
        group.append(m)
        self.at, self.new = rec, None

    def on_new(self, m: Message) -> None:
        last = self.groups.get(self.at)
        tool = m["role"] == "tool"
        if (
            tool
            and self.new is None
            and self.answers(self.at)
            and last
            and last[-1]["role"] == "tool"
        ):
            last.append(m)  # after the results of the line it follows
        elif tool and self.new is None:
            self.pending.append(m)
        elif self.new is not None and self._joins(m):
            self.new.append(m)
        else:
            self._flush()
            self.new = [m]
            self.insert(self.at, (self.new, self.template()))

    def _move(self, m: Message, rec: int) -> None:
        """``m``, of original line ``rec``, put by the repair after a line the file has after
        it (a prompt after the results it stood before): written where it now stands, in a
        line made from its own, which ``settle`` names (its template, ``[group, rec]``)."""
        self._flush()
        if self.new is not None and self._moving.get(id(self.new)) == rec and self._joins(m):
            self.new.append(m)
            return
        self.new = [m]
        self._moving[id(self.new)] = rec
        item: list[Any] = [self.new, rec]
        self._moved.append(item)
        self.insert(self.at, item)

    def _joins(self, m: Message) -> bool:
        """Whether the new ``m`` goes in the new line being filled: a result, or (where
        ``JOINS_NOTES``) a note, while the line holds no words yet. A line is read back as its
        results, then one message of its words: a second note there would read as one with
        the first, a result after the words before them."""
        assert self.new is not None
        if any(x["role"] == "user" for x in self.new):
            return False
        return m["role"] == "tool" or (self.JOINS_NOTES and m["role"] == "user")

    def _flush(self) -> None:
        if self.pending:
            self.new = list(self.pending)
            self.insert(self.at, (self.new, self.template()))
            self.pending = []

    def settle(self) -> None:
        """Place the results still pending and note each original line whose messages changed
        (written again from them, or dropped when none is left)."""
        self._flush()
        records = self.state.records
        for item in self._moved:  # its own line's value; without its id where that line stays
            rec = item[1]
            item[1] = (
                self.unnamed(records[rec].value) if self.groups.get(rec) else records[rec].value
            )
        for rec, old in self.state.originals.items():
            group = self.groups.get(rec, [])
            if [public(m) for m in group] != [public(m) for m in old]:
                self.changed[rec] = self.record(group, records[rec].value) if group else DROP

    def emit(self) -> bytes:
        self.settle()
        return super().emit()

    def new_record(self, item: Any) -> Any:
        group, template = item
        return self.record(group, template)


class _Writer(LineGroupsWriter):
    def __init__(self, state: LineState, before: list[Message]) -> None:
        super().__init__(state, before)
        self._wrapped: bool | None = None

    def answers(self, rec: int) -> bool:
        value = self.state.records[rec].value if rec >= 0 else None
        return isinstance(value, dict) and value.get("role") == "user"

    def record(self, group: list[Message], template: Any) -> Any:
        return _record(group, template, self.wrapped)

    def unnamed(self, value: Any) -> Any:
        return {**value, "id": None} if isinstance(value, dict) else value  # as a new line

    @property
    def wrapped(self) -> bool:
        """Whether the file's results are newer Goose's ``CallToolResult`` (``{"content",
        "isError"}``), which a result the repair adds then is too; else a content list
        (what older Goose writes, and newer Goose still reads)."""
        if self._wrapped is None:
            self._wrapped = any(_wraps(r.value) for r in self.state.records if r.ok)
        return self._wrapped

    def template(self) -> Any:
        """A new line as serde writes a new ``Message`` (``id`` null, the default visible
        ``metadata``, which Goose's reader requires), its ``created`` the line's before it."""
        created = 0
        for record in reversed(self.state.records[: self.at + 1]):
            found = record.value.get("created") if isinstance(record.value, dict) else None
            if isinstance(found, int):
                created = found
                break
        return {
            "id": None,
            "role": "user",
            "created": created,
            "content": [],
            "metadata": {"userVisible": True, "agentVisible": True},
        }


class _ExportWriter(_Writer):
    """An export written back: the ``Session`` object with its ``conversation`` repaired
    (each untouched message as it was) and its ``message_count`` the conversation's,
    laid out as serde's ``to_string_pretty`` (or compact) wrote it."""

    STATE = ExportState

    def emit(self) -> bytes:
        self.settle()
        state = self.state
        assert isinstance(state, ExportState)
        conversation: list[Any] = []
        for item in self.order():
            if isinstance(item, int):
                change = self.changed.get(item)
                conversation.append(state.records[item].value if change is None else change)
            else:
                conversation.append(self.new_record(item))
        doc = {**state.doc, "conversation": conversation}
        if isinstance(doc.get("message_count"), int):
            doc["message_count"] = len(conversation)
        return dump_like(doc, state.data)


def serialise(messages: list[Message], original: Parsed) -> bytes:
    """Write ``messages`` back into the session file or export ``original`` was read from."""
    if isinstance(original.state, ExportState):
        return _ExportWriter.serialise(messages, original)
    return _Writer.serialise(messages, original)


def _wraps(value: Any) -> bool:
    """Whether a line holds a ``toolResponse`` whose success value is a ``CallToolResult``."""
    content = value.get("content") if isinstance(value, dict) else None
    for item in content if isinstance(content, list) else ():
        if not isinstance(item, dict) or item.get("type") != "toolResponse":
            continue
        result = item.get("toolResult")
        if isinstance(result, dict) and result.get("status") == "success":
            if isinstance(result.get("value"), dict):
                return True
    return False


def _record(group: list[Message], template: Any, wrapped: bool = False) -> dict[str, Any]:
    base: dict[str, Any] = dict(template) if isinstance(template, dict) else {}
    role = "assistant" if any(m["role"] == "assistant" for m in group) else "user"
    found = base.get("content")
    old_items: list[Any] = found if isinstance(found, list) else []
    requests = {
        i.get("id"): i for i in old_items if isinstance(i, dict) and i.get("type") in _CALLS
    }
    responses = {
        i.get("id"): i for i in old_items if isinstance(i, dict) and i.get("type") == "toolResponse"
    }
    items: list[Any] = []
    for message in group:
        if message["role"] == "tool":
            cid = call_id(metadata(message))
            old = responses.get(cid)
            if old is not None and _result(old, "")["content"] == text_of(message.get("content")):
                items.append(old)
            else:
                text = text_of(message.get("content"))
                items_of: Any = [{"type": "text", "text": text}]
                if wrapped:
                    error = metadata(message).get("is_error") is True
                    items_of = {"content": items_of, "isError": error}
                result = {"status": "success", "value": items_of}
                items.append({"type": "toolResponse", "id": cid, "toolResult": result})
            continue
        items.extend(_items(message.get("content")))
        for call in calls_of(message):
            old = requests.get(call_id(call))
            if old is not None and _call(old) == {**call, "tool_call_id": old["id"]}:
                items.append(old)
            else:
                value = {"name": call.get("name"), "arguments": call.get("arguments")}
                items.append(
                    {
                        "type": "toolRequest",
                        "id": call_id(call),
                        "toolCall": {"status": "success", "value": value},
                    }
                )
    return {**base, "role": role, "created": base.get("created", 0), "content": items}


def _items(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    items: list[Any] = []
    for part in content or []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            items.append({"type": "text", "text": part.get("text", "")})
        elif kind == "thinking":
            item = {"type": "thinking", "thinking": part.get("thinking", "")}
            if "signature" in part:
                item["signature"] = part["signature"]
            items.append(item)
        elif kind == "redacted_thinking":
            items.append({"type": "redactedThinking", "data": part.get("data", "")})
        elif kind == "image":
            items.append(
                {"type": "image", "data": part.get("data"), "mimeType": part.get("media_type")}
            )
        elif kind == NOTE_PART:
            items.append(part["item"])
        else:
            items.append({"type": "text", "text": orjson.dumps(part).decode()})
    return items


# --------------------------------------------------------------------------- timeline


def timeline_facts(parsed: Parsed) -> list[dict[str, Any] | None]:
    """Per message, its line's ``created`` (Unix seconds) as the time it was written."""
    state = parsed.state
    if not isinstance(state, LineState):
        return []
    records: list[Record] = state.records
    facts: list[dict[str, Any] | None] = []
    for message in parsed.messages:
        rec = origin(message)
        value = records[rec].value if rec is not None else None
        created = value.get("created") if isinstance(value, dict) else None
        # The database's are milliseconds, the older files' seconds.
        at = epoch_time(created, ms=isinstance(created, int | float) and created > 10**11)
        facts.append({"at": at, "model": None, "tokens_in": None, "tokens_out": None})
    return facts
