"""Codex CLI / Codex Desktop rollout files (``~/.codex/sessions/.../rollout-*.jsonl``).

Codex appends one record a line. Current versions wrap each in an envelope,
``{"timestamp", "type", "payload"}``, with ``type`` one of ``session_meta``,
``response_item``, ``event_msg``, ``turn_context`` and ``compacted``. Older
files have no envelope: the first line is the session meta itself, later
lines are the response items themselves, with ``{"record_type": "state"}``
markers between them. Both are read, and written back the way they came.

Reading (``parse``)
-------------------
- ``response_item`` payloads are the history, as the Responses API takes it:
  ``message`` (``user``, ``assistant``, and ``developer``/``system`` as
  canonical ``system``), ``function_call`` / ``custom_tool_call`` /
  ``local_shell_call`` (calls), ``function_call_output`` /
  ``custom_tool_call_output`` (results). ``reasoning`` and
  ``web_search_call`` items are kept with their turn's assistant message, in
  ``metadata["reasoning"]`` / ``metadata["web_search"]``: Codex sends them
  back with the turn, but they are neither prose nor calls, and a provider
  that cannot take them must not be left with an empty message. A turn that
  got no further than them (stopped by the user) makes no message.
- The items of one model turn (reasoning, text, calls) become ONE assistant
  message, so parallel calls pair with their outputs the way the API pairs
  them; the outputs follow it in call order (the API does not care about
  their order, the repair rules do), and so do developer notes Codex wrote
  while a call ran (approvals), which the API does not mind either.
- An assistant message's fields beyond its content (its ``phase``,
  ``commentary`` or ``final_answer``) stay on its text parts, under ``item``
  (``responses.marked_parts``): the Responses export writes each message back
  with its own, as the model wants them sent.
- A call's ``arguments`` stay the string Codex stored. A custom tool's free
  text ``input`` is given as ``{"input": text}``: it is not JSON and never
  was, so it must not look like arguments cut mid-stream.
- ``event_msg`` records are the UI's event stream, not history; a
  ``turn_aborted`` event marks the last assistant message of its turn
  ``"turn_aborted"`` in ``causes``.
- ``compacted`` restarts the history: from its ``replacement_history`` when
  it has one, else from its summary as one user message (Codex rebuilds
  the user's earlier prompts around it on resume; none of that holds a
  call). ``meta["compactions"]`` says where and how much was replaced.
- A ``session_meta`` after the first one (a forked or resumed rollout) is
  listed in ``meta["forks"]``.
- Response item types that are not history (``ghost_snapshot``, ...) are
  kept for the round trip and counted in ``meta["other_items"]``.

The private metadata key ``_src``
---------------------------------
As in ``claude_code``: each message ``parse`` makes carries
``metadata["_src"]``, its index in ``Parsed.messages``, so ``serialise`` can
find its records. Private plumbing: never compared or validated on, and
dropped (with every ``_`` key) from canonical downloads and provider exports.

Writing (``serialise``)
-----------------------
An unchanged transcript comes back byte for byte; untouched records keep
their bytes after a repair too. Inserted results and notes become new
``response_item`` records (``function_call_output`` or
``custom_tool_call_output`` to match the call; a ``user`` message for a
note), in the envelope when the file has one, stamped with the timestamp of
the record before them, so the same repair always writes the same file.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

import orjson

from inspector.formats import responses
from inspector.formats.base import NO_FACTS, Facts, FormatError, Parsed, Problem, token_count
from inspector.formats.jsondoc import image_part, part_text, text_or_json, typed_parts
from inspector.formats.jsonl import (
    Record,
    head_records,
    read_jsonl,
)
from inspector.formats.private import call_id
from inspector.formats.records import DROP, SRC, RecordWriter
from inspector.formats.responses import marked_parts, message_envelope

NAME = "codex"
PROVIDER = "responses"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Codex CLI rollout (JSONL)"
EXTENSION = "jsonl"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 70


_ENVELOPE_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
# The output item that answers each kind of call (a function call's otherwise).
_OUTPUT_OF = {
    "custom_tool_call": "custom_tool_call_output",
    "tool_search_call": "tool_search_output",
}
# Model output items that are neither prose nor calls, and where they are kept.
_REPLY_PARTS = {"reasoning": "reasoning", "web_search_call": "web_search"}
_ITEM_TYPES = _CALLS | _OUTPUTS | set(_REPLY_PARTS) | {"message"}
# Looked up with a record's role as decoded, whatever JSON value it is.
_ROLES: dict[object, str] = {
    "user": "user",
    "assistant": "assistant",
    "developer": "system",
    "system": "system",
}


# --------------------------------------------------------------------------- sniff


def sniff(head: bytes) -> float:
    """How sure we are that ``head`` starts a Codex rollout."""
    score = 0.0
    for n, value in enumerate(head_records(head, 20)):
        if not isinstance(value, dict):
            continue
        kind = value.get("type")
        if kind in _ENVELOPE_TYPES and isinstance(value.get("payload"), dict):
            return 0.95
        if "record_type" in value:
            score = max(score, 0.7)
        elif n == 0 and "id" in value and "timestamp" in value and "type" not in value:
            score = max(score, 0.6)
        elif kind in _ITEM_TYPES and ("call_id" in value or _has_response_parts(value)):
            score = max(score, 0.6)
    return score


def _has_response_parts(value: dict[str, Any]) -> bool:
    content = value.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in ("input_text", "output_text") for p in content
    )


# --------------------------------------------------------------------------- timeline facts


def timeline_facts(parsed: Parsed) -> list[Facts | None]:
    """Per message, the ``timestamp`` of the first record it was read from (the ``base``
    hook); for a reply, the model of the ``turn_context`` it answers in and the tokens
    of the ``token_count`` event that follows it (``last_token_usage``: its
    ``input_tokens``, of which ``cached_input_tokens`` came from the cache, and its
    ``output_tokens``). A rollout records no cache writes."""
    state = parsed.state
    if not isinstance(state, _State):
        return []
    values = state.values
    facts = [_facts([values[piece.rec] for piece in own]) for own in state.pieces]
    # Each reply by the record it was read from last (not a compaction's copy of it).
    replies: list[tuple[int, int, int]] = []  # first record, last record, message
    for index, own in enumerate(state.pieces):
        recs = [piece.rec for piece in own if piece.item is None]
        role = parsed.messages[index].get("role") if index < len(parsed.messages) else None
        if recs and role == "assistant":
            replies.append((min(recs), max(recs), index))
    replies.sort(key=lambda reply: reply[1])
    model: str | None = None
    models: list[tuple[int, str | None]] = []  # from this record on, this model
    waiting: int | None = None  # the last reply read before the record, with no tokens yet
    at = 0
    for rec, value in enumerate(values):
        while at < len(replies) and replies[at][1] < rec:
            waiting = replies[at][2]
            at += 1
        payload = value.get("payload") if isinstance(value, dict) else None
        if not isinstance(payload, dict):
            continue
        if value.get("type") == "turn_context":
            found = payload.get("model")
            model = found if isinstance(found, str) and found else model
            models.append((rec, model))
        elif payload.get("type") == "token_count" and waiting is not None:
            info = payload.get("info")
            usage = info.get("last_token_usage") if isinstance(info, dict) else None
            if isinstance(usage, dict):
                facts[waiting] = {
                    **(facts[waiting] or NO_FACTS),
                    "tokens_in": token_count(usage.get("input_tokens")),
                    "tokens_out": token_count(usage.get("output_tokens")),
                    "cache_read": token_count(usage.get("cached_input_tokens")),
                }
                waiting = None
    starts = [start for start, _ in models]
    for first, _, index in replies:
        before = bisect.bisect_left(starts, first)  # the turn_context records before the reply
        if before and models[before - 1][1]:
            facts[index] = {**(facts[index] or NO_FACTS), "model": models[before - 1][1]}
    return facts


def _facts(values: list[Any]) -> Facts | None:
    stamp = values[0].get("timestamp") if values and isinstance(values[0], dict) else None
    return {**NO_FACTS, "at": stamp} if isinstance(stamp, str) else None


# --------------------------------------------------------------------------- parse


@dataclass(slots=True)
class _Piece:
    """An item a message came from: a record, or one item of a compacted
    record's ``replacement_history`` (``item`` is its index; ``-1`` is the
    summary of a compaction without one)."""

    rec: int
    item: int | None = None


@dataclass(slots=True)
class _Entry:
    message: dict[str, Any]
    pieces: list[_Piece] = field(default_factory=list)


@dataclass(slots=True)
class _State:
    data: bytes
    records: list[Record]
    values: list[Any]
    envelope: bool
    final_newline: bool
    crlf: bool
    history: list[int]  # record indices holding the history's items, in file order
    pieces: list[list[_Piece]]


def parse(data: bytes) -> Parsed:
    """Read a rollout; see the module docstring for what is read how."""
    read = read_jsonl(data)
    problems = list(read.problems)
    values: list[Any] = []
    kinds: list[str | None] = []
    envelope = False
    for n, rec in enumerate(read.records):
        kind, value = None, rec.value if rec.ok else None
        if rec.ok and not isinstance(value, dict):
            problems.append(Problem(rec.line, "not a JSON object", "unreadable"))
            value = None
        elif isinstance(value, dict):
            kind = _kind(value, first=n == 0)
            if kind is None:
                problems.append(Problem(rec.line, "not a Codex record", "skipped"))
            elif kind != "legacy" and "payload" in value:
                envelope = True
                if kind in ("response_item", "compacted", "session_meta") and not isinstance(
                    value["payload"], dict
                ):
                    problems.append(Problem(rec.line, f"{kind} without a payload", "unreadable"))
                    kind = None
        values.append(value)
        kinds.append(kind)
    if read.records and not any(kinds):
        raise FormatError("no line is a Codex rollout record")

    reader = _Reader(read.records, values, kinds, problems)
    reader.run()
    messages: list[dict[str, Any]] = []
    sources: list[list[int]] = []
    for index, entry in enumerate(reader.entries):
        entry.message["metadata"][SRC] = index
        messages.append(entry.message)
        lines: list[int] = []
        for piece in entry.pieces:
            line = read.records[piece.rec].line
            if line not in lines:
                lines.append(line)
        sources.append(lines)
    state = _State(
        data=data,
        records=read.records,
        values=values,
        envelope=envelope,
        final_newline=read.final_newline,
        crlf=read.crlf,
        history=sorted({p.rec for e in reader.entries for p in e.pieces}),
        pieces=[e.pieces for e in reader.entries],
    )
    problems.sort(key=lambda p: p.line)
    return Parsed(NAME, messages, sources, problems, reader.causes, meta=reader.meta, state=state)


def _kind(value: dict[str, Any], first: bool) -> str | None:
    """What a record is: an envelope type, ``"item"`` (a bare response item),
    ``"legacy"`` (a bare session meta or state marker), or None."""
    kind = value.get("type")
    if "payload" in value and isinstance(kind, str):
        return kind  # an envelope, maybe of a type newer than this reader
    if "record_type" in value or (first and "id" in value and kind is None):
        return "legacy"
    if _is_bare_item(value):
        return "item"
    return None


def _is_bare_item(value: dict[str, Any]) -> bool:
    """A response item written without an envelope (older rollouts)."""
    kind = value.get("type")
    if kind == "message":
        return "role" in value and "content" in value
    if kind in _CALLS:
        return "call_id" in value or "name" in value
    if kind in _OUTPUTS:
        return "call_id" in value and "output" in value
    if kind == "reasoning":
        return "summary" in value or "encrypted_content" in value
    return kind == "web_search_call"


class _Reader:
    """Walks the records once, building the history the model would be sent."""

    def __init__(
        self,
        records: list[Record],
        values: list[Any],
        kinds: list[str | None],
        problems: list[Problem],
    ) -> None:
        self.records = records
        self.values = values
        self.kinds = kinds
        self.problems = problems
        self.entries: list[_Entry] = []
        self.reply: _Entry | None = None  # the assistant message items join
        self.causes: dict[int, str] = {}
        self.meta: dict[str, Any] = {
            "envelope": False,
            "forks": [],
            "compactions": [],
            "other_items": {},
        }

    def run(self) -> None:
        for idx, kind in enumerate(self.kinds):
            if kind is None:
                continue
            value = self.values[idx]
            payload = value.get("payload") if kind != "item" and kind != "legacy" else value
            if kind != "item" and kind != "legacy":
                self.meta["envelope"] = True
            if kind in ("response_item", "item"):
                self.item(payload, _Piece(idx))
            elif kind == "compacted":
                self.compacted(idx, payload)
            elif kind == "session_meta" or (kind == "legacy" and "record_type" not in value):
                self.session_meta(idx, payload)
            elif kind == "event_msg" and isinstance(payload, dict):
                if payload.get("type") == "turn_aborted":
                    self.turn_aborted()
        self.close_reply()
        _order_results(self.entries)

    def item(self, payload: dict[str, Any], piece: _Piece) -> None:
        kind = payload.get("type")
        if kind == "message":
            role = _ROLES.get(payload.get("role"))
            if role is None:
                line = self.records[piece.rec].line
                self.problems.append(
                    Problem(line, f"message with unknown role {payload.get('role')!r}", "skipped")
                )
                return
            content = payload.get("content")
            if not isinstance(content, str | list):
                # Its words are somewhere this reader does not know: read as an empty
                # message, a repair would drop it. Named as not read instead.
                line = self.records[piece.rec].line
                held = ", ".join(repr(k) for k in payload if k not in ("type", "role"))
                reason = f"message without a 'content' list (it holds {held or 'nothing else'})"
                self.problems.append(Problem(line, reason, "unreadable"))
                return
            if isinstance(content, list) and not all(
                isinstance(p, dict) and isinstance(p.get("type"), str) for p in content
            ):
                line = self.records[piece.rec].line
                reason = "message with a content part that is not an object with a type"
                self.problems.append(Problem(line, reason, "unreadable"))
                return
            if role == "assistant":
                reply = self.open_reply(piece)
                said = marked_parts(_parts(content), message_envelope(payload))
                reply.message["content"].extend(said)
                return
            self.close_reply()
            parts: Any = content if isinstance(content, str) else _parts(content)
            self.add({"role": role, "content": parts, "metadata": {}}, piece)
        elif kind in _CALLS and not _server_run(payload):
            reply = self.open_reply(piece)
            reply.message["metadata"].setdefault("tool_calls", []).append(_call(payload))
        elif kind in _REPLY_PARTS:
            metadata = self.open_reply(piece).message["metadata"]
            metadata.setdefault(_REPLY_PARTS[kind], []).append(payload)
        elif kind in _OUTPUTS and not _server_run(payload):
            self.close_reply()
            metadata = {"tool_call_id": _id_of(payload)}
            if kind == "tool_search_output":
                # The tools it found, under fields of its own: read as their JSON text,
                # as the Responses reader reads them.
                fields = {k: v for k, v in payload.items() if k not in _SEARCH_OUTPUT_KEYS}
                output: Any = orjson.dumps(fields).decode()
            else:
                output = _output(payload.get("output"))
            message = {"role": "tool", "content": output, "metadata": metadata}
            self.add(message, piece)
        else:
            other = self.meta["other_items"]
            other[str(kind)] = other.get(str(kind), 0) + 1

    def close_reply(self) -> None:
        """End the current turn's assistant message.

        A turn that got no further than reasoning or a web search (the user
        stopped it) has nothing a provider would take as a message; its items
        stay in the file, out of the history.
        """
        reply, self.reply = self.reply, None
        if reply is None or reply.message["metadata"].get("tool_calls"):
            return
        if reply.message["content"]:
            return
        if self.entries and self.entries[-1] is reply:  # nothing joined after it
            self.entries.pop()

    def open_reply(self, piece: _Piece) -> _Entry:
        if self.reply is None:
            self.reply = self.add({"role": "assistant", "content": [], "metadata": {}}, None)
        self.reply.pieces.append(piece)
        return self.reply

    def add(self, message: dict[str, Any], piece: _Piece | None) -> _Entry:
        entry = _Entry(message, [piece] if piece is not None else [])
        self.entries.append(entry)
        return entry

    def compacted(self, idx: int, payload: dict[str, Any]) -> None:
        # What Codex rebuilds on resume: the replacement, not what came before.
        self.meta["compactions"].append(
            {"line": self.records[idx].line, "replaced": len(self.entries)}
        )
        self.reply = None
        self.entries = []
        self.causes = {}  # they were about messages that are gone now
        replacement = payload.get("replacement_history")
        if isinstance(replacement, list):
            for k, item in enumerate(replacement):
                if isinstance(item, dict):
                    self.item(item, _Piece(idx, k))
            return
        summary = payload.get("message")
        if isinstance(summary, str) and summary:
            self.add({"role": "user", "content": summary, "metadata": {}}, _Piece(idx, -1))

    def session_meta(self, idx: int, payload: dict[str, Any]) -> None:
        meta = self.meta
        if "session_id" in meta:
            meta["forks"].append(
                {
                    "line": self.records[idx].line,
                    "session_id": payload.get("id"),
                    "timestamp": payload.get("timestamp"),
                }
            )
            return
        meta["session_id"] = payload.get("id")
        for key, name in (("cwd", "cwd"), ("cli_version", "version"), ("originator", "originator")):
            if isinstance(payload.get(key), str):
                meta[name] = payload[key]
        parent = payload.get("parent_thread_id")
        source = payload.get("source")
        if parent is None and isinstance(source, dict):
            spawn = (source.get("subagent") or {}).get("thread_spawn")
            if isinstance(spawn, dict):
                parent = spawn.get("parent_thread_id")
        if isinstance(parent, str):
            meta["parent_session"] = parent
        meta["sidechain"] = isinstance(parent, str)

    def turn_aborted(self) -> None:
        # The last assistant message of the turn, if the turn got that far.
        self.close_reply()
        for index in range(len(self.entries) - 1, -1, -1):
            role = self.entries[index].message["role"]
            if role == "assistant":
                self.causes[index] = "turn_aborted"
                return
            if role == "user":
                return


def _id_of(payload: dict[str, Any]) -> str:
    """The id results refer to: ``call_id``, or ``id`` for writers that used that."""
    value = payload.get("call_id") or payload.get("id") or ""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _id_key(payload: dict[str, Any]) -> str:
    return "call_id" if payload.get("call_id") or not payload.get("id") else "id"


_SEARCH_OUTPUT_KEYS = frozenset({"type", "id", "call_id", "status", "execution"})


def _server_run(payload: dict[str, Any]) -> bool:
    """A tool search the server ran itself: its output stands beside it, as Codex pairs
    them (``execution: "server"``), so neither is a call waiting for a result."""
    return payload.get("execution") == "server"


def _call(payload: dict[str, Any]) -> dict[str, Any]:
    kind = payload.get("type")
    if kind == "function_call":
        name, arguments = payload.get("name"), payload.get("arguments", "")
    elif kind == "custom_tool_call":
        name, arguments = payload.get("name"), {"input": payload.get("input", "")}
    elif kind == "tool_search_call":
        return responses.canonical_call(payload)
    else:  # local_shell_call: the action is the arguments
        name, arguments = "local_shell", payload.get("action", {})
    if not isinstance(arguments, dict | str):
        arguments = orjson.dumps(arguments).decode()  # as stored, for the checks to judge
    name = name if isinstance(name, str) else "" if name is None else orjson.dumps(name).decode()
    return {"tool_call_id": _id_of(payload), "name": name, "arguments": arguments}


def _parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return typed_parts(content, _part)


def _part(part: dict[str, Any]) -> Any:
    kind = part["type"]
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": part_text(part)}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        return image_part(part["image_url"])
    return part


def _output(output: Any) -> Any:
    if isinstance(output, list):
        return _parts(output)
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]
    return text_or_json(output)


def _order_results(entries: list[_Entry]) -> None:
    """Outputs right after their turn, in its call order.

    Codex writes developer notes (approvals and the like) while a call runs,
    so they can sit between a call and its output. The API pairs by
    ``call_id`` and does not mind; the repair rules would, so such notes
    follow the turn's outputs here, in their own order.
    """
    i = 0
    while i < len(entries):
        calls = entries[i].message["metadata"].get("tool_calls")
        j = i + 1
        while j < len(entries) and entries[j].message["role"] in ("tool", "system"):
            j += 1
        # Only as far as the last output: notes after it stay where they are.
        while j > i + 1 and entries[j - 1].message["role"] == "system":
            j -= 1
        if calls and j - i > 2:
            order: dict[str, int] = {}
            for n, call in enumerate(calls):
                order.setdefault(call["tool_call_id"], n)
            last = len(order)
            run = entries[i + 1 : j]
            outputs = [e for e in run if e.message["role"] == "tool"]
            outputs.sort(key=lambda e: order.get(e.message["metadata"]["tool_call_id"], last))
            notes = [e for e in run if e.message["role"] != "tool"]
            entries[i + 1 : j] = outputs + notes
        i = max(j, i + 1)


# --------------------------------------------------------------------------- serialise


@dataclass(slots=True)
class _Unit:
    """A record a repaired message moved or made: an original record with
    its changed items (as in ``changed``), or ``payload``, a new item."""

    rec: int | None = None
    items: dict[int | None, Any] = field(default_factory=dict)
    payload: dict[str, Any] | None = None


class _Writer(RecordWriter[_State]):
    """``changed`` holds, for an original record kept in place, each changed item
    (``None`` for the record's own payload, or a replacement_history index)
    mapped to its new value or ``DROP``."""

    STATE = _State
    UNGLUES = True

    def __init__(self, state: _State, before: list[dict[str, Any]]) -> None:
        super().__init__(state, before)
        self.placed: set[int] = set()
        self.cursor = -1  # the latest record kept in place
        self.floor = -1  # the latest record something was put after
        self.call_kinds: dict[str, str] = {}  # call id as repaired -> item type
        self.timestamp: Any = None  # of the last record written

    def on_new(self, m: dict[str, Any]) -> None:
        self._anchor(_Unit(payload=self._new_item(m)))

    def on_original(self, m: dict[str, Any], src: int, moved: bool) -> None:
        for piece, new in self._changes(m, src):
            if not moved and piece.rec > self.floor:
                items = self.changed.setdefault(piece.rec, {})
                if new is not None:
                    items[piece.item] = new
                self.placed.add(piece.rec)
                self.cursor = max(self.cursor, piece.rec)
            elif new is not DROP:
                self._move(piece, new)

    def _item(self, piece: _Piece) -> dict[str, Any]:
        value = self.state.values[piece.rec]
        payload: dict[str, Any] = (
            value["payload"] if self.state.envelope and "payload" in value else value
        )
        if piece.item is None:
            return payload
        if piece.item == -1:
            return {"type": "message", "role": "user", "content": payload.get("message", "")}
        item: dict[str, Any] = payload["replacement_history"][piece.item]
        return item

    def _move(self, piece: _Piece, new: Any) -> None:
        """Write an item the repair moved where it now stands, not where it was."""
        if piece.item is None:
            # The whole record moves, with its own bytes unless it changed.
            self._anchor(_Unit(piece.rec, {} if new is None else {None: new}))
            return
        # An item of a compacted record's replacement history becomes a record.
        self.changed.setdefault(piece.rec, {})[piece.item] = DROP
        self.placed.add(piece.rec)
        self._anchor(_Unit(payload=new or self._item(piece)))

    def _anchor(self, unit: _Unit) -> None:
        self.insert(self.cursor, unit)
        self.floor = max(self.floor, self.cursor)

    def _changes(self, m: dict[str, Any], src: int) -> list[tuple[_Piece, Any]]:
        """Per item of the message: None (as it was), a new item, or ``DROP``."""
        before = self.before[src]
        pieces = self.state.pieces[src]
        role = m.get("role")
        if role == "assistant":
            old_calls = before["metadata"].get("tool_calls") or []
            new_calls = (m.get("metadata") or {}).get("tool_calls") or []
            out: list[tuple[_Piece, Any]] = []
            k = n = 0
            text_changed = m.get("content") != before.get("content")
            wrote_text = False
            for piece in pieces:
                item = self._item(piece)
                kind = item.get("type")
                if kind in _CALLS:
                    call = old_calls[n]
                    n += 1
                    new = new_calls[k] if k < len(new_calls) else None
                    if (
                        isinstance(new, dict)
                        and new.get("name") == call["name"]
                        and new.get("arguments") == call["arguments"]
                    ):
                        k += 1
                        new_id = call_id(new)
                        self.call_kinds[new_id] = kind
                        if new_id != call["tool_call_id"]:
                            out.append((piece, {**item, _id_key(item): new_id}))
                        else:
                            out.append((piece, None))
                    else:
                        out.append((piece, DROP))  # the repair removed this call
                elif kind == "message" and text_changed:
                    # Changed prose goes into the reply's first text item.
                    if wrote_text:
                        out.append((piece, DROP))
                    else:
                        text = _response_content(m.get("content"), "output_text")
                        out.append((piece, {**item, "content": text}))
                        wrote_text = True
                else:
                    out.append((piece, None))
            return out
        piece = pieces[0]
        item = self._item(piece)
        if role == "tool":
            new_id = call_id(m.get("metadata") or {})
            changed = dict(item)
            if new_id != call_id(before["metadata"]):
                changed[_id_key(item)] = new_id
            if m.get("content") != before.get("content"):
                changed["output"] = _output_value(m.get("content"))
            return [(piece, None if changed == item else changed)]
        if m.get("content") == before.get("content") or piece.item == -1:
            return [(piece, None)]
        kind = "output_text" if role == "assistant" else "input_text"
        return [(piece, {**item, "content": _response_content(m.get("content"), kind)})]

    def _new_item(self, m: dict[str, Any]) -> dict[str, Any]:
        role = m.get("role")
        metadata = md if isinstance(md := m.get("metadata"), dict) else {}
        content = m.get("content")
        if role == "tool":
            call = call_id(metadata)
            kind = self.call_kinds.get(call, "function_call")
            output_type = _OUTPUT_OF.get(kind, "function_call_output")
            if output_type == "tool_search_output":
                # A search that never answered found no tools: the item Codex pairs
                # with the call, holding nothing made up.
                return {
                    "type": output_type,
                    "call_id": call,
                    "status": "completed",
                    "execution": "client",
                    "tools": [],
                }
            return {"type": output_type, "call_id": call, "output": _output_value(content)}
        wire_role = "developer" if role == "system" else role
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": wire_role, "content": _response_content(content, kind)}

    # -- writing -----------------------------------------------------------------------

    def emit(self) -> bytes:
        for rec in self.state.history:
            if rec not in self.placed:
                self.changed[rec] = DROP  # a history record none of whose items survived
        return super().emit()

    def kept_record(self, rec: int) -> Any:
        self._saw(rec)
        return super().kept_record(rec)

    def changed_record(self, rec: int, change: Any) -> Any:
        self._saw(rec)
        record = self._rebuilt(rec, change)
        return self.log.records[rec].raw if record is None else record

    def new_record(self, item: Any) -> Any:
        if item.rec is not None:  # a record the repair moved
            return self.changed_record(item.rec, item.items)
        return self._wrap(item.payload, self.timestamp)

    def _saw(self, rec: int) -> None:
        """A new record takes the timestamp of the last record written before it."""
        value = self.state.values[rec]
        if isinstance(value, dict) and "timestamp" in value:
            self.timestamp = value["timestamp"]

    def _rebuilt(self, rec: int, items: dict[int | None, Any]) -> Any:
        """The record with its changed items; None if unchanged, DROP if emptied."""
        if not items or all(v is None for v in items.values()):
            return None
        value = self.state.values[rec]
        inner = self.state.envelope and "payload" in value
        payload = value["payload"] if inner else value
        if None in items:
            new = items[None]
            if new is DROP:
                return DROP
            payload = new
        else:
            history = list(payload.get("replacement_history") or [])
            for k in sorted((k for k in items if isinstance(k, int) and k >= 0), reverse=True):
                new = items[k]
                if new is DROP:
                    del history[k]
                elif new is not None:
                    history[k] = new
            payload = {**payload, "replacement_history": history}
        if inner:
            return {**value, "payload": payload}
        return payload

    def _wrap(self, payload: dict[str, Any] | None, timestamp: Any) -> dict[str, Any]:
        if not self.state.envelope:
            return payload or {}
        record: dict[str, Any] = {}
        if timestamp is not None:
            record["timestamp"] = timestamp
        record["type"] = "response_item"
        record["payload"] = payload
        return record


serialise = _Writer.serialise


def _response_content(content: Any, text_type: str) -> list[Any]:
    """Canonical content as Responses message content parts."""
    if isinstance(content, str):
        return [{"type": text_type, "text": content}] if content else []
    out: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text":
            out.append({"type": text_type, "text": part.get("text", "")})
        elif isinstance(part, dict) and part.get("type") == "image":
            url = part.get("url") or f"data:{part.get('media_type')};base64,{part.get('data')}"
            out.append({"type": "input_image", "image_url": url})
        elif isinstance(part, dict) and "item" in part:
            out.append({k: v for k, v in part.items() if k != "item"})  # a refusal's
        else:
            out.append(part)
    return out


def _output_value(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content or ""
    return _response_content(content, "input_text")
