"""pydantic-ai message histories (``ModelMessagesTypeAdapter.dump_json`` output).

A history is a JSON list of messages, ``{"kind": "request" | "response",
"parts": [...], ...}`` (also read inside an object's ``"messages"`` list).
Request parts (``part_kind``): ``system-prompt``, ``user-prompt``,
``tool-return``, ``retry-prompt``, ``builtin-tool-return``; response parts:
``text``, ``thinking``, ``tool-call``, ``builtin-tool-call``,
``builtin-tool-return``, ``file``.

Reading (``parse``)
-------------------
- Each request part is a message: ``system-prompt`` a system message,
  ``user-prompt`` a user message (text, ``image-url`` and binary images as
  image parts, other items kept as they are), ``tool-return`` a tool result
  (``name``; ``is_error`` when its ``outcome`` is ``failed``; content that is
  not text as its JSON), ``retry-prompt`` with a ``tool_name`` the result the
  call got (its validation errors, ``is_error``), without one a user message
  asking for a retry, as pydantic-ai sends it.
- Each response is one assistant message: ``text`` parts as text,
  ``thinking`` parts as ``{"type": "thinking", ...}``, ``tool-call`` parts as
  calls (``args`` as stored: a JSON string or an object); parts the provider
  ran itself (``builtin-tool-*``) and files are kept as parts of their own.
  ``finish_reason`` ``length`` is the ``"max_tokens"`` cause, ``error``
  ``"api_error"``; a response whose ``state`` is ``interrupted`` or
  ``incomplete``, ``"turn_aborted"`` / ``"stream_ended"``.
- ``sources`` are 1-based message numbers in the list. A message that is not
  an object with a known ``kind`` and a ``parts`` list, and a part that is not
  an object with a ``part_kind``, is a ``Problem``.

Writing (``serialise``)
-----------------------
An unchanged history comes back byte for byte; otherwise the list is dumped
again with every untouched message and part as it was. A result the repair
made is the ``tool-return`` part pydantic-ai makes when it repairs a history
itself (``outcome: "interrupted"``, ``metadata``
``{"pydantic_ai_synthesized_tool_return": true}``, the response's timestamp),
in the request after the call, after its other results (a request of its own
when another response follows); a note is a ``user-prompt`` part. Renamed
calls are renamed in the ``tool-call`` and in the result.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.detect import Alternatives, opens_json
from inspector.formats.jsondoc import dump_list, message_list, written_state
from inspector.formats.jsondoc import text_of as _joined
from inspector.formats.jsondoc import text_or_json as _text
from inspector.formats.private import PART, REC, Message, call_id, kept_calls, public
from inspector.formats.private import metadata as _md

NAME = "pydantic-ai"
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "pydantic-ai message history"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 110

SYNTHESIZED = "pydantic_ai_synthesized_tool_return"

# Request parts that are no message: kept in their request, never read as one.
_NOT_MESSAGES = frozenset({"builtin-tool-return", "instruction", "tool-availability-delta"})
_STRONG = Alternatives(
    rb'"part_kind"\s*:\s*"(user-prompt|system-prompt|tool-call|tool-return|retry-prompt|text)"',
)

_KIND = re.compile(rb'"kind"\s*:\s*"(request|response)"')
_CAUSES = {"length": "max_tokens", "error": "api_error"}
_STATES = {"interrupted": "turn_aborted", "incomplete": "stream_ended"}


# --------------------------------------------------------------------------- sniff


def sniff(head: bytes) -> float:
    if not opens_json(head):
        return 0.0
    if _STRONG.search(head) and _KIND.search(head):
        return 0.95
    return 0.0


# --------------------------------------------------------------------------- parse


def parse(data: bytes) -> Parsed:
    records, wrapper = message_list(
        data, "not a list of pydantic-ai messages (nor an object with 'messages')"
    )
    if not any(isinstance(r, dict) and r.get("kind") in ("request", "response") for r in records):
        raise FormatError("no message has 'kind' 'request' or 'response'")
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems: list[Problem] = []
    causes: dict[int, str] = {}
    meta: dict[str, Any] = {"instructions": 0, "container": "list" if wrapper is None else "object"}
    for rec, record in enumerate(records):
        number = rec + 1
        reason = _bad_record(record)
        if reason and isinstance(record, dict) and record.get("kind") in ("request", "response"):
            # A message whose words are not in 'parts': named as not read, the writer would
            # leave it out of a repaired file. The file is refused instead.
            held = ", ".join(repr(k) for k in record if k != "kind")
            raise FormatError(f"message {number}: {reason} (it holds {held or 'nothing else'})")
        if reason:
            problems.append(Problem(number, reason))
            continue
        if record["kind"] == "response":
            message = _response(record, problems, number)
            message["metadata"][REC] = rec
            cause = _STATES.get(record.get("state")) or _CAUSES.get(record.get("finish_reason"))
            if cause is not None:
                causes[len(messages)] = cause
            messages.append(message)
            sources.append([number])
            continue
        if isinstance(record.get("instructions"), str):
            meta["instructions"] += 1
        for n, part in enumerate(record["parts"]):
            made = _request_part(part)
            if isinstance(made, str):
                problems.append(Problem(number, made, "skipped"))
                continue
            if made is None:
                continue
            made["metadata"][REC] = rec
            made["metadata"][PART] = n
            messages.append(made)
            sources.append([number])
    if not messages:
        raise FormatError("no message holds a part this reader knows")
    state = {"data": data, "records": records, "wrapper": wrapper}
    return Parsed(NAME, messages, sources, problems, causes=causes, meta=meta, state=state)


def _bad_record(record: Any) -> str:
    if not isinstance(record, dict):
        return "a message must be an object"
    if record.get("kind") not in ("request", "response"):
        return f"kind {record.get('kind')!r} is neither 'request' nor 'response'"
    if not isinstance(record.get("parts"), list):
        return "a message without a 'parts' list"
    return ""


def _without_content(part: dict[str, Any]) -> str:
    """Why a part that should hold words but has no 'content' is not read."""
    held = ", ".join(repr(k) for k in part if k != "part_kind")
    return (
        f"a {part['part_kind']} part without 'content' (it holds {held or 'nothing else'}):"
        " its words are under a field this reader does not know, so the file was not read"
    )


def _request_part(part: Any) -> Message | str | None:
    """The canonical message of one request part; None for a part that is none; why not."""
    if not isinstance(part, dict) or not isinstance(part.get("part_kind"), str):
        return "a part that is not an object with a 'part_kind'"
    kind = part["part_kind"]
    if kind in ("system-prompt", "user-prompt") and "content" not in part:
        raise FormatError(_without_content(part))
    if kind == "system-prompt":
        return {"role": "system", "content": _text(part.get("content")), "metadata": {}}
    if kind == "user-prompt":
        return {"role": "user", "content": _user_content(part.get("content")), "metadata": {}}
    if kind in ("tool-return", "retry-prompt") and (
        kind == "tool-return" or isinstance(part.get("tool_name"), str)
    ):
        call = part.get("tool_call_id")
        metadata: dict[str, Any] = {"tool_call_id": call if isinstance(call, str) else ""}
        if isinstance(part.get("tool_name"), str):
            metadata["name"] = part["tool_name"]
        if kind == "retry-prompt" or part.get("outcome") == "failed":
            metadata["is_error"] = True
        return {"role": "tool", "content": _text(part.get("content")), "metadata": metadata}
    if kind == "retry-prompt":
        return {"role": "user", "content": _text(part.get("content")), "metadata": {}}
    if kind in _NOT_MESSAGES:
        return None  # instructions and tool lists: not messages
    return f"a request part of unknown kind {kind!r}"


def _response(record: dict[str, Any], problems: list[Problem], number: int) -> Message:
    content: list[Any] = []
    calls: list[dict[str, Any]] = []
    for part in record["parts"]:
        if not isinstance(part, dict) or not isinstance(part.get("part_kind"), str):
            problems.append(Problem(number, "a part that is not an object with a 'part_kind'"))
            content.append({"type": "text", "text": orjson.dumps(part).decode()})
            continue
        kind = part["part_kind"]
        if kind in ("text", "thinking") and "content" not in part:
            raise FormatError(_without_content(part))
        if kind == "text":
            content.append({"type": "text", "text": _text(part.get("content"))})
        elif kind == "thinking":
            content.append({"type": "thinking", "thinking": _text(part.get("content"))})
        elif kind == "tool-call":
            call = part.get("tool_call_id")
            name = part.get("tool_name")
            args = part.get("args")
            calls.append(
                {
                    "tool_call_id": call if isinstance(call, str) else "",
                    "name": name if isinstance(name, str) else "",
                    "arguments": {} if args is None else args,
                }
            )
        else:
            content.append({**part, "type": kind})  # provider-run tools, files: as they are
    metadata: dict[str, Any] = {"tool_calls": calls} if calls else {}
    return {"role": "assistant", "content": content, "metadata": metadata}


def _user_content(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return _text(value)
    out: list[Any] = []
    for item in value:
        if isinstance(item, str):
            out.append({"type": "text", "text": item})
        elif isinstance(item, dict) and item.get("kind") == "image-url" and "url" in item:
            out.append({"type": "image", "url": item["url"]})
        elif (
            isinstance(item, dict)
            and item.get("kind") == "binary"
            and str(item.get("media_type", "")).startswith("image/")
            and isinstance(item.get("data"), str)
        ):
            out.append({"type": "image", "media_type": item["media_type"], "data": item["data"]})
        elif isinstance(item, dict) and isinstance(item.get("kind"), str):
            out.append({**item, "type": item["kind"]})
        else:
            out.append({"type": "text", "text": _text(item)})
    return out


# --------------------------------------------------------------------------- serialise


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = written_state(original, "records")
    if messages == original.messages:
        return bytes(state["data"])
    return dump_list(_Writer(state["records"], original.messages).write(messages), state)


class _Writer:
    def __init__(self, records: list[Any], before: list[Message]) -> None:
        self.records = records
        # The parsed message of each (record, part): to tell an untouched part.
        self.parsed: dict[tuple[int, int | None], Message] = {}
        for m in before:
            md = m["metadata"]
            self.parsed[(md[REC], md.get(PART))] = m
        self.stamp: Any = None  # the timestamp new parts copy: the last response's

    def write(self, messages: list[Message]) -> list[Any]:
        out: list[Any] = []
        group: list[Message] = []
        group_rec: int | None = None
        for m in messages:
            rec, _ = _origin(m)
            if m.get("role") == "assistant":
                self._flush(group, group_rec, out)
                group, group_rec = [], None
                out.append(self._response(m, rec))
                continue
            if rec is not None and group_rec is not None and rec != group_rec:
                self._flush(group, group_rec, out)
                group, group_rec = [], None
            group.append(m)
            if group_rec is None and rec is not None:
                group_rec = rec
        self._flush(group, group_rec, out)
        return out

    def _flush(self, group: list[Message], rec: int | None, out: list[Any]) -> None:
        if not group:
            return
        template = self.records[rec] if rec is not None else None
        parts = [self._part(m) for m in group]
        if template is not None:
            # Parts that are no messages (instructions, tool lists) stay in their request.
            kept = [
                (n, p)
                for n, p in enumerate(template["parts"])
                if (rec, n) not in self.parsed
                and isinstance(p, dict)
                and isinstance(p.get("part_kind"), str)
                and p["part_kind"] in _NOT_MESSAGES
            ]
            for n, p in kept:
                parts.insert(min(n, len(parts)), p)
            if parts == template["parts"]:
                out.append(template)
                return
            out.append({**template, "parts": parts})
            return
        out.append({"parts": parts, "kind": "request"})

    def _part(self, m: Message) -> Any:
        rec, part = _origin(m)
        if rec is not None and part is not None:
            old = self.parsed.get((rec, part))
            if old is not None and public(old) == public(m):
                return self.records[rec]["parts"][part]
        role = m.get("role")
        md = _md(m)
        text = _joined(m.get("content"))
        if role == "tool":
            source = self._source_part(rec, part)
            if source is not None and _same_text(old_content(self.parsed, rec, part), m):
                return {**source, "tool_call_id": call_id(md)}
            new: dict[str, Any] = {
                "tool_name": md.get("name") or "",
                "content": text,
                "tool_call_id": call_id(md),
            }
            if md.get("healed"):
                new["metadata"] = {SYNTHESIZED: True}
            if self.stamp is not None:
                new["timestamp"] = self.stamp
            if md.get("healed"):
                new["outcome"] = "interrupted"
            new["part_kind"] = "tool-return"
            return new
        if role == "system":
            return {"content": text, "part_kind": "system-prompt"}
        new = {"content": _pydantic_user(m.get("content"))}
        if self.stamp is not None:
            new["timestamp"] = self.stamp
        new["part_kind"] = "user-prompt"
        return new

    def _source_part(self, rec: int | None, part: int | None) -> dict[str, Any] | None:
        if rec is None or part is None:
            return None
        value = self.records[rec]["parts"][part]
        return value if isinstance(value, dict) else None

    def _response(self, m: Message, rec: int | None) -> Any:
        record = self.records[rec] if rec is not None else None
        if isinstance(record, dict) and "timestamp" in record:
            self.stamp = record["timestamp"]
        old = self.parsed.get((rec, None)) if rec is not None else None
        if record is not None and old is not None and public(old) == public(m):
            return record
        md = _md(m)
        new_calls = [c for c in md.get("tool_calls") or [] if isinstance(c, dict)]
        if record is None or old is None:
            parts: list[Any] = [{"content": _joined(m.get("content")), "part_kind": "text"}]
            parts = parts if _joined(m.get("content")) else []
            parts.extend(_call_part(c) for c in new_calls)
            return {"parts": parts, "kind": "response"}
        old_calls = old["metadata"].get("tool_calls") or []
        text_changed = m.get("content") != old.get("content")
        out: list[Any] = []
        kept = kept_calls(old_calls, new_calls)
        for part in record["parts"]:
            if isinstance(part, dict) and part.get("part_kind") == "tool-call":
                ids = kept()
                if ids is not None:  # else: the repair removed this call
                    out.append(part if ids[0] == ids[1] else {**part, "tool_call_id": ids[1]})
            elif not (text_changed and isinstance(part, dict) and part.get("part_kind") == "text"):
                out.append(part)
        if text_changed:
            text = _joined(m.get("content"))
            out[:0] = [{"content": text, "part_kind": "text"}] if text else []
        return {**record, "parts": out}


def old_content(parsed: dict[tuple[int, int | None], Message], rec: Any, part: Any) -> Any:
    old = parsed.get((rec, part))
    return None if old is None else old.get("content")


def _same_text(old: Any, m: Message) -> bool:
    return old is not None and old == m.get("content")


def _origin(m: Message) -> tuple[int | None, int | None]:
    md = m.get("metadata")
    if not isinstance(md, dict):
        return None, None
    rec, part = md.get(REC), md.get(PART)
    rec = rec if isinstance(rec, int) and not isinstance(rec, bool) else None
    part = part if isinstance(part, int) and not isinstance(part, bool) else None
    return rec, part


def _call_part(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_name": call.get("name") or "",
        "args": call.get("arguments"),
        "tool_call_id": call_id(call),
        "part_kind": "tool-call",
    }


def _pydantic_user(content: Any) -> Any:
    """Canonical user content as a ``user-prompt`` part's content."""
    if isinstance(content, str):
        return content
    out: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            out.append(part.get("text", ""))
        elif part.get("type") == "image" and part.get("url"):
            out.append({"url": part["url"], "kind": "image-url"})
        elif part.get("type") == "image":
            out.append(
                {"data": part.get("data"), "media_type": part.get("media_type"), "kind": "binary"}
            )
        else:
            out.append({k: v for k, v in part.items() if k != "type"})
    if all(isinstance(x, str) for x in out):
        return "\n".join(out)
    return out
