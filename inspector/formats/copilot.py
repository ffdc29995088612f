"""GitHub Copilot CLI sessions (``~/.copilot/session-state/<session-id>/events.jsonl``).

Copilot CLI (and every client of its runtime: the Copilot SDKs, VS Code's
Copilot CLI sessions) appends one event a line, in the envelope its SDK's
schema (``github/copilot-sdk``, ``session-events.schema.json``) defines:
``{"type", "data", "id", "timestamp", "parentId", "ephemeral"?,
"agentId"?}``, ``parentId`` naming the event before it. On resume the CLI
replays the file (``fromEvents``) into the conversation it sends the model.

Reading (``parse``)
-------------------
- ``system.message``, ``user.message`` and ``assistant.message`` of the main
  agent become system, user and assistant messages (``data.content``); an
  assistant's ``reasoningText`` is a ``thinking`` part before its text, its
  ``toolRequests`` are calls (``toolCallId``, ``name``, ``arguments`` as
  written: an object, or a string);
- ``tool.execution_complete`` is the call's result: ``result.content``, or
  for a failed call ``error.message`` (``is_error``);
- a call with no ``tool.execution_start`` anywhere in the file never ran
  (``not_started``); an ``abort`` event gives the message before it the cause
  ``"user_stop"``;
- events of a sub-agent (``agentId``, or the deprecated
  ``data.parentToolCallId``) are its own conversation: carried, counted in
  ``meta["subagent_events"]``, not read into the main history;
- every other event the schema lists (turns, hooks, permissions, model
  changes, compaction, ...) is kept as it is; ``session.start`` gives
  ``meta["session_id"]``, ``cwd``, ``copilot_version`` and the model.
- the state's ``facts`` (``timeline_facts``): per message its event's time, model and output tokens.

Strict: an event type the schema does not list, an envelope key it does not
have, or a message event whose content is not what the schema says refuses
the file (``FormatError``, ``unread`` once the file has shown Copilot's
events), never guessed at. The schema's list is ``EVENT_TYPES``.

Writing (``serialise``)
-----------------------
An unchanged session comes back byte for byte (a glued line split in two).
A repaired one keeps every event it does not have to change, through
``linked``: a result the repair made is a ``tool.execution_complete`` with
``success: false`` and the repair's text as ``error.message`` (code
``"interrupted"``), a note is a ``user.message``; each goes right after the
event of the message before it, ``parentId`` chained through it; a dropped
message loses its event; an assistant message whose calls were renamed or
removed has its ``toolRequests`` rewritten.
"""

from __future__ import annotations

from typing import Any

from inspector.formats import linked
from inspector.formats.base import FormatError, Parsed
from inspector.formats.jsondoc import text_of
from inspector.formats.jsonl import Record, RecordReader, head_records, read_jsonl, record_type
from inspector.formats.private import REC, Message, call_id, kept_calls
from inspector.formats.private import metadata as _md
from inspector.formats.records import LogState, state_facts

NAME = "copilot"
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "GitHub Copilot CLI session events (JSONL)"
EXTENSION = "jsonl"
# A message event's content is read from ``data.content`` only, and refused when it is
# not a string there: a blank message is blank in the file.
BLANK_IS_WRITTEN = True

CHAIN = linked.Chain(id="id", parent="parentId")

# The event types of the Copilot runtime's session-events schema (github/copilot-sdk,
# nodejs/src/generated/session-events.ts, 2026-08), every one carried as it is unless read.
EVENT_TYPES = frozenset(
    """
    session.start session.resume session.remote_steerable_changed session.error session.idle
    session.title_changed session.schedule_created session.schedule_cancelled
    session.schedule_rearmed session.autopilot_objective_changed session.info session.warning
    session.model_change session.mode_changed session.session_limits_changed
    session.permissions_changed session.plan_changed session.todos_changed
    session.workspace_file_changed session.handoff session.truncation session.snapshot_rewind
    session.shutdown session.usage_checkpoint session.context_changed session.usage_info
    session.context_cleared session.compaction_start session.compaction_complete
    session.task_complete user.message pending_messages.modified assistant.turn_start
    assistant.intent assistant.server_tool_progress assistant.reasoning
    assistant.reasoning_delta assistant.tool_call_delta assistant.streaming_delta
    assistant.message assistant.message_start assistant.message_delta assistant.turn_end
    assistant.idle assistant.usage model.call_failure abort tool.user_requested
    tool.execution_start tool.execution_partial_result tool.execution_progress
    tool.execution_complete tool_search.activated skill.invoked subagent.started
    subagent.completed subagent.failed subagent.selected subagent.deselected hook.start
    hook.end hook.progress session.binary_asset system.message system.notification
    permission.requested permission.completed user_input.requested user_input.completed
    elicitation.requested elicitation.completed sampling.requested sampling.completed
    mcp.oauth_required mcp.oauth_completed mcp.headers_refresh_required
    mcp.headers_refresh_completed session.custom_notification ui.ephemeral_query
    external_tool.requested external_tool.completed command.queued command.execute
    command.completed auto_mode_switch.requested auto_mode_switch.completed
    session_limits_exhausted.requested session_limits_exhausted.completed
    session.auto_mode_resolved session.managed_settings_resolved
    session.managed_settings_enforced commands.changed capabilities.changed
    exit_plan_mode.requested exit_plan_mode.completed session.tools_updated
    session.background_tasks_changed factory.run_updated factory.run_started
    factory.run_settled session.skills_loaded session.custom_agents_updated
    session.mcp_servers_loaded session.mcp_server_status_changed mcp.tools.list_changed
    mcp.resources.list_changed mcp.prompts.list_changed session.extensions_loaded
    session.canvas.opened session.canvas.registry_changed session.canvas.closed
    session.canvas.unavailable session.canvas.recorded session.canvas.removed
    session.extensions.attachments_pushed mcp_app.tool_call_complete
    """.split()
    # And those Copilot CLI 1.0.102 writes besides (the session-events.schema.json its
    # package carries): model calls, retries, usage receipts, skill and permission receipts,
    # its fusion and workflow runs (``factory.run_*`` above are the older names of these).
    + """
    agent.interrupted assistant.turn_retry human_response.recorded prompt_cache_break
    model.call_start model.call_finished model.call_final_result sandbox.decision
    assistant.fusion_phase_started assistant.fusion_phase_activity
    assistant.fusion_phase_completed assistant.fusion_phase_failed session.fusion_route_started
    session.fusion_route_failed session.fusion_resolved session.fusion_handoff
    session.fusion_change_checkpoint session.fusion_commit_started session.fusion_completed
    permission.assentDetected permission.carriedForward permission.contextualAuthorization
    permission.messageAuthorization permission.messageAuthorizationDegraded
    permission.messageAuthorizationRead mcp.oauth_recovery_completed
    session.auto_tier_recommendation session.auto_tier_switch_failed session.autopilot_stopped
    session.completion_receipt session.indexed_search session.managed_plugin_progress
    session.mcp_server_needs_reconnect session.mcp_server_removed
    session.mcp_server_tools_loaded session.memory_changed session.mode_notice_delivered
    session.model_deselected session.permission_recovery session.quota_observation
    session.request_body_compression_disabled session.usage_record skill.context_delivered
    skill.context_delivered_ref skill.invoked_ref subagent.configured tool.shell_output
    workflow.run_started workflow.run_updated workflow.run_settled
    """.split()
)
_ENVELOPE = frozenset({"type", "data", "id", "timestamp", "parentId", "ephemeral", "agentId"})
_ROLES = {"system.message": "system", "user.message": "user", "assistant.message": "assistant"}
# The words of a result the repair made, as Copilot's failed tool results carry them.
HEALED_CODE = "interrupted"


def sniff(head: bytes) -> float:
    """Copilot's envelope (``type`` from the schema's list, ``data``) on most records."""
    records = head_records(head)
    ours = [r for r in records if _is_event(r)]
    if not ours:
        return 0.0
    if any(r["type"] in ("session.start", "user.message") for r in ours):
        return 0.95 if len(ours) == len(records) else 0.85
    return 0.6 if 2 * len(ours) > len(records) else 0.0


def _is_event(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and record.get("type") in EVENT_TYPES
        and isinstance(record.get("data"), dict)
        and set(record) <= _ENVELOPE
    )


def parse(data: bytes) -> Parsed:
    read = read_jsonl(data)
    state = _Reading()
    state.read_all(read)
    if not state.messages:
        raise FormatError("no event holds a message (user.message, assistant.message, ...)")
    started = state.started
    not_started = {
        call["tool_call_id"]
        for m in state.messages
        for call in _md(m).get("tool_calls") or []
        if call["tool_call_id"] not in started
    }
    meta = {**state.meta, "subagent_events": state.subagent}
    return Parsed(
        NAME,
        state.messages,
        state.sources,
        read.problems,
        causes=state.causes,
        not_started=not_started,
        meta=meta,
        state=LogState.of(data, read, state.facts),
    )


class _Reading(RecordReader):
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.sources: list[list[int]] = []
        self.facts: list[dict[str, Any] | None] = []
        self.causes: dict[int, str] = {}
        self.meta: dict[str, Any] = {}
        self.started: set[str] = set()
        self.names: dict[str, str] = {}
        self.subagent = 0
        super().__init__()

    def record(self, rec: int, record: Record) -> None:
        value, line = record.value, record.line
        kind = record_type(
            value,
            line,
            EVENT_TYPES,
            "the Copilot schema",
            record="an event",
            refuses="does not list",
        )
        extra = sorted(set(value) - _ENVELOPE)
        if extra:
            raise FormatError(
                f"line {line}: an event with keys {', '.join(extra)} it does not have"
            )
        body = value.get("data")
        if not isinstance(body, dict):
            raise FormatError(f"line {line}: a {kind} event whose 'data' is not an object")
        self.sure = True
        if "agentId" in value or "parentToolCallId" in body:
            self.subagent += 1
            return
        if kind == "session.start":
            context = body.get("context")
            self.meta.update(
                session_id=body.get("sessionId"),
                copilot_version=body.get("copilotVersion"),
                model=body.get("selectedModel"),
                cwd=context.get("cwd") if isinstance(context, dict) else None,
            )
        elif kind == "tool.execution_start":
            if isinstance(body.get("toolCallId"), str):
                self.started.add(body["toolCallId"])
        elif kind == "abort":
            if self.messages:
                self.causes[len(self.messages) - 1] = "user_stop"
        elif kind in _ROLES:
            self._add(rec, line, value, self._message(kind, body, line))
        elif kind == "tool.execution_complete":
            self._add(rec, line, value, self._result(body, line))

    def _add(self, rec: int, line: int, value: dict[str, Any], message: Message) -> None:
        message["metadata"][REC] = rec
        self.messages.append(message)
        self.sources.append([line])
        body = value["data"]
        stamp, model, out = value.get("timestamp"), body.get("model"), body.get("outputTokens")
        self.facts.append(
            {
                "at": stamp if isinstance(stamp, str) else None,
                "model": model if isinstance(model, str) else None,
                "tokens_in": None,
                "tokens_out": out if isinstance(out, int) and not isinstance(out, bool) else None,
            }
        )

    def _message(self, kind: str, body: dict[str, Any], line: int) -> Message:
        role = _ROLES[kind]
        content = body.get("content")
        if not isinstance(content, str):
            raise FormatError(f"line {line}: a {kind} event whose 'data.content' is not text")
        metadata: dict[str, Any] = {}
        if role != "assistant":
            return {"role": role, "content": content, "metadata": metadata}
        parts: list[Any] = []
        reasoning = body.get("reasoningText")
        if isinstance(reasoning, str) and reasoning:
            parts.append({"type": "thinking", "thinking": reasoning})
        if content:
            parts.append({"type": "text", "text": content})
        calls = []
        requests = body.get("toolRequests", [])
        if not isinstance(requests, list):
            raise FormatError(f"line {line}: 'data.toolRequests' is not a list")
        for request in requests:
            if not (
                isinstance(request, dict)
                and isinstance(request.get("toolCallId"), str)
                and isinstance(request.get("name"), str)
            ):
                raise FormatError(f"line {line}: a tool request without 'toolCallId' or 'name'")
            self.names[request["toolCallId"]] = request["name"]
            calls.append(
                {
                    "tool_call_id": request["toolCallId"],
                    "name": request["name"],
                    "arguments": request.get("arguments", {}),
                }
            )
        if calls:
            metadata["tool_calls"] = calls
        return {"role": role, "content": parts if reasoning else content, "metadata": metadata}

    def _result(self, body: dict[str, Any], line: int) -> Message:
        ident = body.get("toolCallId")
        if not isinstance(ident, str):
            raise FormatError(f"line {line}: a tool.execution_complete without 'toolCallId'")
        result, error = body.get("result"), body.get("error")
        text: Any = None
        if isinstance(result, dict):
            text = result.get("content")
        elif isinstance(error, dict):
            text = error.get("message")
        elif result is None and error is None:
            text = ""
        if not isinstance(text, str):
            raise FormatError(f"line {line}: a tool result without 'result.content' text")
        metadata: dict[str, Any] = {"tool_call_id": ident}
        if ident in self.names:
            metadata["name"] = self.names[ident]
        if body.get("success") is False:
            metadata["is_error"] = True
        return {"role": "tool", "content": text, "metadata": metadata}


# The events that belong to the call before them: a result the repair makes goes after.
_OF_A_CALL = frozenset(
    {
        "tool.execution_start",
        "tool.execution_partial_result",
        "tool.execution_progress",
        "tool.user_requested",
        "permission.requested",
        "permission.completed",
        "hook.start",
        "hook.progress",
        "hook.end",
        "external_tool.requested",
        "external_tool.completed",
    }
)


def _follows(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _OF_A_CALL


def _rewrite(value: dict[str, Any], old: list[Message], new: list[Message]) -> dict[str, Any]:
    """An event whose message the repair changed: its calls renamed or removed, its text."""
    (before,), (after,) = old, new
    if before.get("role") != after.get("role"):
        # A result the repair turned into a note (it answers no call): the event becomes
        # the note's, in the same place under the same id.
        made = _new(after, None)
        return {**value, "type": made["type"], "data": made["data"]}
    body = dict(value["data"])
    if before.get("content") != after.get("content"):
        text = _text(after.get("content"))
        if after.get("role") == "tool":
            body.pop("result", None)
            body["error"] = {"message": text, "code": HEALED_CODE}
        else:
            body["content"] = text
    if after.get("role") == "assistant":
        next_call = kept_calls(
            _md(before).get("tool_calls") or [], _md(after).get("tool_calls") or []
        )
        requests = []
        for request in body.get("toolRequests") or []:
            ids = next_call()
            if ids is not None:
                requests.append(
                    request
                    if ids[1] == request["toolCallId"]
                    else {**request, "toolCallId": ids[1]}
                )
        body["toolRequests"] = requests
    if after.get("role") == "tool":
        ident = call_id(_md(after))
        if ident != body.get("toolCallId"):
            body["toolCallId"] = ident
    return {**value, "data": body}


def _new(m: Message, before: dict[str, Any] | None) -> dict[str, Any]:
    """The event for a message the repair made (the chain's keys are filled by ``linked``)."""
    text = _text(m.get("content"))
    role = m.get("role")
    if role == "tool":
        body: dict[str, Any] = {
            "toolCallId": call_id(_md(m)),
            "success": False,
            "error": {"message": text, "code": HEALED_CODE},
        }
        kind = "tool.execution_complete"
    elif role == "assistant":
        calls = _md(m).get("tool_calls") or []
        requests = [
            {
                "toolCallId": call_id(c),
                "name": c.get("name") or "",
                "arguments": c.get("arguments", {}),
            }
            for c in calls
            if isinstance(c, dict)
        ]
        body = {
            "messageId": linked.new_id("message", text, len(requests)),
            "content": text,
            "toolRequests": requests,
        }
        kind = "assistant.message"
    else:
        body = {"content": text}
        kind = "system.message" if role == "system" else "user.message"
    return {"type": kind, "data": body, "id": None, "timestamp": None, "parentId": None}


def _text(content: Any) -> str:
    return content if isinstance(content, str) else text_of(content)


serialise = linked.writer(CHAIN, _rewrite, _new, _follows).serialise


# The timeline's facts, as the reader kept them in its state (``records.state_facts``).
timeline_facts = state_facts
