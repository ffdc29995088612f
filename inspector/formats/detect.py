"""Telling shapes apart: which shape a message or list is written in, and fast sniffing.

``list_shape`` names the shape a list of messages or items is written in, so
each module can refuse the others' lists with a reason instead of misreading
them; ``Alternatives`` is the regex alternation the sniffers search 64 KiB of
every file with. No Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
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
_CHAT_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call"})


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
    # ``isdisjoint`` walks the record's few keys in C: every record of a list is asked.
    if role in ("tool", "developer", "function") or not _CHAT_KEYS.isdisjoint(item):
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
        global _keys_scan
        for text, _ in self._alternatives:
            if _quoted(text) and text not in _KEYS:
                _KEYS.add(text)
                _keys_scan = None  # made again, with this one

    def search(self, data: bytes) -> re.Match[bytes] | None:
        for text, pattern in self._alternatives:
            if len(text) < 3:  # no leading text worth finding first
                if text in data:
                    found = pattern.search(data)
                    if found:
                        return found
                continue
            # Every match starts with ``text``: try the pattern where it occurs, in
            # order (so this finds the alternative's leftmost match, as ``search``
            # would). ``re`` looks for a literal prefix a byte at a time, and one
            # opening with ``"``, as a JSON key does, stops it at every quote: on
            # 64 KiB of a session this is several times faster.
            match = pattern.match
            for at in _occurrences(data, text):
                found = match(data, at)
                if found:
                    return found
        return None


# Where each leading text occurs in the last sample searched, ``(data, {text: starts})``:
# every shape's sniff searches the same 64 KiB, many of them for the same keys
# (``"type"``, ``"role"``), so each is found once a file. One entry, replaced whole
# (atomic under threads), keyed by the bytes' equality; ``forget_sample`` drops it.
_found: tuple[bytes, dict[bytes, list[int]]] | None = None
# The largest data whose positions are kept: a sniffer's sample (``formats.HEAD_BYTES``).
_SAMPLE = 64 * 1024
# The leading texts that are a quoted word (``"type"``: no other quote in it), of every
# ``Alternatives``: all of them are found in one pass over a sample, a quote at a
# time, rather than with a ``find`` each over the whole 64 KiB (a quote ends a ``find``
# step as it ends ``re``'s: the pass costs about what three ``find`` do). Two such
# texts never both start at one quote, so the pass finds every occurrence of each.
_KEYS: set[bytes] = set()
_keys_scan: re.Pattern[bytes] | None = None


def _quoted(text: bytes) -> bool:
    return len(text) >= 3 and text[:1] == text[-1:] == b'"' and b'"' not in text[1:-1]


def _occurrences(data: bytes, text: bytes) -> Iterable[int]:
    """Every position ``text`` starts at in ``data``, overlapping ones too, in order."""
    global _found
    if len(data) > _SAMPLE:  # not a sample: found as they are tried, nothing kept
        return _starts(data, text)
    memo = _found
    if memo is None or not (memo[0] is data or memo[0] == data):
        memo = _found = (data, {})
    found = memo[1]
    starts = found.get(text)
    if starts is None:
        if text in _KEYS and _KEYS_DONE not in found:
            found.update(_scan_keys(data))
            starts = found.get(text)
        if starts is None:
            starts = found[text] = list(_starts(data, text))
    return starts


# Marks a sample's entry as holding every quoted key's positions.
_KEYS_DONE = b""


def _scan_keys(data: bytes) -> dict[bytes, list[int]]:
    """The positions of every quoted leading text in ``data``, in one pass."""
    global _keys_scan
    keys = sorted(_KEYS)
    scan = _keys_scan
    if scan is None:
        words = b"|".join(re.escape(text[1:]) for text in keys)
        scan = _keys_scan = re.compile(b'"(?=(' + words + b"))")
    found: dict[bytes, list[int]] = {text: [] for text in keys}
    found[_KEYS_DONE] = []
    for match in scan.finditer(data):
        found[b'"' + match.group(1)].append(match.start())
    return found


def _starts(data: bytes, text: bytes) -> Iterator[int]:
    find = data.find
    at = find(text)
    while at >= 0:
        yield at
        at = find(text, at + 1)


def forget_sample() -> None:
    """Drop what ``Alternatives.search`` found of the last sample (``formats.load`` does
    when a file has been read)."""
    global _found
    _found = None


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
