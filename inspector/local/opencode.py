"""OpenCode's session folder: a session read from its storage files, fixed file by file.

OpenCode (sst/opencode) keeps each session in many small JSON files under
``$XDG_DATA_HOME/opencode/storage/`` (``~/.local/share/opencode/storage/``):
``session/<projectID>/<sessionID>.json`` (its info),
``message/<sessionID>/<messageID>.json`` (each message's info) and
``part/<messageID>/<partID>.json`` (each message's parts). It lists messages
and parts by sorted file name and writes each file as
``JSON.stringify(value, null, 2)``.

A session is named by its info file. ``read`` gathers its files into the
document ``opencode export`` prints, which ``inspector.formats.opencode``
reads; ``fix`` repairs that document and writes back only the files whose
record changed (a tool part left ``pending`` or ``running``, a renamed call
id), the files of records the repair added (a note: a message and its part),
and removes those of records it dropped (a blank reply). Each file is
replaced in one step (``os.replace``) from a temporary file that is never
inside ``storage/`` (OpenCode lists every file in a part folder as a part),
new parts before their message, removals last, so OpenCode reads the old
session, the new one, or one with some of the repair in it: never a broken
file. Before anything is written, each file to change or remove is copied to
a backup set outside ``storage/``
(``<data>/transcript-inspector-backups/<sessionID>/<stamp>/``) with a note
of what was written; ``undo`` puts the set back if the files are still the
ones ``fix`` wrote.

Newer OpenCode versions (1.18) keep sessions in SQLite instead (``opencode.db``
beside ``storage/``, whose ``session``, ``message`` and ``part`` tables hold
the same records, a message's and a part's in a ``data`` JSON column); they
copy ``storage/`` into it once and read only the database after that, and a
new install has no ``storage/`` at all. Where the database exists, ``list``
reads the sessions from it (opened read-only; a session is named
``<data>/opencode.db/<sessionID>``) and leaves the JSON copy out, and ``fix``
refuses the JSON files, which OpenCode no longer reads, and repairs the
session in the database instead (``inspector.local.opencode_db``): the rows
whose record the repair changed, added or dropped, planned by id from the
same export, backed up to the same backup folder, written in one
``BEGIN IMMEDIATE`` transaction that rolls back if the rows changed since
they were read, refused while the session or the database was written in
the last few seconds, read back and put back if not clean; ``undo`` restores
the rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from inspector.local.agents import Agent
    from inspector.local.fix import Outcome

BACKUPS = "transcript-inspector-backups"
NOTE = "note.json"
_TEMP = "tmp"


class StoreError(ValueError):
    """A session's files cannot be read as one session."""


@dataclass(frozen=True, slots=True)
class Record:
    path: Path
    data: bytes
    value: Any


@dataclass(slots=True)
class Store:
    """One session's files: its info, and each message with its parts, in OpenCode's order."""

    root: Path  # the storage folder
    session: Record
    messages: list[tuple[Record, list[Record]]] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        return self.session.path.stem

    def records(self) -> list[Record]:
        out = [self.session]
        for message, parts in self.messages:
            out.append(message)
            out.extend(parts)
        return out

    def export_bytes(self) -> bytes:
        """The session as ``opencode export`` prints it."""
        doc = {
            "info": self.session.value,
            "messages": [
                {"info": message.value, "parts": [p.value for p in parts]}
                for message, parts in self.messages
            ],
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def is_session_file(path: Path) -> bool:
    """A session info file of an OpenCode storage folder (``session/<project>/<id>.json``)."""
    return path.suffix == ".json" and path.parent.parent.name == "session"


def storage_root(path: Path) -> Path:
    return path.parent.parent.parent


def database(root: Path) -> Path | None:
    """OpenCode's SQLite database beside the storage folder, where it has one."""
    try:
        found = sorted(root.parent.glob("opencode*.db"))
    except OSError:
        return None
    return found[0] if found else None


def is_db_session(path: Path) -> bool:
    """A session named inside OpenCode's database: ``<data>/opencode.db/<sessionID>``."""
    return path.parent.suffix == ".db" and path.name.startswith("ses") and path.parent.is_file()


def _connect(db: Path) -> sqlite3.Connection:
    # Read-only: OpenCode may hold the database open (WAL), and it is never written here.
    return sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5)


def db_sessions(db: Path) -> list[tuple[Path, int, float]]:
    """Each session in the database: its name, its size (parts) and its last write."""
    query = (
        "SELECT s.id, s.time_updated, COUNT(p.id), MAX(p.time_updated) "
        "FROM session s LEFT JOIN part p ON p.session_id = s.id GROUP BY s.id ORDER BY s.id"
    )
    with contextlib.closing(_connect(db)) as connection:
        rows = connection.execute(query).fetchall()
    out: list[tuple[Path, int, float]] = []
    for session_id, updated, parts, part_updated in rows:
        newest = max(int(updated or 0), int(part_updated or 0))
        out.append((db / str(session_id), int(parts), newest / 1000))
    return out


_SESSION_COLUMNS = {
    "project_id": "projectID",
    "parent_id": "parentID",
    "slug": "slug",
    "directory": "directory",
    "title": "title",
    "version": "version",
}


def db_export_bytes(path: Path) -> bytes:
    """The session ``path`` names in the database, as ``opencode export`` prints it."""
    db, session_id = path.parent, path.name
    with contextlib.closing(_connect(db)) as connection:
        return db_export_from(connection, db, session_id)


def db_export_from(connection: sqlite3.Connection, db: Path, session_id: str) -> bytes:
    """The session ``session_id`` as ``opencode export`` prints it, read through ``connection``."""
    connection.row_factory = sqlite3.Row
    row = connection.execute("SELECT * FROM session WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise StoreError(f"no session {session_id} in {db}")
    keys = row.keys()
    info: dict[str, Any] = {"id": session_id}
    for column, name in _SESSION_COLUMNS.items():
        if column in keys and row[column] is not None:
            info[name] = row[column]
    info["time"] = {"created": row["time_created"], "updated": row["time_updated"]}
    messages = connection.execute(
        "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
        (session_id,),
    ).fetchall()
    parts = connection.execute(
        "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id",
        (session_id,),
    ).fetchall()
    by_message: dict[str, list[dict[str, Any]]] = {}
    for part in parts:
        data = _row_json(part["data"], db)
        value = {**data, "id": part["id"], "sessionID": session_id, "messageID": part["message_id"]}
        by_message.setdefault(part["message_id"], []).append(value)
    items: list[dict[str, Any]] = []
    for m in messages:
        message: dict[str, Any] = {**_row_json(m["data"], db), "id": m["id"]}
        message["sessionID"] = session_id
        items.append({"info": message, "parts": by_message.get(m["id"], [])})
    return orjson.dumps({"info": info, "messages": items}, option=orjson.OPT_INDENT_2) + b"\n"


def _row_json(data: Any, db: Path) -> dict[str, Any]:
    try:
        value = orjson.loads(data)
    except (orjson.JSONDecodeError, TypeError):
        raise StoreError(f"a record in {db} is not JSON") from None
    if not isinstance(value, dict):
        raise StoreError(f"a record in {db} is not a JSON object")
    return value


def _load(path: Path) -> Record:
    data = path.read_bytes()
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise StoreError(f"{path} is not JSON ({error.msg})") from None
    if not isinstance(value, dict):
        raise StoreError(f"{path} is not a JSON object")
    return Record(path, data, value)


def _json_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
    except FileNotFoundError:
        return []


def read(path: Path) -> Store:
    """The session whose info file is ``path``, with its messages and parts."""
    root = storage_root(path)
    store = Store(root, _load(path))
    for message_path in _json_files(root / "message" / path.stem):
        message = _load(message_path)
        parts = [_load(p) for p in _json_files(root / "part" / message_path.stem)]
        store.messages.append((message, parts))
    return store


def export_bytes(path: Path) -> bytes:
    return read(path).export_bytes()


def session_files(path: Path) -> list[Path]:
    """Every file of the session: its info, its messages, their parts."""
    root = storage_root(path)
    files = [path]
    for message_path in _json_files(root / "message" / path.stem):
        files.append(message_path)
        files.extend(_json_files(root / "part" / message_path.stem))
    return files


def stat(path: Path) -> tuple[int, float]:
    """The session's size (all its files) and the time its newest file was written."""
    size, newest = 0, 0.0
    for file in session_files(path):
        info = file.stat()
        size += info.st_size
        newest = max(newest, info.st_mtime)
    return size, newest


def _stamps(path: Path) -> dict[Path, tuple[int, int, int]]:
    out: dict[Path, tuple[int, int, int]] = {}
    for file in session_files(path):
        info = file.stat()
        out[file] = (info.st_size, info.st_mtime_ns, info.st_ino)
    return out


# --- what a repair changes -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """One file: ``old`` None for a file the repair adds, ``new`` None for one it removes."""

    path: Path
    old: bytes | None
    new: bytes | None


def _as_opencode_writes(value: Any, like: bytes | None) -> bytes:
    out = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    return out + b"\n" if like is not None and like.endswith(b"\n") else out


def changes(store: Store, repaired: bytes) -> list[Change]:
    """The files to write, add and remove for the repaired export ``repaired``."""
    doc = orjson.loads(repaired)
    out: list[Change] = []
    if doc["info"] != store.session.value:
        old = store.session
        out.append(Change(old.path, old.data, _as_opencode_writes(doc["info"], old.data)))
    messages = {m.path.stem: (m, {p.path.stem: p for p in parts}) for m, parts in store.messages}
    seen_messages: set[str] = set()
    seen_parts: set[Path] = set()
    added_parts: list[Change] = []
    added_messages: list[Change] = []
    removed: list[Change] = []
    for item in doc["messages"]:
        info = item["info"]
        message_id = str(info["id"])
        seen_messages.add(message_id)
        found = messages.get(message_id)
        parts: dict[str, Record] = found[1] if found else {}
        if found is None:
            target = store.root / "message" / store.session_id / f"{message_id}.json"
            added_messages.append(Change(target, None, _as_opencode_writes(info, None)))
        elif info != found[0].value:
            old = found[0]
            out.append(Change(old.path, old.data, _as_opencode_writes(info, old.data)))
        for part in item["parts"]:
            existing = parts.get(str(part["id"]))
            if existing is None:
                target = store.root / "part" / message_id / f"{part['id']}.json"
                added_parts.append(Change(target, None, _as_opencode_writes(part, None)))
                continue
            seen_parts.add(existing.path)
            if part != existing.value:
                new = _as_opencode_writes(part, existing.data)
                out.append(Change(existing.path, existing.data, new))
    for message_id, (message, parts) in messages.items():
        for record in parts.values():
            if record.path not in seen_parts:
                removed.append(Change(record.path, record.data, None))
        if message_id not in seen_messages:
            removed.append(Change(message.path, message.data, None))
    # Parts before the message that holds them, removals last: every moment is readable.
    return [*added_parts, *out, *added_messages, *removed]


# --- fix and undo ------------------------------------------------------------------------


def backup_base(root: Path, backup_dir: Path | None) -> Path:
    return backup_dir or root.parent / BACKUPS


def fix(
    path: Path,
    agent: Agent | None,
    *,
    dry_run: bool,
    backup_dir: Path | None,
    quiet_seconds: float,
    clock: Callable[[], float] = time.time,
) -> Outcome:
    """Repair the session ``path`` names in its storage folder (see the module docstring)."""
    from inspector.diagnosis import repaired_bytes
    from inspector.local import fix as single
    from inspector.local.sessions import check

    outcome = single.Outcome
    if agent is None:
        from inspector.local.agents import BY_NAME

        agent = BY_NAME["opencode"]
    if is_db_session(path):
        from inspector.local import opencode_db

        return opencode_db.fix(
            path,
            agent,
            dry_run=dry_run,
            backup_dir=backup_dir,
            quiet_seconds=quiet_seconds,
            clock=clock,
        )
    root = storage_root(path)
    db = database(root)
    if db is not None:
        return outcome(
            path,
            "refused",
            f"OpenCode keeps its sessions in {db}: the files under {root} are a copy it no "
            f"longer reads, so fixing them would not change what it resumes. Fix the session "
            f"in the database instead (transcript-inspector fix {db / path.stem}); nothing was "
            "changed.",
        )
    base = backup_base(root, backup_dir)
    _sweep(base / _TEMP)
    try:
        before = _stamps(path)
        store = read(path)
    except (OSError, StoreError) as error:
        return outcome(path, "refused", f"cannot read the session {path.stem}: {error}")
    data = store.export_bytes()
    checked = check(path, agent, data)
    if checked.error or checked.parsed is None or checked.diagnosis is None:
        reason = f"cannot read {path.stem}: {checked.error}; nothing was changed"
        return outcome(path, "refused", reason)
    if not checked.diagnosis.needs_repair:
        return outcome(path, "clean", "nothing to repair", checked)
    newest = max(stamp[1] for stamp in before.values()) / 1e9
    age = clock() - newest
    if age < quiet_seconds and not dry_run:
        return outcome(
            path,
            "refused",
            f"session {path.stem} was written {max(age, 0):.1f} s ago: OpenCode may still be "
            "running. Close it (or wait) and run fix again; nothing was changed.",
        )
    repaired = repaired_bytes(checked.parsed)
    problem = single.verify(checked, repaired)
    if problem:
        reason = f"the repair did not verify ({problem}); nothing was changed"
        return outcome(path, "failed", reason)
    planned = changes(store, repaired)
    result = outcome(path, "would-fix", "", checked, files=[c.path for c in planned])
    result.touched = [n for n, c in enumerate(planned, 1) if c.old is not None]
    result.added = sum(1 for c in planned if c.old is None)
    if dry_run:
        return result

    folder = _backup_folder(base, store.session_id, clock)
    note: dict[str, Any] = {
        "original": str(path),
        "storage": str(root),
        "written_at": datetime.fromtimestamp(clock(), UTC).isoformat(),
        "files": [],
    }
    for n, change in enumerate(planned):
        entry: dict[str, Any] = {"path": str(change.path), "original_sha256": None}
        entry["written_sha256"] = None
        if change.old is not None:
            copy = folder / "files" / str(change.path.relative_to(root))
            copy.parent.mkdir(parents=True, exist_ok=True)
            single.write_durably(copy, change.old, change.path.stat().st_mode)
            entry["original_sha256"] = _sha256(change.old)
            entry["copy"] = str(copy)
        if change.new is not None:
            entry["written_sha256"] = _sha256(change.new)
        entry["order"] = n
        note["files"].append(entry)
    single.write_durably(folder / NOTE, orjson.dumps(note, option=orjson.OPT_INDENT_2), None)
    if _stamps(path) != before or any(
        change.old is not None and change.path.read_bytes() != change.old for change in planned
    ):
        shutil.rmtree(folder, ignore_errors=True)
        return outcome(
            path,
            "refused",
            f"session {path.stem} changed while it was being fixed (OpenCode may be running); "
            "nothing was changed",
        )
    written: list[Change] = []
    try:
        for change in planned:
            _apply(change, base / _TEMP)
            written.append(change)
    except OSError as error:
        _put_back(written, base / _TEMP)
        shutil.rmtree(folder, ignore_errors=True)
        return outcome(path, "failed", f"could not write {error}; the session is as it was")

    again = check(path, checked.agent, export_bytes(path))
    if again.error or again.needs_repair:
        _put_back(planned, base / _TEMP)
        shutil.rmtree(folder, ignore_errors=True)
        return outcome(path, "failed", "the repaired session did not read back clean; it is back")
    result.status = "fixed"
    result.backup = folder
    return result


def _apply(change: Change, temporary_folder: Path) -> None:
    if change.new is None:
        with contextlib.suppress(FileNotFoundError):
            change.path.unlink()
        _sync(change.path.parent)
        return
    _replace(change.path, change.new, temporary_folder)


def _replace(target: Path, data: bytes, temporary_folder: Path) -> None:
    """Put ``data`` at ``target`` in one step, from a temporary file outside ``storage/``."""
    from inspector.local import fix as single

    temporary_folder.mkdir(parents=True, exist_ok=True)
    temporary = temporary_folder / f"{target.name}.{os.getpid()}.tmp"
    mode = target.stat().st_mode if target.exists() else 0o644
    try:
        single.write_durably(temporary, data, mode)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(temporary, target)
        _sync(target.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def _put_back(done: list[Change], temporary_folder: Path) -> None:
    for change in reversed(done):
        if change.old is None:
            with contextlib.suppress(FileNotFoundError):
                change.path.unlink()
        else:
            _replace(change.path, change.old, temporary_folder)


def backups(path: Path, backup_dir: Path | None = None) -> list[Path]:
    """The backup sets ``fix`` made of the session ``path`` names, oldest first."""
    folder = backup_base(storage_root(path), backup_dir) / path.stem
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / NOTE).is_file())


def undo(path: Path, *, backup_dir: Path | None = None, force: bool = False) -> Outcome:
    """Put back the newest backup set of the session, if its files are still fix's."""
    from inspector.local import fix as single

    outcome = single.Outcome
    found = backups(path, backup_dir)
    if not found:
        return outcome(path, "refused", f"no backup of the session {path.stem} to restore")
    folder = found[-1]
    try:
        note = orjson.loads((folder / NOTE).read_bytes())
        entries = note["files"]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as error:
        return outcome(path, "refused", f"cannot read the backup's note: {error}")
    for entry in entries:
        target = Path(entry["path"])
        current = target.read_bytes() if target.exists() else None
        expected = entry.get("written_sha256")
        now = _sha256(current) if current is not None else None
        if now != expected and not force:
            return outcome(
                path,
                "refused",
                f"{target.name} changed since fix wrote it (OpenCode wrote more); restoring "
                f"{folder.name} would lose that. Use --force to restore anyway.",
                backup=folder,
            )
    temporary = backup_base(storage_root(path), backup_dir) / _TEMP
    for entry in sorted(entries, key=lambda e: -int(e.get("order", 0))):
        target = Path(entry["path"])
        if entry.get("copy"):
            original = Path(entry["copy"]).read_bytes()
            if _sha256(original) != entry.get("original_sha256"):
                return outcome(path, "refused", f"{folder} is not the copy fix made", backup=folder)
            _replace(target, original, temporary)
        else:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
    shutil.rmtree(folder, ignore_errors=True)
    return outcome(path, "restored", f"restored from {folder}", backup=folder)


def _backup_folder(base: Path, session_id: str, clock: Callable[[], float]) -> Path:
    stamp = datetime.fromtimestamp(clock(), UTC).strftime("%Y%m%dT%H%M%S%fZ")
    candidate = base / session_id / stamp
    n = 1
    while candidate.exists():
        candidate = base / session_id / f"{stamp}-{n}"
        n += 1
    candidate.mkdir(parents=True)
    return candidate


def _sync(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _sweep(folder: Path) -> None:
    """Remove temporary files a killed ``fix`` left (its process is gone)."""
    from inspector.local import fix as single

    if not folder.is_dir():
        return
    for leftover in folder.glob("*.tmp"):
        pid = leftover.name.removesuffix(".tmp").rsplit(".", 1)[-1]
        if pid.isdigit() and not single.alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
