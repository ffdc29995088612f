"""Local task workers for ``scan --workers N``: real ``db_worker`` processes on this database.

The workers are started with the database, storage and settings this
process uses (a test database included), so whatever this process enqueued
they see. Each is reaped with ``wait4``, which gives its peak memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlencode

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection

if TYPE_CHECKING:
    from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper

POLL_SECONDS = 0.25


def database_url(database: dict[str, Any]) -> str:
    """``DATABASE_URL`` for the database described by a ``DATABASES`` entry."""
    engine = database["ENGINE"]
    if engine.endswith("sqlite3"):
        return "sqlite://" + quote(str(Path(database["NAME"]).resolve()))
    if engine.endswith("postgresql"):
        user, password = database.get("USER") or "", database.get("PASSWORD") or ""
        auth = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
        host = database.get("HOST") or ""
        port = f":{database['PORT']}" if database.get("PORT") else ""
        query = urlencode({k: str(v) for k, v in (database.get("OPTIONS") or {}).items()})
        return (
            f"postgres://{auth + '@' if auth else ''}{host}{port}/"
            f"{quote(database['NAME'], safe='')}{'?' + query if query else ''}"
        )
    raise ValueError(f"scan workers support SQLite and PostgreSQL, not {engine}")


def worker_env() -> dict[str, str]:
    # The vendor check makes it SQLite's wrapper, which the stubs' connection type is not.
    if connection.vendor == "sqlite" and cast("SQLiteWrapper", connection).is_in_memory_db():
        raise ValueError("worker processes cannot share an in-memory SQLite database")
    env = dict(os.environ)
    env["TASKS_BACKEND"] = "database"
    env["DATABASE_URL"] = database_url(connection.settings_dict)
    # Under override_settings (tests) SETTINGS_MODULE reads None; the variable is set then.
    env.setdefault("DJANGO_SETTINGS_MODULE", settings.SETTINGS_MODULE or "inspector.settings")
    for name, value in storage_env(default_storage).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def storage_env(storage: Any) -> dict[str, str | None]:
    """The variables under which a worker's settings make ``storage`` (``None``: unset them).

    Read from the storage itself, so a worker stores where this process does
    even when that was set in code (tests) rather than by these variables.
    """
    bucket = getattr(storage, "bucket_name", None)
    if bucket:  # an S3-compatible object storage (inspector.web.objectstore)
        env: dict[str, str | None] = {
            "INSPECTOR_S3_BUCKET": bucket,
            "INSPECTOR_S3_ENDPOINT_URL": storage.endpoint_url or "",
            "INSPECTOR_S3_REGION": storage.region_name or "us-east-1",
            "INSPECTOR_S3_PREFIX": storage.location or "",
        }
        if storage.access_key:  # given in settings rather than by the environment
            env["AWS_ACCESS_KEY_ID"] = storage.access_key
            env["AWS_SECRET_ACCESS_KEY"] = storage.secret_key
        return env
    location = getattr(storage, "location", None)
    return {
        "INSPECTOR_S3_BUCKET": None,
        "INSPECTOR_MEDIA_ROOT": str(location) if location else None,
    }


def worker_command() -> list[str]:
    # --batch: leave once the queue is empty; every task was enqueued before
    # the workers started, so an empty queue means each file has been taken.
    return [
        sys.executable,
        "-m",
        "django",
        "worker",
        "--batch",
        "--no-startup-delay",
        "--no-reload",
        "--verbosity",
        "0",
    ]


@dataclass(frozen=True, slots=True)
class WorkerExit:
    code: int
    peak_bytes: int  # the largest resident set the worker had
    cpu_seconds: float  # user and system time it used


def run_workers(count: int, tick: Callable[[], None]) -> list[WorkerExit]:
    """Run ``count`` workers until each has left; ``tick`` runs while they work."""
    env = worker_env()
    # Each worker in a session of its own: under Linux's autogroup scheduling a busy
    # machine's cores are shared out by session, not by process, so workers sharing this
    # command's session got one share between them, two no more CPU than one (issue 29;
    # bench/profile_locks.py --sessions). Ctrl-C reaches this command alone then: the
    # handler below stops the workers (SIGTERM, which db_worker takes as it takes SIGINT).
    processes = [
        # A fixed command line: nothing in it comes from input.
        subprocess.Popen(  # noqa: S603
            worker_command(), cwd=settings.BASE_DIR, env=env, start_new_session=True
        )
        for _ in range(count)
    ]
    results: dict[int, WorkerExit] = {}
    try:
        while len(results) < count:
            for process in processes:
                if process.pid in results:
                    continue
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    process.returncode = os.waitstatus_to_exitcode(status)
                    # ru_maxrss is in KiB on Linux.
                    results[pid] = WorkerExit(
                        process.returncode,
                        usage.ru_maxrss * 1024,
                        usage.ru_utime + usage.ru_stime,
                    )
            tick()
            if len(results) < count:
                time.sleep(POLL_SECONDS)
    except BaseException:
        for process in processes:
            if process.pid not in results:
                process.terminate()
        for process in processes:
            if process.pid not in results:
                process.wait(timeout=30)
        raise
    return [results[process.pid] for process in processes]
