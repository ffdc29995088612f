"""The OpenHands CLI's conversations (OpenHands/software-agent-sdk, the "V1" SDK): its events.

The CLI (OpenHands/OpenHands-CLI) runs the SDK's ``LocalConversation``,
which persists a conversation as ``<conversations>/<id hex>/base_state.json``
and ``events/event-<index, 5+ digits>-<event id>.json``, one event a file,
each what ``Event.model_dump_json(exclude_none=True)`` writes
(``conversation/event_store.py``, ``persistence_const.py``): the event's
fields in model order, its class last as ``kind``. ``inspector.local.
openhands_cli`` reads a conversation's event files, in index order, as the
JSON list this module reads (the events themselves, as the SDK wrote them).

Reading (``parse``), as ``LLMConvertibleEvent.events_to_messages`` builds the
model's messages from the events, in their stored order:

- a ``SystemPromptEvent`` is the system message (its ``system_prompt``, and
  its ``dynamic_context`` where it has one), a ``MessageEvent`` its
  ``llm_message`` (its role, its text and image parts, then the
  ``extended_content`` the agent's context added), a
  ``CondensationSummaryEvent`` the user's message its summary is;
- consecutive ``ActionEvent``s of one ``llm_response_id`` are one assistant
  message: the first one's ``thought`` and every event's ``tool_call``;
- an ``ObservationEvent`` (its observation's ``content``, after the error
  header the SDK sends where ``is_error``), a ``UserRejectObservation``
  (``Action rejected: <reason>``) and an ``AgentErrorEvent`` (its ``error``)
  are the result of the call whose ``tool_call_id`` they carry;
- every other kind the SDK writes (state updates, pauses, condensations,
  hook runs, completion logs...) is the conversation's bookkeeping, no
  message.

An action whose ``action`` is missing was never run (the SDK runs only the
actions it could validate): if it has no result, its call never started.
A conversation whose events form a tree (``parent_id`` naming another event
than the one before: a navigated or forked conversation) is refused, as is
any event that is not the SDK's: which branch is live is in ``base_state.
json``, not in the events.

Writing (``serialise``): an unchanged history is the file's very bytes.
Otherwise the list is written with each untouched event as it was. A result
the repair made is an ``AgentErrorEvent`` answering the call (what the SDK
itself writes for an action interrupted before its result,
``LocalConversation._emit_orphaned_action_errors``; an action with one is no
longer pending, so the SDK does not run it again on resume), placed right
after the results of its call's message; a note is a user's
``MessageEvent``; a result the repair made a note becomes a user's
``MessageEvent`` in its place (same id and time); a call renamed is renamed
in its ``ActionEvent`` and in the results that answer it; a call removed
loses its ``ActionEvent`` (its thought kept on the message); a message
dropped loses its event. New events get an id made from the event before
them (no clock, no random number) and that event's time; where the events
carry ``parent_id``, each is relinked to the event now before it, as the SDK
stamps an event it appends.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from inspector.formats.base import Facts, FormatError, Parsed
from inspector.formats.jsondoc import dump_like, read_json, text_of
from inspector.formats.private import Message, call_id, calls_of
from inspector.formats.records import SRC, RecordWriter

NAME = "openhands-cli"
PROVIDER = "openai-chat"
LABEL = "OpenHands CLI / SDK conversation (events)"
EXTENSION = "json"
BLANK_IS_WRITTEN = True

RESULTS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
# The kinds the SDK persists that are no message the model is sent (event/__init__.py).
SILENT = frozenset(
    {
        "ConversationStateUpdateEvent",
        "ConversationErrorEvent",
        "PauseEvent",
        "InterruptEvent",
        "Condensation",
        "CondensationRequest",
        "HookExecutionEvent",
        "LLMCompletionLogEvent",
        "TokenEvent",
        "StreamingDeltaEvent",
        "ACPToolCallEvent",
    }
)
MESSAGES = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "CondensationSummaryEvent"} | RESULTS
)
KINDS = MESSAGES | SILENT
# Events that are no node of the conversation's tree (state.py append_event, _resolve_active_leaf).
NOT_NODES = frozenset({"ConversationStateUpdateEvent", "ConversationErrorEvent"})
ROOT = "__root__"  # event/types.py ROOT_PARENT_ID
_SOURCES = frozenset({"agent", "user", "environment", "hook"})
_KIND = re.compile(rb'"kind"\s*:\s*"(' + b"|".join(k.encode() for k in sorted(KINDS)) + rb')"')
_START = re.compile(
    rb'\s*\[\s*\{\s*"id"\s*:\s*"[^"\\]{1,100}"\s*,\s*"timestamp"\s*:\s*"[^"\\]{1,64}"\s*,'
    rb'\s*"source"\s*:\s*"(agent|user|environment|hook)"\s*[,}]'
)
_ERROR_HEADER = "[An error occurred during execution.]\n"  # tool/schema.py Observation
# The namespace of the ids of the events a repair adds (uuid5 of the event before and the call).
_NEW_IDS = uuid.UUID("6f1c4d3e-2a5b-4c7d-8e9f-0a1b2c3d4e5f")


def sniff(head: bytes) -> float:
    """A JSON list of the SDK's events: each opens on ``id`` (a string), ``timestamp``,
    ``source``, as the models dump them; its ``kind`` is last, past a long first event."""
    start = _START.match(head)
    if not start:
        return 0.0
    return 0.95 if _KIND.search(head) else 0.92


@dataclass(slots=True)
class _State:
    data: bytes
    events: list[dict[str, Any]]
    # Per message: the events it was read from, what kind of message, the silent events after it.
    origin: list[list[int]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    trail: list[list[int]] = field(default_factory=list)
    lead: list[int] = field(default_factory=list)
    facts: list[Facts | None] = field(default_factory=list)
    linked: bool = False


def _where(rec: int) -> str:
    return f"event {rec + 1}"


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise FormatError(f"{where} is not text")
    return value


def _parts(items: Any, where: str) -> list[dict[str, Any]]:
    """The SDK's ``TextContent`` / ``ImageContent`` list as canonical parts."""
    if not isinstance(items, list):
        raise FormatError(f"{where} is not a list of contents")
    out: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text":
            out.append({"type": "text", "text": _text(item.get("text"), f"{where}'s text")})
        elif kind == "image":
            urls = item.get("image_urls")
            if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
                raise FormatError(f"{where}'s image has no list of urls")
            out.extend({"type": "image", "url": u} for u in urls)
        else:
            raise FormatError(f"{where} holds a content the SDK does not write")
    return out


def _field(obj: dict[str, Any], key: str, where: str) -> Any:
    """``obj[key]``; a record without it (its words elsewhere) is refused, never read blank."""
    if key not in obj:
        raise FormatError(f"{where} has no {key!r}: its words are where this reader cannot read")
    return obj[key]


def _content(parts: list[dict[str, Any]]) -> Any:
    """One text part as its string (how every shape reads plain text), else the parts."""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"]
    if not parts:
        return ""
    return parts


def _check(event: Any, rec: int) -> str:
    if not isinstance(event, dict):
        raise FormatError(f"{_where(rec)} is not an object")
    kind = event.get("kind")
    if kind not in KINDS:
        raise FormatError(f"{_where(rec)} has a kind the SDK does not write: {kind!r}")
    if not isinstance(event.get("id"), str) or not event["id"] or event["id"] == ROOT:
        raise FormatError(f"{_where(rec)} has no event id")
    if not isinstance(event.get("timestamp"), str):
        raise FormatError(f"{_where(rec)} has no timestamp")
    if event.get("source") not in _SOURCES:
        raise FormatError(f"{_where(rec)} has a source the SDK does not write")
    parent = event.get("parent_id")
    if parent is not None and not isinstance(parent, str):
        raise FormatError(f"{_where(rec)}: its parent_id is not an id")
    return str(kind)


def _call(event: dict[str, Any], rec: int) -> dict[str, Any]:
    wire = event.get("tool_call")
    if not isinstance(wire, dict) or not isinstance(wire.get("id"), str):
        raise FormatError(f"{_where(rec)}: an ActionEvent without its tool_call")
    name, arguments = wire.get("name"), wire.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, str):
        raise FormatError(f"{_where(rec)}: its tool_call is not the SDK's")
    return {"tool_call_id": wire["id"], "name": name, "arguments": arguments}


def _result_text(event: dict[str, Any], kind: str, rec: int) -> Any:
    where = _where(rec)
    if kind == "AgentErrorEvent":
        return _text(event.get("error"), f"{where}'s error")
    if kind == "UserRejectObservation":
        reason = event.get("rejection_reason", "User rejected the action")
        return f"Action rejected: {_text(reason, f'{where}s rejection reason')}"
    observation = event.get("observation")
    if not isinstance(observation, dict):
        raise FormatError(f"{where}: an ObservationEvent without its observation")
    parts = _parts(_field(observation, "content", f"{where}'s observation"), where)
    if observation.get("is_error") is True:
        parts.insert(0, {"type": "text", "text": _ERROR_HEADER})
    parts += _parts(event.get("extended_content", []), f"{where}'s extended content")
    return _content(parts)


def _tree(events: list[dict[str, Any]]) -> bool:
    """Whether the events are linked (``parent_id``); refused where they fork."""
    linked = False
    before: str | None = None
    for rec, event in enumerate(events):
        parent = event.get("parent_id")
        if event["kind"] in NOT_NODES:
            continue
        if parent is not None:
            linked = True
            if parent != before and not (before is None and parent == ROOT):
                raise FormatError(
                    f"{_where(rec)} follows another event than the one before it: the "
                    "conversation branches (navigated or forked), which this reader does not read",
                    unread=True,
                )
        before = event["id"]
    return linked


def parse(data: bytes) -> Parsed:
    events = read_json(data)
    if not isinstance(events, list) or not events:
        raise FormatError("not a list of OpenHands SDK events")
    state = _State(data, events)
    messages: list[Message] = []
    sources: list[list[int]] = []
    batch: str | None = None  # the llm_response_id of the assistant message being read
    unrun: set[str] = set()
    answered: set[str] = set()
    sure = False

    def add(m: Message, rec: int, kind: str) -> None:
        m.setdefault("metadata", {})[SRC] = len(messages)
        messages.append(m)
        sources.append([rec + 1])
        state.origin.append([rec])
        state.kinds.append(kind)
        state.trail.append([])
        state.facts.append({"at": events[rec]["timestamp"], "model": None,
                            "tokens_in": None, "tokens_out": None})  # fmt: skip

    for rec, event in enumerate(events):
        try:
            kind = _check(event, rec)
            sure = True
            if kind not in SILENT and kind != "ActionEvent":
                batch = None  # the SDK batches a response's actions among LLM events only
            if kind in SILENT:
                (state.trail[-1] if state.trail else state.lead).append(rec)
            elif kind == "SystemPromptEvent":
                prompt = event.get("system_prompt")
                parts = _parts([prompt], f"{_where(rec)}'s system prompt")
                if event.get("dynamic_context") is not None:
                    parts += _parts([event["dynamic_context"]], f"{_where(rec)}'s context")
                add({"role": "system", "content": _content(parts)}, rec, "system")
            elif kind == "MessageEvent":
                said = event.get("llm_message")
                if not isinstance(said, dict) or said.get("tool_calls") or said.get("tool_call_id"):
                    raise FormatError(
                        f"{_where(rec)}: its llm_message is not a message the SDK writes"
                    )
                role = said.get("role")
                if role not in ("user", "assistant", "system"):
                    raise FormatError(f"{_where(rec)}: its llm_message has no role")
                words = _field(said, "content", f"{_where(rec)}'s message")
                parts = _parts(words, f"{_where(rec)}'s message")
                parts += _parts(
                    event.get("extended_content", []), f"{_where(rec)}'s extended content"
                )
                add({"role": role, "content": _content(parts)}, rec, "message")
            elif kind == "CondensationSummaryEvent":
                add({"role": "user", "content": _text(event.get("summary"), _where(rec))}, rec,
                    "summary")  # fmt: skip
            elif kind == "ActionEvent":
                call = _call(event, rec)
                rid = event.get("llm_response_id")
                if not isinstance(rid, str):
                    raise FormatError(f"{_where(rec)}: an ActionEvent without its llm_response_id")
                if event.get("action") is None:
                    unrun.add(call["tool_call_id"])
                if batch == rid and state.kinds and state.kinds[-1] == "calls":
                    messages[-1]["metadata"]["tool_calls"].append(call)
                    # Bookkeeping between two actions of the response stays between them.
                    state.origin[-1] += [*state.trail[-1], rec]
                    state.trail[-1] = []
                    sources[-1].append(rec + 1)
                    continue
                thought = _parts(_field(event, "thought", _where(rec)), f"{_where(rec)}'s thought")
                text = "".join(p["text"] for p in thought if p["type"] == "text")
                add({"role": "assistant", "content": text, "metadata": {"tool_calls": [call]}},
                    rec, "calls")  # fmt: skip
                batch = rid
            else:  # a result
                cid = event.get("tool_call_id")
                if not isinstance(cid, str):
                    raise FormatError(f"{_where(rec)}: a result without its tool_call_id")
                name = event.get("tool_name")
                result: Message = {"role": "tool", "content": _result_text(event, kind, rec)}
                result["metadata"] = {"tool_call_id": cid}
                if isinstance(name, str):
                    result["metadata"]["name"] = name
                answered.add(cid)
                add(result, rec, "result")
        except FormatError as exc:
            raise FormatError(str(exc), unread=sure or exc.unread) from None
    state.linked = _tree(events)
    if not messages:
        raise FormatError("no event of the conversation is a message")
    about: dict[str, Any] = {"events": len(events), "started": events[0]["timestamp"]}
    return Parsed(NAME, messages, sources, meta=about, state=state, not_started=unrun - answered)


def timeline_facts(parsed: Parsed) -> list[Facts | None]:
    state = parsed.state
    if isinstance(state, _State) and len(state.facts) == len(parsed.messages):
        return list(state.facts)
    return []


class _Writer(RecordWriter[_State]):
    STATE = _State
    ROLE_CHANGES = {"tool": ("user",)}  # an orphan result's event becomes the user's note

    def __init__(self, state: _State, before: list[Message]) -> None:
        super().__init__(state, before)
        self.out: list[dict[str, Any]] = [state.events[i] for i in state.lead]
        self.renames: dict[str, str] = {}
        self.action_of: dict[str, str] = {}  # call id -> the event id of the action making it
        self.tools: dict[str, str] = {}  # call id -> its tool's name, as the actions say
        for event in state.events:
            if event.get("kind") == "ActionEvent" and isinstance(event.get("tool_call"), dict):
                self.tools.setdefault(
                    str(event["tool_call"].get("id")), str(event.get("tool_name"))
                )

    def write(self, messages: list[Message]) -> bytes:
        present = {s for s in (self.source(m) for m in messages) if s is not None}
        trail = [list(t) for t in self.state.trail]
        for src in range(len(self.before)):  # a dropped message's bookkeeping stays in its place
            if src not in present:
                earlier = [s for s in present if s < src]
                if earlier:
                    trail[max(earlier)].extend(trail[src])
                else:
                    self.out.extend(self.state.events[i] for i in trail[src])
                trail[src] = []
        for m in messages:
            found = self.origin(m)
            if found is None:
                self.out.append(self.new_event(m))
                continue
            for event in self.rewrite(m, found):
                self.out.append(self.answering(event))
            self.out.extend(self.state.events[i] for i in trail[found])
        return self.emit()

    def answering(self, event: dict[str, Any]) -> dict[str, Any]:
        """``event``, a result naming (``action_id``) the action of the call it now answers.

        The SDK pairs an observation with its action by ``action_id``: where the repair
        paired it with another action of its call id (a doubled action), it names that one.
        """
        kind = event.get("kind")
        if kind == "ActionEvent":
            self.action_of.setdefault(str(event.get("tool_call_id")), str(event["id"]))
        elif kind in RESULTS and "action_id" in event:
            want = self.action_of.get(str(event.get("tool_call_id")))
            if want is not None and want != event["action_id"]:
                return {**event, "action_id": want}
        return event

    def rewrite(self, m: Message, src: int) -> list[dict[str, Any]]:
        """The events of original message ``src`` as ``m`` now has it."""
        old = self.before[src]
        recs = self.state.origin[src]
        events = [self.state.events[r] for r in recs]
        if m == old:
            return events
        kind = self.state.kinds[src]
        if kind == "result" and m["role"] == "user":
            return [_note(events[0], text_of(m.get("content")))]
        if kind == "result":
            if m.get("content") != old.get("content"):
                raise FormatError("a repair that changes a result's text is not written back")
            event = dict(events[0])
            event["tool_call_id"] = call_id(m.get("metadata") or {})
            return [event]
        if kind != "calls" or m.get("content") != old.get("content"):
            raise FormatError(f"a repair that changes a {kind} event is not written back")
        new_calls, old_calls = calls_of(m), calls_of(old)
        actions = [e for e in events if e.get("kind") == "ActionEvent"]
        out: list[dict[str, Any] | None] = []  # None: a removed call's action
        j = 0
        calls = iter(zip(actions, old_calls, strict=True))
        for event in events:
            if event.get("kind") != "ActionEvent":
                out.append(event)  # bookkeeping between the response's actions
                continue
            _, call = next(calls)
            if j < len(new_calls) and new_calls[j].get("name") == call.get("name"):
                new_id = call_id(new_calls[j])
                j += 1
                if new_id != call["tool_call_id"]:
                    self.renames[call["tool_call_id"]] = new_id
                    event = dict(event, tool_call_id=new_id)
                    event["tool_call"] = dict(event["tool_call"], id=new_id)
                out.append(event)
            else:
                out.append(None)
        if j != len(new_calls):
            raise FormatError("a repair that adds a call is not written back")
        first = actions[0]
        kept = [e for e in out if e is not None]
        if not any(e.get("kind") == "ActionEvent" for e in kept):
            # Every call removed: its thought stays, as the agent's message in its place.
            return [_said(first, text_of(m.get("content"))), *kept]  # its first event: first
        lead = next(e for e in kept if e.get("kind") == "ActionEvent")
        if lead["id"] != first["id"]:  # the response's thought goes on its first kept action
            kept[kept.index(lead)] = dict(lead, thought=first.get("thought", []))
        return kept

    def on_original(self, m: Message, src: int, moved: bool) -> None:  # pragma: no cover
        raise NotImplementedError("write walks the messages itself")

    def on_new(self, m: Message) -> None:  # pragma: no cover
        raise NotImplementedError("write walks the messages itself")

    def new_event(self, m: Message) -> dict[str, Any]:
        before = self.out[-1] if self.out else self.state.events[0]
        metadata = m.get("metadata") or {}
        cid = call_id(metadata) if m["role"] == "tool" else ""
        new_id = str(uuid.uuid5(_NEW_IDS, f"{before['id']}/{cid}/{len(self.out)}"))
        event: dict[str, Any] = {"id": new_id, "timestamp": before["timestamp"]}
        text = text_of(m.get("content"))
        if m["role"] == "tool":
            name = (
                metadata.get("name")
                or self.tools.get(cid)
                or next(
                    (
                        self.tools[k]
                        for k, v in self.renames.items()
                        if v == cid and k in self.tools
                    ),
                    "",
                )
            )
            event.update(source="agent", tool_name=name, tool_call_id=cid, error=text)
            event["kind"] = "AgentErrorEvent"
            return event
        role = "assistant" if m["role"] == "assistant" else "user"
        event["source"] = "agent" if role == "assistant" else "user"
        return _message(event, role, text)

    def emit(self) -> bytes:
        out = self.out
        if self.state.linked:
            out = _relinked(out)
        return dump_like(out, self.state.data)


def _message(event: dict[str, Any], role: str, text: str, response: Any = None) -> dict[str, Any]:
    """A ``MessageEvent`` of ``role`` saying ``text``, its fields in the model's order."""
    out = dict(event)
    out["llm_message"] = {
        "role": role,
        "content": [{"cache_prompt": False, "type": "text", "text": text}],
        "thinking_blocks": [],
    }
    if isinstance(response, str):
        out["llm_response_id"] = response
    out.update(activated_skills=[], extended_content=[], kind="MessageEvent")
    return out


def _head(event: dict[str, Any]) -> dict[str, Any]:
    return {k: event[k] for k in ("id", "timestamp", "source", "parent_id") if k in event}


def _note(event: dict[str, Any], text: str) -> dict[str, Any]:
    """A result the repair made a note: the user's ``MessageEvent`` in its place (id, time)."""
    return _message({**_head(event), "source": "user"}, "user", text)


def _said(event: dict[str, Any], text: str) -> dict[str, Any]:
    """An action whose calls were all removed: its thought as the agent's ``MessageEvent``."""
    head = {**_head(event), "source": "agent"}
    return _message(head, "assistant", text, event.get("llm_response_id"))


def _relinked(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event of the tree linked to the one now before it, as ``append_event`` stamps it."""
    relinked = []
    before: str | None = None
    first = True
    for event in out:
        if event.get("kind") in NOT_NODES:
            relinked.append(event)
            continue
        if not first and event.get("parent_id") != before:
            event = _with_parent(event, before)
        first = False
        before = event["id"]
        relinked.append(event)
    return relinked


def _with_parent(event: dict[str, Any], parent: str | None) -> dict[str, Any]:
    """``event`` with ``parent_id`` set, at its place after ``source`` (the model's order)."""
    out: dict[str, Any] = {}
    for key, value in event.items():
        if key == "parent_id":
            continue
        out[key] = value
        if key == "source":
            out["parent_id"] = parent
    return out


serialise = _Writer.serialise
