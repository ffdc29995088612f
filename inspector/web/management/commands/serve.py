"""Run the web server and one task worker together (what `make run` does).

On the first start it creates the owner account; every start prints a fresh
one-time sign-in link for it. Ctrl-C stops both processes.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from inspector.web.signin import ensure_owner, signin_path
from inspector.web.store import sweep_orphans


class Command(BaseCommand):
    help = "Serve the app on HOST:PORT with one task worker beside it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="do not start a task worker")

    def handle(self, *args: Any, host: str, port: int, no_worker: bool, **options: Any) -> None:
        # A server killed mid-upload may have left stored bytes without a row.
        sweep_orphans(settings.INSPECTOR_ORPHAN_GRACE_SECONDS)
        owner, created = ensure_owner()
        if created:
            self.stdout.write(f"Created the owner account '{owner.get_username()}'.")
        base = f"http://{host}:{port}"
        self.stdout.write(
            self.style.SUCCESS(
                f"\nSign in (one-time link, valid 15 minutes):\n  {base}{signin_path(owner)}\n"
            )
        )
        self.stdout.write(
            f"Then open {base}/ and drop a transcript on the page.\n"
            "Ctrl-C stops the server and the worker.\n"
        )
        worker = None
        if not no_worker:
            worker = subprocess.Popen([sys.executable, "manage.py", "worker", "--queue-name", "*"])
        try:
            call_command("runserver", f"{host}:{port}", use_reloader=False, use_threading=True)
        except KeyboardInterrupt:
            pass
        finally:
            if worker is not None:
                worker.terminate()
                try:
                    worker.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    worker.kill()
