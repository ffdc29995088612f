"""A conversation in Amazon Q Developer CLI's or Kiro CLI's ``data.sqlite3``, fixed in place.

``q chat`` (aws/amazon-q-developer-cli, ``database/mod.rs``) keeps one
conversation per folder in ``conversations`` (``key TEXT PRIMARY KEY``: the
folder it ran in, ``value TEXT``: the ``ConversationState`` JSON the
``q-chat`` shape reads), rewritten after every reply; ``q chat --resume``
loads the row of the folder it is started in. Kiro CLI's migration
``008_multiple_conversations_per_path`` (December 2025) copied those rows
into ``conversations_v2`` (``key``, ``conversation_id``, ``value``,
``created_at``, ``updated_at`` in ms; primary key ``(key,
conversation_id)``), which is all it reads since: ``--resume`` takes the
folder's most recently updated one, ``--resume-id <id>`` a given one. Where
``conversations_v2`` exists its rows are the sessions (the old table is a
copy Kiro no longer reads); else ``conversations``'s.

The database is ``data.sqlite3`` in the agent's data folder (Rust's
``dirs::data_local_dir()``: ``$XDG_DATA_HOME`` or ``~/.local/share`` on
Linux, ``~/Library/Application Support`` on macOS) under ``amazon-q/`` or
``kiro-cli/``. A session is named ``<folder>/data.sqlite3/<name>``: a
``conversations_v2`` row by its ``conversation_id`` (a UUID; where rows of two
folders share one, by its key and id as below), a
``conversations`` row by its key written as one plain file name (each byte
but letters, digits and ``-`` (and a leading ``-``) as ``_XX``:
``/home/me/app`` is ``_2Fhome_2Fme_2Fapp``; a key whose name would pass 160
characters is its first 100 and ``_h`` and its SHA-256), never a path made of
the key.

``fix`` and ``undo`` are ``rowdb.RowDatabase``'s: the row read with the
database's other reads, the repair planned on it, the original row backed up
outside the database, the new ``value`` written in one ``BEGIN IMMEDIATE``
transaction in which the row is read again and the write rolled back if it
changed; refused while the database was written in the last
``quiet_seconds``: Q writes the row after each reply, holding the whole
conversation in memory, so a Q still running would write over a fix with its
next reply. Only ``value`` changes (``updated_at`` stays, so the same
conversation is the one ``--resume`` picks).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from inspector.local.outcome import StoreError
from inspector.local.rowdb import BACKUPS, NOTE, ROWS, Row, RowChange, RowDatabase

__all__ = [
    "BACKUPS",
    "DB_NAME",
    "NOTE",
    "ROWS",
    "STORE",
    "Database",
    "session_name",
    "sessions",
]

DB_NAME = "data.sqlite3"
V1, V2 = "conversations", "conversations_v2"
_PLAIN = re.compile(r"[A-Za-z0-9-]")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
LONGEST = 160


def session_name(key: str, conversation_id: str | None = None, *, shared: bool = False) -> str:
    """The session name of a row: its conversation id (unless another row of another
    folder has it too: ``shared``), else its key (and id) as a plain file name."""
    if conversation_id is not None:
        if _ID.fullmatch(conversation_id) and not shared:
            return conversation_id
        key = f"{key}\0{conversation_id}"
    name = "".join(
        c
        if _PLAIN.fullmatch(c) and not (c == "-" and n == 0)
        else "".join(f"_{b:02X}" for b in c.encode("utf-8", "replace"))
        for n, c in enumerate(key)
    )
    if 0 < len(name) <= LONGEST:
        return name
    return f"{name[:100]}_h{hashlib.sha256(key.encode('utf-8', 'replace')).hexdigest()}"


class Database(RowDatabase):
    """Q's / Kiro's ``data.sqlite3``: a session is one conversation row (see the module)."""

    db_name = DB_NAME
    agent_name = "Q / Kiro CLI"

    def table(self, connection: sqlite3.Connection) -> str:
        """The table the agent reads conversations from: ``conversations_v2`` where it exists."""
        found = {
            str(name)
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", (V1, V2)
            )
        }
        if V2 in found:
            return V2
        if V1 in found:
            return V1
        raise sqlite3.DatabaseError("no conversations table")

    def all_rows(self, connection: sqlite3.Connection) -> list[Row]:
        """Every conversation row of the table the agent reads, each with its session name."""
        table = self.table(connection)
        if table == V2:
            query = "SELECT key, conversation_id, value, updated_at FROM conversations_v2"
            found = [
                {"table": V2, "key": key, "conversation_id": cid, "value": value, "updated": at}
                for key, cid, value, at in connection.execute(query)
            ]
        else:
            found = [
                {"table": V1, "key": key, "value": value}
                for key, value in connection.execute("SELECT key, value FROM conversations")
            ]
        ids = Counter(row.get("conversation_id") for row in found)
        for row in found:
            cid = row.get("conversation_id")
            shared = cid is not None and ids[cid] > 1
            row["id"] = session_name(str(row["key"]), cid, shared=shared)
        return found

    def rows(self, connection: sqlite3.Connection, session_id: str) -> list[Row]:
        return [row for row in self.all_rows(connection) if row["id"] == session_id][:1]

    def largest(self, connection: sqlite3.Connection) -> int:
        return 0  # a fix never adds a row

    def export(self, connection: sqlite3.Connection, db: Path, session_id: str) -> bytes:
        found = self.rows(connection, session_id)
        if not found:
            raise StoreError(f"no conversation {session_id} in {db}")
        value = found[0]["value"]
        if isinstance(value, bytes):
            return value
        if not isinstance(value, str):
            raise StoreError(f"conversation {session_id} in {db} holds no JSON text")
        return value.encode("utf-8", "surrogatepass")

    def plan(
        self, rows: list[Row], largest: int, session_id: str, repaired: bytes
    ) -> list[RowChange]:
        if len(rows) != 1:
            raise StoreError(f"no conversation {session_id} to write")
        (old,) = rows
        value: Any = repaired if isinstance(old["value"], bytes) else repaired.decode("utf-8")
        return [RowChange(session_id, old, {**old, "value": value}, old["table"])]

    def put(self, connection: sqlite3.Connection, change: RowChange, row: Row | None) -> None:
        if row is None or change.old is None or change.new is None:
            raise sqlite3.DatabaseError("a fix of a conversation only rewrites its value")
        if row["table"] == V2:
            done = connection.execute(
                "UPDATE conversations_v2 SET value = ? WHERE key = ? AND conversation_id = ?",
                (row["value"], row["key"], row["conversation_id"]),
            )
        elif row["table"] == V1:
            done = connection.execute(
                "UPDATE conversations SET value = ? WHERE key = ?", (row["value"], row["key"])
            )
        else:
            raise sqlite3.DatabaseError("not a conversations row fix writes")
        if done.rowcount != 1:
            raise sqlite3.DatabaseError(f"conversation {change.id} is not in the database")

    def table_of(self, row: Row) -> str:
        return str(row["table"])

    def sessions_in(self, db: Path) -> list[tuple[Path, int, float]]:
        with contextlib.closing(self.connect(db)) as connection:
            found = self.all_rows(connection)
        written = db.stat().st_mtime
        out = []
        for row in sorted(found, key=lambda r: str(r["id"])):
            value = row["value"]
            size = len(value) if isinstance(value, str | bytes) else 0
            at = row.get("updated")
            newest = at / 1000 if isinstance(at, int | float) and at > 0 else written
            out.append((db / str(row["id"]), size, float(newest)))
        return out


STORE = Database()


def sessions(db: Path) -> list[tuple[Path, int, float]]:
    """Each conversation in the database: its name, its size and its last write."""
    return STORE.sessions_in(db)
