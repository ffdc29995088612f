"""Amazon Q Developer CLI's and Kiro CLI's saved conversations (``ConversationState`` JSON).

``q chat`` (aws/amazon-q-developer-cli, crate ``chat-cli``) and the Kiro CLI
that replaced it keep each conversation as one JSON document: the
``ConversationState`` serde writes (``cli/chat/conversation.rs``), a row's
``value`` in the ``conversations`` (``conversations_v2`` in Kiro) table of
their ``data.sqlite3`` (``inspector.local.q_db``), and what ``/save`` writes
to a file (pretty-printed). Its keys, in serde's order::

    {"conversation_id", "next_message": <UserMessage> | null,
     "history": [<entry>, ...], "valid_history_range": [start, end],
     "transcript": [...], "tools": {...}, "context_manager", ...}

An entry is ``{"user", "assistant", "request_metadata"}`` (``HistoryEntry``,
since July 2025) or, in older versions, the pair ``[user, assistant]``; each
is written back in the form it was read in. Enums are serde's externally
tagged ones:

- a ``UserMessage`` is ``{"additional_context", "env_context", "content",
  "timestamp", "images"}``, its ``content`` one of ``{"Prompt": {"prompt"}}``,
  ``{"ToolUseResults": {"tool_use_results": [...]}}`` and
  ``{"CancelledToolUses": {"prompt": <text> | null, "tool_use_results"}}``;
- a result is ``{"tool_use_id", "content": [{"Text": <text>} | {"Json":
  <value>}], "status": "Success" | "Error"}``;
- an ``AssistantMessage`` is ``{"Response": {"message_id", "content"}}`` or
  ``{"ToolUse": {"message_id", "content", "tool_uses": [{"id", "name",
  "orig_name", "args", "orig_args"}]}}``.

Reading is strict: another variant, block or status refuses the document
(``FormatError``, ``unread``). Images (``images``: a block's bytes) are read
as ``q_image`` parts, kept whole. ``additional_context`` (the context hooks and
files add to a prompt), ``transcript`` (the text the terminal showed) and
the rest are kept as they are and not read.

Q writes the row after each reply (``push_assistant_message``); the results
of a reply's tool uses live in ``next_message`` in memory only until the next
reply, so a crash, a kill or a closed terminal while the tools run leaves the
row ending on a ``ToolUse`` entry and ``next_message: null``. ``q chat
--resume`` then answers those tool uses in memory (``enforce_conversation_
invariants`` turns the next prompt into ``CancelledToolUses``, each result
``"Tool use was cancelled by the user"`` with status ``Error``), and the stored
row stays as it was until the next reply is saved; a tool use unanswered
inside the history is never fixed. A repair writes what Q writes for a
cancelled tool use: the answers of the calls of entry *n* go into the user
message of entry *n + 1* (``CancelledToolUses`` keeping its prompt, or into
its ``ToolUseResults``), or, after the last entry, into ``next_message``
(``CancelledToolUses`` with no prompt); each such result has status
``Error`` and the engine's words as its ``Text``. Nothing else changes; an
unchanged document is given back byte for byte.

A conversation whose history is empty (``/save`` after ``/clear``, which keeps
the ``transcript``) reads as no message: nothing to repair.

The timeline shows a user message's ``timestamp`` and, where an entry has
``request_metadata``, when its request started and the model it went to.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from inspector.formats.base import FormatError, Parsed, epoch_time
from inspector.formats.jsondoc import dump_like, read_json, text_of
from inspector.formats.private import PART, REC, Message, by_origin, call_id, calls_of, metadata

NAME = "q-chat"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Amazon Q / Kiro CLI conversation (JSON)"
EXTENSION = "json"

BLANK_IS_WRITTEN = True

# The part an image block is read as: the block, kept whole.
IMAGE_PART = "q_image"
USER_VARIANTS = ("Prompt", "ToolUseResults", "CancelledToolUses")
ASSISTANT_VARIANTS = ("Response", "ToolUse")
STATUSES = ("Success", "Error")
# serde writes the fields in the struct's order: a document starts so.
_START = re.compile(rb'^\s*\{\s*"conversation_id"\s*:\s*"[^"]*"\s*,\s*"next_message"\s*:')
# PART of the assistant message of an entry (a user side's message has its place in it).
ASSISTANT = -1


def sniff(head: bytes) -> float:
    if _START.match(head):
        return 0.95
    marks = (b'"conversation_id"', b'"history"', b'"valid_history_range"')
    return 0.9 if all(mark in head for mark in marks) else 0.0


def parse(data: bytes) -> Parsed:
    doc = read_json(data)
    if not (
        isinstance(doc, dict)
        and isinstance(doc.get("conversation_id"), str)
        and isinstance(doc.get("history"), list)
        and ("next_message" in doc or "valid_history_range" in doc)
    ):
        raise FormatError(
            "not an Amazon Q / Kiro CLI conversation ({'conversation_id', 'next_message', "
            "'history'})"
        )
    try:
        return _parse(doc, data)
    except FormatError as exc:
        raise FormatError(f"a Q / Kiro conversation: {exc}", unread=True) from None


def _parse(doc: dict[str, Any], data: bytes) -> Parsed:
    messages: list[Message] = []
    sources: list[list[int]] = []
    history = doc["history"]
    for rec, entry in enumerate(history):
        user, assistant = _sides(entry, rec)
        found = [*_user_messages(user, rec), _assistant_message(assistant, rec)]
        messages.extend(found)
        sources.extend([rec + 1] for _ in found)
    following = doc.get("next_message")
    if following is not None:
        found = _user_messages(following, len(history))
        messages.extend(found)
        sources.extend([len(history) + 1] for _ in found)
    meta = {"session_id": doc["conversation_id"], "cwd": _cwd(doc), "model": _model_of(doc)}
    state = {"data": data, "doc": doc, "groups": by_origin(messages)}
    return Parsed(NAME, messages, sources, meta={k: v for k, v in meta.items() if v}, state=state)


def _sides(entry: Any, rec: int) -> tuple[Any, Any]:
    if isinstance(entry, list) and len(entry) == 2:
        return entry[0], entry[1]
    if isinstance(entry, dict) and "user" in entry and "assistant" in entry:
        return entry["user"], entry["assistant"]
    raise FormatError(f"history entry {rec + 1} is neither [user, assistant] nor {{user, ...}}")


def _variant(value: Any, known: tuple[str, ...], what: str) -> tuple[str, dict[str, Any]]:
    """The one variant of a serde enum value (``{"Variant": {...}}``) and its fields."""
    if isinstance(value, dict) and len(value) == 1:
        ((name, fields),) = value.items()
        if name in known and isinstance(fields, dict):
            return name, fields
    shown = sorted(value)[:3] if isinstance(value, dict) else type(value).__name__
    raise FormatError(f"{what} {shown} is not one of {', '.join(known)}")


def _user_messages(user: Any, rec: int) -> list[Message]:
    where = f"entry {rec + 1}'s user message"
    if not isinstance(user, dict):
        raise FormatError(f"{where} is not an object")
    kind, fields = _variant(user.get("content"), USER_VARIANTS, f"{where}'s content")
    images = user.get("images")
    if images is not None and not isinstance(images, list):
        raise FormatError(f"{where}'s images are not a list")
    out: list[Message] = []
    results = fields.get("tool_use_results") if kind != "Prompt" else []
    if not isinstance(results, list):
        raise FormatError(f"{where} has no 'tool_use_results' list")
    for n, result in enumerate(results):
        out.append(_result(result, f"{where}'s result {n + 1}", rec, n))
    prompt = fields.get("prompt")
    if kind == "Prompt" and not isinstance(prompt, str):
        raise FormatError(f"{where} is a Prompt without a 'prompt' text")
    if prompt is not None and not isinstance(prompt, str):
        raise FormatError(f"{where}'s prompt is not text")
    parts: list[Any] = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else []
    parts.extend({"type": IMAGE_PART, "block": block} for block in images or [])
    if parts:
        content: Any = prompt if parts == [{"type": "text", "text": prompt}] else parts
        out.append({"role": "user", "content": content, "metadata": {REC: rec, PART: len(out)}})
    return out


def _result(value: Any, where: str, rec: int, n: int) -> Message:
    if not (
        isinstance(value, dict)
        and isinstance(value.get("tool_use_id"), str)
        and isinstance(value.get("content"), list)
    ):
        raise FormatError(f"{where} is not {{'tool_use_id', 'content': [...], 'status'}}")
    if value.get("status") not in STATUSES:
        raise FormatError(f"{where}'s status {value.get('status')!r} is not Success or Error")
    md: dict[str, Any] = {"tool_call_id": value["tool_use_id"], REC: rec, PART: n}
    if value["status"] == "Error":
        md["is_error"] = True
    return {"role": "tool", "content": _result_text(value["content"], where), "metadata": md}


def _result_text(blocks: list[Any], where: str) -> str:
    texts = []
    for block in blocks:
        kind, _ = (
            next(iter(block.items())) if isinstance(block, dict) and len(block) == 1 else ("", 0)
        )
        if kind == "Text" and isinstance(block["Text"], str):
            texts.append(block["Text"])
        elif kind == "Json":
            texts.append(orjson.dumps(block["Json"]).decode())
        else:
            raise FormatError(f"{where} holds a block that is neither Text nor Json")
    return "\n".join(texts)


def _assistant_message(value: Any, rec: int) -> Message:
    where = f"entry {rec + 1}'s assistant message"
    kind, fields = _variant(value, ASSISTANT_VARIANTS, where)
    content = fields.get("content")
    if not isinstance(content, str):
        raise FormatError(f"{where} has no 'content' text")
    md: dict[str, Any] = {REC: rec, PART: ASSISTANT}
    if kind == "ToolUse":
        uses = fields.get("tool_uses")
        if not isinstance(uses, list) or not all(
            isinstance(u, dict) and isinstance(u.get("id"), str) and isinstance(u.get("name"), str)
            for u in uses
        ):
            raise FormatError(f"{where} has no 'tool_uses' list of {{'id', 'name', 'args'}}")
        calls = [{"tool_call_id": u["id"], "name": u["name"], "arguments": u.get("args")}
                 for u in uses]  # fmt: skip
        md = {"tool_calls": calls, **md}
    return {"role": "assistant", "content": content, "metadata": md}


def _cwd(doc: dict[str, Any]) -> str | None:
    """The folder Q ran in, as the last user message's environment says (the row's key)."""
    users = [_sides(e, n)[0] for n, e in enumerate(doc["history"])]
    for user in reversed([*users, doc.get("next_message")]):
        context = user.get("env_context") if isinstance(user, dict) else None
        state = context.get("env_state") if isinstance(context, dict) else None
        cwd = state.get("current_working_directory") if isinstance(state, dict) else None
        if isinstance(cwd, str) and cwd:
            return cwd
    return None


def _model_of(doc: dict[str, Any]) -> str | None:
    info = doc.get("model_info")
    model = info.get("model_id") if isinstance(info, dict) else doc.get("model")
    return model if isinstance(model, str) and model else None


# -- writing -----------------------------------------------------------------------------


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = original.state
    if not isinstance(state, dict) or "doc" not in state:
        raise FormatError("serialise needs the Parsed that parse() returned for this file")
    if messages is original.messages:
        return bytes(state["data"])
    doc: dict[str, Any] = state["doc"]
    groups: dict[int, list[Message]] = state["groups"]
    history: list[Any] = []
    users: list[Message] = []
    for message in messages:
        if message.get("role") != "assistant":
            users.append(message)
            continue
        rec = metadata(message).get(REC)
        if not isinstance(rec, int) or not 0 <= rec < len(doc["history"]):
            raise FormatError("an assistant message that no history entry holds cannot be written")
        history.append(_entry(doc, groups.get(rec, []), rec, users, message))
        users = []
    following = doc.get("next_message")
    end = len(doc["history"])
    if _same(users, groups.get(end, [])):
        new_next = following
    elif not users:
        new_next = None
    else:
        base = following if following is not None else _last_user(doc)
        new_next = _user_object(users, following, base, doc)
    out = {**doc, "history": history, "next_message": new_next}
    span = doc.get("valid_history_range")
    if len(history) != end and isinstance(span, list) and len(span) == 2:
        # An entry a repair dropped (a blank reply) shortens the range Q sends; Q sets it
        # again before each request (enforce_conversation_invariants).
        start = span[0] if isinstance(span[0], int) and not isinstance(span[0], bool) else 0
        out["valid_history_range"] = [min(start, len(history)), len(history)]
    return dump_like(out, bytes(state["data"]))


def _same(now: list[Message], before: list[Message]) -> bool:
    return len(now) == len(before) and all(a is b for a, b in zip(now, before, strict=True))


def _entry(
    doc: dict[str, Any], read: list[Message], rec: int, users: list[Message], reply: Message
) -> Any:
    entry = doc["history"][rec]
    user, assistant = _sides(entry, rec)
    before_users = [m for m in read if m.get("role") != "assistant"]
    new_user = user if _same(users, before_users) else _user_object(users, user, user, doc)
    new_assistant = assistant if read and reply is read[-1] else _assistant_object(reply, assistant)
    if new_user is user and new_assistant is assistant:
        return entry
    if isinstance(entry, list):
        return [new_user, new_assistant]
    return {**entry, "user": new_user, "assistant": new_assistant}


def _last_user(doc: dict[str, Any]) -> Any:
    history = doc["history"]
    return _sides(history[-1], len(history) - 1)[0] if history else None


def _user_object(
    messages: list[Message], template: Any, base: Any, doc: dict[str, Any]
) -> dict[str, Any]:
    """A ``UserMessage`` holding ``messages`` (results, then the user's text and notes):
    ``template``'s fields where there is one, else a new one beside ``base``'s."""
    results = [_result_object(m, doc) for m in messages if m.get("role") == "tool"]
    texts: list[str] = []
    images: list[Any] = []
    for message in messages:
        if message.get("role") == "tool":
            continue
        content = message.get("content")
        parts = content if isinstance(content, list) else []
        blocks = [p["block"] for p in parts if isinstance(p, dict) and p.get("type") == IMAGE_PART]
        images.extend(blocks)
        text = text_of(content)
        if text or not blocks:  # a message of images only has no prompt of its own
            texts.append(text)
    was = _variant(template.get("content"), USER_VARIANTS, "")[0] if template else ""
    if not results:
        if not texts:
            raise FormatError("a history entry would be left with no user message")
        content_out: dict[str, Any] = {"Prompt": {"prompt": "\n".join(texts)}}
    elif not texts and was == "ToolUseResults":
        content_out = {"ToolUseResults": {"tool_use_results": results}}
    else:
        # What Q writes when a turn's tool uses were not run (UserMessage::new_cancelled_tool_uses).
        prompt = "\n".join(texts) if texts else None
        content_out = {"CancelledToolUses": {"prompt": prompt, "tool_use_results": results}}
    if isinstance(template, dict):
        # Images the message no longer holds are gone with it; none stays as it was written.
        kept = images or (None if template.get("images") else template.get("images"))
        return {**template, "content": content_out, "images": kept}
    # A new UserMessage, its fields as the version that wrote ``base`` has them (``timestamp``
    # since August 2025), on the same machine and in the same folder as ``base``.
    fields: dict[str, Any] = {"additional_context": ""}
    if isinstance(base, dict) and "env_context" in base:
        fields["env_context"] = base["env_context"]
    fields["content"] = content_out
    if not isinstance(base, dict) or "timestamp" in base:
        fields["timestamp"] = None
    fields["images"] = images or None
    return fields


def _result_object(message: Message, doc: dict[str, Any]) -> dict[str, Any]:
    md = metadata(message)
    cid = call_id(md)
    text = text_of(message.get("content"))
    old = _read_result(md, doc)
    if old is not None and _result_text(old["content"], "") == text:
        return old if old["tool_use_id"] == cid else {**old, "tool_use_id": cid}
    status = "Error" if md.get("is_error") or md.get("healed") else "Success"
    return {"tool_use_id": cid, "content": [{"Text": text}], "status": status}


def _read_result(md: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any] | None:
    """The result object a tool message was read from, if it was read from one."""
    rec, n = md.get(REC), md.get(PART)
    if not isinstance(rec, int) or not isinstance(n, int):
        return None
    history = doc["history"]
    user = _sides(history[rec], rec)[0] if rec < len(history) else doc.get("next_message")
    content = user.get("content") if isinstance(user, dict) else None
    fields = next(iter(content.values())) if isinstance(content, dict) and content else None
    results = fields.get("tool_use_results") if isinstance(fields, dict) else None
    found = results[n] if isinstance(results, list) and n < len(results) else None
    return found if isinstance(found, dict) else None


def _assistant_object(message: Message, template: Any) -> dict[str, Any]:
    kind, fields = _variant(template, ASSISTANT_VARIANTS, "")
    content = text_of(message.get("content"))
    calls = calls_of(message)
    if not calls:
        return {"Response": {"message_id": fields.get("message_id"), "content": content}}
    uses = [u for u in fields.get("tool_uses") or [] if isinstance(u, dict)]
    by_id = {u.get("id"): u for u in uses}
    out = []
    for n, call in enumerate(calls):
        cid = call_id(call)
        args = call.get("arguments")
        old = by_id.get(cid) or (uses[n] if n < len(uses) and uses[n].get("args") == args else None)
        if old is not None and old.get("args") == args and old.get("name") == call.get("name"):
            out.append(old if old.get("id") == cid else {**old, "id": cid})
        else:
            name = call.get("name") or ""
            out.append({"id": cid, "name": name, "orig_name": name, "args": args,
                        "orig_args": args})  # fmt: skip
    body = {**fields, "content": content, "tool_uses": out}
    if kind == "Response":
        body = {"message_id": fields.get("message_id"), "content": content, "tool_uses": out}
    return {"ToolUse": body}


def timeline_facts(parsed: Parsed) -> list[dict[str, Any] | None]:
    """Per message, the user message's ``timestamp``, and for a reply when its request
    started and the model it went to (the entry's ``request_metadata``)."""
    state = parsed.state
    if not isinstance(state, dict) or "doc" not in state:
        return []
    history = state["doc"]["history"]
    facts: list[dict[str, Any] | None] = []
    for message in parsed.messages:
        md = metadata(message)
        rec = md.get(REC)
        if not isinstance(rec, int):
            facts.append(None)
            continue
        entry = history[rec] if rec < len(history) else None
        if message.get("role") == "assistant":
            meta = entry.get("request_metadata") if isinstance(entry, dict) else None
            meta = meta if isinstance(meta, dict) else {}
            model = meta.get("model_id")
            facts.append({"at": epoch_time(meta.get("request_start_timestamp_ms")),
                          "model": model if isinstance(model, str) else None,
                          "tokens_in": None, "tokens_out": None})  # fmt: skip
            continue
        user = _sides(entry, rec)[0] if entry is not None else state["doc"].get("next_message")
        stamp = user.get("timestamp") if isinstance(user, dict) else None
        at = stamp if isinstance(stamp, str) and stamp else None
        facts.append({"at": at, "model": None, "tokens_in": None, "tokens_out": None})
    return facts
