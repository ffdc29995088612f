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

``fix`` and ``undo`` are ``rowdb.RowDatabase``'s (one transaction, rows
checked unchanged since read, a backup set outside the database); this
module states Hermes's rows: a changed line updates the columns of its row
that a line holds, a dropped one deletes its row, a new one (a result the
repair added) is inserted after the session's last row (Hermes reads rows in
id order). The session's ``message_count`` is left as it was (Hermes shows
it; it does not read it back).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson

from inspector.local.outcome import StoreError
from inspector.local.rowdb import BACKUPS, NOTE, ROWS, Row, RowChange, RowDatabase

__all__ = ["BACKUPS", "DB_NAME", "NOTE", "ROWS", "STORE", "Database", "sessions"]

DB_NAME = "state.db"
# The message columns a transcript line holds (the others of a row are kept as they are).
TEXT_COLUMNS = ("role", "content", "tool_call_id", "tool_name", "reasoning", "finish_reason")


class Database(RowDatabase):
    """Hermes's ``state.db``: a session is its rows (``<HERMES_HOME>/state.db/<sessionID>``)."""

    db_name = DB_NAME
    agent_name = "Hermes"

    def rows(self, connection: sqlite3.Connection, session_id: str) -> list[Row]:
        connection.row_factory = sqlite3.Row
        active = " AND active = 1" if "active" in _columns(connection) else ""
        query = f"SELECT * FROM messages WHERE session_id = ?{active} ORDER BY id"  # noqa: S608
        return [dict(row) for row in connection.execute(query, (session_id,))]

    def plan(
        self, rows: list[Row], largest: int, session_id: str, repaired: bytes
    ) -> list[RowChange]:
        lines = [orjson.loads(line) for line in repaired.splitlines() if line.strip()]
        lines = [line for line in lines if line.get("role") != "session_meta"]
        stamps = [r["timestamp"] for r in rows if isinstance(r.get("timestamp"), int | float)]
        last_time = max(stamps, default=time.time())

        def added(line: dict[str, Any], row_id: int) -> Row:
            return {"id": row_id, "session_id": session_id, "timestamp": last_time,
                    **_columns_of(line)}  # fmt: skip

        return self.plan_in_order(rows, largest, lines, _changed_row, added)

    def put(self, connection: sqlite3.Connection, change: RowChange, row: Row | None) -> None:
        connection.execute("DELETE FROM messages WHERE id = ?", (change.id,))
        if row is None:
            return
        have = _columns(connection)
        values = {k: v for k, v in row.items() if k in have}
        if not all(column.isidentifier() for column in values):
            raise sqlite3.DatabaseError("not a messages row fix writes")
        columns, marks = ", ".join(values), ", ".join("?" for _ in values)
        connection.execute(
            f"INSERT INTO messages ({columns}) VALUES ({marks})",  # noqa: S608
            tuple(values.values()),
        )

    def written_as(self, now: Row | None, change: RowChange) -> bool:
        if change.new is not None and now is not None:  # the columns fix wrote
            now = {k: v for k, v in now.items() if k in change.new}
        return now == change.new

    def meta(self, session: Row) -> dict[str, Any]:
        return {
            "role": "session_meta",
            "model": session.get("model"),
            "platform": session.get("source"),
            "timestamp": session.get("started_at"),
        }

    def line(self, row: Row, db: Path) -> dict[str, Any]:
        return _line(row, db)

    def sessions_in(self, db: Path) -> list[tuple[Path, int, float]]:
        return sessions(db)

    def database(self, root: Path) -> Path:
        # ``root`` is $HERMES_HOME/sessions; where state.db is beside it, Hermes resumes from it.
        return root.parent / DB_NAME


STORE = Database()


def sessions(db: Path) -> list[tuple[Path, int, float]]:
    """Each session in the database: its name, its message count and its last write."""
    found = STORE.listed(db, "started_at", "timestamp")
    out: list[tuple[Path, int, float]] = []
    for session_id, started, count, newest in found:
        if not count:
            continue
        stamps = [float(x) for x in (started, newest) if isinstance(x, int | float)]
        out.append((db / str(session_id), int(count), max(stamps, default=0.0)))
    return out


def _columns(connection: sqlite3.Connection) -> set[str]:
    return {str(row[1]) for row in connection.execute("PRAGMA table_info(messages)")}


def _line(row: Row, db: Path) -> dict[str, Any]:
    line: dict[str, Any] = {"role": row["role"], "content": row.get("content")}
    if row.get("tool_calls"):
        try:
            line["tool_calls"] = orjson.loads(row["tool_calls"])
        except orjson.JSONDecodeError as error:
            reason = f"messages row {row['id']} in {db}: tool_calls is not JSON ({error})"
            raise StoreError(reason) from None
    # token_count is for the timeline only: a fix writes TEXT_COLUMNS and tool_calls, never it.
    for column in ("tool_call_id", "tool_name", "reasoning", "finish_reason", "token_count"):
        if row.get(column) is not None:
            line[column] = row[column]
    line["timestamp"] = row.get("timestamp")
    line["_row"] = row["id"]
    return line


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
