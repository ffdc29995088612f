"""LangChain / LangGraph message lists, in the three ways they are saved as JSON.

- ``messages_to_dict`` (and ``FileChatMessageHistory``): ``[{"type": "human" |
  "ai" | "tool" | "system" | "function" | "chat", "data": {"content", ...}}]``;
- the ``dumpd`` / ``Serializable`` form LangGraph checkpoints and stream
  values hold: ``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"],
  "kwargs": {...}}``;
- a message's own fields (``model_dump``, the LangGraph API's state):
  ``{"type": "ai", "content", "tool_calls", ...}``.

A file is such a list, or an object holding it: ``{"messages": [...]}`` (a
graph's state values), ``{"channel_values": {"messages": [...]}}`` (a
checkpoint), or ``{"values": {"messages": [...]}}``.

Reading (``parse``)
-------------------
- ``human`` is a user message, ``system`` a system message, ``ai`` (and
  ``AIMessageChunk``) an assistant message, ``tool`` a tool result
  (``tool_call_id``, ``name``, ``is_error`` when its ``status`` is ``error``),
  ``function`` a result with no id, ``chat`` what its ``role`` says.
- An assistant message's calls are its ``tool_calls`` (``args`` objects),
  then its ``invalid_tool_calls`` (``args`` the string the model sent: one cut
  mid-stream is the partial call the repair removes); only where it has
  neither, OpenAI's ``additional_kwargs.tool_calls``. ``tool_use`` blocks in
  its content stand for those calls and are not repeated as content;
  ``thinking`` and ``reasoning`` blocks are kept as parts.
- ``response_metadata`` ``finish_reason: length`` / ``stop_reason:
  max_tokens`` is the ``"max_tokens"`` cause.
- ``sources`` are 1-based positions in the list; anything in it that is not
  a message in one of the three forms is a ``Problem``.

Writing (``serialise``)
-----------------------
Unchanged files come back byte for byte; otherwise the list is written again
with untouched messages as they were. A new result is a ``ToolMessage`` with
``status: "error"`` in the file's form (and ``lc`` id path), a note a
``HumanMessage``; a renamed call is renamed in ``tool_calls``,
``tool_call_chunks``, OpenAI's ``additional_kwargs.tool_calls`` and
``tool_use`` blocks, and in its ``ToolMessage``; a removed call leaves them all.
"""

from __future__ import annotations

from typing import Any

import orjson

from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.detect import Alternatives, opens_json
from inspector.formats.jsondoc import dump_like, read_json
from inspector.formats.private import REC, Message, call_id, kept_calls, public
from inspector.formats.private import metadata as _md

NAME = "langchain"
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "LangChain / LangGraph messages"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 120

_TYPES = {
    "human": "user",
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "system": "system",
    "SystemMessage": "system",
    "ai": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "tool": "tool",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "function": "tool",
    "FunctionMessage": "tool",
    "chat": "chat",
    "ChatMessage": "chat",
}
_CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant"}
_CHAT_ROLES |= {"system": "system", "developer": "system", "tool": "tool"}
_STRONG = Alternatives(
    rb'"type"\s*:\s*"constructor"',
    rb'"type"\s*:\s*"(human|ai|tool)"\s*,\s*"data"\s*:',
    rb'"data"\s*:\s*\{[^{}]*"type"\s*:\s*"(human|ai|tool)"',
)
_MESSAGE_IDS = Alternatives(rb'"(HumanMessage|AIMessage|AIMessageChunk|ToolMessage|SystemMessage)"')
_FLAT = Alternatives(rb'"type"\s*:\s*"(human|ai)"')
_FLAT_KEYS = Alternatives(rb'"additional_kwargs"\s*:', rb'"response_metadata"\s*:')


# --------------------------------------------------------------------------- sniff


def sniff(head: bytes) -> float:
    if not opens_json(head):
        return 0.0
    if _STRONG.search(head) and (_MESSAGE_IDS.search(head) or b'"data"' in head):
        return 0.9
    if _FLAT.search(head) and _FLAT_KEYS.search(head):
        return 0.85
    return 0.0


# --------------------------------------------------------------------------- parse


def parse(data: bytes) -> Parsed:
    doc = read_json(data)
    records, path = _find_list(doc)
    if records is None:
        raise FormatError("no list of LangChain messages (nor 'messages' holding one)")
    if not records:
        raise FormatError("the list of messages is empty")
    forms = [_form(r) for r in records]
    if not any(forms):
        raise FormatError("no item is a LangChain message (type/data, lc constructor or fields)")
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems: list[Problem] = []
    causes: dict[int, str] = {}
    for rec, (record, form) in enumerate(zip(records, forms, strict=True)):
        number = rec + 1
        if form is None:
            problems.append(Problem(number, "not a LangChain message"))
            continue
        kind, fields = _fields(record, form)
        made = _message(kind, fields)
        if isinstance(made, str):
            problems.append(Problem(number, made))
            continue
        made["metadata"][REC] = rec
        if made["role"] == "assistant" and _cut_by_length(fields):
            causes[len(messages)] = "max_tokens"
        messages.append(made)
        sources.append([number])
    if not messages:
        raise FormatError(f"no item is a readable LangChain message ({problems[0].reason})")
    known = [f for f in forms if f]
    meta = {"form": max(set(known), key=known.count), "container": ".".join(path) or "list"}
    state = {"data": data, "doc": doc, "records": records, "path": path, "forms": forms}
    return Parsed(NAME, messages, sources, problems, causes=causes, meta=meta, state=state)


def _find_list(doc: Any) -> tuple[list[Any] | None, list[str]]:
    if isinstance(doc, list):
        return doc, []
    if not isinstance(doc, dict):
        return None, []
    for path in (["messages"], ["channel_values", "messages"], ["values", "messages"]):
        node: Any = doc
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, list):
            return node, path
    return None, []


def _form(record: Any) -> str | None:
    """``"dict"`` (type/data), ``"lc"`` (constructor), ``"fields"``, or None."""
    if not isinstance(record, dict):
        return None
    kind = record.get("type")
    if kind == "constructor" and record.get("lc") == 1:
        ids = record.get("id")
        name = ids[-1] if isinstance(ids, list) and ids else None
        if isinstance(name, str) and name in _TYPES and isinstance(record.get("kwargs"), dict):
            return "lc"
        return None
    if isinstance(kind, str) and kind in _TYPES and isinstance(record.get("data"), dict):
        return "dict"
    if isinstance(kind, str) and kind in _TYPES and "content" in record:
        return "fields"
    return None


def _fields(record: dict[str, Any], form: str) -> tuple[str, dict[str, Any]]:
    if form == "lc":
        return record["id"][-1], record["kwargs"]
    if form == "dict":
        return record["type"], record["data"]
    return record["type"], record


def _message(kind: str, fields: dict[str, Any]) -> Message | str:
    role = _TYPES[kind]
    if role == "chat":
        chat_role = fields.get("role")
        found = _CHAT_ROLES.get(chat_role) if isinstance(chat_role, str) else None
        if found is None:
            return f"a chat message with role {chat_role!r}"
        role = found
    content = fields.get("content")
    if content is not None and not isinstance(content, str | list):
        return "content must be text or a list of blocks"
    if "content" not in fields and role != "tool" and not fields.get("tool_calls"):
        # A message keeps its words in 'content': this one holds them under a field this
        # reader does not know, and read as empty a repair would drop it.
        held = ", ".join(repr(k) for k in list(fields)[:6])
        raise FormatError(
            f"a {kind} message without 'content' (it holds {held or 'nothing else'}):"
            " not a LangChain message this reader knows"
        )
    metadata: dict[str, Any] = {}
    if role == "assistant":
        calls = _calls(fields)
        if calls:
            metadata["tool_calls"] = calls
        return {"role": role, "content": _content(content, drop_calls=True), "metadata": metadata}
    if role == "tool":
        call = fields.get("tool_call_id")
        metadata["tool_call_id"] = call if isinstance(call, str) else ""
        if isinstance(fields.get("name"), str):
            metadata["name"] = fields["name"]
        if fields.get("status") == "error":
            metadata["is_error"] = True
    return {"role": role, "content": _content(content, drop_calls=False), "metadata": metadata}


def _calls(fields: dict[str, Any]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for key in ("tool_calls", "invalid_tool_calls"):
        for call in fields.get(key) or [] if isinstance(fields.get(key), list) else []:
            if not isinstance(call, dict):
                continue
            args = call.get("args")
            calls.append(
                {
                    "tool_call_id": _str(call.get("id")),
                    "name": _str(call.get("name")),
                    "arguments": {} if args is None else args,
                }
            )
    if calls:
        return calls
    extra = fields.get("additional_kwargs")
    raw = extra.get("tool_calls") if isinstance(extra, dict) else None
    for call in raw if isinstance(raw, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append(
                {
                    "tool_call_id": _str(call.get("id")),
                    "name": _str(function.get("name")),
                    "arguments": function.get("arguments", ""),
                }
            )
    return calls


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _content(content: Any, drop_calls: bool) -> Any:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out: list[Any] = []
    for block in content:
        if isinstance(block, str):
            out.append({"type": "text", "text": block})
            continue
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            out.append({"type": "text", "text": orjson.dumps(block).decode()})
            continue
        kind = block["type"]
        if kind == "text" and isinstance(block.get("text"), str):
            out.append({"type": "text", "text": block["text"]})
        elif drop_calls and kind in ("tool_use", "tool_call", "function_call"):
            continue  # the message's tool_calls hold these calls
        elif kind == "image_url":
            image = block.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            out.append({"type": "image", "url": url} if isinstance(url, str) else block)
        else:
            out.append(block)
    return out


def _cut_by_length(fields: dict[str, Any]) -> bool:
    meta = fields.get("response_metadata")
    if not isinstance(meta, dict):
        return False
    return meta.get("finish_reason") == "length" or meta.get("stop_reason") == "max_tokens"


# --------------------------------------------------------------------------- serialise


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = original.state
    if not isinstance(state, dict) or "records" not in state:
        raise FormatError("serialise needs the Parsed that parse() returned for this file")
    if messages == original.messages:
        return bytes(state["data"])
    records: list[Any] = state["records"]
    forms: list[str | None] = state["forms"]
    known = [f for f in forms if f]
    form = max(set(known), key=known.count)
    prefix = _lc_prefix(records)
    by_rec = {m["metadata"][REC]: m for m in original.messages}
    used: set[int] = set()
    out: list[Any] = []
    for m in messages:
        md = m.get("metadata")
        rec = md.get(REC) if isinstance(md, dict) else None
        if isinstance(rec, int) and not isinstance(rec, bool) and rec in by_rec and rec not in used:
            used.add(rec)
            old = by_rec[rec]
            if public(old) == public(m):
                out.append(records[rec])
                continue
            rec_form = forms[rec] or form
            if old["role"] == m.get("role"):
                out.append(_changed(records[rec], rec_form, old, m))
                continue
            out.append(_new_record(m, rec_form, prefix))
            continue
        out.append(_new_record(m, form, prefix))
    doc = _put_list(state["doc"], state["path"], out)
    return dump_like(doc, state["data"])


def _put_list(doc: Any, path: list[str], records: list[Any]) -> Any:
    if not path:
        return records
    key, rest = path[0], path[1:]
    return {**doc, key: _put_list(doc[key], rest, records)}


def _lc_prefix(records: list[Any]) -> list[str]:
    for record in records:
        if isinstance(record, dict) and record.get("type") == "constructor":
            ids = record.get("id")
            if isinstance(ids, list) and len(ids) > 1 and all(isinstance(i, str) for i in ids):
                return list(ids[:-1])
    return ["langchain_core", "messages"]


def _wrap(kind: str, fields: dict[str, Any], form: str, prefix: list[str]) -> dict[str, Any]:
    short = {"HumanMessage": "human", "ToolMessage": "tool", "AIMessage": "ai"}[kind]
    if form == "lc":
        return {"lc": 1, "type": "constructor", "id": [*prefix, kind], "kwargs": fields}
    if form == "dict":
        return {"type": short, "data": {**fields, "type": short}}
    return {**fields, "type": short}


def _new_record(m: Message, form: str, prefix: list[str]) -> dict[str, Any]:
    md = _md(m)
    content = _lc_content(m.get("content"))
    if m.get("role") == "tool":
        fields: dict[str, Any] = {
            "content": content,
            "additional_kwargs": {},
            "response_metadata": {},
            "name": md.get("name"),
            "tool_call_id": call_id(md),
            "status": "error" if md.get("healed") or md.get("is_error") else "success",
        }
        return _wrap("ToolMessage", fields, form, prefix)
    if m.get("role") == "assistant":
        calls = [
            {
                "name": c.get("name"),
                "args": c.get("arguments"),
                "id": call_id(c),
                "type": "tool_call",
            }
            for c in md.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        fields = {"content": content, "additional_kwargs": {}, "response_metadata": {}}
        fields["tool_calls"] = calls
        return _wrap("AIMessage", fields, form, prefix)
    # Notes, and anything else a repair might add, are what the user says.
    fields = {"content": content, "additional_kwargs": {}, "response_metadata": {}}
    return _wrap("HumanMessage", fields, form, prefix)


def _changed(record: dict[str, Any], form: str, old: Message, new: Message) -> dict[str, Any]:
    _, fields = _fields(record, form)
    fields = dict(fields)
    md = _md(new)
    if new.get("role") == "tool":
        fields["tool_call_id"] = call_id(md)
        if new.get("content") != old.get("content"):
            fields["content"] = _lc_content(new.get("content"))
    elif new.get("role") == "assistant":
        _recall(fields, old, md)
        if new.get("content") != old.get("content"):
            fields["content"] = _lc_content(new.get("content"))
    elif new.get("content") != old.get("content"):
        fields["content"] = _lc_content(new.get("content"))
    if form == "lc":
        return {**record, "kwargs": fields}
    if form == "dict":
        return {**record, "data": fields}
    return fields


def _recall(fields: dict[str, Any], old: Message, md: dict[str, Any]) -> None:
    """The assistant's calls as the repair left them: renamed, or gone.

    The repair keeps a call (maybe under a new id) or removes it; its other
    copies (``tool_call_chunks``, OpenAI's ``additional_kwargs.tool_calls``,
    ``tool_use`` blocks) follow: the n-th copy with an id stands for the n-th
    call with that id.
    """
    calls = old["metadata"].get("tool_calls") or []
    step = kept_calls(calls, md.get("tool_calls") or [])
    plan: list[tuple[str, str | None]] = []  # (old id, new id or None when removed)
    for call in calls:
        kept = step()
        plan.append((call["tool_call_id"], None if kept is None else kept[1]))

    def edit(items: Any, calls_only: bool = False) -> Any:
        if not isinstance(items, list):
            return items
        taken = [False] * len(plan)
        out: list[Any] = []
        for item in items:
            is_call = isinstance(item, dict) and (
                not calls_only or item.get("type") in ("tool_use", "tool_call")
            )
            cid = _str(item.get("id")) if is_call else None
            slot = next((n for n, (i, _) in enumerate(plan) if i == cid and not taken[n]), None)
            if slot is None:
                out.append(item)
                continue
            taken[slot] = True
            new_id = plan[slot][1]
            if new_id is None:
                continue  # the repair removed this call
            out.append(item if new_id == cid else {**item, "id": new_id})
        return out

    for key in ("tool_calls", "invalid_tool_calls", "tool_call_chunks"):
        if key in fields:
            fields[key] = edit(fields[key])
    extra = fields.get("additional_kwargs")
    if isinstance(extra, dict) and isinstance(extra.get("tool_calls"), list):
        fields["additional_kwargs"] = {**extra, "tool_calls": edit(extra["tool_calls"])}
    if isinstance(fields.get("content"), list):
        fields["content"] = edit(fields["content"], calls_only=True)


def _lc_content(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content or ""
    out: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text":
            out.append({"type": "text", "text": part.get("text", "")})
        elif isinstance(part, dict) and part.get("type") == "image":
            url = part.get("url") or f"data:{part.get('media_type')};base64,{part.get('data')}"
            out.append({"type": "image_url", "image_url": {"url": url}})
        elif part is not None:
            out.append(part)
    if all(isinstance(p, dict) and p.get("type") == "text" for p in out):
        return "\n".join(p["text"] for p in out)
    return out
