"""OpenAI Chat Completions messages (``role``/``content``, ``tool_calls``, ``role: tool``).

Containers read, and written back in the same container:

- a bare JSON list of messages, or a request body ``{"model", "messages", ...}``;
- a recording of exchanges (``{"interactions": [...]}``, see ``exchanges``):
  the last request's messages plus that exchange's response message
  (``choices[0].message``), except when the response asks for tool calls
  (the recording ends where the client stopped, not where a result was lost:
  those calls are named in ``meta["pending_calls"]`` instead);
- a list of conversations, each an object with a ``traj`` or ``messages``
  list (tau-bench results): several separate histories, never joined into
  one. ``parse`` reads the first (or ``conversation=k``, 0-based) and names
  the count in ``meta["conversations"]``; writing back replaces only that one;
- JSON Lines with one message per line (Kimi CLI context files). Lines whose
  role starts with ``_`` (``_checkpoint``, ``_usage``) are the tool's own
  bookkeeping: kept for the round trip, not messages. A line that cannot be
  read is a ``Problem`` and is left out of a repaired file, so the file loads
  again in the tool. JSON Lines with one conversation per line follow the
  list-of-conversations rule.

``sources`` are 1-based record numbers in the list (line numbers for JSON
Lines); the appended response of a recording counts as the record after the
request's last message.

Export (``to_wire``) writes what Chat Completions accepts from any canonical
history, without adding events. System messages stay where they are and
roles need not alternate (the API takes both). Parts the API does not define
(another provider's reasoning or thinking) are left out; a message whose
parts were all left out would be an empty content array (``empty array.
Expected an array with minimum length 1``): an assistant message with calls
gets ``content: null`` instead, and any other such message is left out, as
it said nothing the API can read. Tool results follow their call (repair put
them there) with their content as text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from inspector.formats import jsonl
from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.detect import Alternatives, list_shape, opens_json, refuse_others
from inspector.formats.exchanges import append_exchange, exchanges, pick_exchange
from inspector.formats.jsondoc import (
    arguments_string,
    dump_like,
    dump_line,
    image_part,
    read_json,
)
from inspector.formats.private import (
    REC,
    RESPONSE_REC,
    Message,
    by_origin,
    call_id,
    calls_of,
    metadata,
    origin,
    public,
)

NAME = "openai-chat"
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "OpenAI Chat Completions"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 20

_ROLES = {"system": "system", "developer": "system", "user": "user"}
_ROLES |= {"assistant": "assistant", "tool": "tool", "function": "tool"}
_NATIVE_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})

_STRONG = Alternatives(
    rb'"tool_calls"\s*:',
    rb'"tool_call_id"\s*:',
    rb'"role"\s*:\s*"(tool|developer)"',
    rb"chat/completions",
    rb'"finish_reason"\s*:',
    rb'"role"\s*:\s*"_checkpoint"',
)
_ROLE = Alternatives(rb'"role"\s*:\s*"(user|assistant|system)"')
_OTHER = Alternatives(
    rb'"type"\s*:\s*"(tool_use|tool_result|function_call|function_call_output)"',
    rb'"functionCall"',
    rb'"parts"\s*:',
    rb'"metadata"\s*:\s*\{\s*"tool_calls"',
)


def sniff(head: bytes) -> float:
    if not opens_json(head):
        return 0.0
    if _STRONG.search(head):
        return 0.5 if _OTHER.search(head) else 0.8
    if _ROLE.search(head):
        values = jsonl.head_records(head, 5)  # lines, or a whole small document
        records = [r for v in values for r in (v[:20] if isinstance(v, list) else [v])]
        if any(missing_content(record) for record in records):
            # A role beside no content of its own (Cursor's lines hold theirs in a
            # "message"): another agent's records, whatever their role says.
            return 0.05
        return 0.3 if _OTHER.search(head) else 0.5
    return 0.05


# A Chat message is read with the content written in it (``missing_content`` refuses a
# record without any): a blank one is blank in the file (see ``formats._parse``).
BLANK_IS_WRITTEN = True


def missing_content(record: Any) -> str | None:
    """Why ``record``, a chat role's object, cannot be a Chat message, or ``None``.

    The API takes no message without ``content``, except an assistant's that
    carries ``tool_calls`` (or the older ``function_call``). A role with
    neither beside it is another shape's record (Cursor keeps the content in
    a ``message`` object): read as Chat it would be a blank message, and a
    repair would drop what it holds.
    """
    if not isinstance(record, dict) or "content" in record:
        return None
    role = record.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        return None
    if record.get("tool_calls") is not None or isinstance(record.get("function_call"), dict):
        return None
    fields = ", ".join(repr(key) for key in list(record)[:6] if key != "role")
    held = f"; it holds {fields}" if fields else ""
    article = "an" if role == "assistant" else "a"  # system, developer, user, tool, function
    return (
        f"{article} {role} message without 'content' (nor 'tool_calls'){held}: "
        "not a Chat message, so it was not read as one"
    )


def parse(data: bytes, *, conversation: int | None = None) -> Parsed:
    """Read any container above; ``conversation`` picks one of several (0-based)."""
    try:
        doc = read_json(data)
    except FormatError as exc:
        if b"\n" not in data.strip():
            raise
        return _parse_jsonl(data, conversation, exc)
    if isinstance(doc, dict) and "role" in doc:
        return _parse_jsonl(data, conversation, None)
    return _parse_document(doc, data, conversation)


def parse_all(data: bytes) -> list[Parsed]:
    """Every conversation of a file of several, decoding it once (see ``formats.load_all``)."""
    first = parse(data)
    count = first.meta.get("conversations")
    if not isinstance(count, int) or count < 2:
        return [first]
    state = first.state
    if state["mode"] == "conversations":
        rest = [_parse_document(state["doc"], data, k) for k in range(1, count)]
    else:
        read = jsonl.read_jsonl(data)
        rest = [_parse_jsonl(data, k, None, read) for k in range(1, count)]
    return [first, *rest]


def serialise_all(repaired: list[tuple[list[Message], Parsed]]) -> bytes:
    """The file with every conversation written as repaired (``parse_all``'s, in order)."""
    first = repaired[0][1].state
    if len(repaired) == 1 or first["mode"] not in ("conversations", "jsonl-conversations"):
        messages, original = repaired[0]
        return serialise(messages, original)
    changed = [(m, p) for m, p in repaired if m != p.messages]
    if not changed:
        data: bytes = first["data"]
        if "lines" in first:  # a lost newline: each conversation on its own line
            return jsonl.unglue(data, first["lines"], first["crlf"])
        return data
    if first["mode"] == "conversations":
        out = list(first["doc"])
        for messages, original in changed:
            state = original.state
            wire = _wire_list(messages, state["records"], state.get("response"))
            out[state["index"]] = {**out[state["index"]], state["key"]: wire}
        return dump_like(out, first["data"])
    lines = [r.raw for r in first["lines"]]
    for messages, original in changed:
        state = original.state
        wire = _wire_list(messages, state["records"], state.get("response"))
        old = state["lines"][state["line"]].value
        new = wire if isinstance(old, list) else {**old, state["key"]: wire}
        lines[state["line"]] = dump_line(new, state["crlf"])
    return jsonl.join_lines(lines, first["final_newline"])


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = original.state
    if messages == original.messages:
        data: bytes = state["data"]
        if "lines" in state:
            # A lost newline: each record on its own line, as a repaired file has it
            # (the file's other conversations included, so the records say, not problems).
            return jsonl.unglue(data, state["lines"], state["crlf"])
        return data
    if state["mode"] == "jsonl":
        return _serialise_jsonl(messages, original)
    wire = _wire_list(messages, state["records"], state.get("response"))
    doc = state.get("doc")  # JSON Lines of conversations have no document
    mode = state["mode"]
    if mode == "list":
        out: Any = wire
    elif mode == "body":
        out = {**doc, "messages": wire}
    elif mode == "exchange":
        chosen = state["exchange"]
        out = append_exchange(doc, chosen, {**chosen.request, "messages": wire})
    elif mode == "conversations":
        out = list(doc)
        out[state["index"]] = {**doc[state["index"]], state["key"]: wire}
    else:  # one conversation per JSONL line
        lines = [r.raw for r in state["lines"]]
        line = state["line"]
        old = state["lines"][line].value
        new = wire if isinstance(old, list) else {**old, state["key"]: wire}
        lines[line] = dump_line(new, state["crlf"])
        return jsonl.join_lines(lines, state["final_newline"])
    return dump_like(out, state["data"])


def to_wire(messages: list[Message], *, memo: dict[Any, Any] | None = None) -> dict[str, Any]:
    """A Chat Completions request body (``{"messages": [...]}``) for canonical messages.

    Content parts another provider made (thinking, reasoning, ...) are left
    out; text and images are kept, and a message left with no parts is left
    out (see the module docstring). Arguments become JSON strings.

    ``memo``, a dict kept between calls on histories that share message
    objects (a transcript and its repair), makes each message's part once;
    the bodies then share those parts.
    """
    wire = []
    for message in messages:
        if memo is not None:
            hit = memo.get(id(message))
            if hit is not None:
                if hit[1] is not None:
                    wire.append(hit[1])
                continue
        made: dict[str, Any] | None
        made = _wire_message(public(message), None, native_only=True)
        if made.get("content") == []:
            if not made.get("tool_calls"):
                made = None
            else:
                made["content"] = None
        if memo is not None:
            memo[id(message)] = (message, made)  # holding the message keeps its id unique
        if made is not None:
            wire.append(made)
    return {"messages": wire}


# --- reading ------------------------------------------------------------------------------


def _parse_document(doc: Any, data: bytes, conversation: int | None) -> Parsed:
    state: dict[str, Any] = {"data": data, "doc": doc}
    meta: dict[str, Any] = {}
    response = None
    records: Any  # decoded JSON, until checked to be a list
    if isinstance(doc, list) and doc and _is_conversation(doc[0]):
        key, index, records = _pick_conversation(doc, conversation)
        state |= {"mode": "conversations", "key": key, "index": index}
        meta |= {"container": "conversations", "conversations": len(doc), "conversation": index}
    elif isinstance(doc, list):
        records = doc
        state["mode"] = "list"
    elif isinstance(doc, dict) and (found := exchanges(doc)) is not None:
        chosen = pick_exchange(found, NAME, conversation)
        records = chosen.request.get("messages")
        if not isinstance(records, list):
            raise FormatError("the recorded request has no 'messages' list")
        response, meta = _read_response(chosen)
        meta |= {"container": "exchanges", "exchanges": len(found), "exchange": chosen.index}
        state |= {"mode": "exchange", "exchange": chosen, "response": response}
    elif isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        records = doc["messages"]
        state["mode"] = "body"
    else:
        raise FormatError("no 'messages' list, message list or recorded exchanges found")
    parsed = _read_records(records, list(range(1, len(records) + 1)), state, meta)
    if response is not None:
        message = _canonical_message(response)
        calls = message["metadata"].get("tool_calls") if isinstance(message, dict) else None
        if calls and meta.get("finish_reason") != "length":
            # The recording stops where the client stopped; no result was lost here.
            meta["pending_calls"] = [call["tool_call_id"] for call in calls]
        elif isinstance(message, dict):
            message["metadata"][REC] = RESPONSE_REC
            parsed.messages.append(message)
            parsed.sources.append([len(records) + 1])
            if meta.get("finish_reason") == "length":
                parsed.causes[len(parsed.messages) - 1] = "max_tokens"
    parsed.state["originals"] = by_origin(parsed.messages)
    return parsed


def _read_records(
    records: list[Any], numbers: list[int], state: dict[str, Any], meta: dict[str, Any]
) -> Parsed:
    refuse_others(records, NAME)
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems: list[Problem] = []
    for rec, (number, record) in enumerate(zip(numbers, records, strict=True)):
        if (why := missing_content(record)) is not None:
            raise FormatError(f"record {number}: {why}")
        message = _canonical_message(record)
        if isinstance(message, str):
            problems.append(Problem(number, message))
            continue
        message["metadata"][REC] = rec
        messages.append(message)
        sources.append([number])
    if not messages and records:
        first = problems[0]
        raise FormatError(f"no record is a chat message (record {first.line}: {first.reason})")
    state["records"] = records
    return Parsed(NAME, messages, sources, problems, meta=meta, state=state)


def _parse_jsonl(
    data: bytes,
    conversation: int | None,
    json_error: FormatError | None,
    read: jsonl.JsonlFile | None = None,
) -> Parsed:
    if read is None:
        head = jsonl.head_records(data[:65536], 5)
        if head and not (isinstance(head[0], list) or _is_conversation(head[0])):
            if not (isinstance(head[0], dict) and isinstance(head[0].get("role"), str)):
                # Decide from the first line before decoding a possibly huge file.
                raise FormatError("the first JSON line is not a chat message (no 'role')")
        read = jsonl.read_jsonl(data)
    values = [r for r in read.records if r.ok]
    if not values:
        raise json_error or FormatError("no readable JSON line")
    state: dict[str, Any] = {
        "data": data,
        "lines": read.records,
        "final_newline": read.final_newline,
        "crlf": read.crlf,
    }
    first = values[0].value
    if _is_conversation(first) or isinstance(first, list):
        # One conversation per line: the same rule as a list of conversations.
        rows = [i for i, r in enumerate(read.records) if r.ok]
        index = 0 if conversation is None else conversation
        if not 0 <= index < len(rows):
            raise FormatError(f"the file has {len(rows)} conversations; there is no {index}")
        record = read.records[rows[index]]
        records = record.value if isinstance(record.value, list) else _messages_of(record.value)
        if records is None:  # a later line need not be a conversation as the first is
            raise FormatError(f"conversation {index} has no message list")
        key = (
            "traj"
            if isinstance(record.value, dict) and isinstance(record.value.get("traj"), list)
            else "messages"
        )
        state |= {"mode": "jsonl-conversations", "line": rows[index], "key": key}
        meta = {"container": "jsonl-conversations", "conversations": len(rows)}
        meta["conversation"] = index
        parsed = _read_records(records, list(range(1, len(records) + 1)), state, meta)
        # A glued line is a finding of the conversations written on it (LINE-1), not of all.
        parsed.problems[:0] = [
            p for p in read.problems if p.kind != "glued" or p.line == record.line
        ]
        parsed.state["originals"] = by_origin(parsed.messages)
        return parsed
    if not isinstance(first, dict) or not isinstance(first.get("role"), str):
        raise FormatError("the first JSON line is not a chat message (no 'role')")
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems = list(read.problems)
    special = 0
    for rec, record in enumerate(read.records):
        if not record.ok:
            continue
        value = record.value
        role = value.get("role") if isinstance(value, dict) else None
        if isinstance(role, str) and role.startswith("_"):
            special += 1
            continue
        if (why := missing_content(value)) is not None:
            raise FormatError(f"line {record.line}: {why}")
        message = _canonical_message(value)
        if isinstance(message, str):
            problems.append(Problem(record.line, message, "skipped"))
            continue
        message["metadata"][REC] = rec
        messages.append(message)
        sources.append([record.line])
    if not messages:
        raise FormatError("no line is a chat message")
    shape = list_shape([r.value for r in values])
    if shape not in (None, NAME):
        raise FormatError(f"the lines are written in the {shape} shape, not {NAME}")
    problems.sort(key=lambda p: p.line)
    state |= {"mode": "jsonl", "originals": by_origin(messages)}
    meta = {"container": "jsonl", "special_records": special}
    return Parsed(NAME, messages, sources, problems, meta=meta, state=state)


def _is_conversation(value: Any) -> bool:
    return isinstance(value, dict) and "role" not in value and _messages_of(value) is not None


def _messages_of(value: dict[str, Any]) -> list[Any] | None:
    for key in ("traj", "messages"):
        if isinstance(found := value.get(key), list):
            return found
    return None


def _pick_conversation(doc: list[Any], conversation: int | None) -> tuple[str, int, list[Any]]:
    index = 0 if conversation is None else conversation
    if not 0 <= index < len(doc):
        raise FormatError(f"the file has {len(doc)} conversations; there is no {index}")
    item = doc[index]
    if not isinstance(item, dict):
        raise FormatError(f"conversation {index} is not an object")
    key = "traj" if isinstance(item.get("traj"), list) else "messages"
    if not isinstance(item.get(key), list):
        raise FormatError(f"conversation {index} has no message list")
    return key, index, item[key]


def _read_response(chosen: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The response message of a recorded exchange, and what the UI should know of it."""
    body = chosen.response
    meta: dict[str, Any] = {"response_status": chosen.status}
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        meta["response_error"] = body["error"].get("message")
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, meta
    message = choices[0].get("message")
    meta["finish_reason"] = choices[0].get("finish_reason")
    return (message if isinstance(message, dict) else None), meta


def _canonical_message(record: Any) -> Message | str:
    """The canonical form of one chat message, or why it is not one."""
    if not isinstance(record, dict):
        return f"a message must be an object, not {type(record).__name__}"
    role = _role(record)
    if role is None:
        return f"role {record.get('role')!r} is not a chat role"
    content = record.get("content")
    if content is not None and not isinstance(content, str | list):
        return "content must be text or a list of parts"
    md: dict[str, Any] = {}
    if role == "assistant":
        calls = _canonical_calls(record)
        if isinstance(calls, str):
            return calls
        if calls:
            md["tool_calls"] = calls
    elif role == "tool":
        tid = record.get("tool_call_id", "")
        md["tool_call_id"] = tid if isinstance(tid, str) else str(tid)
        if isinstance(record.get("name"), str):
            md["name"] = record["name"]
    return {"role": role, "content": _canonical_content(content), "metadata": md}


def _role(record: dict[str, Any]) -> str | None:
    role = record.get("role")
    return _ROLES.get(role) if isinstance(role, str) else None


def _canonical_calls(record: dict[str, Any]) -> list[dict[str, Any]] | str:
    calls: list[dict[str, Any]] = []
    raw = record.get("tool_calls")
    if raw is not None and not isinstance(raw, list):
        return "tool_calls must be a list"
    for call in raw or []:
        if not isinstance(call, dict):
            return "a tool call must be an object"
        cid = _wire_id(call)
        if call.get("type") == "custom" and isinstance(call.get("custom"), dict):
            name, arguments = call["custom"].get("name"), {"input": call["custom"].get("input")}
        else:
            function = fn if isinstance(fn := call.get("function"), dict) else {}
            name, arguments = function.get("name"), function.get("arguments", "")
        calls.append({"tool_call_id": str(cid), "name": name, "arguments": arguments})
    legacy = record.get("function_call")
    if isinstance(legacy, dict):
        # The pre-tools API: one call, no id; its answer is a role "function" message.
        calls.append(
            {"tool_call_id": "", "name": legacy.get("name"), "arguments": legacy.get("arguments")}
        )
    return calls


def _wire_id(call: dict[str, Any]) -> Any:
    """The id a call's result answers it under.

    That is ``id``, except in a call that also carries a ``call_id`` (as
    hermes-agent writes them, beside a ``response_item_id``): there, as in
    the Responses API it comes from, ``call_id`` pairs the call with its
    result and ``id`` may be the item's own id.
    """
    paired = call.get("call_id")
    if isinstance(paired, str) and paired:
        return paired
    return call.get("id") or ""


def _canonical_content(content: Any) -> Any:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return [_canonical_part(part) for part in content]


def _canonical_part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if isinstance(url, str):
            return image_part(url)
    return part


# --- writing ------------------------------------------------------------------------------


def _wire_list(
    messages: list[Message],
    records: list[Any],
    response: dict[str, Any] | None,
    make: Callable[[Message, dict[str, Any] | None], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Each message as a chat record, from its source record where it has one.

    ``make`` writes one (``_wire_message`` unless a shape built on this one,
    such as Hermes's, adds its own keys to the records it makes).
    """
    make = make or _wire_message
    out = []
    for message in messages:
        rec = origin(message)
        if rec == RESPONSE_REC:
            template = response
        elif rec is not None and 0 <= rec < len(records) and isinstance(records[rec], dict):
            template = records[rec]
        else:
            template = None
        out.append(make(message, template))
    return out


def _wire_message(
    message: Message, template: dict[str, Any] | None, *, native_only: bool = False
) -> dict[str, Any]:
    """One chat message for ``message``, reusing ``template`` (its source record) where equal."""
    role = message["role"]
    if template is not None:
        if _canonical_message(template) == public(message):
            return template
        if _role(template) != role:
            template = None
    out: dict[str, Any] = dict(template) if template else {}
    wire_role = role
    if template and role == "system":
        wire_role = template["role"]
    out["role"] = wire_role
    md = metadata(message)
    calls = calls_of(message) if role == "assistant" else []
    content = message.get("content")
    # Unchanged text keeps the source's own spelling (null, parts with extra keys).
    if not (template and _canonical_content(template.get("content")) == content):
        if role == "assistant" and calls and not content:
            out["content"] = None
        else:
            out["content"] = _wire_content(content, role, native_only)
    if role == "assistant":
        old = template.get("tool_calls") if template else None
        old = old if isinstance(old, list) else []
        if calls:
            out["tool_calls"] = [
                _wire_call(call, old[i] if i < len(old) else None) for i, call in enumerate(calls)
            ]
            out.pop("function_call", None)
        else:
            out.pop("tool_calls", None)
    elif role == "tool":
        out["tool_call_id"] = call_id(md)
        if isinstance(md.get("name"), str):
            out["name"] = md["name"]
        if template and template.get("role") == "function":
            out["role"] = "tool"
    return out


def _wire_call(call: dict[str, Any], template: Any) -> dict[str, Any]:
    cid = call_id(call)
    arguments = call.get("arguments")
    if (
        isinstance(template, dict)
        and template.get("type") == "custom"
        and isinstance(template.get("custom"), dict)
        and isinstance(arguments, dict)
    ):
        custom = {**template["custom"], "name": call.get("name"), "input": arguments.get("input")}
        return {**template, "id": cid, "custom": custom}
    out = dict(template) if isinstance(template, dict) else {}
    function = dict(out.get("function") or {}) if isinstance(out.get("function"), dict) else {}
    function["name"] = call.get("name")
    function["arguments"] = arguments_string(arguments)
    paired = out.get("call_id")
    if isinstance(paired, str) and paired:
        # Its result answers the call_id (see _wire_id); an id of its own stays.
        if out.get("id") in (None, paired):
            out["id"] = cid
        out["call_id"] = cid
    else:
        out["id"] = cid
    out.setdefault("type", "function")
    out["function"] = function
    return out


def _wire_content(content: Any, role: str, native_only: bool) -> Any:
    if isinstance(content, str) or content is None:
        return content or ""
    if not isinstance(content, list):
        # A value a reader kept as it was written (a tool's number, object or flag, as
        # pydantic-ai's returns may be): the wire's content is text, so it travels as
        # its JSON text, neither lost nor sent as a type the provider refuses.
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS).decode()
    parts = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("text", "")
            if not native_only or isinstance(text, str):
                parts.append({"type": "text", "text": text})
        elif kind == "image" and role == "user":
            url = part.get("url") or f"data:{part.get('media_type')};base64,{part.get('data')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif role == "user" and (
            not native_only or (isinstance(kind, str) and kind in _NATIVE_PARTS)
        ):
            parts.append(part)
    if role in ("tool", "system"):
        # Only text travels in these roles; an image a tool returned is named, not lost.
        texts = [p["text"] for p in parts if p.get("type") == "text" and isinstance(p["text"], str)]
        images = sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image")
        texts += ["[image]"] * images
        return "\n".join(texts)
    return parts


def _serialise_jsonl(
    messages: list[Message],
    original: Parsed,
    make: Callable[[Message, dict[str, Any] | None], dict[str, Any]] | None = None,
) -> bytes:
    """Lines in message order; untouched lines byte for byte (``make`` as ``_wire_list``)."""
    make = make or _wire_message
    state = original.state
    lines = state["lines"]
    originals = state["originals"]
    message_recs = {rec for rec in originals}
    out: list[bytes] = []
    next_extra = 0  # lines before this index that are not messages have been written

    def flush(upto: int) -> None:
        # Bookkeeping lines go back where they stood; unreadable lines (reported when
        # reading) do not, so that the repaired file loads in the tool that wrote it.
        nonlocal next_extra
        while next_extra < upto:
            if next_extra not in message_recs and lines[next_extra].ok:
                out.append(lines[next_extra].raw)
            next_extra += 1

    for message in messages:
        rec = origin(message)
        if rec is not None and rec in originals:
            flush(rec)
            if originals[rec] == [message]:
                out.append(lines[rec].raw)
                continue
            wire = make(message, lines[rec].value)
        else:
            wire = make(message, None)
        out.append(dump_line(wire, state["crlf"]))
    flush(len(lines))
    return jsonl.join_lines(out, state["final_newline"])
