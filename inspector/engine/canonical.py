"""Reading canonical messages (SPEC §2): the definitions repair and the buffer share.

Everything here is the slow, obvious form of a check. ``repair.py`` inlines
some of these expressions in its hot loop; where it does, the inlined
expression must mean exactly what the function here means.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from inspector.engine.errors import InvalidTranscript

ROLES = ("system", "user", "assistant", "tool")

INTERRUPTED = "Tool call was interrupted; no result."

# Where JSON text that is an object starts: after JSON's own whitespace, a "{".
_OBJECT_START = re.compile(r"[ \t\n\r]*\{")

# Shared read-only stand-in for missing metadata; never handed out for writing.
EMPTY: Mapping[str, Any] = {}


def call_id(obj: Mapping[str, Any]) -> str:
    """The id of a call or of a tool result's metadata, under either spelling (MEM-11).

    ``tool_call_id`` wins; the provider's flat ``id`` is read when
    ``tool_call_id`` is missing or empty. A missing or empty id is ``""``.
    Raises ``InvalidTranscript`` (without an index: callers add it) when the
    id is present but not a string.
    """
    value = obj.get("tool_call_id") or obj.get("id") or ""
    if value.__class__ is not str and not isinstance(value, str):
        raise InvalidTranscript(f"call id {value!r} is not a string")
    return value


def call_id_text(obj: Mapping[str, Any] | None) -> str:
    """``call_id``'s reading for a display or a writer that must not fail: the same spelling
    rule, with an id that is not a string as its text (``None`` and a missing holder: "")."""
    if not obj:
        return ""
    value = obj.get("tool_call_id") or obj.get("id") or ""
    if value.__class__ is str or isinstance(value, str):  # most ids: no conversion
        return value
    return str(value)


def call_id_key(obj: Mapping[str, Any]) -> str:
    """The key a new id is written under: the spelling ``call_id`` read it from."""
    if obj.get("tool_call_id"):
        return "tool_call_id"
    if obj.get("id"):
        return "id"
    return "tool_call_id"


def is_blank(content: Any) -> bool:
    """True for content with nothing in it: missing, empty or whitespace text (MSG-1).

    A list counts as blank only when every part is a text part with blank
    text; an image or any other part type is substance.
    """
    if content is None:
        return True
    if isinstance(content, str):
        return not content or content.isspace()
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                return False
            text = part.get("text")
            if text and not (isinstance(text, str) and text.isspace()):
                return False
        return True
    return False


def json_object(text: str) -> dict[str, Any] | None:
    """The object ``text`` holds as JSON, or ``None`` when it holds no object."""
    if not _OBJECT_START.match(text):
        # JSON text that is an object starts with "{": skip the parse (and the
        # exception) for the plain text that most other strings are.
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def arguments_object(arguments: Any) -> Any:
    """A call's arguments as the object they stand for, where they stand for one.

    The one reading of a call's ``arguments`` (SPEC §2, §4 step 1) that the
    repair, the format readers and writers and the diagnosis share:

    - an object is itself;
    - an empty or all-whitespace string means no arguments: ``{}``;
    - a string that parses as a JSON object is that object;
    - anything else (a string cut mid-stream, JSON that is no object,
      ``None``) is returned as it is, for the caller to judge.
    """
    if not isinstance(arguments, str):
        return arguments
    if not arguments or arguments.isspace():
        return {}
    value = json_object(arguments)
    return arguments if value is None else value


def is_partial(arguments: Any) -> bool:
    """True for arguments cut mid-stream (INT-1).

    That is a non-empty string, not only whitespace, that does not parse as
    a JSON object. An empty string is a complete call with no arguments;
    an object, ``None`` or any other non-string is never partial.
    """
    return isinstance(arguments, str) and not isinstance(arguments_object(arguments), dict)


def metadata_of(message: Mapping[str, Any], index: int | None) -> Mapping[str, Any]:
    """The message's metadata, ``{}`` when missing; bad input when not an object."""
    metadata = message.get("metadata", EMPTY)
    if metadata.__class__ is not dict and not isinstance(metadata, dict):
        raise InvalidTranscript("metadata is not an object", index)
    return metadata


def tool_calls_of(metadata: Mapping[str, Any], index: int | None) -> list[Any]:
    """An assistant's calls, ``[]`` when there are none; bad input when not a list."""
    calls = metadata.get("tool_calls")
    if calls is None:
        return []
    if calls.__class__ is not list and not isinstance(calls, list):
        raise InvalidTranscript("tool_calls is not a list", index)
    return calls


def check_message(message: Any, index: int | None) -> None:
    """Raise ``InvalidTranscript`` unless ``message`` is a readable canonical message."""
    if not isinstance(message, dict):
        raise InvalidTranscript(f"a message must be an object, not {type(message).__name__}", index)
    if "role" not in message:
        raise InvalidTranscript("the message has no role", index)
    role = message["role"]
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidTranscript(f"role {role!r} is not one of {', '.join(ROLES)}", index)
    try:
        metadata = metadata_of(message, index)
        if role == "assistant":
            for number, call in enumerate(tool_calls_of(metadata, index)):
                if not isinstance(call, dict):
                    raise InvalidTranscript(
                        f"tool call {number} must be an object, not {type(call).__name__}", index
                    )
                call_id(call)
        elif role == "tool":
            call_id(metadata)
    except InvalidTranscript as error:
        if error.index is None and index is not None:
            raise InvalidTranscript(error.problem, index) from None
        raise


def explain(messages: Any) -> InvalidTranscript | None:
    """Find the first thing that makes ``messages`` unreadable, or ``None``.

    The fast paths let Python's own ``TypeError``/``KeyError`` signal bad
    input and call this afterwards for the message a person can act on.
    """
    if not isinstance(messages, list):
        return InvalidTranscript(
            f"the transcript must be a list of messages, not {type(messages).__name__}"
        )
    for index, message in enumerate(messages):
        try:
            check_message(message, index)
        except InvalidTranscript as error:
            return error
    return None
