"""OpenAI Responses input items (``message``, ``reasoning``, ``function_call``, ``*_output``).

Containers read, and written back in the same container:

- a bare JSON list of input items, or a request body ``{"model", "input",
  "instructions", ...}`` (``instructions`` becomes a leading system message);
- a recording of exchanges (``{"interactions": [...]}``, see ``exchanges``):
  the last request's input with that response's ``output`` items appended,
  except when the output asks for tool calls (then they are named in
  ``meta["pending_calls"]``: the recording ends where the client stopped).

Items are flat; canonical messages are turns. Consecutive assistant-side
items (assistant ``message``, ``reasoning``, call items, server tool items
such as ``web_search_call``) form one assistant message, and a second
assistant ``message`` item after text or calls starts a new one. A call item
(``function_call``, ``custom_tool_call``, ``computer_call``,
``local_shell_call``, ``tool_search_call``, ... with a ``call_id``, or the
``id`` some writers use instead) is a canonical call; its output item
(``*_call_output``, ``tool_search_output``: any ``*_output`` item with a
``call_id``) is a tool message, whose content is its ``output``, or its other
fields as JSON text where it has none (``{"tools": [...]}``); a computer call's
screenshot given as an image URL is that image (an image part). Reasoning and
server tool items stay as content parts (type kept), and so do a call and
its output that the server ran itself (``"execution": "server"``).

A canonical call keeps what its item holds beyond the call (public, so a
canonical download keeps it too): ``item``, the item's other fields (its
kind, item id ``fc_...``/``ctc_...``, status, a function's ``namespace``;
left out for a bare ``function_call``), and ``after_parts``, how many of the
turn's content parts came before it (left out when none came after it). A
tool message keeps ``item`` in its metadata: its output item's fields beyond
its content (kind, id, status, an output that is not text), left out for the
output kind its call's kind takes and nothing else. An assistant ``message``
item's text and refusal parts keep its other fields (item id ``msg_...``,
``status``, ``phase``) under ``item`` (``message_envelope``).

``sources`` are the 1-based numbers of the items a message came from; the
response's items continue the numbering after the request's.

Export (``to_wire``) writes what the Responses API accepts from any
canonical history, without adding events. Each call goes out as the item it
was read from (or the whole ``item`` a canonical call carries), where it
stood among the turn's parts; a call with no item, or one whose arguments
do not fit its item's kind, goes out as a ``function_call``. A result goes
out as the kind it was read as, else as the output kind of its call (a
``custom_tool_call`` is answered by a ``custom_tool_call_output``...), and so
does a result the repair made: its text in ``output``; an
``apply_patch_call_output`` also ``status: "failed"``, and a
``tool_search_output`` the tools it found, none (``tools: []``). A
``computer_call_output`` (a screenshot) and a ``shell_call_output`` (the
chunks a command wrote) cannot hold words: one the repair made has no
screenshot (``{"type": "computer_screenshot"}``) or no chunks (``[]``), is
``status: "incomplete"``, and its words follow it as a user message item.
An assistant message goes out as the message items it was read from, each
with its own fields (its ``phase`` told back to the model that wrote it); one
with no fields is a plain message item. A refusal stays in its message item.
System messages stay where they are, as ``system`` message items, but for
the one a body's ``instructions`` became (marked ``instructions`` in its
metadata): that goes back in ``instructions``, so the ``input[N]`` the
provider's errors name are the file's. Parts
another provider made (thinking blocks, Gemini parts) are left out, and so
is a message item left with an empty content list. Of the items kept whole
as parts, reasoning, item references and what the server ran
(``web_search_call``, MCP items, a ``tool_search`` with ``execution:
"server"``) go out as they are; a client call item kept as a part (reading
could not take it as a call) does not, as it would be a call with no
output. An item repeated under the same ``id`` goes out once (``Duplicate
item found with id``); a call under an item id already sent (ID-1 split one
item in two), or another message under a message's id, goes out without it.
An item id the API would not have made (``Expected an ID that begins with
'rs'``: another provider's uuid, a proxy's ``item_...``) is not sent: a call or
message goes out without it, and such a reasoning item, which only the model
that wrote it reads, is left out.
A reasoning item that no item of the model follows (its call was cut,
INT-1) goes with its call, in the export and in the repaired file alike: the
API refuses it alone.
"""

from __future__ import annotations

from typing import Any

import orjson

from inspector.engine.canonical import json_object
from inspector.engine.providers import (
    RESPONSES_CALLS,
    RESPONSES_ID_PREFIXES,
    RESPONSES_OUTPUTS,
    RESPONSES_SERVER_ITEMS,
    follows_reasoning,
    responses_kind_known,
)
from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.detect import Alternatives, opens_json, refuse_others
from inspector.formats.exchanges import read_request, write_request
from inspector.formats.jsondoc import arguments_string, image_part, read_json, text_of
from inspector.formats.private import (
    END,
    REC,
    SYSTEM_REC,
    Message,
    by_origin,
    call_id,
    calls_of,
    metadata,
    origin,
    public,
)

NAME = "responses"
PROVIDER = "responses"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "OpenAI Responses"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 40


# The keys of a Responses message item that its canonical parts hold, or that every
# message item has: what ``message_envelope`` leaves out.
_MESSAGE_KEYS = frozenset({"type", "role", "content"})
# The content parts of a Responses message item that stay in it when it is written.
# (A tuple: a part's type may be any JSON value, and ``in`` on a tuple hashes nothing.)
MESSAGE_PARTS = ("text", "refusal")


def message_envelope(item: dict[str, Any]) -> dict[str, Any]:
    """The fields of a Responses assistant ``message`` item beyond its content: its item
    id (``msg_...``), ``status``, ``phase`` (``commentary`` / ``final_answer``)...

    Its text and refusal parts carry them (``marked_parts``) so an export writes the
    item back as it was: a model told the ``phase`` of its earlier messages is told it
    again, and one item goes out under its id once. Codex's reader marks them too.
    """
    return {k: v for k, v in item.items() if k not in _MESSAGE_KEYS}


def marked_parts(parts: list[Any], envelope: dict[str, Any]) -> list[Any]:
    """``parts``, each text or refusal part carrying ``envelope`` under ``item``."""
    if not envelope:
        return parts
    return [
        {**part, "item": envelope}
        if isinstance(part, dict) and part.get("type") in MESSAGE_PARTS
        else part
        for part in parts
    ]


# The public metadata key of the system message a request's ``instructions`` became.
INSTRUCTIONS = "instructions"
# Call items the client answers; any other "*_call" item with a call_id counts too.
_CLIENT_CALLS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
    }
)
# What names a history the server stores, which a body continues, and the ``meta`` key
# that keeps it (``conversation`` there names a conversation of a file of several).
STORED_HISTORY = {"previous_response_id": "previous_response_id", "conversation": "conversation_id"}
_CALL_FIELDS = frozenset({"type", "id", "call_id", "status", "name"})
# The fields of a call item that its canonical call holds, by kind (any other kind: its
# call id and name, and every field outside ``_CALL_FIELDS``, which are its arguments).
_HELD = {
    "function_call": frozenset({"call_id", "name", "arguments"}),
    "custom_tool_call": frozenset({"call_id", "name", "input"}),
}
# A call item that needs no ``item`` on its canonical call: the kind every export writes.
_PLAIN_CALL = {"type": "function_call"}
# Fields of an output item that are not its output.
_OUTPUT_FIELDS = frozenset({"type", "id", "call_id", "status", "execution"})
# Output kinds whose result is their ``output`` field, and those whose result is in
# fields of their own (``tool_search_output``'s ``tools``).
_TEXT_OUTPUTS = frozenset(RESPONSES_OUTPUTS) - {"tool_search_output"}
_FIELD_OUTPUTS = frozenset({"tool_search_output"})
# Output kinds whose result is not text: a screenshot, the chunks a shell command wrote.
_NO_TEXT_OUTPUTS = frozenset({"computer_call_output", "shell_call_output"})
# Items kept whole as parts that go out as they are: reasoning, references, what the
# server ran (``web_search_call``, MCP items, compaction) and the other items of the API.
_NATIVE_PARTS = frozenset(
    {"reasoning", "item_reference", "compaction", "mcp_approval_response", "additional_tools"}
    | RESPONSES_SERVER_ITEMS
)

_STRONG = Alternatives(
    rb'"type"\s*:\s*"(function_call|function_call_output|reasoning|custom_tool_call'
    rb'|input_text|output_text)"',
    rb'"call_id"\s*:',
    rb"/v1/responses",
)


def sniff(head: bytes) -> float:
    if not opens_json(head):
        return 0.0
    if _STRONG.search(head):
        return 0.8
    return 0.2 if b'"input"' in head else 0.0


def stored_history(parsed: Parsed) -> dict[str, Any]:
    """What names the history a request body continues on the server (the ``base`` hook):
    ``{"previous_response_id": ...}`` or ``{"conversation": ...}`` as the body named it,
    or ``{}``."""
    if not isinstance(parsed.meta, dict):
        return {}
    for key, kept in STORED_HISTORY.items():
        value = parsed.meta.get(kept)
        if value is not None and value != "":
            return {key: value}
    return {}


def parse(data: bytes, *, conversation: int | None = None) -> Parsed:
    """Read any container above; ``conversation`` picks another exchange (0-based)."""
    doc = read_json(data)
    request = read_request(
        doc,
        data,
        NAME,
        "input",
        conversation,
        refused="no 'input' items, item list or recorded exchanges found",
        is_body=lambda doc: "input" in doc,
        text_input=True,
    )
    state, meta, body, items = request.state, request.meta, request.body, request.items
    output: list[Any] = []
    if state["mode"] == "exchange":
        output = _response_output(request.response, meta)
    if state["mode"] != "list":
        for key, kept in STORED_HISTORY.items():
            value = body.get(key)
            if value is not None and value != "":
                # The server holds the earlier turns; this input is only the tail of the
                # history (a conversation is named by its id, or an object holding it).
                meta[kept] = value
                break
    refuse_others(items, NAME, "input items")
    pending = [call_id_of(i) for i in output if isinstance(i, dict) and _is_call(i)]
    if pending and meta.get("response_complete", True):
        meta["pending_calls"] = pending
        output = []
    records = items + output
    unknown: dict[str, None] = {}
    messages, sources, problems = _read(records, unknown)
    if unknown:
        # Kept in the file and shown on the timeline, but no check reads them and the
        # export leaves them out: the Responses verdict says so (``diagnosis.verdicts``).
        meta["unchecked_kinds"] = list(unknown)
    if not any(m["role"] in ("user", "assistant", "tool") for m in messages):
        raise FormatError("no item is a Responses message or call")
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        # Marked (public), so an export writes it back as ``instructions``, not as an
        # item: then the provider's ``input[N]`` numbers are the file's.
        system_md = {INSTRUCTIONS: True, REC: SYSTEM_REC}
        system = {"role": "system", "content": instructions, "metadata": system_md}
        messages.insert(0, system)
        sources.insert(0, [0])
    causes: dict[int, str] = {}
    if output and meta.get("response_cut"):
        last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        causes[last] = meta["response_cut"]
    state |= {"body": body, "records": records, "originals": by_origin(messages)}
    return Parsed(NAME, messages, sources, problems, causes=causes, meta=meta, state=state)


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = original.state
    if messages == original.messages:
        data: bytes = state["data"]
        return data
    instructions, items = _wire(messages, state)
    # A body's ``instructions`` stay when the repaired history has none to give.
    given = {} if instructions is None else {"instructions": instructions}
    return write_request(state, "input", items, **given)


def to_wire(messages: list[Message], *, memo: dict[Any, Any] | None = None) -> dict[str, Any]:
    """A Responses request body (``{"input": [...]}``) for canonical messages.

    System messages become ``system`` message items, but a first one that was
    the ``instructions`` of a request body goes back in ``instructions``; parts
    another provider made (thinking blocks, Gemini parts) are left out.

    ``memo``, a dict kept between calls on histories that share message
    objects (a transcript and its repair), makes each message's items once;
    the bodies then share those items.
    """
    instructions = leading_instructions(messages)
    head = {} if instructions is None else {"instructions": instructions}
    if instructions is not None:
        messages = messages[1:]
    if memo is not None:
        return head | {"input": _input_memo(messages, memo)}
    _, items = _wire([public(m) for m in messages], None)
    out: list[Any] = []
    seen: dict[str, Any] = {}
    for item, iid in _sendable(items):
        unique = _once(item, iid, seen)
        if unique is not None:
            out.append(unique)
    return head | {"input": _without_lone_reasoning(out)}


def leading_instructions(messages: list[Message]) -> str | None:
    """The text of the first message when it is the ``instructions`` of a request body
    (the system message ``parse`` makes of them, marked ``instructions``), else None."""
    if not messages:
        return None
    first = messages[0]
    if first.get("role") != "system" or metadata(first).get(INSTRUCTIONS) is not True:
        return None
    return _text(first.get("content"))


def _once(item: Any, iid: str | None, seen: dict[str, Any]) -> Any:
    """``item`` as the request may hold it, given the items ``seen`` before it, by id.

    The API refuses an item id twice. An item repeated under its id goes out
    once; a call or an output under an id already sent (the two calls ID-1
    told apart came from one item), or a message that is not the one sent
    under it, goes out without it, as the item it is: no words are lost.
    """
    if iid is None:
        return item
    first = seen.get(iid)
    if first is None:
        seen[iid] = item
        return item
    if _is_call(item) or _is_output(item) or (_is_message(item) and item != first):
        return {k: v for k, v in item.items() if k != "id"}
    return None


def _is_message(item: dict[str, Any]) -> bool:
    return item.get("type") in (None, "message") and item.get("role") is not None


def _without_lone_reasoning(items: list[Any]) -> list[Any]:
    """``items`` less each reasoning item that no item of the model follows (after the
    reasoning items next to it): the API refuses such an item ("... was provided without
    its required following item"), as a turn left with its reasoning alone would be."""
    keep = False  # whether the items from here on start with one the model made
    dropped: list[int] = []
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if isinstance(item, dict) and item.get("type") == "reasoning":
            if not keep:
                dropped.append(index)
        else:
            keep = follows_reasoning(item)
    if not dropped:
        return items
    gone = set(dropped)
    return [item for index, item in enumerate(items) if index not in gone]


def _sendable(items: list[Any]) -> list[tuple[Any, str | None]]:
    """The items an API request takes (no empty messages), each with its item id if any.

    An item id another writer made (a DeepSeek reasoning item's uuid, a proxy's
    ``item_...``) where the API wants its own (``rs_``, ``fc_``, ``msg_``) is
    refused: a call or a message goes out without it, and a reasoning item,
    which only the model that wrote it can read, is left out, as parts
    another provider made are.
    """
    out: list[tuple[Any, str | None]] = []
    for item in items:
        iid = None
        if isinstance(item, dict):
            if item.get("content") == [] and item.get("role") is not None:
                continue
            iid = item.get("id")
            if not (isinstance(iid, str) and iid):
                iid = None
            else:
                kind = item.get("type")
                prefix = RESPONSES_ID_PREFIXES.get("message" if kind is None else str(kind))
                if prefix is not None and not iid.startswith(prefix):
                    if kind == "reasoning":
                        continue
                    item = {k: v for k, v in item.items() if k != "id"}
                    iid = None
        out.append((item, iid))
    return out


def call_id_of(item: dict[str, Any]) -> str:
    """The id pairing a call item with its output: ``call_id``, else the ``id`` some use."""
    value = item.get("call_id") or item.get("id") or ""
    return value if isinstance(value, str) else str(value)


# --- reading ------------------------------------------------------------------------------


def _is_call(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    if not isinstance(kind, str) or item.get("execution") == "server":
        return False  # one the server ran itself has its output beside it
    return kind in _CLIENT_CALLS or (kind.endswith("_call") and "call_id" in item)


def _is_output(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    if not isinstance(kind, str) or item.get("execution") == "server":
        return False
    if kind.endswith("_call_output"):
        return True
    # Other output kinds (``tool_search_output``) answer their call by call_id.
    call = item.get("call_id")
    return kind.endswith("_output") and isinstance(call, str) and bool(call)


# What the guard's shortcut reads a body's start by (``inspector.guard.tail``).
is_call = _is_call
is_output = _is_output


def _output_kind(call_kind: str) -> str:
    """The type of the output item that answers a call of this type."""
    return RESPONSES_CALLS.get(call_kind, call_kind + "_output")


def _read(
    records: list[Any], unknown: dict[str, None] | None = None
) -> tuple[list[Message], list[list[int]], list[Problem]]:
    """``unknown``, when given, gets the item kinds no provider check reads."""
    if unknown is None:
        unknown = {}
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems: list[Problem] = []
    names: dict[str, Any] = {}
    kinds: dict[str, str] = {}  # the kind of each call read so far, by call id
    group: dict[str, Any] | None = None

    def close(end: int) -> None:
        nonlocal group
        if group is None:
            return
        parts = group["parts"]
        for call, at in zip(group["calls"], group["calls_at"], strict=True):
            if at < len(parts):
                call["after_parts"] = at  # a part of the turn came after it
        if len(parts) == 1 and group["text_only"] is not None:
            content: Any = group["text_only"]
        else:
            content = parts if parts or not group["calls"] else ""
        md: dict[str, Any] = {"tool_calls": group["calls"]} if group["calls"] else {}
        md |= {REC: group["start"], END: end}
        messages.append({"role": "assistant", "content": content, "metadata": md})
        sources.append(list(range(group["start"] + 1, end + 1)))
        group = None

    def open_group(index: int) -> dict[str, Any]:
        nonlocal group
        if group is None:
            group = {
                "start": index,
                "parts": [],
                "calls": [],
                "calls_at": [],
                "text": False,
                "text_only": None,
            }
        return group

    for index, item in enumerate(records):
        if not isinstance(item, dict):
            close(index)
            reason = f"an item must be an object, not {type(item).__name__}"
            problems.append(Problem(index + 1, reason))
            continue
        kind = item.get("type")
        role = item.get("role")
        if kind in (None, "message") and role is not None and item.get("content") is None:
            # The API takes no message item without content: this one keeps its words
            # under a field this reader does not know, and read as empty a repair would
            # drop it.
            held = ", ".join(repr(k) for k in item if k not in ("type", "role"))
            raise FormatError(
                f"item {index + 1}: a {role} message without 'content'"
                f" (it holds {held or 'nothing else'}): not a Responses item"
            )
        if kind in (None, "message") and role in ("user", "system", "developer"):
            close(index)
            content = _canonical_content(item.get("content"))
            wire_role = "user" if role == "user" else "system"
            md: dict[str, Any] = {REC: index, END: index + 1}
            messages.append({"role": wire_role, "content": content, "metadata": md})
            sources.append([index + 1])
        elif kind in (None, "message") and role == "assistant":
            if group is not None and (group["text"] or group["calls"]):
                close(index)
            current = open_group(index)
            content = item.get("content")
            fresh = not current["parts"]
            envelope = message_envelope(item)
            current["parts"].extend(marked_parts(_text_parts(content), envelope))
            current["text"] = True
            plain = fresh and isinstance(content, str) and not envelope
            current["text_only"] = content if plain else None
        elif _is_output(item):
            close(index)
            rid = call_id_of(item)
            md = {"tool_call_id": rid}
            if isinstance(names.get(rid), str):
                md["name"] = names[rid]
            envelope = _output_envelope(item)
            if envelope != {"type": _output_kind(kinds.get(rid, "function_call"))}:
                md["item"] = envelope
            md |= {REC: index, END: index + 1}
            messages.append({"role": "tool", "content": _output_content(item), "metadata": md})
            sources.append([index + 1])
        elif _is_call(item):
            call = canonical_call(item)
            names[call["tool_call_id"]] = call["name"]
            kinds.setdefault(call["tool_call_id"], item["type"])
            current = open_group(index)
            current["calls"].append(call)
            current["calls_at"].append(len(current["parts"]))
        elif isinstance(kind, str):
            # Reasoning, server-side tools (web_search_call, ...) and items this reader
            # does not know: the assistant's turn, kept whole as a part.
            if not responses_kind_known(kind):
                unknown.setdefault(kind, None)  # said on the verdict: no check reads it
            current = open_group(index)
            current["parts"].append(item)
            current["text_only"] = None
        else:
            close(index)
            problems.append(Problem(index + 1, "not a Responses item (no 'type', no known 'role')"))
    close(len(records))
    return messages, sources, problems


def canonical_call(item: dict[str, Any]) -> dict[str, Any]:
    """The canonical call for a call item; what the item holds beyond its call id, name
    and arguments (its kind, item id, status) under ``item``, which the export writes
    back (Codex's rollouts read their tool searches so too)."""
    kind = item.get("type")
    if kind == "function_call":
        arguments: Any = item.get("arguments", "")
    elif kind == "custom_tool_call":
        arguments = {"input": item.get("input")}
    else:
        arguments = {k: v for k, v in item.items() if k not in _CALL_FIELDS}
    name = item.get("name") if isinstance(item.get("name"), str) else kind
    call = {"tool_call_id": call_id_of(item), "name": name, "arguments": arguments}
    envelope = _call_envelope(item)
    if envelope != _PLAIN_CALL:
        call["item"] = envelope
    return call


def _call_envelope(item: dict[str, Any]) -> dict[str, Any]:
    """The fields of a call item that its canonical call does not hold: its kind, its
    item id (``fc_...``, ``ctc_...``), its status, a function's ``namespace``..."""
    held = _HELD.get(item["type"])
    pairs_by_id = not item.get("call_id")  # then its ``id`` is the call id
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key == "id" and pairs_by_id:
            continue
        if held is None:
            if key in _CALL_FIELDS and key not in ("call_id", "name"):
                out[key] = value
        elif key not in held:
            out[key] = value
    return out


def _output_envelope(item: dict[str, Any]) -> dict[str, Any]:
    """The fields of an output item that its tool message's content does not hold.

    That is the item less its call id, less its ``output`` where that is the
    message's text, and less the fields a ``tool_search_output`` holds its
    result in (the content is their JSON text). An output kind this reader
    does not know keeps all its fields.
    """
    kind = item["type"]
    pairs_by_id = not item.get("call_id")
    out = {k: v for k, v in item.items() if k != "call_id" and not (k == "id" and pairs_by_id)}
    if kind in _TEXT_OUTPUTS and isinstance(out.get("output"), str):
        del out["output"]
    elif kind == "computer_call_output" and _screenshot_url(out.get("output")) is not None:
        del out["output"]  # the content is its image
    elif kind in _FIELD_OUTPUTS and "output" not in item:
        out = {k: v for k, v in out.items() if k in _OUTPUT_FIELDS}
    return out


def _text_parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return _canonical_content(content) if isinstance(content, list) else []


def _canonical_content(content: Any) -> Any:
    if content is None:
        return ""
    if not isinstance(content, list):
        return content if isinstance(content, str) else orjson.dumps(content).decode()
    return [_canonical_part(part) for part in content]


def _canonical_part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        return image_part(part["image_url"])
    return part


def _screenshot_url(output: Any) -> str | None:
    """The image URL of a ``computer_call_output``'s screenshot that is that URL and nothing
    else (no ``file_id``, no ``detail``): then the result is that image."""
    if (
        isinstance(output, dict)
        and output.keys() == {"type", "image_url"}
        and output["type"] == "computer_screenshot"
        and isinstance(output["image_url"], str)
    ):
        return output["image_url"]
    return None


def _output_content(item: dict[str, Any]) -> Any:
    output = item.get("output")
    if item.get("type") == "computer_call_output":
        url = _screenshot_url(output)
        if url is not None:
            # The screenshot, as an image part: shown as one, sent to others as one,
            # and not held twice (as text and in the item's fields).
            return [_canonical_part({"type": "input_image", "image_url": url})]
    if output is None:
        if "output" not in item:
            # An output kind that carries its result in fields of its own
            # (``tool_search_output``'s ``tools``): those, as JSON text.
            rest = {k: v for k, v in item.items() if k not in _OUTPUT_FIELDS}
            if rest:
                return orjson.dumps(rest).decode()
        return ""
    if isinstance(output, str | list):
        return _canonical_content(output)
    return orjson.dumps(output).decode()


def _response_output(body: Any, meta: dict[str, Any]) -> list[Any]:
    """The output items of a recorded response (JSON body or event stream)."""
    if isinstance(body, dict) and isinstance(body.get("string"), str):
        body = body["string"]
    if isinstance(body, str):
        text = body.lstrip()
        if text.startswith("{"):
            try:
                body = orjson.loads(text)
            except orjson.JSONDecodeError:
                meta["response_error"] = text[:500]
                return []
        else:
            return _stream_output(body, meta)
    if not isinstance(body, dict):
        return []
    if isinstance(body.get("error"), dict):
        meta["response_error"] = body["error"].get("message")
        return []
    _note_status(body, meta)
    output = body.get("output")
    return output if isinstance(output, list) else []


def _note_status(response: dict[str, Any], meta: dict[str, Any]) -> None:
    if response.get("status") == "incomplete":
        meta["response_complete"] = False
        details = response.get("incomplete_details") or {}
        if details.get("reason") == "max_output_tokens":
            meta["response_cut"] = "max_tokens"


def _stream_output(text: str, meta: dict[str, Any]) -> list[Any]:
    done: list[Any] = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = orjson.loads(line[5:])
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            response = event.get("response") or {}
            _note_status(response, meta)
            output = response.get("output")
            return output if isinstance(output, list) else done
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            done.append(event["item"])
    meta["response_complete"] = False
    meta["response_cut"] = "stream_ended"
    return done


# --- writing ------------------------------------------------------------------------------


def _wire(messages: list[Message], state: dict[str, Any] | None) -> tuple[Any, list[Any]]:
    """The ``instructions`` and the input items for canonical ``messages``."""
    records = state["records"] if state else []
    originals = state["originals"] if state else {}
    native_only = state is None
    instructions = None
    start = 0
    if messages and origin(messages[0]) == SYSTEM_REC and state is not None:
        instructions = state["body"].get("instructions")
        if originals.get(SYSTEM_REC) != [messages[0]]:
            instructions = _text(messages[0]["content"])
        start = 1
    kinds: dict[str, str] = {}  # the kind each call went out as, by call id
    items: list[Any] = []
    for message in messages[start:]:
        rec = origin(message)
        end = metadata(message).get(END)
        template: list[Any] = []
        if rec is not None and isinstance(end, int) and 0 <= rec < end <= len(records):
            template = records[rec:end]
        if rec is not None and originals.get(rec) == [message]:
            items.extend(template)
            for item in template:
                if isinstance(item, dict) and _is_call(item):
                    kinds[call_id_of(item)] = item["type"]
            continue
        role = message["role"]
        if role == "assistant":
            made = _wire_assistant(message, template, native_only)
            for item in made:
                if isinstance(item, dict) and _is_call(item):
                    kinds.setdefault(call_id_of(item), item["type"])
            items.extend(made)
        elif role == "tool":
            items.extend(_wire_output(message, template[0] if template else None, kinds))
        else:
            items.append(_wire_message(message, template[0] if template else None, native_only))
    return instructions, items


def _input_memo(messages: list[Message], memo: dict[Any, Any]) -> list[Any]:
    """``to_wire``'s input list, each message's items made once per ``memo``.

    This is ``_wire``'s loop with no state (nothing to reuse from a source
    file), then ``to_wire``'s filter. A message's entry holds its sendable
    items with their ids, and for an assistant message the kinds of the calls
    it makes, which the outputs after it are written as; an output's entry
    says which kind it was made for. Holding the message in its entry keeps
    its id unique while it keys the memo; it is stripped of private keys
    only when it is made.
    """
    kinds: dict[str, str] = {}
    out: list[Any] = []
    seen: dict[str, Any] = {}
    for message in messages:
        role = message["role"]
        hit = memo.get(id(message))
        if role == "assistant":
            if hit is None:
                made = _wire_assistant(public(message), [], True)
                calls = [
                    (call_id_of(item), item["type"])
                    for item in made
                    if isinstance(item, dict) and _is_call(item)
                ]
                hit = memo[id(message)] = (message, _sendable(made), calls)
            for cid, kind in hit[2]:
                kinds.setdefault(cid, kind)
        elif role == "tool":
            kind = kinds.get(call_id(metadata(message)), "function_call")
            if hit is None or hit[2] != kind:
                made = _wire_output(public(message), None, kinds)
                hit = memo[id(message)] = (message, _sendable(made), kind)
        elif hit is None:
            made = [_wire_message(public(message), None, True)]
            hit = memo[id(message)] = (message, _sendable(made))
        for item, iid in hit[1]:
            unique = _once(item, iid, seen)
            if unique is not None:
                out.append(unique)
    return _without_lone_reasoning(out)


def _template_calls(template: list[Any]) -> list[dict[str, Any]]:
    return [item for item in template if isinstance(item, dict) and _is_call(item)]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
    )


def _wire_message(message: Message, old: Any, native_only: bool) -> dict[str, Any]:
    role = message["role"]
    item = dict(old) if isinstance(old, dict) and old.get("role") is not None else {}
    if role == "system" and item.get("role") in ("system", "developer"):
        pass
    else:
        item["role"] = role
    content = message["content"]
    if not (item and _canonical_content(item.get("content")) == content):
        item["content"] = _wire_content(content, "input_text", native_only)
    return item


def _wire_content(content: Any, text_type: str, native_only: bool) -> Any:
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            parts.append({"type": text_type, "text": part.get("text", "")})
        elif kind == "image":
            parts.append({"type": "input_image", "image_url": _image_url(part)})
        elif not native_only or kind == "input_file":
            parts.append(part)
    return parts


def _wire_assistant(message: Message, template: list[Any], native_only: bool) -> list[Any]:
    """The items of an assistant turn, in the order they were read.

    With the turn's items in the source file (``template``) and its content
    unchanged, those items go out again with the calls as the repair left
    them. Otherwise the items are made from the content, each call placed
    where it was read (``after_parts``) as the item it was read from.
    """
    calls = calls_of(message)
    content = message["content"]
    old_calls = _template_calls(template)
    if template:
        kept = [i for i in template if not (isinstance(i, dict) and _is_call(i))]
        rebuilt, _, _ = _read(kept)
        if (rebuilt[0]["content"] if rebuilt else "") == content:
            return _wire_template_turn(template, calls, old_calls)
    sources = _source_items(calls, old_calls)
    parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
    places = _call_places(calls, len(parts))
    out: list[Any] = _carried_reasoning(message, parts)
    texts: list[Any] = []  # the text parts of the message item being made
    envelope: Any = None  # the fields of the item they were read from, if any
    waiting = 0  # the calls already placed

    def flush() -> None:
        nonlocal envelope
        if texts:
            made: dict[str, Any] = {"type": "message", "role": "assistant"}
            if isinstance(envelope, dict):
                made |= {k: v for k, v in envelope.items() if k not in made}
            made["content"] = texts.copy()
            out.append(made)
            texts.clear()
        envelope = None

    def place(before: int) -> None:
        nonlocal waiting
        while waiting < len(calls) and places[waiting] <= before:
            flush()
            out.append(_wire_call(calls[waiting], sources[waiting]))
            waiting += 1

    for index, part in enumerate(parts):
        place(index)
        if isinstance(part, dict) and part.get("type") in MESSAGE_PARTS:
            read_from = part.get("item")  # the message item it was read from
            if texts and read_from != envelope:
                flush()  # the part of another item
            if part["type"] == "refusal":
                texts.append({k: v for k, v in part.items() if k != "item"})
                envelope = read_from
            elif part.get("text"):
                texts.append({"type": "output_text", "text": part["text"]})
                envelope = read_from
            continue
        flush()
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(kind, str) and (
            not native_only
            or kind in _NATIVE_PARTS
            or part.get("execution") == "server"
            or (kind.endswith("_call") and not _is_call(part))
        ):
            out.append(part)
    flush()
    place(len(parts))
    return out


def _carried_reasoning(message: Message, parts: list[Any]) -> list[Any]:
    """The reasoning items another shape kept beside the turn (Codex's, in
    ``metadata["reasoning"]``), which go out first, before the turn's text and calls:
    the model that wrote them reads them back, and a call it made after reasoning is
    sent with that reasoning before it, as Codex itself sends it. None when the
    content holds reasoning parts of its own (a Responses file's)."""
    carried = metadata(message).get("reasoning")
    if not isinstance(carried, list) or any(
        isinstance(part, dict) and part.get("type") == "reasoning" for part in parts
    ):
        return []
    return [item for item in carried if isinstance(item, dict) and item.get("type") == "reasoning"]


def _call_places(calls: list[dict[str, Any]], count: int) -> list[int]:
    """How many of the turn's ``count`` content parts go out before each call.

    A call read from Responses says where it stood (``after_parts``) when a
    part came after it; any other goes after every part. Calls keep their
    order (their results follow it), so none goes before the one before it.
    """
    places: list[int] = []
    floor = 0
    for call in calls:
        at = call.get("after_parts")
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < count:
            at = count
        floor = max(floor, at)
        places.append(floor)
    return places


def _wire_template_turn(
    template: list[Any], calls: list[dict[str, Any]], old_calls: list[dict[str, Any]]
) -> list[Any]:
    """A turn's items from the source file, with its calls as the repair left them.

    Each call takes the place of the item it was read from. An item whose call
    the repair removed (INT-1: its arguments were cut) is left out, and so is
    a reasoning item that no item of the model follows any more: the API
    refuses a reasoning item without its following item, and this one was
    the cut call's. A call the source did not hold goes last.
    """
    sources = _source_items(calls, old_calls)
    call_of = {id(source): call for call, source in zip(calls, sources, strict=True) if source}
    out: list[Any] = []
    lost = False
    for item in template:
        if isinstance(item, dict) and _is_call(item):
            call = call_of.get(id(item))
            if call is None:
                lost = True
                continue
            out.append(_wire_call(call, item))
        else:
            out.append(item)
    out += [
        _wire_call(call, None) for call, source in zip(calls, sources, strict=True) if not source
    ]
    return _without_lone_reasoning(out) if lost else out


def _source_items(calls: list[dict[str, Any]], old_calls: list[dict[str, Any]]) -> list[Any]:
    """The call item each call was read from, or None for a call the source did not hold.

    Repair removes calls (INT-1) and renames them (ID-1, ID-2), but never
    reorders them or changes their name and arguments. With as many calls
    as items, they pair in order; with fewer, each pairs with the next item
    that reads as the same name and arguments.
    """
    if len(calls) == len(old_calls):
        return list(old_calls)
    out: list[Any] = []
    start = 0
    for call in calls:
        found = None
        for index in range(start, len(old_calls)):
            read = canonical_call(old_calls[index])
            if read["name"] == call.get("name") and read["arguments"] == call.get("arguments"):
                found = index
                break
        if found is None:
            out.append(None)
        else:
            out.append(old_calls[found])
            start = found + 1
    return out


def _carried_call(call: dict[str, Any]) -> dict[str, Any]:
    """The item a call goes out as, from what it carries of the one it was read from.

    A call read from Responses carries its item's own fields (``item``: kind,
    item id, status...); a canonical call may carry the whole item. A call
    with none, or whose arguments cannot be that kind's (a custom tool's
    ``input``, another kind's fields), goes out as a ``function_call``.
    """
    carried = call.get("item")
    if not isinstance(carried, dict):
        return dict(_PLAIN_CALL)
    kind = carried.get("type")
    arguments = call.get("arguments")
    if kind == "function_call":
        fits = True
    elif kind == "custom_tool_call":
        fits = isinstance(arguments, dict) and "input" in arguments
    else:
        fits = (
            isinstance(kind, str)
            # A kind no check knows goes out as a function call: sent as it was
            # read, its output would answer nothing the provider knows of.
            and kind in RESPONSES_CALLS
            and kind not in RESPONSES_SERVER_ITEMS
            and carried.get("execution") != "server"
            and isinstance(arguments, dict)
        )
    if not fits:
        return dict(_PLAIN_CALL)
    return {k: v for k, v in carried.items() if k != "call_id"}


def _wire_call(call: dict[str, Any], old: Any) -> dict[str, Any]:
    """The call item for a canonical call; ``old`` is the item the source file holds."""
    if isinstance(old, dict):
        item = dict(old)
        by_id = "call_id" not in item and "id" in item  # a writer that pairs by "id"
    else:
        item = _carried_call(call)
        by_id = False
    cid = call_id(call)
    if by_id:
        item["id"] = cid
    else:
        item["call_id"] = cid
    arguments = call.get("arguments")
    kind = item.get("type")
    name = call.get("name")
    if kind == "function_call":
        item["name"] = name
        item["arguments"] = arguments_string(arguments)
    elif kind == "custom_tool_call" and isinstance(arguments, dict):
        item["name"] = name
        item["input"] = arguments.get("input")
    elif isinstance(arguments, dict):
        if isinstance(name, str) and name != kind:
            item["name"] = name
        item.update(arguments)
    return item


def _carried_output(md: dict[str, Any]) -> dict[str, Any] | None:
    """What a tool message carries of the output item it was read from, if anything."""
    carried = md.get("item")
    if isinstance(carried, dict):
        kind = carried.get("type")
        if isinstance(kind, str) and kind in RESPONSES_OUTPUTS:
            return carried  # a kind no check knows takes its call's output kind instead
    return None


def _wire_output(message: Message, old: Any, kinds: dict[str, str]) -> list[dict[str, Any]]:
    """The output item for a tool message; ``old`` is the item the source file holds.

    A result read from Responses goes out as the kind it was read as, with
    its own fields; any other (a result another provider's transcript holds,
    or one the repair made) as the output kind of the call it answers. Where
    that kind cannot hold the result's words (``_put_output``), a user
    message item with them follows it.
    """
    md = metadata(message)
    rid = call_id(md)
    content = message["content"]
    told: str | None = None
    if isinstance(old, dict) and _is_output(old):
        item = dict(old)
        if "call_id" in item or "id" not in item:
            item["call_id"] = rid
        else:
            item["id"] = rid
        if _output_content(item) != content:
            told = _put_output(item, content, md)
    else:
        carried = _carried_output(md)
        if carried is None:
            item = {"type": _output_kind(kinds.get(rid, "function_call")), "call_id": rid}
        else:
            item = {"type": carried["type"], "call_id": rid}
            item |= {k: v for k, v in carried.items() if k not in ("type", "call_id")}
        holds = any(key not in _OUTPUT_FIELDS for key in item)  # its result came with it
        if not (holds and _output_content(item) == content):
            told = _put_output(item, content, md)
    if not told:
        return [item]
    return [item, {"role": "user", "content": [{"type": "input_text", "text": told}]}]


def _put_output(item: dict[str, Any], content: Any, md: dict[str, Any]) -> str | None:
    """Write ``content`` into an output item, in the fields its kind holds a result in.

    A result the repair made (``healed``) says so in text; a kind whose result
    is not text gets no made-up result: a ``tool_search_output`` found no
    tools, an ``apply_patch_call_output`` did not complete. A
    ``computer_call_output`` holds a screenshot and a ``shell_call_output``
    the chunks a command wrote, with how it ended: one whose content is not
    that (a screenshot, as an image part or its JSON; the chunks' JSON) is
    ``status: "incomplete"`` with no screenshot or no chunks, and its words
    (a made result's "may have run, do not retry blindly") are returned, for
    the model to be told in a message of their own.
    """
    kind = item.get("type")
    healed = md.get("healed") is True
    if kind in _NO_TEXT_OUTPUTS:
        value = None if healed else _screenshot_or_chunks(kind, content)
        if value is not None:
            item["output"] = value
            return None
        item["output"] = {"type": "computer_screenshot"} if kind == "computer_call_output" else []
        item["status"] = "incomplete"
        return text_of(content) or None
    if kind in _FIELD_OUTPUTS:
        fields = None if healed or not isinstance(content, str) else json_object(content)
        if fields is not None:
            item.pop("output", None)
            item.update({k: v for k, v in fields.items() if k not in _OUTPUT_FIELDS})
        else:
            item.setdefault("tools", [])
        return None
    if kind == "apply_patch_call_output" and "status" not in item:
        item["status"] = "failed" if healed or md.get("is_error") else "completed"
    if isinstance(content, str):
        item["output"] = content
    else:
        item["output"] = _wire_content(content, "input_text", True)
    return None


def _image_url(part: dict[str, Any]) -> str:
    """A canonical image part as the URL the API takes: its own, or its data as a data URL."""
    return part.get("url") or f"data:{part.get('media_type')};base64,{part.get('data')}"


def _screenshot_or_chunks(kind: str, content: Any) -> Any:
    """The output a ``computer_call_output`` or ``shell_call_output`` holds, from a tool
    message's content: its JSON text (as read from Responses), or for a screenshot the
    content's first image; ``None`` when the content is neither."""
    if isinstance(content, list):
        if kind == "computer_call_output":
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image":
                    return {"type": "computer_screenshot", "image_url": _image_url(part)}
        return None
    if not isinstance(content, str) or not content.lstrip().startswith(("{", "[")):
        return None
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    if kind == "computer_call_output":
        fits = isinstance(value, dict) and value.get("type") == "computer_screenshot"
    else:
        fits = isinstance(value, list) and all(isinstance(chunk, dict) for chunk in value)
    return value if fits else None
