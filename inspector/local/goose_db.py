"""A session in Goose's SQLite database, fixed in place in one transaction; and undone.

Newer Goose (block/goose) keeps its sessions in ``sessions/sessions.db`` under
its data folder: a ``sessions`` row (``id``, ``name``, ``working_dir``, ...)
and one ``messages`` row per message (``id`` in order, ``message_id``,
``session_id``, ``role``, ``content_json`` the message's content items,
``created_timestamp``, ``metadata_json``). A session is named
``<sessions>/sessions.db/<sessionID>`` here; ``read`` gives it as the Goose
JSON Lines the ``goose`` shape reads (a metadata line from the session row,
then one line a message row, each with its row's id under ``_row``).

``fix`` reads the rows in one read, repairs that document with the pure
code and plans the row changes by row id: a changed line updates its row, a
dropped one deletes it, a new one (a result the repair added, in a user
message of its own) is inserted after the session's last row, with the ids
that follow the database's largest (Goose reads a session's rows in id
order, so a new row can only go last; a plan that would put one before a
later row is refused). It refuses, writing nothing, if the database was
written in the last ``quiet_seconds`` (Goose may be running). It backs up
the original rows of every touched id, and the ids it inserts, in a backup
set outside the database (``<sessions>/transcript-inspector-backups/
<sessionID>/<stamp>/rows.json`` with ``note.json``), then writes every
change in one ``BEGIN IMMEDIATE`` transaction, inside which it reads the
session's rows (and the largest id) again and rolls back if any differs from
what it planned from. After the commit the session is read back and
diagnosed; if it is not clean the original rows are put back. ``undo`` puts
the backed-up rows back in one transaction, if the rows are still the ones
``fix`` wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from inspector.diagnosis import repaired_bytes
from inspector.local import opencode, opencode_db
from inspector.local.agents import Agent
from inspector.local.confine import Confined, Refused, absolute, safe_name
from inspector.local.outcome import Outcome, StoreError, diagnosed, verify
from inspector.local.store import LocalStore, Run

DB_NAME = "sessions.db"
ROWS = "rows.json"
NOTE = opencode.NOTE
BACKUPS = opencode.BACKUPS
# The columns of a message row fix reads and writes (``timestamp`` and ``tokens`` are kept).
COLUMNS = ("id", "message_id", "session_id", "role", "content_json", "created_timestamp",
           "metadata_json")  # fmt: skip
_SELECT = (
    "SELECT id, message_id, session_id, role, content_json, created_timestamp, metadata_json"
    " FROM messages WHERE session_id = ? ORDER BY id"
)
_INSERT = (
    "INSERT INTO messages (id, message_id, session_id, role, content_json, created_timestamp,"
    " metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RowChange:
    """One message row as it was (``old``) and as fix writes it (``new``); ``None``: absent."""

    id: int
    old: Row | None
    new: Row | None

    def describe(self) -> str:
        verb = "added" if self.old is None else "removed" if self.new is None else "changed"
        return f"messages row {self.id} {verb}"


def is_session(path: Path) -> bool:
    """A session named inside Goose's database: ``<sessions>/sessions.db/<sessionID>``."""
    return path.parent.name == DB_NAME and path.parent.is_file()


def _connect(db: Path) -> sqlite3.Connection:
    # Read-only, as OpenCode's: Goose may hold the database open (WAL).
    connection = opencode._connect(db)
    connection.row_factory = sqlite3.Row
    return connection


def _rows(connection: sqlite3.Connection, session_id: str) -> list[Row]:
    connection.row_factory = sqlite3.Row
    return [dict(row) for row in connection.execute(_SELECT, (session_id,))]


def _largest(connection: sqlite3.Connection) -> int:
    return int(connection.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])


def sessions(db: Path) -> list[tuple[Path, int, float]]:
    """Each session in the database: its name, its message count and its last write."""
    query = (
        "SELECT s.id, s.updated_at, COUNT(m.id), MAX(m.created_timestamp) FROM sessions s "
        "LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.id ORDER BY s.id"
    )
    with contextlib.closing(_connect(db)) as connection:
        found = connection.execute(query).fetchall()
    out: list[tuple[Path, int, float]] = []
    for session_id, updated, count, created in found:
        stamps = [float(created or 0), _seconds(updated)]
        out.append((db / str(session_id), int(count), max(stamps)))
    return out


def _seconds(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(value.replace(" ", "T")).replace(tzinfo=UTC).timestamp()
    return 0.0


def export_bytes(path: Path) -> bytes:
    """The session ``path`` names, as the Goose JSON Lines the ``goose`` shape reads."""
    with contextlib.closing(_connect(path.parent)) as connection:
        return _export(connection, path.parent, path.name)


def _export(connection: sqlite3.Connection, db: Path, session_id: str) -> bytes:
    found = connection.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if found is None:
        raise StoreError(f"no session {session_id} in {db}")
    session = dict(found)
    meta = {"working_dir": session.get("working_dir") or "", "description": session.get("name")
            or session.get("description") or ""}  # fmt: skip
    lines = [orjson.dumps(meta)]
    for row in _rows(connection, session_id):
        lines.append(orjson.dumps(_line(row, db)))
    return b"\n".join(lines) + b"\n"


def _line(row: Row, db: Path) -> dict[str, Any]:
    try:
        content = orjson.loads(row["content_json"])
        metadata = orjson.loads(row["metadata_json"]) if row["metadata_json"] else None
    except orjson.JSONDecodeError as error:
        raise StoreError(f"messages row {row['id']} in {db} is not JSON: {error}") from None
    line: dict[str, Any] = {"_row": row["id"]}
    if row["message_id"] is not None:
        line["id"] = row["message_id"]
    line |= {"role": row["role"], "created": row["created_timestamp"], "content": content}
    if metadata is not None:
        line["metadata"] = metadata
    return line


def plan(rows: list[Row], largest: int, session_id: str, repaired: bytes) -> list[RowChange]:
    """The row changes that make the database hold ``repaired`` (the repaired export)."""
    by_id = {row["id"]: row for row in rows}
    lines = [orjson.loads(line) for line in repaired.splitlines()[1:] if line.strip()]
    changes: list[RowChange] = []
    seen: set[int] = set()
    next_id = largest + 1
    for line in lines:
        rec = line.get("_row")
        new = _row_of(line, session_id)
        if isinstance(rec, int) and rec in by_id:
            if any(c.old is None for c in changes):
                raise StoreError("the repair puts a message before a later one; Goose reads "
                                 "rows in id order, so fix cannot write it")  # fmt: skip
            seen.add(rec)
            old = by_id[rec]
            if {**old, **new, "id": rec} != old:
                changes.append(RowChange(rec, old, {**old, **new, "id": rec}))
            continue
        new["id"] = next_id
        new["message_id"] = f"msg_{session_id}_{next_id}"
        changes.append(RowChange(next_id, None, new))
        next_id += 1
    for rec, old in by_id.items():
        if rec not in seen:
            changes.append(RowChange(rec, old, None))
    return changes


def _row_of(line: dict[str, Any], session_id: str) -> Row:
    metadata = line.get("metadata")
    row: Row = {
        "session_id": session_id,
        "role": line["role"],
        "content_json": orjson.dumps(line["content"]).decode(),
        "created_timestamp": line["created"],
        "metadata_json": orjson.dumps(metadata).decode() if metadata is not None else None,
    }
    if "id" in line:
        row["message_id"] = line["id"]
    return row


def _write(connection: sqlite3.Connection, changes: list[RowChange], *, back: bool) -> None:
    for change in reversed(changes) if back else changes:
        row = change.old if back else change.new
        connection.execute("DELETE FROM messages WHERE id = ?", (change.id,))
        if row is not None:
            connection.execute(_INSERT, tuple(row.get(c) for c in COLUMNS))


class _Changed(Exception):
    """The session's rows are not the ones read (Goose wrote meanwhile)."""


def backup_base(path: Path, backup_dir: Path | None) -> Path:
    """Where backup sets go: ``backup_dir``, else beside the database; resolved."""
    base = absolute(backup_dir) if backup_dir else absolute(path).parent.parent / BACKUPS
    return base.resolve()


def confinement(path: Path, backup_dir: Path | None = None) -> Confined:
    """The folder holding the database, and the backup folder."""
    return Confined.to(absolute(path).parent.parent.resolve(), backup_base(path, backup_dir))


def _confined(path: Path, backup_dir: Path | None) -> tuple[Confined, Path]:
    path = absolute(path)
    confined = confinement(path, backup_dir)
    db = confined.check(confined.roots[0] / path.parent.name)
    return confined, db / safe_name(path.name, "the session id")


def fix(
    path: Path,
    agent: Agent | None,
    *,
    dry_run: bool,
    backup_dir: Path | None,
    quiet_seconds: float,
    clock: Callable[[], float] = time.time,
) -> Outcome:
    """Repair the session ``path`` (``<sessions>/sessions.db/<sessionID>``) in its database."""
    try:
        confined, path = _confined(path, backup_dir)
    except Refused as refused:
        return Outcome(path, "refused", f"{refused}; nothing was changed")
    db, session_id = path.parent, path.name
    try:
        with contextlib.closing(_connect(db)) as connection:
            connection.execute("BEGIN")
            rows, largest = _rows(connection, session_id), _largest(connection)
            data = _export(connection, db, session_id)
            connection.execute("COMMIT")
    except (OSError, sqlite3.Error, StoreError) as error:
        return Outcome(path, "refused", f"cannot read the session {session_id}: {error}")
    checked = diagnosed(path, agent, data)
    if checked.error or checked.parsed is None or checked.diagnosis is None:
        return Outcome(
            path, "refused", f"cannot read {session_id}: {checked.error}; nothing was changed"
        )
    if not checked.diagnosis.needs_repair:
        return Outcome(path, "clean", "nothing to repair", checked)
    age = clock() - opencode_db.file_written(db)
    if age < quiet_seconds and not dry_run:
        return Outcome(
            path,
            "refused",
            f"{db.name} was written {max(age, 0):.1f} s ago: Goose may still be running. "
            "Close it (or wait) and run fix again; nothing was changed.",
        )
    repaired = repaired_bytes(checked.parsed)
    problem = verify(checked, repaired)
    if problem:
        return Outcome(
            path, "failed", f"the repair did not verify ({problem}); nothing was changed"
        )
    try:
        planned = plan(rows, largest, session_id, repaired)
    except StoreError as error:
        return Outcome(path, "refused", f"{error}; nothing was changed", checked)
    result = Outcome(path, "would-fix", "", checked)
    result.records = [c.describe() for c in planned]
    result.touched = [c.id for c in planned if c.old is not None]
    result.added = sum(1 for c in planned if c.old is None)
    if dry_run:
        return result

    folder = opencode._backup_folder(confined.roots[1], session_id, clock, confined)
    _write_backup(folder, path, planned, clock, confined)
    try:
        with opencode_db.writing(db) as connection:
            if _rows(connection, session_id) != rows or _largest(connection) != largest:
                raise _Changed
            _write(connection, planned, back=False)
    except _Changed:
        confined.rmtree(folder)
        return Outcome(path, "refused", f"session {session_id} changed while it was being fixed "
                       "(Goose may be running); nothing was changed")  # fmt: skip
    except sqlite3.Error as error:
        confined.rmtree(folder)
        return Outcome(path, "failed", f"could not write {db}: {error}; the session is as it was")
    again = diagnosed(path, checked.agent, export_bytes(path))
    if again.error or again.needs_repair:
        try:
            with opencode_db.writing(db) as connection:
                _write(connection, planned, back=True)
        except sqlite3.Error as error:
            reason = "the repaired session did not read back clean, and putting it back failed"
            return Outcome(path, "failed", f"{reason} ({error}); the rows are in {folder}")
        confined.rmtree(folder)
        return Outcome(path, "failed", "the repaired session did not read back clean; it is back")
    result.status = "fixed"
    result.backup = folder
    return result


def _write_backup(
    folder: Path, path: Path, planned: list[RowChange], clock: Callable[[], float],
    confined: Confined,
) -> None:  # fmt: skip
    original = {
        "database": str(path.parent),
        "session": path.name,
        "rows": [{"id": c.id, "original": c.old} for c in planned],
    }
    rows = orjson.dumps(original, option=orjson.OPT_INDENT_2)
    confined.create(folder / ROWS, rows, None)
    note = {
        "original": str(path),
        "written_at": datetime.fromtimestamp(clock(), UTC).isoformat(),
        "rows_sha256": hashlib.sha256(rows).hexdigest(),
        "rows": [{"id": c.id, "written": c.new} for c in planned],
    }
    confined.create(folder / NOTE, orjson.dumps(note, option=orjson.OPT_INDENT_2), None)


def backups(path: Path, backup_dir: Path | None = None) -> list[Path]:
    """The backup sets ``fix`` made of the session ``path`` names, oldest first."""
    path = absolute(path)
    folder = backup_base(path, backup_dir) / path.name
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / NOTE).is_file() and (p / ROWS).is_file())


def undo(path: Path, *, backup_dir: Path | None = None, force: bool = False) -> Outcome:
    """Put back the rows of the newest backup set, if they are still the ones ``fix`` wrote."""
    try:
        confined, path = _confined(path, backup_dir)
    except Refused as refused:
        return Outcome(path, "refused", f"{refused}; nothing was changed")
    db, session_id = path.parent, path.name
    found = backups(path, backup_dir)
    if not found:
        return Outcome(path, "refused", f"no backup of the session {session_id} to restore")
    folder = found[-1]
    try:
        note = orjson.loads(confined.read(folder / NOTE))
        raw = confined.read(folder / ROWS)
        originals, written = orjson.loads(raw)["rows"], note["rows"]
        changes = [
            RowChange(int(w["id"]), o["original"], w["written"])
            for o, w in zip(originals, written, strict=True)
        ]
    except (OSError, Refused, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        return Outcome(path, "refused", f"cannot read the backup's note: {error}")
    if hashlib.sha256(raw).hexdigest() != note.get("rows_sha256"):
        return Outcome(path, "refused", f"{folder} is not the backup fix made", backup=folder)
    try:
        with opencode_db.writing(db) as connection:
            current = {row["id"]: row for row in _rows(connection, session_id)}
            for change in changes:
                if current.get(change.id) != change.new and not force:
                    raise _Changed(change.describe())
            _write(connection, changes, back=True)
    except _Changed as changed:
        return Outcome(
            path,
            "refused",
            f"{changed} since fix wrote it (Goose wrote more); restoring {folder.name} would "
            "lose that. Use --force to restore anyway.",
            backup=folder,
        )
    except sqlite3.Error as error:
        return Outcome(path, "refused", f"could not write {db}: {error}; nothing was changed")
    confined.rmtree(folder)
    return Outcome(path, "restored", f"restored from {folder}", backup=folder)


class Database(LocalStore):
    """Goose's ``sessions.db``: a session is its rows (``<sessions>/sessions.db/<sessionID>``)."""

    owns = staticmethod(is_session)
    read = staticmethod(export_bytes)
    confinement = staticmethod(confinement)
    undo = staticmethod(undo)
    backups = staticmethod(backups)

    def fix(self, path: Path, run: Run, backup_dir: Path | None = None) -> Outcome:
        return fix(
            path,
            run.agent,
            dry_run=run.dry_run,
            backup_dir=backup_dir,
            quiet_seconds=run.quiet_seconds,
            clock=run.clock,
        )

    def stat(self, path: Path) -> tuple[int, float]:
        for name, count, newest in sessions(path.parent):
            if name == path:
                return count, newest
        raise StoreError(f"no session {path.name} in {path.parent}")

    def sessions(self, root: Path) -> list[tuple[Path, int, float]] | None:
        # Newer Goose reads only its database (it imported the JSONL files once).
        db = root / DB_NAME
        if not db.is_file():
            return None
        try:
            return sessions(db)
        except sqlite3.Error as error:
            raise StoreError(f"cannot read {db}: {error}") from None


STORE = Database()
