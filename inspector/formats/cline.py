"""Cline's and Roo Code's task history (``tasks/<taskId>/api_conversation_history.json``).

Both VS Code extensions keep a task's conversation as the Anthropic messages
they send, one JSON list (``JSON.stringify``, no indentation) beside the UI's
own log (``ui_messages.json``, which this reader refuses, saying where the
conversation is). Cline's
store is ``globalStorage/saoudrizwan.claude-dev/tasks/``, Roo Code's
``globalStorage/rooveterinaryinc.roo-cline/tasks/``. Each message is
``{"role": "user" | "assistant", "content": text | [blocks], ...}`` with
extra keys kept as they are: Cline's ``ts``, ``modelInfo``, ``metrics``;
Roo Code's ``ts``, ``id``, ``isSummary``, ``condenseId`` /
``condenseParent``, ``truncationId`` / ``truncationParent``,
``reasoning_details``. The first user message starts ``<task>`` (Roo Code
now: ``<user_message>``) and user messages carry ``<environment_details>``:
a file without either is no task history (an Anthropic list is read by
``anthropic``).

How calls are answered (what makes this more than Anthropic Messages)
--------------------------------------------------------------------
Older versions call tools with XML tags in the assistant's text and answer
in the next user message's text; neither is a call to pair, and both are
read as the text they are. Newer ones write native ``tool_use`` blocks.
Roo Code answers them with ``tool_result`` blocks. Cline does when it knows
the call's provider id (``ToolResultUtils.createToolResultBlock``); when it
does not it answers with a text block in the next user message, in call
order, ``[<tool> for '<what>'] Result:\\n...`` (``pushToolResult``), and a
call it skipped with ``Skipping tool due to user rejecting a previous tool.
[<tool> ...]``, ``Tool was interrupted and not executed ...`` or ``Tool
[<tool>] was not executed because a tool has already been used in this
message...``. Such a text is that call's result here: it pairs with the
first unanswered ``tool_use`` of the assistant message right before, in
order (its ``tool_call_id`` the call's id); the skipped ones and a ``Result:``
saying ``The user denied this operation.`` are in ``not_started``.

A call really left unanswered is one whose next user message has no answer
for it: Cline resumes such a task by appending ``[TASK RESUMPTION] This task
was interrupted ...`` to the history as it stands (``resumeTaskFromHistory``)
and, on each request, adds ``result missing`` for it
(``ensureToolResultsFollowToolUse``); Roo Code adds ``Task was interrupted
before this tool call could be completed.`` on resume and writes it to the
file. Those calls are what a repair answers; a resumption right after them
is the cause ``"turn_aborted"``. An assistant text ending ``[Response
interrupted by user]`` / ``[Response interrupted by API Error]`` is
``"user_stop"`` / ``"api_error"``.

Reading (``parse``)
-------------------
- An assistant message: ``text`` as text parts, ``thinking`` and
  ``redacted_thinking`` blocks as they are, Roo Code's ``reasoning`` blocks
  as ``thinking`` parts (an encrypted one as it is), ``tool_use`` as calls
  (``input`` as the arguments).
- A user message: one tool message per ``tool_result`` block and per
  answering text, then one user message for the rest (text, images).
- Roo Code's stand-alone reasoning records (``{"type": "reasoning", ...}``
  without a role) are kept in the file, not read (``meta["reasoning_records"]``).
- ``timeline_facts``: each message's record's ``ts``, and Cline's ``modelInfo.modelId``
  and ``metrics.tokens`` (Roo Code writes only ``ts``).
- ``sources`` are 1-based message numbers. A message without a role this
  reader knows, without content, or holding a block of a type it does not
  know makes it refuse the file (``FormatError`` naming the message and the
  field, ``unread``: no other shape is tried), never a blank message.

Writing (``serialise``)
-----------------------
An unchanged history comes back byte for byte. Otherwise the list is written
again with every untouched message as it was; a changed message keeps its
other keys, and its blocks are written in the repaired order (results
first). A result the repair made is a ``tool_result`` block at the start of
the next user message (a new user message when there is none), as Cline
writes results it can pair by id and Roo Code writes its own on resume; a
renamed call is renamed in its ``tool_use`` (and ``call_id``) and in its
``tool_result``, while a text
answer keeps its words (it pairs by order, not id).
A message the repair drops (a blank reply; Cline writes
``Failure: I did not provide a response.`` instead, so this comes from
other tools) loses its record, which moves the index of every record
after it, as ``ui_messages.json`` refers to them.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from inspector.formats.anthropic import wire_blocks
from inspector.formats.base import Facts, FormatError, Parsed, epoch_time, token_count
from inspector.formats.jsondoc import dump_like, part_text, read_json
from inspector.formats.private import REC, Message, call_id, kept_calls, public, unchanged
from inspector.formats.private import metadata as _md

NAME = "cline"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Cline / Roo Code task history (api_conversation_history.json)"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 150

# The blocks of the source record a canonical message came from (indices into its content).
BLOCKS = "_blocks"

# The first user message starts ``<task>`` (Cline, older Roo Code) or ``<user_message>`` (Roo
# Code); the sniff ranks either first, the reader needs ``<task>`` or the environment details.
_TASK = re.compile(rb'"text"\s*:\s*"<(task|user_message)>')
_ENVIRONMENT = re.compile(rb"<environment_details>")
_ROLE = re.compile(rb'"role"\s*:\s*"(user|assistant)"')
_UI = re.compile(rb'^\s*\[\s*\{\s*"ts"\s*:\s*\d+\s*,\s*"type"\s*:\s*"(say|ask)"')
# The Cline CLI's session file (``@cline/core``'s ``buildMessagesFilePayload``, contract v1).
_SDK_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,')
_SDK_AGENT = re.compile(rb'"agent"\s*:\s*"(lead|subagent|teammate)"')
_SDK_AGENTS = frozenset({"lead", "subagent", "teammate"})

# Cline's answers to a call, in its own words (src/core/task/tools/utils/ToolResultUtils.ts,
# src/core/task/ToolExecutor.ts, src/core/prompts/responses.ts).
# A description is ``[<tool>]`` or ``[<tool> for '<what>']`` (``<what>`` may hold anything).
_DESCRIPTION = r"\[[\w:.\- ]+(?: for (?:'.*?'|patch application))?\]"
_RESULT = re.compile(_DESCRIPTION + r" Result:", re.DOTALL)
_DENIED = re.compile(_DESCRIPTION + r" Result:\s*The user denied this operation\.", re.DOTALL)
_DENIED_WORDS = "The user denied this operation."  # what ``_DENIED`` ends with
_SKIPPED = re.compile(r"Skipping tool\b|Tool was interrupted and not executed\b|Tool \[[\w:.\-]+\]")
_RESUMPTION = "[TASK RESUMPTION]"
_INTERRUPTED = {
    "[Response interrupted by user]": "user_stop",
    "[Response interrupted by user feedback]": "user_stop",
    "[Response interrupted by API Error]": "api_error",
}

_ASSISTANT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "reasoning", "tool_use"})
# ``file``: the Cline CLI's attachment of a file the prompt mentions (``path``, ``content``).
_USER_BLOCKS = frozenset({"text", "image", "tool_result", "document", "file"})


def sniff(head: bytes) -> float:
    """A JSON list of Anthropic messages whose user turns carry Cline's task framing.

    The UI log beside it (``ui_messages.json``) is claimed too, so that it is
    refused with a word on where the conversation is, never read as another shape.
    """
    if _SDK_HEAD.match(head) and _SDK_AGENT.search(head) and b'"sessionId"' in head:
        return 0.95
    if head.lstrip()[:1] != b"[":
        return 0.0
    if _UI.search(head):
        return 0.9
    if not _ROLE.search(head):
        return 0.0
    if _TASK.search(head) or _ENVIRONMENT.search(head):
        return 0.9
    return 0.0


def parse(data: bytes) -> Parsed:
    doc = read_json(data)
    wrapper = doc if _session_file(doc) else None
    if wrapper is not None:
        doc = wrapper["messages"]
    if not isinstance(doc, list):
        raise FormatError("a task history is a JSON list of messages")
    if doc and all(_ui_message(record) for record in doc):
        raise FormatError(
            "this is the UI log of a Cline or Roo Code task (ui_messages.json): it holds what"
            " the panel showed, not the conversation; open api_conversation_history.json"
            " in the same folder",
            unread=True,
        )
    if wrapper is None and not _framed(doc):
        raise FormatError("no user message starts with '<task>' or holds <environment_details>")
    reader = _Reader()
    for rec, record in enumerate(doc):
        reader.record(rec, record)
    if not reader.messages:
        raise FormatError("no message holds a block this reader knows")
    state = {"data": data, "doc": doc, "kinds": reader.kinds, "wrapper": wrapper}
    if wrapper is not None and isinstance(wrapper.get("sessionId"), str):
        reader.meta["session_id"] = wrapper["sessionId"]
    return Parsed(
        NAME,
        reader.messages,
        reader.sources,
        [],
        causes=reader.causes,
        not_started=reader.not_started,
        meta=reader.meta,
        state=state,
    )


def timeline_facts(parsed: Parsed) -> list[Facts | None]:
    """Per message, what its record says: ``ts`` (both), Cline's ``modelInfo`` and ``metrics``.

    Cline's ``metrics.tokens.prompt`` counts every token read, ``cached`` among them; the
    CLI's ``metrics.inputTokens`` too (its pricing takes the cache's tokens out of it).
    """
    state = parsed.state
    doc = state.get("doc") if isinstance(state, dict) else None
    if not isinstance(doc, list):
        return []
    facts: list[Facts | None] = []
    for message in parsed.messages:
        rec = _rec(message)
        record = doc[rec] if rec is not None and 0 <= rec < len(doc) else None
        if not isinstance(record, dict):
            facts.append(None)
            continue
        model = record.get("modelInfo")
        model = model if isinstance(model, dict) else {}
        metrics = record.get("metrics")
        metrics = metrics if isinstance(metrics, dict) else {}
        tokens = metrics.get("tokens")
        tokens = tokens if isinstance(tokens, dict) else {}
        model_id = model.get("modelId", model.get("id"))
        fact: Facts = {
            "at": epoch_time(record.get("ts")),
            "model": model_id if isinstance(model_id, str) else None,
            "tokens_in": token_count(tokens.get("prompt")),
            "tokens_out": token_count(tokens.get("completion")),
            "cache_read": token_count(tokens.get("cached")),
        }
        if "inputTokens" in metrics:  # the Cline CLI's session file: input counts the cache too
            fact["tokens_in"] = token_count(metrics.get("inputTokens"))
            fact["tokens_out"] = token_count(metrics.get("outputTokens"))
            fact["cache_read"] = token_count(metrics.get("cacheReadTokens"))
            fact["cache_write"] = token_count(metrics.get("cacheWriteTokens"))
        facts.append(fact)
    return facts


def _session_file(doc: Any) -> bool:
    """The Cline CLI's ``<sessionId>.messages.json``: ``{"version", "agent", "sessionId",
    "messages": [...]}``, its messages the Anthropic messages of a task history."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("version"), int)
        and doc.get("agent") in _SDK_AGENTS
        and isinstance(doc.get("sessionId"), str)
        and isinstance(doc.get("messages"), list)
    )


def _ui_message(record: Any) -> bool:
    """A record of ``ui_messages.json``: ``{"ts", "type": "say" | "ask", "say" | "ask": ...}``."""
    return (
        isinstance(record, dict)
        and isinstance(record.get("ts"), int)
        and record.get("type") in ("say", "ask")
        and isinstance(record.get(record["type"]), str)
        and "role" not in record
    )


def _framed(doc: list[Any]) -> bool:
    """Whether a user message carries the task framing both agents write."""
    for record in doc:
        if not isinstance(record, dict) or record.get("role") != "user":
            continue
        for text in _texts(record.get("content")):
            if text.startswith("<task>") or "<environment_details>" in text:
                return True
    return False


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]


class _Reader:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.sources: list[list[int]] = []
        self.causes: dict[int, str] = {}
        self.not_started: set[str] = set()
        self.meta: dict[str, Any] = {"text_results": 0, "reasoning_records": 0}
        # Per canonical message, what its source was: "tool_result", "text_result" or "".
        self.kinds: list[str] = []
        self.names: dict[str, str] = {}
        # The calls of the assistant message just read, and the index of that message.
        self.open: list[dict[str, Any]] = []
        self.turn: int | None = None

    def add(self, message: Message, rec: int, blocks: list[int], kind: str = "") -> None:
        message["metadata"][REC] = rec
        message["metadata"][BLOCKS] = blocks
        self.messages.append(message)
        self.sources.append([rec + 1])
        self.kinds.append(kind)

    def record(self, rec: int, record: Any) -> None:
        number = rec + 1
        if not isinstance(record, dict):
            raise FormatError(f"message {number}: not an object", unread=True)
        if "role" not in record and record.get("type") == "reasoning":
            self.meta["reasoning_records"] += 1  # Roo Code's stand-alone reasoning: kept, not read
            return
        role = record.get("role")
        if role not in ("user", "assistant"):
            raise FormatError(
                f"message {number}: 'role' {role!r} is not 'user' or 'assistant'", unread=True
            )
        content = record.get("content")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = content
        else:
            raise FormatError(
                f"message {number}: 'content' is neither text nor a list of blocks", unread=True
            )
        known = _ASSISTANT_BLOCKS if role == "assistant" else _USER_BLOCKS
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in known:
                raise FormatError(
                    f"message {number}: a {role} content block of type {kind!r}"
                    " this reader does not know",
                    unread=True,
                )
        if role == "assistant":
            self.assistant(rec, blocks)
        else:
            self.user(rec, blocks)

    def assistant(self, rec: int, blocks: list[Any]) -> None:
        parts: list[Any] = []
        calls: list[dict[str, Any]] = []
        for block in blocks:
            if block["type"] == "tool_use":
                cid = block.get("id")
                cid = cid if isinstance(cid, str) else ""
                name = block.get("name")
                calls.append(
                    {
                        "tool_call_id": cid,
                        "name": name if isinstance(name, str) else "",
                        "arguments": {} if block.get("input") is None else block["input"],
                    }
                )
                if isinstance(name, str):
                    self.names[cid] = name
            elif block["type"] == "text":
                parts.append({"type": "text", "text": _text(part_text(block))})
            elif block["type"] == "reasoning" and isinstance(block.get("text"), str):
                # Roo Code's plain reasoning; an encrypted one stays as it is (Responses').
                parts.append({"type": "thinking", "thinking": block["text"]})
            else:
                parts.append(block)
        metadata: dict[str, Any] = {"tool_calls": calls} if calls else {}
        self.add({"role": "assistant", "content": parts, "metadata": metadata}, rec, [])
        index = len(self.messages) - 1
        text = "".join(p["text"] for p in parts if p.get("type") == "text").rstrip()
        for marker, cause in _INTERRUPTED.items():
            if text.endswith(marker):
                self.causes[index] = cause
        self.open = calls
        self.turn = index

    def user(self, rec: int, blocks: list[Any]) -> None:
        waiting = list(self.open)
        answered: dict[int, dict[str, Any]] = {}  # block index -> the call it answers
        for block in blocks:
            if block["type"] == "tool_result":
                rid = block.get("tool_use_id")
                for call in waiting:
                    if call["tool_call_id"] == rid:
                        waiting.remove(call)
                        break
        for i, block in enumerate(blocks):
            if not waiting:
                break
            text = block.get("text") if block["type"] == "text" else None
            if not isinstance(text, str):
                continue
            result = _RESULT.match(text)
            if result or _SKIPPED.match(text):
                call = waiting.pop(0)
                answered[i] = call
                if not result or _denied(text):
                    self.not_started.add(call["tool_call_id"])
        if waiting and self.turn is not None:
            if any(t.startswith(_RESUMPTION) for t in _texts(blocks)):
                self.causes.setdefault(self.turn, "turn_aborted")
        rest: list[Any] = []
        rest_blocks: list[int] = []
        for i, block in enumerate(blocks):
            if block["type"] == "tool_result":
                self.result(rec, i, block)
            elif i in answered:
                call = answered[i]
                metadata = {"tool_call_id": call["tool_call_id"]}
                if call["name"]:
                    metadata["name"] = call["name"]
                message = {"role": "tool", "content": block["text"], "metadata": metadata}
                self.add(message, rec, [i], "text_result")
                self.meta["text_results"] += 1
            else:
                rest.append(_user_part(block))
                rest_blocks.append(i)
        if rest:
            self.add({"role": "user", "content": rest, "metadata": {}}, rec, rest_blocks)
        self.open = []
        self.turn = None

    def result(self, rec: int, index: int, block: dict[str, Any]) -> None:
        rid = block.get("tool_use_id")
        rid = rid if isinstance(rid, str) else ""
        metadata: dict[str, Any] = {"tool_call_id": rid}
        if rid in self.names:
            metadata["name"] = self.names[rid]
        if block.get("is_error") is True:
            metadata["is_error"] = True
        content = block.get("content")
        if isinstance(content, list):
            content = [_user_part(part) for part in content]
        elif not isinstance(content, str):
            content = "" if content is None else orjson.dumps(content).decode()
        message = {"role": "tool", "content": content, "metadata": metadata}
        self.add(message, rec, [index], "tool_result")


def _denied(text: str) -> bool:
    """``_DENIED.match(text)``: its words are looked for first, since where they are not
    the pattern's ``'.*?'`` would try every quote of a long result before failing."""
    return _DENIED_WORDS in text and _DENIED.match(text) is not None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _user_part(block: Any) -> Any:
    """A user block as a canonical part (images as ``image`` parts, the rest as they are)."""
    if not isinstance(block, dict):
        return block
    if block.get("type") == "text":
        return {"type": "text", "text": _text(part_text(block))}
    source = block.get("source")
    if block.get("type") == "image" and isinstance(source, dict):
        if source.get("type") == "base64":
            media, data = source.get("media_type"), source.get("data")
            return {"type": "image", "media_type": media, "data": data}
        if source.get("type") == "url":
            return {"type": "image", "url": source.get("url")}
    return block


# --------------------------------------------------------------------------- serialise


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = original.state
    if not isinstance(state, dict) or "doc" not in state:
        raise FormatError("serialise needs the Parsed that parse() returned for this file")
    if unchanged(messages, original.messages):
        return bytes(state["data"])
    out: Any = _Writer(state, original.messages).write(messages)
    if state.get("wrapper") is not None:
        out = {**state["wrapper"], "messages": out}  # the session file's own keys kept
    return dump_like(out, state["data"])


class _Writer:
    def __init__(self, state: dict[str, Any], before: list[Message]) -> None:
        self.doc: list[Any] = state["doc"]
        self.before = before
        self.kinds: list[str] = state["kinds"]
        # The parsed messages of each record, with their index in ``before``.
        self.parsed: dict[int, list[int]] = {}
        for index, m in enumerate(before):
            self.parsed.setdefault(_md(m)[REC], []).append(index)
        self.renamed: dict[str, str] = {}  # old call id -> new, from the assistant messages

    def write(self, messages: list[Message]) -> list[Any]:
        groups: list[tuple[int | None, list[Message]]] = []
        assistant = False
        for m in messages:
            rec = _rec(m)
            if m.get("role") == "assistant":
                groups.append((rec, [m]))
                assistant = True
                continue
            if groups and not assistant:
                last_rec, members = groups[-1]
                if rec is None or last_rec is None or rec == last_rec:
                    members.append(m)
                    groups[-1] = (last_rec if rec is None else rec, members)
                    continue
            groups.append((rec, [m]))
            assistant = False
        written = {rec for rec, _ in groups if rec is not None}
        out: list[Any] = []
        upto = 0  # records before this index are placed
        for rec, members in groups:
            if rec is not None:
                # Records holding no message (Roo Code's reasoning) keep their place.
                for index in range(upto, rec):
                    if index not in self.parsed and index not in written:
                        out.append(self.doc[index])
                upto = max(upto, rec + 1)
            if members[0].get("role") == "assistant":
                out.append(self.assistant(rec, members[0]))
            else:
                out.append(self.user(rec, members))
        out.extend(self.doc[i] for i in range(upto, len(self.doc)) if i not in self.parsed)
        return out

    def old(self, m: Message) -> tuple[int | None, Message | None]:
        """The index in ``before`` and the parsed message ``m`` stands for, if any."""
        rec = _rec(m)
        blocks = _md(m).get(BLOCKS)
        for index in self.parsed.get(rec, []) if rec is not None else []:
            if _md(self.before[index]).get(BLOCKS) == blocks:
                return index, self.before[index]
        return None, None

    def assistant(self, rec: int | None, m: Message) -> Any:
        _, old = self.old(m)
        record = self.doc[rec] if rec is not None else None
        if not isinstance(record, dict) or old is None:
            return {"role": "assistant", "content": _blocks(m)}
        new_calls = [c for c in _md(m).get("tool_calls") or [] if isinstance(c, dict)]
        old_calls = _md(old).get("tool_calls") or []
        if public(old) == public(m):
            return record
        content = record["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text_changed = m.get("content") != old.get("content")
        out: list[Any] = []
        kept = kept_calls(old_calls, new_calls)
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                ids = kept()
                if ids is None:  # the repair removed this call
                    continue
                old_id, new_id = ids
                if new_id != old_id:
                    self.renamed[old_id] = new_id
                    block = {**block, "id": new_id}
                    if "call_id" in block:
                        block["call_id"] = new_id
                out.append(block)
            elif not text_changed:
                out.append(block)
        if text_changed:
            out[:0] = [b for b in _blocks(m) if b.get("type") != "tool_use"]
        return {**record, "content": out}

    def user(self, rec: int | None, members: list[Message]) -> Any:
        record = self.doc[rec] if rec is not None else None
        if isinstance(record, dict):
            mine = self.parsed.get(rec, []) if rec is not None else []
            if len(members) == len(mine) and all(
                public(m) == public(self.before[i]) for m, i in zip(members, mine, strict=True)
            ):
                return record
        out: list[Any] = []
        for m in members:
            out.extend(self.member_blocks(rec, m, record))
        if not isinstance(record, dict):
            return {"role": "user", "content": out}
        return {**record, "content": out}

    def member_blocks(self, rec: int | None, m: Message, record: Any) -> list[Any]:
        index, old = self.old(m)
        original = record.get("content") if isinstance(record, dict) else None
        source = original if isinstance(original, list) else [{"type": "text", "text": original}]
        indices = _md(m).get(BLOCKS) or []
        if old is not None and index is not None and public(old) == public(m):
            return [source[i] for i in indices]
        if m.get("role") == "tool":
            rid = call_id(_md(m))
            if old is not None and index is not None and old.get("content") == m.get("content"):
                block = source[indices[0]]
                if self.kinds[index] == "text_result":
                    return [block]  # a text answer pairs by order: its words stay
                block = {**block, "tool_use_id": rid}
                if "call_id" in block:
                    block["call_id"] = rid
                return [block]
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": rid}
            content = m.get("content")
            result["content"] = content if isinstance(content, str) else _content_blocks(content)
            if _md(m).get("is_error"):
                result["is_error"] = True
            return [result]
        return _content_blocks(m.get("content"))


def _rec(m: Message) -> int | None:
    rec = _md(m).get(REC)
    return rec if isinstance(rec, int) and not isinstance(rec, bool) else None


def _blocks(m: Message) -> list[Any]:
    """An assistant message as Anthropic blocks: its parts, then its calls."""
    out = _content_blocks(m.get("content"))
    for call in _md(m).get("tool_calls") or []:
        if isinstance(call, dict):
            args = call.get("arguments")
            out.append(
                {
                    "type": "tool_use",
                    "id": call_id(call),
                    "name": call.get("name") or "",
                    "input": args if isinstance(args, dict) else {},
                }
            )
    return out


def _content_blocks(content: Any) -> list[Any]:
    """Canonical content as Anthropic blocks, as the Anthropic writer makes them (an
    empty text is no block)."""
    return [] if content == "" else wire_blocks(content, native_only=False)
