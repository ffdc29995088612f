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
from inspector.engine.providers import check, local_cut
from inspector.formats.base import Parsed
from inspector.formats.detect import item_shape
from inspector.formats.openai_chat import missing_content
from inspector.formats.private import call_id, calls_of
from inspector.formats.responses import is_call, is_output
from inspector.guard import tail

__all__ = ["Made", "body"]

# What the walk makes of a record: its role as the engine sees it, its call ids (an
# assistant's), its result id (a tool's), whether it surely ends a span (an assistant
# message with non-blank text or a call whose arguments parse; ``None``: its calls'
# arguments are still to be parsed, ``_sure``) and whether it is a blank assistant
# message or one the walk cannot judge (the engine's work, not its).
_Item = tuple[str, list[str], str, bool | None, bool]


class _Walk(NamedTuple):
    """What a walk makes of the records: an ``_Item`` per canonical message, the record
    each comes from (``None``: one message a record, in order) and, for Anthropic, the
    record of the latest call under each result's id before it (-1: none), which the
    reader names the result after."""

    items: list[_Item]
    where: list[int] | None
    named: dict[int, int]


def _chat_walk(records: list[Any]) -> _Walk | None:
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
    return _Walk(walked, None, {})


_NO_IDS: list[str] = []  # shared by every record without calls; never changed


def _chat_sure(record: dict[str, Any]) -> bool:
    """Whether an assistant record with calls has one whose arguments parse."""
    for call in record["tool_calls"]:
        function = call.get("function")
        arguments = function.get("arguments", "") if isinstance(function, dict) else ""
        if not is_partial(arguments):
            return True
    return False


def _anthropic_walk(records: list[Any]) -> _Walk | None:
    """``_Item`` for each canonical message ``anthropic._canonical_messages`` makes of the
    records (a user record of ``tool_result`` blocks is a tool message per result and a
    user message per run of its other blocks), or ``None`` where a record is not one the
    reader takes as it is (``tail._anthropic_ids``' conditions)."""
    walked: list[_Item] = []
    where: list[int] = []
    named: dict[int, int] = {}
    callers: dict[str, int] = {}  # each call id: the record of its latest call
    add = walked.append
    keys = tail.ANTHROPIC_KEYS
    kinds = tail.ANTHROPIC_PARTS
    answered = False
    for r, record in enumerate(records):
        role = record.get("role") if record.__class__ is dict else None
        if role not in ("user", "assistant", "system"):
            return None  # not a message, or a role the Messages API has not
        content = record.get("content")
        plain = keys.issuperset(record)
        if content.__class__ is str:
            if not plain and item_shape(record) not in (None, "anthropic"):
                return None
            if role == "assistant":
                if walked and walked[-1][0] == "assistant" and walked[-1][1]:
                    return None  # a run the reader may join into one message (``runs``)
                prose = bool(content) and not content.isspace()
                add(("assistant", _NO_IDS, "", prose, not prose))
            else:
                add(("user", _NO_IDS, "", False, False))
            where.append(r)
            continue
        if content.__class__ is not list:
            return None
        if role != "user":
            ids: list[str] = []
            said = sure = False
            for block in content:
                if block.__class__ is not dict:
                    said = True
                    continue
                kind = block.get("type")
                if kind not in kinds:
                    plain = False
                elif kind == "text":
                    text = block.get("text")
                    if text.__class__ is not str:
                        return None  # a text part the reader keeps as it is
                    said = said or (bool(text) and not text.isspace())
                    continue
                elif kind == "tool_use" and role == "assistant":
                    cid = block.get("id")
                    if cid.__class__ is not str:
                        if cid:
                            return None  # the reader's ``str(cid)``: not followed here
                        cid = ""
                    ids.append(cid)
                    callers[cid] = r
                    sure = sure or not is_partial(block.get("input"))
                    continue
                said = True
            if not plain and item_shape(record) not in (None, "anthropic"):
                return None
            if role == "assistant":
                if walked and walked[-1][0] == "assistant" and walked[-1][1]:
                    return None  # a run the reader may join into one message (``runs``)
                add(("assistant", ids or _NO_IDS, "", said or sure, not ids and not said))
            else:
                add(("user", _NO_IDS, "", False, False))
            where.append(r)
            continue
        run = made = False
        for block in content:
            if block.__class__ is dict:
                kind = block.get("type")
                if kind not in kinds:
                    plain = False
                elif kind == "tool_result":
                    if run:
                        add(("user", _NO_IDS, "", False, False))
                        where.append(r)
                        run = False
                    rid = block.get("tool_use_id")
                    if rid.__class__ is not str:
                        if rid:
                            return None
                        rid = ""
                    named[len(walked)] = callers.get(rid, -1)
                    add(("tool", _NO_IDS, rid, False, False))
                    where.append(r)
                    made = answered = True
                    continue
                elif kind == "text" and block.get("text").__class__ is not str:
                    return None
            run = True
        if run or not made:
            add(("user", _NO_IDS, "", False, False))
            where.append(r)
        if not plain and item_shape(record) not in (None, "anthropic"):
            return None
    if not answered:
        return None  # no result anywhere: the reader's ``_answered_elsewhere`` reads them all
    return _Walk(walked, where, named)


def _gemini_walk(records: list[Any]) -> _Walk | None:
    """``_Item`` for each canonical message ``gemini._read_contents`` makes of the
    contents (a user content of ``functionResponse`` parts is a tool message per
    response and a user message per run of its other parts), or ``None`` where one is
    not a turn it reads. A call or response without its id is walked under the empty
    id, where the walk stops: its window is read alone, and the ids the reader makes up
    for it (``call_{turn}_{part}``) are moved to the turn's place in the whole."""
    walked: list[_Item] = []
    where: list[int] = []
    add = walked.append
    made_up = False
    called = False  # whether an id given starts as a made-up one does
    for r, content in enumerate(records):
        if content.__class__ is not dict:
            return None
        role = content.get("role")
        parts = content.get("parts")
        if role not in ("user", "model", "function") or parts.__class__ is not list:
            return None
        if role == "model":
            ids: list[str] = []
            said = sure = False
            for part in parts:
                if part.__class__ is dict:
                    call = part.get("functionCall")
                    if call.__class__ is dict:
                        cid = _gemini_id(call)
                        made_up, called = made_up or not cid, called or cid.startswith("call_")
                        ids.append(cid)
                        sure = sure or not is_partial(call.get("args", {}))
                        continue
                    text = part.get("text")
                    if text.__class__ is str and not part.get("thought"):
                        said = said or (bool(text) and not text.isspace())
                        continue
                said = True
            if walked and walked[-1][0] == "assistant" and walked[-1][1]:
                return None  # a run the reader may join into one message (``runs``)
            add(("assistant", ids or _NO_IDS, "", said or sure, not ids and not said))
            where.append(r)
            continue
        run = made = False
        for part in parts:
            response = part.get("functionResponse") if part.__class__ is dict else None
            if response.__class__ is not dict:
                run = True
                continue
            if run:
                add(("user", _NO_IDS, "", False, False))
                where.append(r)
                run = False
            rid = _gemini_id(response)
            made_up, called = made_up or not rid, called or rid.startswith("call_")
            add(("tool", _NO_IDS, rid, False, False))
            where.append(r)
            made = True
        if run or not made:
            add(("user", _NO_IDS, "", False, False))
            where.append(r)
    if made_up and called:
        return None  # an id given that a made-up one may equal: the reader's ids are unsure
    return _Walk(walked, where, {})


def _gemini_id(held: dict[str, Any]) -> str:
    """A Gemini call's or response's own id, or "" where the reader makes one up."""
    value = held.get("id")
    return value if value.__class__ is str else ""


def _responses_walk(records: list[Any]) -> _Walk | None:
    """``_Item`` for each canonical message ``responses._read`` makes of the items (the
    model's consecutive items, its messages, reasoning and calls, are one assistant
    message, and an assistant message item after its text or calls starts another),
    or ``None`` where an item is not one it reads as it is (``tail._responses_ids``'
    conditions). ``named`` holds, for each output and each model message with a call
    under an id called before, the item of the first call under that id: the reader
    takes an output's kind and name from the calls before it."""
    kinds = tail.RESPONSES_KINDS
    callers: dict[str, int] = {}  # each call id: the item of its first call
    named: dict[int, int] = {}
    walked: list[_Item] = []
    add = walked.append
    where: list[int] = []
    # The model's message being read: where it starts, its call ids, whether it says
    # something (a part that is not blank text), whether a call of it parses, whether it
    # has text, and the first item of a call under an id called before it (or -1).
    start = -1
    ids: list[str] = []
    said = sure = text = False
    again = -1

    for r, item in enumerate(records):
        if item.__class__ is not dict:
            return None
        kind = item.get("type")
        if kind.__class__ is not str and kind is not None:
            return None
        if kind not in kinds or item_shape(item) not in (None, "responses"):
            return None
        if kind is None or kind == "message":
            role = item.get("role")
            content = item.get("content")
            if role not in tail.RESPONSES_ROLES or content.__class__ not in (str, list):
                return None
            if role == "assistant":
                if start >= 0 and (text or ids):
                    if again >= 0:
                        named[len(walked)] = again
                    add(("assistant", ids or _NO_IDS, "", said or sure, not ids and not said))
                    where.append(start)
                    start = -1
                if start < 0:
                    start, ids, said, sure, again = r, [], False, False, -1
                text = True
                said = said or not _blank_text(content)
                continue
        elif not is_output(item):
            if start < 0:
                start, ids, said, sure, text, again = r, [], False, False, False, -1
            if is_call(item):
                cid = item.get("call_id") or item.get("id") or ""
                if cid.__class__ is not str:
                    return None  # the reader's ``str(value)``: not followed here
                first = callers.setdefault(cid, r)
                if first < r and again < 0:
                    again = first
                ids.append(cid)
                if not sure:
                    arguments = item.get("arguments", "") if kind == "function_call" else None
                    sure = not is_partial(arguments)
            else:
                said = True  # reasoning, or what the server ran: a part of the message
            continue
        # A user, system or developer message, or an output: the model's message ends.
        if start >= 0:
            if again >= 0:
                named[len(walked)] = again
            add(("assistant", ids or _NO_IDS, "", said or sure, not ids and not said))
            where.append(start)
            start = -1
        if kind is None or kind == "message":
            add(("user", _NO_IDS, "", False, False))
        else:
            rid = item.get("call_id") or item.get("id") or ""
            if rid.__class__ is not str:
                return None
            named[len(walked)] = callers.get(rid, -1)
            add(("tool", _NO_IDS, rid, False, False))
        where.append(r)
    if start >= 0:
        if again >= 0:
            named[len(walked)] = again
        add(("assistant", ids or _NO_IDS, "", said or sure, not ids and not said))
        where.append(start)
    return _Walk(walked, where, named)


def _blank_text(content: Any) -> bool:
    """Whether a Responses message item's content reads as blank text parts alone."""
    if content.__class__ is str:
        return not content or content.isspace()
    for part in content:
        if part.__class__ is not dict or part.get("type") not in _TEXT_PARTS:
            return False
        text = part.get("text")
        if text.__class__ is not str or (text and not text.isspace()):
            return False
    return True


_TEXT_PARTS = ("input_text", "output_text", "text")


def _never(record: dict[str, Any]) -> bool:
    raise AssertionError("the walk judged every record with calls")  # pragma: no cover


# Per shape: the walk of one record, and whether a record with calls surely ends a span.
_ITEMS: dict[str, tuple[Callable[[list[Any]], _Walk | None], Callable[[dict[str, Any]], bool]]] = {
    "openai-chat": (_chat_walk, _chat_sure),
    "anthropic": (_anthropic_walk, _never),
    "gemini": (_gemini_walk, _never),
    "responses": (_responses_walk, _never),
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
    model: str | None = None,
) -> Made | None:
    """The plain path's first writing of ``asked`` (refused first at list position
    ``first``), made from its windows alone (see ``Made``); ``None`` where that is not
    sure to be it."""
    shape = _ITEMS.get(provider)
    if shape is None:
        return None
    walk, calls_sure = shape
    records = asked[key]
    found = walk(records)
    if found is None:
        return None
    walked, where, named = found
    grouped = provider == "responses"
    chars, limit = formats.id_rules(provider)
    for _, ids, rid, _, _ in walked:
        for value in (*ids, rid):
            if value and (
                (chars is not None and not chars.fullmatch(value))
                or (limit is not None and len(value) > limit)
            ):
                return None  # an id the export renames: renaming reads the whole history
    n = len(walked)
    lead = 0  # the canonical messages before the list's: a system prompt of its own key
    if where is not None:
        system = asked.get(_SYSTEM_KEYS[provider])
        if provider == "responses":
            lead = int(isinstance(system, str) and bool(system))
        elif system is not None:
            if not _system_read(provider, system):
                return None  # the reader refuses it: the plain path says so
            lead = 1

    def sure(at: int) -> bool:
        """Whether the message at ``at`` surely ends a span (its calls parsed once, here)."""
        known = walked[at][3]
        if known is None:
            known = calls_sure(records[at])
            walked[at] = (*walked[at][:3], known, walked[at][4])
        return known

    def place(at: int) -> int:
        """The list position of the record message ``at`` (or the list's end) is read from."""
        if where is None or at >= n:
            return at if where is None else len(records)
        return where[at]

    # The plain path's kept start: the latest SPEC cut at or before the first problem
    # whose start the provider accepts (a cut no check looks across has the body's
    # problems before ``first`` there: none).
    kept = 0
    if where is None:
        for at in range(min(first, n - 1), 0, -1):
            if sure(at):
                kept = at
                break
            if walked[at][0] == "assistant" and isinstance(records[at].get("content"), list):
                return None  # its parts may make it a cut (the reader's to say): not sure of it
    else:
        last = min(first, len(records) - 1)
        for at in range(n - 1, 0, -1):
            start = where[at]
            if start > last or start < 1 or walked[at][0] != "assistant" or not sure(at):
                continue
            if local_cut(provider, asked, start, model=model) or (
                check(provider, {**asked, key: records[:start]}, model=model).accepted
            ):
                kept = at
                break
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
        low, high = place(start), place(end)
        if named and any(-1 < named.get(j, -1) < low for j in range(start, end)):
            # A result the reader names after a call before the window (its id used
            # again): read alone, it would carry no name.
            return None
        del given[base + sum(len(walked[j][1]) for j in range(pos, start)) :]
        window = _window(
            asked, key, provider, records[low:high], (low, lead + start), given, is_read_only
        )
        if window is None:
            return None
        made, ids, sources, sent = window
        if where is not None and sources != _sources(where, start, end, low, high, grouped):
            return None  # the reader made other messages of the records than the walk
        out.extend(records[place(pos) : low])
        # A window inside the kept start goes out as it came, its ids given out as repaired
        # and as sent (the provider took them: ``_kept_start``'s ``taken``).
        if end <= kept:
            out.extend(records[low:high])
            ids = [*ids, *sent]
        else:
            windows.append((low, high, len(out), len(out) + len(made)))
            out.extend(made)
        given.extend(ids)
        pos = end
    out.extend(records[place(pos) :])
    return Made({**asked, key: out}, place(kept), windows)


# The body key of a system prompt that is no item of the list, per shape.
_SYSTEM_KEYS = {"anthropic": "system", "gemini": "systemInstruction", "responses": "instructions"}


def _sources(
    where: list[int], start: int, end: int, low: int, high: int, grouped: bool
) -> list[list[int]]:
    """The records (1-based from the window's first, ``low``; ``high`` its end) each
    message ``start:end`` of the window is read from: one each (a record may make several
    messages), or with ``grouped`` (Responses) every item up to the next message's."""
    if not grouped:
        return [[where[j] - low + 1] for j in range(start, end)]
    ends = [*where[start + 1 : end], high]
    return [list(range(where[j] - low + 1, ends[j - start] - low + 1)) for j in range(start, end)]


def _system_read(provider: str, system: Any) -> bool:
    """Whether the reader takes ``system`` as the leading system message (else it
    refuses the body, which a window read without it would not)."""
    if isinstance(system, str):
        return True
    if provider == "anthropic":
        return isinstance(system, list)
    return isinstance(system, dict) and isinstance(system.get("parts"), list)


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
    offset: tuple[int, int],
    given: list[str],
    is_read_only: Callable[[str], bool] | None,
) -> tuple[list[Any], list[str], list[list[int]], list[str]] | None:
    """``records`` (from list position ``offset[0]``, canonical message ``offset[1]``)
    read alone, repaired as in the whole (told that offset and the ``given`` ids) and
    written: the items, the call ids the repair gave out, the records each message was
    read from and the ids read; ``None`` where the reader reads them otherwise alone."""
    system = _SYSTEM_KEYS.get(provider)
    alone = {k: v for k, v in asked.items() if k != system} if system in asked else asked
    try:
        parsed = formats.load(orjson.dumps({**alone, key: records}), provider)
    except formats.FormatError:
        return None
    if parsed.problems or parsed.causes or parsed.not_started or parsed.state["mode"] != "body":
        return None
    at, offset_m = offset
    if provider == "openai-chat":
        if parsed.sources != [[n] for n in range(1, len(records) + 1)]:
            return None  # a record read as none, or as more than one message
    elif provider == "gemini":
        _move_made_up(parsed, at)
    repaired = repair_parsed(parsed, is_read_only, offset=offset_m, assigned=given)
    if not tail.sendable_ids(repaired.messages, provider):
        return None  # an id the export would rename (ID-3) reads the whole
    written = orjson.loads(formats.FORMATS[provider].serialise(repaired.messages, parsed))
    ids = [call_id(call) for m in repaired.messages for call in calls_of(m)]
    return written[key], ids, parsed.sources, formats.history_ids(parsed.messages)


def _move_made_up(parsed: Parsed, turns: int) -> None:
    """Gemini's made-up ids (``call_{turn}_{part}``) of contents read ``turns`` contents
    after the list's start, moved in place to the ids reading the whole gives them (the
    walk made sure no id the contents carry looks like one)."""
    synthetic: set[str] = parsed.state["synthetic_ids"]
    if not synthetic or not turns:
        return
    moved = {}
    for old in synthetic:
        _, turn, part = old.split("_")
        moved[old] = f"call_{int(turn) + turns}_{part}"
    for message in parsed.messages:
        md = message["metadata"]
        if message["role"] == "tool":
            old = md.get("tool_call_id")
            if old in moved:
                md["tool_call_id"] = moved[old]
        for call in md.get("tool_calls") or ():
            old = call.get("tool_call_id")
            if old in moved:
                call["tool_call_id"] = moved[old]
    synthetic.clear()
    synthetic.update(moved.values())
