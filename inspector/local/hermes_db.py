"""A session in Hermes Agent's ``state.db``, fixed in place in one transaction; and undone.

Hermes Agent (NousResearch/hermes-agent, ``hermes_state.py``) keeps every
session in ``$HERMES_HOME/state.db`` (``~/.hermes``): a ``sessions`` row
(``id``, ``source``, ``model``, ``started_at``, ...) and one ``messages`` row
per message: ``id`` (``INTEGER PRIMARY KEY AUTOINCREMENT``, the order it
loads them in), ``session_id``, ``role``, ``content``, ``tool_call_id``,
``tool_calls`` (the OpenAI calls as JSON text), ``tool_name``,
``timestamp``, and more columns kept as they are; newer versions mark a
row a rewind or compaction set aside ``active = 0``, and load only the
active ones. That is what ``hermes --resume`` continues, so that is what is
fixed when the database is there; the ``sessions/`` JSON logs beside it are
then copies Hermes does not read back, and are not listed. A session is
named ``<HERMES_HOME>/state.db/<sessionID>`` here; ``read`` gives it as the
gateway transcript the ``hermes`` shape reads (a ``session_meta`` line from
the session row, then one line a message row, each with its row's id under
``_row``).

``fix`` reads the rows in one read, repairs that transcript with the pure
code and plans the row changes by row id: a changed line updates its row's
columns that line holds, a dropped one deletes its row, a new one (a result
the repair added) is inserted after the session's last row, with the ids
after the database's largest (a plan that would put one before a later row
is refused: Hermes reads rows in id order). It refuses, writing nothing, if
the database was written in the last ``quiet_seconds`` (Hermes may be
running). It backs up the original rows of every touched id, and the ids it
inserts, outside the database (``$HERMES_HOME/transcript-inspector-backups/
<sessionID>/<stamp>/rows.json`` with ``note.json``), then writes every
change in one ``BEGIN IMMEDIATE`` transaction, inside which it reads the
session's rows (and the largest id) again and rolls back if any differs.
After the commit the session is read back and diagnosed; if it is not clean
the original rows are put back. ``undo`` puts the backed-up rows back in one
transaction, if the rows are still the ones ``fix`` wrote. The session's
``message_count`` is left as it was (Hermes shows it; it does not read it
back).
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

DB_NAME = "state.db"
ROWS = "rows.json"
NOTE = opencode.NOTE
BACKUPS = opencode.BACKUPS
# The message columns a transcript line holds (the others of a row are kept as they are).
TEXT_COLUMNS = ("role", "content", "tool_call_id", "tool_name", "reasoning", "finish_reason")
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
    """A session named inside Hermes's database: ``<HERMES_HOME>/state.db/<sessionID>``."""
    return path.parent.name == DB_NAME and path.parent.is_file()


def _connect(db: Path) -> sqlite3.Connection:
    connection = opencode._connect(db)  # read-only: Hermes may hold it open (WAL)
    connection.row_factory = sqlite3.Row
    return connection


def _columns(connection: sqlite3.Connection) -> set[str]:
    return {str(row[1]) for row in connection.execute("PRAGMA table_info(messages)")}


def _rows(connection: sqlite3.Connection, session_id: str) -> list[Row]:
    connection.row_factory = sqlite3.Row
    active = " AND active = 1" if "active" in _columns(connection) else ""
    query = f"SELECT * FROM messages WHERE session_id = ?{active} ORDER BY id"  # noqa: S608
    return [dict(row) for row in connection.execute(query, (session_id,))]


def _largest(connection: sqlite3.Connection) -> int:
    return int(connection.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])


def sessions(db: Path) -> list[tuple[Path, int, float]]:
    """Each session in the database: its name, its message count and its last write."""
    query = (
        "SELECT s.id, s.started_at, COUNT(m.id), MAX(m.timestamp) FROM sessions s "
        "LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.id ORDER BY s.id"
    )
    with contextlib.closing(_connect(db)) as connection:
        found = connection.execute(query).fetchall()
    out: list[tuple[Path, int, float]] = []
    for session_id, started, count, newest in found:
        if not count:
            continue
        stamps = [float(x) for x in (started, newest) if isinstance(x, int | float)]
        out.append((db / str(session_id), int(count), max(stamps, default=0.0)))
    return out


def export_bytes(path: Path) -> bytes:
    """The session ``path`` names, as the Hermes gateway transcript the ``hermes`` shape reads."""
    try:
        with contextlib.closing(_connect(path.parent)) as connection:
            return _export(connection, path.parent, path.name)
    except sqlite3.Error as error:
        raise StoreError(f"cannot read {path.parent}: {error}") from None


def _export(connection: sqlite3.Connection, db: Path, session_id: str) -> bytes:
    found = connection.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if found is None:
        raise StoreError(f"no session {session_id} in {db}")
    session = dict(found)
    meta = {"role": "session_meta", "model": session.get("model"),
            "platform": session.get("source"), "timestamp": session.get("started_at")}  # fmt: skip
    lines = [orjson.dumps(meta)]
    for row in _rows(connection, session_id):
        lines.append(orjson.dumps(_line(row, db)))
    return b"\n".join(lines) + b"\n"


def _line(row: Row, db: Path) -> dict[str, Any]:
    line: dict[str, Any] = {"role": row["role"], "content": row.get("content")}
    if row.get("tool_calls"):
        try:
            line["tool_calls"] = orjson.loads(row["tool_calls"])
        except orjson.JSONDecodeError as error:
            reason = f"messages row {row['id']} in {db}: tool_calls is not JSON ({error})"
            raise StoreError(reason) from None
    for column in ("tool_call_id", "tool_name", "reasoning", "finish_reason"):
        if row.get(column) is not None:
            line[column] = row[column]
    line["timestamp"] = row.get("timestamp")
    line["_row"] = row["id"]
    return line


def plan(rows: list[Row], largest: int, session_id: str, repaired: bytes) -> list[RowChange]:
    """The row changes that make the database hold ``repaired`` (the repaired transcript)."""
    by_id = {row["id"]: row for row in rows}
    lines = [orjson.loads(line) for line in repaired.splitlines() if line.strip()]
    lines = [line for line in lines if line.get("role") != "session_meta"]
    changes: list[RowChange] = []
    seen: set[int] = set()
    next_id = largest + 1
    last_time = max((r["timestamp"] for r in rows if isinstance(r.get("timestamp"), int | float)),
                    default=time.time())  # fmt: skip
    for line in lines:
        rec = line.get("_row")
        if isinstance(rec, int) and rec in by_id:
            if any(c.old is None for c in changes):
                raise StoreError("the repair puts a message before a later one; Hermes reads "
                                 "rows in id order, so fix cannot write it")  # fmt: skip
            seen.add(rec)
            old = by_id[rec]
            new = _changed_row(old, line)
            if new != old:
                changes.append(RowChange(rec, old, new))
            continue
        new = {"id": next_id, "session_id": session_id, "timestamp": last_time,
               **_columns_of(line)}  # fmt: skip
        changes.append(RowChange(next_id, None, new))
        next_id += 1
    for rec, old in by_id.items():
        if rec not in seen:
            changes.append(RowChange(rec, old, None))
    return changes


def _changed_row(old: Row, line: dict[str, Any]) -> Row:
    """``old`` with the columns ``line`` says otherwise (the calls compared as JSON values)."""
    new = dict(old)
    wrote = _columns_of(line)
    for column in TEXT_COLUMNS:
        if column in old and wrote[column] != old[column]:
            new[column] = wrote[column]
    try:
        before = orjson.loads(old["tool_calls"]) if old.get("tool_calls") else None
    except orjson.JSONDecodeError:
        before = old.get("tool_calls")
    if (line.get("tool_calls") or None) != (before or None):
        new["tool_calls"] = wrote["tool_calls"]
    return new


def _columns_of(line: dict[str, Any]) -> Row:
    row: Row = {column: line.get(column) for column in TEXT_COLUMNS}
    calls = line.get("tool_calls")
    row["tool_calls"] = orjson.dumps(calls).decode() if calls else None
    return row


def _write(connection: sqlite3.Connection, changes: list[RowChange], *, back: bool) -> None:
    have = _columns(connection)
    for change in reversed(changes) if back else changes:
        row = change.old if back else change.new
        connection.execute("DELETE FROM messages WHERE id = ?", (change.id,))
        if row is None:
            continue
        values = {k: v for k, v in row.items() if k in have}
        if not all(column.isidentifier() for column in values):
            raise sqlite3.DatabaseError("not a messages row fix writes")
        columns, marks = ", ".join(values), ", ".join("?" for _ in values)
        connection.execute(
            f"INSERT INTO messages ({columns}) VALUES ({marks})",  # noqa: S608
            tuple(values.values()),
        )


class _Changed(Exception):
    """The session's rows are not the ones read (Hermes wrote meanwhile)."""


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
    """Repair the session ``path`` (``<HERMES_HOME>/state.db/<sessionID>``) in its database."""
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
        reason = f"cannot read {session_id}: {checked.error}; nothing was changed"
        return Outcome(path, "refused", reason)
    if not checked.diagnosis.needs_repair:
        return Outcome(path, "clean", "nothing to repair", checked)
    age = clock() - opencode_db.file_written(db)
    if age < quiet_seconds and not dry_run:
        return Outcome(
            path,
            "refused",
            f"{db.name} was written {max(age, 0):.1f} s ago: Hermes may still be running. "
            "Close it (or wait) and run fix again; nothing was changed.",
        )
    repaired = repaired_bytes(checked.parsed)
    problem = verify(checked, repaired)
    if problem:
        reason = f"the repair did not verify ({problem}); nothing was changed"
        return Outcome(path, "failed", reason)
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
                       "(Hermes may be running); nothing was changed")  # fmt: skip
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
    if any(row and row.get("session_id") != session_id for c in changes for row in (c.old, c.new)):
        return Outcome(path, "refused", f"{folder} names rows of another session", backup=folder)
    try:
        with opencode_db.writing(db) as connection:
            current = {row["id"]: row for row in _rows(connection, session_id)}
            for change in changes:
                now = current.get(change.id)
                if change.new is not None and now is not None:  # the columns fix wrote
                    now = {k: v for k, v in now.items() if k in change.new}
                if now != change.new and not force:
                    raise _Changed(change.describe())
            _write(connection, changes, back=True)
    except _Changed as changed:
        return Outcome(
            path,
            "refused",
            f"{changed} since fix wrote it (Hermes wrote more); restoring {folder.name} would "
            "lose that. Use --force to restore anyway.",
            backup=folder,
        )
    except sqlite3.Error as error:
        return Outcome(path, "refused", f"could not write {db}: {error}; nothing was changed")
    confined.rmtree(folder)
    return Outcome(path, "restored", f"restored from {folder}", backup=folder)


class Database(LocalStore):
    """Hermes's ``state.db``: a session is its rows (``<HERMES_HOME>/state.db/<sessionID>``)."""

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
        # ``root`` is $HERMES_HOME/sessions; where state.db is beside it, Hermes resumes from it.
        db = root.parent / DB_NAME
        if not db.is_file():
            return None
        try:
            return sessions(db)
        except sqlite3.Error as error:
            raise StoreError(f"cannot read {db}: {error}") from None


STORE = Database()
