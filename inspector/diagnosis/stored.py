"""The cached diagnosis as one file that a timeline page reads only a little of.

The cache used to be one compressed JSON document, so the first page after a
restart (or in another worker) decoded every row of the transcript: about
0.7 s for 100k messages. In this layout a page reads what it shows::

    prefix  magic and layout, lengths of header and index, total length, content hash
    header  zstd(orjson): the small fields of the ``Diagnosis``; of each long
            list (findings, provider issues, unreadable lines, interrupted
            calls) its length and first ``AT_HAND`` items; the first findings
            of each rule (the page's findings list); where the rest and each
            chunk lie
    index   zstd(orjson): a column per field that chooses a view's rows (key,
            role, original role, input index, in original, in repaired, rule
            ids), so any filtered view is chosen without reading a row
    rest    zstd(orjson) of the long lists whole, read by reports
    chunks  ``CHUNK_ROWS`` rows each, zstd of one orjson row a line, so a page
            decompresses the chunks it touches and decodes only its own lines

Opening a diagnosis reads the prefix, header and index (about 10 ms for 100k
messages); a page then seeks to its chunks. One file rather than one per
chunk: a transcript keeps two files (raw bytes and this), deleting one is a
directory listing as before, and the whole file is written by one ``save``.
A reader checks the total length, so a file cut short (a full disk, a writer
still busy) is a cache miss, not rows from nowhere; every later open checks
the content hash, so a file replaced by a different one since the header was
read is an error, not wrong rows. Django's ``FileSystemStorage`` seeks in
place; the object storage (``inspector.web.objectstore``) turns each seek and
read into a ranged GET, so a page fetches its spans, not the whole file (one
whose files download whole on open still works, at the cost of the file per
request).

The layout's number is in the magic and in the cache's file name
(``inspector.web.store``): a cache of another layout is rebuilt from the raw
bytes, like one of another engine version.

No Django: the caller passes a function that opens the file for reading.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import os
import struct
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import IO, Any, cast

import orjson
import zstandard

from inspector.diagnosis.model import Diagnosis, Finding, Problem, Row, Summary

LAYOUT = 2  # 1 was the single compressed document
MAGIC = b"TIdiag%02d" % LAYOUT
# magic, header length, index length, total length of the file, stamp
PREFIX = struct.Struct("<8sQQQ8s")
# Rows a chunk holds; a page of the annotated view touches one or two.
CHUNK_ROWS = 200
LEVEL = 3
# Lists that grow with the transcript's length (and how broken it is): the
# header holds their length and first ``AT_HAND`` items, the rest is read on
# demand. A badly broken 100k-message session has 36 MB of provider issues.
LONG_LISTS = ("findings", "providers", "problems", "interrupted")
AT_HAND = 200  # the most a page shows of one: the unreadable lines (the verdict chips show 20)
HEADER_FIELDS = tuple(
    f.name for f in dataclasses.fields(Diagnosis) if f.name not in ("rows", *LONG_LISTS)
)

Opener = Callable[[], IO[bytes]]
# [rule, how many findings it has, the first ``limit`` of them], in order of first finding.
Group = list[Any]


class Unreadable(ValueError):
    """The file is no whole cache of this layout: another layout, cut short, or replaced."""


@dataclasses.dataclass(frozen=True, slots=True)
class RowIndex:
    """What choosing a view's rows needs of each row, one list per field.

    Roles are numbers into ``role_names``, and keys are left out while every
    key is ``r<position>`` (as ``diagnose`` names them): a long list of
    strings is what makes an index slow to decode; one of small ints is not.
    """

    role_names: list[str]
    roles: list[int]  # the row's role
    original_roles: list[int]  # the role the original view shows: the original's, else the row's
    input_indexes: list[int | None]
    in_original: list[bool]
    in_repaired: list[bool]
    findings: dict[int, list[str]]  # position -> rule ids, only rows that have some
    keys: list[str] | None  # None: every key is "r<position>"

    def __len__(self) -> int:
        return len(self.roles)

    @classmethod
    def of(cls, rows: Iterable[Row]) -> RowIndex:
        names: dict[str, int] = {}
        keys: list[str] = []
        index = cls([], [], [], [], [], [], {}, keys)
        roles, original_roles, input_indexes = (
            index.roles,
            index.original_roles,
            index.input_indexes,
        )
        in_original, in_repaired, findings = index.in_original, index.in_repaired, index.findings
        plain = True
        # One pass: each row is read once, while it is in the CPU's cache.
        for position, row in enumerate(rows):
            key = row["key"]
            keys.append(key)
            if plain and key != f"r{position}":
                plain = False
            role = row["role"]
            roles.append(names.setdefault(role, len(names)))
            original_roles.append(names.setdefault(row["original_role"] or role, len(names)))
            input_indexes.append(row["input_index"])
            in_original.append(row["in_original"])
            in_repaired.append(row["in_repaired"])
            if row["findings"]:
                findings[position] = list(row["findings"])
        index.role_names.extend(names)
        return index if not plain else dataclasses.replace(index, keys=None)

    def key(self, position: int) -> str:
        return f"r{position}" if self.keys is None else self.keys[position]

    def positions_of(self, keys: set[str]) -> dict[str, int]:
        """Where the rows with these keys are (keys no row has are left out)."""
        if self.keys is not None:
            return {key: p for p, key in enumerate(self.keys) if key in keys}
        found = {}
        for key in keys:
            number = key[1:]
            if key[:1] == "r" and number.isdigit() and int(number) < len(self):
                if key == f"r{int(number)}":  # not "r007"
                    found[key] = int(number)
        return found

    def role_code(self, role: str) -> int | None:
        return self.role_names.index(role) if role in self.role_names else None

    def to_json(self) -> dict[str, Any]:
        return {
            "role_names": self.role_names,
            "role": self.roles,
            "original_role": self.original_roles,
            "input_index": self.input_indexes,
            "in_original": self.in_original,
            "in_repaired": self.in_repaired,
            "finding_rows": list(self.findings),
            "finding_rules": list(self.findings.values()),
            "key": self.keys,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RowIndex:
        index = cls(
            role_names=data["role_names"],
            roles=data["role"],
            original_roles=data["original_role"],
            input_indexes=data["input_index"],
            in_original=data["in_original"],
            in_repaired=data["in_repaired"],
            findings=dict(zip(data["finding_rows"], data["finding_rules"], strict=True)),
            keys=data["key"],
        )
        columns: list[Sized] = [
            index.original_roles,
            index.input_indexes,
            index.in_original,
            index.in_repaired,
        ]
        if index.keys is not None:
            columns.append(index.keys)
        if any(len(column) != len(index) for column in columns):
            raise Unreadable("the row index's columns differ in length")
        return index


class IndexedRows(Sequence[Row]):
    """A diagnosis's rows by position, with the index that chooses among them.

    Rows are shared with the in-process diagnosis cache: callers never change them.
    """

    @property
    def row_index(self) -> RowIndex:
        raise NotImplementedError

    def take(self, positions: Iterable[int]) -> list[Row]:
        """The rows at these positions (each in ``range(len(self))``), in that order."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.row_index)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, slice):
            return self.take(range(len(self))[item])
        position = range(len(self))[item]  # IndexError past either end, as a list's
        return self.take([position])[0]

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Row]:
        # ``Diagnosis.to_dict`` deep-copies its fields: it gets plain rows.
        return copy.deepcopy(list(self), memo)


class ListRows(IndexedRows):
    """Rows held in memory (a diagnosis just made, another branch of a session)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self._rows = rows
        self._index: RowIndex | None = None

    @property
    def row_index(self) -> RowIndex:
        # Two threads may both build it; either result is the same.
        if self._index is None:
            self._index = RowIndex.of(self._rows)
        return self._index

    def take(self, positions: Iterable[int]) -> list[Row]:
        rows = self._rows
        return [rows[position] for position in positions]

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, item: Any) -> Any:
        return self._rows[item]

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows)


class _Source:
    """Opens the file and reads a span of it, checking it is the file the header came from."""

    def __init__(self, opener: Opener, prefix: bytes) -> None:
        self._opener = opener
        self._prefix = prefix

    def open(self) -> IO[bytes]:
        handle = self._opener()
        if handle.read(PREFIX.size) != self._prefix:
            handle.close()
            raise Unreadable("the cached diagnosis was replaced since it was opened")
        return handle

    @staticmethod
    def read(handle: IO[bytes], offset: int, length: int) -> bytes:
        handle.seek(offset)
        data = handle.read(length)
        if len(data) != length:
            raise Unreadable("the cached diagnosis is cut short")
        return data


class StoredRows(IndexedRows):
    """Rows read from the cache file a chunk at a time, when asked for.

    Nothing is kept between calls: a chunk decompresses in about 0.1 ms, and
    only the rows asked for are decoded. Safe to share between threads.
    """

    def __init__(
        self,
        source: _Source,
        index: RowIndex,
        chunks: list[tuple[int, int]],
        chunk_rows: int,
    ) -> None:
        self._source = source
        self._index = index
        self._chunks = chunks
        self._chunk_rows = chunk_rows

    @property
    def row_index(self) -> RowIndex:
        return self._index

    def take(self, positions: Iterable[int]) -> list[Row]:
        positions = list(positions)
        size = self._chunk_rows
        lines: dict[int, list[bytes]] = {}
        if positions:
            with self._source.open() as handle:
                decompressor = zstandard.ZstdDecompressor()
                for chunk in sorted({position // size for position in positions}):
                    lines[chunk] = self._lines(handle, decompressor, chunk)
        return [orjson.loads(lines[position // size][position % size]) for position in positions]

    def __iter__(self) -> Iterator[Row]:
        with self._source.open() as handle:
            decompressor = zstandard.ZstdDecompressor()
            for chunk in range(len(self._chunks)):
                for line in self._lines(handle, decompressor, chunk):
                    yield orjson.loads(line)

    def _lines(
        self, handle: IO[bytes], decompressor: zstandard.ZstdDecompressor, chunk: int
    ) -> list[bytes]:
        data = self._source.read(handle, *self._chunks[chunk])
        return decompressor.decompress(data).split(b"\n")


class Clipped(Sequence[Any]):
    """The first items of a longer list, and how long it is: what a page shows of it.

    ``len()`` is the whole list's; only the items held can be read.
    """

    def __init__(self, items: list[Any], total: int) -> None:
        self.items = items
        self.total = total

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, item: Any) -> Any:
        return self.items[item]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)


class _Rest:
    """The long lists of a stored diagnosis, read whole from the file the first time one is."""

    def __init__(self, source: _Source, at: tuple[int, int]) -> None:
        self._source = source
        self._at = at
        self._document: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def get(self, *path: str) -> list[Any]:
        with self._lock:
            if self._document is None:
                with self._source.open() as handle:
                    data = self._source.read(handle, *self._at)
                self._document = orjson.loads(zstandard.ZstdDecompressor().decompress(data))
            value: Any = self._document
        for name in path:
            value = value[name]
        if not isinstance(value, list):
            raise Unreadable(f"the stored diagnosis holds no list at {'/'.join(path)}")
        return value


class StoredList(Sequence[Any]):
    """A long list of a stored diagnosis: its length and first items at hand, the rest on demand.

    A page reads the length and the first items (a verdict chip's issues, the
    unreadable lines); anything past them reads the rest of the file's lists.
    """

    def __init__(self, rest: _Rest, path: tuple[str, ...], at_hand: dict[str, Any]) -> None:
        self._rest = rest
        self._path = path
        self._head: list[Any] = at_hand["head"]
        self._count: int = at_hand["count"]

    def _whole(self) -> list[Any]:
        if len(self._head) == self._count:
            return self._head
        return self._rest.get(*self._path)

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, item: Any) -> Any:
        head = self._head
        if isinstance(item, slice):
            start, stop, step = item.indices(self._count)
            if step > 0 and (stop <= len(head) or start >= stop):
                return head[start:stop:step]
        else:
            position = range(self._count)[item]  # IndexError past either end, as a list's
            if position < len(head):
                return head[position]
        return self._whole()[item]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._whole())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredList | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return copy.deepcopy(self._whole(), memo)


class StoredFindings(StoredList):
    """The findings, with the first of each rule at hand for the page's findings list."""

    def __init__(
        self, rest: _Rest, at_hand: dict[str, Any], groups: list[Group], limit: int
    ) -> None:
        super().__init__(rest, ("findings",), at_hand)
        self.groups = groups
        self.limit = limit


def group_findings(findings: Sequence[Finding], limit: int) -> list[Group]:
    """Findings by rule, in order of each rule's first finding: its count and first ``limit``."""
    if isinstance(findings, StoredFindings) and findings.limit == limit:
        return findings.groups
    groups: dict[str, Group] = {}
    for finding in findings:
        group = groups.get(finding["rule"])
        if group is None:
            group = groups[finding["rule"]] = [finding["rule"], 0, []]
        group[1] += 1
        if group[1] <= limit:
            group[2].append(finding)
    return list(groups.values())


@dataclasses.dataclass(slots=True)
class StoredDiagnosis(Summary):
    """A diagnosis as a page reads it: the fields of a ``Diagnosis``, the long ones on demand.

    ``rows`` are read by position with the index that chooses among them
    (``IndexedRows``); each long list is a ``Sequence`` whose length and first
    ``AT_HAND`` items are at hand, the rest read from the file when asked for
    (``StoredList``), or a plain list (``in_memory``, ``whole``). Read-only:
    rows and lists are shared with the in-process cache.
    """

    providers: dict[str, dict[str, Sequence[Any]]]  # provider -> before/after -> issues
    problems: Sequence[Problem]
    findings: Sequence[Finding]
    rows: IndexedRows
    interrupted: Sequence[dict[str, Any]]
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Every field whole and plain, rows included: what ``Diagnosis.to_dict`` gives."""
        return {
            field.name: copy.deepcopy(getattr(self, field.name))
            for field in dataclasses.fields(self)
        }


# What a page, a report or a share reads: a diagnosis just made or one from the cache.
DiagnosisView = Diagnosis | StoredDiagnosis


def in_memory(diagnosis: Diagnosis) -> StoredDiagnosis:
    """A diagnosis just made, as a page reads one: its rows with their index, built on demand."""
    fields = {f.name: getattr(diagnosis, f.name) for f in dataclasses.fields(diagnosis)}
    return StoredDiagnosis(
        **{**fields, "rows": ListRows(diagnosis.rows), "providers": dict(diagnosis.providers)}
    )


def whole(diagnosis: StoredDiagnosis) -> StoredDiagnosis:
    """The diagnosis with every long list whole and plain, for reports; rows stay as they are."""
    return dataclasses.replace(
        diagnosis,
        findings=list(diagnosis.findings),
        providers={
            name: {when: list(issues) for when, issues in checks.items()}
            for name, checks in diagnosis.providers.items()
        },
        problems=list(diagnosis.problems),
        interrupted=list(diagnosis.interrupted),
    )


# --- writing and reading the file ------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Encoded:
    """A diagnosis as the cache file's bytes, and what reading them back would give."""

    data: bytes
    prefix: bytes
    header: dict[str, Any]
    index: RowIndex

    def open(self, opener: Opener) -> StoredDiagnosis:
        """The diagnosis as read from the file ``opener`` opens, once ``data`` is saved there."""
        return _diagnosis(self.prefix, self.header, self.index, opener)


def _at_hand(items: Sequence[Any]) -> dict[str, Any]:
    return {"count": len(items), "head": items[:AT_HAND]}


def encode(diagnosis: Diagnosis | StoredDiagnosis, group_limit: int) -> Encoded:
    compress = zstandard.ZstdCompressor(level=LEVEL).compress
    dumps = orjson.dumps
    rows = diagnosis.rows
    lists = {name: getattr(diagnosis, name) for name in LONG_LISTS}
    # Offsets start after the index: the header cannot hold its own length.
    body = [compress(dumps(lists))]
    offset = len(body[0])
    chunks = []
    for start in range(0, len(rows), CHUNK_ROWS):
        blob = compress(b"\n".join([dumps(row) for row in rows[start : start + CHUNK_ROWS]]))
        chunks.append((offset, len(blob)))
        body.append(blob)
        offset += len(blob)
    index = RowIndex.of(rows)
    header = {
        "diagnosis": {name: getattr(diagnosis, name) for name in HEADER_FIELDS},
        "at_hand": {
            "findings": _at_hand(diagnosis.findings),
            "problems": _at_hand(diagnosis.problems),
            "interrupted": _at_hand(diagnosis.interrupted),
            "providers": {
                name: {
                    when: _at_hand(cast(Sequence[Any], issues)) for when, issues in checks.items()
                }
                for name, checks in diagnosis.providers.items()
            },
        },
        "groups": {"limit": group_limit, "groups": group_findings(diagnosis.findings, group_limit)},
        "rest": (0, len(body[0])),
        "chunks": chunks,
        "chunk_rows": CHUNK_ROWS,
    }
    header_blob = compress(dumps(header))
    index_blob = compress(dumps(index.to_json()))
    content = b"".join([header_blob, index_blob, *body])
    # A stamp of the content: another writer's file of the same diagnosis passes the check.
    stamp = hashlib.blake2b(content, digest_size=8).digest()
    total = PREFIX.size + len(content)
    prefix = PREFIX.pack(MAGIC, len(header_blob), len(index_blob), total, stamp)
    return Encoded(prefix + content, prefix, header, index)


def read(opener: Opener) -> StoredDiagnosis:
    """The diagnosis in the file: header and index read now, long lists and rows when asked for.

    Raises ``Unreadable`` for a file of another layout, or one cut short.
    """
    with opener() as handle:
        prefix = handle.read(PREFIX.size)
        if len(prefix) != PREFIX.size or not prefix.startswith(MAGIC):
            raise Unreadable("not a cached diagnosis of this layout")
        _, header_length, index_length, total, _ = PREFIX.unpack(prefix)
        head = handle.read(header_length + index_length)
        handle.seek(0, os.SEEK_END)
        if handle.tell() != total or len(head) != header_length + index_length:
            raise Unreadable("the cached diagnosis is cut short")
    decompress = zstandard.ZstdDecompressor().decompress
    try:
        header = orjson.loads(decompress(head[:header_length]))
        index = RowIndex.from_json(orjson.loads(decompress(head[header_length:])))
        if set(header["diagnosis"]) != set(HEADER_FIELDS):
            raise Unreadable("the cached diagnosis has other fields than a Diagnosis")
        return _diagnosis(prefix, header, index, opener)
    except (zstandard.ZstdError, orjson.JSONDecodeError, KeyError, TypeError) as error:
        raise Unreadable(f"the cached diagnosis does not decode: {error!r}") from error


def _diagnosis(
    prefix: bytes, header: dict[str, Any], index: RowIndex, opener: Opener
) -> StoredDiagnosis:
    _, header_length, index_length, _, _ = PREFIX.unpack(prefix)
    start = PREFIX.size + header_length + index_length
    source = _Source(opener, prefix)
    rest = _Rest(source, (start + header["rest"][0], header["rest"][1]))
    chunks = [(start + offset, length) for offset, length in header["chunks"]]
    at_hand = header["at_hand"]
    groups = header["groups"]
    return StoredDiagnosis(
        **header["diagnosis"],
        findings=StoredFindings(rest, at_hand["findings"], groups["groups"], groups["limit"]),
        providers={
            name: {
                when: StoredList(rest, ("providers", name, when), issues)
                for when, issues in checks.items()
            }
            for name, checks in at_hand["providers"].items()
        },
        problems=StoredList(rest, ("problems",), at_hand["problems"]),
        interrupted=StoredList(rest, ("interrupted",), at_hand["interrupted"]),
        rows=StoredRows(source, index, chunks, header["chunk_rows"]),
    )
