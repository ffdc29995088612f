"""The canonical form itself (SPEC §2), plus what the JSON shape modules share.

A canonical file is a bare list of messages or an object with a
``messages`` list (other keys of that object are kept when writing back).
A record that is not a canonical message is a ``Problem`` naming its
1-based record number; the rest is read.

The second half of this module holds the helpers the provider shapes
(``openai_chat``, ``anthropic``, ``responses``, ``gemini``) share:

- *Private metadata.* A shape module notes where each canonical message came
  from under metadata keys starting with ``_`` (``_rec``: the index of the
  source record, ``-1`` for a system prompt kept outside the list and ``-2``
  for a recorded response; ``_part``: the block or part inside it; ``_end``:
  one past the last item of a group). The engine carries such keys through,
  so ``serialise`` can write untouched records back exactly and regroup
  messages that one source record was split into. ``strip_private`` removes
  them for canonical downloads.
- *What a provider's item held beyond the canonical form.* Some keys are
  public, so a canonical download keeps them and its export to that
  provider is the same: a Responses call keeps ``item`` (its item's kind,
  item id, status...) and ``after_parts`` (where it stood among its
  message's parts), a Responses result ``item`` in its metadata, and a
  Gemini call or text part ``thought_signature``. Only the shape they came
  from reads them; the others' exports leave them out.
- *Recorded exchanges.* The corpus' ``.extracted.json`` files hold the
  request and response bodies of recorded API calls as ``{"interactions":
  [{"uri", "request_body", "response_status", "response_body"}, ...]}``.
  Each request carries the whole history so far, so the last exchange is the
  fullest conversation: its request's messages with its response appended.
  Writing a changed history back appends one more interaction holding the
  repaired history as its request (no response), so the recording stays as
  it was and reading the file again gives the repaired history.
- *List detection.* ``list_shape`` names the shape a list of messages or
  items is written in, so each module can refuse the others' lists with a
  reason instead of misreading them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import compress, count
from operator import is_not
from typing import Any

import orjson

from inspector.engine.canonical import arguments_object, call_id_text
from inspector.formats.base import FormatError, Parsed, Problem

NAME = "canonical"
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Canonical JSON (the spec's own message list)"
EXTENSION = "json"
# Content is read only where it is written (``_foreign_message``): a blank message is
# blank in the file (see ``base``).
BLANK_IS_WRITTEN = True

ROLES = ("system", "user", "assistant", "tool")

REC = "_rec"
PART = "_part"
END = "_end"
SYSTEM_REC = -1
RESPONSE_REC = -2

Message = dict[str, Any]


# --- the canonical shape ----------------------------------------------------------------


def sniff(head: bytes) -> float:
    """Canonical files are the only ones whose messages carry a ``metadata`` object."""
    start = head.lstrip()[:1]
    if start not in (b"[", b"{") or not _ROLE.search(head):
        return 0.0
    if _METADATA.search(head):
        return 0.9
    return 0.2


def message_list(doc: Any, refused: str) -> tuple[list[Any], dict[str, Any] | None]:
    """The messages of a file that is a JSON list of them, or an object with a ``messages`` list.

    Returns the list and the object around it (``None`` for a bare list), for
    a writer to put the repaired list back into. ``FormatError`` with
    ``refused`` for anything else, and for an empty list.
    """
    if isinstance(doc, list):
        items, wrapper = doc, None
    elif isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        items, wrapper = doc["messages"], doc
    else:
        raise FormatError(refused)
    if not items:
        raise FormatError("the list of messages is empty")
    return items, wrapper


def parse(data: bytes) -> Parsed:
    doc = read_json(data)
    items, wrapper = message_list(doc, "not a list of messages or an object with a 'messages' list")
    shape = list_shape(items)
    if shape not in (None, NAME):
        raise FormatError(f"the messages are written in the {shape} shape, not canonical")
    messages: list[Message] = []
    sources: list[list[int]] = []
    problems: list[Problem] = []
    for number, item in enumerate(items, 1):
        foreign = _foreign_message(item)
        if foreign:
            raise FormatError(f"message {number}: {foreign}")
        reason = _bad_message(item)
        if reason:
            problems.append(Problem(number, reason))
            continue
        if item.get("content") is None or not isinstance(item.get("metadata"), dict):
            message = dict(item)  # filled in on a copy: the document stays as read
            if message.get("content") is None:
                message["content"] = ""
            if not isinstance(message.get("metadata"), dict):
                message["metadata"] = {}
        else:
            message = item  # nothing to fill in: no copy of each of 100,000 messages
        messages.append(message)
        sources.append([number])
    if not messages:
        raise FormatError(f"no record is a canonical message (record 1: {problems[0].reason})")
    return Parsed(
        format=NAME,
        messages=messages,
        sources=sources,
        problems=problems,
        state={"data": data, "wrapper": wrapper},
    )


def serialise(messages: list[Message], original: Parsed) -> bytes:
    """Write the list (inside its wrapper object, if it had one).

    Unreadable records were reported when reading and are not written into a
    changed file: a provider would reject them anyway.
    """
    if messages == original.messages:
        data: bytes = original.state["data"]
        return data
    clean = strip_private(messages)
    wrapper = original.state["wrapper"]
    doc: Any = clean if wrapper is None else {**wrapper, "messages": clean}
    return dump_like(doc, original.state["data"])


def _foreign_message(item: Any) -> str:
    """Why ``item`` is another shape's record under a canonical role, or ``""``.

    A canonical message without ``content`` is read as an empty one; but one
    that also holds fields canonical messages do not have (Cursor's
    ``message``, Gemini's ``parts``) keeps its content there, and reading it
    as empty would have a repair drop what it says.
    """
    if not isinstance(item, dict) or "content" in item or item.get("role") not in ROLES:
        return ""
    metadata = item.get("metadata")
    if item.get("role") == "tool" or (isinstance(metadata, dict) and metadata.get("tool_calls")):
        return ""
    foreign = [key for key in item if key not in ("role", "metadata")]
    if not foreign:
        return ""
    held = ", ".join(repr(key) for key in foreign[:6])
    return f"a {item['role']} message without 'content' that holds {held}: not a canonical message"


def _bad_message(item: Any) -> str:
    """Why ``item`` is not a canonical message, or ``""``."""
    if not isinstance(item, dict):
        return f"a message must be an object, not {_json_type(item)}"
    role = item.get("role")
    if role not in ROLES:
        return f"role {role!r} is not one of {', '.join(ROLES)}"
    content = item.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return f"content must be text or a list of parts, not {_json_type(content)}"
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return "metadata must be an object"
    metadata = metadata or {}
    calls = metadata.get("tool_calls")
    if role == "assistant" and calls is not None:
        if not isinstance(calls, list):
            return "metadata.tool_calls must be a list of objects"
        for call in calls:
            if not isinstance(call, dict):
                return "metadata.tool_calls must be a list of objects"
        for call in calls:
            if not isinstance(call.get("tool_call_id", call.get("id", "")), str):
                return "a tool call id must be a string"
    if role == "tool" and not isinstance(metadata.get("tool_call_id", ""), str):
        return "metadata.tool_call_id must be a string"
    return ""


# --- private metadata ---------------------------------------------------------------------


def strip_private(messages: Iterable[Message]) -> list[Message]:
    """Copies of ``messages`` without metadata keys starting with ``_``.

    Messages that have none are returned as they are (not copied).
    """
    return [public(m) for m in messages]


def public(message: Message) -> Message:
    metadata = message.get("metadata")
    if metadata.__class__ is not dict and not isinstance(metadata, dict):
        return message
    # A plain loop: this runs once per message per export, and most have no private key.
    for key in metadata:
        if key.startswith("_"):
            break
    else:
        return message
    clean = dict(message)
    clean["metadata"] = {k: v for k, v in metadata.items() if not k.startswith("_")}
    return clean


def origin(message: Message) -> int | None:
    """The source record a message came from (``_rec``), or None for a new one."""
    metadata = message.get("metadata")
    rec = metadata.get(REC) if isinstance(metadata, dict) else None
    return rec if isinstance(rec, int) else None


def metadata(message: Message) -> dict[str, Any]:
    value = message.get("metadata")
    return value if value.__class__ is dict or isinstance(value, dict) else {}


def calls_of(message: Message) -> list[dict[str, Any]]:
    value = message.get("metadata")
    if value.__class__ is not dict and not isinstance(value, dict):
        return []
    calls = value.get("tool_calls")
    if calls.__class__ is not list and not isinstance(calls, list):
        return []
    return [c for c in calls if c.__class__ is dict or isinstance(c, dict)]


def same_start(before: list[Message], after: list[Message]) -> int:
    """How many messages ``after`` starts with that are ``before``'s very objects.

    Repair returns the messages it leaves alone as the same dicts, so a
    repaired history starts with its original up to the first repair. Found
    in C (the first place the two lists hold different objects), not a
    message at a time: a long session is mostly that run.
    """
    return next(compress(count(), map(is_not, before, after)), min(len(before), len(after)))


def turns(
    messages: list[Message],
    side: Callable[[Message], str],
    *,
    by_record: bool,
    user_text: Callable[[Message], bool] | None = None,
) -> list[tuple[str, int | None, list[Message]]]:
    """Messages grouped as a provider that merges a side's consecutive messages sends them.

    Each group is ``(side, source record, members)``: consecutive messages of
    one ``side`` share a group. With ``by_record`` (writing a file back),
    messages read from one record stay that record's and messages of two
    records stay apart; a message no record holds (the repair's) joins the
    group before it, except that a message ``user_text`` says is a user's own
    text joins only a group holding results (a note the repair added goes with
    the results before it, never with a user's words). Without ``by_record``
    (a request body) records are not looked at.
    """
    groups: list[tuple[str, int | None, list[Message]]] = []
    for message in messages:
        role = side(message)
        rec = origin(message) if by_record else None
        if groups and groups[-1][0] == role:
            _, last_rec, members = groups[-1]
            if rec is not None and last_rec is not None:
                joins = rec == last_rec
            elif rec is None and user_text is not None and user_text(message):
                joins = any(m["role"] == "tool" for m in members)
            else:
                joins = True
            if joins:
                members.append(message)
                groups[-1] = (role, last_rec if rec is None else rec, members)
                continue
        groups.append((role, rec, [message]))
    return groups


def unchanged(messages: list[Message], before: list[Message]) -> bool:
    """Whether a writer was handed back the history it read: then it gives the file's bytes."""
    if len(messages) != len(before):
        return False
    return all(m is b or m == b for m, b in zip(messages, before, strict=True))


def call_id(obj: dict[str, Any]) -> str:
    """A call's or result's id under either spelling (SPEC MEM-11): the engine's reading."""
    return call_id_text(obj)


def kept_calls(old: list[Any], new: list[Any]) -> Callable[[], tuple[str, str] | None]:
    """Walk an assistant record's original call blocks against the repaired message's calls.

    The record writers of pi, Cline and pydantic-ai call the returned function once
    per original call block, in order: it gives the call's id as read and the id
    it goes out with (the same unless renamed), or ``None`` if the repair removed
    the call. A call is kept when the next repaired call has its name and arguments.
    """
    calls = [c for c in new if isinstance(c, dict)]
    n = k = 0

    def next_call() -> tuple[str, str] | None:
        nonlocal n, k
        call = old[n] if n < len(old) else None
        n += 1
        candidate = calls[k] if k < len(calls) else None
        if (
            call is None
            or candidate is None
            or candidate.get("name") != call["name"]
            or candidate.get("arguments") != call["arguments"]
        ):
            return None
        k += 1
        return call["tool_call_id"], call_id(candidate)

    return next_call


def by_origin(messages: list[Message]) -> dict[int, list[Message]]:
    """The parsed messages of each source record, for spotting untouched groups."""
    groups: dict[int, list[Message]] = {}
    for message in messages:
        rec = origin(message)
        if rec is not None:
            groups.setdefault(rec, []).append(message)
    return groups


# --- reading and writing JSON -------------------------------------------------------------


def read_json(data: bytes) -> Any:
    """One JSON document, or ``FormatError`` saying why it is not one."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        reason = f"not a single JSON document ({exc.msg} at character {exc.pos})"
        raise FormatError(reason) from None


def dump_like(doc: Any, original: bytes) -> bytes:
    """``doc`` as JSON laid out like ``original``: indented if it was, same final newline."""
    indented = b"\n " in original[:4096]
    out = orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indented else 0)
    return out + b"\n" if original.endswith(b"\n") else out


def dump_line(value: Any, crlf: bool = False) -> bytes:
    """One JSONL line (without the newline) for a record the writer made."""
    out = orjson.dumps(value)
    return out + b"\r" if crlf else out


def part_text(part: dict[str, Any], known: Iterable[str] = ()) -> Any:
    """A text part's ``text`` as a reader takes it: ``""`` when the part has none.

    A part with no ``text`` that holds some other text (a field this shape
    does not have: another agent's or a newer version's) is not read as an
    empty part, which a repair would drop with its message: ``FormatError``
    names the field. ``known`` names the shape's own fields of a text part
    that hold text but not the words (ids, a state). A ``text`` that is not
    a string is returned as it is.
    """
    if "text" in part:
        return part["text"]
    elsewhere = unread_text_fields(part, known)
    if elsewhere:
        raise FormatError(
            f"a text part without 'text' holds {elsewhere}: a field this reader does not "
            "know, so the file was not read"
        )
    return ""


def unread_text_fields(part: dict[str, Any], known: Iterable[str] = ()) -> str:
    """The fields of a text part without ``text`` that hold text, named for a message."""
    skip = {"type", "text", *known}
    held = [
        repr(key)
        for key, value in part.items()
        if key not in skip and isinstance(value, str) and value.strip()
    ]
    return ", ".join(held[:4])


def text_of(content: Any) -> str:
    """The text of canonical content: the string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


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
    again, and one item goes out under its id once.
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


SYSTEM_NOTE = "[system message]"


def system_as_user(message: Message) -> Message:
    """A system message that stands after the first turn, as the user text every API takes.

    For the shapes whose ``system`` lives outside the turn list (Anthropic,
    Gemini): its text under a first line ``[system message]``, where it stood.
    """
    return {
        "role": "user",
        "content": f"{SYSTEM_NOTE}\n{text_of(message.get('content'))}",
        "metadata": {},
    }


def arguments_dict(arguments: Any) -> dict[str, Any]:
    """Call arguments for an API that takes an object (Anthropic ``input``, Gemini ``args``).

    Read by the engine's ``arguments_object`` (an empty string is ``{}``).
    Arguments that are not an object (a string cut mid-stream that a result
    still answered, a JSON list) are kept whole under ``raw_arguments``
    rather than guessed at.
    """
    value = arguments_object(arguments)
    if isinstance(value, dict):
        return value
    return {} if value is None else {"raw_arguments": value}


def arguments_string(arguments: Any) -> str:
    """Call arguments as the JSON string OpenAI's shapes carry."""
    if isinstance(arguments, str):
        return arguments
    return orjson.dumps({} if arguments is None else arguments).decode()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


# --- recorded exchanges -------------------------------------------------------------------


@dataclass(slots=True)
class Exchange:
    """One recorded request/response pair. ``index`` is its 0-based position."""

    index: int
    uri: str
    request: dict[str, Any]
    response: Any
    status: int | None


def exchanges(doc: Any) -> list[Exchange] | None:
    """The exchanges of an ``{"interactions": [...]}`` recording, or None if it is not one."""
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        return None
    found = []
    for index, item in enumerate(doc["interactions"]):
        if isinstance(item, dict) and isinstance(item.get("request_body"), dict):
            status = item.get("response_status")
            found.append(
                Exchange(
                    index,
                    str(item.get("uri") or ""),
                    item["request_body"],
                    item.get("response_body"),
                    status if isinstance(status, int) else None,
                )
            )
    return found


def request_shape(body: dict[str, Any], uri: str = "") -> str:
    """Which provider a recorded request body was sent to."""
    if "chat/completions" in uri:
        return "openai-chat"
    if uri.rstrip("/").endswith("/responses") or "/responses?" in uri:
        return "responses"
    if "generateContent" in uri or "generativelanguage" in uri or "aiplatform" in uri:
        return "gemini"
    if "/v1/messages" in uri:
        return "anthropic"
    if "contents" in body:
        return "gemini"
    if "input" in body:
        return "responses"
    messages = body.get("messages")
    if isinstance(messages, list):
        shape = list_shape(messages)
        if shape in ("anthropic", "openai-chat"):
            return shape
        if "max_tokens" in body and ("system" in body or "tool_choice" in body):
            return "anthropic"
        return "openai-chat"
    return ""


def use_exchange(
    found: list[Exchange],
    shape: str,
    conversation: int | None,
    meta: dict[str, Any],
    state: dict[str, Any],
) -> Exchange:
    """``pick_exchange``, noting in ``meta`` and ``state`` which exchange was read."""
    chosen = pick_exchange(found, shape, conversation)
    meta |= {"container": "exchanges", "exchanges": len(found), "exchange": chosen.index}
    meta["response_status"] = chosen.status
    state |= {"mode": "exchange", "exchange": chosen}
    return chosen


def pick_exchange(found: list[Exchange], shape: str, conversation: int | None) -> Exchange:
    """The exchange to read: the last one, or ``conversation`` (0-based) when given.

    Refuses (``FormatError``) when that exchange was sent to another provider:
    a recording can switch providers midway, and its last exchange decides.
    """
    if not found:
        raise FormatError("the recording holds no request bodies")
    if conversation is None:
        chosen = found[-1]
    elif 0 <= conversation < len(found):
        chosen = found[conversation]
    else:
        raise FormatError(
            f"the recording has {len(found)} exchanges; there is no exchange {conversation}"
        )
    actual = request_shape(chosen.request, chosen.uri)
    if actual != shape:
        api = actual or "an unknown API"
        number = chosen.index + 1
        raise FormatError(f"exchange {number} of the recording was sent to {api}, not {shape}")
    return chosen


def append_exchange(doc: dict[str, Any], chosen: Exchange, body: dict[str, Any]) -> dict[str, Any]:
    """The recording with one more interaction whose request is ``body`` (no response)."""
    interaction: dict[str, Any] = {"uri": chosen.uri, "request_body": body}
    return {**doc, "interactions": [*doc["interactions"], interaction]}


# --- telling shapes apart -----------------------------------------------------------------

_ANTHROPIC_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "document",
        "search_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
_OPENAI_PARTS = frozenset({"image_url", "input_audio"})
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
_RESPONSES_ITEMS = frozenset({"message", "reasoning", "item_reference"})


def item_shape(item: Any) -> str | None:
    """The shape one message (or Responses item) is clearly written in, if any."""
    if not isinstance(item, dict):
        return None
    role = item.get("role")
    if "parts" in item or role == "model":
        return "gemini"
    kind = item.get("type")
    if isinstance(kind, str) and (
        kind in _RESPONSES_ITEMS or kind.endswith(("_call", "_call_output"))
    ):
        return "responses"
    if isinstance(item.get("metadata"), dict) and role in ROLES:
        return "canonical"
    if role in ("tool", "developer", "function") or any(
        key in item for key in ("tool_calls", "tool_call_id", "function_call")
    ):
        return "openai-chat"
    content = item.get("content")
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if not isinstance(kind, str):
                continue
            if kind in _ANTHROPIC_BLOCKS or (kind == "image" and "source" in part):
                return "anthropic"
            if kind in _OPENAI_PARTS:
                return "openai-chat"
            if kind in _RESPONSES_PARTS:
                return "responses"
    return None


def list_shape(items: list[Any]) -> str | None:
    """The shape most clearly marked items of ``items`` are in; None if no item says."""
    votes: dict[str, int] = {}
    for item in items:
        shape = item_shape(item)
        if shape:
            votes[shape] = votes.get(shape, 0) + 1
    if not votes:
        return None
    return max(votes, key=lambda shape: votes[shape])


class Alternatives:
    """A regex alternation, searched one alternative at a time where its leading text occurs.

    ``re`` tries an alternation at every position of the data; looking for each
    alternative's leading text first (``in``, a fast scan) rules most out at
    once, which matters to ``sniff``, run by every shape on 64 KiB of every
    file. ``search`` finds a match of some alternative, not always the
    leftmost: the sniffers only ask whether there is one.
    """

    def __init__(self, *patterns: bytes) -> None:
        self._alternatives = [(_leading_text(p), re.compile(p)) for p in patterns]

    def search(self, data: bytes) -> re.Match[bytes] | None:
        for text, pattern in self._alternatives:
            if text in data:
                found = pattern.search(data)
                if found:
                    return found
        return None


def _leading_text(pattern: bytes) -> bytes:
    """The text every match of ``pattern`` starts with: up to its first special character."""
    text = re.split(rb"[\\.^$*+?{}\[\]|()]", pattern, maxsplit=1)[0]
    if pattern[len(text) : len(text) + 1] in (b"*", b"?", b"{"):
        text = text[:-1]  # the last character may be repeated zero times
    return text


_ROLE = re.compile(rb'"role"\s*:')
_METADATA = re.compile(rb'"metadata"\s*:\s*\{')
