"""Reading and writing the JSON of document shapes: what their readers and writers share.

One JSON document read with a reason when it is not one (``read_json``), the
message list inside it (``message_list``), a changed document written laid
out like the original (``dump_like``) or a record line (``dump_line``); a
text part read without guessing (``part_text``); canonical content as text
(``text_of``); a content list's parts, the untyped ones as their JSON
(``typed_parts``); call arguments as an object or a JSON string; a late system
message as user text for the APIs whose system prompt lives outside the
turns (``system_as_user``). No Django.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from inspector.engine.canonical import arguments_object
from inspector.formats.base import FormatError, Parsed
from inspector.formats.private import Message


def message_list(data: bytes, refused: str) -> tuple[list[Any], dict[str, Any] | None]:
    """The messages of a file that is a JSON list of them, or an object with a ``messages`` list.

    Returns the list and the object around it (``None`` for a bare list), for
    a writer to put the repaired list back into (``dump_list``). ``FormatError``
    when ``data`` is not one JSON document (``read_json``), with ``refused``
    for any other document, and for an empty list.
    """
    doc = read_json(data)
    if isinstance(doc, list):
        items, wrapper = doc, None
    elif isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        items, wrapper = doc["messages"], doc
    else:
        raise FormatError(refused)
    if not items:
        raise FormatError("the list of messages is empty")
    return items, wrapper


def written_state(original: Parsed, key: str) -> dict[str, Any]:
    """The state a document reader left in ``original`` (one holding ``key``), for its writer.

    ``FormatError`` when ``original`` is not what this shape's ``parse`` returned.
    """
    state = original.state
    if not isinstance(state, dict) or key not in state:
        raise FormatError("serialise needs the Parsed that parse() returned for this file")
    return state


def dump_list(items: list[Any], state: dict[str, Any]) -> bytes:
    """A message list written back as ``message_list`` found it: bare, or in its object
    (``state["wrapper"]``), laid out like the file (``state["data"]``)."""
    wrapper = state["wrapper"]
    doc: Any = items if wrapper is None else {**wrapper, "messages": items}
    return dump_like(doc, state["data"])


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


def text_or_json(value: Any) -> str:
    """A value as text: a string as it is, ``None`` as nothing, anything else its JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value).decode()


def typed_parts(content: list[Any], part: Callable[[dict[str, Any]], Any]) -> list[Any]:
    """A list of content parts as canonical parts: each object with a string ``type``
    as ``part`` reads it (the shape's kinds), anything else as a text part holding its
    JSON, so nothing is lost or invalid (Codex's, pi's, Claude Code's and the AI SDK's
    readers)."""
    return [
        part(item)
        if isinstance(item, dict) and isinstance(item.get("type"), str)
        else {"type": "text", "text": orjson.dumps(item).decode()}
        for item in content
    ]


def image_part(url: str) -> dict[str, Any]:
    """An image URL as an image part: a ``data:`` URL's media type and base64 data, any
    other URL as it is."""
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "image", "media_type": media_type, "data": data}
    return {"type": "image", "url": url}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )
