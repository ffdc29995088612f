"""Following watched folders: every new or changed session diagnosed about a second later.

The watcher asks the operating system for changes (``watchfiles``, a
maintained wrapper of the Rust ``notify`` crate: inotify on Linux, FSEvents
on macOS) instead of polling, and reads each change through
``local.follow.Follower``, which reads only what was appended since the last
time. Only files whose names are sessions' (``.jsonl``, ``.json``) are read;
``fix``'s own backups and temporary files, the files agents keep beside their
sessions that are none (``agents.never_a_session``; a session's facts beside it,
``agents.facts_of_a_session``), and anything in a hidden folder or a backup folder
under the watched one, are not. An OpenCode session is many
files: a change to any of them is read as its whole session, under its info
file's name; so is an OpenHands session or an OpenHands CLI conversation
(its ``events/`` folder, one event a file), under its ``events`` folder's
name; and the sessions of an agent's database (OpenCode's ``opencode.db``, Kilo's
``kilo.db``, Goose's ``sessions.db``, Hermes's ``state.db``, Amazon Q's and Kiro CLI's
``data.sqlite3``), each under ``<db>/<sessionID>``, when the database or its
journal changes. The watcher writes nothing on disk, in the folders it watches
or anywhere else (what it finds goes to the
database).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import watchfiles
from django.utils import timezone

from inspector.local import opencode, openhands, openhands_cli, stores
from inspector.local.agents import facts_of_a_session, never_a_session
from inspector.local.databases import DATABASES
from inspector.local.fix import BACKUP_MARK
from inspector.local.follow import Follower
from inspector.local.outcome import StoreError
from inspector.local.sessions import is_session_name
from inspector.watch import ingest
from inspector.watch.models import WatchedFile, WatchedFolder

log = logging.getLogger(__name__)


# The sessions kept as a folder of event files, each read whole as its ``events`` folder:
# the OpenHands CLI's conversations (event-<index>-<id>.json, base_state.json beside them)
# and OpenHands' sessions (<id>.json); how each finds a file's folder, and reads it.
_EVENT_FOLDERS: tuple[tuple[Callable[[Path], Path | None], Callable[[Path], bytes]], ...] = (
    (openhands_cli.session_of, openhands_cli.STORE.read),
    (openhands.session_of, openhands.STORE.read),
)


def events_of(path: Path) -> tuple[Path, Callable[[Path], bytes]] | None:
    """The ``events`` folder of the session an event file is of, and how it is read."""
    for session_of, export in _EVENT_FOLDERS:
        events = session_of(path)
        if events is not None:
            return events, export
    return None


def _events_folder(path: Path) -> Path | None:
    found = events_of(path)
    return found[0] if found else None


def database_of(path: Path) -> Path | None:
    """The agent's database a file is (or is the journal of), if it is one: one of
    ``databases.DATABASES``, the list scans and uploads read too. A change to the database
    or its journal reads its sessions again (each named ``<db>/<sessionID>``)."""
    name = path.name
    for suffix in ("-wal", "-shm", "-journal"):
        name = name.removesuffix(suffix)
    return path.with_name(name) if name in DATABASES else None


# Changes arriving within this many milliseconds are handled together.
DEBOUNCE_MS = 300


def is_watched(path: Path, root: Path) -> bool:
    """A file under ``root`` the watcher reads: a session's name, not one of fix's own files."""
    try:
        folders = path.relative_to(root).parts[:-1]
    except ValueError:
        return False
    name = path.name
    if database_of(path) is not None:  # an agent's database: its sessions are read from it
        return not any(part.startswith(".") or part == opencode.BACKUPS for part in folders)
    if not is_session_name(name) or BACKUP_MARK in name or name.startswith("."):
        return False
    if never_a_session(name):  # an index, a log or a copy an agent keeps beside its sessions
        return False
    if facts_of_a_session(path):  # a session's facts beside it (Kiro's <id>.json)
        return False
    return not any(part.startswith(".") or part == opencode.BACKUPS for part in folders)


class Watcher:
    def __init__(
        self,
        owner: Any,
        roots: Iterable[Path],
        follower: Follower | None = None,
        say: Callable[[str], None] = log.info,
    ) -> None:
        self.owner = owner
        self.follower = follower or Follower()
        self.say = say
        self.folders: list[WatchedFolder] = []
        # The sha256 of each OpenCode session's last export read, by its info file.
        self._exports: dict[str, bytes] = {}
        for root in roots:
            root = root.expanduser()
            if not root.is_dir():
                say(f"warning: {root} is not a folder that can be read; not watched")
                continue
            self.folders.append(ingest.register(owner, root))

    def catch_up(self) -> int:
        """Read every session file already in the folders; how many were stored."""
        done = 0
        for folder in self.folders:
            root = Path(folder.path)
            try:
                paths = sorted(p for p in root.rglob("*") if p.is_file() and is_watched(p, root))
            except OSError as error:
                self.say(f"warning: cannot list {root}: {error}")
                continue
            read: set[Path] = set()
            for path in paths:
                if opencode.is_record_file(path):
                    continue  # its session is read whole, from its info file, which is walked too
                found = events_of(path)
                if found is not None:  # an OpenHands session is read whole, once
                    if found[0] in read:
                        continue
                    read.add(found[0])
                done += self.changed(path) is not None
        return done

    def folder_of(self, path: Path) -> WatchedFolder | None:
        for folder in self.folders:
            if path.is_relative_to(folder.path):
                return folder
        return None

    def changed(self, path: Path) -> WatchedFile | None:
        """Read and store one file that may have changed; ``None`` if nothing was new."""
        path = path.resolve()
        folder = self.folder_of(path)
        if folder is None or not is_watched(path, Path(folder.path)):
            return None
        db = database_of(path)
        if db is not None:
            return self._database(folder, db)
        session = opencode.session_of(path)
        if session is not None:
            return self._opencode(folder, session)
        found = events_of(path)
        if found is not None:
            return self._opencode(folder, *found)
        if not path.exists():
            self.follower.forget(path)
            ingest.forget(folder, path)
            return None
        update = self.follower.read(path)
        if update is None:
            return None
        row = ingest.ingest(folder, path, update.data)
        verdict = row.error or ("needs repair" if row.needs_repair else "clean")
        self.say(f"{row.relative_path}: {verdict} (+{update.appended:,} bytes)")
        return row

    def _opencode(
        self,
        folder: WatchedFolder,
        session: Path,
        export: Callable[[Path], bytes] = opencode.export_bytes,
    ) -> WatchedFile | None:
        """A session of many files read whole: OpenCode's (its info, messages and parts) as
        its info file, OpenHands' (``export``: its event files) as its ``events`` folder."""
        if not session.is_relative_to(folder.path):
            return None  # its info file is not in the watched folder: it has no row here
        try:
            data = export(session)
        except FileNotFoundError:
            ingest.forget(folder, session)
            return None
        except opencode.StoreError as error:  # not read as a session: say why, offer no repair
            relative = session.relative_to(folder.path).as_posix()
            row, _ = WatchedFile.objects.update_or_create(
                folder=folder,
                relative_path=relative,
                defaults={"error": str(error), "needs_repair": False, "changed": timezone.now()},
            )
            self._exports.pop(session.as_posix(), None)
            self.say(f"{relative}: {error}")
            return row
        key, digest = session.as_posix(), hashlib.sha256(data).digest()
        if self._exports.get(key) == digest:
            return None
        self._exports[key] = digest
        row = ingest.ingest(folder, session, data)
        self.say(
            f"{row.relative_path}: {row.error or ('needs repair' if row.needs_repair else 'clean')}"
        )
        return row

    def _database(self, folder: WatchedFolder, db: Path) -> WatchedFile | None:
        """Every session of an agent's database whose rows changed, each read whole."""
        if not db.is_file() or not db.is_relative_to(folder.path):
            return None
        try:
            listed = DATABASES[db.name](db)
        except (OSError, sqlite3.Error, StoreError) as error:
            self.say(f"warning: cannot read {db}: {error}")
            return None
        last = None
        for session, _, _ in listed:
            row = self._opencode(folder, session, stores.for_path(session).read)
            last = row or last
        return last

    def run(self, stop: threading.Event) -> None:
        """Handle changes until ``stop`` is set."""
        roots = [folder.path for folder in self.folders]
        if not roots:
            self.say("no folder to watch")
            return
        for changes in watchfiles.watch(
            *roots, stop_event=stop, debounce=DEBOUNCE_MS, step=50, yield_on_timeout=True
        ):
            WatchedFolder.objects.filter(pk__in=[f.pk for f in self.folders]).update(
                seen=timezone.now()
            )
            # An OpenCode session is read once however many of its files changed.
            paths = {Path(name) for _, name in changes}
            for path in sorted(
                {database_of(p) or opencode.session_of(p) or _events_folder(p) or p for p in paths}
            ):
                try:
                    self.changed(path)
                except OSError as error:
                    self.say(f"warning: cannot read {path}: {error}")
