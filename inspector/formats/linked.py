"""Writing back a record log whose lines are chained: each record names the one before it.

GitHub Copilot CLI's ``events.jsonl`` (``id`` / ``parentId``) and Qwen Code's
chat recordings (``uuid`` / ``parentUuid``) append one record a line, each
naming the record before it. Their readers make at most a few canonical
messages of a record and keep, in each message's private metadata, the record
it came from (``canonical.REC``: its index in ``JsonlFile.records``). This
module writes such a file back after a repair:

- records the repair did not touch come back byte for byte, in their places
  (lines that could not be read are left out of a repaired file);
- a record whose messages changed is rewritten by the shape's ``rewrite``;
- a message no record holds (a result or note the repair made) becomes a new
  record made by the shape's ``new``, right after the record of the message
  before it, with a fresh id (derived from its neighbours, so the same repair
  writes the same file), the time of the record before it, and that record as
  its parent;
- a record whose parent was the record right before it in the file is
  re-linked to whatever comes right before it now (a new record, or the one
  before a record the repair dropped), so the chain runs through the new
  records and past the dropped ones.

Until the record-log writer base lands this is the one chained-log writer;
the ``copilot`` and ``qwen`` shapes use it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector.formats.canonical import REC, Message, dump_line, public
from inspector.formats.canonical import metadata as _md
from inspector.formats.jsonl import JsonlFile, join_lines

# A shape's record for messages of one record the repair changed: (record, old, new).
Rewrite = Callable[[dict[str, Any], list[Message], list[Message]], dict[str, Any] | None]
# A shape's record for a message the repair made, given the record before it (or None).
New = Callable[[Message, dict[str, Any] | None], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Chain:
    """How a shape names a record's own id, its parent's, and its time.

    A log whose records name no parent (``id`` and ``parent`` empty) is written
    the same way, its new records given only the time of the record before.
    """

    id: str
    parent: str
    time: str = "timestamp"


def new_id(*seeds: Any) -> str:
    """A UUID (version 4 layout) derived from ``seeds``: the same repair, the same ids."""
    digest = hashlib.blake2b(repr(seeds).encode("utf-8", "surrogatepass"), digest_size=16)
    return str(uuid.UUID(bytes=digest.digest(), version=4))


def write(
    messages: list[Message],
    before: list[Message],
    read: JsonlFile,
    chain: Chain,
    rewrite: Rewrite,
    new: New,
    follows: Callable[[Any], bool] | None = None,
) -> bytes:
    """The log with ``messages`` (the repaired ``before``) written into ``read``'s records.

    ``follows`` says which records that hold no message stay with the record
    before them (a call's start and progress after the message that made it):
    a new record goes after them.
    """
    records = read.records
    by_rec: dict[int, list[Message]] = {}
    for m in before:
        rec = _md(m).get(REC)
        if isinstance(rec, int):
            by_rec.setdefault(rec, []).append(m)
    # Each entry: (original record index or None, value to write or None for the raw line).
    out: list[tuple[int | None, dict[str, Any] | None]] = []
    flushed = 0

    def flush(upto: int) -> None:
        nonlocal flushed
        for index in range(flushed, upto):
            if index not in by_rec and records[index].ok:
                out.append((index, None))
        flushed = max(flushed, upto)

    groups: list[tuple[int | None, list[Message]]] = []
    for m in messages:
        rec = _md(m).get(REC)
        rec = rec if isinstance(rec, int) and rec in by_rec else None
        if rec is not None and groups and groups[-1][0] == rec:
            groups[-1][1].append(m)
        else:
            groups.append((rec, [m]))
    written: set[int] = set()
    for rec, members in groups:
        if rec is None or rec in written:
            while (
                follows is not None
                and flushed < len(records)
                and flushed not in by_rec
                and (not records[flushed].ok or follows(records[flushed].value))
            ):
                flush(flushed + 1)
            for m in members:
                out.append((None, new(m, _value_at(out, records))))
            continue
        written.add(rec)
        flush(rec + 1)
        old = by_rec[rec]
        if len(old) == len(members) and all(
            public(a) == public(b) for a, b in zip(old, members, strict=True)
        ):
            out.append((rec, None))
            continue
        value = rewrite(records[rec].value, old, members)
        if value is not None:  # None: the record holds nothing any more, its line goes
            out.append((rec, value))
    flush(len(records))
    return _relinked(out, read, chain)


def _value_at(out: list[tuple[int | None, dict[str, Any] | None]], records: Any) -> Any:
    if not out:
        return None
    index, value = out[-1]
    if value is not None:
        return value
    return records[index].value if index is not None else None


def _relinked(
    out: list[tuple[int | None, dict[str, Any] | None]], read: JsonlFile, chain: Chain
) -> bytes:
    records = read.records
    chained = bool(chain.id)
    # The id of the readable record before each one in the file, as the chain had it.
    previous: dict[int, Any] = {}
    last: Any = None
    for at, record in enumerate(records):
        if not record.ok:
            continue
        previous[at] = last
        value = record.value
        last = value.get(chain.id) if chained and isinstance(value, dict) else None
    lines: list[bytes] = []
    before_id: Any = None
    before_time: Any = None
    before_index: int | None = None
    for n, (index, value) in enumerate(out):
        if index is None:
            fresh = dict(value or {})
            own = new_id(before_id, n, fresh.get("type"))
            # The shape's ``new`` puts the chain's keys where its records have them.
            if chained:
                fresh[chain.id] = own
            if fresh.get(chain.time) is None:
                fresh[chain.time] = before_time
            if chained:
                fresh[chain.parent] = before_id
            lines.append(dump_line(fresh, read.crlf))
            before_id, before_time, before_index = own, fresh.get(chain.time), None
            continue
        current = value if value is not None else records[index].value
        current = current if isinstance(current, dict) else {}
        moved = before_index is None or before_index != _readable_before(records, index)
        linked = chained and current.get(chain.parent) == previous.get(index)
        if moved and linked and current.get(chain.parent) != before_id:
            value = {**current, chain.parent: before_id}
        if value is None:
            lines.append(records[index].raw)
        else:
            lines.append(dump_line(value, read.crlf))
            current = value
        before_id = current.get(chain.id) if chained else before_id
        before_time, before_index = current.get(chain.time), index
    return join_lines(lines, read.final_newline)


def _readable_before(records: Any, index: int) -> int | None:
    for back in range(index - 1, -1, -1):
        if records[back].ok:
            return back
    return None
