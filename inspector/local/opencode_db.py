"""A session in OpenCode's SQLite database, fixed in place in one transaction; and undone.

OpenCode 1.18 keeps each session as rows of ``opencode.db``: its ``message``
rows (``id``, ``session_id``, ``time_created``, ``time_updated``, ``data``)
and ``part`` rows (the same, with ``message_id``), ``data`` being the record
as ``JSON.stringify`` writes it less its ids. ``fix`` reads the rows in one
read, repairs their export with the pure code, and plans the row changes by
id (see ``plan``). It refuses, writing nothing, if the session or the
database was written in the last ``quiet_seconds`` (OpenCode may be running).
It backs up the original rows of every touched record, and the ids of the
records it inserts, in a backup set outside the database
(``<data>/transcript-inspector-backups/<sessionID>/<stamp>/rows.json`` with
``note.json`` saying what was written), then writes every change in one
``BEGIN IMMEDIATE`` transaction, inside which it reads the session's rows
again and rolls back if any differs from what it planned from. After the
commit the session is read back and diagnosed; if it is not clean the
original rows are put back in another transaction. ``undo`` puts the backed-up
rows back, in one transaction, if the rows are still the ones ``fix`` wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from inspector.local import files, opencode
from inspector.local.confine import Confined, Refused, absolute, safe_name
from inspector.local.outcome import Outcome, StoreError, diagnosed
from inspector.local.store import LocalStore, Run, repair_of

ROWS = "rows.json"
TABLES = ("message", "part")
Row = dict[str, Any]
Key = tuple[str, str]  # (table, id)


@dataclass(frozen=True, slots=True)
class RowChange:
    """One record's row: ``old`` None for a row the repair adds, ``new`` None for one it drops."""

    table: str
    id: str
    old: Row | None
    new: Row | None

    @property
    def key(self) -> Key:
        return (self.table, self.id)

    def describe(self) -> str:
        verb = "added" if self.old is None else "removed" if self.new is None else "rewritten"
        moved = self.old and self.new and self.old.get("message_id") != self.new.get("message_id")
        where = f" (now in {self.new['message_id']})" if moved and self.new else ""
        return f"{self.table} {self.id} {verb}{where}"


def _rows(connection: sqlite3.Connection, session_id: str) -> dict[Key, Row]:
    """Every message and part row of the session, all columns, by (table, id)."""
    connection.row_factory = sqlite3.Row
    out: dict[Key, Row] = {}
    for table in TABLES:
        query = f"SELECT * FROM {table} WHERE session_id = ? ORDER BY id"  # noqa: S608
        for row in connection.execute(query, (session_id,)):
            out[(table, str(row["id"]))] = dict(zip(row.keys(), tuple(row), strict=True))
    return out


def _data_of(row: Row, db: Path) -> dict[str, Any]:
    return opencode._row_json(row["data"], db)


def _json_text(value: dict[str, Any]) -> str:
    # JSON.stringify(value): compact, keys in the record's order, UTF-8 as it is.
    return orjson.dumps(value).decode()


def plan(rows: dict[Key, Row], session_id: str, repaired: bytes, now_ms: int) -> list[RowChange]:
    """The rows to insert, update and delete for the repaired export ``repaired``.

    A row is rewritten only where its record's content changed; it gets the
    ``time_updated`` OpenCode gives a row it writes (now, in milliseconds).
    An inserted message gets its own ``time.created`` as ``time_created``, as
    OpenCode's projection writes it, and an inserted part the time of writing.
    """
    doc = orjson.loads(repaired)
    db = Path("opencode.db")
    inserted_messages: list[RowChange] = []
    inserted_parts: list[RowChange] = []
    updated: list[RowChange] = []
    seen: set[Key] = set()
    for item in doc["messages"]:
        info = item["info"]
        message_id = str(info["id"])
        data = {k: v for k, v in info.items() if k not in ("id", "sessionID")}
        key: Key = ("message", message_id)
        seen.add(key)
        old = rows.get(key)
        if old is None:
            created = (info.get("time") or {}).get("created")
            new: Row = {
                "id": message_id,
                "session_id": session_id,
                "time_created": int(created) if isinstance(created, int | float) else now_ms,
                "time_updated": now_ms,
                "data": _json_text(data),
            }
            inserted_messages.append(RowChange("message", message_id, None, new))
        elif data != _data_of(old, db):
            new = {**old, "data": _json_text(data), "time_updated": now_ms}
            updated.append(RowChange("message", message_id, old, new))
        for part in item["parts"]:
            part_id = str(part["id"])
            pdata = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
            pkey: Key = ("part", part_id)
            seen.add(pkey)
            pold = rows.get(pkey)
            if pold is None:
                new = {
                    "id": part_id,
                    "message_id": message_id,
                    "session_id": session_id,
                    "time_created": now_ms,
                    "time_updated": now_ms,
                    "data": _json_text(pdata),
                }
                inserted_parts.append(RowChange("part", part_id, None, new))
            elif pdata != _data_of(pold, db) or pold["message_id"] != message_id:
                new = {
                    **pold,
                    "message_id": message_id,
                    "data": _json_text(pdata),
                    "time_updated": now_ms,
                }
                updated.append(RowChange("part", part_id, pold, new))
    removed = [RowChange(t, i, row, None) for (t, i), row in rows.items() if (t, i) not in seen]
    removed.sort(key=lambda c: c.table != "part")  # parts before the message that holds them
    return [*inserted_messages, *inserted_parts, *updated, *removed]


def _put(connection: sqlite3.Connection, table: str, key: str, row: Row | None) -> None:
    """Make the row ``key`` of ``table`` be ``row`` (None: no such row).

    A row that is there is updated in place, never deleted and inserted again:
    with foreign keys on (as OpenCode opens the database) deleting a message
    would take its parts with it.
    """
    if table not in TABLES or not all(column.isidentifier() for column in row or ()):
        raise sqlite3.DatabaseError(f"not a {table} row fix writes")
    if row is None:
        connection.execute(f"DELETE FROM {table} WHERE id = ?", (key,))  # noqa: S608
        return
    assignments = ", ".join(f"{column} = ?" for column in row)
    cursor = connection.execute(
        f"UPDATE {table} SET {assignments} WHERE id = ?",  # noqa: S608
        (*row.values(), key),
    )
    if cursor.rowcount == 0:
        columns, marks = ", ".join(row), ", ".join("?" for _ in row)
        connection.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})",  # noqa: S608
            tuple(row.values()),
        )


def _write(connection: sqlite3.Connection, changes: list[RowChange], *, back: bool) -> None:
    """Apply the changes (or, ``back``, undo them) inside the caller's transaction."""
    for change in reversed(changes) if back else changes:
        _put(connection, change.table, change.id, change.old if back else change.new)


@contextlib.contextmanager
def writing(db: Path) -> Iterator[sqlite3.Connection]:
    """A connection in a ``BEGIN IMMEDIATE`` transaction: committed on leaving, else rolled back."""
    connection = sqlite3.connect(db, timeout=5, isolation_level=None)
    try:
        connection.execute("PRAGMA foreign_keys = ON")  # as OpenCode opens it
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    finally:
        connection.close()


class _Changed(Exception):
    """The session's rows are not the ones read (OpenCode wrote meanwhile)."""


def _newest_write(db: Path, rows: dict[Key, Row], session_row: Row | None) -> float:
    """The last time the session or the database was written, in seconds."""
    times = [int(r.get("time_updated") or 0) / 1000 for r in rows.values()]
    if session_row is not None:
        times.append(int(session_row.get("time_updated") or 0) / 1000)
    return max([*times, file_written(db)])


def file_written(db: Path) -> float:
    """When the database file (or its write-ahead log) was last written, in seconds."""
    times: list[float] = []
    for file in (db, db.with_name(db.name + "-wal")):
        with contextlib.suppress(OSError):
            info = file.stat()
            # A reader opening the database makes an empty -wal: that is not a write.
            if info.st_size or file == db:
                times.append(info.st_mtime)
    return max(times, default=0.0)


def _read(db: Path, session_id: str) -> tuple[dict[Key, Row], Row | None, bytes]:
    """The session's rows and its export, from one read of the database."""
    with contextlib.closing(opencode._connect(db)) as connection:
        connection.execute("BEGIN")
        rows = _rows(connection, session_id)
        row = connection.execute("SELECT * FROM session WHERE id = ?", (session_id,)).fetchone()
        session_row = dict(zip(row.keys(), tuple(row), strict=True)) if row is not None else None
        export = opencode.db_export_from(connection, db, session_id)
        connection.execute("COMMIT")
    return rows, session_row, export


def data_dir(path: Path) -> Path:
    return path.parent.parent


def confinement(path: Path, backup_dir: Path | None = None) -> Confined:
    """The folder holding the database, and the backup folder."""
    data = data_dir(absolute(path)).resolve()
    return Confined.to(data, backup_base(path, backup_dir))


def backup_base(path: Path, backup_dir: Path | None) -> Path:
    """Where backup sets go: ``backup_dir``, else beside the database; resolved."""
    return opencode.backup_base(data_dir(absolute(path)).resolve() / "storage", backup_dir)


def _confined(path: Path, backup_dir: Path | None) -> tuple[Confined, Path]:
    """Where fix may write for the session ``path``, and ``path`` with its database checked."""
    path = absolute(path)
    confined = confinement(path, backup_dir)
    db = confined.check(confined.roots[0] / path.parent.name)
    return confined, db / safe_name(path.name, "the session id")


def _fix(path: Path, confined: Confined, run: Run) -> Outcome:
    outcome = Outcome
    dry_run, clock = run.dry_run, run.clock
    db, session_id = path.parent, path.name
    who = run.agent.label if run.agent else "OpenCode"
    try:
        rows, session_row, data = _read(db, session_id)
    except (OSError, sqlite3.Error, StoreError) as error:
        return outcome(path, "refused", f"cannot read the session {session_id}: {error}")
    checked, repaired = repair_of(
        path,
        data,
        run,
        _newest_write(db, rows, session_row),
        name=session_id,
        what=f"session {session_id} (or {db.name})",
        who=who,
    )
    if orjson.loads(repaired)["info"] != orjson.loads(data)["info"]:
        reason = "the repair changes the session's own row, which fix does not write"
        reason += "; nothing was changed"
        return outcome(path, "failed", reason)
    planned = plan(rows, session_id, repaired, int(clock() * 1000))
    result = outcome(path, "would-fix", "", checked)
    result.records = [c.describe() for c in planned]
    result.touched = [n for n, c in enumerate(planned, 1) if c.old is not None]
    result.added = sum(1 for c in planned if c.old is None)
    if dry_run:
        return result

    base = confined.roots[1]
    folder = files.backup_folder(base, session_id, clock, confined)
    _write_backup(folder, path, planned, clock, confined)
    try:
        with writing(db) as connection:
            if _rows(connection, session_id) != rows:
                raise _Changed
            _write(connection, planned, back=False)
    except _Changed:
        confined.rmtree(folder)
        return outcome(
            path,
            "refused",
            f"session {session_id} changed while it was being fixed ({who} may be running); "
            "nothing was changed",
        )
    except sqlite3.Error as error:
        confined.rmtree(folder)
        return outcome(path, "failed", f"could not write {db}: {error}; the session is as it was")

    again = diagnosed(path, checked.agent, opencode.db_export_bytes(path))
    if again.error or again.needs_repair:
        try:
            with writing(db) as connection:
                _write(connection, planned, back=True)
        except sqlite3.Error as error:
            return outcome(
                path,
                "failed",
                f"the repaired session did not read back clean, and putting it back failed "
                f"({error}); the original rows are in {folder}",
            )
        confined.rmtree(folder)
        return outcome(path, "failed", "the repaired session did not read back clean; it is back")
    result.status = "fixed"
    result.backup = folder
    return result


def _write_backup(
    folder: Path,
    path: Path,
    planned: list[RowChange],
    clock: Callable[[], float],
    confined: Confined,
) -> None:
    original = {
        "database": str(path.parent),
        "session": path.name,
        "records": [{"table": c.table, "id": c.id, "original": c.old} for c in planned],
    }
    rows = orjson.dumps(original, option=orjson.OPT_INDENT_2)
    confined.create(folder / ROWS, rows, None)
    note = {
        "original": str(path),
        "database": str(path.parent),
        "written_at": datetime.fromtimestamp(clock(), UTC).isoformat(),
        "rows_sha256": hashlib.sha256(rows).hexdigest(),
        "records": [
            {"table": c.table, "id": c.id, "written": c.new, "order": n}
            for n, c in enumerate(planned)
        ],
    }
    text = orjson.dumps(note, option=orjson.OPT_INDENT_2)
    confined.create(folder / files.NOTE, text, None)


def backups(path: Path, backup_dir: Path | None = None) -> list[Path]:
    """The backup sets ``fix`` made of the session ``path`` names, oldest first."""
    path = absolute(path)
    folder = backup_base(path, backup_dir) / path.name
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.iterdir() if (p / files.NOTE).is_file() and (p / ROWS).is_file()
    )


def _undo(path: Path, confined: Confined, backups: list[Path], force: bool) -> Outcome:
    outcome = Outcome
    db, session_id = path.parent, path.name
    if not backups:
        return outcome(path, "refused", f"no backup of the session {session_id} to restore")
    folder = backups[-1]
    try:
        note = orjson.loads(confined.read(folder / files.NOTE))
        raw = confined.read(folder / ROWS)
        originals = orjson.loads(raw)["records"]
        written = note["records"]
    except (OSError, Refused, orjson.JSONDecodeError, KeyError, TypeError) as error:
        return outcome(path, "refused", f"cannot read the backup's note: {error}")
    if hashlib.sha256(raw).hexdigest() != note.get("rows_sha256") or len(originals) != len(written):
        return outcome(path, "refused", f"{folder} is not the backup fix made", backup=folder)
    changes = [
        RowChange(str(w["table"]), str(w["id"]), o["original"], w["written"])
        for o, w in zip(originals, written, strict=True)
    ]
    if any(c.table not in TABLES for c in changes):
        return outcome(path, "refused", f"{folder} is not the backup fix made", backup=folder)
    try:
        with writing(db) as connection:
            current = _rows(connection, session_id)
            for change in changes:
                if current.get(change.key) != change.new and not force:
                    raise _Changed(change.describe())
            _write(connection, changes, back=True)
    except _Changed as changed:
        return outcome(
            path,
            "refused",
            f"{str(changed).rsplit(' ', 1)[0]} changed since fix wrote it (OpenCode wrote more); "
            f"restoring {folder.name} would lose that. Use --force to restore anyway.",
            backup=folder,
        )
    except sqlite3.Error as error:
        return outcome(path, "refused", f"could not write {db}: {error}; nothing was changed")
    confined.rmtree(folder)
    return outcome(path, "restored", f"restored from {folder}", backup=folder)


class Database(LocalStore):
    """OpenCode's ``opencode.db``: a session is its rows (``<data>/opencode.db/<sessionID>``).

    A fork that keeps the same tables under another name is this store with its own
    ``names`` (glob patterns of its databases beside the storage folder, in the order it
    prefers them) and ``env`` (a variable naming its one database: a path, absolute or from
    its data folder, ``:memory:`` none on disk): Kilo's ``kilo.db`` and ``$KILO_DB``. Each
    database found is listed. Its sessions are owned, fixed and undone as OpenCode's (they
    are the same rows); only where they are looked for differs.
    """

    def __init__(
        self, names: tuple[str, ...] = opencode.DB_NAMES, env: str = "", *, files: bool = True
    ) -> None:
        self.names = names
        self.env = env
        # Where it has no database, its sessions are the storage files (OpenCode's older
        # versions): ``sessions`` leaves them to the next store; else there are none.
        self.files = files

    owns = staticmethod(opencode.is_db_session)
    read = staticmethod(opencode.db_export_bytes)
    confinement = staticmethod(confinement)
    locate = staticmethod(_confined)
    backups = staticmethod(backups)

    repair = staticmethod(_fix)
    restore = staticmethod(_undo)
    whole = "the session"

    def sessions(self, root: Path) -> list[tuple[Path, int, float]] | None:
        # Newer OpenCode reads only its database (beside ``storage/``, which a new
        # install never makes); the JSON files, where they are, are an older copy.
        found = self._databases(root)
        if not found:
            return None if self.files else []
        if self.files:  # OpenCode: the first found, as it always was
            return _listed(found[0])
        return [session for db in found for session in _listed(db)]

    def _databases(self, root: Path) -> list[Path]:
        named = os.environ.get(self.env, "").strip() if self.env else ""
        if not named:
            return opencode.databases(root, self.names)
        if named == ":memory:":
            return []
        db = Path(named).expanduser()
        db = db if db.is_absolute() else root.parent / db
        if db.suffix != ".db" and db.is_file():
            # A session is named <db>/<id> and owned by its database's .db suffix.
            raise StoreError(f"${self.env} names {db}, which is not read here: not a .db file")
        return [db] if db.is_file() else []


def _listed(db: Path) -> list[tuple[Path, int, float]]:
    try:
        return opencode.db_sessions(db)
    except sqlite3.Error as error:
        raise StoreError(f"cannot read {db}: {error}") from None


STORE = Database()
# Kilo (Kilo-Org/kilocode, OpenCode's fork): packages/core/src/database/database.ts names its
# database kilo.db in its data folder ($XDG_DATA_HOME/kilo), opencode-<channel>.db on a
# channel other than latest/beta/prod, or $KILO_DB (absolute, or from the data folder).
# Its older JSON storage files are not read here: a Kilo session is listed from a database.
KILO = Database(names=("kilo.db", "kilo-*.db", "opencode-*.db"), env="KILO_DB", files=False)
