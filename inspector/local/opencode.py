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

This module is the ``Files`` store kind (``store.LocalStore``); ``opencode_db``
is the ``Database`` one. What may be written is stated once (``confinement``,
``confine.Confined``):
the storage folder and the backup folder, resolved as found on disk. The
names of the files written and removed are the names found on disk: ``read``
refuses a session any of whose records is a link, sits in a linked folder,
or has an ``id`` that is not its file's name (a plain name), or a
``sessionID``/``messageID`` that is not the folder it is in. The records a
repair adds (a note's message and part) are named by their new ids, which
must have OpenCode's own shape (``msg_``/``prt_`` and letters and digits),
and go only into this session's ``message/<sessionID>/`` and the part folder
of one of its messages. ``undo`` writes only the files the note names that
are this session's own under the storage folder, from copies inside the
backup set.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

import orjson

from inspector.local import files
from inspector.local.agents import BY_NAME
from inspector.local.confine import Confined, Refused, absolute, safe_name
from inspector.local.files import BACKUPS as BACKUPS  # its old home: callers read it here
from inspector.local.files import NOTE as NOTE
from inspector.local.files import Change
from inspector.local.outcome import Outcome, alive
from inspector.local.outcome import StoreError as StoreError  # its old home: callers read it here
from inspector.local.store import LocalStore, Run, repair_of

# The id OpenCode gives a record it adds (``Identifier.ascending``): a prefix, ``_``, base62.
NEW_ID = re.compile(r"(msg|prt)_[0-9A-Za-z]{1,64}")


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


def is_record_file(path: Path) -> bool:
    """A message or part file of an OpenCode storage folder (its session is read whole)."""
    return (
        path.suffix == ".json"
        and path.parent.parent.name in ("message", "part")
        and (storage_root(path) / "session").is_dir()
    )


def session_of(path: Path) -> Path | None:
    """The info file of the session a storage file (its info, a message, a part) belongs to."""
    kind, root = path.parent.parent.name, storage_root(path)
    if path.suffix != ".json" or not (root / "session").is_dir():
        return None
    if kind == "session":
        return path
    if kind == "part":  # part/<messageID>/<partID>.json: its message says its session
        message = next(
            iter(sorted(root.glob(f"message/*/{glob_escape(path.parent.name)}.json"))), None
        )
        if message is None:
            return None
        path = message
    elif kind != "message":
        return None
    found = sorted((root / "session").glob(f"*/{glob_escape(path.parent.name)}.json"))
    return found[0] if found else None


DB_NAMES = ("opencode*.db",)


def databases(root: Path, names: tuple[str, ...] = DB_NAMES) -> list[Path]:
    """The SQLite databases beside the storage folder named as ``names`` (glob patterns,
    in their order; each pattern's matches sorted): OpenCode's, or a fork's (Kilo's)."""
    found: list[Path] = []
    for pattern in names:
        try:
            more = sorted(root.parent.glob(pattern))
        except OSError:
            continue
        found += [db for db in more if db not in found]
    return found


def database(root: Path, names: tuple[str, ...] = DB_NAMES) -> Path | None:
    """OpenCode's SQLite database beside the storage folder, where it has one."""
    found = databases(root, names)
    return found[0] if found else None


def is_db_session(path: Path) -> bool:
    """A session named inside OpenCode's database: ``<data>/opencode.db/<sessionID>``."""
    return path.parent.suffix == ".db" and path.name.startswith("ses") and path.parent.is_file()


def _connect(db: Path) -> sqlite3.Connection:
    """A connection that only reads: OpenCode may hold the database open (WAL), and it is
    never written here.

    A read-only (``mode=ro``) connection to a WAL database makes its ``-wal`` and ``-shm``
    beside it when they are not there, and, unable to write, leaves them when it closes: a
    ``list`` or a refused ``fix`` would leave two files by the agent's database. So where the
    database is in WAL mode and has no ``-wal`` or ``-journal`` (no one has it open, nothing
    waits to be checkpointed), it is opened as a writer that may not write (``query_only``):
    closing it last removes the journal files it made, and writes nothing into the database."""
    db = db.resolve()
    if _wal_mode(db) and not any(
        db.with_name(db.name + suffix).exists() for suffix in ("-wal", "-journal")
    ):
        connection = sqlite3.connect(f"{db.as_uri()}?mode=rw", uri=True, timeout=5)
        try:
            connection.execute("PRAGMA query_only = 1")
        except sqlite3.Error:
            connection.close()
        else:
            return connection
    return sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)


def _wal_mode(db: Path) -> bool:
    """Whether the file's header says a WAL database (its bytes 18-19 are 2)."""
    try:
        if not db.is_file():
            return False
        with db.open("rb") as handle:
            header = handle.read(20)
    except OSError:
        return False
    return header[:16] == b"SQLite format 3\x00" and header[18:20] == b"\x02\x02"


def db_sessions(db: Path) -> list[tuple[Path, int, float]]:
    """Each session in the database: its name, its size (parts) and its last write."""
    query = (
        "SELECT s.id, s.time_updated, COUNT(p.id), MAX(p.time_updated) "
        "FROM session s LEFT JOIN part p ON p.session_id = s.id GROUP BY s.id ORDER BY s.id"
    )
    # Its event-sourced sessions (opencode_v2): their session_message rows count too.
    projected = (
        "SELECT session_id, COUNT(id), MAX(time_updated) FROM session_message GROUP BY session_id"
    )
    with contextlib.closing(_connect(db)) as connection:
        rows = connection.execute(query).fetchall()
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
        more = connection.execute(projected).fetchall() if "session_message" in tables else []
    extra = {str(sid): (int(count), int(newest or 0)) for sid, count, newest in more}
    out: list[tuple[Path, int, float]] = []
    for session_id, updated, parts, part_updated in rows:
        count, projected_updated = extra.get(str(session_id), (0, 0))
        newest = max(int(updated or 0), int(part_updated or 0), projected_updated)
        out.append((db / str(session_id), int(parts) + count, newest / 1000))
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


def _load(path: Path, folder: str, fields: dict[str, str]) -> Record:
    """One record file; its ``id`` must be its file's name, and ``fields`` its folders'."""
    data, value = files.read_json(path)
    if not isinstance(value, dict):
        raise StoreError(f"{path} is not a JSON object")
    try:
        safe_name(path.stem, f"the {folder} file name")
    except Refused as refused:
        raise StoreError(f"{path}: {refused}") from None
    if value.get("id") != path.stem:
        raise StoreError(
            f"{path}: its id {value.get('id')!r} is not its file's name {path.stem!r}; "
            "a session whose records' ids and file names disagree is not read"
        )
    for key, expected in fields.items():
        if key in value and value[key] != expected:
            raise StoreError(
                f"{path}: its {key} {value[key]!r} is not the folder it is in ({expected!r})"
            )
    return Record(path, data, value)


def _json_files(folder: Path) -> list[Path]:
    if folder.is_symlink():
        raise StoreError(f"{folder} is a symbolic link; fix does not follow links")
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
    except FileNotFoundError:
        return []


def _check_folders(root: Path, path: Path) -> None:
    """No folder between the storage folder and the session's files is a link."""
    for folder in (root / "session", path.parent, root / "message", root / "part"):
        if folder.is_symlink():
            raise StoreError(f"{folder} is a symbolic link; fix does not follow links")


def read(path: Path) -> Store:
    """The session whose info file is ``path``, with its messages and parts."""
    root = storage_root(path)
    _check_folders(root, path)
    store = Store(root, _load(path, "session", {}))
    session_id = path.stem
    for message_path in _json_files(root / "message" / session_id):
        message = _load(message_path, "message", {"sessionID": session_id})
        fields = {"sessionID": session_id, "messageID": message_path.stem}
        part_paths = _json_files(root / "part" / message_path.stem)
        store.messages.append((message, [_load(p, "part", fields) for p in part_paths]))
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


def _as_opencode_writes(value: Any, like: bytes | None) -> bytes:
    out = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    return out + b"\n" if like is not None and like.endswith(b"\n") else out


def _new_name(record_id: object) -> str:
    """The file name of a record the repair adds: its id, if it has OpenCode's shape."""
    if not isinstance(record_id, str) or not NEW_ID.fullmatch(record_id):
        raise StoreError(f"the repair adds a record whose id {record_id!r} is not OpenCode's")
    return f"{record_id}.json"


def changes(store: Store, repaired: bytes) -> list[Change]:
    """The files to write, add and remove for the repaired export ``repaired``.

    A record already on disk is written back to the file it was read from;
    one the repair adds is named by ``_new_name``.
    """
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
            target = store.root / "message" / store.session_id / _new_name(message_id)
            added_messages.append(Change(target, None, _as_opencode_writes(info, None)))
        elif info != found[0].value:
            old = found[0]
            out.append(Change(old.path, old.data, _as_opencode_writes(info, old.data)))
        for part in item["parts"]:
            existing = parts.get(str(part["id"]))
            if existing is None:
                if found is None:
                    _new_name(message_id)  # the folder of a new message's parts: checked above
                target = store.root / "part" / message_id / _new_name(part.get("id"))
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


def confinement(path: Path, backup_dir: Path | None = None) -> Confined:
    """The storage folder (its ``session/``, ``message/``, ``part/``) and the backup folder."""
    root = storage_root(absolute(path)).resolve()
    return Confined.to(root, backup_base(root, backup_dir))


def backup_base(root: Path, backup_dir: Path | None) -> Path:
    """Where backup sets go: ``backup_dir``, else beside the storage folder; resolved."""
    return (absolute(backup_dir) if backup_dir else root.parent / BACKUPS).resolve()


def _fix(path: Path, confined: Confined, run: Run) -> Outcome:
    outcome = Outcome
    root, base = confined.roots
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
    run = replace(run, agent=run.agent or BY_NAME["opencode"])
    dry_run, clock = run.dry_run, run.clock
    _sweep(base / files.TEMP, confined)
    try:
        before = _stamps(path)
        store = read(path)
    except (OSError, StoreError) as error:
        reason = f"cannot read the session {path.stem}: {error}; nothing was changed"
        return outcome(path, "refused", reason)
    newest = max(stamp[1] for stamp in before.values()) / 1e9
    checked, repaired = repair_of(
        path,
        store.export_bytes(),
        run,
        newest,
        name=path.stem,
        what=f"session {path.stem}",
        who="OpenCode",
    )
    planned, result = files.would_fix(path, checked, lambda: changes(store, repaired), confined)
    if dry_run:
        return result
    folder = files.backup_folder(base, store.session_id, clock, confined)
    note = {
        "original": str(path),
        "storage": str(root),
        "written_at": datetime.fromtimestamp(clock(), UTC).isoformat(),
    }

    def copy_at(n: int, change: Change) -> Path:
        return folder / "files" / change.path.relative_to(root)

    files.write_backup(folder, note, planned, copy_at, confined, ordered=True)
    return files.write_checked(
        result,
        planned,
        folder,
        confined,
        unchanged=lambda: _stamps(path) == before,
        read=export_bytes,
        name=path.stem,
        who="OpenCode",
    )


def backups(path: Path, backup_dir: Path | None = None) -> list[Path]:
    """The backup sets ``fix`` made of the session ``path`` names, oldest first."""
    path = absolute(path)
    root = storage_root(path).resolve()
    return files.backup_sets(backup_base(root, backup_dir) / path.stem)


def _session_file_of(root: Path, session_id: str, messages: set[str], target: Path) -> bool:
    """``target`` is a file of the session ``session_id`` under ``root``: its info, one of
    its messages, or a part of one of ``messages`` (its own): the only files ``undo`` writes."""
    try:
        parts = target.relative_to(root).parts
    except ValueError:
        return False
    if len(parts) != 3 or not parts[2].endswith(".json"):
        return False
    kind, folder, name = parts
    try:
        safe_name(folder), safe_name(name.removesuffix(".json"))
    except Refused:
        return False
    if kind == "session":
        return name == f"{session_id}.json"
    if kind == "message":
        return folder == session_id
    return kind == "part" and folder in messages


def _undo(path: Path, confined: Confined, backups: list[Path], force: bool) -> Outcome:
    root = confined.roots[0]
    folder, note = files.newest_note(backups, path.stem, confined)
    _, targets, copies = note
    # Its messages: those on disk now, and those fix added (the note names them).
    messages = {p.stem for p in _json_files(root / "message" / path.stem)}
    messages |= {t.stem for t in targets if t.parent == root / "message" / path.stem}
    for target, copy in zip(targets, copies, strict=True):
        if not _session_file_of(root, path.stem, messages, target):
            stray, what = target, f"a file of the session {path.stem}"
        elif copy is not None and not copy.is_relative_to(folder / "files"):
            stray, what = copy, f"a copy inside {folder}"
        else:
            continue
        reason = f"the backup's note names {stray}, which is not {what}; nothing was changed"
        return Outcome(path, "refused", reason, backup=folder)
    return files.put_back_copies(path, folder, note, confined, force=force, who="OpenCode")


def _sweep(folder: Path, confined: Confined) -> None:
    """Remove temporary files a killed ``fix`` left (its process is gone)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for leftover in folder.glob("*.tmp"):
        pid = leftover.name.removesuffix(".tmp").rsplit(".", 1)[-1].split("-")[0]
        if pid.isdigit() and not alive(int(pid)):
            confined.unlink(leftover)


class Files(LocalStore):
    """OpenCode's storage folder: a session is its info file and its messages' and parts' files."""

    owns = staticmethod(is_session_file)
    stat = staticmethod(stat)
    read = staticmethod(export_bytes)
    confinement = staticmethod(confinement)
    backups = staticmethod(backups)

    def locate(self, path: Path, backup_dir: Path | None) -> tuple[Confined, Path]:
        safe_name(path.stem, "the session id")
        confined = confinement(path, backup_dir)
        return confined, confined.check(confined.roots[0] / path.relative_to(storage_root(path)))

    repair = staticmethod(_fix)
    restore = staticmethod(_undo)
    whole = "the session"


STORE = Files()
