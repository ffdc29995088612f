"""The record-log writer of logs whose lines are chained: each record names the one before.

GitHub Copilot CLI's ``events.jsonl`` (``id`` / ``parentId``), Qwen Code's
chat recordings (``uuid`` / ``parentUuid``) and Kimi Code's ``wire.jsonl``
(no chain) append one record a line. Their readers make at most a few
canonical messages of a record and keep, in each message's private metadata,
the record it came from (``canonical.REC``: its index in the file's
records). ``ChainedWriter`` is their writer on the record-log base
(``records.RecordWriter``: its walk, its bookkeeping and its file order):

- records the repair did not touch come back byte for byte, in their places
  (lines that could not be read are kept, as the base keeps them);
- a record whose messages changed is rewritten by the shape's ``rewrite``;
- a message no record holds (a result or note the repair made) becomes a new
  record made by the shape's ``new``, after the record of the message before
  it and the records that ``follows`` says go with that one (a call's start
  and progress), with a fresh id (derived from its neighbours, so the same
  repair writes the same file), the time of the record before it, and that
  record as its parent;
- a record whose parent was the record right before it in the file is
  re-linked to whatever comes right before it now (a new record, or the one
  before a record the repair dropped), so the chain runs through the new
  records and past the dropped ones; where the file holds a record twice (a
  reply written again as it grew) and a record after its first copy links to
  it, that link goes through the records put after the last copy too.

A shape subclasses it with ``CHAIN`` (its keys) and the hooks ``rewrite``,
``new`` and ``follows``; its module's ``serialise`` is the subclass's.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from inspector.formats.jsondoc import dump_line
from inspector.formats.jsonl import join_lines
from inspector.formats.private import REC, Message, public
from inspector.formats.private import metadata as _md
from inspector.formats.records import DROP, LogState, RecordWriter


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


@dataclass(frozen=True, slots=True)
class _New:
    """A message the repair made (or moved), written as a new record."""

    message: Message


class ChainedWriter(RecordWriter[LogState]):
    """The writer of a chained record log; a shape sets ``CHAIN`` and the hooks below."""

    STATE: ClassVar[type[Any]] = LogState
    # An orphan result the repair made a note of is written into the result's record.
    ROLE_CHANGES = {"tool": ("user",)}
    UNGLUES = True
    CHAIN: ClassVar[Chain]

    def __init__(self, state: LogState, before: list[Message]) -> None:
        super().__init__(state, before)
        self.members: dict[int, list[int]] = {}  # record -> its messages
        for n, m in enumerate(before):
            self.members.setdefault(_md(m)[REC], []).append(n)
        self.now: dict[int, list[Message]] = {}  # record -> its repaired messages
        self.at = -1  # the last record kept in its place

    # -- the shape's hooks --------------------------------------------------------------

    def rewrite(self, value: Any, old: list[Message], new: list[Message]) -> Any:
        """Hook: the record whose messages ``old`` the repair made ``new``."""
        raise NotImplementedError

    def new(self, m: Message, before: Any) -> dict[str, Any]:
        """Hook: the record of a message the repair made (``before``: the record written
        before it, or None); the chain's keys are filled in after."""
        raise NotImplementedError

    def follows(self, value: Any) -> bool:
        """Hook: whether a record that holds no message goes with the record before it
        (a new record is written after it). None does by default."""
        return False

    # -- the walk -----------------------------------------------------------------------

    def source(self, m: Message) -> int | None:
        rec = _md(m).get(REC)
        if not isinstance(rec, int) or rec not in self.members:
            return None
        # The record's first message not met yet: a record of several gives each its own.
        for n in self.members[rec]:
            if n not in self.used and self.before[n].get("role") == m.get("role"):
                return n
        for n in self.members[rec]:
            if n not in self.used:
                return n
        return None

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        rec = _md(self.before[src])[REC]
        if moved:  # written where it now stands, as a new record would be
            self.changed[rec] = DROP
            self.insert(self._anchor(), _New(m))
            return
        self.now.setdefault(rec, []).append(m)
        self.at = max(self.at, rec)

    def on_new(self, m: Message) -> None:
        self.insert(self._anchor(), _New(m))

    def on_dropped(self, src: int) -> None:
        rec = _md(self.before[src])[REC]
        if not self.now.get(rec):
            self.changed[rec] = DROP

    def _anchor(self) -> int:
        """Where a new record goes: after the last kept record and those that follow it."""
        records = self.state.records
        at = self.at
        while (
            at + 1 < len(records)
            and at + 1 not in self.members
            and (not records[at + 1].ok or self.follows(records[at + 1].value))
        ):
            at += 1
        self.at = at
        return at

    # -- writing ------------------------------------------------------------------------

    def emit(self) -> bytes:
        records = self.state.records
        out: list[tuple[int | None, Any]] = []
        for item in self.order():
            if isinstance(item, _New):
                out.append((None, self.new(item.message, _last_value(out, records))))
                continue
            change = self.changed.get(item)
            if change is DROP:  # dropped by the rewrite of a record before it
                continue
            if change is None and item in self.now:
                old = [self.before[n] for n in self.members[item]]
                new = self.now[item]
                if len(old) != len(new) or any(
                    public(a) != public(b) for a, b in zip(old, new, strict=True)
                ):
                    change = self.rewrite(records[item].value, old, new)
            out.append((item, change))
        return _relinked(out, self.state, self.chain)

    @property
    def chain(self) -> Chain:
        """The chain this file's records keep: the shape's ``CHAIN`` unless it says else."""
        return self.CHAIN


def writer(
    chain: Chain,
    rewrite: Callable[[Any, list[Message], list[Message]], Any],
    new: Callable[[Message, Any], dict[str, Any]],
    follows: Callable[[Any], bool] | None = None,
) -> type[ChainedWriter]:
    """A ``ChainedWriter`` whose hooks are these functions: for a shape whose records need
    nothing from the writer's state to be made (Copilot, Qwen)."""

    class _Writer(ChainedWriter):
        CHAIN = chain

        def rewrite(self, value: Any, old: list[Message], changed: list[Message]) -> Any:
            return rewrite(value, old, changed)

        def new(self, m: Message, before: Any) -> dict[str, Any]:
            return new(m, before)

        def follows(self, value: Any) -> bool:
            return follows is not None and follows(value)

    return _Writer


def _last_value(out: list[tuple[int | None, Any]], records: Any) -> Any:
    if not out:
        return None
    index, value = out[-1]
    if value is not None:
        return value
    return records[index].value if index is not None and records[index].ok else None


def _is_key(value: Any) -> bool:
    """Whether a record's parent (or id) can name a record: a damaged one may be a list or
    an object, which names none (and cannot be looked up)."""
    return not isinstance(value, (list, dict))


def _relinked(out: list[tuple[int | None, Any]], read: LogState, chain: Chain) -> bytes:
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
    # Each line: its bytes as read, or the value to write.
    lines: list[bytes | dict[str, Any]] = []
    # The kept records not re-linked on the way, each line's position by its parent's id.
    links: dict[Any, list[tuple[int, dict[str, Any]]]] = {}
    # Inserted runs of new records: (their first line, parent id, last id).
    runs: list[tuple[int, Any, Any]] = []
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
                if before_index is None and runs:
                    runs[-1] = (*runs[-1][:2], own)
                else:
                    runs.append((len(lines), before_id, own))
            lines.append(fresh)
            before_id, before_time, before_index = own, fresh.get(chain.time), None
            continue
        if value is None and not records[index].ok:
            lines.append(records[index].raw)  # a line that could not be read: not in the chain
            continue
        current = value if value is not None else records[index].value
        current = current if isinstance(current, dict) else {}
        moved = before_index is None or before_index != _readable_before(records, index)
        linked = chained and current.get(chain.parent) == previous.get(index)
        if moved and linked and current.get(chain.parent) != before_id:
            value = {**current, chain.parent: before_id}
        elif chained and _is_key(parent := current.get(chain.parent)):
            links.setdefault(parent, []).append((len(lines), current))
        if value is None:
            lines.append(records[index].raw)
        else:
            lines.append(value)
            current = value
        before_id = current.get(chain.id) if chained else before_id
        before_time, before_index = current.get(chain.time), index
    # Every other record that names as parent the record new ones were put after goes
    # through them too (where the file holds that record, or its child, twice: a reply or
    # title written again), or the chain Qwen or Copilot resumes would pass beside them.
    for _start, parent, last in runs:
        for at, current in links.get(parent, ()) if _is_key(parent) else ():
            lines[at] = {**current, chain.parent: last}
    return join_lines(
        [line if isinstance(line, bytes) else dump_line(line, read.crlf) for line in lines],
        read.final_newline,
    )


def _readable_before(records: Any, index: int) -> int | None:
    for back in range(index - 1, -1, -1):
        if records[back].ok:
            return back
    return None
