"""The guard's shortcut for a refused Chat body whose breaks are few and early: only
the stretches of the body that the repair may change are read, repaired and written.

The plain path (``inspector.guard._repaired``) reads the whole body, repairs what
follows its kept start and writes the whole history back; the shape's writer
writes every message the repair left alone as the record it was read from, so
the body sent is the body's own items with a few stretches replaced. ``body``
makes that body from those stretches alone:

- one walk of the items follows the engine's fast loop (``engine.repair``) on
  what the reader would make of each (its role, its call ids, its result's id)
  and notes where it would stop: a result out of place or missing, an id used
  before or empty, a blank assistant message, or anything it cannot be sure of
  (content parts, say), which is left to the engine;
- each such place is widened to a *window* from the SPEC cut at or before it (just
  before an assistant message that surely ends a span) to the next one after
  it, and the window alone is read, repaired (``repair_history`` told its offset
  and the call ids given out before it: the engine's prefix rule, which
  ``repair_parsed_after`` relies on too) and written by the shape's writer;
- everything between windows is healthy, so the engine hands it back as it came
  and its calls keep their ids.

Windows before the kept start (the latest SPEC cut at or before the provider's
first problem) are repaired for the ids they give out but sent as they came, as
the plain path keeps that start. The body is read this way only where reading is
local: every record one the reader takes as Chat without a problem
(``tail._chat_ids``' conditions) and every id one the export keeps as it is (no
ID-3 renaming, which reads the whole history); and the body made is sent only if
the provider's check accepts it (the plain path's first writing), else ``None``
and the plain path runs. ``tests/guard/test_spans.py`` holds it to the plain
path byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from inspector import formats
from inspector.diagnosis import repair_parsed
from inspector.engine.canonical import is_partial
from inspector.formats.openai_chat import missing_content
from inspector.formats.private import call_id, calls_of
from inspector.guard import tail

__all__ = ["Made", "body"]

# What the walk makes of a record: its role as the engine sees it, its call ids (an
# assistant's), its result id (a tool's), whether it surely ends a span (an assistant
# message with non-blank text or a call whose arguments parse; ``None``: its calls'
# arguments are still to be parsed, ``_sure``) and whether it is a blank assistant
# message or one the walk cannot judge (the engine's work, not its).
_Item = tuple[str, list[str], str, bool | None, bool]


def _chat_walk(records: list[Any]) -> list[_Item] | None:
    """``_Item`` for each Chat record, or ``None`` where one is not a record the reader
    takes as it is (one loop: every Chat body refused early pays it)."""
    walked: list[_Item] = []
    add = walked.append
    keys = tail.CHAT_KEYS
    for record in records:
        if record.__class__ is not dict:
            return None
        content = record.get("content")
        if "content" not in record and missing_content(record) is not None:
            return None
        if content is not None and content.__class__ is not str and not isinstance(content, list):
            return None
        if not (keys.issuperset(record) and content.__class__ is not list) and not (
            tail.plain_chat(record, content)
        ):
            return None
        role = record.get("role")
        if role == "assistant":
            raw = record.get("tool_calls")
            if record.get("function_call") is not None or not isinstance(raw, list | None):
                return None
            ids: list[str] = []
            for call in raw or ():
                if call.__class__ is not dict or call.get("type") == "custom":
                    return None
                paired = call.get("call_id")
                cid = paired if paired.__class__ is str and paired else call.get("id")
                if cid is not None and cid.__class__ is not str:
                    return None
                ids.append(cid or "")
            prose = content.__class__ is str and bool(content) and not content.isspace()
            # Parts may be blank or not (the reader's to say): the engine's to judge.
            add(("assistant", ids, "", prose or (None if ids else False), not ids and not prose))
        elif role == "tool":
            rid = record.get("tool_call_id")
            add(("tool", _NO_IDS, rid if rid.__class__ is str else "", False, False))
        elif role in ("system", "developer", "user"):
            add(("user", _NO_IDS, "", False, False))
        else:
            return None  # "function" answers by name; anything else is a problem
    return walked


_NO_IDS: list[str] = []  # shared by every record without calls; never changed


def _chat_sure(record: dict[str, Any]) -> bool:
    """Whether an assistant record with calls has one whose arguments parse."""
    for call in record["tool_calls"]:
        function = call.get("function")
        arguments = function.get("arguments", "") if isinstance(function, dict) else ""
        if not is_partial(arguments):
            return True
    return False


# Per shape: the walk of one record, and whether a record with calls surely ends a span.
_ITEMS: dict[
    str, tuple[Callable[[list[Any]], list[_Item] | None], Callable[[dict[str, Any]], bool]]
] = {
    "openai-chat": (_chat_walk, _chat_sure),
}


class Made(NamedTuple):
    """What ``body`` made: the body, the list position of its kept start (its items are
    the body's own) and each window written after it, as (start, end) in the body's
    list and then in the one made."""

    body: dict[str, Any]
    kept: int
    windows: list[tuple[int, int, int, int]]


def body(
    asked: dict[str, Any],
    key: str,
    provider: str,
    first: int,
    is_read_only: Callable[[str], bool] | None,
) -> Made | None:
    """The plain path's first writing of ``asked`` (refused first at list position
    ``first``), made from its windows alone (see ``Made``); ``None`` where that is not
    sure to be it."""
    shape = _ITEMS.get(provider)
    if shape is None:
        return None
    walk, calls_sure = shape
    records = asked[key]
    walked = walk(records)
    if walked is None:
        return None
    chars, limit = formats.id_rules(provider)
    for _, ids, rid, _, _ in walked:
        for value in (*ids, rid):
            if value and (
                (chars is not None and not chars.fullmatch(value))
                or (limit is not None and len(value) > limit)
            ):
                return None  # an id the export renames: renaming reads the whole history
    n = len(walked)

    def sure(at: int) -> bool:
        """Whether the record at ``at`` surely ends a span (its calls parsed once, here)."""
        known = walked[at][3]
        if known is None:
            known = calls_sure(records[at])
            walked[at] = (*walked[at][:3], known, walked[at][4])
        return known

    # The plain path's kept start: the latest SPEC cut at or before the first problem.
    kept = 0
    for at in range(min(first, n - 1), 0, -1):
        if sure(at):
            kept = at
            break
        if walked[at][0] == "assistant" and isinstance(records[at].get("content"), list):
            return None  # its parts may make it a cut (the reader's to say): not sure of it
    out: list[Any] = []
    windows: list[tuple[int, int, int, int]] = []
    given: list[str] = []  # the call ids given out before ``pos``, in order
    pos = 0  # a sure cut, or 0: walked[pos:] is still to be walked
    while pos < n:
        base = len(given)
        trouble = _walk(walked, pos, {"", *given}, given)
        if trouble is None:
            break
        # The window: from the latest sure cut at or before the trouble to the next one.
        start = next((j for j in range(trouble, pos - 1, -1) if sure(j)), pos)
        end = next((j for j in range(trouble + 1, n) if sure(j)), n)
        if start < kept < end:
            return None  # never expected: the kept start is a sure cut
        del given[base + sum(len(walked[j][1]) for j in range(pos, start)) :]
        window = _window(asked, key, provider, records[start:end], start, given, is_read_only)
        if window is None:
            return None
        made, ids = window
        out.extend(records[pos:start])
        # A window inside the kept start goes out as it came, its ids given out as repaired.
        if end <= kept:
            out.extend(records[start:end])
        else:
            windows.append((start, end, len(out), len(out) + len(made)))
            out.extend(made)
        given.extend(ids)
        pos = end
    out.extend(records[pos:])
    return Made({**asked, key: out}, kept, windows)


def _walk(walked: list[_Item], pos: int, assigned: set[str], given: list[str]) -> int | None:
    """The engine's fast loop from ``pos`` over the walked records: ``None`` where it
    runs to the end and changes nothing, else where it stops (the head of the span it
    stops in, or the record). ``given`` gains the call ids it gives out."""
    head = -1
    expect: list[str] = []
    k = 0
    for i in range(pos, len(walked)):
        role, ids, rid, _, unsure = walked[i]
        if role == "tool":
            if k < len(expect) and rid and rid == expect[k]:
                k += 1
                continue
            return head if k < len(expect) else i
        if k < len(expect):
            return head
        if role == "user":
            continue
        if ids:
            if len(set(ids)) != len(ids) or not assigned.isdisjoint(ids):
                return i
            assigned.update(ids)
            given.extend(ids)
            head, expect, k = i, ids, 0
            continue
        if unsure:
            return i
        head, expect, k = -1, [], 0
    return head if k < len(expect) else None


def _window(
    asked: dict[str, Any],
    key: str,
    provider: str,
    records: list[Any],
    offset: int,
    given: list[str],
    is_read_only: Callable[[str], bool] | None,
) -> tuple[list[Any], list[str]] | None:
    """``records`` (from list position ``offset``) read alone, repaired as in the whole
    (told ``offset`` and the ``given`` ids) and written: the items, and the call ids
    the repair gave out; ``None`` where the reader reads them otherwise alone."""
    try:
        parsed = formats.load(orjson.dumps({**asked, key: records}), provider)
    except formats.FormatError:
        return None
    if parsed.problems or parsed.causes or parsed.not_started or parsed.state["mode"] != "body":
        return None
    if parsed.sources != [[n] for n in range(1, len(records) + 1)]:
        return None  # a record read as none, or as more than one message
    repaired = repair_parsed(parsed, is_read_only, offset=offset, assigned=given)
    if not tail.sendable_ids(repaired.messages, provider):
        return None  # an id the export would rename (ID-3) reads the whole
    written = orjson.loads(formats.FORMATS[provider].serialise(repaired.messages, parsed))
    ids = [call_id(call) for m in repaired.messages for call in calls_of(m)]
    return written[key], ids
