"""Reading JSON Lines files the way agent tools actually write them.

Agent CLIs append one JSON record per line while they run, so real files
carry the marks of crashes and races: a last line cut mid-record, two records
glued together where a newline was lost, a garbled line in the middle. This
module reads such a file record by record, recovers what can be recovered and
names everything else with its 1-based line number, so a shape module never
has to skip a line silently.

Public API (kept small on purpose; other shape modules may use it):

- ``read_jsonl(data) -> JsonlFile``: every record with its line number and
  exact bytes, plus a ``Problem`` for each line that was unreadable, cut
  short or glued.
- ``iter_jsonl(data, out)``: the same, one value at a time as it is decoded,
  for a reader that looks at every record anyway.
- ``RecordReader``: a reader's walk over the decoded records, refusing the file
  as unread once a record has shown it is the shape's.
- ``head_records(head, limit)``: the decodable records among the first
  complete lines of a sample, for ``sniff``.
- ``join_lines(raws, final_newline)``: the inverse of splitting, for writers.
- ``has_glued(problems)`` and ``unglue(data, records, crlf)``: for a writer
  giving back a file whose history did not change, the same bytes with each
  glued line written as one line a record (LINE-1, docs/beyond-the-spec.md);
  ``as_read(original)`` is that for a document shape's ``Parsed``.
- ``release(records)``: let go of the records' decoded values (each decodes
  its line again when read).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from inspector.formats.base import FormatError, Parsed, Problem

_BOM = b"\xef\xbb\xbf"
# What a released record holds in place of its value.
_RELEASED = object()
# A line the sniffers did not decode (``iter_jsonl``).
_UNREAD = object()


class Record:
    """One JSON value read from the file.

    ``raw`` is exactly the bytes it was read from (the whole line, or its part
    of a glued line), so a writer can re-emit an untouched record byte for
    byte. ``ok`` is false for a line that could not be decoded; its ``value``
    is then ``None`` and its ``raw`` is the whole line.

    A record read from a line keeps where the line lies in the file, not a
    copy of it: ``raw`` is cut from the file when a writer asks for it, which
    is for the few records a repair touches around, not for every line. A
    reader done with the decoded values may ``release`` them: ``value``
    then decodes the line again each time it is read.
    """

    __slots__ = ("_data", "_end", "_raw", "_start", "_value", "glued", "line", "ok")

    def __init__(
        self, line: int, raw: bytes, value: Any = None, ok: bool = True, glued: bool = False
    ) -> None:
        self.line = line
        self._value = value
        self.ok = ok
        self.glued = glued
        self._raw: bytes | None = raw
        self._data = b""
        self._start = self._end = 0

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            return self._data[self._start : self._end]
        return self._raw

    @property
    def value(self) -> Any:
        value = self._value
        if value is _RELEASED:
            raw = self._data[self._start : self._end]
            return orjson.loads(raw[3:] if raw.startswith(_BOM) else raw)
        return value

    def __repr__(self) -> str:
        return f"Record(line={self.line}, ok={self.ok}, glued={self.glued}, value={self.value!r})"


def release(records: list[Record]) -> None:
    """Let go of the decoded values of the records read from lines.

    A long session's records are most of what a reader decodes; once its
    messages are made, holding them all only keeps the garbage collector
    busy and the memory taken. Records of glued lines and of documents keep
    theirs.
    """
    for record in records:
        if record._raw is None:
            record._value = _RELEASED


@dataclass(slots=True)
class JsonlFile:
    """A JSONL file as read: records in file order and the problems found.

    ``final_newline`` says whether the data ended with a newline, so that a
    writer can keep that. ``crlf`` is true when lines end in ``\\r\\n`` (the
    ``\\r`` stays in each ``raw``; a writer adds one to the lines it makes).
    """

    records: list[Record] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    final_newline: bool = True
    crlf: bool = False


def read_jsonl(data: bytes) -> JsonlFile:
    """Decode every non-blank line of ``data``; never raises on bad lines.

    - a line holding two or more records with no newline between them gives
      each record and a ``glued`` problem on that line;
    - the last line, when it fails and the data does not end with a newline,
      is reported as ``truncated`` (the writer was cut off mid-record);
    - any other line that fails is ``unreadable``, with the decoder's reason.
    """
    out = JsonlFile()
    for _ in iter_jsonl(data, out):
        pass
    return out


def iter_jsonl(data: bytes, out: JsonlFile) -> Iterator[Any]:
    """``read_jsonl`` into ``out``, yielding each record's value as it is read.

    Each value comes right after its record was added to ``out.records``
    (``None`` for a line that could not be read: its record is not ``ok``),
    and any problem found so far is in ``out.problems``. A reader that looks
    at every record finds it here still in the processor's cache; a second
    pass over a long session's decoded records costs about half as much time
    again as the look itself. A caller may pause the collector for as
    long as it iterates (``inspector.collector``).
    """
    final_newline = data.endswith(b"\n")
    out.final_newline = final_newline or not data
    first_end = data.find(b"\n")
    out.crlf = data.endswith(b"\r", 0, len(data) if first_end < 0 else first_end)
    # Lines are decoded from views of ``data``: splitting would copy every line
    # first, a second pass over the file that costs a fifth of the decoding.
    view = memoryview(data)
    find, loads, records, new = data.find, orjson.loads, out.records, Record.__new__
    size = len(data)
    start = 3 if data.startswith(_BOM) else 0
    number = 0
    sniffed, whole = _take_head(data)
    while start < size:
        number += 1
        end = find(b"\n", start)
        if end < 0:
            end = size
        line_start = 0 if number == 1 else start  # a BOM stays in the first line's bytes
        value = sniffed.pop(number, _UNREAD) if end < whole else _UNREAD
        if value is _UNREAD:
            try:
                value = loads(view[start:end])
            except orjson.JSONDecodeError as exc:
                text = data[start:end]
                if text and not text.isspace():  # blank lines are no records
                    count = len(records)
                    _recover(out, number, data[line_start:end], text, exc, end == size)
                    for record in records[count:]:  # a glued line's records, or one not read
                        yield record._value
                start = end + 1
                continue
        # The record of a line, ``data[line_start:end]``, is made here: a
        # call to make each of a long file's records costs more than this.
        record = new(Record)
        record.line = number
        record._value = value
        record.ok = True
        record.glued = False
        record._raw = None
        record._data = data
        record._start = line_start
        record._end = end
        records.append(record)
        yield value
        start = end + 1


def _recover(
    out: JsonlFile,
    number: int,
    raw: bytes,
    text: bytes,
    error: orjson.JSONDecodeError,
    last: bool,
) -> None:
    """Read what a line that did not decode as one record holds, or report it."""
    parts = _split_glued(text)
    if parts is not None:
        for part in parts:
            out.records.append(Record(number, part, orjson.loads(part), glued=True))
        out.problems.append(
            Problem(
                number,
                f"{len(parts)} records written on one line with no newline between"
                " them; each was read",
                "glued",
            )
        )
        return
    out.records.append(Record(number, raw, None, ok=False))
    if last and not out.final_newline:
        reason = f"the last line ends mid-record ({error.msg}); the rest of the file was read"
        out.problems.append(Problem(number, reason, "truncated"))
    else:
        out.problems.append(Problem(number, f"not valid JSON: {error.msg}", "unreadable"))


def _split_glued(text: bytes) -> list[bytes] | None:
    """Split a line of records written back to back, or None if it is not that.

    Uses the decoder's own position for "content after document", so a long
    line costs one decode per record, never a search over every ``}{``.
    """
    parts: list[bytes] = []
    rest = text.strip()
    if rest[:1] not in _OPENS:
        return None  # its first record would not be one (the check below), nor its last
    while rest:
        try:
            orjson.loads(rest)
            parts.append(rest)
            break
        except orjson.JSONDecodeError as exc:
            if exc.msg != "unexpected content after document":
                return None
            # orjson reports a character offset; the line is bytes.
            cut = len(rest.decode("utf-8", "replace")[: exc.pos].encode("utf-8", "replace"))
            if cut <= 0 or cut >= len(rest):
                return None
            parts.append(rest[:cut].strip())
            rest = rest[cut:].strip()
    # One record and trailing garbage is not a glued line: only whole records count.
    return parts if len(parts) > 1 and all(p[:1] in _OPENS for p in parts) else None


# What a glued line's records start with.
_OPENS = (b"{", b"[")
# Bytes no JSON value ends with: a line ending so (past white space) decodes to nothing,
# whole or as glued records, so its decoder's error is not worth making.
_NO_END = (b",", b":", b"{", b"[")


# The lines ``head_records`` decodes at most for a memo entry: the largest ``limit`` any
# sniffer asks for.
_HEAD_LINES = 50
# The last sample ``head_records`` read and its decoded lines, ``(head, [(index, value)])``:
# every JSONL shape's ``sniff`` reads the same 64 KiB of a file, and decoding them (or,
# for a JSON document, failing to, line after line) once for each shape was a fifth of
# the diagnosis of a small file. One entry, replaced whole (atomic under threads), keyed
# by the bytes' equality; ``forget_head`` drops it when a file has been read.
_head_memo: tuple[bytes, list[tuple[int, Any]]] | None = None


class RecordReader:
    """A JSON Lines reader that takes the records of a file one at a time (``read_all``).

    Its ``record`` hook reads one record (Copilot, Goose and Kimi Code override
    it) and sets ``sure`` once a record has shown the file is its shape's: a
    ``FormatError`` after that refuses the file as unread (``FormatError.unread``)
    instead of letting a more generic shape read it. Lines that could not be
    decoded are not handed over: ``read_jsonl`` names them in its problems.
    """

    def __init__(self) -> None:
        self.sure = False

    def record(self, rec: int, record: Record) -> None:
        """Hook: read record ``rec`` (decoded); ``FormatError`` for one the shape refuses."""
        raise NotImplementedError

    def read_all(self, read: JsonlFile) -> None:
        try:
            for rec, record in enumerate(read.records):
                if record.ok:
                    self.record(rec, record)
        except FormatError as exc:
            raise FormatError(str(exc), unread=self.sure) from None


def record_type(
    value: Any,
    line: int,
    types: Collection[str],
    writer: str,
    *,
    record: str = "a record",
    refuses: str = "does not write",
) -> str:
    """The ``type`` of a record a shape's reader takes whole, one of ``types``; for any
    other, the ``FormatError`` that says ``{record} of type 'x' {writer} {refuses}``
    (Droid's, Qwen Code's, Kimi Code's and Copilot's readers)."""
    if not isinstance(value, dict):
        raise FormatError(f"line {line}: a record that is not an object")
    kind = value.get("type")
    # A type that is no string is no type of ``types`` (and may be a list: unhashable).
    if not isinstance(kind, str) or kind not in types:
        what = f"of type {kind!r}" if "type" in value else "without a 'type'"
        raise FormatError(f"line {line}: {record} {what} {writer} {refuses}")
    return kind


def head_records(head: bytes, limit: int = 50) -> list[Any]:
    """The decodable JSON values among the first ``limit`` complete lines.

    The last line of the sample is tried too (a small file fits whole in the
    sample), and silently left out when it was cut by the sample's end. The
    list is the caller's; the values in it are shared with other callers
    asking about the same sample, so they are read, never changed.
    """
    global _head_memo
    if limit > _HEAD_LINES:
        return [value for _, value in _head_values(head, limit)]
    memo = _head_memo
    if memo is not None and (memo[0] is head or memo[0] == head):
        decoded = memo[1]
    else:
        decoded = _head_values(head, _HEAD_LINES)
        _head_memo = (head, decoded)
    # The first ``limit`` parts of ``split(b"\n", 50)`` are those of ``split(b"\n", limit)``.
    return [value for index, value in decoded if index < limit]


def _take_head(data: bytes) -> tuple[dict[int, Any], int]:
    """What the sniffers decoded of ``data``'s first lines, for its reader to take rather
    than decode them again: ``{line number: value}`` for the lines whose bytes are all
    in the sample, and the offset before which a line ends to be one of those.

    The memo is dropped as it is taken: a second reader (the first one refused the
    file) decodes its own values, whatever the first did with these.
    """
    global _head_memo
    memo = _head_memo
    if memo is None or not data.startswith(memo[0]):
        return {}, 0
    _head_memo = None
    head = memo[0]
    # A line is whole in the sample when a newline in it follows, or the sample is the file.
    whole = len(data) + 1 if len(head) == len(data) else len(head)
    # A glued line's several values are left to the reader, which reads that line itself.
    seen = Counter(index for index, _ in memo[1])
    return {index + 1: value for index, value in memo[1] if seen[index] == 1}, whole


def forget_head() -> None:
    """Drop ``head_records``'s memo (``formats.load`` does when a file has been read)."""
    global _head_memo
    _head_memo = None


def _head_values(head: bytes, limit: int) -> list[tuple[int, Any]]:
    if head.startswith(_BOM):
        head = head[3:]
    values: list[tuple[int, Any]] = []
    for index, raw in enumerate(head.split(b"\n", limit)[:limit]):
        text = raw.strip()
        if not text or text[-1:] in _NO_END:
            continue  # blank, or a line of a document laid out on several (no value ends so)
        try:
            values.append((index, orjson.loads(raw)))
        except orjson.JSONDecodeError as exc:
            # Records glued where a newline was lost are records, as ``read_jsonl`` reads them.
            if exc.msg == "unexpected content after document":
                parts = _split_glued(raw)
                values.extend((index, orjson.loads(part)) for part in parts or ())
    return values


def join_lines(raws: list[bytes], final_newline: bool = True) -> bytes:
    """Join lines into a JSONL file; a line keeps any ``\\r`` it was read with."""
    if not raws:
        return b""
    body = b"\n".join(raws)
    return body + b"\n" if final_newline else body


def has_glued(problems: Iterable[Problem]) -> bool:
    """Did the reader find a line holding more than one record?"""
    return any(problem.kind == "glued" for problem in problems)


def unglue(data: bytes, records: Sequence[Record], crlf: bool = False) -> bytes:
    """``data`` with each glued line written as one line per record it held.

    ``records`` are what ``read_jsonl`` read from ``data``. The records of a
    glued line keep their own bytes, each on a line of its own (ending in
    ``\r`` in a file whose lines do); every other byte stays as it was.
    """
    glued: dict[int, list[bytes]] = {}
    for record in records:
        if record.glued:
            glued.setdefault(record.line, []).append(record.raw)
    if not glued:
        return data
    cr = b"\r" if crlf else b""
    out: list[bytes] = []
    copied = 0  # data[:copied] is in ``out``
    start = 0  # where line ``number`` starts
    number = 1
    for line in sorted(glued):
        while number < line:  # the lines before it stay as they are
            start = data.index(b"\n", start) + 1
            number += 1
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        out.append(data[copied:start])
        if number == 1 and data.startswith(_BOM):
            out.append(_BOM)  # the parts were read from after it
        out.append(b"\n".join(part + cr for part in glued[line]))
        copied = end
    out.append(data[copied:])
    return b"".join(out)


def as_read(original: Parsed) -> bytes:
    """What a document writer gives back for the history it read: the file's bytes,
    or, where the reader read lines (``state["lines"]``) and found two records on
    one, those bytes with each record on its own line, as a repaired file has it."""
    state = original.state
    data: bytes = state["data"]
    if "lines" in state and has_glued(original.problems):
        return unglue(data, state["lines"], state["crlf"])
    return data
