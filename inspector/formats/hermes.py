"""Hermes Agent's session files (NousResearch/hermes-agent, ``~/.hermes/sessions/``).

Hermes keeps a session three ways, all under ``$HERMES_HOME`` (``~/.hermes``):
its SQLite store ``state.db`` (what ``hermes --resume`` reads), and two
files this module reads:

- the **session log** ``sessions/session_<id>.json``, which
  ``AIAgent._save_session_log`` rewrites after every step::

      {"session_id", "model", "base_url", "platform", "session_start",
       "last_updated", "message_count", "messages": [...]}

  (``json.dump(..., indent=2, ensure_ascii=False)``; newer builds add keys
  such as ``system_prompt`` and ``tools``, kept as they are; a log written
  from Hermes's store may hold its role-only ``{"role": "session_meta"}``
  rows among the messages, kept where they stand and not read);
- the gateway's **transcript** ``sessions/<id>.jsonl`` (``SessionStore.
  append_to_transcript``: one ``json.dumps(message)`` a line, after a
  ``{"role": "session_meta", "tools", "model", "platform", "timestamp"}``
  line), which older gateways load a conversation from.

The messages in both are OpenAI Chat messages as the agent holds them, with
Hermes's own keys beside the API's: ``reasoning``, ``finish_reason``,
``reasoning_details`` on a reply, ``call_id`` / ``response_item_id`` on a
call (the id a result answers is ``call_id``, as ``openai_chat`` reads it),
``tool_name`` on a result, ``timestamp`` on a transcript line. They are read
by ``openai_chat``'s reader, strictly: a message it cannot read (a role it
does not know, content of another type) refuses the file (``FormatError``,
``unread``: a Hermes file is no other shape's), where a plain Chat file would
lose it on a repair.

Writing (``serialise``) gives the file back byte for byte when nothing
changed. Otherwise every untouched message is written as it was, with its
keys; a result the repair adds carries ``tool_name`` (the call's name), as
Hermes's own do; the log's ``message_count`` is the new count; the
transcript's other lines (``session_meta``) stay where they were. The
timeline shows the session's ``model`` on each reply and, for a transcript,
each line's ``timestamp`` (ISO text, or the Unix seconds of a ``state.db`` row) and a
reply's ``token_count`` where the line has one.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from inspector.formats import jsonl, openai_chat
from inspector.formats.base import FormatError, Parsed
from inspector.formats.jsondoc import dump_like, read_json
from inspector.formats.private import REC, Message, calls_of, metadata

NAME = "hermes"
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Hermes Agent session (JSON / JSONL)"
EXTENSION = "json"

# A Hermes message is read with the content written in it (openai_chat's rule).
BLANK_IS_WRITTEN = True

# The keys of the session log beside its messages; one of the last four must be there.
_LOG_MARKS = ("session_start", "last_updated", "message_count", "base_url")
_LOG_START = re.compile(rb'^\s*\{\s*"session_id"\s*:\s*"[^"]*"\s*,\s*"model"\s*:')
_META = re.compile(rb'^\s*\{\s*"role"\s*:\s*"session_meta"')


def sniff(head: bytes) -> float:
    """The log opens on ``session_id`` then ``model``; a transcript on its ``session_meta``."""
    if _LOG_START.match(head) and b'"messages"' in head:
        return 0.95 if any(b'"' + key.encode() + b'"' in head for key in _LOG_MARKS) else 0.0
    if _META.match(head):
        return 0.95
    return 0.0


def parse(data: bytes) -> Parsed:
    if _META.match(data[:4096]):
        return _transcript(data)
    doc = read_json(data)
    if not (
        isinstance(doc, dict)
        and isinstance(doc.get("session_id"), str)
        and isinstance(doc.get("messages"), list)
        and any(key in doc for key in _LOG_MARKS)
    ):
        raise FormatError(
            "not a Hermes session log ({'session_id', 'messages', 'session_start', ...})"
        )
    try:
        parsed = openai_chat._parse_document(doc, data, None)
    except FormatError as exc:
        raise FormatError(f"a Hermes session log: {exc}", unread=True) from None
    # Hermes's store holds role-only session_meta rows among the messages, and a log
    # written from it carries them: bookkeeping, kept where they stand (as in a transcript).
    kept = [i for i, record in enumerate(doc["messages"]) if _is_meta(record)]
    parsed.problems = [p for p in parsed.problems if p.line - 1 not in kept]
    parsed.state["kept"] = kept
    _refuse_unread(parsed, "message")
    parsed.format = NAME
    parsed.meta |= {
        "container": "hermes-log",
        "session_id": doc["session_id"],
        "model": doc.get("model"),
        "platform": doc.get("platform"),
    }
    return parsed


def _transcript(data: bytes) -> Parsed:
    try:
        parsed = openai_chat._parse_jsonl(data, None, None)
    except FormatError as exc:
        raise FormatError(f"a Hermes transcript: {exc}", unread=True) from None
    lines = parsed.state["lines"]
    metas = [r.value for r in lines if r.ok and _is_meta(r.value)]
    # session_meta lines are Hermes's own bookkeeping, kept in place; anything else unread
    # would be lost from a repaired file.
    parsed.problems = [p for p in parsed.problems if not _meta_line(lines, p.line)]
    _refuse_unread(parsed, "line")
    parsed.format = NAME
    first = metas[0] if metas else {}
    parsed.meta |= {
        "container": "hermes-transcript",
        "model": first.get("model"),
        "platform": first.get("platform"),
    }
    return parsed


def _is_meta(value: Any) -> bool:
    return isinstance(value, dict) and value.get("role") == "session_meta"


def _meta_line(lines: list[jsonl.Record], line: int) -> bool:
    return any(r.line == line and r.ok and _is_meta(r.value) for r in lines)


def _refuse_unread(parsed: Parsed, what: str) -> None:
    # A message openai_chat cannot read is left out of what it writes: refused instead.
    for problem in parsed.problems:
        if problem.kind in ("unreadable", "skipped"):
            raise FormatError(
                f"{what} {problem.line} of a Hermes session: {problem.reason}", unread=True
            )


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = original.state
    if not isinstance(state, dict) or "data" not in state:
        raise FormatError("serialise needs the Parsed that parse() returned for this file")
    if messages == original.messages:
        return openai_chat.serialise(messages, original)  # the bytes (a glued line split)
    names = _call_names(messages)

    def make(message: Message, template: dict[str, Any] | None) -> dict[str, Any]:
        out = openai_chat._wire_message(message, template)
        name = names.get(str(metadata(message).get("tool_call_id")))
        if template is None and message["role"] == "tool" and name:
            out.pop("name", None)
            out["tool_name"] = name
        return out

    if state["mode"] == "jsonl":
        return openai_chat._serialise_jsonl(messages, original, make)
    doc = state["doc"]
    wire = openai_chat._wire_list(messages, state["records"], None, make)
    out = {**doc, "messages": _with_kept(messages, wire, doc["messages"], state.get("kept", []))}
    if "message_count" in doc:
        out["message_count"] = len(wire)
    return dump_like(out, state["data"])


def _with_kept(
    messages: list[Message], wire: list[dict[str, Any]], records: list[Any], kept: list[int]
) -> list[Any]:
    """``wire`` with each kept record (a session_meta row) before the message that followed it."""
    pending = sorted(kept)
    out: list[Any] = []
    for message, record in zip(messages, wire, strict=True):
        rec = metadata(message).get(REC)
        while pending and isinstance(rec, int) and pending[0] < rec:
            out.append(records[pending.pop(0)])
        out.append(record)
    out.extend(records[i] for i in pending)
    return out


def _call_names(messages: list[Message]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        for call in calls_of(message):
            if isinstance(call.get("name"), str):
                names[str(call.get("tool_call_id"))] = call["name"]
    return names


def timeline_facts(parsed: Parsed) -> list[dict[str, Any] | None]:
    """Per message: the session's ``model`` on a reply; a transcript line's ``timestamp``."""
    state = parsed.state
    if not isinstance(state, dict) or "data" not in state:
        return []
    model = parsed.meta.get("model") if isinstance(parsed.meta.get("model"), str) else None
    lines = state.get("lines") if state.get("mode") == "jsonl" else None
    facts: list[dict[str, Any] | None] = []
    for message in parsed.messages:
        rec = metadata(message).get(REC)
        value = lines[rec].value if lines is not None and isinstance(rec, int) else None
        line = value if isinstance(value, dict) else {}
        reply = message["role"] == "assistant"
        tokens = line.get("token_count") if reply else None
        facts.append(
            {
                "at": _time(line.get("timestamp")),
                "model": model if reply else None,
                "tokens_in": None,
                "tokens_out": tokens if isinstance(tokens, int) and tokens >= 0 else None,
            }
        )
    return facts


def _time(stamp: Any) -> str | None:
    """A line's time: the gateway writes ISO text, Hermes's ``state.db`` Unix seconds."""
    if isinstance(stamp, str):
        return stamp
    if isinstance(stamp, int | float) and not isinstance(stamp, bool) and stamp > 0:
        try:
            return datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):  # no time a clock can show: none
            return None
    return None
