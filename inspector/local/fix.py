"""Repair one session in place, so that the agent resumes it; and undo that.

The console command's ``fix`` and ``undo`` call this module. It names no
store kind: ``stores.for_path`` says which store (``store.LocalStore`` and
its kinds) the session is in, and that store fixes it, in the way the
``store`` module's docstring describes for one file and ``opencode`` and
``opencode_db`` describe for OpenCode's folder and database.

Where it may write is stated once, by ``confinement``: the folder that holds
the session file (resolved as found on disk) and the backup folder, or, for
OpenCode, its storage folder (or database) and its backup folder. Every
write, rename and removal goes through that ``confine.Confined``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from inspector.local import stores
from inspector.local.agents import Agent
from inspector.local.confine import Confined, absolute
from inspector.local.outcome import Outcome, first_line
from inspector.local.store import _TEMP_MARK, BACKUP_MARK, NOTE_SUFFIX, QUIET_SECONDS, Run


def fix(
    path: Path,
    agent: Agent | None = None,
    *,
    dry_run: bool = False,
    backup_dir: Path | None = None,
    quiet_seconds: float = QUIET_SECONDS,
    clock: Callable[[], float] = time.time,
) -> Outcome:
    """Repair ``path`` in place (see ``store``'s docstring); never raises for a bad file."""
    path = absolute(path)  # not resolved: a link in the session's own place is refused
    run = Run(agent, dry_run, quiet_seconds, clock)
    return stores.for_path(path).fix(path, run, backup_dir)


def confinement(path: Path, backup_dir: Path | None = None) -> Confined:
    """The folders ``fix`` and ``undo`` of the session ``path`` may write in, and nothing else.

    One session file: the folder holding it and the backup folder (the same
    folder unless ``backup_dir``). OpenCode's storage: the storage folder
    (its ``session/``, ``message/``, ``part/``) and the backup folder beside
    it; OpenCode's database: the folder holding the database, and the backup
    folder.
    """
    path = absolute(path)
    return stores.for_path(path).confinement(path, backup_dir)


def undo(path: Path, *, backup_dir: Path | None = None, force: bool = False) -> Outcome:
    """Put back the newest backup ``fix`` made of ``path``, if the file is still fix's output."""
    path = absolute(path)
    return stores.for_path(path).undo(path, backup_dir=backup_dir, force=force)


def backups_of(path: Path, backup_dir: Path | None = None) -> list[Path]:
    """The backups ``fix`` made of ``path``, oldest first."""
    path = absolute(path)
    return stores.for_path(path).backups(path, backup_dir)


__all__ = [
    "BACKUP_MARK",
    "NOTE_SUFFIX",
    "QUIET_SECONDS",
    "_TEMP_MARK",
    "Outcome",
    "backups_of",
    "confinement",
    "first_line",
    "fix",
    "undo",
]
