"""pi coding-agent sessions (``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``).

pi (badlogic/pi-mono, ``packages/coding-agent``) appends one entry a line.
The first line is the session header, ``{"type": "session", "version", "id",
"timestamp", "cwd"}``. Version 2 and 3 entries carry ``id`` and ``parentId``
and form a tree; version 1 (no ``version``) entries have neither and form a
line, in file order. Entry types: ``message`` (its ``message`` is one of
pi's messages: ``user``, ``assistant``, ``toolResult``, ``bashExecution``,
``custom``), ``model_change``, ``thinking_level_change``, ``compaction``,
``branch_summary``, ``custom``, ``custom_message``, ``label`` and
``session_info``.

Reading (``parse``)
-------------------
The history is what pi itself sends the model (``buildSessionContext`` and
``convertToLlm``), minus the placeholder results it makes up on the fly:

- the active branch: from the last entry of the file (pi's leaf) up its
  ``parentId`` links to the root; entries off it are counted in
  ``meta["off_branch"]``;
- the last ``compaction`` on that branch restarts the history: its summary
  (a user message, in pi's words), then the entries from its
  ``firstKeptEntryId`` (version 1: ``firstKeptEntryIndex``) up to it, then
  those after it;
- ``assistant`` messages become assistant messages: ``text`` blocks as text
  parts, ``thinking`` blocks as ``{"type": "thinking", ...}`` parts,
  ``toolCall`` blocks as calls (their ``arguments`` object as pi stored it);
  a reply that stopped on ``length`` has ``causes`` ``"max_tokens"``;
- an ``assistant`` message that stopped with ``error`` or ``aborted`` is left
  out, as pi leaves it out of every request (its calls never ran: pi's agent
  loop stops there); it is listed in ``meta["skipped_turns"]`` with its line;
- ``toolResult`` messages become tool results (``name``, ``is_error``);
- ``user``, ``custom`` (and version 2's ``hookMessage``) messages,
  ``custom_message`` and ``branch_summary`` entries and ``bashExecution``
  messages (except ``!!`` ones, which pi keeps out of the context) become
  user messages with the text pi sends, ``metadata["pi"]`` naming what they
  were.

The private metadata key ``_src``, as in ``codex``, is each message's index
in ``Parsed.messages``, for ``serialise``.

Writing (``serialise``)
-----------------------
An unchanged session comes back byte for byte. A repaired one keeps every
line it does not have to change. New results and notes become ``message``
entries (``toolResult`` with ``isError: true``, as pi's own placeholders;
``user`` for notes) put on the active branch where the repair put them: the
new entry's ``parentId`` is the entry before it, the entry after it is
re-linked to it, and its line goes right after its parent's, so the file's
last line (pi's leaf) stays the end of the branch. Ids are 8 hex digits, as
pi makes them, derived from the session id and position (the same repair
writes the same file); timestamps are copied from the entry before. A
message the repair dropped loses its line, its neighbours re-linked; a
version 1 compaction's ``firstKeptEntryIndex`` is moved with the lines.
Lines that could not be read are left out of a repaired file.

Not handled: a message inserted between a compaction's summary and its first
kept entry lands after the compaction (the repair never puts one there).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from inspector.formats.base import FormatError, Parsed, Problem, token_count
from inspector.formats.jsondoc import typed_parts
from inspector.formats.jsonl import Record, head_records, read_jsonl
from inspector.formats.private import call_id, kept_calls
from inspector.formats.private import metadata as _md
from inspector.formats.records import SRC, RecordWriter

NAME = "pi"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "pi coding-agent session (JSONL)"
EXTENSION = "jsonl"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 80


_ENTRY_TYPES = frozenset(
    {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
_SKIPPED_STOPS = frozenset({"error", "aborted"})

# pi's own words around summaries (coding-agent/src/core/messages.ts).
COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)

COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUFFIX = "</summary>"

Message = dict[str, Any]


# --------------------------------------------------------------------------- sniff


def sniff(head: bytes) -> float:
    """A pi session starts with its ``{"type": "session", "id": ...}`` header."""
    values = head_records(head, 8)
    if not values:
        return 0.0
    first = values[0]
    if not (isinstance(first, dict) and first.get("type") == "session"):
        return 0.0
    if not isinstance(first.get("id"), str):
        return 0.0
    for value in values[1:]:
        if isinstance(value, dict) and value.get("type") in _ENTRY_TYPES:
            return 0.95
    return 0.85


# The roles whose message pi writes with a ``content``.
_CONTENT_ROLES = ("user", "custom", "hookMessage", "assistant", "toolResult")


# --------------------------------------------------------------------------- timeline facts


def timeline_facts(parsed: Parsed) -> list[dict[str, Any] | None]:
    """Per message, what its entry records: the entry's ``timestamp``, the reply's ``model``
    and ``usage`` (``input`` + ``cacheRead`` + ``cacheWrite`` read, ``output`` written)."""
    state = parsed.state
    if not isinstance(state, _State):
        return []
    return [_facts(state.values[rec]) for rec in state.origin]


def _facts(entry: Any) -> dict[str, Any] | None:
    if not isinstance(entry, dict):
        return None
    found = entry.get("message")
    message: dict[str, Any] = found if isinstance(found, dict) else {}
    spent = message.get("usage")
    usage: dict[str, Any] = spent if isinstance(spent, dict) else {}
    read = [usage.get(key) for key in ("input", "cacheRead", "cacheWrite")]
    tokens_in = sum(n for n in read if isinstance(n, int)) if usage else None
    out = usage.get("output")
    stamp, model = entry.get("timestamp"), message.get("model")
    return {
        "at": stamp if isinstance(stamp, str) else None,
        "model": model if isinstance(model, str) else None,
        "tokens_in": tokens_in,
        "tokens_out": out if isinstance(out, int) else None,
        "cache_read": token_count(usage.get("cacheRead")),
        "cache_write": token_count(usage.get("cacheWrite")),
    }


# --------------------------------------------------------------------------- parse


@dataclass(slots=True)
class _State:
    data: bytes
    records: list[Record]
    values: list[Any]
    header: int  # record index of the session header
    tree: bool  # version 2 or later: entries carry id / parentId
    entries: list[int]  # record indices of the entries, in file order
    keys: dict[int, str]  # record index -> entry id (version 1: made up, "#<n>")
    path: list[int]  # the active branch, root first
    origin: list[int]  # per message: the record it came from
    session_id: str
    final_newline: bool
    crlf: bool


def parse(data: bytes) -> Parsed:
    """Read a session; see the module docstring for what is read how."""
    read = read_jsonl(data)
    problems = list(read.problems)
    records = read.records
    values: list[Any] = [r.value if r.ok else None for r in records]
    header = next((i for i, r in enumerate(records) if r.ok), None)
    if header is None:
        raise FormatError("no line of the file is readable JSON")
    first = values[header]
    if not (isinstance(first, dict) and first.get("type") == "session"):
        raise FormatError("the first line is not a pi session header ({'type': 'session'})")
    if not isinstance(first.get("id"), str):
        raise FormatError("the pi session header has no string 'id'")
    version = first.get("version")
    tree = isinstance(version, int) and not isinstance(version, bool) and version >= 2

    entries: list[int] = []
    for idx in range(header + 1, len(records)):
        rec = records[idx]
        if not rec.ok:
            continue
        value = values[idx]
        if not isinstance(value, dict):
            problems.append(Problem(rec.line, "not a JSON object", "unreadable"))
            continue
        kind = value.get("type")
        if not isinstance(kind, str):
            problems.append(Problem(rec.line, "an entry without a 'type'", "skipped"))
            continue
        if kind == "session":
            continue  # pi reads the first header only and skips any other
        entries.append(idx)

    keys: dict[int, str] = {}
    for n, idx in enumerate(entries):
        entry_id = values[idx].get("id") if tree else None
        keys[idx] = entry_id if isinstance(entry_id, str) else f"#{n}"
    path = _active_branch(entries, values, keys, tree)

    reader = _Reader(records, values, problems, tree, entries)
    reader.run(path)
    off_branch = len(entries) - len(path)
    meta: dict[str, Any] = {
        "session_id": first["id"],
        "version": version if tree else 1,
        "cwd": first.get("cwd"),
        "off_branch": off_branch,
        "skipped_turns": reader.skipped,
    }
    if isinstance(first.get("parentSession"), str):
        meta["parent_session"] = first["parentSession"]
    if isinstance(first.get("branchedFrom"), str):
        meta["parent_session"] = first["branchedFrom"]
    if reader.compaction is not None:
        meta["compaction_line"] = records[reader.compaction].line
    if not reader.messages:
        raise FormatError("the pi session's active branch holds no message pi would send")
    for index, message in enumerate(reader.messages):
        message["metadata"][SRC] = index
    problems.sort(key=lambda p: p.line)
    state = _State(
        data=data,
        records=records,
        values=values,
        header=header,
        tree=tree,
        entries=entries,
        keys=keys,
        path=path,
        origin=reader.origin,
        session_id=first["id"],
        final_newline=read.final_newline,
        crlf=read.crlf,
    )
    sources = [[records[idx].line] for idx in reader.origin]
    return Parsed(NAME, reader.messages, sources, problems, reader.causes, meta=meta, state=state)


def _active_branch(
    entries: list[int], values: list[Any], keys: dict[int, str], tree: bool
) -> list[int]:
    """The entries from the root to pi's leaf (the file's last entry)."""
    if not entries:
        return []
    if not tree:
        return list(entries)
    by_id: dict[str, int] = {}
    for idx in entries:
        by_id[keys[idx]] = idx  # a repeated id: the later entry, as pi's index keeps it
    path: list[int] = []
    seen: set[int] = set()
    current: int | None = entries[-1]
    while current is not None and current not in seen:
        seen.add(current)
        path.append(current)
        parent = values[current].get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) and parent else None
    path.reverse()
    return path


class _Reader:
    """Builds the messages pi would send from the entries of the active branch."""

    def __init__(
        self,
        records: list[Record],
        values: list[Any],
        problems: list[Problem],
        tree: bool,
        entries: list[int],
    ) -> None:
        self.records = records
        self.values = values
        self.problems = problems
        self.tree = tree
        self.entries = entries
        self.messages: list[Message] = []
        self.origin: list[int] = []
        self.causes: dict[int, str] = {}
        self.skipped: list[dict[str, Any]] = []
        self.compaction: int | None = None

    def run(self, path: list[int]) -> None:
        at = None
        for n, idx in enumerate(path):
            if self.values[idx].get("type") == "compaction":
                at = n
        if at is None:
            for idx in path:
                self.entry(idx)
            return
        idx = path[at]
        self.compaction = idx
        compaction = self.values[idx]
        summary = compaction.get("summary")
        text = COMPACTION_PREFIX + (summary if isinstance(summary, str) else "") + COMPACTION_SUFFIX
        self.add(_user(text, "compaction"), idx)
        first_kept = self._first_kept(compaction)
        keeping = False
        for idx in path[:at]:
            if idx == first_kept:
                keeping = True
            if keeping:
                self.entry(idx)
        for idx in path[at + 1 :]:
            self.entry(idx)

    def _first_kept(self, compaction: dict[str, Any]) -> int | None:
        """The record a compaction keeps from."""
        if self.tree or "firstKeptEntryId" in compaction:
            wanted = compaction.get("firstKeptEntryId")
            for idx in self.entries:
                if self.values[idx].get("id") == wanted and wanted is not None:
                    return idx
            return None
        index = compaction.get("firstKeptEntryIndex")
        if not isinstance(index, int) or isinstance(index, bool) or index < 1:
            return None
        # pi's index counts the readable lines, the header first.
        readable = [i for i, r in enumerate(self.records) if r.ok]
        return readable[index] if index < len(readable) else None

    def add(self, message: Message, idx: int) -> None:
        self.messages.append(message)
        self.origin.append(idx)

    def entry(self, idx: int) -> None:
        value = self.values[idx]
        kind = value.get("type")
        line = self.records[idx].line
        if kind == "custom_message":
            self.add(_user_content(value.get("content"), "custom_message"), idx)
        elif kind == "branch_summary":
            summary = value.get("summary")
            if isinstance(summary, str) and summary:
                self.add(_user(BRANCH_PREFIX + summary + BRANCH_SUFFIX, "branch_summary"), idx)
        elif kind == "message":
            message = value.get("message")
            if not isinstance(message, dict):
                self.problems.append(Problem(line, "a message entry without a message", "skipped"))
                return
            self.message(idx, line, message)

    def message(self, idx: int, line: int, message: dict[str, Any]) -> None:
        role = message.get("role")
        if role in _CONTENT_ROLES and "content" not in message:
            if role == "assistant" and message.get("stopReason") in _SKIPPED_STOPS:
                pass  # a stopped turn pi leaves out: read below, for what it says of the stop
            else:
                # Its words are elsewhere (another version's field): read as a blank
                # message, a repair would drop it, so the file is refused instead.
                fields = ", ".join(sorted(k for k in message if k != "role")) or "none"
                raise FormatError(
                    f"line {line}: a {role} message without 'content' (it holds {fields}),"
                    " which this reader does not know",
                    unread=True,
                )
        if role == "user":
            self.add(_user_content(message.get("content"), None), idx)
        elif role in ("custom", "hookMessage"):
            self.add(_user_content(message.get("content"), "custom"), idx)
        elif role == "bashExecution":
            if not message.get("excludeFromContext"):
                self.add(_user(_bash_text(message), "bashExecution"), idx)
        elif role == "branchSummary":
            summary = message.get("summary")
            text = BRANCH_PREFIX + (summary if isinstance(summary, str) else "") + BRANCH_SUFFIX
            self.add(_user(text, "branchSummary"), idx)
        elif role == "compactionSummary":
            summary = message.get("summary")
            text = COMPACTION_PREFIX + (summary if isinstance(summary, str) else "")
            self.add(_user(text + COMPACTION_SUFFIX, "compactionSummary"), idx)
        elif role == "assistant":
            stop = message.get("stopReason")
            if stop in _SKIPPED_STOPS:
                turn: dict[str, Any] = {"line": line, "stop_reason": stop}
                if isinstance(message.get("errorMessage"), str):
                    turn["error"] = message["errorMessage"]
                self.skipped.append(turn)
                return
            made = _assistant(message)
            if isinstance(made, str):
                self.problems.append(Problem(line, made, "unreadable"))
                return
            if stop == "length":
                self.causes[len(self.messages)] = "max_tokens"
            self.add(made, idx)
        elif role == "toolResult":
            call = message.get("toolCallId")
            metadata: dict[str, Any] = {"tool_call_id": call if isinstance(call, str) else ""}
            if isinstance(message.get("toolName"), str):
                metadata["name"] = message["toolName"]
            if isinstance(message.get("isError"), bool):
                metadata["is_error"] = message["isError"]
            self.add(
                {"role": "tool", "content": _content(message.get("content")), "metadata": metadata},
                idx,
            )
        else:
            self.problems.append(Problem(line, f"a message with unknown role {role!r}", "skipped"))


def _user(text: str, kind: str | None) -> Message:
    metadata: dict[str, Any] = {"pi": kind} if kind else {}
    return {"role": "user", "content": [{"type": "text", "text": text}], "metadata": metadata}


def _user_content(content: Any, kind: str | None) -> Message:
    metadata: dict[str, Any] = {"pi": kind} if kind else {}
    return {"role": "user", "content": _content(content), "metadata": metadata}


def _bash_text(message: dict[str, Any]) -> str:
    """pi's ``bashExecutionToText``."""
    output = message.get("output")
    text = f"Ran `{message.get('command')}`\n"
    text += f"```\n{output}\n```" if output else "(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif code is not None and code != 0:
        text += f"\n\nCommand exited with code {code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _content(content: Any) -> Any:
    """pi content (a string, or text / image / thinking blocks) as canonical content."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return typed_parts(content, _block)


def _block(block: dict[str, Any]) -> Any:
    kind = block["type"]
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if kind == "image" and isinstance(block.get("data"), str):
        return {"type": "image", "media_type": block.get("mimeType"), "data": block["data"]}
    if kind == "thinking":
        return _thinking(block, "thinkingSignature", "signature")
    return block


def _thinking(block: dict[str, Any], signature: str, as_key: str) -> dict[str, Any]:
    """A thinking block, its signature moved from ``signature`` to ``as_key``: pi's is
    ``thinkingSignature``, canonical's ``signature``."""
    out: dict[str, Any] = {"type": "thinking", "thinking": block.get("thinking", "")}
    if signature in block:
        out[as_key] = block[signature]
    return out


def _assistant(message: dict[str, Any]) -> Message | str:
    content = message.get("content")
    if content is not None and not isinstance(content, list | str):
        return "an assistant message whose content is not a list of blocks"
    blocks = content if isinstance(content, list) else []
    calls: list[dict[str, Any]] = []
    others: list[Any] = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            call_id = block.get("id")
            name = block.get("name")
            calls.append(
                {
                    "tool_call_id": call_id if isinstance(call_id, str) else "",
                    "name": name if isinstance(name, str) else "",
                    "arguments": block.get("arguments", {}),
                }
            )
        else:
            others.append(block)
    metadata: dict[str, Any] = {}
    if calls:
        metadata["tool_calls"] = calls
    text: Any = content if isinstance(content, str) else _content(others)
    return {"role": "assistant", "content": text, "metadata": metadata}


# --------------------------------------------------------------------------- serialise


@dataclass(slots=True, eq=False)
class _New:
    """An entry the writer makes: its value and the record its line follows."""

    value: dict[str, Any]
    key: str
    after: int | _New | None = None


class _Writer(RecordWriter[_State]):
    """``changed`` holds each entry's new value; the file's order is the active branch's."""

    STATE = _State
    # An orphan result the repair turned into a note: its entry is the note's.
    ROLE_CHANGES = {"tool": ("user",)}

    def __init__(self, state: _State, before: list[Message]) -> None:
        super().__init__(state, before)
        self.removed: set[int] = set()
        self.moved: set[int] = set()
        self.kept: set[int] = set()  # entries some repaired message comes from
        # The branch as the walk places it: (entry, new or moved).
        self.placed: list[tuple[int | _New, bool]] = []
        self.keys = dict(state.keys)  # with the ids the writer gives (never the parse's)
        self.taken = set(state.keys.values())
        self.made = 0

    def on_new(self, m: Message) -> None:
        self.placed.append((self._new_entry(m, self.placed), True))

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        rec = self.state.origin[src]
        self.kept.add(rec)
        new_value = self._changed(m, src, rec)
        if new_value is not None:
            self.changed[rec] = new_value
        if moved and rec not in self.moved and self._movable(rec):
            self.moved.add(rec)
            self.placed.append((rec, True))
        else:
            self.placed.append((rec, False))

    def on_dropped(self, src: int) -> None:
        # An entry whose every message the repair dropped loses its line.
        rec = self.state.origin[src]
        if rec not in self.kept and self._movable(rec):
            self.removed.add(rec)

    def _movable(self, rec: int) -> bool:
        """A ``message`` entry (not a compaction or a summary entry)."""
        value = self.state.values[rec]
        return isinstance(value, dict) and value.get("type") == "message"

    # The chain is the active branch as the repaired file will have it: record
    # indices (original entries) and _New entries, root first.
    def _chain(self, placed: list[tuple[int | _New, bool]]) -> list[int | _New]:
        state = self.state
        out_of_place = self.removed | self.moved
        chain: list[int | _New] = [rec for rec in state.path if rec not in out_of_place]
        anchor: int | _New | None = None
        for entry, insert in placed:
            if not insert:
                anchor = entry
                continue
            if anchor is None:
                # Before the first message that stays: at the start of its run.
                first = next((e for e, ins in placed if not ins), None)
                at = chain.index(first) if first is not None and first in chain else len(chain)
                while at > 0 and not self._is_message_entry(chain[at - 1]):
                    at -= 1
            else:
                at = chain.index(anchor) + 1
            chain.insert(at, entry)
            if isinstance(entry, _New):
                entry.after = chain[at - 1] if at > 0 else None
            anchor = entry
        return chain

    def _is_message_entry(self, entry: int | _New) -> bool:
        return isinstance(entry, _New) or self._movable(entry)

    # --- making entries ---------------------------------------------------------------

    def _new_entry(self, m: Message, placed: list[tuple[int | _New, bool]]) -> _New:
        state = self.state
        near = next((e for e, _ in reversed(placed)), None)
        stamp = self._stamp_of(near)
        key = self._new_id()
        message = _pi_message(m, stamp[1], self._last_assistant(placed))
        value: dict[str, Any] = {"type": "message"}
        if state.tree:
            value |= {"id": key, "parentId": None}
        value |= {"timestamp": stamp[0], "message": message}
        return _New(value, key)

    def _stamp_of(self, entry: int | _New | None) -> tuple[Any, int]:
        """The ISO and millisecond timestamps a new entry copies from its neighbour."""
        if isinstance(entry, _New):
            return entry.value["timestamp"], entry.value["message"].get("timestamp", 0)
        value = self.state.values[entry if entry is not None else self.state.header]
        iso = value.get("timestamp") if isinstance(value, dict) else None
        if iso is None:
            iso = self.state.values[self.state.header].get("timestamp")
        message = value.get("message") if isinstance(value, dict) else None
        ms = message.get("timestamp") if isinstance(message, dict) else None
        if not isinstance(ms, int) or isinstance(ms, bool):
            ms = _millis(iso)
        return iso, ms

    def _last_assistant(self, placed: list[tuple[int | _New, bool]]) -> dict[str, Any] | None:
        for entry, _ in reversed(placed):
            if isinstance(entry, int):
                message = self.state.values[entry].get("message")
                if isinstance(message, dict) and message.get("role") == "assistant":
                    return message
        return None

    def _new_id(self) -> str:
        while True:
            self.made += 1
            seed = f"{self.state.session_id}:{self.made}".encode()
            key = hashlib.sha256(seed).hexdigest()[:8]
            if key not in self.taken:
                self.taken.add(key)
                return key

    def _changed(self, m: Message, src: int, rec: int) -> dict[str, Any] | None:
        """The entry's new value for a message the repair changed, or None."""
        old = self.before[src]
        if m == old:
            return None
        value = self.state.values[rec]
        message = value.get("message")
        if value.get("type") != "message" or not isinstance(message, dict):
            return None  # a summary or custom entry: the repair never changes those
        role = m.get("role")
        metadata = _md(m)
        if role == "user":
            new_message: dict[str, Any] = {
                "role": "user",
                "content": _pi_content(m.get("content")),
                "timestamp": message.get("timestamp", self._stamp_of(rec)[1]),
            }
        elif role == "tool":
            new_message = dict(message)
            new_message["toolCallId"] = call_id(metadata)
            if m.get("content") != old.get("content"):
                new_message["content"] = _pi_content(m.get("content"))
        else:
            new_message = _rewrite_assistant(message, old, m)
        return {**value, "message": new_message}

    # --- writing ----------------------------------------------------------------------

    def order(self) -> list[Any]:
        """The active branch relinked (each entry's ``parentId`` the entry before it), in
        the file's order: the original lines, new and moved entries right after the line
        before them on the branch; the branch's end last (pi's leaf)."""
        state = self.state
        chain = self._chain(self.placed)
        values = self.changed
        if state.tree:
            root_parent = None
            if chain and isinstance(chain[0], int):
                root_parent = state.values[chain[0]].get("parentId")
            resolves: dict[str, int] = {}
            for idx in state.entries:
                key = state.values[idx].get("id")
                if isinstance(key, str) and key:
                    resolves[key] = idx  # pi's index: a repeated id is the later entry's
            for n, entry in enumerate(chain):
                parent: Any = root_parent
                if n > 0:
                    before = chain[n - 1]
                    parent = self._key(before)
                    if isinstance(before, int) and resolves.get(parent) != before:
                        # The old leaf had no id of its own (none, or a repeated one):
                        # it needs one now that an entry follows it.
                        parent = self._new_id()
                        old = values.get(before, state.values[before])
                        values[before] = {**old, "id": parent}
                        self.keys[before] = parent
                        resolves[parent] = before
                if isinstance(entry, _New):
                    entry.value["parentId"] = parent
                    continue
                value = values.get(entry, state.values[entry])
                if value.get("parentId") != parent:
                    values[entry] = {**value, "parentId": parent}
        out_of_place = self.removed | self.moved
        followers: dict[int | None, list[int | _New]] = {}
        for n, entry in enumerate(chain):
            if isinstance(entry, _New) or entry in self.moved:
                followers.setdefault(self._line_anchor(chain, n), []).append(entry)
        order: list[int | _New] = []

        def follow(key: int | None) -> None:
            for entry in followers.get(key, []):
                order.append(entry)

        follow(None)
        # Only the header and the entries: a repaired file holds no line pi skips.
        for idx in [state.header, *state.entries]:
            if idx in out_of_place:
                continue
            order.append(idx)
            follow(idx)
        if not state.tree:
            # Version 1 is read in file order: the chain is the order.
            order = [state.header, *chain]
        elif chain and not _same(order[-1], chain[-1]):
            leaf = chain[-1]
            order = [e for e in order if not _same(e, leaf)]
            order.append(leaf)
        if not state.tree:
            self._move_kept_indices(order, values)
        return order

    def new_record(self, item: Any) -> Any:
        return item.value

    def _line_anchor(self, chain: list[int | _New], n: int) -> int | None:
        """The original line a new or moved entry's line follows: the branch's last
        entry before it that stays where it was (None: before every line)."""
        for entry in reversed(chain[:n]):
            if isinstance(entry, int) and entry not in self.moved:
                return entry
        return None

    def _key(self, entry: int | _New) -> str:
        if isinstance(entry, _New):
            return entry.key
        return self.keys[entry]

    def _move_kept_indices(self, order: list[int | _New], values: dict[int, Any]) -> None:
        """Version 1: point each compaction's ``firstKeptEntryIndex`` at its entry again."""
        state = self.state
        readable = [i for i, r in enumerate(state.records) if r.ok]
        position = {entry: n for n, entry in enumerate(order) if isinstance(entry, int)}
        for entry in order:
            if not isinstance(entry, int):
                continue
            value = values.get(entry, state.values[entry])
            if not isinstance(value, dict) or value.get("type") != "compaction":
                continue
            index = value.get("firstKeptEntryIndex")
            if not isinstance(index, int) or isinstance(index, bool) or not 0 < index:
                continue
            # The kept entry, or where the repair removed it, the next one still there.
            later = next((r for r in readable[index:] if r in position), None)
            if later is None:
                continue
            new_index = position[later]
            if new_index != index:
                values[entry] = {**value, "firstKeptEntryIndex": new_index}


serialise = _Writer.serialise


def _same(a: int | _New, b: int | _New) -> bool:
    if isinstance(a, _New) or isinstance(b, _New):
        return a is b
    return a == b


def _millis(iso: Any) -> int:
    if isinstance(iso, str):
        try:
            return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            return 0
    return 0


def _pi_content(content: Any) -> list[Any]:
    """Canonical content as pi blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts = content if isinstance(content, list) else []
    return [_pi_block(part) for part in parts if isinstance(part, dict)]


def _pi_block(part: dict[str, Any]) -> Any:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text", "")}
    if kind == "image" and "data" in part:
        return {"type": "image", "data": part["data"], "mimeType": part.get("media_type")}
    if kind == "image":  # pi holds images by their data only
        return {"type": "text", "text": f"[image: {part.get('url')}]"}
    if kind == "thinking":
        return _thinking(part, "signature", "thinkingSignature")
    return part


def _pi_message(m: Message, stamp: int, assistant: dict[str, Any] | None) -> dict[str, Any]:
    """A pi message for a canonical message the repair made."""
    role = m.get("role")
    metadata = _md(m)
    content = m.get("content")
    if role == "tool":
        out: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call_id(metadata),
            "toolName": metadata.get("name") or "",
            "content": _pi_content(content),
            "isError": True if metadata.get("healed") else bool(metadata.get("is_error")),
            "timestamp": stamp,
        }
        return out
    if role == "assistant":
        blocks = _pi_content(content)
        for call in metadata.get("tool_calls") or []:
            if isinstance(call, dict):
                blocks.append(
                    {
                        "type": "toolCall",
                        "id": call_id(call),
                        "name": call.get("name") or "",
                        "arguments": call.get("arguments") or {},
                    }
                )
        like = assistant or {}
        return {
            "role": "assistant",
            "content": blocks,
            "api": like.get("api", ""),
            "provider": like.get("provider", ""),
            "model": like.get("model", ""),
            "usage": {
                "input": 0,
                "output": 0,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": "toolUse" if metadata.get("tool_calls") else "stop",
            "timestamp": stamp,
        }
    # A user message (notes) and anything else the history holds as one.
    return {"role": "user", "content": _pi_content(content), "timestamp": stamp}


def _rewrite_assistant(message: dict[str, Any], old: Message, new: Message) -> dict[str, Any]:
    """The assistant message with the repair's changes: calls renamed or removed."""
    kept = kept_calls(old["metadata"].get("tool_calls") or [], _md(new).get("tool_calls") or [])
    content = message.get("content")
    text_changed = new.get("content") != old.get("content")
    out: list[Any] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            ids = kept()
            if ids is not None:  # else: the repair removed this call
                out.append(block if ids[1] == block.get("id") else {**block, "id": ids[1]})
        elif not text_changed:
            out.append(block)
    if text_changed:
        out[:0] = _pi_content(new.get("content"))
    return {**message, "content": out}
