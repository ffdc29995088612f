"""A project's downloads, streamed: the repaired sessions as a zip, and the table as CSV.

The zip is written to a sink that hands its bytes on after every member, so
a download holds one session in memory at a time however large the project.
"""

from __future__ import annotations

import csv
import unicodedata
import zipfile
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from inspector.diagnosis import REPAIR_RULES, repaired_bytes
from inspector.web import store
from inspector.web.models import Transcript

if TYPE_CHECKING:
    from inspector.scan.reports import Session

NOTES_NAME = "inspector-notes.txt"


class _Sink:
    """A write-only file for ``zipfile`` that lets the bytes be taken as they come."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._offset = 0

    def write(self, data: bytes) -> int:
        self._chunks.append(bytes(data))
        self._offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self._offset

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass  # zipfile never closes a file it was handed; typeshed's protocol still asks

    def take(self) -> bytes:
        data = b"".join(self._chunks)
        self._chunks.clear()
        return data


def repaired_zip(transcripts: Iterable[Transcript]) -> Iterator[bytes]:
    """Every session in its source shape, repaired where it needed it, under its relative path.

    Sessions that need no repair go in byte for byte as stored.
    """
    sink = _Sink()
    notes: list[str] = []
    names: set[str] = set()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for transcript in transcripts:
            name = _unique(zip_name(transcript), names)
            try:
                if transcript.needs_repair:
                    data = repaired_bytes(store.load_transcript(transcript), "source")
                else:
                    data = store.read_raw(transcript)
            except store.UnreadableTranscript as error:
                notes.append(f"{name}: kept as uploaded, the repair failed: {error}")
                data = store.read_raw(transcript)
            archive.writestr(_info(name, transcript.created), data)
            del data
            yield sink.take()
        if notes:
            text = "These sessions could not be repaired:\n" + "\n".join(notes) + "\n"
            archive.writestr(_info(NOTES_NAME, None), text.encode())
    yield sink.take()


def zip_name(transcript: Transcript) -> str:
    """The transcript's relative path, made safe to unpack (no absolute paths, no '..')."""
    raw = (transcript.relative_path or transcript.file_name or transcript.public_id).replace(
        "\\", "/"
    )
    parts = [part for part in raw.split("/") if part not in ("", ".", "..")]
    return "/".join(parts) or transcript.public_id


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 1
    path = PurePosixPath(name)
    while candidate in taken:
        number += 1
        candidate = str(path.with_name(f"{path.stem} ({number}){path.suffix}"))
    taken.add(candidate)
    return candidate


def _info(name: str, when: datetime | None) -> zipfile.ZipInfo:
    stamp = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold
    if when is not None and when.year >= 1980:
        stamp = (when.year, when.month, when.day, when.hour, when.minute, when.second)
    info = zipfile.ZipInfo(name, date_time=stamp)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


# --- CSV -------------------------------------------------------------------


class _Echo:
    def write(self, value: str) -> str:
        return value


CSV_HEADER = [
    "date",
    "file",
    "format",
    "messages",
    "needs_repair",
    "unreadable_lines",
    *REPAIR_RULES,
    "rejected_before_repair",
    "rejected_after_repair",
    "parent_session",
    "timeline",
]


def sessions_csv(sessions: Iterable[Session], url: Callable[[str], str]) -> Iterator[str]:
    """The sessions table as CSV rows; ``url`` turns a path into an absolute link."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_HEADER)
    for session in sessions:
        verdicts: dict[str, Any] = session.verdicts or {}
        row = [
            session.date.isoformat(),
            session.relative_path or session.file_name,
            session.format,
            session.message_count,
            "yes" if session.needs_repair else "no",
            session.problems,
            *[(session.counts or {}).get(rule, 0) for rule in REPAIR_RULES],
            " ".join(name for name, v in verdicts.items() if not v.get("before_ok", True)),
            " ".join(name for name, v in verdicts.items() if not v.get("after_ok", True)),
            session.parent.relative_path if session.parent else "",
            url(session.get_absolute_url()),
        ]
        yield writer.writerow([_cell(value) for value in row])


# What a spreadsheet takes for the start of a formula, full-width forms included
# (some spreadsheets fold them to the ASCII ones), after anything before it that
# shows nothing: whitespace, and invisible characters (format characters such as
# a zero-width space or joiner, a byte-order mark or a soft hyphen, controls,
# combining marks with nothing to combine with, and the blank letters).
FORMULA_STARTS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Zs", "Zl", "Zp", "Mn", "Me"})
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def _first_visible(value: str) -> str:
    for char in value:
        if not (
            char.isspace()
            or char in _BLANK_LETTERS
            or unicodedata.category(char) in _INVISIBLE_CATEGORIES
        ):
            return char
    return ""


def _cell(value: Any) -> Any:
    # A spreadsheet runs a cell that starts like a formula; the apostrophe keeps it text.
    if isinstance(value, str) and (
        value[:1] in ("\t", "\r", "\n") or _first_visible(value) in FORMULA_STARTS
    ):
        return "'" + value
    return value
