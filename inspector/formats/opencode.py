"""OpenCode sessions (sst/opencode, ``opencode export``, its storage records, its API).

OpenCode (``packages/opencode/src/session/message-v2.ts``) keeps a session as
its info (``ses_...``: ``projectID``, ``directory``, ``title``, ``time``), its
messages (``msg_...``: ``role`` user or assistant, ``time``, ``modelID``,
``tokens``, ``error``, ``finish``...) and each message's parts (``prt_...``:
``text``, ``reasoning``, ``file``, ``tool``, ``step-start``, ``step-finish``,
``snapshot``, ``patch``, ``agent``, ``subtask``, ``retry``, ``compaction``).
A ``tool`` part is a call and its result at once: ``callID``, ``tool`` and a
``state`` whose ``status`` is ``pending`` (arguments still streaming),
``running``, ``completed`` (``output``) or ``error`` (``error``).

Four containers are read, and written back the way they came:

- ``export``: what ``opencode export [sessionID]`` prints,
  ``{"info": session, "messages": [{"info", "parts"}], "todos"?}``;
- ``messages``: a list of ``{"info", "parts"}`` (the server's
  ``GET /session/:id/message``);
- ``message``: one ``{"info", "parts"}`` (what a prompt returns);
- ``lines``: JSON Lines of those messages, one ``{"info", "parts"}`` a line
  (a session exported one message per line); a repaired file keeps each
  untouched message's line as it was and writes a changed or new one as a
  compact line in its place;
- ``records``: a JSON array of the storage files of a session, as they lie
  under ``~/.local/share/opencode/storage/`` (``session/<project>/<ses>.json``,
  ``message/<ses>/<msg>.json``, ``part/<msg>/<prt>.json``; for instance
  ``jq -s . session/*/ses_X.json message/ses_X/*.json part/*/*.json``), or
  the share API's ``[{"type": "session" | "message" | "part", "data"}]``.
  Parts and messages of other sessions are left out (``meta["other_records"]``).

Reading (``parse``)
-------------------
The history is what OpenCode itself sends the model (``toModelMessages``):

- messages with no parts are left out; from the last compaction that an
  assistant summary completed, the history starts at that compaction's user
  message (at its ``tail_start_id`` where it names one in the file); the
  messages before it are counted in ``meta["compacted"]``;
- a user message's ``text`` parts (not ``ignored``), its ``file`` parts (an
  image as an image, another file as a text line naming it), ``compaction``
  and ``subtask`` parts in OpenCode's words;
- an assistant message that failed (``error``) is left out, as OpenCode
  leaves it out, unless it was aborted after it had done something; it is
  listed in ``meta["skipped_turns"]``;
- an assistant message is split into its steps at ``step-start`` parts (as
  the AI SDK splits it): each step is an assistant message (``text`` parts,
  ``reasoning`` as ``{"type": "thinking"}`` parts, ``tool`` parts as calls,
  their ``state.input`` as arguments) followed by the results of its
  ``completed`` and ``error`` tool parts (``is_error`` for an error; an
  interrupted tool's ``metadata.output`` where OpenCode sends that);
- a ``pending`` or ``running`` tool part is a call with no result. OpenCode
  papers over it at send time (``[Tool execution was interrupted]``); the
  repair gives it a result in the file. A ``pending`` call's arguments were
  still streaming, so it never ran: its id is in ``not_started``;
- ``causes``: an aborted message is ``user_stop``, one cut by the output
  limit (``MessageOutputLengthError``, ``finish: "length"``) ``max_tokens``,
  one never completed (no ``time.completed``) ``stream_ended``.

The private metadata key ``_src`` is each message's index in
``Parsed.messages``, as in ``codex``.

Writing (``serialise``)
-----------------------
An unchanged file comes back byte for byte. A repaired one is the same
container laid out as OpenCode writes JSON (two-space indent), changed only
where the repair changed the history, never with an event made up:

- a call the repair answered is its own tool part, set to the ``error``
  state OpenCode gives a tool it aborts (``input`` and ``metadata`` kept,
  ``error`` the repair's words, ``time`` the start it had, else the
  message's); OpenCode then sends exactly that result;
- a renamed call id is the part's ``callID``; a removed call (arguments cut
  mid-stream) loses its part; a dropped blank reply loses its text parts (and
  the message, if nothing else is left in it);
- a note is a new user message (``agent`` and ``model`` of the user message
  before it, one ``synthetic`` text part) whose ids sort right after the
  message it follows, so OpenCode reads it in its place.

``opencode import`` reads a repaired export; it keeps the messages and parts
it already has, so import it where the session is not (or delete the
session first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from inspector.formats.base import Facts, FormatError, Parsed, Problem, epoch_time, token_count
from inspector.formats.jsondoc import dump_line, part_text, read_json
from inspector.formats.jsondoc import text_of as _text
from inspector.formats.jsonl import JsonlFile, join_lines, read_jsonl
from inspector.formats.private import call_id
from inspector.formats.private import metadata as _md
from inspector.formats.records import SRC, RecordWriter

NAME = "opencode"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "OpenCode export or storage records (JSON)"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 100

# A part's own fields that hold text but not its words (``jsondoc.part_text``).
_PART_IDS = ("id", "sessionID", "messageID")

# OpenCode's own words for the parts it turns into text (message-v2.ts).
COMPACTION_TEXT = "What did we do so far?"
SUBTASK_TEXT = "The following tool was executed by the user"
COMPACTED_OUTPUT = "[Old tool result content cleared]"

_DONE = frozenset({"completed", "error"})
_NOT_TEXT_FILES = frozenset({"text/plain", "application/x-directory"})
_SHARE_TYPES = frozenset({"session", "message", "part", "session_diff", "model"})
# Characters of OpenCode's ids, in their sort order (ASCII order).
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

Message = dict[str, Any]


# --------------------------------------------------------------------------- sniff


def sniff(head: bytes) -> float:
    """An export, a message list or storage records: OpenCode's id fields and prefixes."""
    start = head.lstrip()[:1]
    if start not in (b"{", b"["):
        return 0.0
    session = b'"sessionID"' in head
    if session and (b'"messageID"' in head or b'"parts"' in head) and b'"info"' in head:
        return 0.95
    if session and b'"messageID"' in head and b'"ses_' in head:
        return 0.95
    if b'"info"' in head and b'"ses_' in head and b'"messages"' in head:
        return 0.8
    if session and b'"role"' in head and b'"msg_' in head:
        return 0.7
    return 0.0


# --------------------------------------------------------------------------- parse


@dataclass(slots=True)
class _Msg:
    """One OpenCode message as read: its info, its parts, where they stand in the file."""

    info: dict[str, Any]
    parts: list[dict[str, Any]]
    number: int  # 1-based: the message's place in the file (records: its info's record)
    item: dict[str, Any] | None = None  # export / messages: the {"info", "parts"} object
    record: int = -1  # records: the record index of the info
    part_records: list[int] = field(default_factory=list)  # records: each part's record


@dataclass(slots=True)
class _Origin:
    """Where one canonical message came from."""

    kind: str  # "user" | "assistant" | "tool"
    message: int  # index in _State.messages
    parts: list[int]  # assistant: the step's parts; tool: its tool part; user: []
    calls: list[int] = field(default_factory=list)  # assistant: its tool parts, in call order


@dataclass(slots=True)
class _State:
    data: bytes
    container: str  # "export" | "messages" | "message" | "records" | "lines"
    doc: Any
    session: dict[str, Any] | None
    messages: list[_Msg]
    wrapped: bool  # records: share-API {"type", "data"} items
    origin: list[_Origin]
    lines: JsonlFile | None = None  # lines: the file's lines, one message each


def parse(data: bytes) -> Parsed:
    """Read an OpenCode session; see the module docstring for what is read how."""
    problems: list[Problem] = []
    lines = None
    try:
        doc = read_json(data)
    except FormatError:
        lines = _message_lines(data)  # one {"info", "parts"} a line, or not OpenCode's
        doc = [record.value for record in lines.records if record.ok]
        problems.extend(lines.problems)
    container, session, messages, wrapped, other = _container(doc, problems)
    if lines is not None:
        container = "lines"
    if not messages:
        raise FormatError("the OpenCode session holds no message")
    reader = _Reader(messages, problems)
    reader.run()
    if not reader.out:
        raise FormatError("the OpenCode session holds no message OpenCode would send")
    for index, message in enumerate(reader.out):
        message["metadata"][SRC] = index
    session_id = _session_id(session, messages)
    meta: dict[str, Any] = {
        "session_id": session_id,
        "container": container,
        "skipped_turns": reader.skipped,
        "compacted": reader.compacted,
    }
    cwd = _cwd(session, messages)
    if cwd:
        meta["cwd"] = cwd
    if session is not None:
        for key, name in (("title", "title"), ("version", "opencode_version")):
            if isinstance(session.get(key), str):
                meta[name] = session[key]
        if isinstance(session.get("parentID"), str):
            meta["parent_session"] = session["parentID"]
    if other:
        meta["other_records"] = other
    problems.sort(key=lambda p: p.line)
    state = _State(data, container, doc, session, messages, wrapped, reader.origin, lines)
    return Parsed(
        format=NAME,
        messages=reader.out,
        sources=reader.sources,
        problems=problems,
        causes=reader.causes,
        not_started=reader.not_started,
        meta=meta,
        state=state,
    )


def timeline_facts(parsed: Parsed) -> list[Facts | None]:
    """Per message, its OpenCode message's ``time.created`` (a result: its tool's
    ``state.time.end``), and an assistant step's model and tokens.

    A step's tokens are its ``step-finish`` part's (a message's ``tokens`` are its
    steps' sum, so they stand for the step only in a message of one step).
    OpenCode's ``input`` leaves out the cache's tokens, which ``tokens_in`` counts.
    """
    state = parsed.state
    if not isinstance(state, _State) or len(state.origin) != len(parsed.messages):
        return []
    facts: list[Facts | None] = []
    for origin in state.origin:
        msg = state.messages[origin.message]
        time = msg.info.get("time")
        at = epoch_time(time.get("created")) if isinstance(time, dict) else None
        fact: Facts = {"at": at, "model": None, "tokens_in": None, "tokens_out": None}
        if origin.kind == "tool":
            tool = msg.parts[origin.parts[0]].get("state")
            ran = tool.get("time") if isinstance(tool, dict) else None
            fact["at"] = (epoch_time(ran.get("end")) if isinstance(ran, dict) else None) or at
        elif origin.kind == "assistant":
            model = msg.info.get("modelID")
            fact["model"] = model if isinstance(model, str) else None
            finish = [
                msg.parts[n] for n in origin.parts if msg.parts[n].get("type") == "step-finish"
            ]
            steps = sum(1 for part in msg.parts if part.get("type") == "step-start")
            tokens = (
                finish[-1].get("tokens")
                if finish
                else msg.info.get("tokens")
                if steps <= 1
                else None
            )
            fact.update(_tokens(tokens))
        facts.append(fact)
    return facts


def _tokens(tokens: Any) -> Facts:
    if not isinstance(tokens, dict):
        return {}
    cache = tokens.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    read, write = token_count(cache.get("read")), token_count(cache.get("write"))
    new, output = token_count(tokens.get("input")), token_count(tokens.get("output"))
    reasoning = token_count(tokens.get("reasoning")) or 0
    return {
        "tokens_in": None if new is None else new + (read or 0) + (write or 0),
        "tokens_out": None if output is None else output + reasoning,
        "cache_read": read,
        "cache_write": write,
    }


def _message_lines(data: bytes) -> JsonlFile:
    """The file as JSON Lines of OpenCode messages, or ``FormatError`` if it is not one."""
    lines = read_jsonl(data)
    values = [record.value for record in lines.records if record.ok]
    if not values or not _is_message_item(values[0]):
        raise FormatError("not a single JSON document, nor JSON Lines of OpenCode messages")
    for record in lines.records:
        if record.ok and not _is_message_item(record.value):
            held = (
                ", ".join(map(repr, record.value))
                if isinstance(record.value, dict)
                else "no fields"
            )
            raise FormatError(
                f"line {record.line}: not an OpenCode message ({{'info', 'parts'}}; it holds "
                f"{held})",
                unread=True,
            )
    return lines


def _session_id(session: dict[str, Any] | None, messages: list[_Msg]) -> str | None:
    if session is not None and isinstance(session.get("id"), str):
        return str(session["id"])
    for msg in messages:
        value = msg.info.get("sessionID")
        if isinstance(value, str):
            return value
    return None


def _cwd(session: dict[str, Any] | None, messages: list[_Msg]) -> str | None:
    if session is not None and isinstance(session.get("directory"), str) and session["directory"]:
        return str(session["directory"])
    for msg in messages:
        path = msg.info.get("path")
        if isinstance(path, dict) and isinstance(path.get("cwd"), str):
            return str(path["cwd"])
    return None


def _is_message_item(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("info"), dict)
        and isinstance(value.get("parts"), list)
    )


def _container(
    doc: Any, problems: list[Problem]
) -> tuple[str, dict[str, Any] | None, list[_Msg], bool, int]:
    """(container, session info, messages, wrapped records, records of other sessions)."""
    if isinstance(doc, dict):
        if isinstance(doc.get("messages"), list) and isinstance(doc.get("info"), dict):
            return "export", doc["info"], _items(doc["messages"], problems), False, 0
        if _is_message_item(doc):
            return "message", None, _items([doc], problems), False, 0
        raise FormatError(
            "not an OpenCode export ({'info': session, 'messages': [...]}) nor a message "
            "({'info', 'parts'})"
        )
    if not isinstance(doc, list):
        raise FormatError("not an OpenCode export, message list or list of storage records")
    if not doc:
        raise FormatError("the list is empty")
    if any(_is_message_item(v) for v in doc):
        return "messages", None, _items(doc, problems), False, 0
    return _records(doc, problems)


def _items(items: list[Any], problems: list[Problem]) -> list[_Msg]:
    out: list[_Msg] = []
    for n, item in enumerate(items, 1):
        if not _is_message_item(item):
            # Named as not read, the export writer would leave it out of a repaired file,
            # and whatever it holds with it. The file is refused instead.
            held = ", ".join(repr(k) for k in item) if isinstance(item, dict) else "no fields"
            raise FormatError(
                f"message {n}: not an OpenCode message ({{'info', 'parts'}}; it holds {held})"
            )
        info = item["info"]
        if info.get("role") not in ("user", "assistant"):
            problems.append(Problem(n, f"a message with role {info.get('role')!r}", "skipped"))
            continue
        parts = [p for p in item["parts"] if isinstance(p, dict)]
        if len(parts) != len(item["parts"]):
            problems.append(Problem(n, "a part that is not a JSON object", "unreadable"))
        out.append(_Msg(info, parts, n, item=item))
    return out


def _record_kind(value: dict[str, Any]) -> str | None:
    if isinstance(value.get("messageID"), str) and isinstance(value.get("type"), str):
        return "part"
    if value.get("role") in ("user", "assistant") and isinstance(value.get("id"), str):
        return "message"
    if isinstance(value.get("id"), str) and (
        "projectID" in value or "directory" in value or str(value["id"]).startswith("ses")
    ):
        return "session"
    return None


def _records(
    doc: list[Any], problems: list[Problem]
) -> tuple[str, dict[str, Any] | None, list[_Msg], bool, int]:
    wrapped = any(
        isinstance(v, dict) and v.get("type") in _SHARE_TYPES and isinstance(v.get("data"), dict)
        for v in doc
    )
    sessions: list[dict[str, Any]] = []
    infos: list[tuple[int, dict[str, Any]]] = []
    parts: list[tuple[int, dict[str, Any]]] = []
    for rec, raw in enumerate(doc):
        value: Any = raw
        kind: str | None = None
        if wrapped and isinstance(raw, dict) and raw.get("type") in _SHARE_TYPES:
            value = raw.get("data")
            kind = raw["type"] if isinstance(value, dict) else None
        elif isinstance(raw, dict):
            kind = _record_kind(raw)
        if kind is None:
            problems.append(Problem(rec + 1, "not an OpenCode storage record", "skipped"))
            continue
        if kind == "session":
            sessions.append(value)
        elif kind == "message":
            infos.append((rec, value))
        elif kind == "part":
            parts.append((rec, value))
    if not infos:
        raise FormatError("no record is an OpenCode message (role, id)")
    session = sessions[0] if sessions else None
    wanted = session.get("id") if session is not None else infos[0][1].get("sessionID")
    other = 0
    mine: list[tuple[int, dict[str, Any]]] = []
    for rec, info in infos:
        if info.get("sessionID") not in (wanted, None):
            other += 1
        else:
            mine.append((rec, info))
    # OpenCode lists a session's messages, and a message's parts, sorted by id.
    mine.sort(key=lambda item: str(item[1].get("id")))
    by_message: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for rec, part in parts:
        by_message.setdefault(str(part.get("messageID")), []).append((rec, part))
    used = 0
    out: list[_Msg] = []
    for rec, info in mine:
        own = sorted(
            by_message.get(str(info.get("id")), []), key=lambda item: str(item[1].get("id"))
        )
        used += len(own)
        out.append(
            _Msg(
                info,
                [p for _, p in own],
                rec + 1,
                record=rec,
                part_records=[r for r, _ in own],
            )
        )
    other += len(parts) - used + max(0, len(sessions) - 1)
    return "records", session, out, wrapped, other


def _completed_compaction(messages: list[_Msg]) -> int | None:
    """The message the history starts at after the last completed compaction, or None."""
    summarised: set[str] = set()
    for msg in messages:
        info = msg.info
        if (
            info.get("role") == "assistant"
            and info.get("summary")
            and info.get("finish")
            and not info.get("error")
            and isinstance(info.get("parentID"), str)
        ):
            summarised.add(info["parentID"])
    start: int | None = None
    for n, msg in enumerate(messages):
        if msg.info.get("role") != "user" or msg.info.get("id") not in summarised:
            continue
        compaction = next((p for p in msg.parts if p.get("type") == "compaction"), None)
        if compaction is None:
            continue
        start = n
        tail = compaction.get("tail_start_id")
        if isinstance(tail, str):
            found = next((k for k, m in enumerate(messages) if m.info.get("id") == tail), None)
            if found is not None and found < n:
                start = found
    return start


class _Reader:
    """Builds the messages OpenCode sends from the messages of the file."""

    def __init__(self, messages: list[_Msg], problems: list[Problem]) -> None:
        self.messages = messages
        self.problems = problems
        self.out: list[Message] = []
        self.sources: list[list[int]] = []
        self.origin: list[_Origin] = []
        self.causes: dict[int, str] = {}
        self.not_started: set[str] = set()
        self.skipped: list[dict[str, Any]] = []
        self.compacted = 0

    def add(self, message: Message, origin: _Origin) -> None:
        self.out.append(message)
        self.sources.append([self.messages[origin.message].number])
        self.origin.append(origin)

    def run(self) -> None:
        start = _completed_compaction(self.messages) or 0
        self.compacted = start
        for index in range(start, len(self.messages)):
            msg = self.messages[index]
            if not msg.parts:
                continue
            if msg.info.get("role") == "user":
                self.user(index, msg)
            else:
                self.assistant(index, msg)

    def user(self, index: int, msg: _Msg) -> None:
        content: list[dict[str, Any]] = []
        for part in msg.parts:
            kind = part.get("type")
            if kind == "text" and not part.get("ignored"):
                content.append({"type": "text", "text": _str(part_text(part, known=_PART_IDS))})
            elif kind == "file" and part.get("mime") not in _NOT_TEXT_FILES:
                content.append(_file_content(part))
            elif kind == "compaction":
                content.append({"type": "text", "text": COMPACTION_TEXT})
            elif kind == "subtask":
                content.append({"type": "text", "text": SUBTASK_TEXT})
        if content:
            self.add(
                {"role": "user", "content": content, "metadata": {}}, _Origin("user", index, [])
            )

    def assistant(self, index: int, msg: _Msg) -> None:
        info = msg.info
        error = info.get("error")
        if error:
            name = error.get("name") if isinstance(error, dict) else None
            did_something = any(p.get("type") not in ("step-start", "reasoning") for p in msg.parts)
            if not (name == "MessageAbortedError" and did_something):
                turn: dict[str, Any] = {"message": msg.number, "error": name}
                data = error.get("data") if isinstance(error, dict) else None
                if isinstance(data, dict) and isinstance(data.get("message"), str):
                    turn["text"] = data["message"]
                self.skipped.append(turn)
                return
        last: int | None = None
        for step in _steps(msg.parts):
            made = self.step(index, msg, step)
            if made is not None:
                last = made
        if last is None:
            return
        cause = _cause(info)
        if cause is not None:
            self.causes[last] = cause

    def step(self, index: int, msg: _Msg, step: list[int]) -> int | None:
        """The step's assistant message and its results; the assistant's index, or None."""
        content: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        tools: list[int] = []
        for n in step:
            part = msg.parts[n]
            kind = part.get("type")
            if kind == "text":
                text = _str(part_text(part, known=_PART_IDS))
                if text:
                    content.append({"type": "text", "text": text})
            elif kind == "reasoning":
                text = _str(part_text(part, known=_PART_IDS))
                if text:
                    thinking: dict[str, Any] = {"type": "thinking", "thinking": text}
                    extra = part.get("metadata")
                    anthropic = extra.get("anthropic") if isinstance(extra, dict) else None
                    if isinstance(anthropic, dict) and isinstance(anthropic.get("signature"), str):
                        thinking["signature"] = anthropic["signature"]
                    content.append(thinking)
            elif kind == "tool":
                state = part.get("state")
                if not isinstance(state, dict):
                    self.problems.append(Problem(msg.number, "a tool part without a state"))
                    continue
                calls.append(_call(part, state))
                tools.append(n)
        if not content and not calls:
            return None
        metadata: dict[str, Any] = {"tool_calls": calls} if calls else {}
        at = len(self.out)
        self.add(
            {"role": "assistant", "content": content, "metadata": metadata},
            _Origin("assistant", index, list(step), tools),
        )
        for n, call in zip(tools, calls, strict=True):
            state = msg.parts[n]["state"]
            status = state.get("status")
            if status in _DONE:
                self.add(_result(call, state), _Origin("tool", index, [n]))
            elif status == "pending":
                # Arguments still streaming: the tool was never called.
                self.not_started.add(call["tool_call_id"])
        return at


def _steps(parts: list[dict[str, Any]]) -> list[list[int]]:
    """The parts' indices split at each ``step-start``, as the AI SDK splits a message."""
    steps: list[list[int]] = [[]]
    for n, part in enumerate(parts):
        if part.get("type") == "step-start" and steps[-1]:
            steps.append([])
        steps[-1].append(n)
    return steps


def _cause(info: dict[str, Any]) -> str | None:
    error = info.get("error")
    name = error.get("name") if isinstance(error, dict) else None
    if name == "MessageAbortedError":
        return "user_stop"
    if name == "MessageOutputLengthError" or info.get("finish") == "length":
        return "max_tokens"
    time = info.get("time")
    if isinstance(time, dict) and "completed" not in time and not error:
        return "stream_ended"
    return None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _file_content(part: dict[str, Any]) -> dict[str, Any]:
    mime = _str(part.get("mime"))
    url = _str(part.get("url"))
    if mime.startswith("image/"):
        if url.startswith("data:") and "," in url:
            return {"type": "image", "media_type": mime, "data": url.split(",", 1)[1]}
        return {"type": "image", "url": url}
    name = part.get("filename") or url
    return {"type": "text", "text": f"[file: {name} ({mime})]"}


def _call(part: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    arguments = state.get("input")
    if arguments is None:
        arguments = {}
    return {
        "tool_call_id": _str(part.get("callID")),
        "name": _str(part.get("tool")),
        "arguments": arguments,
    }


def _result(call: dict[str, Any], state: dict[str, Any]) -> Message:
    metadata: dict[str, Any] = {"tool_call_id": call["tool_call_id"], "name": call["name"]}
    content: Any
    if state.get("status") == "completed":
        time = state.get("time")
        if isinstance(time, dict) and time.get("compacted"):
            content = COMPACTED_OUTPUT
        else:
            content = _str(state.get("output"))
        images = [
            {"type": "image", "media_type": a["mime"], "data": a["url"].split(",", 1)[1]}
            for a in state.get("attachments") or []
            if isinstance(a, dict)
            and _str(a.get("mime")).startswith("image/")
            and _str(a.get("url")).startswith("data:")
            and "," in a["url"]
        ]
        if images:
            content = [{"type": "text", "text": content}, *images]
    else:
        extra = state.get("metadata")
        output = extra.get("output") if isinstance(extra, dict) else None
        if isinstance(extra, dict) and extra.get("interrupted") is True and isinstance(output, str):
            content = output  # what OpenCode sends for a tool it interrupted
        else:
            content = _str(state.get("error"))
            metadata["is_error"] = True
    return {"role": "tool", "content": content, "metadata": metadata}


# --------------------------------------------------------------------------- serialise


@dataclass(slots=True)
class _NewMessage:
    after: int  # index in _State.messages of the message it follows (-1: before all)
    info: dict[str, Any]
    parts: list[dict[str, Any]]


class _Writer(RecordWriter[_State]):
    """A JSON document of messages and their parts: the changes are kept per part and
    written by ``emit``, not per record."""

    STATE = _State

    def __init__(self, state: _State, before: list[Message]) -> None:
        super().__init__(state, before)
        self.updated: dict[tuple[int, int], dict[str, Any]] = {}  # (message, part) -> part
        self.removed: set[tuple[int, int]] = set()
        self.dropped: set[int] = set()  # messages removed whole
        self.new: list[_NewMessage] = []
        self.calls: dict[str, tuple[int, int]] = {}  # call id as repaired -> its part
        self.taken = {str(m.info.get("id")) for m in state.messages}
        self.anchor = -1  # the last message a repaired one comes from

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        origin = self.state.origin[src]
        self.anchor = max(self.anchor, origin.message)
        if origin.kind == "assistant":
            self._assistant(m, src, origin)

    def on_new(self, m: Message) -> None:
        role = m.get("role")
        if role == "tool":
            self._answer(m, _md(m))
        elif role == "user":
            self._note(m, self.anchor)

    def on_dropped(self, src: int) -> None:
        origin = self.state.origin[src]
        if origin.kind == "assistant":
            self._drop_step(origin)

    def _part(self, key: tuple[int, int]) -> dict[str, Any]:
        return self.updated.get(key) or self.state.messages[key[0]].parts[key[1]]

    def _assistant(self, m: Message, src: int, origin: _Origin) -> None:
        old_calls = _md(self.before[src]).get("tool_calls") or []
        new_calls = [c for c in _md(m).get("tool_calls") or [] if isinstance(c, dict)]
        k = 0
        for n, call in zip(origin.calls, old_calls, strict=False):
            key = (origin.message, n)
            candidate = new_calls[k] if k < len(new_calls) else None
            if (
                candidate is not None
                and candidate.get("name") == call.get("name")
                and candidate.get("arguments") == call.get("arguments")
            ):
                k += 1
                new_id = call_id(candidate)
                self.calls.setdefault(new_id, key)
                if new_id != call_id(call):
                    self.updated[key] = {**self._part(key), "callID": new_id}
            else:
                self.removed.add(key)  # the repair removed this call (cut mid-stream)

    def _answer(self, m: Message, metadata: dict[str, Any]) -> None:
        """A result the repair made: the state of the call's own part."""
        call = call_id(metadata)
        key = self.calls.get(call)
        if key is None or key in self.removed:
            return
        part = self._part(key)
        found = part.get("state")
        old: dict[str, Any] = found if isinstance(found, dict) else {}
        time = old.get("time")
        start = time.get("start") if isinstance(time, dict) else None
        if not isinstance(start, int | float) or isinstance(start, bool):
            created = self.state.messages[key[0]].info.get("time")
            start = created.get("created", 0) if isinstance(created, dict) else 0
        arguments = old.get("input")
        new_state: dict[str, Any] = {
            "status": "error",
            "input": arguments if isinstance(arguments, dict) else {},
            "error": _text(m.get("content")),
        }
        if isinstance(old.get("metadata"), dict):
            new_state["metadata"] = old["metadata"]
        new_state["time"] = {"start": start, "end": start}
        self.updated[key] = {**part, "state": new_state}

    def _drop_step(self, origin: _Origin) -> None:
        """A reply the repair dropped: its text and reasoning parts go, and its calls (the
        repair drops a reply with calls only when it removed them all, cut mid-stream)."""
        msg = self.state.messages[origin.message]
        for n in origin.parts:
            if msg.parts[n].get("type") in ("text", "reasoning", "tool"):
                self.removed.add((origin.message, n))
        left = [
            p
            for n, p in enumerate(msg.parts)
            if (origin.message, n) not in self.removed
            and p.get("type") not in ("step-start", "step-finish")
        ]
        if not left:
            self.dropped.add(origin.message)

    def _note(self, m: Message, anchor: int) -> None:
        state = self.state
        near = state.messages[anchor] if anchor >= 0 else state.messages[0]
        previous_user = next(
            (
                state.messages[n].info
                for n in range(anchor, -1, -1)
                if state.messages[n].info.get("role") == "user"
            ),
            None,
        )
        session_id = _str(near.info.get("sessionID")) or _str((state.session or {}).get("id"))
        base = _str(near.info.get("id")) or "msg_"
        following = [
            _str(state.messages[n].info.get("id")) for n in range(anchor + 1, len(state.messages))
        ]
        upper = following[0] if following else None
        if anchor < 0:
            base, upper = "msg_", _str(near.info.get("id")) or None
        message_id = self._id_after(base, upper)
        created = near.info.get("time")
        stamp = created.get("created", 0) if isinstance(created, dict) else 0
        info: dict[str, Any] = {
            "id": message_id,
            "sessionID": session_id,
            "role": "user",
            "time": {"created": stamp},
        }
        like = previous_user or {}
        info["agent"] = like.get(
            "agent", near.info.get("agent") or near.info.get("mode") or "build"
        )
        model = like.get("model")
        if not isinstance(model, dict):
            model = {
                "providerID": _str(near.info.get("providerID")),
                "modelID": _str(near.info.get("modelID")),
            }
        info["model"] = model
        part = {
            "id": "prt_" + message_id.removeprefix("msg_"),
            "sessionID": session_id,
            "messageID": message_id,
            "type": "text",
            "text": _text(m.get("content")),
            "synthetic": True,
        }
        self.new.append(_NewMessage(anchor, info, [part]))

    def _id_after(self, base: str, upper: str | None) -> str:
        """An id that sorts after ``base`` and before ``upper``, and is not taken."""

        def next_of(value: str) -> str:
            candidate = _successor(value)
            return value + _BASE62[0] if upper is not None and candidate >= upper else candidate

        candidate = next_of(base)
        while candidate in self.taken:
            candidate = next_of(candidate)
        self.taken.add(candidate)
        return candidate

    # --- writing ----------------------------------------------------------------------

    def _messages(self) -> list[tuple[int | None, dict[str, Any], list[dict[str, Any]]]]:
        """The file's messages as repaired: (original index or None, info, parts)."""
        state = self.state
        out: list[tuple[int | None, dict[str, Any], list[dict[str, Any]]]] = []
        news: dict[int, list[_NewMessage]] = {}
        for new in self.new:
            news.setdefault(new.after, []).append(new)
        for new in news.get(-1, []):
            out.append((None, new.info, new.parts))
        for index, msg in enumerate(state.messages):
            if index not in self.dropped:
                parts = [
                    self.updated.get((index, n), part)
                    for n, part in enumerate(msg.parts)
                    if (index, n) not in self.removed
                ]
                out.append((index, msg.info, parts))
            for new in news.get(index, []):
                out.append((None, new.info, new.parts))
        return out

    def emit(self) -> bytes:
        state = self.state
        if state.container == "records":
            return _dump(self._records(), state.data)
        if state.lines is not None:
            return self._lines(state.lines)
        items: list[Any] = []
        for index, info, parts in self._messages():
            if index is None:
                items.append({"info": info, "parts": parts})
                continue
            item = state.messages[index].item or {}
            items.append({**item, "info": info, "parts": parts})
        if state.container == "export":
            return _dump({**state.doc, "messages": items}, state.data)
        if state.container == "message" and len(items) == 1:
            return _dump(items[0], state.data)
        return _dump(items, state.data)

    def _lines(self, lines: JsonlFile) -> bytes:
        """One message a line: an untouched message's own line, a changed or new one
        written compact (lines that could not be read stay where they were)."""
        state = self.state
        records = [r for r in lines.records if r.ok]
        touched = {index for index, _ in self.updated} | {index for index, _ in self.removed}
        out: list[bytes] = []
        # A message's line: its _Msg number is its place among the readable lines.
        for index, info, parts in self._messages():
            if index is not None and index not in touched:
                out.append(records[state.messages[index].number - 1].raw)
                continue
            item = state.messages[index].item or {} if index is not None else {}
            out.append(dump_line({**item, "info": info, "parts": parts}, lines.crlf))
        return join_lines(out, lines.final_newline)

    def _records(self) -> list[Any]:
        """The records in their order, changed ones replaced, new ones after their message."""
        state = self.state
        replaced: dict[int, Any] = {}
        gone: set[int] = set()
        after: dict[int, list[dict[str, Any]]] = {}
        last_record: dict[int, int] = {}
        for index, msg in enumerate(state.messages):
            records = [msg.record, *msg.part_records]
            last_record[index] = max(records)
            if index in self.dropped:
                gone.update(records)
                continue
            for n, rec in enumerate(msg.part_records):
                if (index, n) in self.removed:
                    gone.add(rec)
                elif (index, n) in self.updated:
                    replaced[rec] = self._wrap("part", self.updated[(index, n)])
        first: list[dict[str, Any]] = []
        for new in self.new:
            rows = [
                self._wrap("message", new.info),
                *(self._wrap("part", part) for part in new.parts),
            ]
            if new.after < 0:
                first.extend(rows)
            else:
                after.setdefault(last_record[new.after], []).extend(rows)
        out: list[Any] = list(first)
        for rec, value in enumerate(state.doc):
            if rec not in gone:
                out.append(replaced.get(rec, value))
            out.extend(after.get(rec, []))
        return out

    def _wrap(self, kind: str, value: dict[str, Any]) -> dict[str, Any]:
        return {"type": kind, "data": value} if self.state.wrapped else value


serialise = _Writer.serialise


def _successor(value: str) -> str:
    """``value`` with its last character the next one of OpenCode's alphabet (carrying)."""
    chars = list(value)
    for i in range(len(chars) - 1, -1, -1):
        at = _BASE62.find(chars[i])
        if at < 0:
            break
        if at + 1 < len(_BASE62):
            chars[i] = _BASE62[at + 1]
            return "".join(chars)
        chars[i] = _BASE62[0]
    return value + _BASE62[0]


def _dump(doc: Any, original: bytes) -> bytes:
    """``doc`` as OpenCode writes JSON (``JSON.stringify(doc, null, 2)``), same final newline."""
    indented = b"\n " in original[:4096]
    out = orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indented else 0)
    if original.endswith(b"\r\n"):
        return out + b"\r\n"
    return out + b"\n" if original.endswith(b"\n") else out
