"""Factory Droid sessions (``~/.factory/sessions/<encoded cwd>/<session-id>.jsonl``).

Factory's ``droid`` CLI appends one record a line beside a
``<session-id>.settings.json`` (model, token usage): a ``session_start``
header (``id``, ``title``, ``sessionTitle``, ``owner``, ``version``,
``cwd``), then ``message`` records (``id``, ``timestamp``, newer builds
``parentId``, and ``message``: ``{"role": "user" | "assistant", "content"}``
in Anthropic's block form: ``text``, ``thinking``, ``image``, ``tool_use``,
and ``tool_result`` in the user message after the call), and records of its
own: ``todo_state``, ``compaction_state`` (``summaryText``, the
``anchorMessage`` it keeps from), ``agent_turn_outcome``, ``session_end``.
Droid is closed source: this layout is what its files show (public readers'
fixtures and Factory's hook docs). Its message schema is public in Factory's own
SDK (Factory-AI/droid-sdk-python, ``schemas/messages.py``, ported from Droid's
``sessionV2/messages/schemas.ts``): ``content`` is a list of blocks, each an
object with a ``type`` (the six above and ``document``, a PDF or plain text a
user attached, also inside a ``tool_result``), never a bare string.

Reading (``parse``)
-------------------
- each ``message`` record gives canonical messages: an assistant's text and
  thinking parts and its ``tool_use`` calls; a user record's ``tool_result``
  blocks each a tool result (``is_error``), its other blocks a user message;
- the last ``compaction_state`` with ``summaryText`` restarts the history:
  its summary (a user message), then the messages after it;
- the state's ``facts`` (``timeline_facts``): each message's record time (and an assistant's
  ``model``); ``session_start`` gives ``meta["session_id"]`` and ``cwd``.

Strict: a record type, a message key or a block this reader does not know
refuses the file (``unread`` once a Droid record was read).

Writing (``serialise``): on the chained writer (``linked``), ``id`` /
``parentId`` where the file's records carry ``parentId``: an unchanged
session byte for byte; a result the repair made is a ``message`` record of
role ``user`` holding its ``tool_result`` (``is_error: true``), a note a user
text message, each with a fresh ``id``; a record whose messages changed is
rebuilt from its own blocks (a renamed call keeps its block under the new
id, a removed one loses it).
"""

from __future__ import annotations

from typing import Any

import orjson

from inspector.formats import linked
from inspector.formats.base import FormatError, Parsed
from inspector.formats.jsondoc import text_of
from inspector.formats.jsonl import head_records, read_jsonl, record_type
from inspector.formats.private import REC, Message, call_id, kept_calls
from inspector.formats.private import metadata as _md
from inspector.formats.records import LogState, state_facts

NAME = "droid"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Factory Droid session (JSONL)"
EXTENSION = "jsonl"
BLANK_IS_WRITTEN = True

_TYPES = frozenset(
    {
        "session_start",
        "message",
        "todo_state",
        "compaction_state",
        "agent_turn_outcome",
        "session_end",
    }
)
_MESSAGE_KEYS = frozenset({"type", "id", "parentId", "timestamp", "message"})
# The keys a Droid message's body has been seen with (its files and readers' fixtures).
_BODY_KEYS = frozenset(
    {
        "role",
        "content",
        "model",
        "modelId",
        "id",
        "provenance",
        "stopReason",
        "visibility",
        "usage",
        "interactionMode",
        "openaiMessageId",
        "reasoningEffort",
    }
)
_BLOCKS = frozenset(
    {"text", "thinking", "redacted_thinking", "image", "document", "tool_use", "tool_result"}
)
# Blocks carried through whole: the repair never changes them, and writes them back as read.
_KEPT = ("redacted_thinking", "image", "document")


def sniff(head: bytes) -> float:
    """A ``session_start`` header, or Droid ``message`` records (``message.content``)."""
    records = head_records(head)
    if not records:
        return 0.0
    first = records[0]
    if isinstance(first, dict) and first.get("type") == "session_start" and "id" in first:
        return 0.96
    ours = [r for r in records if _is_message(r)]
    return 0.85 if ours and len(ours) * 2 > len(records) else 0.0


def _is_message(record: Any) -> bool:
    if not isinstance(record, dict) or record.get("type") != "message":
        return False
    body = record.get("message")
    return set(record) <= _MESSAGE_KEYS and isinstance(body, dict) and "content" in body


def parse(data: bytes) -> Parsed:
    read = read_jsonl(data)
    messages: list[Message] = []
    sources: list[list[int]] = []
    facts: list[dict[str, Any] | None] = []
    meta: dict[str, Any] = {}
    names: dict[str, str] = {}
    sure = False
    for rec, record in enumerate(read.records):
        if not record.ok:
            continue
        value, line = record.value, record.line
        try:
            kind = _check(value, line)
            sure = True
            if kind == "session_start":
                meta.update(session_id=value.get("id"), cwd=value.get("cwd"))
            elif kind == "compaction_state" and isinstance(value.get("summaryText"), str):
                messages.clear()
                sources.clear()
                facts.clear()
                summary = {"role": "user", "content": value["summaryText"], "metadata": {REC: rec}}
                messages.append(summary)
                sources.append([line])
                facts.append(_facts(value, {}))
            elif kind == "message":
                for m in _messages(value["message"], line, names):
                    m["metadata"][REC] = rec
                    messages.append(m)
                    sources.append([line])
                    facts.append(_facts(value, value["message"]))
        except FormatError as exc:
            raise FormatError(str(exc), unread=sure) from None
    if not messages:
        raise FormatError("no record holds a Droid message ('type': 'message')")
    chained = any(
        r.ok and isinstance(r.value, dict) and "parentId" in r.value for r in read.records
    )
    meta["chained"] = chained
    return Parsed(
        NAME, messages, sources, read.problems, meta=meta, state=LogState.of(data, read, facts)
    )


def _check(value: Any, line: int) -> str:
    kind = record_type(value, line, _TYPES, "Droid")
    if kind == "message":
        body = value.get("message")
        extra = sorted(set(value) - _MESSAGE_KEYS)
        if not isinstance(body, dict) or extra:
            what = f"keys {', '.join(extra)}" if extra else "no 'message' object"
            raise FormatError(f"line {line}: a message record with {what}")
        body_extra = sorted(set(body) - _BODY_KEYS)
        if body_extra or body.get("role") not in ("user", "assistant") or "content" not in body:
            what = f"keys {', '.join(body_extra)}" if body_extra else "no known 'role' or 'content'"
            raise FormatError(f"line {line}: a message with {what}")
    return kind


def _facts(value: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    stamp, model = value.get("timestamp"), body.get("model", body.get("modelId"))
    return {
        "at": stamp if isinstance(stamp, str) else None,
        "model": model if isinstance(model, str) else None,
        "tokens_in": None,
        "tokens_out": None,
    }


def _messages(body: dict[str, Any], line: int, names: dict[str, str]) -> list[Message]:
    role, content = body["role"], body["content"]
    if isinstance(content, str):
        return [{"role": role, "content": content, "metadata": {}}]
    if not isinstance(content, list):
        raise FormatError(f"line {line}: 'content' that is neither text nor a list of blocks")
    parts: list[Any] = []
    calls: list[dict[str, Any]] = []
    results: list[Message] = []
    for block in content:
        if not isinstance(block, dict):
            raise FormatError(
                f"line {line}: a content item that is a {type(block).__name__}, not a block"
                " (Droid writes each item as an object with a 'type')"
            )
        kind = block.get("type")
        if kind not in _BLOCKS:
            raise FormatError(f"line {line}: a content block of type {kind!r} Droid does not write")
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise FormatError(f"line {line}: a text block without its 'text'")
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "thinking":
            parts.append({"type": "thinking", "thinking": str(block.get("thinking", ""))})
        elif kind in _KEPT:
            parts.append({"type": "droid_block", "block": block})
        elif kind == "tool_use":
            if role != "assistant" or not isinstance(block.get("id"), str):
                raise FormatError(f"line {line}: a tool_use block outside a reply or without 'id'")
            names[block["id"]] = str(block.get("name", ""))
            calls.append(
                {
                    "tool_call_id": block["id"],
                    "name": block.get("name", ""),
                    "arguments": block.get("input", {}),
                }
            )
        else:  # tool_result
            ident = block.get("tool_use_id")
            if not isinstance(ident, str):
                raise FormatError(f"line {line}: a tool_result without 'tool_use_id'")
            md: dict[str, Any] = {"tool_call_id": ident}
            if ident in names:
                md["name"] = names[ident]
            if block.get("is_error") is True:
                md["is_error"] = True
            results.append({"role": "tool", "content": _result_text(block, line), "metadata": md})
    out = list(results)
    if parts or calls or not results:
        md = {"tool_calls": calls} if calls else {}
        out.append({"role": role, "content": parts, "metadata": md})
    return out


def _result_text(block: dict[str, Any], line: int) -> Any:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if (
                isinstance(item, dict)
                and item.get("type") == "text"
                and isinstance(item.get("text"), str)
            ):
                parts.append({"type": "text", "text": item["text"]})
            elif isinstance(item, dict) and item.get("type") in ("image", "document"):
                parts.append({"type": "droid_block", "block": item})
            else:
                raise FormatError(f"line {line}: a tool_result part this reader cannot read")
        return parts
    raise FormatError(f"line {line}: a tool_result whose 'content' is not text or parts")


class _Writer(linked.ChainedWriter):
    CHAIN = linked.Chain(id="id", parent="parentId")
    _UNCHAINED = linked.Chain(id="", parent="")

    @property
    def chain(self) -> linked.Chain:
        chained = any(
            r.ok and isinstance(r.value, dict) and "parentId" in r.value for r in self.state.records
        )
        return self.CHAIN if chained else self._UNCHAINED

    def rewrite(self, value: Any, old: list[Message], new: list[Message]) -> Any:
        if value.get("type") != "message":
            raise FormatError("a repair inside a Droid compaction summary cannot be written back")
        body = value["message"]
        blocks = body["content"] if isinstance(body["content"], list) else []
        out: list[Any] = []
        for m in new:
            out.extend(_blocks_of(m, old, blocks))
        role = "assistant" if any(m.get("role") == "assistant" for m in new) else "user"
        return {**value, "message": {**body, "role": role, "content": out}}

    def new(self, m: Message, before: Any) -> dict[str, Any]:
        like = before if isinstance(before, dict) else {}
        stamp = like.get("timestamp")
        ident = linked.new_id("droid", like.get("id"), call_id(_md(m)), text_of(m.get("content")))
        record: dict[str, Any] = {"type": "message", "id": ident}
        if self.chain.parent:  # where Droid puts it; the chained writer fills it in
            record["parentId"] = None
        record["timestamp"] = stamp
        role = "assistant" if m.get("role") == "assistant" else "user"
        record["message"] = {"role": role, "content": _blocks_of(m, [], [])}
        return record


serialise = _Writer.serialise


def _blocks_of(m: Message, old: list[Message], blocks: list[Any]) -> list[Any]:
    """The Anthropic blocks of repaired message ``m``, its record's own where they stay."""
    role = m.get("role")
    if role == "tool":
        ident = call_id(_md(m))
        for before in old:
            if before.get("role") == "tool" and before.get("content") == m.get("content"):
                for block in blocks:
                    if (
                        isinstance(block, dict)
                        and block.get("type") == "tool_result"
                        and block.get("tool_use_id") == call_id(_md(before))
                    ):
                        return [
                            block
                            if block["tool_use_id"] == ident
                            else {**block, "tool_use_id": ident}
                        ]
        return [
            {
                "type": "tool_result",
                "tool_use_id": ident,
                "content": _text(m.get("content")),
                "is_error": True,
            }
        ]
    same = [b for b in old if b.get("role") == role and b.get("content") == m.get("content")]
    out: list[Any] = []
    if same:
        out.extend(
            b
            for b in blocks
            if isinstance(b, dict) and b.get("type") not in ("tool_use", "tool_result")
        )
    else:
        out.extend(_content_blocks(m.get("content")))
    if role == "assistant":
        before_calls = _md(same[0]).get("tool_calls") or [] if same else []
        next_call = kept_calls(before_calls, _md(m).get("tool_calls") or [])
        kept_ids = []
        for block in blocks if same else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                ids = next_call()
                if ids is not None:
                    out.append(block if ids[1] == block["id"] else {**block, "id": ids[1]})
                    kept_ids.append(ids[1])
        for call in _md(m).get("tool_calls") or []:
            if call_id(call) not in kept_ids:
                out.append(
                    {
                        "type": "tool_use",
                        "id": call_id(call),
                        "name": call.get("name"),
                        "input": call.get("arguments", {}),
                    }
                )
    return out


def _content_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            out.append({"type": "text", "text": part.get("text", "")})
        elif part.get("type") == "thinking":
            out.append({"type": "thinking", "thinking": part.get("thinking", "")})
        elif part.get("type") == "droid_block":
            out.append(part["block"])
        else:
            out.append({"type": "text", "text": orjson.dumps(part).decode()})
    return out


def _text(content: Any) -> str:
    return content if isinstance(content, str) else text_of(content)


# The timeline's facts, as the reader kept them in its state (``records.state_facts``).
timeline_facts = state_facts
