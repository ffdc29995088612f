"""The agents' SQLite databases, as a whole file: which agent's one is, and its sessions read
from a private copy.

No Django. What crosses here: a database's bytes in (an upload, a zip's member), each
session's bytes out as its store reads it (``stores.for_path``), or the reason it cannot be.

A database handed over as bytes is known by its SQLite header and by the tables and columns
its agent's reader needs (``TABLES``), never by the name it came under: an upload can be
called anything. SQLite reads only files, so the bytes are copied once into a private
temporary folder, under the name the agent gives its database (which is how a store owns
its sessions), opened read-only there, and the folder goes whatever happens.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from inspector.local import goose_db, hermes_db, opencode, q_db, stores
from inspector.local.outcome import StoreError
from inspector.local.store import FILE

log = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"

# Our private folders: mkdtemp's names, a prefix and 8 of its letters; a zip step's
# (``inspector.scan.tasks``) and an uploaded database's (``private_copy``).
ZIP_PRIVATE = "inspector-zipdb-"
UPLOAD_PRIVATE = "inspector-db-"
_PRIVATE_NAME = re.compile(
    f"(?:{re.escape(ZIP_PRIVATE)}|{re.escape(UPLOAD_PRIVATE)})[a-z0-9_]{{8}}"
)
# A private folder untouched this long is a killed step's: no step reads one database so long.
STALE_SECONDS = 6 * 3600

# The agents' databases, each by the name its agent gives it, with what lists its sessions
# (each named ``<db>/<sessionID>``, read through its store, read-only): OpenCode's (its
# event-sourced sessions too), Kilo's, Goose's, Hermes's, Amazon Q's / Kiro CLI's.
DATABASES: dict[str, Callable[[Path], list[tuple[Path, int, float]]]] = {
    "opencode.db": opencode.db_sessions,
    # kilocli (issue 27): Kilo's, OpenCode's tables (known by its name in a folder or a zip;
    # by its tables, bytes alone are OpenCode's, read the same).
    "kilo.db": opencode.db_sessions,
    goose_db.DB_NAME: goose_db.sessions,
    hermes_db.DB_NAME: hermes_db.sessions,
    q_db.DB_NAME: q_db.sessions,
}

# What each database's listing and reading need: table -> columns. Goose and Hermes both
# keep ``sessions`` and ``messages``; their message columns tell them apart.
TABLES: dict[str, dict[str, frozenset[str]]] = {
    "opencode.db": {
        "session": frozenset({"id", "time_updated"}),
        "part": frozenset({"id", "session_id", "time_updated"}),
    },
    "kilo.db": {
        "session": frozenset({"id", "time_updated"}),
        "part": frozenset({"id", "session_id", "time_updated"}),
    },
    goose_db.DB_NAME: {
        "sessions": frozenset({"id", "updated_at"}),
        "messages": frozenset(goose_db.COLUMNS),
    },
    hermes_db.DB_NAME: {
        "sessions": frozenset({"id", "started_at"}),
        "messages": frozenset({"id", "session_id", "role", "content", "timestamp"}),
    },
    # Q's conversations table; Kiro CLI's databases keep it beside conversations_v2.
    q_db.DB_NAME: {"conversations": frozenset({"key", "value"})},
}
# What a refusal calls each.
AGENTS = {
    "opencode.db": "OpenCode",
    "kilo.db": "Kilo CLI",
    goose_db.DB_NAME: "Goose",
    hermes_db.DB_NAME: "Hermes",
    q_db.DB_NAME: "Amazon Q / Kiro CLI",
}


class Unreadable(ValueError):
    """The bytes are no agent's database this reads; ``str()`` says why, in plain words."""


@dataclass(slots=True)
class Session:
    """One session of a database: its id, and its bytes or why it could not be read."""

    name: str
    data: bytes = b""
    newest: float = 0.0
    reason: str = ""


def is_sqlite(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) opens an SQLite database."""
    return head.startswith(SQLITE_HEADER)


def is_row_of(session: Path, db: Path) -> bool:
    """Whether ``session`` names a row of the database ``db``, not some other path."""
    return session.parent == db and session.name not in ("", ".", "..")


def mark_out_of_wal(copy: IO[bytes]) -> None:
    """Mark a private copy of a WAL database as a rollback one (its header's bytes 18-19,
    2 -> 1, what leaving WAL mode writes): a read-only reader then makes no -shm and -wal
    beside it. The copy has no log of its own, so it reads the same rows."""
    copy.seek(0)
    header = copy.read(20)
    if header[:16] == SQLITE_HEADER and header[18:20] == b"\x02\x02":
        copy.seek(18)
        copy.write(b"\x01\x01")


def kind_of(db: Path) -> str | None:
    """The name of the agent's database ``db`` is, by its tables (``TABLES``), or ``None``.

    Raises ``sqlite3.Error`` when ``db`` is no database SQLite can read.
    """
    tables = _tables(db)
    for kind, needs in TABLES.items():
        if all(columns <= tables.get(table, frozenset()) for table, columns in needs.items()):
            return kind
    return None


def _tables(db: Path) -> dict[str, frozenset[str]]:
    uri = f"{db.resolve().as_uri()}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as connection:
        names = [
            str(row[0])
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {
            name: frozenset(
                str(column[0])
                for column in connection.execute("SELECT name FROM pragma_table_info(?)", (name,))
            )
            for name in names
        }


def read_sessions(chunks: Iterable[bytes], max_session_bytes: int) -> tuple[str, list[Session]]:
    """The agent's database whose bytes ``chunks`` gives: its name (``DATABASES``) and each
    of its sessions, read read-only from a private copy removed whatever happens.

    Raises ``Unreadable`` (nothing read) when the bytes are no database SQLite reads, no
    agent's database, or one whose sessions cannot be listed. A session that cannot be
    read, or is over ``max_session_bytes``, is a ``Session`` with its reason.
    """
    with private_copy(chunks) as db:
        try:
            kind = kind_of(db)
        except sqlite3.Error as error:
            raise Unreadable(f"This is no SQLite database that can be read ({error}).") from None
        if kind is None:
            tables = ", ".join(sorted(_tables(db))[:8]) or "none"
            known = ", ".join(f"{agent}'s {name}" for name, agent in AGENTS.items())
            raise Unreadable(
                f"This SQLite database is not one of an agent's this reads ({known}): "
                f"its tables ({tables}) are not theirs."
            )
        named = db.rename(db.with_name(kind))
        try:
            listed = DATABASES[kind](named)
        except (sqlite3.Error, StoreError, OSError) as error:
            raise Unreadable(
                f"This looks like {AGENTS[kind]}'s {kind}, but its sessions could not be listed "
                f"({_why(error, named)})."
            ) from None
        return kind, [
            _read(session, newest, named, max_session_bytes) for session, _, newest in listed
        ]


@contextlib.contextmanager
def private_copy(chunks: Iterable[bytes]) -> Iterator[Path]:
    """The bytes as a file in a private temporary folder (read-only to SQLite, no journal
    beside it), gone when the block ends, however it ends."""
    sweep_private_folders()
    with tempfile.TemporaryDirectory(prefix=UPLOAD_PRIVATE) as private:
        db = Path(private).resolve() / "upload"
        with db.open("xb+") as copy:
            for chunk in chunks:
                copy.write(chunk)
            mark_out_of_wal(copy)
        yield db


def copy_into(source: IO[bytes], copy: IO[bytes], *, out_of_wal: bool = True) -> None:
    """``source`` into ``copy`` (a private file), in pieces, marked out of WAL unless told
    otherwise (a copy whose ``-wal`` log is copied beside it stays in WAL to read it)."""
    shutil.copyfileobj(source, copy, 1024 * 1024)
    if out_of_wal:
        mark_out_of_wal(copy)


def _read(session: Path, newest: float, db: Path, max_bytes: int) -> Session:
    store = stores.for_path(session)
    if not is_row_of(session, db) or store is FILE:
        # Only ever a row of this database: an id naming a path is never a file read.
        return Session(session.name, newest=newest, reason="Its id is no session name: skipped.")
    try:
        data = store.read(session)  # read-only
    except (sqlite3.Error, StoreError, OSError) as error:
        return Session(
            session.name, newest=newest, reason=f"It could not be read ({_why(error, db)})."
        )
    if len(data) > max_bytes:
        reason = f"It is over the {max_bytes:,} bytes limit for one transcript: skipped."
        return Session(session.name, newest=newest, reason=reason)
    return Session(session.name, data, newest)


def _why(error: Exception, db: Path) -> str:
    """The error's words without our temporary folder's path."""
    return str(error).replace(str(db), db.name).replace(str(db.parent), "")


def sweep_private_folders(now: float | None = None) -> list[Path]:
    """Remove the private folders a killed step left (a zip's databases, an uploaded
    database: the folder goes when a step ends however it ends, but not when its process
    is killed); the ones removed.

    Only ours: a folder (never a link) directly in the temporary base, named as
    ``TemporaryDirectory`` names ours (``_PRIVATE_NAME``), owned by this user, nothing in
    it written for ``STALE_SECONDS``; removed without following a link inside (``shutil.rmtree``'s
    descriptor-based walk; where the platform has none, nothing is swept)."""
    if not shutil.rmtree.avoids_symlink_attacks:
        return []
    base = Path(tempfile.gettempdir())
    cutoff = (time.time() if now is None else now) - STALE_SECONDS
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        if not _PRIVATE_NAME.fullmatch(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            newest = max(
                [info.st_mtime, *(e.stat(follow_symlinks=False).st_mtime
                                  for e in os.scandir(entry.path))]
            )  # fmt: skip
        except OSError:
            continue
        if newest > cutoff:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(base / entry.name)
    if removed:
        log.info("removed %d stale private folder(s) of killed steps", len(removed))
    return removed
