"""Gemini ``contents`` (``functionCall`` / ``functionResponse`` parts) and Gemini CLI sessions.

Containers read, and written back in the same container:

- a bare JSON list of contents, or a request body ``{"contents",
  "systemInstruction", ...}`` (the system instruction becomes a leading
  system message);
- a recording of exchanges (``{"interactions": [...]}``, see ``exchanges``):
  the last request's contents plus the response's candidate content (a JSON
  body or a ``data:`` event stream), except when the response stops to ask
  for function calls (then they are named in ``meta["pending_calls"]``);
- a Gemini CLI session: JSON ``{"sessionId", "messages": [...]}`` or JSON
  Lines (a header line, then one record per line) with ``user`` and
  ``gemini`` records; a ``gemini`` record's ``toolCalls`` carry their own
  ``result`` parts, which become tool messages after it. ``info``,
  ``warning`` and ``error`` records are kept for the round trip, not sent;
  an unreadable line is a ``Problem`` and stays out of a repaired file.

Most Gemini histories carry no call ids: Gemini pairs a response with a call
by order and name within the turn right before it. Reading does the same
and gives both the same made-up id, ``call_{turn}_{part}`` (the call's
content index and part index), so repair sees the pair. Those ids are listed
in ``state["synthetic_ids"]`` and never written back.

A user turn holding ``functionResponse`` parts becomes one tool message per
response (and a user message for its other parts); writing back joins them.
Parts that are neither text, images nor calls (thoughts, executable code)
become ``{"type": "gemini", "part": {...}}`` content parts. The
``thoughtSignature`` of a ``functionCall`` or text part is kept on its
canonical call or text part as ``thought_signature`` (public, so canonical
downloads keep it), and goes out on that call's or text's part again, in the
export and in the repaired file: Gemini 3 refuses the current turn's calls
without it. A signature is only ever the one a part was read with.

``sources`` are 1-based content (or record, or line) numbers.

Export (``to_wire``) writes what generateContent accepts from any canonical
history, without adding events:

- leading system messages become ``systemInstruction``; a later one becomes
  user text starting ``[system message]`` (``contents`` has no system role);
- turns alternate: consecutive messages of one side share a turn, so tool
  results and the user text after them form one user turn, and a function
  call turn always follows a user turn;
- parts the API does not take (another provider's reasoning, empty text
  that carries no signature, a call or response part reading could not
  pair) are left out, and a turn
  left without parts is dropped (``contents.parts must not be empty``), its
  neighbours joined;
- a history that starts with a function call turn gets a user turn first
  saying the earlier turns are missing (Gemini refuses a call turn with no
  user turn before it).
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from inspector.engine.canonical import arguments_object, json_object
from inspector.formats import jsonl
from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.detect import Alternatives, opens_json, refuse_others
from inspector.formats.exchanges import read_request, write_request
from inspector.formats.jsondoc import (
    SYSTEM_NOTE,
    arguments_dict,
    dump_like,
    dump_line,
    read_json,
    text_of,
)
from inspector.formats.private import (
    PART,
    REC,
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

NAME = "gemini"
PROVIDER = "gemini"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Gemini contents"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 50

# The key a canonical call or text part keeps the ``thoughtSignature`` of its part under.
SIGNATURE = "thought_signature"

_STRONG = Alternatives(
    rb'"functionCall"\s*:',
    rb'"functionResponse"\s*:',
    rb'"role"\s*:\s*"model"',
    rb'"contents"\s*:',
    rb'"systemInstruction"\s*:',
    rb"generateContent",
)
# Gemini CLI records that are shown to the user but never sent to the model.
_CLI_NOTICES = ("info", "warning", "error")
_CLI = Alternatives(rb'"type"\s*:\s*"gemini"', rb'"projectHash"\s*:')


def sniff(head: bytes) -> float:
    if not opens_json(head):
        return 0.0
    if _CLI.search(head) and b'"sessionId"' in head:
        return 0.9
    if _STRONG.search(head):
        return 0.8 if b'"parts"' in head else 0.5
    return 0.0


def parse(data: bytes, *, conversation: int | None = None) -> Parsed:
    """Read any container above; ``conversation`` picks another exchange (0-based)."""
    try:
        doc = read_json(data)
    except FormatError:
        if b"\n" not in data.strip():
            raise
        return _parse_cli_lines(data)
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list) and _is_cli(doc):
        return _parse_cli(doc["messages"], {"data": data, "doc": doc, "mode": "cli"}, None)
    request = read_request(
        doc,
        data,
        NAME,
        "contents",
        conversation,
        refused="no 'contents' list, Gemini CLI session or recorded exchanges found",
    )
    state, meta, body, contents = request.state, request.meta, request.body, request.items
    response: dict[str, Any] | None = None
    if state["mode"] == "exchange":
        response = _response_content(request.response, meta)
    refuse_others(contents, NAME, "contents")
    if response is not None:
        calls = [
            p
            for p in response.get("parts", [])
            if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)
        ]
        if calls and meta.get("finish_reason") in ("STOP", None) and not meta.get("cut"):
            meta["pending_calls"] = [
                p["functionCall"].get("id") or p["functionCall"].get("name") for p in calls
            ]
            response = None
    records = contents + ([response] if response is not None else [])
    synthetic: set[str] = set()
    messages, sources, problems = _read_contents(records, synthetic)
    if not any(m["role"] != "system" for m in messages):
        raise FormatError("no content is a Gemini turn with parts")
    system = body.get("systemInstruction")
    if system is not None:
        messages.insert(0, _system_message(system))
        sources.insert(0, [0])
    causes: dict[int, str] = {}
    if response is not None and meta.get("cut"):
        causes[len(messages) - 1] = meta["cut"]
    state |= {
        "body": body,
        "records": records,
        "system": system,
        "synthetic_ids": synthetic,
        "originals": by_origin(messages),
    }
    # Gemini takes consecutive model turns as one: read them so.
    messages, sources, causes = join_runs(messages, sources, causes)
    if synthetic:
        meta["synthetic_ids"] = len(synthetic)
    return Parsed(NAME, messages, sources, problems, causes=causes, meta=meta, state=state)


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = original.state
    if messages == original.messages:
        return jsonl.as_read(original)
    mode = state["mode"]
    if mode in ("cli", "cli-lines"):
        return _serialise_cli(messages, state)
    system, contents = _wire(messages, state, native_only=False)
    return write_request(state, "contents", contents, systemInstruction=system)


def to_wire(messages: list[Message], *, memo: dict[Any, Any] | None = None) -> dict[str, Any]:
    """A generateContent request body (``{"systemInstruction"?, "contents"}``).

    Turns alternate: consecutive messages of one side share a turn (results
    and the notes after them form one user turn). A system message after the
    first turn has no place in ``contents``; it becomes a user turn whose text
    starts ``[system message]``. A history that starts with a function call
    turn gets a user turn first saying the earlier turns are not in the
    transcript, because Gemini refuses a call turn with no user turn before
    it. Calls and responses carry their ids.

    ``memo``, a dict kept between calls on histories that share message
    objects (a transcript and its repair), makes each message's part once;
    the bodies then share those parts.
    """
    if memo is None:
        system, contents = _wire([public(m) for m in messages], None, native_only=True)
    else:
        system, contents = _wire_memo(messages, memo)
    body: dict[str, Any] = {}
    if system is not None:
        parts = [p for p in system["parts"] if not (isinstance(p, dict) and p.get("text") == "")]
        if parts:
            body["systemInstruction"] = {**system, "parts": parts}
    body["contents"] = contents
    return body


# --- reading contents ---------------------------------------------------------------------


def _read_contents(
    records: list[Any], synthetic: set[str]
) -> tuple[list[Message], list[list[int]], list[Problem]]:
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems: list[Problem] = []
    waiting: list[list[Any]] = []  # [id, name, answered] for the model turn just before
    for turn, content in enumerate(records):
        role = content.get("role") if isinstance(content, dict) else None
        parts = content.get("parts") if isinstance(content, dict) else None
        if role not in ("user", "model", "function") or not isinstance(parts, list):
            problems.append(Problem(turn + 1, "not a Gemini turn (a 'role' and a 'parts' list)"))
            waiting = []
            continue
        if role == "model":
            made, waiting = _model_turn(parts, turn, synthetic)
            messages.append(made)
            sources.append([turn + 1])
            continue
        for made in _user_turn(parts, turn, waiting, synthetic):
            messages.append(made)
            sources.append([turn + 1])
        if not (parts and all(map(_is_response, parts))):
            # Responses to one call turn may come in several consecutive contents of
            # one response each (Gemini takes them so); anything else ends the turn.
            waiting = []
    return messages, sources, problems


def _is_response(part: Any) -> bool:
    return isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)


def _model_turn(
    parts: list[Any], turn: int, synthetic: set[str]
) -> tuple[Message, list[list[Any]]]:
    content: list[Any] = []
    calls: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        call = part.get("functionCall") if isinstance(part, dict) else None
        if isinstance(call, dict):
            cid = call.get("id")
            if not isinstance(cid, str) or not cid:
                cid = f"call_{turn}_{index}"
                synthetic.add(cid)
            arguments = call.get("args", {})
            made = {"tool_call_id": cid, "name": call.get("name"), "arguments": arguments}
            signature = _signature(part)
            if signature is not None:
                made[SIGNATURE] = signature
            calls.append(made)
        else:
            content.append(_canonical_part(part))
    md: dict[str, Any] = {"tool_calls": calls} if calls else {}
    md |= {REC: turn, PART: 0}
    message = {
        "role": "assistant",
        "content": content if content or not calls else "",
        "metadata": md,
    }
    return message, [[c["tool_call_id"], c["name"], False] for c in calls]


def _user_turn(
    parts: list[Any], turn: int, waiting: list[list[Any]], synthetic: set[str]
) -> list[Message]:
    out: list[Message] = []
    run: list[Any] = []
    start = 0
    for index, part in enumerate(parts):
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(response, dict):
            if not run:
                start = index
            run.append(_canonical_part(part))
            continue
        if run:
            out.append({"role": "user", "content": run, "metadata": {REC: turn, PART: start}})
            run = []
        name = response.get("name")
        rid = response.get("id")
        if isinstance(rid, str) and rid:
            for entry in waiting:
                if entry[0] == rid:
                    entry[2] = True
        else:
            matched = _match(waiting, name)
            rid = matched or f"call_{turn}_{index}"
            if matched is None:
                # Only a made-up id is left out when writing back; a call's real id (an
                # id-less response answering it by name) is written wherever it stands.
                synthetic.add(rid)
        md: dict[str, Any] = {"tool_call_id": rid}
        if isinstance(name, str):
            md["name"] = name
        md |= {REC: turn, PART: index}
        content = orjson.dumps(response.get("response", {})).decode()
        out.append({"role": "tool", "content": content, "metadata": md})
    if run or not out:
        out.append({"role": "user", "content": run, "metadata": {REC: turn, PART: start}})
    return out


def _match(waiting: list[list[Any]], name: Any) -> str | None:
    """The first unanswered call of the turn before with this name (Gemini's own rule)."""
    for entry in waiting:
        if not entry[2] and entry[1] == name:
            entry[2] = True
            cid: str = entry[0]
            return cid
    return None


def _signature(part: dict[str, Any]) -> str | None:
    """The ``thoughtSignature`` a part carries (proto JSON also spells it snake_case)."""
    value = part.get("thoughtSignature", part.get("thought_signature"))
    return value if isinstance(value, str) and value else None


def _canonical_part(part: Any) -> Any:
    if not isinstance(part, dict):
        return {"type": "gemini", "part": part}
    if isinstance(part.get("text"), str) and not part.get("thought"):
        text = {"type": "text", "text": part["text"]}
        signature = _signature(part)
        if signature is not None:
            text[SIGNATURE] = signature
        return text
    inline = part.get("inlineData")
    if isinstance(inline, dict) and str(inline.get("mimeType", "")).startswith("image/"):
        return {"type": "image", "media_type": inline["mimeType"], "data": inline.get("data")}
    file = part.get("fileData")
    if isinstance(file, dict) and str(file.get("mimeType", "")).startswith("image/"):
        return {"type": "image", "url": file.get("fileUri")}
    return {"type": "gemini", "part": part}


def _system_message(system: Any) -> Message:
    parts = system.get("parts") if isinstance(system, dict) else None
    if isinstance(system, str):
        content: Any = system
    elif isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict):
        content = parts[0].get("text", "")
    elif isinstance(parts, list):
        content = [_canonical_part(p) for p in parts]
    else:
        raise FormatError("'systemInstruction' must be text or a content with parts")
    return {"role": "system", "content": content, "metadata": {REC: SYSTEM_REC}}


def _response_content(body: Any, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The model turn of a recorded response (JSON body or ``data:`` event stream)."""
    if isinstance(body, dict) and isinstance(body.get("string"), str):
        body = body["string"]
    chunks: list[Any]
    if isinstance(body, str):
        chunks = []
        for line in body.splitlines():
            if line.startswith("data:"):
                try:
                    chunks.append(orjson.loads(line[5:]))
                except orjson.JSONDecodeError:
                    continue
        if not chunks and body.lstrip().startswith("{"):
            try:
                chunks = [orjson.loads(body)]
            except orjson.JSONDecodeError:
                meta["response_error"] = body[:500]
                return None
    else:
        chunks = [body]
    parts: list[Any] = []
    finish = None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("error"), dict):
            meta["response_error"] = chunk["error"].get("message")
            return None
        candidates = chunk.get("candidates")
        if (
            not isinstance(candidates, list)
            or not candidates
            or not isinstance(candidates[0], dict)
        ):
            continue
        finish = candidates[0].get("finishReason") or finish
        content = candidates[0].get("content")
        for part in content.get("parts", []) if isinstance(content, dict) else []:
            _add_streamed_part(parts, part)
    if not parts:
        return None
    meta["finish_reason"] = finish
    if finish == "MAX_TOKENS":
        meta["cut"] = "max_tokens"
    elif finish is None and len(chunks) > 1:
        meta["cut"] = "stream_ended"
    return {"parts": parts, "role": "model"}


def _add_streamed_part(parts: list[Any], part: Any) -> None:
    """Streams split text over chunks; glue consecutive text pieces back together."""
    if not isinstance(part, dict):
        return
    last = parts[-1] if parts else None
    if (
        isinstance(last, dict)
        and isinstance(last.get("text"), str)
        and isinstance(part.get("text"), str)
        and bool(last.get("thought")) == bool(part.get("thought"))
    ):
        last["text"] += part["text"]
        if "thoughtSignature" in part:
            last["thoughtSignature"] = part["thoughtSignature"]
        return
    parts.append(dict(part))


# --- Gemini CLI sessions ------------------------------------------------------------------


def _is_cli(doc: dict[str, Any]) -> bool:
    return "sessionId" in doc or any(
        isinstance(r, dict) and r.get("type") in ("user", "gemini") for r in doc["messages"]
    )


def _parse_cli_lines(data: bytes) -> Parsed:
    head = jsonl.head_records(data[:65536], 20)
    if any(isinstance(v, dict) and v.get("type") == "assistant" for v in head) or not any(
        isinstance(v, dict) and ("projectHash" in v or v.get("type") == "gemini") for v in head
    ):
        # Decide from the first lines before decoding a possibly huge file.
        raise FormatError("not a Gemini CLI session (no header and no 'gemini' record)")
    read = jsonl.read_jsonl(data)
    values = [r.value for r in read.records if r.ok and isinstance(r.value, dict)]
    kinds = [value.get("type") for value in values]
    # Claude Code lines are "user"/"assistant" records with a sessionId too; a Gemini CLI
    # file says "gemini" for the model, or starts with the session header.
    header = bool(values) and "projectHash" in values[0]
    if "assistant" in kinds or not ("gemini" in kinds or (header and "user" in kinds)):
        raise FormatError("no line is a Gemini CLI gemini record")
    state = {
        "data": data,
        "mode": "cli-lines",
        "lines": read.records,
        "crlf": read.crlf,
        "final_newline": read.final_newline,
    }
    records = [r.value if r.ok else None for r in read.records]
    numbers = [r.line for r in read.records]
    parsed = _parse_cli(records, state, numbers)
    parsed.problems[:0] = read.problems
    parsed.problems.sort(key=lambda p: p.line)
    return parsed


def _parse_cli(records: list[Any], state: dict[str, Any], numbers: list[int] | None) -> Parsed:
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems: list[Problem] = []
    not_started: set[str] = set()
    session = state.get("doc", {}).get("sessionId") if isinstance(state.get("doc"), dict) else None
    for rec, record in enumerate(records):
        number = numbers[rec] if numbers else rec + 1
        if record is None:
            continue  # an unreadable line, already a problem
        if not isinstance(record, dict):
            problems.append(Problem(number, "a record must be an object"))
            continue
        session = session or record.get("sessionId")
        kind = record.get("type")
        if kind in ("user", "gemini") and (why := _cli_unread(record)):
            # Its words are under a field this reader does not know: read as an empty
            # message, a repair would drop it. Named as not read instead.
            problems.append(Problem(number, why))
            continue
        if kind == "user":
            content = record.get("content")
            if isinstance(content, list):
                content = [_canonical_part(p) for p in content]
            elif not isinstance(content, str):
                content = ""
            messages.append({"role": "user", "content": content, "metadata": {REC: rec, PART: 0}})
            sources.append([number])
        elif kind == "gemini":
            made = _cli_turn(record, rec, not_started)
            messages.extend(made)
            sources.extend([number] for _ in made)
        elif kind not in _CLI_NOTICES and not (rec == 0 and "sessionId" in record):
            problems.append(Problem(number, f"record type {kind!r} is not a message", "skipped"))
    state |= {"records": records, "originals": by_origin(messages), "session": session}
    meta = {"container": state["mode"], "session_id": session}
    return Parsed(
        NAME, messages, sources, problems, not_started=not_started, meta=meta, state=state
    )


def _cli_unread(record: dict[str, Any]) -> str:
    """Why a Gemini CLI message record cannot be read, or ``""``: it has no content to read."""
    if record.get("content") is not None or record.get("toolCalls"):
        return ""
    held = ", ".join(repr(k) for k in record if k not in ("type", "id", "timestamp"))
    return f"a {record.get('type')} record without 'content' (it holds {held or 'nothing else'})"


def _cli_turn(record: dict[str, Any], rec: int, not_started: set[str]) -> list[Message]:
    content = record.get("content")
    content = content if isinstance(content, str) else text_of(content)
    calls: list[dict[str, Any]] = []
    results: list[Message] = []
    tool_calls = record.get("toolCalls")
    for index, call in enumerate(tool_calls if isinstance(tool_calls, list) else []):
        if not isinstance(call, dict):
            continue
        cid = str(call.get("id") or "")
        calls.append(
            {"tool_call_id": cid, "name": call.get("name"), "arguments": call.get("args", {})}
        )
        result = call.get("result")
        responses = [
            p["functionResponse"]
            for p in (result if isinstance(result, list) else [])
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
        ]
        if not responses and call.get("status") == "cancelled":
            not_started.add(cid)  # the user declined it: Gemini CLI never ran it
        for response in responses[:1]:
            md: dict[str, Any] = {"tool_call_id": cid}
            if isinstance(call.get("name"), str):
                md["name"] = call["name"]
            md |= {REC: rec, PART: index + 1}
            text = orjson.dumps(response.get("response", {})).decode()
            results.append({"role": "tool", "content": text, "metadata": md})
    md = {"tool_calls": calls} if calls else {}
    md |= {REC: rec, PART: 0}
    return [{"role": "assistant", "content": content or "", "metadata": md}, *results]


def _serialise_cli(messages: list[Message], state: dict[str, Any]) -> bytes:
    records = state["records"]
    originals = state["originals"]
    groups: list[list[Message]] = []
    for message in messages:
        head = groups[-1][0] if groups else None
        if (
            message["role"] == "tool"
            and head is not None
            and head["role"] == "assistant"
            and metadata(message).get("tool_call_id") in {call_id(c) for c in calls_of(head)}
        ):
            groups[-1].append(message)  # results live inside their call in this format
        else:
            groups.append([message])
    made: list[tuple[int | None, Any]] = []  # (source record, record or None if untouched)
    last_time = None
    for position, group in enumerate(groups):
        rec = origin(group[0])
        template = records[rec] if rec is not None and 0 <= rec < len(records) else None
        if isinstance(template, dict):
            last_time = template.get("timestamp", last_time)
        if rec is not None and originals.get(rec) == group:
            made.append((rec, None))
            continue
        if group[0]["role"] == "assistant":
            record = _cli_gemini_record(group, template if isinstance(template, dict) else None)
        else:
            record = dict(template) if isinstance(template, dict) else {}
            if not record:
                record = {"id": _new_id(state, position, group[0]), "timestamp": last_time}
                if state.get("session") and state["mode"] == "cli-lines":
                    record["sessionId"] = state["session"]
            record["type"] = "user"
            if not (template and record.get("content") == group[0]["content"]):
                record["content"] = text_of(group[0]["content"])
        made.append((rec, record))
    used = {rec for rec in originals}
    out: list[Any] = []
    next_extra = 0

    def flush(upto: int) -> None:
        nonlocal next_extra
        while next_extra < upto:
            # Unreadable lines were reported when reading and stay out of a repaired file.
            if next_extra not in used and records[next_extra] is not None:
                out.append((next_extra, None))
            next_extra += 1

    for rec, record in made:
        if rec is not None:
            flush(rec)
        out.append((rec, record))
    flush(len(records))
    if state["mode"] == "cli":
        doc = dict(state["doc"])
        doc["messages"] = [records[rec] if record is None else record for rec, record in out]
        return dump_like(doc, state["data"])
    lines = state["lines"]
    raws = [
        lines[rec].raw if record is None else dump_line(record, state["crlf"])
        for rec, record in out
    ]
    return jsonl.join_lines(raws, state["final_newline"])


def _cli_gemini_record(group: list[Message], template: dict[str, Any] | None) -> dict[str, Any]:
    assistant = group[0]
    record: dict[str, Any] = (
        dict(template) if template and template.get("type") == "gemini" else {"type": "gemini"}
    )
    content = assistant["content"]
    if not (template and (record.get("content") or "") == (content or "")):
        record["content"] = text_of(content)
    old_calls = found if isinstance(found := record.get("toolCalls"), list) else []
    results = {call_id(metadata(m)): m for m in group[1:]}
    calls = []
    for index, call in enumerate(calls_of(assistant)):
        old = (
            old_calls[index]
            if index < len(old_calls) and isinstance(old_calls[index], dict)
            else {}
        )
        made = dict(old)
        cid = call_id(call)
        made["id"] = cid
        made["name"] = call.get("name")
        made["args"] = arguments_object(call.get("arguments"))
        result = results.get(cid)
        if result is not None:
            same = origin(result) == origin(assistant) and metadata(result).get(PART) == index + 1
            if not (same and "result" in old):
                made["result"] = [
                    {
                        "functionResponse": {
                            "id": cid,
                            "name": call.get("name"),
                            **_response_of(result),
                        }
                    }
                ]
            if metadata(result).get("healed"):
                made["status"] = "cancelled"
        calls.append(made)
    if calls:
        record["toolCalls"] = calls
    else:
        record.pop("toolCalls", None)
    return record


def _new_id(state: dict[str, Any], position: int, message: Message) -> str:
    """A record id for a note the repair added: the same input always gives the same id."""
    seed = f"transcript-inspector:{state.get('session')}:{position}:{text_of(message['content'])}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, seed))


# --- writing contents ---------------------------------------------------------------------


def _response_of(message: Message) -> dict[str, Any]:
    """The ``response`` object of a functionResponse for a tool message."""
    content = message["content"]
    text = content if isinstance(content, str) else text_of(content)
    if metadata(message).get("healed"):
        return {"response": {"error": text}}
    value = json_object(text)
    return {"response": {"output": text} if value is None else value}


def _wire(
    messages: list[Message], state: dict[str, Any] | None, *, native_only: bool
) -> tuple[Any, list[dict[str, Any]]]:
    """The ``systemInstruction`` and the turns for canonical ``messages``."""
    records = state["records"] if state else []
    originals = state["originals"] if state else {}
    synthetic = state["synthetic_ids"] if state else set()
    if state:
        messages = split_runs(messages)  # each record's own messages again
    start = 0
    while start < len(messages) and messages[start]["role"] == "system":
        start += 1
    system = _wire_system(messages[:start], state)
    names: dict[str, Any] = {}
    contents = []
    for role, rec, members in _groups(messages[start:], by_record=state is not None):
        for member in members:
            for call in calls_of(member):
                names[call_id(call)] = call.get("name")
        if rec is not None and originals.get(rec) == members:
            contents.append(records[rec])
            continue
        template = records[rec] if rec is not None and 0 <= rec < len(records) else None
        template = template if isinstance(template, dict) else None
        contents.append(_wire_turn(role, members, template, rec, synthetic, names, native_only))
    if native_only:
        contents = _sendable_contents(contents)
    return system, contents


def _groups(
    messages: list[Message], *, by_record: bool
) -> list[tuple[str, int | None, list[Message]]]:
    """Gemini's turns as they go out: (role, source record, canonical members) each.

    The one grouping rule of this shape, for writing a file back and for a
    request body alike: turns alternate, so consecutive messages of one side
    (``model`` for the assistant, ``user`` for everything else: results are
    parts of a user turn) share a turn. With ``by_record`` (writing a file
    back), messages read from one record stay that record's, messages of two
    records stay apart, and a user's own text starts a new turn unless results
    lead it (a note the repair added joins the results before it). Without
    (a request body), a run of one side is one turn.
    ``_skeleton._gemini`` writes the same grouping from digests.
    """

    def side(message: Message) -> str:
        return "model" if message["role"] == "assistant" else "user"

    def user_text(message: Message) -> bool:
        return bool(message["role"] == "user")

    return turns(messages, side, by_record=by_record, user_text=user_text if by_record else None)


def _wire_memo(messages: list[Message], memo: dict[Any, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """``to_wire``'s system and turns, each turn made once per ``memo``.

    This is ``_wire`` with no state: nothing is reused from a source file
    and no message has a ``_rec`` once private keys are stripped, so a turn
    is simply a run of messages on one side. What a turn becomes depends on
    its messages and, for results that carry no name, on the name of the
    call they answer: the memo keeps a turn under its messages' ids, with
    those names, and holds the messages so that their ids stay unique while
    they key it. A message is stripped of private keys only when its turn
    is made.
    """
    start = 0
    while start < len(messages) and messages[start]["role"] == "system":
        start += 1
    system = _wire_system([public(m) for m in messages[:start]], None)
    synthetic: set[str] = set()
    names: dict[str, Any] = {}
    contents: list[dict[str, Any]] = []

    def add_turn(role: str, members: list[Message]) -> None:
        key = id(members[0]) if len(members) == 1 else tuple(map(id, members))
        hit = memo.get(key)
        # The names of the calls the turn makes: kept in its entry once read.
        called = (
            hit[1]
            if hit is not None
            else [(call_id(call), call.get("name")) for m in members for call in calls_of(m)]
        )
        for cid, name in called:
            names[cid] = name
        callers: list[Any] = []
        if role == "user":
            # The name ``_wire_response`` takes from the call a result answers, if any.
            for m in members:
                if m["role"] == "tool":
                    md = metadata(m)
                    rid = call_id(md)
                    callers.append(None if md.get("name") else names.get(rid))
            if hit is not None and any(a is not b for a, b in zip(hit[2], callers, strict=True)):
                hit = None
        if hit is None:
            clean = [public(m) for m in members]
            made = _wire_turn(role, clean, None, None, synthetic, names, True)
            hit = memo[key] = (members, called, callers, made)
        contents.append(hit[3])

    for role, _, members in _groups(messages[start:], by_record=False):
        add_turn(role, members)
    return system, _sendable_contents(contents)


def _sendable_contents(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turns the API takes, with a user turn first if they start with a call."""
    contents = _alternate(contents)
    if contents and contents[0]["role"] == "model":
        if any("functionCall" in p for p in contents[0]["parts"]):
            note = (
                "[note: the transcript starts with this function call; earlier turns are missing]"
            )
            contents.insert(0, {"role": "user", "parts": [{"text": note}]})
    return contents


def _alternate(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns as the API takes them: none without parts, one side at a time.

    A turn whose parts were all left out (another provider's reasoning, blank
    text) is dropped (``contents.parts must not be empty``); the turns around
    it, now of one side, are joined so that a function call turn still
    follows a user turn and its responses still fill the turn after it.
    """
    out: list[dict[str, Any]] = []
    for turn in contents:
        if not turn["parts"]:
            continue
        if out and out[-1]["role"] == turn["role"]:
            out[-1] = {**out[-1], "parts": [*out[-1]["parts"], *turn["parts"]]}
        else:
            out.append(turn)
    return out


def _wire_system(systems: list[Message], state: dict[str, Any] | None) -> Any:
    if not systems:
        return None
    if state and [origin(m) for m in systems] == [SYSTEM_REC]:
        if state["originals"].get(SYSTEM_REC) == systems:
            return state["system"]
    parts: list[Any] = []
    for message in systems:
        parts.extend(_wire_parts(message["content"], False))
    template = state["system"] if state and isinstance(state.get("system"), dict) else {}
    return {**template, "parts": parts}


def _wire_turn(
    role: str,
    members: list[Message],
    template: dict[str, Any] | None,
    rec: int | None,
    synthetic: set[str],
    names: dict[str, Any],
    native_only: bool,
) -> dict[str, Any]:
    out: dict[str, Any] = dict(template) if template else {}
    if out.get("role") not in ((role,) if role == "model" else ("user", "function")):
        out["role"] = role
    source = template.get("parts") if template else None
    source = source if isinstance(source, list) else []
    parts: list[Any] = []
    for message in members:
        same = rec is not None and origin(message) == rec
        part = metadata(message).get(PART, 0) if same else None
        if message["role"] == "tool":
            old = source[part] if isinstance(part, int) and 0 <= part < len(source) else None
            parts.append(_wire_response(message, old, synthetic, names))
        elif message["role"] == "assistant":
            parts.extend(_wire_model(message, source if same else [], synthetic, native_only))
        else:
            content = message["content"]
            if message["role"] == "system":
                content = f"{SYSTEM_NOTE}\n{text_of(content)}"
            count = len(content) if isinstance(content, list) else 0
            old_parts = source[part : part + count] if isinstance(part, int) else []
            if old_parts and [_canonical_part(p) for p in old_parts] == content:
                parts.extend(old_parts)
            else:
                parts.extend(_wire_parts(content, native_only))
    out["parts"] = parts
    return out


def _wire_response(
    message: Message, old: Any, synthetic: set[str], names: dict[str, Any]
) -> dict[str, Any]:
    md = metadata(message)
    rid = call_id(md)
    part = dict(old) if isinstance(old, dict) and "functionResponse" in old else {}
    response = dict(part.get("functionResponse") or {})
    if rid in synthetic:
        response.pop("id", None)
    else:
        response["id"] = rid
    name = md.get("name") or names.get(rid) or response.get("name")
    if name is None:
        response.pop("name", None)  # its call has none either; reading pairs them by order
    else:
        response["name"] = name
    current = (
        orjson.dumps(response.get("response", {})).decode() if "response" in response else None
    )
    if current != message["content"]:
        response.update(_response_of(message))
    part["functionResponse"] = response
    return part


def _wire_model(
    message: Message, source: list[Any], synthetic: set[str], native_only: bool
) -> list[Any]:
    calls = calls_of(message)
    content = message["content"]
    kept = [p for p in source if not (isinstance(p, dict) and "functionCall" in p)]
    if source and [_canonical_part(p) for p in kept] == (
        content if isinstance(content, list) else []
    ):
        parts: list[Any] = []
        pending = list(calls)
        for part in source:
            if isinstance(part, dict) and "functionCall" in part:
                if pending:
                    parts.append(_function_call(pending.pop(0), part, synthetic))
            else:
                parts.append(part)
        return parts + [_function_call(call, None, synthetic) for call in pending]
    old_calls = [p for p in source if isinstance(p, dict) and "functionCall" in p]
    parts = _wire_parts(content, native_only)
    for index, call in enumerate(calls):
        old = old_calls[index] if index < len(old_calls) else None
        parts.append(_function_call(call, old, synthetic, native_only))
    return parts


def _function_call(
    call: dict[str, Any], old: Any, synthetic: set[str], native_only: bool = False
) -> dict[str, Any]:
    part = dict(old) if isinstance(old, dict) else {}
    function = dict(part.get("functionCall") or {})
    cid = call_id(call)
    if cid in synthetic:
        function.pop("id", None)
    else:
        function["id"] = cid
    function["name"] = call.get("name")
    if native_only:
        function["args"] = arguments_dict(call.get("arguments"))
    else:
        arguments = arguments_object(call.get("arguments"))
        function["args"] = {} if arguments is None else arguments
    part["functionCall"] = function
    _sign(part, call.get(SIGNATURE))
    return part


def _sign(part: dict[str, Any], signature: Any) -> None:
    """Give a part the signature its call or text was read with, and no other.

    The part a source turn held for the place keeps its own spelling when it
    is that signature; a signature is never taken from another call's part.
    """
    if not (isinstance(signature, str) and signature):
        signature = None
    if _signature(part) == signature:
        return
    part.pop("thoughtSignature", None)
    part.pop("thought_signature", None)
    if signature is not None:
        part["thoughtSignature"] = signature


def _sendable(part: Any) -> bool:
    """Whether a part read as content (not as a call or response) can go to the API.

    A ``functionCall`` or ``functionResponse`` part lands in content only when
    reading could not take it as one (its value is not an object, or it sits
    in the wrong turn): sent as it is, it would be a call without a response
    or the reverse. The calls and responses the API gets are the ones the
    canonical history has.
    """
    return isinstance(part, dict) and not ("functionCall" in part or "functionResponse" in part)


def _wire_parts(content: Any, native_only: bool) -> list[Any]:
    if isinstance(content, str):
        return [{"text": content}] if content or not native_only else []
    parts: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("text", "")
            signature = part.get(SIGNATURE)
            signed = isinstance(signature, str) and bool(signature)
            # An empty text part is left out, unless it carries the turn's signature.
            if not native_only or (isinstance(text, str) and (text or signed)):
                made = {"text": text}
                _sign(made, signature)
                parts.append(made)
        elif kind == "image" and part.get("url"):
            mime = part.get("media_type") or "image/jpeg"
            parts.append({"fileData": {"mimeType": mime, "fileUri": part["url"]}})
        elif kind == "image":
            parts.append(
                {"inlineData": {"mimeType": part.get("media_type"), "data": part.get("data")}}
            )
        elif kind == "gemini" and "part" in part:
            if not native_only or _sendable(part["part"]):
                parts.append(part["part"])
        elif not native_only:
            parts.append({"text": orjson.dumps(part).decode()})
    return parts
