"""A session kept as rows of an agent's SQLite database, fixed in place in one transaction.

Goose's ``sessions.db`` (``goose_db``) and Hermes Agent's ``state.db``
(``hermes_db``) each keep a session as one ``messages`` row per message, read
in id order. ``RowDatabase`` is what fixing such a session takes whatever the
agent; a database kind states only its own rows (the hooks below) and is
named ``<folder>/<database>/<sessionID>`` like them.

``fix`` (``repair``) reads the session's rows and the database's largest id
in one read, gives them to the readers as the agent's own transcript
(``export``), repairs that with the pure code and plans the row changes by
row id (``plan``): a changed line updates its row, a dropped one deletes it,
a new one (a result the repair added) is inserted after the session's last
row with the ids after the database's largest (a plan that would put one
before a later row is refused: the agent reads rows in id order). It
refuses, writing nothing, when the database was written in the last
``quiet_seconds`` (the agent may be running). It backs up the original rows
of every touched id, and the ids it inserts, outside the database
(``<folder>/transcript-inspector-backups/<sessionID>/<stamp>/rows.json`` with
``note.json``), then writes every change in one ``BEGIN IMMEDIATE``
transaction, inside which it reads the session's rows (and the largest id)
again and rolls back if any differs from what it planned from. After the
commit the session is read back and diagnosed; if it is not clean the
original rows are put back. ``undo`` (``restore``) puts the backed-up rows
back in one transaction, if the rows are still the ones ``fix`` wrote.

The hooks a database kind gives: ``connect`` (read-only), ``rows``,
``largest``, ``export``, ``plan`` (``plan_in_order`` for rows read in id
order), ``put`` (one row; ``write`` walks the changes, last first to put them
back), ``sessions_in``, ``table_of`` where the rows are of more than one table, and
``written_as`` where a row holds more than fix writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from inspector.local import files, opencode, opencode_db
from inspector.local.confine import Confined, absolute, safe_name
from inspector.local.outcome import Outcome, StoreError, diagnosed
from inspector.local.store import LocalStore, Run, Stop, repair_of

ROWS = "rows.json"
NOTE = files.NOTE
BACKUPS = files.BACKUPS
Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row as it was (``old``) and as fix writes it (``new``); ``None``: absent.

    ``table`` is the row's table where a kind writes more than its ``messages`` rows
    (OpenCode's events, ``opencode_v2``)."""

    id: int | str
    old: Row | None
    new: Row | None
    table: str = "messages"

    def describe(self) -> str:
        verb = "added" if self.old is None else "removed" if self.new is None else "changed"
        return f"{self.table} row {self.id} {verb}"


class Changed(Exception):
    """The session's rows are not the ones read (the agent wrote meanwhile)."""


class RowDatabase(LocalStore):
    """A session is its rows: ``<folder>/<db_name>/<sessionID>``; see the module docstring."""

    db_name = ""  # the database file's name
    agent_name = ""  # who may be writing, as a reason names it
    resume = ""  # the command that resumes a session, where not the agent's (``{session}``)

    # -- the hooks a database kind gives -------------------------------------------------

    def connect(self, db: Path) -> sqlite3.Connection:
        """A read-only connection (the agent may hold the database open) giving rows as
        ``sqlite3.Row``."""
        connection = opencode._connect(db)
        connection.row_factory = sqlite3.Row
        return connection

    def rows(self, connection: sqlite3.Connection, session_id: str) -> list[Row]:
        """The session's message rows, in the order the agent reads them."""
        raise NotImplementedError

    def largest(self, connection: sqlite3.Connection) -> int:
        """The largest message row id of the whole database."""
        return int(connection.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])

    def export(self, connection: sqlite3.Connection, db: Path, session_id: str) -> bytes:
        """The session as the JSON Lines its shape reads: a line of the session's row
        (``meta``), then a line a message row (``line``), each with its row's id."""
        found = connection.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if found is None:
            raise StoreError(f"no session {session_id} in {db}")
        lines = [orjson.dumps(self.meta(dict(found)))]
        lines.extend(orjson.dumps(self.line(row, db)) for row in self.rows(connection, session_id))
        return b"\n".join(lines) + b"\n"

    def meta(self, session: Row) -> dict[str, Any]:
        """The transcript's first line, from the session's row."""
        raise NotImplementedError

    def line(self, row: Row, db: Path) -> dict[str, Any]:
        """A message row as the transcript's line; ``StoreError`` if it cannot be one."""
        raise NotImplementedError

    def database(self, root: Path) -> Path:
        """Where the database is, for the agent's sessions folder ``root``."""
        return root / self.db_name

    def plan(
        self, rows: list[Row], largest: int, session_id: str, repaired: bytes
    ) -> list[RowChange]:
        """The row changes that make the database hold ``repaired``; ``StoreError`` if none can."""
        raise NotImplementedError

    def plan_in_order(
        self,
        rows: list[Row],
        largest: int,
        lines: list[dict[str, Any]],
        changed: Callable[[Row, dict[str, Any]], Row],
        added: Callable[[dict[str, Any], int], Row],
    ) -> list[RowChange]:
        """``plan`` for rows the agent reads in id order, a message a row: a line naming a
        row of the session (``_row``) changes it to ``changed(old, line)`` where that
        differs, another line is a new row ``added(line, id)`` with the ids after
        ``largest`` (refused before a later row), a row no line names is deleted."""
        by_id = {row["id"]: row for row in rows}
        changes: list[RowChange] = []
        seen: set[int] = set()
        next_id = largest + 1
        for line in lines:
            rec = line.get("_row")
            if isinstance(rec, int) and rec in by_id:
                if any(c.old is None for c in changes):
                    raise StoreError(f"the repair puts a message before a later one; "
                                     f"{self.agent_name} reads rows in id order, so fix "
                                     "cannot write it")  # fmt: skip
                seen.add(rec)
                old = by_id[rec]
                new = changed(old, line)
                if new != old:
                    changes.append(RowChange(rec, old, new))
                continue
            changes.append(RowChange(next_id, None, added(line, next_id)))
            next_id += 1
        for rec, old in by_id.items():
            if rec not in seen:
                changes.append(RowChange(rec, old, None))
        return changes

    def put(self, connection: sqlite3.Connection, change: RowChange, row: Row | None) -> None:
        """Make ``change``'s row be ``row`` (``None``: no such row) in the open transaction."""
        raise NotImplementedError

    def write(
        self, connection: sqlite3.Connection, changes: list[RowChange], *, back: bool
    ) -> None:
        """Write ``changes`` (their old rows again with ``back``, last first) inside the open
        transaction, a row at a time through ``put``."""
        for change in reversed(changes) if back else changes:
            self.put(connection, change, change.old if back else change.new)

    def sessions_in(self, db: Path) -> list[tuple[Path, int, float]]:
        """Each session in the database: its name, its message count and its last write."""
        raise NotImplementedError

    def listed(self, db: Path, started: str, newest: str) -> list[Any]:
        """For ``sessions_in``: each ``sessions`` row's id and ``started`` column, with its
        ``messages`` rows' count and their largest ``newest`` column, in id order."""
        query = (
            f"SELECT s.id, s.{started}, COUNT(m.id), MAX(m.{newest}) FROM sessions s "  # noqa: S608
            "LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.id ORDER BY s.id"
        )
        with contextlib.closing(self.connect(db)) as connection:
            return connection.execute(query).fetchall()

    def table_of(self, row: Row) -> str:
        """The table of one of ``rows``'s rows (a ``RowChange``'s ``table``)."""
        return "messages"

    def written_as(self, now: Row | None, change: RowChange) -> bool:
        """Whether the row ``now`` in the database is the one fix wrote for ``change``."""
        return now == change.new

    # -- the store -----------------------------------------------------------------------

    def owns(self, path: Path) -> bool:
        return path.parent.name == self.db_name and path.parent.is_file()

    def read(self, path: Path) -> bytes:
        try:
            with contextlib.closing(self.connect(path.parent)) as connection:
                return self.export(connection, path.parent, path.name)
        except sqlite3.Error as error:
            raise StoreError(f"cannot read {path.parent}: {error}") from None

    def sessions(self, root: Path) -> list[tuple[Path, int, float]] | None:
        db = self.database(root)
        if not db.is_file():
            return None  # the agent's files, found by its pattern
        try:
            return self.sessions_in(db)
        except sqlite3.Error as error:
            raise StoreError(f"cannot read {db}: {error}") from None

    def stat(self, path: Path) -> tuple[int, float]:
        for name, count, newest in self.sessions_in(path.parent):
            if name == path:
                return count, newest
        raise StoreError(f"no session {path.name} in {path.parent}")

    def backup_base(self, path: Path, backup_dir: Path | None) -> Path:
        """Where backup sets go: ``backup_dir``, else beside the database; resolved."""
        base = absolute(backup_dir) if backup_dir else absolute(path).parent.parent / BACKUPS
        return base.resolve()

    def confinement(self, path: Path, backup_dir: Path | None = None) -> Confined:
        """The folder holding the database, and the backup folder."""
        base = self.backup_base(path, backup_dir)
        return Confined.to(absolute(path).parent.parent.resolve(), base)

    def locate(self, path: Path, backup_dir: Path | None) -> tuple[Confined, Path]:
        path = absolute(path)
        confined = self.confinement(path, backup_dir)
        db = confined.check(confined.roots[0] / path.parent.name)
        return confined, db / safe_name(path.name, "the session id")

    def backups(self, path: Path, backup_dir: Path | None = None) -> list[Path]:
        """The backup sets ``fix`` made of the session ``path`` names, oldest first."""
        path = absolute(path)
        folder = self.backup_base(path, backup_dir) / path.name
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if (p / NOTE).is_file() and (p / ROWS).is_file())

    def repair(self, path: Path, confined: Confined, run: Run) -> Outcome:
        db, session_id = path.parent, path.name
        try:
            with contextlib.closing(self.connect(db)) as connection:
                connection.execute("BEGIN")
                rows, largest = self.rows(connection, session_id), self.largest(connection)
                data = self.export(connection, db, session_id)
                connection.execute("COMMIT")
        except (OSError, sqlite3.Error, StoreError) as error:
            raise Stop("refused", f"cannot read the session {session_id}: {error}") from None
        written = opencode_db.file_written(db)
        try:
            checked, repaired = repair_of(
                path, data, run, written, name=session_id, what=db.name, who=self.agent_name
            )
        except Stop as stop:
            if stop.checked is not None:
                stop.checked.resume = self.resume
            raise
        checked.resume = self.resume
        try:
            planned = self.plan(rows, largest, session_id, repaired)
        except StoreError as error:
            raise Stop("refused", f"{error}; nothing was changed", checked) from None
        result = Outcome(path, "would-fix", "", checked)
        result.records = [c.describe() for c in planned]
        # A row's own id where it is a number (its line), else its place in the plan.
        result.touched = [
            c.id if isinstance(c.id, int) else n for n, c in enumerate(planned, 1) if c.old
        ]
        result.added = sum(1 for c in planned if c.old is None)
        if run.dry_run:
            return result

        folder = files.backup_folder(confined.roots[1], session_id, run.clock, confined)
        self.write_backup(folder, path, planned, run.clock, confined)
        try:
            with opencode_db.writing(db) as connection:
                now = self.rows(connection, session_id)
                if now != rows or self.largest(connection) != largest:
                    raise Changed
                self.write(connection, planned, back=False)
        except Changed:
            confined.rmtree(folder)
            reason = f"session {session_id} changed while it was being fixed"
            return Outcome(path, "refused", f"{reason} ({self.agent_name} may be running); "
                           "nothing was changed")  # fmt: skip
        except sqlite3.Error as error:
            confined.rmtree(folder)
            reason = f"could not write {db}: {error}; the session is as it was"
            return Outcome(path, "failed", reason)
        again = diagnosed(path, checked.agent, self.read(path))
        if again.error or again.needs_repair:
            try:
                with opencode_db.writing(db) as connection:
                    self.write(connection, planned, back=True)
            except sqlite3.Error as error:
                reason = "the repaired session did not read back clean, and putting it back failed"
                return Outcome(path, "failed", f"{reason} ({error}); the rows are in {folder}")
            confined.rmtree(folder)
            reason = "the repaired session did not read back clean; it is back"
            return Outcome(path, "failed", reason)
        result.status = "fixed"
        result.backup = folder
        return result

    def write_backup(
        self, folder: Path, path: Path, planned: list[RowChange], clock: Callable[[], float],
        confined: Confined,
    ) -> None:  # fmt: skip
        """The original rows (``rows.json``) and what fix writes (``note.json``), in ``folder``."""
        original = {
            "database": str(path.parent),
            "session": path.name,
            "rows": [{"id": c.id, "table": c.table, "original": c.old} for c in planned],
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

    def restore(self, path: Path, confined: Confined, backups: list[Path], force: bool) -> Outcome:
        db, session_id = path.parent, path.name
        if not backups:
            return Outcome(path, "refused", f"no backup of the session {session_id} to restore")
        folder = backups[-1]
        try:
            note = orjson.loads(confined.read(folder / NOTE))
            raw = confined.read(folder / ROWS)
            originals, written = orjson.loads(raw)["rows"], note["rows"]
            changes = [
                RowChange(_row_id(w["id"]), o["original"], w["written"], o.get("table", "messages"))
                for o, w in zip(originals, written, strict=True)
            ]
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            return Outcome(path, "refused", f"cannot read the backup's note: {error}")
        if hashlib.sha256(raw).hexdigest() != note.get("rows_sha256"):
            return Outcome(path, "refused", f"{folder} is not the backup fix made", backup=folder)
        if any(_of_another(row, session_id) for c in changes for row in (c.old, c.new)):
            reason = f"{folder} names rows of another session"
            return Outcome(path, "refused", reason, backup=folder)
        try:
            with opencode_db.writing(db) as connection:
                # By table and id: a kind's rows of two tables may share an id (opencode_v2).
                current = {
                    (self.table_of(row), row["id"]): row
                    for row in self.rows(connection, session_id)
                }
                for change in changes:
                    now = current.get((change.table, change.id))
                    if not self.written_as(now, change) and not force:
                        raise Changed(change.describe())
                self.write(connection, changes, back=True)
        except Changed as changed:
            return Outcome(
                path,
                "refused",
                f"{changed} since fix wrote it ({self.agent_name} wrote more); restoring "
                f"{folder.name} would lose that. Use --force to restore anyway.",
                backup=folder,
            )
        except sqlite3.Error as error:
            return Outcome(path, "refused", f"could not write {db}: {error}; nothing was changed")
        confined.rmtree(folder)
        return Outcome(path, "restored", f"restored from {folder}", backup=folder)


def _row_id(value: Any) -> int | str:
    """A backed-up row's id: a text id as it is (OpenCode's), else the integer it is."""
    return value if isinstance(value, str) else int(value)


def _of_another(row: Any, session_id: str) -> bool:
    """Whether a backed-up row says it is another session's (a backup set not of this one)."""
    if not isinstance(row, dict):
        return False
    return any(key in row and row[key] != session_id for key in ("session_id", "aggregate_id"))
