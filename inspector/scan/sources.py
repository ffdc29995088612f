"""Where a scan's files come from: a folder on disk, or the members of a zip.

No Django here. A zip is judged by its central directory alone (sizes,
counts, compression ratios) before any member is inflated, and a member's
name is only ever used as a label: nothing is extracted to a path it names
(an agent's database member is copied to a private temporary file of our own
naming, as SQLite reads only files; ``tasks.expand_zip``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from inspector.local import openhands, openhands_cli
from inspector.local.agents import facts_of_a_session
from inspector.local.databases import DATABASES, is_row_of
from inspector.local.outcome import StoreError
from inspector.local.sessions import is_session_name

# The agents' databases a folder may hold are ``DATABASES`` (``inspector.local.databases``):
# a folder's and a zip's are known by the names their agents give them.
__all__ = ["DATABASES", "is_row_of"]

# Members smaller than this cannot do harm whatever their ratio; JSON of a
# few KB often compresses better than 100 to 1.
RATIO_FLOOR = 1024 * 1024
# How many examples a note names before it says "and N more".
EXAMPLES = 3
# Session files carry ISO timestamps; the first in the head is when it began.
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT[0-9:.+\-Z]{2,40})"')
HEAD = 256 * 1024


@dataclass(slots=True)
class Found:
    """One file to scan: its path relative to what was scanned, and where its bytes are."""

    path: str
    source: str
    size: int
    started: datetime | None = None
    # Why the file is unreadable before its task runs (a zip member that would not unpack).
    reason: str = ""


@dataclass(slots=True)
class Limits:
    max_bytes: int
    max_files: int
    max_ratio: int
    max_file_bytes: int


@dataclass(slots=True)
class ZipPlan:
    """The members worth reading, under the names they will be stored as, and what was left out."""

    members: list[tuple[zipfile.ZipInfo, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # A database member's ``-wal`` beside it in the zip (by the database's ``filename``): its
    # committed writes not yet checkpointed into the database, read with it.
    wal: dict[str, zipfile.ZipInfo] = field(default_factory=dict)


class ZipRefused(ValueError):
    """The zip breaks a limit; ``str()`` says which, in plain words."""


def walk(root: Path) -> tuple[list[Found], list[str]]:
    """Every ``.jsonl`` and ``.json`` file under ``root`` (or ``root`` itself), by path, and
    every session of an agent's database there (``DATABASES``), named ``<db>/<sessionID>``."""
    if root.is_file():
        return [_found(root, root.name)], []
    found: list[Found] = []
    others: list[str] = []
    unread: list[str] = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories.sort()
        folder = Path(directory)
        if openhands_cli.is_session(folder):
            # An OpenHands CLI conversation: its event files are one session, read as its events.
            found.append(
                _found_events(folder, folder.relative_to(root).as_posix(), openhands_cli.stat)
            )
            names = [n for n in names if openhands_cli.session_of(folder / n) is None]
        elif openhands.is_session(folder) and any(openhands.session_of(folder / n) for n in names):
            # An OpenHands session: its event files are one session, read as its events folder.
            found.append(_found_events(folder, folder.relative_to(root).as_posix()))
            names = [n for n in names if openhands.session_of(folder / n) is None]
        elif folder.name == "event_cache" and openhands.is_session(folder.parent / "events"):
            continue  # copies of the events beside it (OpenHands' cache pages)
        for name in sorted(names):
            path = Path(directory) / name
            relative = path.relative_to(root).as_posix()
            if name in DATABASES and path.is_file():
                found_in, problem = _database(path, relative)
                found.extend(found_in)
                unread.extend([problem] if problem else [])
            elif database_file(name):
                continue  # the journal of a database beside it
            elif name == openhands_cli.BASE_STATE and openhands_cli.session_of(path):
                continue  # the conversation's state beside its events (read with them)
            elif is_session_name(name) and path.is_file() and not facts_of_a_session(path):
                found.append(_found(path, relative))
            else:
                others.append(relative)
    notes = [_note(others, "file is not", "files are not", "a .json or .jsonl session: left out")]
    return found, [note for note in [*unread, *notes] if note]


def database_file(name: str) -> bool:
    """A journal an agent's database keeps beside it (``opencode.db-wal``)."""
    return any(name == db + suffix for db in DATABASES for suffix in ("-wal", "-shm", "-journal"))


def _database(path: Path, relative: str) -> tuple[list[Found], str]:
    """Each session of an agent's database, as its own transcript; or why it cannot be read."""
    try:
        listed = DATABASES[path.name](path)
    except (sqlite3.Error, StoreError, OSError) as error:
        return (
            [],
            f"{relative} could not be read as {path.name} ({error}): its sessions are left out.",
        )
    size = path.stat().st_size
    # Only ever a row of this database: an id naming a path (``../x``) is never a file read.
    odd = [s for s, _, _ in listed if not is_row_of(s, path)]
    problem = (
        f"{relative} names {len(odd)} session(s) by an id that is no session name "
        f"({', '.join(repr(s.name) for s in odd[:EXAMPLES])}): left out."
        if odd
        else ""
    )
    return [
        Found(f"{relative}/{session.name}", str(session), size, row_time(newest))
        for session, _count, newest in listed
        if is_row_of(session, path)
    ], problem


def row_time(stamp: float) -> datetime | None:
    """A database row's time of last write, if it is one (the rows are whoever's wrote them)."""
    try:
        return datetime.fromtimestamp(stamp, UTC) if stamp else None
    except (ValueError, OverflowError, OSError):
        return None


def _found_events(
    folder: Path, relative: str, stat: Callable[[Path], tuple[int, float]] = openhands.stat
) -> Found:
    size, newest = stat(folder)
    return Found(relative, str(folder), size, datetime.fromtimestamp(newest, UTC))


def _found(path: Path, relative: str) -> Found:
    stat = path.stat()
    return Found(relative, str(path), stat.st_size, datetime.fromtimestamp(stat.st_mtime, UTC))


def plan_zip(archive: zipfile.ZipFile, limits: Limits) -> ZipPlan:
    """Check ``archive`` against ``limits`` and choose its members; raises ``ZipRefused``.

    Only the central directory is read. The sizes it declares are the most a
    member can give: ``zipfile`` stops reading at the declared size (and
    fails on a checksum mismatch), so a lying header cannot inflate further.
    """
    entries = [info for info in archive.infolist() if not info.is_dir()]
    if len(entries) > limits.max_files:
        raise ZipRefused(
            f"The zip holds {len(entries):,} files; the limit is {limits.max_files:,}. "
            "Split it into smaller zips, or ask whoever runs this server to raise "
            "INSPECTOR_SCAN_MAX_FILES."
        )
    declared = sum(info.file_size for info in entries)
    if declared > limits.max_bytes:
        raise ZipRefused(
            f"The zip would unpack to {_size(declared)}; the limit is {_size(limits.max_bytes)}. "
            "Nothing was read. Split it into smaller zips, or ask whoever runs this server to "
            "raise INSPECTOR_SCAN_MAX_MB."
        )
    # Small members are no bomb one by one, but thousands of them can be one
    # together: the archive as a whole is held to the same ratio.
    packed = sum(info.compress_size for info in entries)
    if declared >= RATIO_FLOOR and declared / max(packed, 1) > limits.max_ratio:
        raise ZipRefused(
            f"The zip's {len(entries):,} files would inflate from {_size(packed)} to "
            f"{_size(declared)} together ({declared / max(packed, 1):,.0f} to 1; the limit is "
            f"{limits.max_ratio} to 1). This looks like a zip bomb, so nothing was read."
        )
    for info in entries:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size >= RATIO_FLOOR and ratio > limits.max_ratio:
            raise ZipRefused(
                f"{info.filename} would inflate from {_size(info.compress_size)} to "
                f"{_size(info.file_size)} ({ratio:,.0f} to 1; the limit is "
                f"{limits.max_ratio} to 1). This looks like a zip bomb, so nothing was read. "
                "If the file is genuine, upload it on its own."
            )
    return _choose(entries, limits)


def _choose(entries: list[zipfile.ZipInfo], limits: Limits) -> ZipPlan:
    plan = ZipPlan()
    left_out: dict[str, list[str]] = {key: [] for key in _REASONS}
    taken: set[str] = set()
    databases: dict[str, zipfile.ZipInfo] = {}  # the database members, by name
    for info in entries:
        reason, name = _member_name(info)
        if reason is None and is_database(name):
            databases.setdefault(name, info)
    for info in entries:
        reason, name = _member_name(info)
        if reason == "journal":
            db, _, suffix = name.rpartition("-")
            beside = databases.get(db)
            if beside is not None and suffix == "wal" and beside.filename not in plan.wal:
                plan.wal[beside.filename] = info  # read with its database
                continue
            if beside is not None and suffix == "shm":
                reason = "index"
        # A database holds many sessions: each of them is held to the limit once read.
        if reason is None and info.file_size > limits.max_file_bytes and not is_database(name):
            reason = "large"
        if reason is None and name in taken:
            reason = "twice"
        if reason is not None:
            left_out[reason].append(info.filename)
            continue
        taken.add(name)
        plan.members.append((info, name))
    plan.members = _strip_common_folder(plan.members)
    for key, names in left_out.items():
        singular, plural, tail = _REASONS[key]
        if key == "large":
            tail = tail.format(limit=_size(limits.max_file_bytes))
        note = _note(names, singular, plural, tail)
        if note:
            plan.notes.append(note)
    return plan


# reason -> (one file ..., several files ..., what happened)
_REASONS = {
    "macos": ("entry is", "entries are", "macOS metadata (__MACOSX): skipped"),
    "absolute": ("entry has", "entries have", "an absolute path: skipped, nothing is written"),
    "parent": ("entry climbs", "entries climb", "out of the zip with '..': skipped"),
    "encrypted": ("entry is", "entries are", "encrypted: skipped, it cannot be read"),
    "other": ("file is not", "files are not", "a .json or .jsonl session: left out"),
    "journal": (
        "file is",
        "files are",
        "a database's journal (-wal, -shm, -journal) with no database beside it, or a "
        "rollback journal: not read, so what only it holds (writes not yet in the database) "
        "is not scanned",
    ),
    "index": (
        "file is",
        "files are",
        "a database's -shm, SQLite's index of its -wal: not needed, the -wal beside it is "
        "read and SQLite makes its own index",
    ),
    "large": ("file is", "files are", "over the {limit} limit for one transcript: skipped"),
    "twice": ("name appears", "names appear", "twice in the zip: the second copy was skipped"),
}


def _member_name(info: zipfile.ZipInfo) -> tuple[str | None, str]:
    """Why a member is left out (or ``None``) and the relative name it is stored under."""
    raw = info.filename.replace("\\", "/")
    parts = raw.split("/")
    if "__MACOSX" in parts:
        return "macos", raw
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        return "absolute", raw
    if ".." in parts:
        return "parent", raw
    if info.flag_bits & 0x1:
        return "encrypted", raw
    name = "/".join(part for part in parts if part not in ("", "."))
    base = PurePosixPath(name).name
    if name and database_file(base):
        return "journal", raw
    if not name or base.startswith("._") or not (is_session_name(name) or is_database(name)):
        return "other", raw
    return None, name


def is_database(name: str) -> bool:
    """Whether a zip member is an agent's database (``DATABASES``), whose sessions are read."""
    return PurePosixPath(name).name in DATABASES


def _strip_common_folder(
    members: list[tuple[zipfile.ZipInfo, str]],
) -> list[tuple[zipfile.ZipInfo, str]]:
    # Zipping a folder puts it in front of every name; scanning that folder on
    # disk would not, and the two should give the same relative paths.
    firsts = {name.split("/", 1)[0] for _, name in members}
    if len(firsts) != 1 or any("/" not in name for _, name in members):
        return members
    return [(info, name.split("/", 1)[1]) for info, name in members]


def zip_started(info: zipfile.ZipInfo) -> datetime | None:
    try:
        return datetime(*info.date_time, tzinfo=UTC)
    except ValueError:
        return None


def session_start(data: bytes) -> datetime | None:
    """The first ISO timestamp in the file's head (Claude Code and Codex records carry one)."""
    match = _TIMESTAMP.search(data, 0, HEAD)
    if match is None:
        return None
    try:
        when = datetime.fromisoformat(match.group(1).decode())
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _note(names: list[str], singular: str, plural: str, tail: str) -> str:
    if not names:
        return ""
    shown = ", ".join(names[:EXAMPLES])
    more = f" and {len(names) - EXAMPLES:,} more" if len(names) > EXAMPLES else ""
    if len(names) == 1:
        return f"1 {singular} {tail} ({shown})."
    return f"{len(names):,} {plural} {tail} ({shown}{more})."


def _size(size: int) -> str:
    if size >= 1024 * 1024 * 1024:
        return f"{size / 1024**3:.1f} GB"
    if size >= 1024 * 1024:
        return f"{size / 1024**2:.1f} MB"
    if size >= 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size} bytes"
