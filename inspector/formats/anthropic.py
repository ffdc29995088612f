"""Anthropic Messages (``tool_use`` / ``tool_result`` content blocks, ``system`` outside the list).

Containers read, and written back in the same container:

- a bare JSON list of messages, or a request body ``{"model", "system",
  "messages", ...}`` (the ``system`` prompt becomes a leading system message);
- a recording of exchanges (``{"interactions": [...]}``, see ``exchanges``);
- a claude-trace capture: JSON Lines of ``{"request", "response"}`` pairs
  (``response.body``, or ``response.body_raw`` holding the event stream).
  The capture mixes Claude Code's main loop with small side requests (quota
  checks, titles) that carry no ``tools``, so the exchange read is the last
  one whose request has ``tools`` (the last one at all if none has);
  ``conversation=k`` picks another (0-based among those). A changed history is
  written as one more line holding the repaired request, every other line
  byte for byte.

For a recorded exchange the response's message is appended to the request's
messages, except when it stops to ask for tool calls (``stop_reason:
tool_use``): the recording ends where the client stopped, not where a result
was lost, so those calls are named in ``meta["pending_calls"]`` instead.

One user message holding ``tool_result`` blocks becomes one canonical tool
message per result (and a user message for the other blocks); writing back
puts them together again. Server tools (``server_tool_use`` with its
``*_tool_result`` in the same assistant message) are content parts, not
calls: the API pairs them itself. A ``server_tool_use`` the response left
without its result (``stop_reason: pause_turn``) is listed in
``meta["paused_server_tools"]`` with the message where its result arrived.

``sources`` are 1-based message numbers in the list; the appended response
counts as the number after the request's last message.

Export (``to_wire``) writes what the Messages API accepts from any canonical
history, without adding events:

- the leading system messages become ``system``; a system message later in
  the history becomes a user text block starting ``[system message]``
  (``role: "system"`` inside ``messages`` is only taken by the newest models,
  after a user turn; every model takes it as user text);
- blocks the API does not define (another provider's reasoning, Gemini
  parts) are left out, and so are text blocks that are empty or only
  whitespace (``text content blocks must contain non-whitespace text``) and
  thinking blocks without their signature (``thinking.signature: Field
  required``: another tool wrote them, and only signed thinking goes back);
- a message left with no content by that is left out, user or assistant
  (``all messages must have non-empty content``): it said nothing the API can
  read. Consecutive messages of one role are allowed (the API joins them);
  results always stay in the message right after their call;
- the final assistant message loses trailing whitespace (the API refuses
  ``final assistant content`` that ends with it: it would be a prefill), and
  its thinking blocks (refused in that place by a request that does not
  enable thinking, as an export does not).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from inspector.engine.canonical import arguments_object
from inspector.engine.providers import ANTHROPIC_THINKING
from inspector.formats import jsonl
from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.detect import Alternatives, opens_json, refuse_others
from inspector.formats.exchanges import read_request, request_body, write_request
from inspector.formats.jsondoc import (
    arguments_dict,
    dump_line,
    read_json,
    system_as_user,
)
from inspector.formats.private import (
    PART,
    REC,
    RESPONSE_REC,
    SYSTEM_REC,
    Message,
    by_origin,
    call_id,
    calls_of,
    metadata,
    origin,
    public,
    turns,
)
from inspector.formats.runs import join_runs, split_runs

NAME = "anthropic"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Anthropic Messages"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 30

# Block types the Messages API itself defines; anything else came from another provider.
_NATIVE = frozenset(
    {
        "text",
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "search_result",
        "container_upload",
        "mcp_tool_use",
    }
)

_STRONG = Alternatives(
    rb'"type"\s*:\s*"(tool_use|tool_result|thinking|server_tool_use)"',
    rb'"stop_reason"\s*:',
    rb"api\.anthropic\.com",
    rb"/v1/messages",
    rb'"max_tokens"\s*:',
)
_ROLE = Alternatives(rb'"role"\s*:\s*"(user|assistant)"')
_OTHER = Alternatives(
    rb'"tool_calls"\s*:', rb'"role"\s*:\s*"tool"', rb'"functionCall"', rb'"function_call"'
)


def sniff(head: bytes) -> float:
    if not opens_json(head):
        return 0.0
    if b'"request"' in head[:200] and _STRONG.search(head):
        return 0.85  # claude-trace
    if _STRONG.search(head):
        return 0.45 if _OTHER.search(head) else 0.75
    return 0.25 if _ROLE.search(head) else 0.0


def parse(data: bytes, *, conversation: int | None = None) -> Parsed:
    """Read any container above; ``conversation`` picks another exchange (0-based)."""
    try:
        doc = read_json(data)
    except FormatError:
        if b"\n" not in data.strip():
            raise
        return _parse_trace(data, conversation)
    if isinstance(doc, dict) and "request" in doc and "response" in doc:
        return _parse_trace(data, conversation)
    request = read_request(
        doc,
        data,
        NAME,
        "messages",
        conversation,
        refused="no 'messages' list, message list or recorded exchanges found",
    )
    state, meta, body = request.state, request.meta, request.body
    response = None
    if state["mode"] == "exchange":
        response = _response_message(request.response, meta)
    state["body"] = body
    return _read(request.items, body.get("system"), response, state, meta)


def parse_all(data: bytes) -> list[Parsed]:
    """Every conversation of a claude-trace capture, reading it once (``formats.load_all``)."""
    first = parse(data)
    keys = first.meta.get("conversation_keys")
    if first.state["mode"] != "trace" or not isinstance(keys, list) or len(keys) < 2:
        return [first]
    read = jsonl.read_jsonl(data)
    chosen = first.meta["exchange"]
    return [first if key == chosen else _parse_trace(data, key, read) for key in keys]


def serialise_all(repaired: list[tuple[list[Message], Parsed]]) -> bytes:
    """The capture with one more line for each conversation whose history changed."""
    if len(repaired) == 1 or repaired[0][1].state["mode"] != "trace":
        messages, original = repaired[0]
        return serialise(messages, original)
    first = repaired[0][1].state
    lines = [record.raw for record in first["lines"]]
    added = 0
    for messages, original in repaired:
        if messages == original.messages:
            continue
        lines.append(dump_line({"request": _repaired_request(messages, original)}, first["crlf"]))
        added += 1
    return jsonl.join_lines(lines, True) if added else first["data"]


def _repaired_request(messages: list[Message], original: Parsed) -> dict[str, Any]:
    state = original.state
    system, wire = _wire(messages, state, native_only=False)
    body = request_body(state, "messages", wire, system=system)
    return {**state["line"].value["request"], "body": body}


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = original.state
    if messages == original.messages:
        return jsonl.as_read(original)
    if state["mode"] != "trace":
        system, wire = _wire(messages, state, native_only=False)
        return write_request(state, "messages", wire, system=system)
    # claude-trace: one more line with the repaired request; the capture stays as it was.
    lines = [record.raw for record in state["lines"]]
    lines.append(dump_line({"request": _repaired_request(messages, original)}, state["crlf"]))
    return jsonl.join_lines(lines, True)


def to_wire(messages: list[Message], *, memo: dict[Any, Any] | None = None) -> dict[str, Any]:
    """A Messages request body (``{"system"?, "messages"}``) for canonical messages.

    Consecutive messages of one role share a message, tool results lead the
    user message after their call, arguments become ``input`` objects, and
    content parts another provider made (reasoning items, Gemini parts),
    blank text blocks and messages left empty by that are left out (see the
    module docstring). Ids are written as they are: mapping ids the API
    rejects is ``inspector.formats.export_wire``'s job.

    ``memo``, a dict kept between calls on histories that share message
    objects (a transcript and its repair), makes each message's part once;
    the bodies then share those parts.
    """
    if memo is None:
        clean = [public(m) for m in messages]
        lead = 0
        while lead < len(clean) and clean[lead]["role"] == "system":
            lead += 1
        clean[lead:] = [system_as_user(m) if m["role"] == "system" else m for m in clean[lead:]]
        system, wire = _wire(clean, None, native_only=True)
    else:
        system, wire = _wire_memo(messages, memo)
    body: dict[str, Any] = {}
    if system is not None and _has_text(system):
        body["system"] = system
    if wire and wire[-1]["role"] == "assistant":
        wire[-1] = _final_reply(wire[-1])
    body["messages"] = wire
    return body


def _has_text(content: Any) -> bool:
    """Whether ``content`` (a string or blocks) holds anything but whitespace."""
    if isinstance(content, str):
        return bool(content.strip())
    return bool(content)


def _final_reply(message: dict[str, Any]) -> dict[str, Any]:
    """The final assistant message as the API takes it there (as a prefill): without its
    thinking blocks, which it refuses in that place when the request does not enable
    thinking (an export does not), and its last text without trailing whitespace."""
    content = message["content"]
    if isinstance(content, str):
        return {**message, "content": content.rstrip()}
    if any(isinstance(b, dict) and b.get("type") in ANTHROPIC_THINKING for b in content):
        content = [
            b for b in content if not (isinstance(b, dict) and b.get("type") in ANTHROPIC_THINKING)
        ]
        message = {**message, "content": content}
    if content and isinstance(content[-1], dict) and content[-1].get("type") == "text":
        last = {**content[-1], "text": content[-1]["text"].rstrip()}
        return {**message, "content": [*content[:-1], last]}
    return message


# --- reading ------------------------------------------------------------------------------


def _read(
    records: list[Any],
    system: Any,
    response: dict[str, Any] | None,
    state: dict[str, Any],
    meta: dict[str, Any],
) -> Parsed:
    refuse_others(records, NAME)
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems: list[Problem] = []
    names: dict[str, Any] = {}
    if system is not None:
        content = _canonical_content(system) if isinstance(system, list) else system
        if not isinstance(content, str | list):
            raise FormatError("'system' must be text or a list of text blocks")
        messages.append({"role": "system", "content": content, "metadata": {REC: SYSTEM_REC}})
        sources.append([0])
    for rec, record in enumerate(records):
        made = _canonical_messages(record, rec, names)
        if isinstance(made, str):
            problems.append(Problem(rec + 1, made))
            continue
        messages.extend(made)
        sources.extend([rec + 1] for _ in made)
    if not any(m["role"] != "system" for m in messages):
        reason = problems[0].reason if problems else "no messages"
        raise FormatError(f"no record is a Messages API message (record 1: {reason})")
    if (elsewhere := _answered_elsewhere(messages)) is not None:
        raise FormatError(elsewhere)
    causes: dict[int, str] = {}
    if response is not None:
        stop_reason = meta.get("stop_reason")
        pending = [
            b.get("id")
            for b in response["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        if pending and stop_reason == "tool_use":
            meta["pending_calls"] = pending
            response = None
        else:
            made = _canonical_messages(response, RESPONSE_REC, names)
            if isinstance(made, list):
                messages.extend(made)
                sources.extend([len(records) + 1] for _ in made)
                cause = _CAUSES.get(stop_reason) if isinstance(stop_reason, str) else None
                if meta.get("stream_complete") is False:
                    cause = "stream_ended"
                if cause:
                    causes[len(messages) - 1] = cause
    state |= {"records": records, "system": system, "response": response}
    state["originals"] = by_origin(messages)
    # The API combines consecutive assistant messages into one turn: read them so.
    messages, sources, causes = join_runs(messages, sources, causes)
    paused = _paused_server_tools(messages)
    if paused:
        meta["paused_server_tools"] = paused
    return Parsed(NAME, messages, sources, problems, causes=causes, meta=meta, state=state)


_CAUSES = {"max_tokens": "max_tokens", "model_context_window_exceeded": "max_tokens"}

# How an agent that answers its tools in plain text starts the answer: Cline and Roo
# Code write "[read_file for 'src/a.ts'] Result:" as the next user message's text.
# The bracket holds the call's arguments as text, which may hold brackets and newlines.
_TEXT_ANSWER = re.compile(r"\[.{1,2000}?\] Result:", re.DOTALL)


def _answered_elsewhere(messages: list[Message]) -> str | None:
    """Why this is another agent's history in the Messages shape, or ``None``.

    In the Messages API a call is answered by a ``tool_result``. A history of
    calls with not one ``tool_result`` anywhere, whose calls are followed by
    user messages that answer them in text, or by user messages at all more
    than once, answers its tools some other way: read as Anthropic, each call
    would be dangling and a repair would invent a result for every one.
    """
    if any(m["role"] == "tool" for m in messages):
        return None
    calls = followed = in_text = 0
    for index, message in enumerate(messages):
        count = len(message["metadata"].get("tool_calls") or ())
        if not count:
            continue
        calls += count
        after = messages[index + 1] if index + 1 < len(messages) else None
        if after is None or after["role"] != "user":
            continue
        followed += 1
        answers = sum(1 for text in _texts(after["content"]) if _TEXT_ANSWER.match(text))
        in_text += min(answers, count)
    if in_text:
        how = (
            f"{in_text} of them are answered in plain text in the next user message"
            " ('[tool] Result:', as Cline and Roo Code write them)"
        )
    elif followed > 1:
        how = f"the conversation goes on after {followed} of the turns that make them"
    else:
        return None
    return (
        f"{calls} tool_use blocks and not one tool_result, yet {how}: the tools are answered"
        " some other way, so this is not an Anthropic Messages history (read as one, a"
        " repair would invent a result for every call); nothing was read"
    )


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [
        part["text"]
        for part in (content if isinstance(content, list) else ())
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]


def _canonical_messages(record: Any, rec: int, names: dict[str, Any]) -> list[Message] | str:
    """The canonical messages one API message becomes, or why it is not one.

    ``names`` maps each call id seen so far to its tool name, so results can
    carry the name the format itself leaves out (Gemini needs it on export).
    """
    if not isinstance(record, dict):
        return f"a message must be an object, not {type(record).__name__}"
    role = record.get("role")
    if role not in ("user", "assistant", "system"):
        return f"role {role!r} is not a Messages API role"
    content = record.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content, "metadata": {REC: rec, PART: 0}}]
    if not isinstance(content, list):
        return "content must be text or a list of blocks"
    if role != "user":
        parts: list[Any] = []
        calls: list[dict[str, Any]] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use" and role == "assistant":
                cid = block.get("id") or ""
                names[str(cid)] = block.get("name")
                calls.append(
                    {
                        "tool_call_id": str(cid),
                        "name": block.get("name"),
                        "arguments": block.get("input"),
                    }
                )
            else:
                parts.append(_canonical_block(block))
        md: dict[str, Any] = {"tool_calls": calls} if calls else {}
        md |= {REC: rec, PART: 0}
        return [{"role": role, "content": parts if parts or not calls else "", "metadata": md}]
    out: list[Message] = []
    run: list[Any] = []
    start = 0
    for index, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            if run:
                out.append({"role": "user", "content": run, "metadata": {REC: rec, PART: start}})
                run = []
            rid = str(block.get("tool_use_id") or "")
            md = {"tool_call_id": rid}
            if isinstance(names.get(rid), str):
                md["name"] = names[rid]
            if block.get("is_error") is True:
                md["is_error"] = True
            md |= {REC: rec, PART: index}
            out.append({"role": "tool", "content": _result_content(block), "metadata": md})
        else:
            if not run:
                start = index
            run.append(_canonical_block(block))
    if run or not out:
        out.append({"role": "user", "content": run, "metadata": {REC: rec, PART: start}})
    return out


def _canonical_block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if kind == "image" and isinstance(block.get("source"), dict):
        return source_part(block["source"]) or block
    return block


def _canonical_content(content: Any) -> Any:
    if isinstance(content, list):
        return [_canonical_block(block) for block in content]
    return content


def _result_content(block: dict[str, Any]) -> Any:
    content = block.get("content")
    if content is None:
        return ""
    if isinstance(content, str | list):
        return _canonical_content(content)
    # A number, a boolean or an object, as some tools return it: its JSON as text.
    return orjson.dumps(content).decode()


def _paused_server_tools(messages: list[Message]) -> list[dict[str, Any]]:
    """Server tool calls whose result is not in their own message (``pause_turn``)."""
    paused = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant" or not isinstance(message["content"], list):
            continue
        blocks = [b for b in message["content"] if isinstance(b, dict)]
        answered = [b.get("tool_use_id") for b in blocks if "tool_use_id" in b]
        for block in blocks:
            if block.get("type") == "server_tool_use" and block.get("id") not in answered:
                paused.append(
                    {
                        "message": index,
                        "id": block.get("id"),
                        "name": block.get("name"),
                        "result_in": _result_message(messages, index + 1, block.get("id")),
                    }
                )
    return paused


def _result_message(messages: list[Message], start: int, sid: Any) -> int | None:
    for index in range(start, len(messages)):
        content = messages[index]["content"]
        if messages[index]["role"] == "assistant" and isinstance(content, list):
            if any(isinstance(b, dict) and b.get("tool_use_id") == sid for b in content):
                return index
    return None


def _response_message(body: Any, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The assistant message of a recorded response body (JSON or event stream)."""
    if isinstance(body, dict) and isinstance(body.get("string"), str):
        body = body["string"]
    if isinstance(body, str):
        if body.lstrip().startswith("{"):
            try:
                body = orjson.loads(body)
            except orjson.JSONDecodeError:
                meta["response_error"] = body[:500]
                return None
        else:
            return _assemble_stream(body, meta)
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("error"), dict):
        meta["response_error"] = body["error"].get("message")
        return None
    if body.get("role") != "assistant" or not isinstance(body.get("content"), list):
        return None
    meta["stop_reason"] = body.get("stop_reason")
    # Only what a request's message can hold; ids, usage and stop reasons stay in the recording.
    return {"role": "assistant", "content": body["content"]}


def _assemble_stream(text: str, meta: dict[str, Any]) -> dict[str, Any] | None:
    """Rebuild the message a Messages event stream carried; note it if the stream was cut."""
    message: dict[str, Any] | None = None
    partial: dict[int, str] = {}
    complete = False
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = orjson.loads(line[5:])
        except orjson.JSONDecodeError:
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = {**event["message"], "content": []}
        elif message is None:
            continue
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            message["content"].append(block)
        elif kind == "content_block_delta" and message["content"]:
            _apply_delta(message["content"][-1], event.get("delta") or {}, partial, event)
        elif kind == "content_block_stop":
            index = event.get("index", len(message["content"]) - 1)
            if index in partial and 0 <= index < len(message["content"]):
                message["content"][index]["input"] = arguments_object(partial.pop(index))
        elif kind == "message_delta":
            message.update({k: v for k, v in (event.get("delta") or {}).items()})
        elif kind == "message_stop":
            complete = True
        elif kind == "error":
            meta["response_error"] = (event.get("error") or {}).get("message")
    if message is None:
        return None
    for index, raw in partial.items():
        # A block the stream never closed keeps its arguments as the cut string.
        if 0 <= index < len(message["content"]):
            message["content"][index]["input"] = raw
    meta["stop_reason"] = message.get("stop_reason")
    if not complete:
        meta["stream_complete"] = False
    return {"role": "assistant", "content": message["content"]}


def _apply_delta(
    block: dict[str, Any], delta: dict[str, Any], partial: dict[int, str], event: dict[str, Any]
) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + delta.get("text", "")
    elif kind == "input_json_delta":
        index = event.get("index", 0)
        partial[index] = partial.get(index, "") + delta.get("partial_json", "")
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature")
    elif kind == "citations_delta":
        block.setdefault("citations", []).append(delta.get("citation"))


def _parse_trace(
    data: bytes, conversation: int | None, read: jsonl.JsonlFile | None = None
) -> Parsed:
    if read is None:
        head = jsonl.head_records(data[:65536], 5)
        if head and not any(isinstance(value, dict) and "request" in value for value in head):
            # Decide from the first lines before decoding a possibly huge file.
            raise FormatError("not a claude-trace capture (no 'request' in the first lines)")
        read = jsonl.read_jsonl(data)
    pairs = [
        r
        for r in read.records
        if r.ok
        and isinstance(r.value, dict)
        and isinstance(r.value.get("request"), dict)
        and isinstance(r.value["request"].get("body"), dict)
        and isinstance(r.value["request"]["body"].get("messages"), list)
    ]
    if not pairs:
        raise FormatError("no line is a recorded Messages API request")
    pool = [r for r in pairs if "tools" in r.value["request"]["body"]] or pairs
    index = len(pool) - 1 if conversation is None else conversation
    if not 0 <= index < len(pool):
        raise FormatError(f"the capture has {len(pool)} main-loop requests; there is no {index}")
    chosen = pool[index]
    body = chosen.value["request"]["body"]
    meta: dict[str, Any] = {
        "container": "claude-trace",
        "exchanges": len(pool),
        "exchange": index,
        "line": chosen.line,
    }
    lasts = _conversation_ends(pool)
    if len(lasts) > 1:
        # Several conversations in one capture (the main loop, each subagent's):
        # each is read at its last exchange, ``conversation=`` taking that index.
        meta["conversations"] = len(lasts)
        meta["conversation_keys"] = lasts
    response = chosen.value.get("response")
    message = None
    if isinstance(response, dict):
        meta["response_status"] = response.get("status_code")
        raw = response.get("body")
        if raw is None and isinstance(response.get("body_raw"), str):
            raw = response["body_raw"]
        message = _response_message(raw, meta)
    state: dict[str, Any] = {
        "data": data,
        "mode": "trace",
        "lines": read.records,
        "line": chosen,
        "body": body,
        "crlf": read.crlf,
    }
    parsed = _read(body["messages"], body.get("system"), message, state, meta)
    paired = {id(r) for r in pairs}
    others = [
        Problem(r.line, "not a recorded Messages API request and response", "skipped")
        for r in read.records
        if r.ok and id(r) not in paired
    ]
    parsed.problems[:0] = sorted([*read.problems, *others], key=lambda p: p.line)
    return parsed


def _conversation_ends(pool: list[Any]) -> list[int]:
    """The index of each conversation's last exchange, in the order the conversations began.

    Every request of one conversation repeats its beginning: the same system
    prompt and the same first message. Requests that begin differently are
    another conversation (a subagent's, or one started after compaction).
    Claude Code moves its ``cache_control`` marks from request to request, so
    they do not count.
    """
    last: dict[bytes, int] = {}
    for index, record in enumerate(pool):
        body = record.value["request"]["body"]
        messages = body["messages"]
        first = messages[0] if messages else None
        beginning = _without_cache_marks([body.get("system"), first])
        key = orjson.dumps(beginning, option=orjson.OPT_SORT_KEYS)
        last[key] = index  # dicts keep the order keys were first added
    return list(last.values())


def _without_cache_marks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_marks(v) for v in value]
    return value


# --- writing ------------------------------------------------------------------------------


def _wire(
    messages: list[Message], state: dict[str, Any] | None, *, native_only: bool
) -> tuple[Any, list[dict[str, Any]]]:
    """The ``system`` value and the message list for canonical ``messages``.

    Messages one source record was split into are joined again; a record
    whose messages are all untouched is written back as it was read.
    """
    records = state["records"] if state else []
    originals = state["originals"] if state else {}
    if state:
        messages = split_runs(messages)  # each record's own messages again
    start = 0
    while start < len(messages) and messages[start]["role"] == "system":
        start += 1
    system = _wire_system(messages[:start], state)
    wire = []
    for role, rec, members in _groups(messages[start:], by_record=True):
        if state and rec is not None and originals.get(rec) == members:
            wire.append(state["response"] if rec == RESPONSE_REC else records[rec])
            continue
        template = None
        if state and rec == RESPONSE_REC:
            template = state["response"]
        elif rec is not None and 0 <= rec < len(records) and isinstance(records[rec], dict):
            template = records[rec]
        made = _wire_group(role, members, template, rec, native_only)
        if native_only and made["content"] in ("", []):
            continue  # an empty turn says nothing, and the API refuses it
        wire.append(made)
    return system, wire


def _groups(
    messages: list[Message], *, by_record: bool
) -> list[tuple[str, int | None, list[Message]]]:
    """Anthropic's messages as they go out: (role, source record, canonical members) each.

    The one grouping rule of this shape, for writing a file back and for a
    request body alike. Consecutive messages of one side share a message (the
    API merges them anyway, and a tool result must lead the user message
    after its call): an assistant run is one message; results and the
    messages of their side after them are one user message, and a user's own
    text starts a new one unless results lead it (so a note the repair added
    joins the results before it, never a user's text). With ``by_record``
    (writing a file back), messages read from one record stay that record's
    and messages of two records stay apart; without (a request body, whose
    messages may still carry the private record keys), a later system
    message goes as user text (``system_as_user``) and joins as one.
    ``_skeleton._anthropic`` writes the same grouping from digests.
    """

    def side(message: Message) -> str:
        role = message["role"]
        if role == "system" and not by_record:
            return "user"  # a later system message goes as user text (``system_as_user``)
        return "user" if role in ("user", "tool") else role

    def user_text(message: Message) -> bool:
        return message["role"] == "user" or (message["role"] == "system" and not by_record)

    return turns(messages, side, by_record=by_record, user_text=user_text)


def _wire_memo(messages: list[Message], memo: dict[Any, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """``to_wire``'s system and messages, each message group made once per ``memo``.

    This is ``_wire`` with no state: nothing is reused from a source file
    and no message has a ``_rec`` once private keys are stripped, so a group
    is a run of messages of one side, where a user's text (or a later system
    message, sent as user text) joins only a group holding results. What a
    group becomes depends on its messages alone: the memo keeps it under
    their ids and holds them, so that the ids stay unique while they key it.
    A message is stripped of private keys only when its group is made.
    """
    lead = 0
    while lead < len(messages) and messages[lead]["role"] == "system":
        lead += 1
    system = _wire_system([public(m) for m in messages[:lead]], None)
    wire: list[dict[str, Any]] = []

    def add_group(role: str, members: list[Message]) -> None:
        key = id(members[0]) if len(members) == 1 else tuple(map(id, members))
        hit = memo.get(key)
        if hit is None:
            clean = [
                system_as_user(public(m)) if m["role"] == "system" else public(m) for m in members
            ]
            hit = memo[key] = (members, _wire_group(role, clean, None, None, True))
        if hit[1]["content"] not in ("", []):  # an empty turn says nothing, and is refused
            wire.append(hit[1])

    for role, _, members in _groups(messages[lead:], by_record=False):
        add_group(role, members)
    return system, wire


def _wire_system(systems: list[Message], state: dict[str, Any] | None) -> Any:
    if not systems:
        return None
    if (
        state
        and [origin(m) for m in systems] == [SYSTEM_REC]
        and state["originals"].get(SYSTEM_REC) == systems
    ):
        return state["system"]
    if len(systems) == 1 and isinstance(systems[0]["content"], str):
        return systems[0]["content"]
    blocks: list[Any] = []
    for message in systems:
        blocks.extend(wire_blocks(message["content"], True))
    return blocks


def _wire_group(
    role: str,
    members: list[Message],
    template: dict[str, Any] | None,
    rec: int | None,
    native_only: bool,
) -> dict[str, Any]:
    out: dict[str, Any] = dict(template) if template and template.get("role") == role else {}
    out["role"] = role
    only = members[0]
    if len(members) == 1 and only["role"] != "tool" and isinstance(only["content"], str):
        if not calls_of(only) and (only["content"].strip() or not native_only):
            out["content"] = only["content"]  # a plain text message stays plain text
            return out
    blocks: list[Any] = []
    source = template.get("content") if template else None
    source = source if isinstance(source, list) else []
    for message in members:
        same = origin(message) == rec and rec is not None
        part = metadata(message).get(PART, 0) if same else None
        if message["role"] == "tool":
            old = source[part] if isinstance(part, int) and 0 <= part < len(source) else None
            blocks.append(_wire_result(message, old))
        elif message["role"] == "assistant":
            blocks.extend(_wire_assistant(message, source if same else [], native_only))
        else:
            count = len(message["content"]) if isinstance(message["content"], list) else 0
            old_blocks = source[part : part + count] if isinstance(part, int) else []
            if old_blocks and _canonical_content(old_blocks) == message["content"]:
                blocks.extend(old_blocks)
            else:
                blocks.extend(wire_blocks(message["content"], native_only))
    out["content"] = blocks
    return out


def _wire_result(message: Message, old: Any) -> dict[str, Any]:
    md = metadata(message)
    block = dict(old) if isinstance(old, dict) and old.get("type") == "tool_result" else {}
    block["type"] = "tool_result"
    block["tool_use_id"] = call_id(md)
    content = message["content"]
    if not (old and _result_content(block) == content):
        block["content"] = content if isinstance(content, str) else wire_blocks(content, True)
    if md.get("healed") or md.get("is_error"):
        block["is_error"] = True
    return block


def _wire_assistant(message: Message, source: list[Any], native_only: bool) -> list[Any]:
    """The blocks of an assistant message; the source's block order kept where it can be."""
    calls = calls_of(message)
    content = message["content"]
    kept = [b for b in source if not (isinstance(b, dict) and b.get("type") == "tool_use")]
    if source and _canonical_content(kept) == (content if isinstance(content, list) else []):
        # Only calls changed (renamed, or a cut one removed): keep every other block as is.
        blocks: list[Any] = []
        pending = list(calls)
        for block in source:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                if pending:
                    blocks.append(_tool_use(pending.pop(0), block))
            else:
                blocks.append(block)
        return blocks + [_tool_use(call, None) for call in pending]
    old_uses = [b for b in source if isinstance(b, dict) and b.get("type") == "tool_use"]
    blocks = wire_blocks(content, native_only) if content else []
    for index, call in enumerate(calls):
        old = old_uses[index] if index < len(old_uses) else None
        blocks.append(_tool_use(call, old, native_only))
    return blocks


def _tool_use(
    call: dict[str, Any], old: dict[str, Any] | None, native_only: bool = False
) -> dict[str, Any]:
    block: dict[str, Any] = dict(old) if old else {"type": "tool_use"}
    block["id"] = call_id(call)
    block["name"] = call.get("name")
    arguments = call.get("arguments")
    if native_only:
        block["input"] = arguments_dict(arguments)
    else:  # writing back to the source: what it held, even if the API would refuse it
        block["input"] = {} if arguments is None else arguments_object(arguments)
    return block


def _native(kind: str) -> bool:
    return kind in _NATIVE or kind.endswith("_tool_result")


def wire_blocks(content: Any, native_only: bool) -> list[Any]:
    """Canonical content as Anthropic blocks: text, images (``image_block``) and the
    blocks another shape kept as they are; with ``native_only`` (a request body),
    only what the API takes (no blank text, no other provider's parts). Cline's
    writer uses it too."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() or not native_only else []
    blocks: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("text", "")
            if not native_only or (isinstance(text, str) and text.strip()):
                blocks.append({"type": "text", "text": text})
        elif kind == "image" and "source" not in part:
            blocks.append(image_block(part))
        elif not native_only or (isinstance(kind, str) and _native(kind) and sendable_block(part)):
            blocks.append(part)
    return blocks


def source_part(source: dict[str, Any]) -> dict[str, Any] | None:
    """An image block's ``source`` as a canonical image part (``image_block`` the other
    way), or ``None`` for a source that is neither base64 data nor a URL (the block is
    then kept as it is). The shapes that read Anthropic content (this module, Claude Code)
    use it."""
    if source.get("type") == "base64":
        return {"type": "image", "media_type": source.get("media_type"), "data": source.get("data")}
    if source.get("type") == "url":
        return {"type": "image", "url": source.get("url")}
    return None


def image_block(part: dict[str, Any]) -> dict[str, Any]:
    """A canonical image part (``url``, or ``media_type`` and ``data``) as an Anthropic block.

    Every shape that writes Anthropic content (this module, Claude Code, Cline) uses it.
    """
    if part.get("url"):
        return {"type": "image", "source": {"type": "url", "url": part["url"]}}
    source = {"type": "base64", "media_type": part.get("media_type"), "data": part.get("data")}
    return {"type": "image", "source": source}


def sendable_block(block: dict[str, Any]) -> bool:
    """Whether a block has what the API requires of its kind: a thinking block its text and
    signature (one another tool wrote without a signature cannot be sent back), a
    redacted one its data."""
    kind = block.get("type")
    if kind == "thinking":
        return isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
    if kind == "redacted_thinking":
        return isinstance(block.get("data"), str)
    return True
