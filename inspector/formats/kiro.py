"""Kiro CLI's session logs (``~/.kiro/sessions/cli/<session-id>.jsonl``).

Kiro CLI (kirodotdev, the successor of Amazon Q Developer CLI) appends one
record a line to a session's log, beside a ``<session-id>.json`` of the
session's own facts (``session_id``, ``cwd``, ...)::

    {"version": "v1", "kind": "Prompt", "data": {"message_id", "content": [...],
                                                 "meta": {"timestamp": <unix s>}}}
    {"version": "v1", "kind": "AssistantMessage", "data": {"message_id", "content": [...]}}
    {"version": "v1", "kind": "ToolResults", "data": {"message_id", "content": [...]}}
    {"version": "v1", "kind": "Clear", "data": null}

Content items are ``{"kind", "data"}``: ``text`` (a string), ``image``,
``thinking`` (``{"text"}``), ``toolUse`` (``{"toolUseId", "name",
"input"}``) in a reply, ``toolResult`` (``{"toolUseId", "content": [{"kind":
"text" | "json", "data"}], "status"}``) in a ``ToolResults`` line. ``Clear``
(``/clear``) starts the conversation again: what is before the last one is
no longer sent, so it is kept in the file and not read
(``meta["cleared_lines"]``).

Kiro checks the history it loads and refuses one whose call has no result
("invalid conversation history received": kirodotdev/Kiro#6110); a repair
answers such a call with a ``toolResult`` of status ``error`` in the
``ToolResults`` line after it, or in a new one.

Reading is strict: a record of another ``kind`` or ``version``, or an item
this reader does not know, refuses the file (``FormatError``, ``unread``
once a Kiro line was read). Writing keeps every untouched line byte for
byte (``goose.LineGroupsWriter``, on the record-log base). The timeline
shows a prompt's ``meta.timestamp``.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from inspector.formats.base import FormatError, Parsed, epoch_time
from inspector.formats.goose import LineGroupsWriter, LineState
from inspector.formats.jsondoc import text_of
from inspector.formats.jsonl import Record, head_records, read_jsonl
from inspector.formats.private import REC, Message, by_origin, call_id, calls_of, metadata, origin

NAME = "kiro"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Kiro CLI session (JSONL)"
EXTENSION = "jsonl"

BLANK_IS_WRITTEN = True

_KINDS = {"Prompt": "user", "AssistantMessage": "assistant", "ToolResults": "user"}
# The part an image item is read as: its item, kept whole.
IMAGE_PART = "kiro_image"


def sniff(head: bytes) -> float:
    records = head_records(head)
    ours = [r for r in records if _is_line(r)]
    if not ours:
        return 0.0
    return 0.95 if len(ours) == len(records) else 0.8 if 2 * len(ours) > len(records) else 0.0


def _is_line(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("version") == "v1"
        and (value.get("kind") in _KINDS or value.get("kind") == "Clear")
        and set(value) <= {"version", "kind", "data"}
    )


def parse(data: bytes) -> Parsed:
    read = read_jsonl(data)
    values = [(rec, r) for rec, r in enumerate(read.records) if r.ok]
    clears = [
        rec for rec, r in values if isinstance(r.value, dict) and r.value.get("kind") == "Clear"
    ]
    start = clears[-1] + 1 if clears else 0
    messages: list[Message] = []
    sources: list[list[int]] = []
    sure = False
    for rec, record in values:
        try:
            if not _is_line(record.value):
                raise FormatError(
                    f"line {record.line}: not a Kiro record ({{'version': 'v1', 'kind'}})"
                )
            sure = True
            if rec < start or record.value["kind"] == "Clear":
                continue
            for message in _messages(record):
                message["metadata"][REC] = rec
                messages.append(message)
                sources.append([record.line])
        except FormatError as exc:
            raise FormatError(str(exc), unread=sure) from None
    if not messages:
        raise FormatError("no line holds a Kiro message after the last Clear")
    meta = {"cleared_lines": [read.records[rec].line for rec in clears]}
    state = LineState(data, read.records, read.final_newline, read.crlf, by_origin(messages))
    return Parsed(NAME, messages, sources, read.problems, meta=meta, state=state)


def _messages(record: Record) -> list[Message]:
    line, kind = record.line, record.value["kind"]
    body = record.value.get("data")
    items = body.get("content") if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise FormatError(f"line {line}: a {kind} record without a 'data.content' list")
    parts: list[Any] = []
    calls: list[dict[str, Any]] = []
    results: list[Message] = []
    for item in items:
        what = item.get("kind") if isinstance(item, dict) else None
        value = item.get("data") if isinstance(item, dict) else None
        if what == "text" and isinstance(value, str) and kind != "ToolResults":
            parts.append({"type": "text", "text": value})
        elif what == "thinking" and isinstance(value, dict) and isinstance(value.get("text"), str):
            parts.append({"type": "thinking", "thinking": value["text"]})
        elif what == "image" and kind == "Prompt":
            parts.append({"type": IMAGE_PART, "item": item})
        elif (
            what == "toolUse"
            and kind == "AssistantMessage"
            and isinstance(value, dict)
            and (isinstance(value.get("toolUseId"), str))
        ):
            calls.append({"tool_call_id": value["toolUseId"], "name": value.get("name") or "",
                          "arguments": value.get("input", {})})  # fmt: skip
        elif (
            what == "toolResult"
            and kind == "ToolResults"
            and isinstance(value, dict)
            and (isinstance(value.get("toolUseId"), str))
        ):
            results.append(_result(value, line))
        else:
            described = f"of kind {what!r}" if what is not None else "that is not a typed object"
            raise FormatError(f"line {line}: a {kind} item {described} this reader cannot read")
    if kind == "ToolResults":
        return results
    md: dict[str, Any] = {"tool_calls": calls} if calls else {}
    return [{"role": _KINDS[kind], "content": parts, "metadata": md}]


def _result(value: dict[str, Any], line: int) -> Message:
    content = value.get("content")
    if not isinstance(content, list):
        raise FormatError(f"line {line}: a toolResult without a 'content' list")
    texts = []
    for item in content:
        data = item.get("data") if isinstance(item, dict) else None
        texts.append(data if isinstance(data, str) else orjson.dumps(data).decode())
    md: dict[str, Any] = {"tool_call_id": value["toolUseId"]}
    if value.get("status") == "error":
        md["is_error"] = True
    return {"role": "tool", "content": "\n".join(texts), "metadata": md}


class _Writer(LineGroupsWriter):
    JOINS_NOTES = False  # a note is a Prompt line, never in a ToolResults one

    def answers(self, rec: int) -> bool:
        value = self.state.records[rec].value if rec >= 0 else None
        return isinstance(value, dict) and value.get("kind") == "ToolResults"

    def unnamed(self, value: Any) -> Any:
        data = value.get("data") if isinstance(value, dict) else None
        if not isinstance(data, dict):
            return value
        return {**value, "data": {k: v for k, v in data.items() if k != "message_id"}}

    def record(self, group: list[Message], template: Any) -> Any:
        base: dict[str, Any] = dict(template) if isinstance(template, dict) else {}
        found = base.get("data")
        body: dict[str, Any] = found if isinstance(found, dict) else {}
        old = [i for i in body.get("content") or [] if isinstance(i, dict)]
        old = [i for i in old if isinstance(i.get("data"), dict) or i.get("kind") == "text"]
        if group[0]["role"] == "tool":
            kind = "ToolResults"
            kept = {i["data"].get("toolUseId"): i for i in old if i.get("kind") == "toolResult"}
            items = [self._result_item(m, kept) for m in group]
        else:
            kind = "AssistantMessage" if group[0]["role"] == "assistant" else "Prompt"
            items = self._items(group[0], old)
        message_id = body.get("message_id") or _new_id(self.state.data, group)
        return {**base, "version": "v1", "kind": kind,
                "data": {**body, "message_id": message_id, "content": items}}  # fmt: skip

    @staticmethod
    def _result_item(m: Message, kept: dict[Any, Any]) -> dict[str, Any]:
        cid = call_id(metadata(m))
        old = kept.get(cid)
        if old is not None and _result(old["data"], 0)["content"] == text_of(m.get("content")):
            return dict(old)
        status = "error" if metadata(m).get("is_error") or old is None else "success"
        content = [{"kind": "text", "data": text_of(m.get("content"))}]
        return {
            "kind": "toolResult",
            "data": {"toolUseId": cid, "content": content, "status": status},
        }

    @staticmethod
    def _items(m: Message, old: list[dict[str, Any]]) -> list[Any]:
        uses = {i["data"].get("toolUseId"): i for i in old if i.get("kind") == "toolUse"}
        # A thinking item is kept whole: Kiro writes its signature, redacted content and model.
        thoughts = {i["data"].get("text"): i for i in old if i.get("kind") == "thinking"}
        content = m.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        items: list[Any] = []
        for part in parts:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                items.append({"kind": "text", "data": part.get("text", "")})
            elif kind == "thinking":
                text = part.get("thinking", "")
                items.append(thoughts.get(text) or {"kind": "thinking", "data": {"text": text}})
            elif kind == IMAGE_PART:
                items.append(part["item"])
            else:
                items.append({"kind": "text", "data": orjson.dumps(part).decode()})
        for call in calls_of(m):
            cid = call_id(call)
            data = {"toolUseId": cid, "name": call.get("name"), "input": call.get("arguments")}
            before = uses.get(cid)
            same = before is not None and before["data"] == {**before["data"], **data}
            items.append(before if same else {"kind": "toolUse", "data": data})
        return items


def _new_id(data: bytes, group: list[Message]) -> str:
    """A message id for a new line: the same file and messages give the same id."""
    seed = data + orjson.dumps([call_id(metadata(m)) for m in group])
    digest = hashlib.sha256(seed).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


serialise = _Writer.serialise


def timeline_facts(parsed: Parsed) -> list[dict[str, Any] | None]:
    """Per message, its line's ``meta.timestamp`` (Kiro writes one on a prompt) and model.

    The model is the ``modelId`` Kiro writes in a reply's thinking item.
    """
    state = parsed.state
    if not isinstance(state, LineState):
        return []
    facts: list[dict[str, Any] | None] = []
    for message in parsed.messages:
        rec = origin(message)
        value = state.records[rec].value if rec is not None else None
        body = value.get("data") if isinstance(value, dict) else None
        meta = body.get("meta") if isinstance(body, dict) else None
        stamp = meta.get("timestamp") if isinstance(meta, dict) else None
        at = epoch_time(stamp, ms=False)  # no time a clock can show: none
        facts.append({"at": at, "model": _model(body), "tokens_in": None, "tokens_out": None})
    return facts


def _model(body: Any) -> str | None:
    items = body.get("content") if isinstance(body, dict) else None
    for item in items if isinstance(items, list) else []:
        data = item.get("data") if isinstance(item, dict) else None
        if item.get("kind") == "thinking" and isinstance(data, dict):
            model = data.get("modelId")
            if isinstance(model, str) and model:
                return model
    return None
