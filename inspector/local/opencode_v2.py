"""A session of OpenCode's event-sourced ("v2") tables, fixed in place by OpenCode's own event.

OpenCode 1.18.33 keeps every session's history as events: each write is a
row of ``event`` (``id`` ``evt_...``, ``aggregate_id`` the session, ``seq``
0, 1, 2..., ``type`` the event's name and version, ``session.next.tool.failed.1``,
``data`` its JSON) and the session's last ``seq`` in ``event_sequence``,
written in one ``BEGIN IMMEDIATE`` transaction with the rows its projector
makes of it. A session its ``/api/session`` API runs (``opencode serve``)
is projected into ``session_message`` (``id`` ``msg_...``, ``type`` user,
assistant, synthetic, shell, system, compaction..., ``seq`` the event that
made it, ``data`` the message less ``id`` and ``type``); OpenCode reads
those rows back (its history, and what it sends the model), never the
events: its migrations empty both together, nothing rebuilds the rows from
the events. Seen on OpenCode 1.18.33 itself (``tests/data/README.md``).

``read`` gives the session as the document ``opencode export`` prints
(``inspector.formats.opencode`` reads it): a user message's text, an
assistant message's text, reasoning and tool items as parts (ids made from
the message's, ``prt_<message>NNNN``). A tool OpenCode was killed while
running stays ``running`` (``pending`` if its input was still streaming).

``fix`` writes only what OpenCode itself writes for such a tool when the
session is prompted again: a ``session.next.tool.failed.1`` event
(``error`` ``{"type": "unknown", "message": ...}``, here the repair's words,
where OpenCode writes "Tool execution interrupted"), the session's
``event_sequence`` advanced to it, and the assistant message's row as the
projector writes it (the tool's state ``error``, its ``time.completed``,
``time_updated`` now). A repair that would change anything else (a renamed
call, a dropped reply, a note) is refused: no event of OpenCode's says it.
The rest is ``rowdb.RowDatabase``'s: refused while the database was written
in the last seconds, one transaction that rolls back if the session's rows
or events changed since read, a backup set outside the database, read back
and put back if not clean; ``undo`` deletes the events and puts the rows
back while nothing came after them.

OpenCode's TUI and ``opencode run --session`` do not read these rows (they
start the history afresh); the session is resumed through the server:
``opencode serve``, then ``POST /api/session/<id>/prompt``.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson

from inspector.local import opencode
from inspector.local.outcome import StoreError
from inspector.local.rowdb import Row, RowChange, RowDatabase

DB_NAME = "opencode.db"
FAILED = "session.next.tool.failed.1"
SEQUENCE = "event_sequence"  # the id of the session's event_sequence row among its rows
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_OPEN = ("pending", "running")
_PARTS = ("text", "reasoning", "tool")  # the content items an export's parts are made of


def has_v2(db: Path, session_id: str) -> bool:
    """Whether the session has rows of OpenCode's ``session_message`` projection.

    A database reached through a link is not opened here (opening one makes its journals
    beside the link's target): ``opencode_db`` owns it, and fix refuses the link."""
    if db.absolute() != db.resolve():
        return False
    try:
        with contextlib.closing(opencode._connect(db)) as connection:
            found = connection.execute(
                "SELECT 1 FROM session_message WHERE session_id = ? LIMIT 1", (session_id,)
            ).fetchone()
    except sqlite3.Error:
        return False
    return found is not None


def event_id(now_ms: int, counter: int = 1) -> str:
    """An id as OpenCode makes one: ``evt_``, 6 bytes of time and counter in hex, 14 base62."""
    value = now_ms * 0x1000 + counter
    head = "".join(f"{(value >> (40 - 8 * i)) & 0xFF:02x}" for i in range(6))
    return "evt_" + head + "".join(_BASE62[b % 62] for b in secrets.token_bytes(14))


class Database(RowDatabase):
    """OpenCode's event-sourced session: ``<data>/opencode.db/<sessionID>``."""

    db_name = DB_NAME
    agent_name = "OpenCode"
    # Its server resumes it (seen on 1.18.33: it took the fixed session on from its next event).
    resume = (
        "opencode serve --port 4096 & sleep 5; curl -X POST"
        " localhost:4096/api/session/{session}/prompt -H 'content-type: application/json'"
        """ -d '{{"prompt": {{"text": "continue"}}}}'"""
    )

    def owns(self, path: Path) -> bool:
        return opencode.is_db_session(path) and has_v2(path.parent, path.name)

    def sessions(self, root: Path) -> list[tuple[Path, int, float]] | None:
        return None  # opencode_db lists every session of the database, these with them

    def sessions_in(self, db: Path) -> list[tuple[Path, int, float]]:
        return opencode.db_sessions(db)

    def largest(self, connection: sqlite3.Connection) -> int:
        return 0  # the session's own events and sequence are among its rows

    def rows(self, connection: sqlite3.Connection, session_id: str) -> list[Row]:
        connection.row_factory = sqlite3.Row
        out = [
            dict(row)
            for row in connection.execute(
                "SELECT * FROM session_message WHERE session_id = ? ORDER BY seq", (session_id,)
            )
        ]
        out += [
            dict(row)
            for row in connection.execute(
                "SELECT * FROM event WHERE aggregate_id = ? ORDER BY seq", (session_id,)
            )
        ]
        found = connection.execute(
            "SELECT * FROM event_sequence WHERE aggregate_id = ?", (session_id,)
        ).fetchone()
        if found is not None:
            out.append({"id": SEQUENCE, **dict(found)})
        return out

    def export(self, connection: sqlite3.Connection, db: Path, session_id: str) -> bytes:
        connection.row_factory = sqlite3.Row
        row = connection.execute("SELECT * FROM session WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise StoreError(f"no session {session_id} in {db}")
        times = {"created": row["time_created"], "updated": row["time_updated"]}
        info = {"id": session_id, "directory": row["directory"], "title": row["title"]}
        info["time"] = times
        messages = [m for _, m in _exported(self.rows(connection, session_id), session_id, db)]
        return orjson.dumps({"info": info, "messages": messages}, option=orjson.OPT_INDENT_2)

    def table_of(self, row: Row) -> str:
        return _table(row)

    def plan(
        self, rows: list[Row], largest: int, session_id: str, repaired: bytes
    ) -> list[RowChange]:
        before = _exported(rows, session_id, Path(DB_NAME))
        after = orjson.loads(repaired)["messages"]
        refused = StoreError(
            "the repair changes more than an interrupted tool's result, and OpenCode's events "
            "say nothing else; fix writes only the failure OpenCode itself writes"
        )
        if [m["info"] for _, m in before] != [m["info"] for m in after]:
            raise refused
        # (the message's row, the tool's place among its parts, the repair's words)
        failures: list[tuple[Row, int, str]] = []
        for (row, old), new in zip(before, after, strict=True):
            if len(old["parts"]) != len(new["parts"]):
                raise refused
            for n, (was, now) in enumerate(zip(old["parts"], new["parts"], strict=True)):
                if was == now:
                    continue
                closed = now.get("type") == "tool" and now.get("state", {}).get("status") == "error"
                if not (closed and was.get("state", {}).get("status") in _OPEN) or {
                    k: v for k, v in was.items() if k != "state"
                } != {k: v for k, v in now.items() if k != "state"}:
                    raise refused
                if not isinstance(row["id"], str):
                    raise StoreError(
                        f"the assistant message of seq {row['seq']} has the id {row['id']!r}, "
                        "not text: fix cannot name its row"
                    )
                failures.append((row, n, now["state"]["error"]))
        sequence = next((r for r in rows if _table(r) == SEQUENCE), None)
        events = [r for r in rows if _table(r) == "event"]
        last = max((int(e["seq"]) for e in events), default=-1)
        if sequence is None or int(sequence["seq"]) != last:
            raise StoreError("the session's event_sequence is not its last event; nothing written")
        now_ms = int(time.time() * 1000)
        changes: list[RowChange] = []
        rewritten: dict[str, tuple[Row, Row]] = {}  # a message's id: its row, as read and new
        for n, (row, place, words) in enumerate(failures, 1):
            message_id = row["id"]
            old = rewritten.get(message_id, (row, row))[1]
            data = orjson.loads(old["data"])
            # The tool by its place (an id may be any text, the same twice, or none).
            tool = data["content"][_sent(data)[place]]
            executed = (tool.get("provider") or {}).get("executed") is True
            event = {"timestamp": now_ms, "sessionID": session_id,
                     "assistantMessageID": message_id, "callID": tool.get("id"),
                     "error": {"type": "unknown", "message": words},
                     "provider": {"executed": executed}}  # fmt: skip
            _project_failed(tool, event)
            last += 1
            new_id = event_id(now_ms, n)
            new_event = {"id": new_id, "aggregate_id": session_id, "seq": last, "type": FAILED,
                         "data": orjson.dumps(event).decode()}  # fmt: skip
            changes.append(RowChange(new_id, None, new_event, "event"))
            rewritten[message_id] = (row, {**old, "data": orjson.dumps(data).decode(),
                                           "time_updated": now_ms})  # fmt: skip
        for message_id, (row, new) in rewritten.items():
            changes.append(RowChange(message_id, row, new, "session_message"))
        if changes and sequence is not None:
            changes.append(RowChange(SEQUENCE, sequence, {**sequence, "seq": last}, SEQUENCE))
        return changes

    def put(self, connection: sqlite3.Connection, change: RowChange, row: Row | None) -> None:
        if change.table == "event":
            connection.execute("DELETE FROM event WHERE id = ?", (change.id,))
            if row is not None:
                connection.execute(
                    "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?,?,?,?,?)",
                    (row["id"], row["aggregate_id"], row["seq"], row["type"], row["data"]),
                )
        elif change.table == "session_message" and row is not None:
            connection.execute(
                "UPDATE session_message SET data = ?, time_updated = ? WHERE id = ?",
                (row["data"], row["time_updated"], change.id),
            )
        elif change.table == SEQUENCE and row is not None:
            connection.execute(
                "UPDATE event_sequence SET seq = ? WHERE aggregate_id = ?",
                (row["seq"], row["aggregate_id"]),
            )
        else:
            raise sqlite3.DatabaseError(f"not a row fix writes: {change.describe()}")


STORE = Database()


def _project_failed(tool: dict[str, Any], event: dict[str, Any]) -> None:
    """The tool item as OpenCode's projector leaves it after ``session.next.tool.failed``."""
    state = tool["state"]
    provider = tool.get("provider") or {}
    new_provider: dict[str, Any] = {
        "executed": event["provider"]["executed"] or provider.get("executed") is True
    }
    if provider.get("metadata") is not None:
        new_provider["metadata"] = provider["metadata"]
    running = state.get("status") == "running"
    inputs = state.get("input")
    tool["provider"] = new_provider
    tool["state"] = {
        "status": "error",
        "input": {} if isinstance(inputs, str) else inputs,
        "content": state.get("content", []) if running else [],
        "structured": state.get("structured", {}) if running else {},
        "error": event["error"],
    }
    times = dict(tool.get("time") or {})
    times["completed"] = event["timestamp"]
    order = ("created", "ran", "completed", "pruned")
    rank = {key: n for n, key in enumerate(order)}
    tool["time"] = dict(sorted(times.items(), key=lambda kv: rank.get(kv[0], len(order))))


def _table(row: Row) -> str:
    """Which of the tables ``Database.rows`` reads ``row`` came from, told by its columns:
    an id is any text OpenCode's rows hold (a message's needs no ``msg_``), so it tells none."""
    if "session_id" in row:
        return "session_message"
    return "event" if "data" in row else SEQUENCE


def _exported(rows: list[Row], session_id: str, db: Path) -> list[tuple[Row, dict[str, Any]]]:
    """Each ``session_message`` row among ``rows`` that is a turn, with its export message."""
    return [
        (row, message)
        for row in rows
        if _table(row) == "session_message"
        if (message := _as_export(row, session_id, db)) is not None
    ]


def _sent(data: dict[str, Any]) -> list[int]:
    """The places in an assistant message's ``content`` of the items that are export parts
    (``_as_export`` has checked each is an object)."""
    content = data.get("content") or []
    return [n for n, item in enumerate(content) if item.get("type") in _PARTS]


def _content_checked(data: dict[str, Any], message_id: str, db: Path) -> list[Any]:
    """An assistant message's ``content``: a list of objects, else ``StoreError`` naming it."""
    content = data.get("content") or []
    if not isinstance(content, list) or not all(isinstance(item, dict) for item in content):
        raise StoreError(
            f"the assistant message {message_id!r} in {db} holds content that is not a list "
            "of objects; it is not OpenCode's, so the session is not read"
        )
    return content


def _as_export(row: Row, session_id: str, db: Path) -> dict[str, Any] | None:
    """A ``session_message`` row as ``opencode export``'s message, or None (not sent)."""
    data = opencode._row_json(row["data"], db)
    kind, message_id = row["type"], str(row["id"])
    info: dict[str, Any] = {"id": message_id, "sessionID": session_id}
    parts: list[dict[str, Any]] = []

    def part(value: dict[str, Any]) -> None:
        parts.append({**value, "id": f"prt_{message_id[4:]}{len(parts):04d}",
                      "sessionID": session_id, "messageID": message_id})  # fmt: skip

    if kind in ("user", "synthetic", "shell", "compaction"):
        info |= {"role": "user", "time": data.get("time") or {}}
        if kind == "shell":
            text = f"Shell command: {data.get('command', '')}\n\n{data.get('output', '')}"
        else:
            found = data.get("summary") if kind == "compaction" else data.get("text")
            text = found if isinstance(found, str) else ""
        part(
            {"type": "text", "text": text or "", **({"synthetic": True} if kind != "user" else {})}
        )
        return {"info": info, "parts": parts}
    if kind != "assistant":
        return None  # a system text, an agent or model switch: not a turn
    model = data.get("model") or {}
    info |= {"role": "assistant", "time": data.get("time") or {},
             "modelID": model.get("id"), "providerID": model.get("providerID"),
             "agent": data.get("agent")}  # fmt: skip
    for key in ("finish", "cost", "tokens"):
        if key in data:
            info[key] = data[key]
    if isinstance(data.get("error"), dict):
        name = "MessageAbortedError" if data["error"].get("type") == "aborted" else "UnknownError"
        info["error"] = {"name": name, "data": {"message": data["error"].get("message", "")}}
    content = _content_checked(data, message_id, db)
    for item in (content[n] for n in _sent(data)):
        if item.get("type") == "text":
            part({"type": "text", "text": item.get("text", "")})
        elif item.get("type") == "reasoning":
            part({"type": "reasoning", "text": item.get("text", "")})
        elif item.get("type") == "tool":
            part({"type": "tool", "callID": item.get("id"), "tool": item.get("name"),
                  "state": _state(item)})  # fmt: skip
    return {"info": info, "parts": parts}


def _state(item: dict[str, Any]) -> dict[str, Any]:
    state, times = item.get("state") or {}, item.get("time") or {}
    status = state.get("status")
    start = times.get("ran", times.get("created", 0))
    if status == "pending":
        return {"status": "pending", "input": {}, "raw": state.get("input", "")}
    out: dict[str, Any] = {"status": status, "input": state.get("input") or {}}
    if status == "completed":
        texts = [c.get("text", "") for c in state.get("content") or [] if c.get("type") == "text"]
        out["output"] = "\n".join(texts)
    elif status == "error":
        error = state.get("error")
        out["error"] = error.get("message", "") if isinstance(error, dict) else str(error)
    out["time"] = {"start": start, **({"end": times["completed"]} if "completed" in times else {})}
    return out
