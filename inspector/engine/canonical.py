"""Reading canonical messages (SPEC §2): the definitions repair and the buffer share.

Everything here is the slow, obvious form of a check. ``repair.py`` inlines
some of these expressions in its hot loop; where it does, the inlined
expression must mean exactly what the function here means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inspector.engine.errors import InvalidTranscript

ROLES = ("system", "user", "assistant", "tool")

INTERRUPTED = "Tool call was interrupted; no result."

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
