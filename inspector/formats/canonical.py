"""The canonical form itself (SPEC §2): the spec's own message list, read and written.

A canonical file is a bare list of messages or an object with a
``messages`` list (other keys of that object are kept when writing back).
A record that is not a canonical message is a ``Problem`` naming its
1-based record number; the rest is read. A shape module like its siblings:
what the document shapes share lives in ``private`` (the private metadata
keys), ``jsondoc`` (reading and writing JSON), ``exchanges`` (recorded API
calls) and ``detect`` (telling shapes apart).
"""

from __future__ import annotations

from typing import Any

from inspector.engine.canonical import ROLES
from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.detect import Alternatives, refuse_others
from inspector.formats.jsondoc import dump_list, json_type, message_list
from inspector.formats.private import Message, strip_private

NAME = "canonical"
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Canonical JSON (the spec's own message list)"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 10
# Content is read only where it is written (``_foreign_message``): a blank message is
# blank in the file (see ``base``).
BLANK_IS_WRITTEN = True


def sniff(head: bytes) -> float:
    """Canonical files are the only ones whose messages carry a ``metadata`` object."""
    start = head.lstrip()[:1]
    if start not in (b"[", b"{") or not _ROLE.search(head):
        return 0.0
    if _METADATA.search(head):
        return 0.9
    return 0.2


def parse(data: bytes) -> Parsed:
    items, wrapper = message_list(
        data, "not a list of messages or an object with a 'messages' list"
    )
    refuse_others(items, NAME)
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
    return dump_list(strip_private(messages), original.state)


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
        return f"a message must be an object, not {json_type(item)}"
    role = item.get("role")
    if role not in ROLES:
        return f"role {role!r} is not one of {', '.join(ROLES)}"
    content = item.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return f"content must be text or a list of parts, not {json_type(content)}"
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


_ROLE = Alternatives(rb'"role"\s*:')
_METADATA = Alternatives(rb'"metadata"\s*:\s*\{')
