"""Following watched folders: every new or changed session diagnosed about a second later.

The watcher asks the operating system for changes (``watchfiles``, a
maintained wrapper of the Rust ``notify`` crate: inotify on Linux, FSEvents
on macOS) instead of polling, and reads each change through
``local.follow.Follower``, which reads only what was appended since the last
time. Only files whose names are sessions' (``.jsonl``, ``.json``) are read;
``fix``'s own backups and temporary files are not. The watcher writes nothing
in the folders it watches.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import watchfiles
from django.utils import timezone

from inspector.local.fix import BACKUP_MARK
from inspector.local.follow import Follower
from inspector.scan.sources import is_session_name
from inspector.watch import ingest
from inspector.watch.models import WatchedFile, WatchedFolder

log = logging.getLogger(__name__)

# Changes arriving within this many milliseconds are handled together.
DEBOUNCE_MS = 300


def is_watched_name(path: Path) -> bool:
    name = path.name
    return is_session_name(name) and BACKUP_MARK not in name and not name.startswith(".")


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
                paths = sorted(p for p in root.rglob("*") if p.is_file() and is_watched_name(p))
            except OSError as error:
                self.say(f"warning: cannot list {root}: {error}")
                continue
            for path in paths:
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
        if folder is None or not is_watched_name(path):
            return None
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
            for path in sorted({Path(name) for _, name in changes}):
                try:
                    self.changed(path)
                except OSError as error:
                    self.say(f"warning: cannot read {path}: {error}")
