"""A session in Goose's SQLite database, fixed in place in one transaction; and undone.

Newer Goose (block/goose) keeps its sessions in ``sessions/sessions.db`` under
its data folder: a ``sessions`` row (``id``, ``name``, ``working_dir``, ...)
and one ``messages`` row per message (``id`` in order, ``message_id``,
``session_id``, ``role``, ``content_json`` the message's content items,
``created_timestamp``, ``metadata_json``). A session is named
``<sessions>/sessions.db/<sessionID>`` here; ``read`` gives it as the Goose
JSON Lines the ``goose`` shape reads (a metadata line from the session row,
then one line a message row, each with its row's id under ``_row``).

``fix`` and ``undo`` are ``rowdb.RowDatabase``'s (one transaction, rows
checked unchanged since read, a backup set outside the database); this
module states Goose's rows: a changed line updates its row, a dropped one
deletes it, a new one (a result the repair added, in a user message of its
own) is inserted after the session's last row with a ``message_id`` of its
own (Goose reads a session's rows in id order, so a new row can only go
last).
"""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from inspector.local.outcome import StoreError
from inspector.local.rowdb import BACKUPS, NOTE, ROWS, Row, RowChange, RowDatabase

__all__ = ["BACKUPS", "DB_NAME", "NOTE", "ROWS", "STORE", "Database", "sessions"]

DB_NAME = "sessions.db"
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


class Database(RowDatabase):
    """Goose's ``sessions.db``: a session is its rows (``<sessions>/sessions.db/<sessionID>``).

    The database is in the sessions folder, where newer Goose reads only it (it
    imported its JSONL files once).
    """

    db_name = DB_NAME
    agent_name = "Goose"

    def rows(self, connection: sqlite3.Connection, session_id: str) -> list[Row]:
        connection.row_factory = sqlite3.Row
        return [dict(row) for row in connection.execute(_SELECT, (session_id,))]

    def plan(
        self, rows: list[Row], largest: int, session_id: str, repaired: bytes
    ) -> list[RowChange]:
        lines = [orjson.loads(line) for line in repaired.splitlines()[1:] if line.strip()]

        def changed(old: Row, line: dict[str, Any]) -> Row:
            return {**old, **_row_of(line, session_id), "id": old["id"]}

        def added(line: dict[str, Any], row_id: int) -> Row:
            new = _row_of(line, session_id)
            new["id"] = row_id
            new["message_id"] = f"msg_{session_id}_{row_id}"
            return new

        return self.plan_in_order(rows, largest, lines, changed, added)

    def put(self, connection: sqlite3.Connection, change: RowChange, row: Row | None) -> None:
        connection.execute("DELETE FROM messages WHERE id = ?", (change.id,))
        if row is not None:
            connection.execute(_INSERT, tuple(row.get(c) for c in COLUMNS))

    def meta(self, session: Row) -> dict[str, Any]:
        description = session.get("name") or session.get("description") or ""
        return {"working_dir": session.get("working_dir") or "", "description": description}

    def line(self, row: Row, db: Path) -> dict[str, Any]:
        return _line(row, db)

    def sessions_in(self, db: Path) -> list[tuple[Path, int, float]]:
        return sessions(db)


STORE = Database()


def sessions(db: Path) -> list[tuple[Path, int, float]]:
    """Each session in the database: its name, its message count and its last write."""
    found = STORE.listed(db, "updated_at", "created_timestamp")
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
