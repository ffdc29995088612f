"""Qwen Code chat recordings (``~/.qwen/projects/<project>/chats/<session-id>.jsonl``).

Qwen Code (QwenLM/qwen-code, a Gemini CLI fork) appends one ``ChatRecord`` a
line (``ChatRecordingService``): ``uuid``, ``parentUuid`` (the record before
it), ``sessionId``, ``timestamp``, ``type`` (``user``, ``assistant``,
``tool_result``, ``system``, with a ``subtype``), ``cwd``, ``version``, and
for messages ``message``: the Gemini ``Content`` it sent or got
(``{"role": "user" | "model", "parts": [...]}``), plus ``model``,
``usageMetadata`` and ``toolCallResult`` (the UI's view of a result). On
resume it follows ``parentUuid`` from the last record to the first.

Reading (``parse``)
-------------------
- The branch resumed: from the file's last record up its ``parentUuid``
  links; records off it are counted in ``meta["off_branch"]``.
- ``user`` records are user messages (their text parts), ``assistant``
  records assistant messages (``thought`` parts as ``thinking``,
  ``functionCall`` parts as calls: ``id``, ``name``, ``args``),
  ``tool_result`` records one tool result per ``functionResponse`` part
  (``response.output``, or ``response.error`` as ``is_error``);
- ``system`` records are kept as they are; a ``chat_compression`` record
  on the branch is where Qwen restarts the history from its
  ``compressedHistory``: its messages are read (and cannot be rewritten),
  those before it left out;
- sub-agent records (``isSidechain``, ``agentId``) are counted in
  ``meta["sidechain"]``, not read into the main history;
- the state's ``facts`` (``timeline_facts``): per message its record's time, model and tokens
  (``usageMetadata.promptTokenCount`` / ``candidatesTokenCount``).

Strict: a record ``type``, a part or a key this reader does not know refuses
the file (``FormatError``, ``unread`` once a Qwen record was read).

Writing (``serialise``)
-----------------------
Byte for byte when unchanged; otherwise through ``linked``: a result the
repair made is a ``tool_result`` record (a ``functionResponse`` with
``response.error``, ``toolCallResult.status: "error"``), a note a ``user``
record, each with ``sessionId``, ``cwd`` and ``version`` of the record
before it, ``parentUuid`` chained through it; a dropped message loses its
record; renamed or removed calls are rewritten in their record's parts.
"""

from __future__ import annotations

from typing import Any

import orjson

from inspector.formats import linked
from inspector.formats.base import FormatError, Parsed, token_count
from inspector.formats.jsondoc import text_of
from inspector.formats.jsonl import head_records, read_jsonl, record_type
from inspector.formats.private import PART, REC, Message, call_id, kept_calls
from inspector.formats.private import metadata as _md
from inspector.formats.records import LogState, state_facts

NAME = "qwen"
PROVIDER = "gemini"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Qwen Code chat recording (JSONL)"
EXTENSION = "jsonl"
BLANK_IS_WRITTEN = True

CHAIN = linked.Chain(id="uuid", parent="parentUuid")

_TYPES = ("user", "assistant", "tool_result", "system")
# ChatRecord's keys (packages/core/src/services/chatRecordingService.ts).
_KEYS = frozenset(
    """
    daemonPromptId uuid parentUuid sessionId timestamp type subtype provenance goalContext
    backgroundTurn deliveredTurn cwd version gitBranch promptId message usageMetadata model
    contextWindowSize toolCallResult systemPayload agentId agentName agentColor isSidechain
    agentRunId agentRound externalInputKind forkedFrom
    """.split()
)
# A part's keys that hold no words (Gemini's Part).
_PART_MARKS = frozenset({"thought", "thoughtSignature", "videoMetadata", "partMetadata"})
_BLOBS = ("inlineData", "fileData", "executableCode", "codeExecutionResult")


def sniff(head: bytes) -> float:
    """Qwen's records: a ``ChatRecord``'s keys and a Gemini ``Content`` (``parts``), not
    Claude Code's ``content``: sure, ahead of Claude Code's reader, which shares the keys."""
    records = head_records(head)
    ours = [r for r in records if _is_record(r)]
    if not ours or not any(_has_parts(r) for r in ours):
        return 0.0
    # A Content with ``parts`` under a ChatRecord's keys is Qwen's alone: the file is claimed
    # even with records this reader does not know, so that it refuses them (``unread``).
    return 0.97 if len(ours) == len(records) else 0.96


def _has_parts(record: dict[str, Any]) -> bool:
    message = record.get("message")
    return isinstance(message, dict) and isinstance(message.get("parts"), list)


def _is_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and record.get("type") in _TYPES
        and "uuid" in record
        and "sessionId" in record
        and ("message" in record or "systemPayload" in record or "subtype" in record)
        and set(record) <= _KEYS
    )


def parse(data: bytes) -> Parsed:
    read = read_jsonl(data)
    values: dict[int, dict[str, Any]] = {}
    sure = False
    for rec, record in enumerate(read.records):
        if not record.ok:
            continue
        value = record.value
        try:
            _check(value, record.line)
        except FormatError as exc:
            raise FormatError(str(exc), unread=sure) from None
        sure = True
        values[rec] = value
    branch = _branch(values)
    # The last compression on the branch restarts the history.
    start = 0
    for n, rec in enumerate(branch):
        value = values[rec]
        if value["type"] == "system" and value.get("subtype") == "chat_compression":
            start = n
    reading = _Reading(read.records)
    try:
        for rec in branch[start:]:
            reading.record(rec, values[rec])
    except FormatError as exc:
        raise FormatError(str(exc), unread=True) from None
    if not reading.messages:
        # Every record is Qwen's (each passed ``_check``): no other shape's reader may take it.
        raise FormatError("no record holds a message (user, assistant or tool_result)", unread=sure)
    meta: dict[str, Any] = {
        "off_branch": len(values) - len(branch),
        "sidechain": reading.sidechain,
    }
    first = values[branch[0]] if branch else {}
    meta["session_id"] = first.get("sessionId")
    meta["cwd"] = first.get("cwd")
    return Parsed(
        NAME,
        reading.messages,
        reading.sources,
        read.problems,
        meta=meta,
        state=LogState.of(data, read, reading.facts),
    )


def _check(value: Any, line: int) -> None:
    record_type(value, line, _TYPES, "Qwen Code")
    if not isinstance(value.get("uuid"), str):
        raise FormatError(f"line {line}: a record without its 'uuid'")
    extra = sorted(set(value) - _KEYS)
    if extra:
        raise FormatError(f"line {line}: a record with keys {', '.join(extra)} it does not have")


def _branch(values: dict[int, dict[str, Any]]) -> list[int]:
    """The records Qwen resumes: from the last up its ``parentUuid`` links, in order."""
    if not values:
        return []
    at = {v["uuid"]: rec for rec, v in values.items()}
    chain: list[int] = []
    seen: set[int] = set()
    rec: int | None = max(values)
    while rec is not None and rec not in seen:
        seen.add(rec)
        chain.append(rec)
        parent = values[rec].get("parentUuid")
        rec = at.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain


class _Reading:
    def __init__(self, records: Any) -> None:
        self.records = records
        self.messages: list[Message] = []
        self.sources: list[list[int]] = []
        self.facts: list[dict[str, Any] | None] = []
        self.names: dict[str, str] = {}
        self.sidechain = 0

    def record(self, rec: int, value: dict[str, Any]) -> None:
        line = self.records[rec].line
        if value.get("isSidechain") or "agentId" in value:
            self.sidechain += 1
            return
        kind = value["type"]
        if kind == "system":
            if value.get("subtype") == "chat_compression":
                payload = value.get("systemPayload")
                history = payload.get("compressedHistory") if isinstance(payload, dict) else None
                if not isinstance(history, list):
                    raise FormatError(f"line {line}: a chat_compression without its history")
                for n, content in enumerate(history):
                    for m in self._content(content, line):
                        m["metadata"].update({REC: rec, PART: n})
                        self._add(m, line, {})
            return
        content = value.get("message")
        if content is None:
            return  # a record of the UI's only (a slash command's output, ...)
        for m in self._content(content, line, kind):
            m["metadata"][REC] = rec
            self._add(m, line, value)

    def _add(self, m: Message, line: int, value: dict[str, Any]) -> None:
        self.messages.append(m)
        self.sources.append([line])
        usage = value.get("usageMetadata")
        usage = usage if isinstance(usage, dict) else {}
        stamp, model = value.get("timestamp"), value.get("model")
        tokens_in, tokens_out = usage.get("promptTokenCount"), usage.get("candidatesTokenCount")
        self.facts.append(
            {
                "at": stamp if isinstance(stamp, str) else None,
                "model": model if isinstance(model, str) else None,
                "tokens_in": tokens_in if isinstance(tokens_in, int) else None,
                "tokens_out": tokens_out if isinstance(tokens_out, int) else None,
                # Gemini's usage: of the prompt's tokens, those read from the cache.
                "cache_read": token_count(usage.get("cachedContentTokenCount")),
                "cache_write": None,
            }
        )

    def _content(self, content: Any, line: int, kind: str = "") -> list[Message]:
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            raise FormatError(f"line {line}: a 'message' that is not a Content with 'parts'")
        role = content.get("role")
        if role not in ("user", "model"):
            raise FormatError(f"line {line}: a Content of role {role!r}")
        texts: list[Any] = []
        calls: list[dict[str, Any]] = []
        results: list[Message] = []
        for part in content["parts"]:
            if not isinstance(part, dict):
                raise FormatError(f"line {line}: a part that is not an object")
            if "functionCall" in part:
                call = part["functionCall"]
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    raise FormatError(f"line {line}: a functionCall without its 'name'")
                ident: str = call["id"] if isinstance(call.get("id"), str) else ""
                self.names[ident] = call["name"]
                calls.append(
                    {"tool_call_id": ident, "name": call["name"], "arguments": call.get("args", {})}
                )
            elif "functionResponse" in part:
                results.append(self._result(part["functionResponse"], line))
            elif "text" in part and set(part) - {"text"} <= _PART_MARKS:
                if not isinstance(part["text"], str):
                    raise FormatError(f"line {line}: a text part whose 'text' is not text")
                if part.get("thought") is True:
                    texts.append({"type": "thinking", "thinking": part["text"]})
                else:
                    texts.append({"type": "text", "text": part["text"]})
            elif any(key in part for key in _BLOBS):
                texts.append({"type": "qwen_part", "part": part})
            else:
                keys = ", ".join(sorted(part)) or "none"
                raise FormatError(f"line {line}: a part this reader does not know (keys: {keys})")
        out: list[Message] = []
        if texts or calls or not results:
            mine = "assistant" if role == "model" else "user"
            md: dict[str, Any] = {"tool_calls": calls} if calls else {}
            out.append({"role": mine, "content": texts, "metadata": md})
        if results and (texts or calls):
            raise FormatError(f"line {line}: a Content holding results beside text or calls")
        return results or out

    def _result(self, response: Any, line: int) -> Message:
        if not isinstance(response, dict):
            raise FormatError(f"line {line}: a functionResponse that is not an object")
        ident = response.get("id") if isinstance(response.get("id"), str) else ""
        body = response.get("response")
        body = body if isinstance(body, dict) else {}
        md: dict[str, Any] = {"tool_call_id": ident}
        name = response.get("name")
        if isinstance(name, str):
            md["name"] = name
        elif ident in self.names:
            md["name"] = self.names[ident]
        if "error" in body:
            md["is_error"] = True
            text = body["error"]
        else:
            text = body.get("output", "")
        if not isinstance(text, str):
            text = orjson.dumps(text).decode()
        return {"role": "tool", "content": text, "metadata": md}


def _rewrite(
    value: dict[str, Any], old: list[Message], new: list[Message]
) -> dict[str, Any] | None:
    """A record whose messages the repair changed: calls renamed or removed, ids, a note."""
    if value.get("type") == "system":
        raise FormatError("a repair inside a chat compression's history cannot be written back")
    if len(old) == len(new) == 1 and old[0].get("role") != new[0].get("role"):
        # A result the repair turned into a note (it answers no call): the record is the note's.
        made = _new(new[0], value)
        kept = {k: v for k, v in value.items() if k != "toolCallResult"}
        return {**kept, "type": made["type"], "message": made["message"]}
    if [m.get("role") for m in old] != [m.get("role") for m in new]:
        raise FormatError("a record whose messages the repair split cannot be written back")
    content = dict(value["message"])
    if new[0].get("role") == "tool":
        members = iter(new)
        parts = []
        for part in content["parts"]:
            response = {**part["functionResponse"], "id": call_id(_md(next(members)))}
            parts.append({**part, "functionResponse": response})
        content["parts"] = parts
        return {**value, "message": content}
    (before,), (after,) = old, new
    next_call = kept_calls(_md(before).get("tool_calls") or [], _md(after).get("tool_calls") or [])
    text_changed = before.get("content") != after.get("content")
    parts = []
    for part in content["parts"]:
        if "functionCall" in part:
            ids = next_call()
            if ids is None:
                continue  # the repair removed this call
            call = part["functionCall"]
            if ids[1] != call.get("id"):
                part = {**part, "functionCall": {**call, "id": ids[1]}}
        elif text_changed and "text" in part:
            continue  # the new text goes first
        parts.append(part)
    if text_changed:
        parts[:0] = _parts(after.get("content"))
    content["parts"] = parts
    return {**value, "message": content}


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    out: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "thinking":
            out.append({"text": part.get("thinking", ""), "thought": True})
        elif part.get("type") == "qwen_part":
            out.append(part["part"])
        elif part.get("type") == "text":
            out.append({"text": part.get("text", "")})
        else:
            out.append({"text": orjson.dumps(part).decode()})
    return out


def _new(m: Message, before: dict[str, Any] | None) -> dict[str, Any]:
    like = before or {}
    text = m.get("content") if isinstance(m.get("content"), str) else text_of(m.get("content"))
    out: dict[str, Any] = {
        "uuid": None,
        "parentUuid": None,
        "sessionId": like.get("sessionId", ""),
        "timestamp": None,
        "type": "user",
        "cwd": like.get("cwd", ""),
        "version": like.get("version", ""),
    }
    if m.get("role") == "tool":
        ident = call_id(_md(m))
        name = _md(m).get("name") or ""
        out["type"] = "tool_result"
        out["message"] = {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": ident, "name": name, "response": {"error": text}}}
            ],
        }
        out["toolCallResult"] = {"callId": ident, "status": "error", "error": text}
    elif m.get("role") == "assistant":
        parts: list[Any] = _parts(m.get("content"))
        for call in _md(m).get("tool_calls") or []:
            parts.append(
                {
                    "functionCall": {
                        "id": call_id(call),
                        "name": call.get("name"),
                        "args": call.get("arguments", {}),
                    }
                }
            )
        out["type"] = "assistant"
        out["message"] = {"role": "model", "parts": parts}
    else:
        out["message"] = {"role": "user", "parts": _parts(m.get("content")) or [{"text": ""}]}
    return out


serialise = linked.writer(CHAIN, _rewrite, _new).serialise


# The timeline's facts, as the reader kept them in its state (``records.state_facts``).
timeline_facts = state_facts
