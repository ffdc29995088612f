"""OpenHands event streams (All-Hands-AI/OpenHands): a trajectory, or a session's events.

OpenHands records a conversation as a stream of events. Its file store keeps
each one as ``sessions/<sid>/events/<id>.json`` (``storage/locations.py``;
the store under ``~/.openhands/``), and a trajectory (the UI's "export
trajectory", ``--save-trajectory-path``, the replay files of its tests) is
the same events as one JSON list. Each event is what
``events/serialization/event.py`` ``event_to_dict`` writes: ``id``,
``timestamp``, ``source`` (``user`` / ``agent`` / ``environment``),
``message``, then either ``action`` with ``args`` or ``observation`` with
``content`` and ``extras``; a tool's action and its observation carry
``tool_call_metadata`` (``function_name``, ``tool_call_id``,
``model_response``: the LiteLLM response that made the call, every call of
that response in ``choices[0].message.tool_calls``), an observation its
``cause`` (the action's id). ``inspector.local.openhands`` reads a session's
event files as this list, in id order.

Reading (``parse``), as ``memory/conversation_memory.py`` builds the model's
messages from the events:

- a ``system`` action is the system message, a ``message`` action a user's
  (``source: user``) or the agent's text, a ``finish`` action the agent's
  last text (its ``final_thought``, else its ``thought``);
- the tool actions of one model response (one ``model_response.id``) are one
  assistant message: that response's text and its calls (less a ``finish``
  call, which OpenHands answers with nothing);
- an observation with ``tool_call_metadata`` is the result of that call,
  read right after the message that made it (OpenHands itself sends a
  response's calls with their results once the last result is in); one
  whose call was never made, or a second one for a call, is read where it
  stands;
- an observation without one (a command the user ran, an error) is a user
  message; the stream's own bookkeeping (agent state changes, recalls,
  condensations, null events) is no message.

Strict: an event that is neither an action nor an observation, or whose
fields are not the types OpenHands writes, refuses the file (``unread`` once
an event was read).

Writing (``serialise``): an unchanged history is the file's very bytes.
Otherwise the list is written laid out like the file, each untouched event
as it was; a result the repair made is an ``error`` observation (the error
OpenHands writes for an action that did not run) answering the call's
action (``cause``, the action's ``tool_call_metadata``), added after the
stream's last event with the next id, as OpenHands appends; a note is a
``message`` action of the user, added the same way; a changed text or
result rewrites its event; a call the repair renamed or removed is renamed
or removed in the response every action of that message carries (and the
action of a removed call is dropped); a result the repair made a note
becomes a ``message`` action of the user in its place. The timeline shows
each event's time, and a reply's model and tokens (its response's
``usage``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from inspector.formats.base import Facts, FormatError, Parsed
from inspector.formats.jsondoc import dump_like, read_json, text_of
from inspector.formats.private import Message, call_id
from inspector.formats.records import DROP, SRC, RecordWriter

NAME = "openhands"
PROVIDER = "openai-chat"
LABEL = "OpenHands events / trajectory (JSON)"
EXTENSION = "json"
BLANK_IS_WRITTEN = True

_HEAD = re.compile(rb'^\s*\[\s*\{\s*"id"\s*:\s*\d+\s*,\s*"timestamp"\s*:')
# Events that are the stream's bookkeeping, not a message the model is sent.
_SILENT_ACTIONS = frozenset(
    {
        "change_agent_state",
        "recall",
        "null",
        "pause",
        "resume",
        "stop",
        "condensation",
        "condensation_request",
        "start",
        "push",
        "send_pr",
        "reject",
        "loop_recovery",
    }
)
_SILENT_OBSERVATIONS = frozenset(
    {"agent_state_changed", "null", "recall", "condense", "loop_detection", "success"}
)
_SOURCES = frozenset({"user", "agent", "environment"})


def sniff(head: bytes) -> float:
    """A JSON list whose first event opens on ``id`` and ``timestamp``, with OpenHands' keys."""
    if not _HEAD.match(head):
        return 0.0
    marks = (b'"source"', b'"action"', b'"observation"', b'"tool_call_metadata"', b'"args"')
    return 0.93 if sum(mark in head for mark in marks) >= 3 else 0.0


@dataclass(slots=True)
class _State:
    data: bytes
    events: list[Any]
    # Per message: the indexes of the events it was read from, and what kind of message.
    origin: list[list[int]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    facts: list[Facts | None] = field(default_factory=list)


def _response_of(event: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(response id, its assistant message, the response) of a tool action, or None."""
    meta = event.get("tool_call_metadata")
    if meta is None:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("tool_call_id"), str):
        raise FormatError(f"event {event.get('id')}: tool_call_metadata is not OpenHands'")
    response = meta.get("model_response")
    if not isinstance(response, dict):
        raise FormatError(f"event {event.get('id')}: its tool call has no model_response")
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise FormatError(f"event {event.get('id')}: the model_response has no choice")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise FormatError(f"event {event.get('id')}: the model_response has no message")
    rid = response.get("id")
    return (rid if isinstance(rid, str) else f"#{event.get('id')}"), message, response


def _calls(message: dict[str, Any], skip: set[str]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise FormatError("a model response's tool_calls is not a list")
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(call.get("id"), str):
            raise FormatError("a model response's tool call is not OpenAI's")
        if call["id"] in skip:
            continue
        out.append(
            {
                "tool_call_id": call["id"],
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return out


def _field(obj: dict[str, Any], key: str, where: str) -> str:
    """``obj[key]`` as text; a record without the field (its words elsewhere) is refused."""
    if key not in obj:
        raise FormatError(f"{where} has no {key!r}: its words are where this reader cannot read")
    return _text(obj[key], f"{where}'s {key}")


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FormatError(f"{where} is not text")
    return value


def _check(event: Any, index: int) -> None:
    if not isinstance(event, dict):
        raise FormatError(f"event {index + 1} is not an object")
    action, observation = event.get("action"), event.get("observation")
    if not isinstance(action, str) and not isinstance(observation, str):
        raise FormatError(f"event {index + 1} is neither an action nor an observation")
    if event.get("source") not in _SOURCES and "source" in event:
        raise FormatError(f"event {index + 1} has a source OpenHands does not write")
    if "id" in event and (not isinstance(event["id"], int) or isinstance(event["id"], bool)):
        raise FormatError(f"event {index + 1}: its id is not a number")
    if isinstance(action, str) and not isinstance(event.get("args", {}), dict):
        raise FormatError(f"event {index + 1}: its args are not an object")
    if isinstance(observation, str) and not isinstance(event.get("extras", {}), dict):
        raise FormatError(f"event {index + 1}: its extras are not an object")


def _facts(event: dict[str, Any], response: dict[str, Any] | None = None) -> Facts:
    at = event.get("timestamp")
    facts: Facts = {
        "at": at if isinstance(at, str) else None,
        "model": None,
        "tokens_in": None,
        "tokens_out": None,
    }
    if response is not None:
        model = response.get("model")
        facts["model"] = model if isinstance(model, str) else None
        usage = response.get("usage")
        if isinstance(usage, dict):
            for key, name in (("tokens_in", "prompt_tokens"), ("tokens_out", "completion_tokens")):
                value = usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    facts[key] = value
    return facts


def parse(data: bytes) -> Parsed:
    events = read_json(data)
    if not isinstance(events, list) or not events:
        raise FormatError("not a list of OpenHands events")
    state = _State(data, events)
    messages: list[Message] = []
    sources: list[list[int]] = []
    # Each response's assistant message, and where its next result goes.
    by_response: dict[str, int] = {}
    call_owner: dict[str, int] = {}
    call_index: dict[str, int] = {}
    answered: set[str] = set()
    finish_calls = {
        e["tool_call_metadata"].get("tool_call_id")
        for e in events
        if isinstance(e, dict)
        and e.get("action") == "finish"
        and isinstance(e.get("tool_call_metadata"), dict)
    }
    sure = False

    def add(m: Message, rec: int, kind: str, facts: Facts, at: int | None = None) -> int:
        m.setdefault("metadata", {})[SRC] = -1
        pos = len(messages) if at is None else at
        messages.insert(pos, m)
        sources.insert(pos, [rec + 1])
        state.origin.insert(pos, [rec])
        state.kinds.insert(pos, kind)
        state.facts.insert(pos, facts)
        for key, owner in call_owner.items():
            if owner >= pos and at is not None:
                call_owner[key] = owner + 1
        for key, owner in by_response.items():
            if owner >= pos and at is not None:
                by_response[key] = owner + 1
        return pos

    for rec, event in enumerate(events):
        try:
            _check(event, rec)
            sure = True
            action = event.get("action")
            args = event.get("args") or {}
            if isinstance(action, str):
                if action == "system":
                    content = _field(args, "content", f"event {rec + 1}'s args")
                    add({"role": "system", "content": content}, rec, "text", _facts(event))
                elif action == "message":
                    role = "user" if event.get("source") == "user" else "assistant"
                    content = _field(args, "content", f"event {rec + 1}'s args")
                    add({"role": role, "content": content}, rec, "text", _facts(event))
                elif action == "finish":
                    found = _response_of(event)
                    reply = found[1].get("content") if found else None
                    said = args.get("final_thought") or args.get("thought") or reply
                    said = said or event.get("message") or ""
                    text = _text(said, f"event {rec + 1}'s final thought")
                    facts = _facts(event, found[2] if found else None)
                    add({"role": "assistant", "content": text}, rec, "finish", facts)
                elif event.get("tool_call_metadata") is not None:
                    found = _response_of(event)
                    assert found is not None
                    rid, said, response = found
                    if rid in by_response:
                        state.origin[by_response[rid]].append(rec)
                        sources[by_response[rid]].append(rec + 1)
                        continue
                    calls = _calls(said, {c for c in finish_calls if isinstance(c, str)})
                    content = _field(said, "content", f"event {rec + 1}'s response message")
                    m: Message = {"role": "assistant", "content": content}
                    if calls:
                        m["metadata"] = {"tool_calls": calls}
                    pos = add(m, rec, "calls", _facts(event, response))
                    by_response[rid] = pos
                    for n, call in enumerate(calls):
                        call_owner.setdefault(call["tool_call_id"], pos)
                        call_index.setdefault(call["tool_call_id"], n)
                elif action not in _SILENT_ACTIONS and event.get("source") != "user":
                    raise FormatError(f"event {rec + 1}: a {action!r} action with no tool call")
                continue
            observation = event["observation"]
            content = _field(event, "content", f"event {rec + 1}")
            meta = event.get("tool_call_metadata")
            if meta is not None:
                if not isinstance(meta, dict) or not isinstance(meta.get("tool_call_id"), str):
                    raise FormatError(f"event {rec + 1}: tool_call_metadata is not OpenHands'")
                cid = meta["tool_call_id"]
                result: Message = {
                    "role": "tool",
                    "content": content,
                    "metadata": {"tool_call_id": cid, "name": meta.get("function_name")},
                }
                # A second result for a call is read where it stands, as an orphan is.
                owner = None if cid in answered else call_owner.get(cid)
                answered.add(cid)
                at = None
                if owner is not None:
                    at = owner + 1
                    mine = call_index.get(cid, 0)
                    while at < len(messages) and state.kinds[at] == "result":
                        other = messages[at]["metadata"]["tool_call_id"]
                        if call_owner.get(other) != owner or call_index.get(other, 0) > mine:
                            break
                        at += 1
                add(result, rec, "result", _facts(event), at)
            elif observation not in _SILENT_OBSERVATIONS:
                add({"role": "user", "content": content}, rec, "note", _facts(event))
        except FormatError as exc:
            raise FormatError(str(exc), unread=sure) from None
    if not messages:
        raise FormatError("no event of the stream is a message")
    for i, m in enumerate(messages):
        m["metadata"][SRC] = i
    first = events[0] if isinstance(events[0], dict) else {}
    about: dict[str, Any] = {"events": len(events)}
    if isinstance(first.get("timestamp"), str):
        about["started"] = first["timestamp"]
    return Parsed(NAME, messages, sources, meta=about, state=state)


def timeline_facts(parsed: Parsed) -> list[Facts | None]:
    state = parsed.state
    if isinstance(state, _State) and len(state.facts) == len(parsed.messages):
        return list(state.facts)
    return []


class _New:
    __slots__ = ("message",)

    def __init__(self, message: Message) -> None:
        self.message = message


class _Writer(RecordWriter[_State]):
    STATE = _State
    ROLE_CHANGES = {"tool": ("user",)}  # an orphan result becomes a user's message in its place

    def __init__(self, state: _State, before: list[Message]) -> None:
        super().__init__(state, before)
        ids = [
            e["id"] for e in state.events if isinstance(e, dict) and isinstance(e.get("id"), int)
        ]
        self.next_id = max(ids, default=-1) + 1
        self.actions: dict[str, dict[str, Any]] = {}
        for event in state.events:
            meta = event.get("tool_call_metadata") if isinstance(event, dict) else None
            if event.get("action") and isinstance(meta, dict):
                self.actions.setdefault(str(meta.get("tool_call_id")), event)
        self.renames: dict[str, str] = {}

    def value(self, rec: int) -> dict[str, Any]:
        current = self.changed.get(rec)
        base = current if isinstance(current, dict) else self.state.events[rec]
        return copy.deepcopy(base)

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        old = self.before[src]
        if m == old:
            return
        kind, recs = self.state.kinds[src], self.state.origin[src]
        text = text_of(m.get("content"))
        if kind in ("text", "note", "finish") or (kind == "result" and m["role"] == "user"):
            rec = recs[0]
            event = self.value(rec)
            if kind == "result" or kind == "note":
                event = _message_event(event, text)
            elif kind == "finish":
                event.setdefault("args", {})["final_thought"] = text
            else:
                event.setdefault("args", {})["content"] = text
                if "message" in event:
                    event["message"] = text
            self.changed[rec] = event
        elif kind == "result":
            event = self.value(recs[0])
            event["content"] = text
            event["tool_call_metadata"]["tool_call_id"] = call_id(m.get("metadata") or {})
            self.changed[recs[0]] = event
        else:  # a response's calls: every action of it carries the response
            new_calls = (m.get("metadata") or {}).get("tool_calls") or []
            old_calls = (old.get("metadata") or {}).get("tool_calls") or []
            kept: dict[str, str] = {}
            j = 0
            for call in old_calls:
                if j < len(new_calls) and new_calls[j].get("name") == call.get("name"):
                    kept[call["tool_call_id"]] = call_id(new_calls[j])
                    j += 1
            for rec in recs:
                event = self.value(rec)
                meta = event["tool_call_metadata"]
                said = meta["model_response"]["choices"][0]["message"]
                said["content"] = text or None if said.get("content") is None else text
                wire = {c.get("id"): c for c in said.get("tool_calls") or []}
                out = []
                for call in old_calls:
                    if call["tool_call_id"] in kept:
                        item = copy.deepcopy(wire.get(call["tool_call_id"])) or {
                            "id": call["tool_call_id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": call["arguments"]},
                        }
                        item["id"] = kept[call["tool_call_id"]]
                        out.append(item)
                read_ids = {call["tool_call_id"] for call in old_calls}
                others = [c for i, c in wire.items() if i not in read_ids]  # a finish call
                said["tool_calls"] = out + others
                own = meta["tool_call_id"]
                if own in kept:
                    meta["tool_call_id"] = kept[own]
                    self.changed[rec] = event
                elif any(own == c["tool_call_id"] for c in old_calls):
                    self.changed[rec] = DROP
                else:
                    self.changed[rec] = event
            self.renames.update({k: v for k, v in kept.items() if k != v})

    def on_new(self, m: Message) -> None:
        self.insert(len(self.state.events) - 1, _New(m))

    def on_dropped(self, src: int) -> None:
        for rec in self.state.origin[src]:
            self.changed[rec] = DROP

    def order(self) -> list[Any]:
        out: list[Any] = []
        for rec in range(len(self.state.events)):
            if self.changed.get(rec) is not DROP:
                out.append(rec)
        for items in self.inserted.values():
            out.extend(items)
        return out

    def new_record(self, item: Any) -> Any:
        m = item.message
        text = text_of(m.get("content"))
        event_id = self.next_id
        self.next_id += 1
        if m["role"] == "tool":
            cid = call_id(m.get("metadata") or {})
            action = self.actions.get(cid) or self.actions.get(
                next((k for k, v in self.renames.items() if v == cid), "")
            )
            event: dict[str, Any] = {"id": event_id, "timestamp": _time_after(self.state.events)}
            event["source"] = "environment"
            event["message"] = text
            if action is not None and isinstance(action.get("id"), int):
                event["cause"] = action["id"]
            event["observation"] = "error"
            meta = (
                copy.deepcopy(action["tool_call_metadata"])
                if action is not None
                else {"function_name": (m.get("metadata") or {}).get("name"), "model_response": {}}
            )
            meta["tool_call_id"] = cid
            event["tool_call_metadata"] = meta
            event["content"] = text
            event["extras"] = {"error_id": ""}
            return event
        base = {"id": event_id, "timestamp": _time_after(self.state.events)}
        if m["role"] == "assistant":
            return {**_message_event(base, text), "source": "agent"}
        return _message_event(base, text)

    def emit(self) -> bytes:
        items = []
        for item in self.order():
            if isinstance(item, int):
                change = self.changed.get(item)
                items.append(change if isinstance(change, dict) else self.state.events[item])
            else:
                items.append(self.new_record(item))
        return dump_like(items, self.state.data)


def _message_event(event: dict[str, Any], text: str) -> dict[str, Any]:
    """A ``message`` action of the user, in the place (id, time) of ``event``."""
    out: dict[str, Any] = {}
    for key in ("id", "timestamp"):
        if key in event:
            out[key] = event[key]
    out.update(
        source="user",
        message=text,
        action="message",
        args={"content": text, "image_urls": None, "wait_for_response": False},
    )
    return out


def _time_after(events: list[Any]) -> str:
    times = [e.get("timestamp") for e in events if isinstance(e, dict)]
    strings = [t for t in times if isinstance(t, str)]
    return max(strings) if strings else ""


serialise = _Writer.serialise
