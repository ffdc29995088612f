"""``manage.py watch [FOLDER ...] [--owner USER]``: diagnose sessions as agents write them.

Folders default to ``INSPECTOR_WATCH`` (comma-separated). Each folder is a
project of its own, known by host and path (named after the folder, or after
the folder and its path when that name is taken); every session already there
is read once, then each new or changed file is diagnosed within about a second.
SIGINT or SIGTERM stops it.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from inspector.watch.watcher import Watcher
from inspector.web.signin import ensure_owner


class Command(BaseCommand):
    help = "Follow folders of agent sessions and diagnose each change as it is written."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folders", nargs="*", help="default: the INSPECTOR_WATCH setting")
        parser.add_argument("--owner", default="", help="user name (default: the first superuser)")

    def handle(self, *args: Any, folders: list[str], owner: str, **options: Any) -> None:
        roots = [Path(f) for f in folders] or [Path(f) for f in settings.INSPECTOR_WATCH]
        if not roots:
            raise CommandError("Name a folder to watch, or set INSPECTOR_WATCH.")
        user = self._owner(owner)
        watcher = Watcher(user, roots, say=self.stdout.write)
        if not watcher.folders:
            raise CommandError("None of the folders can be watched.")
        stored = watcher.catch_up()
        names = ", ".join(
            f"{folder.path} (project “{folder.project.name}”)" for folder in watcher.folders
        )
        self.stdout.write(f"Watching {names} ({stored:,} sessions read). Ctrl-C stops.")
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        watcher.run(stop)

    def _owner(self, name: str) -> Any:
        if not name:
            return ensure_owner()[0]
        User = get_user_model()
        try:
            return User.objects.get(**{User.USERNAME_FIELD: name})
        except User.DoesNotExist:
            raise CommandError(f"There is no user named {name!r}.") from None
