"""Kimi Code sessions (``~/.kimi-code/sessions/<bucket>/<id>/agents/main/wire.jsonl``).

Kimi Code (MoonshotAI/kimi-code, the TypeScript agent that replaced the
Python Kimi CLI) keeps each agent's records in ``wire.jsonl``, one
``{"type", ..., "time"}`` record a line (``agent-core``'s
``AgentRecordEvents``), and rebuilds the conversation from them on resume
(``ContextMemory``; ``apps/vis``'s ``projectContext`` mirrors it):

- ``context.append_message`` is a message as it is (``role``, ``content``
  parts, ``toolCalls``, ``toolCallId``, ``isError``, ``origin``);
- ``context.append_loop_event`` carries the loop's own record: ``step.begin``
  opens an assistant message that the step's ``content.part`` (text,
  ``think``) and ``tool.call`` events fill; ``tool.result`` is a tool
  message; ``step.end`` closes the step (its ``usage`` is the step's tokens);
  a step left with no call and no part that carries anything (none, or only
  blank text and unsigned blank thinking, as a turn cancelled before the
  model answered leaves it) is no message: Kimi never sends it (agent-core-v2
  drops it from the history it rebuilds, ``loopEventFold.ts`` ``settleOpen``;
  agent-core's ``projector.ts`` drops it from every request);
- ``context.clear`` empties the history; ``context.apply_compaction``
  restarts it from its summary (read as one user message; the real user
  messages Kimi keeps beside it are chosen by a token budget and are not
  reproduced here); ``context.undo`` removes messages back to the ``count``-th
  real user input;
- every other record type (``turn.prompt``, ``usage.record``,
  ``llm.request``, ``config.update``, ...) is kept as it is.

The legacy Python Kimi CLI's ``context.jsonl`` (OpenAI-style messages) is
read by ``openai_chat``.

Strict: a record type or a loop event this reader does not know, or a
message part it cannot read, refuses the file (``unread`` after the first
Kimi record).

Writing (``serialise``): byte for byte when unchanged; otherwise through
``linked`` (no parent chain): a result the repair made is a
``tool.result`` loop event (``result.output`` the repair's text,
``isError: true``, ``parentUuid`` the call's event), put after the records
of the step that made the call; a note a ``context.append_message`` user
message; a dropped message loses its record. A repair that renames or removes
calls of a step rewrites or drops their ``tool.call`` records; one that
changes a step's text is not written (``FormatError``: the text is in its
``content.part`` records), and ``fix`` refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import orjson

from inspector.formats import linked
from inspector.formats.base import FormatError, Parsed, epoch_time, token_count
from inspector.formats.jsondoc import text_of
from inspector.formats.jsonl import Record, RecordReader, head_records, read_jsonl, record_type
from inspector.formats.private import REC, Message, call_id, kept_calls
from inspector.formats.private import metadata as _md
from inspector.formats.records import DROP, LogState, state_facts

NAME = "kimi-code"
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Kimi Code agent wire log (JSONL)"
EXTENSION = "jsonl"
BLANK_IS_WRITTEN = True

CHAIN = linked.Chain(id="", parent="", time="time")
# The private metadata key of a step's message: the record of each of its tool.call events.
CALL_RECS = "_call_recs"
# The private mark of a step that has carried nothing yet (taken off before the messages leave).
BLANK = "_blank"

# agent-core's AgentRecordEvents (packages/agent-core/src/agent/records/types.ts), and every
# durable record agent-core-v2 writes (the union `AgentRecord` of MoonshotAI/kimi-code's
# apps/vis/server/src/lib/agent-record-types.ts, 2bb23c4b1f22: its wire-manifest inventory and
# the v1-only kinds old wires keep). Those beside the context.* records hold no message.
RECORD_TYPES = frozenset(
    """
    metadata forked turn.prompt turn.steer turn.cancel config.update profile.bind
    tools.reset_active_tools permission.set_mode permission.record_approval_result
    full_compaction.begin plan_mode.enter plan_mode.cancel plan_mode.exit swarm_mode.enter
    swarm_mode.exit tools.register_user_tool tools.unregister_user_tool tools.set_active_tools
    usage.record full_compaction.cancel full_compaction.complete micro_compaction.apply
    context.append_message context.append_loop_event context.update_token_count context.clear
    context.apply_compaction context.undo tools.update_store goal.create goal.update goal.clear
    llm.tools_snapshot llm.request mcp.tools_discovered tower_mode.enter tower_mode.exit
    turn.ended turn.step.interrupted turn.step.retrying prompt.aborted prompt.accepted
    prompt.completed prompt.steered plugin.session_start runtime.set_binding plan.revision
    token_counting.measured token_counting.rebased token_counting.truncated
    token_counting.turn_recorded task.started task.terminated task.waitDelivered cron.add
    cron.cursor cron.delete file_history.checkpoint file_history.tracked interaction.request
    interaction.resolved interruptionReminder.recorded staleGuard.recorded staleGuard.cleared
    """.split()
)
_LOOP_EVENTS = ("step.begin", "step.end", "content.part", "tool.call", "tool.result")
_ROLES = ("system", "user", "assistant", "tool")
_MEDIA = ("image_url", "audio_url", "video_url")


def sniff(head: bytes) -> float:
    """Kimi Code's records: its ``metadata`` header, or its loop and context records."""
    records = head_records(head)
    if not records:
        return 0.0
    first = records[0]
    if isinstance(first, dict) and first.get("type") == "metadata" and "protocol_version" in first:
        return 0.97
    ours = [r for r in records if isinstance(r, dict) and r.get("type") in RECORD_TYPES]
    marked = any(str(r["type"]).startswith(("context.", "turn.")) for r in ours)
    return 0.9 if marked and 2 * len(ours) > len(records) else 0.0


def parse(data: bytes) -> Parsed:
    read = read_jsonl(data)
    reading = _Reading()
    reading.read_all(read)
    reading.history = [h for h in reading.history if not _blank_step(h[0])]
    messages = [m for m, _, _ in reading.history]
    if not messages:
        raise FormatError("no record holds a message (context.append_message, a loop step)")
    meta = {
        "cwd": reading.cwd,
        "not_reproduced": reading.compactions,
    }
    return Parsed(
        NAME,
        messages,
        [[line] for _, line, _ in reading.history],
        read.problems,
        meta=meta,
        state=_State(
            data,
            read.records,
            read.final_newline,
            read.crlf,
            reading.call_events,
            facts=[facts for _, _, facts in reading.history],
        ),
    )


class _Reading(RecordReader):
    def __init__(self) -> None:
        # Each: the message, its line, its facts.
        self.history: list[tuple[Message, int, dict[str, Any]]] = []
        self.steps: dict[str, int] = {}  # open step uuid -> index in history
        self.call_events: dict[str, str] = {}  # call id -> its tool.call event's uuid
        self.cwd: str | None = None
        self.compactions = 0
        super().__init__()

    def record(self, rec: int, record: Record) -> None:
        value, line = record.value, record.line
        kind = record_type(value, line, RECORD_TYPES, "Kimi Code")
        self.sure = True
        time = value.get("time")
        stamp = time if isinstance(time, int | float) and not isinstance(time, bool) else None
        if kind == "config.update" and isinstance(value.get("cwd"), str):
            self.cwd = value["cwd"]
        elif kind == "context.append_message":
            message = _message(value.get("message"), line)
            self._add(message, rec, line, stamp)
        elif kind == "context.append_loop_event":
            self._loop(value.get("event"), rec, line, stamp)
        elif kind == "context.clear":
            self.history.clear()
            self.steps.clear()
        elif kind == "context.apply_compaction":
            summary = value.get("contextSummary", value.get("summary"))
            if not isinstance(summary, str):
                raise FormatError(f"line {line}: a compaction without its 'summary' text")
            self.history.clear()
            self.steps.clear()
            self.compactions += 1
            note = {
                "role": "user",
                "content": summary,
                "metadata": {"kimi_origin": "compaction_summary"},
            }
            self._add(note, rec, line, stamp)
        elif kind == "context.undo":
            self._undo(value.get("count"), line)
        elif kind == "usage.record" and isinstance(value.get("model"), str):
            # The model of the step just ended: its last assistant message.
            for message, _, facts in reversed(self.history):
                if message["role"] == "assistant":
                    facts["model"] = facts["model"] or value["model"]
                    break

    def _add(self, message: Message, rec: int, line: int, stamp: Any) -> None:
        message["metadata"][REC] = rec
        at = epoch_time(stamp)
        self.history.append(
            (message, line, {"at": at, "model": None, "tokens_in": None, "tokens_out": None})
        )

    def _loop(self, event: Any, rec: int, line: int, stamp: Any) -> None:
        if not isinstance(event, dict) or event.get("type") not in _LOOP_EVENTS:
            kind = event.get("type") if isinstance(event, dict) else None
            raise FormatError(
                f"line {line}: a loop event of type {kind!r} this reader does not know"
            )
        kind = event["type"]
        if kind == "step.begin":
            self.steps[str(event.get("uuid"))] = len(self.history)
            # BLANK until a part that carries something: read (and dropped) by _blank_step.
            self._add(
                {"role": "assistant", "content": [], "metadata": {BLANK: True}}, rec, line, stamp
            )
            return
        if kind == "tool.result":
            result = event.get("result")
            if not isinstance(result, dict) or not isinstance(event.get("toolCallId"), str):
                raise FormatError(f"line {line}: a tool.result without 'toolCallId' or 'result'")
            if "output" not in result:
                raise FormatError(f"line {line}: a tool.result whose 'result' has no 'output'")
            md: dict[str, Any] = {"tool_call_id": event["toolCallId"]}
            if result.get("isError") is True:
                md["is_error"] = True
            self._add(
                {
                    "role": "tool",
                    "content": _content(result["output"], line),
                    "metadata": md,
                },
                rec,
                line,
                stamp,
            )
            return
        index = self.steps.get(str(event.get("stepUuid", event.get("uuid"))))
        if index is None:
            return  # a step opened before a clear or compaction: Kimi drops it too
        message, _, facts = self.history[index]
        if kind == "content.part":
            message["content"].extend(_content([event.get("part")], line))
            if not _vacuous(event.get("part")):
                message["metadata"].pop(BLANK, None)
        elif kind == "tool.call":
            if not isinstance(event.get("toolCallId"), str) or not isinstance(
                event.get("name"), str
            ):
                raise FormatError(f"line {line}: a tool.call without 'toolCallId' or 'name'")
            args = event.get("args")
            arguments = (
                args
                if isinstance(args, dict | str)
                else ({} if args is None else orjson.dumps(args).decode())
            )
            message["metadata"].setdefault("tool_calls", []).append(
                {"tool_call_id": event["toolCallId"], "name": event["name"], "arguments": arguments}
            )
            message["metadata"].setdefault(CALL_RECS, []).append(rec)
            self.call_events[event["toolCallId"]] = str(event.get("uuid"))
        elif kind == "step.end":
            usage = event.get("usage")
            if isinstance(usage, dict):
                parts = [
                    usage.get(k) for k in ("inputOther", "inputCacheRead", "inputCacheCreation")
                ]
                facts["tokens_in"] = sum(p for p in parts if isinstance(p, int))
                facts["cache_read"] = token_count(usage.get("inputCacheRead"))
                facts["cache_write"] = token_count(usage.get("inputCacheCreation"))
                out = usage.get("output")
                facts["tokens_out"] = out if isinstance(out, int) else None
            self.steps.pop(str(event.get("uuid")), None)

    def _undo(self, count: Any, line: int) -> None:
        if not isinstance(count, int) or count <= 0:
            return
        removed = 0
        for i in range(len(self.history) - 1, -1, -1):
            message = self.history[i][0]
            origin = _md(message).get("kimi_origin")
            if origin == "injection":
                continue
            if origin == "compaction_summary":
                break
            del self.history[i]
            if message["role"] == "user" and origin in (None, "user"):
                removed += 1
                if removed >= count:
                    break
        self.steps.clear()


def _blank_step(message: Message) -> bool:
    """A step Kimi never sends: no call, and no part that carries anything."""
    blank = message["metadata"].pop(BLANK, False)
    return bool(blank) and not message["metadata"].get("tool_calls")


def _vacuous(part: Any) -> bool:
    """Kimi's ``isVacuousContentPart``: blank text, or blank thinking with no signature."""
    if part.get("type") == "text":
        return not part["text"].strip()
    if part.get("type") == "think":
        return "encrypted" not in part and not part["think"].strip()
    return False


# A ContextMessage's keys (kosong's Message as agent-core writes it).
_MESSAGE_KEYS = frozenset(
    {"role", "name", "content", "toolCalls", "toolCallId", "isError", "origin", "partial"}
)


def _message(value: Any, line: int) -> Message:
    if not isinstance(value, dict) or value.get("role") not in _ROLES:
        raise FormatError(f"line {line}: a context message without a known 'role'")
    extra = sorted(set(value) - _MESSAGE_KEYS)
    if extra or "content" not in value:
        what = f"keys {', '.join(extra)} it does not have" if extra else "no 'content'"
        raise FormatError(f"line {line}: a context message with {what}")
    md: dict[str, Any] = {}
    origin = value.get("origin")
    if isinstance(origin, dict) and isinstance(origin.get("kind"), str):
        md["kimi_origin"] = origin["kind"]
    calls = []
    for call in value.get("toolCalls") or []:
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            raise FormatError(f"line {line}: a tool call without its 'id'")
        # The TypeScript kosong's {"id", "name", "arguments"}; the Python one's "function".
        nested = call.get("function")
        function: dict[str, Any] = nested if isinstance(nested, dict) else call
        calls.append(
            {
                "tool_call_id": call["id"],
                "name": function.get("name") or "",
                "arguments": function.get("arguments") or {},
            }
        )
    if calls:
        md["tool_calls"] = calls
    if value["role"] == "tool":
        if not isinstance(value.get("toolCallId"), str):
            raise FormatError(f"line {line}: a tool message without its 'toolCallId'")
        md["tool_call_id"] = value["toolCallId"]
        if value.get("isError") is True:
            md["is_error"] = True
    return {
        "role": value["role"],
        "content": _content(value["content"], line),
        "metadata": md,
    }


def _content(value: Any, line: int) -> Any:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise FormatError(f"line {line}: content that is neither text nor a list of parts")
    parts: list[Any] = []
    for part in value:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "think" and isinstance(part.get("think"), str):
            parts.append({"type": "thinking", "thinking": part["think"]})
        elif kind in _MEDIA:
            parts.append({"type": "kimi_part", "part": part})
        else:
            raise FormatError(
                f"line {line}: a content part of type {kind!r} this reader cannot read"
            )
    return parts


@dataclass(slots=True)
class _State(LogState):
    calls: dict[str, str]  # call id -> the uuid of its tool.call event


class _Writer(linked.ChainedWriter):
    STATE = _State
    CHAIN = CHAIN

    def rewrite(self, value: Any, old: list[Message], new: list[Message]) -> Any:
        (before,), (after,) = old, new
        loop = value.get("type") == "context.append_loop_event"
        if loop and after.get("role") == "assistant":
            return self._step(value, before, after)
        if before.get("role") == after.get("role") == "tool":  # a result under a new id
            ident = call_id(_md(after))
            if loop:
                return {**value, "event": {**value["event"], "toolCallId": ident}}
            return {**value, "message": {**value["message"], "toolCallId": ident}}
        made = _new(after, self._calls)
        return {**made, "time": value.get("time")}

    def _step(self, value: Any, before: Message, after: Message) -> Any:
        """A step's calls renamed or removed: its tool.call records changed or dropped."""
        if before.get("content") != after.get("content"):
            raise FormatError(
                "a repair that changes a step's text cannot be written into Kimi Code's records"
            )
        old_md = _md(before)
        next_call = kept_calls(old_md.get("tool_calls") or [], _md(after).get("tool_calls") or [])
        for rec in old_md.get(CALL_RECS) or []:
            ids = next_call()
            record = self.state.records[rec].value
            if ids is None:
                self.changed[rec] = DROP
            elif ids[1] != record["event"]["toolCallId"]:
                self.changed[rec] = {**record, "event": {**record["event"], "toolCallId": ids[1]}}
        return None  # step.begin holds none of it: its own bytes

    def new(self, m: Message, before: Any) -> dict[str, Any]:
        return _new(m, self._calls)

    def follows(self, value: Any) -> bool:
        return _follows(value)

    @property
    def _calls(self) -> dict[str, str]:
        return cast(_State, self.state).calls


serialise = _Writer.serialise


def _follows(value: Any) -> bool:
    """The records of the step before a new one: its parts, calls, end and usage."""
    if not isinstance(value, dict):
        return False
    if value.get("type") in (
        "usage.record",
        "permission.record_approval_result",
        "llm.request",
        "llm.tools_snapshot",
    ):
        return True
    event = value.get("event")
    return (
        value.get("type") == "context.append_loop_event"
        and isinstance(event, dict)
        and event.get("type") in ("content.part", "tool.call", "step.end")
    )


def _new(m: Message, calls: dict[str, str]) -> dict[str, Any]:
    text = m.get("content") if isinstance(m.get("content"), str) else text_of(m.get("content"))
    if m.get("role") == "tool":
        ident = call_id(_md(m))
        event = {
            "type": "tool.result",
            "parentUuid": calls.get(ident, ident),
            "toolCallId": ident,
            "result": {"output": text, "isError": True},
        }
        return {"type": "context.append_loop_event", "event": event, "time": None}
    role = m.get("role") if m.get("role") in ("user", "system", "assistant") else "user"
    message: dict[str, Any] = {
        "role": role,
        "content": [{"type": "text", "text": text}],
        "toolCalls": [],
    }
    if role == "assistant":
        message["toolCalls"] = [
            {
                "type": "function",
                "id": call_id(c),
                "name": c.get("name") or "",
                "arguments": c.get("arguments"),
            }
            for c in _md(m).get("tool_calls") or []
        ]
    return {"type": "context.append_message", "message": message, "time": None}


# The timeline's facts, as the reader kept them in its state (``records.state_facts``).
timeline_facts = state_facts
