"""Telling shapes apart: which shape a message or list is written in, and fast sniffing.

``list_shape`` names the shape a list of messages or items is written in, so
each module can refuse the others' lists with a reason instead of misreading
them; ``Alternatives`` is the regex alternation the sniffers search 64 KiB of
every file with. No Django.
"""

from __future__ import annotations

import re
from typing import Any

from inspector.engine.canonical import ROLES
from inspector.formats.base import FormatError

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
            if len(text) < 3:  # no leading text worth finding first
                if text in data:
                    found = pattern.search(data)
                    if found:
                        return found
                continue
            # Every match starts with ``text``: ``find`` it and try the pattern there.
            # ``re`` looks for a literal prefix a byte at a time, and a prefix opening
            # with ``"``, as a JSON key does, stops it at every quote of the data: on
            # 64 KiB of a session this loop is several times faster, and it finds the
            # alternative's leftmost match as ``search`` would.
            find, match = data.find, pattern.match
            at = find(text)
            while at >= 0:
                found = match(data, at)
                if found:
                    return found
                at = find(text, at + 1)
        return None


def _leading_text(pattern: bytes) -> bytes:
    """The text every match of ``pattern`` starts with: up to its first special character."""
    text = re.split(rb"[\\.^$*+?{}\[\]|()]", pattern, maxsplit=1)[0]
    if pattern[len(text) : len(text) + 1] in (b"*", b"?", b"{"):
        text = text[:-1]  # the last character may be repeated zero times
    return text


_JSON_OPEN = re.compile(rb"[ \t\n\r\f\v]*[\[{]")


def opens_json(head: bytes) -> bool:
    """Whether a file's first bytes open a JSON list or object (after whitespace).

    What every document shape's ``sniff`` asks first; a match, not a stripped
    copy of the 64 KiB.
    """
    return _JSON_OPEN.match(head) is not None


def refuse_others(items: list[Any], shape: str, what: str = "messages") -> None:
    """``FormatError`` when ``items`` is empty or its items are clearly in another shape.

    ``what`` names the items in the reason (``messages``, ``contents``,
    ``input items``).
    """
    if not items:
        raise FormatError(f"the list of {what} is empty")
    found = list_shape(items)
    if found not in (None, shape):
        raise FormatError(f"the {what} are written in the {found} shape, not {shape}")
