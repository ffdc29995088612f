"""Codex ``exec --json`` event logs (what ``codex exec --json`` prints, one event a line).

``codex exec --json`` streams thread events (``codex-rs/exec/src/exec_events.rs``):
``thread.started`` (``thread_id``), ``turn.started``, ``turn.completed``
(``usage``), ``turn.failed`` (``error``), ``item.started`` / ``item.updated`` /
``item.completed`` (``item``: ``{"id", "type", ...}``), ``error``. Item types:
``agent_message`` and ``plan`` (``text``), ``reasoning`` (``text``),
``command_execution`` (``command``, ``aggregated_output``, ``exit_code``,
``status``), ``file_change`` (``changes``, ``status``), ``mcp_tool_call``
(``server``, ``tool``, ``arguments``, ``result``, ``error``, ``status``),
``collab_tool_call``, ``web_search``, ``todo_list`` and ``error``.

Two containers are read, and written back the way they came: the bare
stream, and the stream as loggers save it, each event wrapped in
``{"log_type": "tool_event", "timestamp_iso", "timestamp_unix", "data": event}``
beside ``session_start`` (whose ``data.command`` is the ``codex exec`` command
line, the prompt last) and ``session_end`` records. This is not a rollout
(``codex`` reads those, from ``~/.codex/sessions``): the model's input is not
in it, only what the agent did.

Reading (``parse``)
-------------------
- The prompt of a wrapped log's ``session_start`` is the user message; the
  bare stream holds none (no user message is made up).
- ``agent_message`` and ``plan`` items are assistant text, ``reasoning``
  items go into the assistant message's ``metadata["reasoning"]``,
  ``web_search`` and ``todo_list`` items into ``metadata["web_search"]`` /
  ``metadata["todo_list"]``. A turn's items join one assistant message until
  a tool result follows; the next item then starts the next one, as the model
  answered the results. A message of reasoning alone is no message.
- Each command, file change, MCP call and collab call is a call (its item id
  is the call id; name ``shell``, ``apply_patch``, ``<server>__<tool>`` or the
  collab tool's; arguments ``{"command"}``, ``{"changes"}``, the MCP
  arguments, ``{"prompt", "receiver_thread_ids"}``) in the message of the
  event that started it, and its ``item.completed`` event its result (the
  output, the changes, the MCP result or error as text; ``is_error`` for a
  failed or declined item). Results follow their message in call order. An
  item only ever completed (file changes) is call and result at once.
- A turn that ``turn.failed`` marks its last assistant message
  ``"api_error"`` in ``causes``; a log that ends inside a turn,
  ``"stream_ended"``. A declined command never ran: its id is in
  ``not_started``.
- ``error`` items whose message is a repair's note (``[note: ...`` /
  ``[system note: ...``) are read back as the user notes they stand for;
  other ``error`` items and events are listed in ``meta["errors"]``.

Writing (``serialise``)
-----------------------
Unchanged logs come back byte for byte; a repair keeps every line it does not
change. A synthetic result becomes the ``item.completed`` event the item never
got, status ``failed`` (a command's ``aggregated_output`` and an MCP call's
``error.message`` say what the repair says), right after the line before it;
a renamed call id is written into every event of its item; a note becomes an
``error`` item (the one free-text item the stream has). Wrapped, new events
copy the timestamps of the line before them.

The private metadata key ``_src`` is each message's index in
``Parsed.messages``, as in ``codex``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.jsondoc import text_of as _text
from inspector.formats.jsondoc import unread_text_fields
from inspector.formats.jsonl import Record, head_records, read_jsonl
from inspector.formats.private import call_id
from inspector.formats.private import metadata as _md
from inspector.formats.records import ANY_ROLE, DROP, SRC, RecordWriter

NAME = "codex-exec"
PROVIDER = "responses"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Codex exec --json log (JSONL)"
EXTENSION = "jsonl"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 90


_EVENTS = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
        "item.plan.delta",
        "request_user_input",
        "error",
    }
)
_ITEM_EVENTS = frozenset({"item.started", "item.updated", "item.completed"})
_CALLS = frozenset({"command_execution", "file_change", "mcp_tool_call", "collab_tool_call"})
_TEXT = frozenset({"agent_message", "plan"})
_ASIDES = {"reasoning": "reasoning", "web_search": "web_search", "todo_list": "todo_list"}
_NOTE_STARTS = ("[note: ", "[system note: ")
# Options of ``codex exec`` that take a value: the prompt is the last other argument.
_VALUED = frozenset(
    {"--cd", "-C", "--model", "-m", "--sandbox", "-s", "--profile", "-p", "--config", "-c"}
    | {"--image", "-i", "--output-last-message", "-o", "--output-schema", "--color"}
)

Message = dict[str, Any]


# --------------------------------------------------------------------------- sniff


def sniff(head: bytes) -> float:
    """Thread events, bare or in a logger's ``log_type`` wrapper."""
    score = 0.0
    for value in head_records(head, 20):
        if not isinstance(value, dict):
            continue
        event = _event_of(value) or {}
        kind = event.get("type")
        if kind in ("thread.started", "turn.started") or (
            kind in _ITEM_EVENTS and isinstance(event.get("item"), dict)
        ):
            return 0.9
        if isinstance(value.get("log_type"), str) and isinstance(value.get("data"), dict):
            score = max(score, 0.3)
    return score


def _event_of(value: dict[str, Any]) -> dict[str, Any] | None:
    """The thread event a line holds: the line, or the ``data`` of its wrapper."""
    if isinstance(value.get("log_type"), str):
        data = value.get("data")
        if isinstance(data, dict) and data.get("type") in _EVENTS:
            return data
        return None
    return value if value.get("type") in _EVENTS else None


# --------------------------------------------------------------------------- parse


@dataclass(slots=True)
class _Item:
    """One run of an item: its events' records, the call it makes, its message."""

    id: str
    kind: str
    records: list[int] = field(default_factory=list)
    started: bool = False
    completed: int | None = None  # record of its item.completed event


@dataclass(slots=True)
class _Entry:
    message: Message
    records: list[int] = field(default_factory=list)  # records the message is read from
    items: list[_Item] = field(default_factory=list)  # assistant: one per call; tool: its own


@dataclass(slots=True)
class _State:
    data: bytes
    records: list[Record]
    values: list[Any]
    wrapped: bool
    entries: list[_Entry]
    final_newline: bool
    crlf: bool


def parse(data: bytes) -> Parsed:
    """Read an event log; see the module docstring for what is read how."""
    read = read_jsonl(data)
    reader = _Reader(read.records, list(read.problems))
    reader.run()
    if not reader.seen_events:
        raise FormatError("no line is a codex exec --json event")
    reader.close_turn(ended=True)
    entries = [e for e in reader.entries if _kept(e)]
    _order_results(entries)
    if not entries:
        raise FormatError("the event log holds no message, call or result")
    messages: list[Message] = []
    sources: list[list[int]] = []
    causes: dict[int, str] = {}
    for index, entry in enumerate(entries):
        entry.message["metadata"][SRC] = index
        messages.append(entry.message)
        lines: list[int] = []
        for rec in entry.records:
            line = read.records[rec].line
            if line not in lines:
                lines.append(line)
        sources.append(lines)
        cause = reader.causes.get(id(entry))
        if cause is not None:
            causes[index] = cause
    problems = sorted(reader.problems, key=lambda p: p.line)
    state = _State(
        data=data,
        records=read.records,
        values=reader.values,
        wrapped=reader.wrapped,
        entries=entries,
        final_newline=read.final_newline,
        crlf=read.crlf,
    )
    meta = reader.meta
    return Parsed(NAME, messages, sources, problems, causes, reader.not_started, meta, state)


def _kept(entry: _Entry) -> bool:
    """A reply of reasoning (or searches) alone says nothing a provider takes."""
    message = entry.message
    return message["role"] != "assistant" or bool(
        message["content"] or message["metadata"].get("tool_calls")
    )


class _Reader:
    def __init__(self, records: list[Record], problems: list[Problem]) -> None:
        self.records = records
        self.problems = problems
        self.values: list[Any] = [r.value if r.ok else None for r in records]
        self.wrapped = False
        self.seen_events = False
        self.entries: list[_Entry] = []
        self.reply: _Entry | None = None
        self.turn: list[_Entry] = []  # the assistant messages of the open turn
        self.in_turn = False
        # Started items not completed yet, by id, oldest first: a completion answers the
        # oldest, as the repair pairs a result with the first unanswered call of its id.
        self.open: dict[str, list[tuple[_Item, _Entry]]] = {}
        self.causes: dict[int, str] = {}  # id(entry) -> cause
        self.not_started: set[str] = set()
        self.meta: dict[str, Any] = {"threads": [], "turns": 0, "errors": [], "usage": []}

    def run(self) -> None:
        for idx, rec in enumerate(self.records):
            if not rec.ok:
                continue
            value = self.values[idx]
            if not isinstance(value, dict):
                self.problems.append(Problem(rec.line, "not a JSON object", "unreadable"))
                continue
            if isinstance(value.get("log_type"), str):
                self.wrapped = True
                if value["log_type"] == "session_start":
                    self.session_start(idx, value.get("data"))
                    continue
            event = _event_of(value)
            if event is None:
                if not isinstance(value.get("log_type"), str):
                    self.problems.append(Problem(rec.line, "not a codex exec event", "skipped"))
                continue
            self.seen_events = True
            self.event(idx, event)

    def session_start(self, idx: int, data: Any) -> None:
        command = data.get("command") if isinstance(data, dict) else None
        if not isinstance(command, list) or "exec" not in command:
            return
        prompt = command[-1] if len(command) > 2 else None
        before = command[-2] if len(command) > 2 else None
        if not isinstance(prompt, str) or prompt.startswith("-") or before in _VALUED:
            return
        self.meta["command"] = [c for c in command[:-1] if isinstance(c, str)]
        self.close_reply()
        message = {"role": "user", "content": prompt, "metadata": {}}
        self.entries.append(_Entry(message, [idx]))

    def event(self, idx: int, event: dict[str, Any]) -> None:
        kind = event.get("type")
        line = self.records[idx].line
        if kind == "thread.started":
            thread = event.get("thread_id")
            if isinstance(thread, str):
                self.meta.setdefault("session_id", thread)
                self.meta["threads"].append(thread)
        elif kind == "turn.started":
            self.close_turn(ended=False)
            self.in_turn = True
            self.meta["turns"] += 1
        elif kind == "turn.completed":
            if isinstance(event.get("usage"), dict):
                self.meta["usage"].append(event["usage"])
            self.close_turn(ended=False)
        elif kind == "turn.failed":
            self.mark_turn("api_error")
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            self.meta["errors"].append({"line": line, "turn_failed": message})
            self.close_turn(ended=False)
        elif kind == "error":
            self.meta["errors"].append({"line": line, "error": event.get("message")})
        elif kind in _ITEM_EVENTS:
            item = event.get("item")
            if not isinstance(item, dict) or not isinstance(item.get("type"), str):
                self.problems.append(Problem(line, f"{kind} without an item", "unreadable"))
                return
            self.item(idx, line, kind, item)

    def item(self, idx: int, line: int, kind: str, item: dict[str, Any]) -> None:
        item_type = item["type"]
        raw_id = item.get("id")
        item_id = raw_id if isinstance(raw_id, str) else "" if raw_id is None else str(raw_id)
        if item_type in _CALLS:
            self.call_event(idx, kind, item_id, item)
            return
        if kind != "item.completed":
            return  # text and asides are read when they are done
        if item_type in _TEXT:
            if "text" not in item and (held := unread_text_fields(item, ("id",))):
                # Its words are under a field this reader does not know: named as not
                # read, not read as an empty reply a repair would drop.
                reason = f"{item_type} item without 'text' holds {held}"
                self.problems.append(Problem(line, reason, "unreadable"))
                return
            text = item.get("text")
            if not isinstance(text, str):
                text = "" if text is None else orjson.dumps(text).decode()
            reply = self.open_reply(idx)
            reply.message["content"].append({"type": "text", "text": text})
        elif item_type in _ASIDES:
            reply = self.open_reply(idx)
            reply.message["metadata"].setdefault(_ASIDES[item_type], []).append(item)
        elif item_type == "error":
            message = item.get("message")
            if isinstance(message, str) and message.startswith(_NOTE_STARTS):
                self.close_reply()
                note = "interruption" if message.startswith("[system note: ") else "orphan_result"
                user = {"role": "user", "content": message, "metadata": {"note": note}}
                self.entries.append(_Entry(user, [idx]))
            else:
                self.meta["errors"].append({"line": line, "error": message})
        else:
            other = self.meta.setdefault("other_items", {})
            other[item_type] = other.get(item_type, 0) + 1

    def call_event(self, idx: int, kind: str, item_id: str, item: dict[str, Any]) -> None:
        waiting = self.open.get(item_id)
        found = waiting[0] if waiting else None
        if kind == "item.started" or found is None:
            # A new run of this item: its call joins the turn's current reply.
            reply = self.open_reply(idx)
            run = _Item(item_id, item["type"], [idx], started=kind == "item.started")
            reply.items.append(run)
            reply.message["metadata"].setdefault("tool_calls", []).append(_call(item_id, item))
            if kind != "item.completed":
                self.open.setdefault(item_id, []).append((run, reply))
                return
            found = (run, reply)
        elif kind == "item.completed" and waiting:
            waiting.pop(0)
        run, reply = found
        if kind == "item.updated":
            run.records.append(idx)
            return
        if idx not in run.records:
            run.records.append(idx)
        run.completed = idx
        if item.get("status") == "declined":
            self.not_started.add(item_id)
        result = _result(item_id, item)
        entry = _Entry(result, [idx], [run])
        self.entries.append(entry)
        self.reply = None  # what comes next answers the results

    def open_reply(self, idx: int) -> _Entry:
        """The assistant message items join: a new one after a result."""
        if self.reply is None:
            self.reply = _Entry({"role": "assistant", "content": [], "metadata": {}})
            self.entries.append(self.reply)
            self.turn.append(self.reply)
        if idx not in self.reply.records:
            self.reply.records.append(idx)
        return self.reply

    def close_reply(self) -> None:
        self.reply = None

    def mark_turn(self, cause: str) -> None:
        for entry in reversed(self.turn):
            if _kept(entry):
                self.causes[id(entry)] = cause
                return

    def close_turn(self, ended: bool) -> None:
        if ended and self.in_turn:
            self.mark_turn("stream_ended")
        self.in_turn = False
        self.turn = []
        self.reply = None


def _call(item_id: str, item: dict[str, Any]) -> dict[str, Any]:
    kind = item["type"]
    arguments: Any
    if kind == "command_execution":
        name, arguments = "shell", {"command": item.get("command")}
    elif kind == "file_change":
        name, arguments = "apply_patch", {"changes": item.get("changes")}
    elif kind == "mcp_tool_call":
        name = f"{item.get('server')}__{item.get('tool')}"
        arguments = item.get("arguments")
        if not isinstance(arguments, dict):
            # Not an object (or none): kept whole, never taken for arguments cut short.
            arguments = {} if arguments is None else {"arguments": arguments}
    else:
        tool = item.get("tool")
        name = tool if isinstance(tool, str) else "collab"
        arguments = {
            "prompt": item.get("prompt"),
            "receiver_thread_ids": item.get("receiver_thread_ids"),
        }
    return {"tool_call_id": item_id, "name": name, "arguments": arguments}


def _result(item_id: str, item: dict[str, Any]) -> Message:
    kind = item["type"]
    status = item.get("status")
    metadata: dict[str, Any] = {"tool_call_id": item_id, "name": _call(item_id, item)["name"]}
    if status in ("failed", "declined"):
        metadata["is_error"] = True
    if kind == "command_execution":
        output = item.get("aggregated_output")
        content = output if isinstance(output, str) else ""
        if item.get("exit_code") is not None:
            metadata["exit_code"] = item.get("exit_code")
    elif kind == "file_change":
        changes = item.get("changes")
        listed = [
            f"{c.get('kind')} {c.get('path')}"
            for c in (changes if isinstance(changes, list) else [])
            if isinstance(c, dict)
        ]
        content = "\n".join([f"{status}", *listed])
    elif kind == "mcp_tool_call":
        error = item.get("error")
        result = item.get("result")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            content = error["message"]
        elif isinstance(result, dict) and isinstance(result.get("content"), list):
            texts: list[str] = [
                p["text"]
                for p in result["content"]
                if isinstance(p, dict) and isinstance(p.get("text"), str)
            ]
            content = "\n".join(texts) if texts else orjson.dumps(result).decode()
        else:
            content = "" if result is None else orjson.dumps(result).decode()
    else:
        states = item.get("agents_states")
        content = orjson.dumps(states).decode() if states else f"{status}"
    return {"role": "tool", "content": content, "metadata": metadata}


def _order_results(entries: list[_Entry]) -> None:
    """A reply's results right after it, in its call order (they complete in any order)."""
    i = 0
    while i < len(entries):
        calls = entries[i].message["metadata"].get("tool_calls")
        j = i + 1
        while j < len(entries) and entries[j].message["role"] == "tool":
            j += 1
        if calls and j - i > 2:
            order: dict[int, int] = {id(run): n for n, run in enumerate(entries[i].items)}
            last = len(order)
            entries[i + 1 : j] = sorted(
                entries[i + 1 : j], key=lambda e: order.get(id(e.items[0]), last)
            )
        i = max(j, i + 1)


# --------------------------------------------------------------------------- serialise


class _Writer(RecordWriter[_State]):
    STATE = _State
    # A result that answers nothing: its event becomes the note the repair made of it.
    ROLE_CHANGES = {"tool": ANY_ROLE}
    KEEPS_UNREADABLE = False

    def __init__(self, state: _State, before: list[Message]) -> None:
        super().__init__(state, before)
        self.calls: dict[str, _Item] = {}  # call id as repaired -> its item
        self.cursor = -1  # the last record of the messages kept in place

    def on_new(self, m: Message) -> None:
        self._insert(self.cursor, self._new_event(m))

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        entry = self.state.entries[src]
        self._changes(m, src, entry)
        if not moved:
            self.cursor = max([self.cursor, *entry.records])
        elif m.get("role") == "tool" and entry.items and entry.items[0].completed is not None:
            # A result the repair moved: its event goes where the result now stands.
            done = entry.items[0].completed
            if not any(done in e.records for e in self.state.entries if e is not entry):
                event = self._event_value(done)
                self.changed[done] = DROP
                self._insert(self.cursor, event)

    def on_dropped(self, src: int) -> None:
        # A message the repair dropped: its lines go, unless another message holds them.
        entries = self.state.entries
        for rec in entries[src].records:
            if not any(rec in e.records for n, e in enumerate(entries) if n in self.used):
                self.changed[rec] = DROP

    def _insert(self, after: int, event: dict[str, Any]) -> None:
        self.insert(after, self._wrap(event, self._stamp(after)))

    def _changes(self, m: Message, src: int, entry: _Entry) -> None:
        old = self.before[src]
        role = m.get("role")
        metadata = _md(m)
        if role == "assistant":
            old_calls = old["metadata"].get("tool_calls") or []
            new_calls = [c for c in metadata.get("tool_calls") or [] if isinstance(c, dict)]
            k = 0
            for n, call in enumerate(old_calls):
                run = entry.items[n]
                new = new_calls[k] if k < len(new_calls) else None
                if new is not None and new.get("arguments") == call["arguments"]:
                    k += 1
                    new_id = call_id(new)
                    self.calls[new_id] = run
                    if new_id != call["tool_call_id"]:
                        for rec in run.records:
                            self.renamed[rec] = new_id
                else:
                    for rec in run.records:  # the repair removed this call
                        self.changed[rec] = DROP
            return
        if role == "tool":
            new_id = call_id(metadata)
            if new_id != call_id(old["metadata"]):
                for rec in entry.records:
                    self.renamed[rec] = new_id
            return
        if role == "user" and old["role"] == "tool":
            # A result that answers nothing: its event becomes the note.
            rec = entry.records[0]
            shared = any(rec in e.records for e in self.state.entries if e is not entry)
            note = self._new_event(m)
            if shared:
                self._insert(rec, note)
            else:
                self.changed[rec] = self._wrap(note, self._stamp(rec))

    def _event_value(self, rec: int) -> dict[str, Any]:
        value = self.state.values[rec]
        return dict(value["data"] if self.state.wrapped and "log_type" in value else value)

    def _new_event(self, m: Message) -> dict[str, Any]:
        role = m.get("role")
        metadata = _md(m)
        text = _text(m.get("content"))
        if role == "tool":
            call = call_id(metadata)
            run = self.calls.get(call)
            if run is not None:
                started = self._event_value(run.records[0]).get("item")
                item = dict(started) if isinstance(started, dict) else {"type": run.kind}
                item["id"] = call
                return {"type": "item.completed", "item": _failed(item, text)}
            item = {"id": call, "type": "command_execution", "command": metadata.get("name", "")}
            return {"type": "item.completed", "item": _failed(item, text)}
        if role == "assistant":
            # Numbered by the places new events went to so far (before every line counts one
            # for each event there, every other place one).
            first = len(self.inserted.get(-1, ()))
            places = len(self.inserted) - (-1 in self.inserted)
            item = {"id": f"note_{first + places}", "type": "agent_message"}
            return {"type": "item.completed", "item": {**item, "text": text}}
        item = {"id": "repair_note", "type": "error", "message": text}
        return {"type": "item.completed", "item": item}

    def renamed_record(self, rec: int, new_id: str) -> Any:
        value = self.state.values[rec]
        wrapped = self.state.wrapped and "log_type" in value
        event = value["data"] if wrapped else value
        event = {**event, "item": {**event["item"], "id": new_id}}
        return {**value, "data": event} if wrapped else event

    def _stamp(self, rec: int) -> dict[str, Any]:
        """The timestamps of the last record at or before ``rec`` (new events copy them)."""
        if not self.state.wrapped:
            return {}
        values = self.state.values
        for idx in range(rec, -1, -1):
            value = values[idx]
            if isinstance(value, dict):
                return {k: value[k] for k in ("timestamp_iso", "timestamp_unix") if k in value}
        return {}

    def _wrap(self, event: dict[str, Any], stamp: dict[str, Any]) -> dict[str, Any]:
        if not self.state.wrapped:
            return event
        return {"log_type": "tool_event", **stamp, "data": event}


serialise = _Writer.serialise


def _failed(item: dict[str, Any], text: str) -> dict[str, Any]:
    """The item as completed by the repair: failed, its output the repair's words."""
    kind = item.get("type")
    item["status"] = "failed"
    if kind == "command_execution":
        item["aggregated_output"] = text
        item["exit_code"] = None
    elif kind == "mcp_tool_call":
        item["result"] = None
        item["error"] = {"message": text}
    return item
