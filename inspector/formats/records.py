"""The writer base of the record-log shapes: a file of records, each message read from some.

Claude Code, Codex, Codex exec, pi, OpenCode and Cursor (and each record-log
shape after them) write a repaired history back the same way: walk the
repaired messages, find the original message each one was read as, keep the
records of untouched messages byte for byte, change, rename, move or drop the
records of the others, put the records of new messages after the record
before them, and join the result in file order. ``RecordWriter`` holds that
walk and its bookkeeping; a shape's writer says only how its records are
made. What crosses this boundary: the ``Parsed`` its reader returned (its
messages tagged with ``SRC``, its ``state``), the repaired messages, and the
file's bytes back.

How a new record-log shape uses it:

1. Its reader tags each message's metadata with ``SRC``, the message's
   index in ``Parsed.messages``, and leaves a ``state`` that holds ``data``,
   ``records`` (``jsonl.read_jsonl``'s), ``final_newline`` and ``crlf``
   (a ``LogFile``: ``LogState.of(data, read)``, a subclass of it, or any
   dataclass with those fields).
2. Its writer subclasses ``RecordWriter[ItsState]``, sets ``STATE`` (and
   ``ROLE_CHANGES``, ``UNGLUES``, ``KEEPS_UNREADABLE`` where it differs), and
   overrides the walk's hooks: ``on_original`` (a repaired message read from
   original message ``src``: change, rename or move its records, note where
   new records go), ``on_new`` (a message the repair made: ``insert`` a new
   record) and, if dropping needs more than nothing, ``on_dropped``.
3. It overrides the writing hooks its records need: ``new_record`` (how a
   new record is written), ``changed_record`` (how a changed record is
   written) and ``renamed_record`` (how a record whose call id was renamed
   is written).
4. Its module's ``serialise`` is ``ItsWriter.serialise``.

A minimal example, a log of ``{"role", "text"}`` lines among other records
(its ``_State`` is a ``LogState`` with ``origin``, each message's record)::

    class _Writer(RecordWriter[_State]):
        STATE = _State
        ROLE_CHANGES = {"tool": ("user",)}  # an orphan result's line becomes its note

        def __init__(self, state: _State, before: list[Message]) -> None:
            super().__init__(state, before)
            self.at = -1  # the last original line kept in its place

        def on_original(self, m: Message, src: int, moved: bool) -> None:
            rec = self.state.origin[src]
            if m != self.before[src]:
                self.changed[rec] = _line(m)
            if moved:  # its line goes where the message now stands
                self.changed[rec] = DROP
                self.insert(self.at, m)
            else:
                self.at = rec

        def on_new(self, m: Message) -> None:
            self.insert(self.at, m)

        def on_dropped(self, src: int) -> None:
            self.changed[self.state.origin[src]] = DROP

        def new_record(self, item: Any) -> Any:
            return _line(item)

    serialise = _Writer.serialise

(``tests/formats/test_records.py`` holds this example whole, with a reader,
and what the base does for it.)

The base writes an untouched record's own bytes, a changed one as
``changed_record`` returns it, a renamed one as ``renamed_record`` does, and
each inserted item as ``new_record`` does, in the order ``order`` gives
(the original records in file order, each followed by what was inserted
after it). A shape whose file is not a list of lines in that order (a tree
relinked along the active branch, a JSON document) overrides ``order`` or
``emit`` as well, and keeps the rest.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Protocol, cast

from inspector.formats.base import Facts, FormatError, Parsed, Problem
from inspector.formats.jsondoc import dump_line
from inspector.formats.jsonl import JsonlFile, Record, has_glued, join_lines, unglue
from inspector.formats.private import Message, unchanged

# The metadata key under which a reader notes each message's index in ``Parsed.messages``.
SRC: Final = "_src"


class _Drop:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DROP"


# In ``RecordWriter.changed``: the record is not written. From a writing hook: write nothing.
DROP: Final = _Drop()


class _AnyRole:
    __slots__ = ()

    def __contains__(self, role: object) -> bool:
        return True


# In ``ROLE_CHANGES``: a message of that role keeps its records whatever the repair made it.
ANY_ROLE: Final[Container[Any]] = _AnyRole()


class LogFile(Protocol):
    """What ``RecordWriter`` needs to know of the file it writes back (its state's fields)."""

    @property
    def data(self) -> bytes: ...

    @property
    def records(self) -> Sequence[Record]: ...

    @property
    def final_newline(self) -> bool: ...

    @property
    def crlf(self) -> bool: ...


@dataclass(slots=True)
class LogState:
    """A ``LogFile`` to hold as a reader's ``state``, or to subclass with what else it keeps."""

    data: bytes
    records: list[Record]
    final_newline: bool
    crlf: bool
    # What the reader found of each message for the timeline (time, model, tokens), one
    # per message, where it reads them as it goes (``state_facts`` hands them over).
    facts: list[Facts | None] = field(default_factory=list, kw_only=True)

    @classmethod
    def of(cls, data: bytes, read: JsonlFile, facts: list[Facts | None] | None = None) -> LogState:
        return cls(data, read.records, read.final_newline, read.crlf, facts=facts or [])


def state_facts(parsed: Parsed) -> list[Facts | None]:
    """A shape's ``timeline_facts`` when its reader kept them in its ``LogState``."""
    state = parsed.state
    if isinstance(state, LogState) and len(state.facts) == len(parsed.messages):
        return list(state.facts)
    return []


class RecordWriter[S]:
    """Maps repaired canonical messages back onto the records they were read from.

    ``state`` is what the shape's ``parse`` left; ``before`` its messages.
    The walk (``write``) fills the bookkeeping the writing reads:

    - ``used``: the original messages some repaired message comes from;
    - ``changed``: record -> what stands in its place (``changed_record``
      makes it a record), or ``DROP``;
    - ``renamed``: record -> the call id it is written with (``renamed_record``);
    - ``inserted``: record -> the items written right after it, in order
      (``-1``: before every record; ``new_record`` makes each a record).
    """

    # The class of the state the shape's ``parse`` leaves (``serialise`` refuses any other).
    STATE: ClassVar[type[Any]]
    # Role changes after which a repaired message still comes from its original one:
    # original role -> the repaired roles it may have (all shapes keep a same-role message).
    # Codex exec and pi write an orphan result the repair turned into a note into
    # the result's own record (``{"tool": ANY_ROLE}``, ``{"tool": ("user",)}``),
    # Cursor a message of any role into its line; the others make a new record
    # for the note.
    ROLE_CHANGES: ClassVar[Mapping[Any, Container[Any]]] = {}
    # An unchanged history of a file with glued lines comes back with each record
    # on a line of its own (Claude Code, Codex, Cursor); otherwise as it was read.
    UNGLUES: ClassVar[bool] = False
    # Lines that could not be read stay in a repaired file (Codex exec and Cursor
    # leave them out: their readers skip such a line and their tools do too).
    KEEPS_UNREADABLE: ClassVar[bool] = True

    def __init__(self, state: S, before: list[Message]) -> None:
        self.state = state
        self.before = before
        self.used: set[int] = set()
        self.changed: dict[int, Any] = {}
        self.renamed: dict[int, str] = {}
        self.inserted: dict[int, list[Any]] = {}

    @classmethod
    def serialise(cls, messages: list[Message], original: Parsed) -> bytes:
        """Write ``messages`` back into the file ``original`` was read from."""
        state = original.state
        if not isinstance(state, cls.STATE):
            raise FormatError("serialise needs the Parsed that parse() returned for this file")
        if unchanged(messages, original.messages):
            return cls.as_read(state, original.problems)
        return cls(state, original.messages).write(messages)

    @classmethod
    def as_read(cls, state: S, problems: list[Problem]) -> bytes:
        """Hook: the bytes of an unchanged history: the state's ``data`` (with ``UNGLUES``
        and a glued line, each record on a line of its own). No shape overrides it yet."""
        log = cast(LogFile, state)
        if cls.UNGLUES and has_glued(problems):  # a lost newline: each record on its own line
            return unglue(log.data, log.records, log.crlf)
        return log.data

    @property
    def log(self) -> LogFile:
        """The file as read: the state itself. A shape whose state holds no records
        overrides ``emit`` (OpenCode: a JSON document; ``as_read`` needs only ``data``)."""
        return cast(LogFile, self.state)

    # -- the walk ----------------------------------------------------------------------

    def write(self, messages: list[Message]) -> bytes:
        """Walk the repaired history in order, then write the file.

        A message from an original one is ``moved`` when an original message
        after it was met already (the repair put it later than it stood).
        """
        running = -1
        for m in messages:
            src = self.origin(m)
            if src is None:
                self.on_new(m)
                continue
            self.on_original(m, src, src <= running)
            running = max(running, src)
        for src in range(len(self.before)):
            if src not in self.used:
                self.on_dropped(src)
        return self.emit()

    def source(self, m: Message) -> int | None:
        """Hook: the original message ``m`` says it was read as (its ``SRC``), or None.

        Cursor overrides it: its reader notes the record (``canonical.REC``).
        """
        metadata = m.get("metadata")
        src = metadata.get(SRC) if isinstance(metadata, dict) else None
        if not isinstance(src, int) or isinstance(src, bool) or not 0 <= src < len(self.before):
            return None
        return src

    def origin(self, m: Message) -> int | None:
        """The original message ``m`` comes from, marked used; None for a new message.

        None too for a second copy of one (the first keeps the records) and
        for one whose role the repair changed, unless ``ROLE_CHANGES`` lets it.
        """
        src = self.source(m)
        if src is None or src in self.used:
            return None
        old, new = self.before[src]["role"], m.get("role")
        if new != old and new not in self.ROLE_CHANGES.get(old, ()):
            return None
        self.used.add(src)
        return src

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        """Hook: ``m`` comes from original message ``src``. Every shape overrides it."""
        raise NotImplementedError

    def on_new(self, m: Message) -> None:
        """Hook: ``m`` is a message the repair made. Every shape overrides it."""
        raise NotImplementedError

    def on_dropped(self, src: int) -> None:
        """Hook: no repaired message comes from original message ``src``.

        Nothing by default: Claude Code and Codex lose a dropped message's
        records where they write the file (what the relinked branch leaves
        out; a record none of whose items is kept); Codex exec, pi, OpenCode
        and Cursor drop its records (or parts) here.
        """

    def insert(self, after: int, item: Any) -> None:
        """Write ``item`` right after original record ``after`` (-1: before every record),
        after the items put there already."""
        self.inserted.setdefault(after, []).append(item)

    # -- writing -----------------------------------------------------------------------

    def order(self) -> list[Any]:
        """Hook: the written file's records in order.

        An ``int`` is an original record (written as it was, changed or
        renamed); anything else an item for ``new_record``. By default the
        original records in file order, less the dropped ones, each followed
        by what was inserted after it. Claude Code (records relinked along
        the active branch) and pi (its tree) override it.
        """
        inserted, changed = self.inserted, self.changed
        out: list[Any] = list(inserted.get(-1, ()))
        keeps_unreadable = self.KEEPS_UNREADABLE
        for rec, record in enumerate(self.log.records):
            if changed.get(rec) is not DROP and (keeps_unreadable or record.ok):
                out.append(rec)
            items = inserted.get(rec)
            if items:
                out.extend(items)
        return out

    def emit(self) -> bytes:
        """Hook: the file's bytes, one JSON line an item of ``order`` (``line``).

        OpenCode (a JSON document) and Claude Code (its ``loglines`` exports)
        override it; Codex, to drop the records none of whose items is kept first.
        """
        lines = []
        for item in self.order():
            line = self.line(item)
            if line is not None:
                lines.append(line)
        return join_lines(lines, self.log.final_newline)

    def line(self, item: Any) -> bytes | None:
        """One item of ``order`` as a line (without its newline), or None for none.

        A writing hook may return a record (a JSON value, dumped here),
        ``bytes`` (the line itself) or ``DROP`` (no line).
        """
        if isinstance(item, int):
            if item in self.changed:
                value = self.changed_record(item, self.changed[item])
            elif item in self.renamed:
                value = self.renamed_record(item, self.renamed[item])
            else:
                value = self.kept_record(item)
        else:
            value = self.new_record(item)
        if value is DROP:
            return None
        if isinstance(value, bytes):
            return value
        return dump_line(value, self.log.crlf)

    def kept_record(self, rec: int) -> Any:
        """Hook: an untouched record, by default its own bytes.

        Claude Code overrides it to end a glued record's line as the file's
        lines end, Codex to note the record's timestamp for the new ones after it.
        """
        return self.log.records[rec].raw

    def changed_record(self, rec: int, change: Any) -> Any:
        """Hook: how a CHANGED record is written; ``change`` is what ``changed`` holds.

        By default ``change`` is the new record (Codex exec, pi, Cursor).
        Codex keeps the changes of a record's items there and rebuilds the
        record from them.
        """
        return change

    def renamed_record(self, rec: int, new_id: str) -> Any:
        """Hook: how a record whose call id the repair RENAMED is written.

        Only shapes that note renames in ``renamed`` override it (Codex exec:
        the id of the item each of its events names); the others write the
        new id into a changed record.
        """
        raise NotImplementedError(f"{type(self).__name__} notes no renamed records")

    def new_record(self, item: Any) -> Any:
        """Hook: how a NEW record is written from an inserted ``item``.

        By default the item is the record (Codex exec, Claude Code: records
        made whole by the walk or by ``order``; Cursor: a record or a moved
        line's bytes). Codex makes the item's envelope (with the timestamp
        of the record before it) or writes a moved record; pi writes its new
        entry's value, linked by its ``order``.
        """
        return item
