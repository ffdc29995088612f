"""Loaded by every Python process started with this folder on PYTHONPATH (``profile_locks.py``).

With ``LOCKPROF_DIR`` set, records in each process, once Django's apps are ready: the
time each SQLite ``BEGIN`` waited for the write lock (SQLite's busy handler), how long
each transaction then held it (to its COMMIT or ROLLBACK, the COMMIT's own time also
apart), by the first frame of our code that opened it; each SQL statement's time,
inside a transaction or outside one (an autocommit write takes the lock too); the task
worker's time in tasks; and at exit the process's CPU and its time waiting on the run
queue (``/proc/self/schedstat``: ready to run, no core free). One JSON file a process.
Bench-only: nothing of the app imports it.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
import traceback
from typing import Any

OUT = os.environ.get("LOCKPROF_DIR")
SKIP = ("/django/", "contextlib", "sitecustomize", "django_tasks_db/utils")
clock = time.perf_counter
stats: dict[str, Any] = {
    "wait": 0.0,
    "hold": 0.0,
    "commit": 0.0,
    "txns": 0,
    "waits": [],
    "holds": [],
    "task": 0.0,
    "tasks": 0,
    "sites": {},  # site: [transactions, hold, wait]
    "sql": {},  # "IN/OUT statement": [count, seconds]
}
state: dict[str, Any] = {}


def _site() -> str:
    for frame in reversed(traceback.extract_stack(limit=40)[:-2]):
        if not any(part in frame.filename for part in SKIP):
            return f"{'/'.join(frame.filename.split('/')[-2:])}:{frame.name}"
    return "?"


def _patch() -> None:
    from django.db.backends import utils
    from django.db.backends.sqlite3.base import DatabaseWrapper
    from django_tasks_db.management.commands import db_worker

    begin, commit, rollback = (
        DatabaseWrapper._start_transaction_under_autocommit,
        DatabaseWrapper._commit,
        DatabaseWrapper._rollback,
    )

    def timed_begin(self: Any) -> None:
        began = clock()
        begin(self)
        state["began"] = clock()
        waited = state["began"] - began
        stats["wait"] += waited
        stats["waits"].append(waited)
        state["site"] = _site()
        stats["sites"].setdefault(state["site"], [0, 0.0, 0.0])[2] += waited

    def ended(original: Any) -> Any:
        def end(self: Any) -> Any:
            began = clock()
            result = original(self)
            stats["commit"] += clock() - began
            opened = state.pop("began", None)
            if opened is not None:
                held = clock() - opened
                stats["hold"] += held
                stats["holds"].append(held)
                stats["txns"] += 1
                site = stats["sites"].setdefault(state.get("site", "?"), [0, 0.0, 0.0])
                site[0] += 1
                site[1] += held
            return result

        return end

    def statements(original: Any) -> Any:
        def execute(self: Any, sql: Any, *args: Any, **kwargs: Any) -> Any:
            began = clock()
            try:
                return original(self, sql, *args, **kwargs)
            finally:
                where = "IN " if "began" in state else "OUT "
                key = where + " ".join(str(sql).split())[:80]
                entry = stats["sql"].setdefault(key, [0, 0.0])
                entry[0] += 1
                entry[1] += clock() - began

        return execute

    def run_task(self: Any, result: Any) -> None:
        began = clock()
        try:
            run(self, result)
        finally:
            stats["task"] += clock() - began
            stats["tasks"] += 1

    DatabaseWrapper._start_transaction_under_autocommit = timed_begin
    DatabaseWrapper._commit = ended(commit)
    DatabaseWrapper._rollback = ended(rollback)
    utils.CursorWrapper.execute = statements(utils.CursorWrapper.execute)
    utils.CursorWrapper.executemany = statements(utils.CursorWrapper.executemany)
    run = db_worker.Worker.run_task
    db_worker.Worker.run_task = run_task


def _own_sessions() -> None:
    """With ``LOCKPROF_SETSID=1``, the scan command starts each worker in a session of
    its own, as it now does anyway (for code before that change): under the kernel's
    autogroup scheduling each session, not each process, gets an equal share of a busy
    machine's cores, so two workers of one session get no more CPU than one."""
    import subprocess

    from inspector.scan import workers

    class Popen(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["start_new_session"] = True
            super().__init__(*args, **kwargs)

    workers.subprocess = type("Subprocess", (), {"Popen": Popen})  # type: ignore[assignment]


def _dump() -> None:
    stats["life"] = clock() - START
    stats["cpu"] = time.process_time()
    try:
        stats["runqueue"] = int(open("/proc/self/schedstat").read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        stats["runqueue"] = 0.0
    stats["argv"] = sys.argv
    try:
        stats["autogroup"] = open("/proc/self/autogroup").read().split()[0]
    except (OSError, IndexError):
        stats["autogroup"] = "?"
    with open(os.path.join(OUT or ".", f"{os.getpid()}.json"), "w") as file:
        json.dump(stats, file)


try:
    import django.apps.registry
except ImportError:  # a Python without Django (not the venv's)
    OUT = None

if OUT:
    START = clock()
    populate = django.apps.registry.Apps.populate

    def patched_populate(self: Any, installed: Any) -> None:
        populate(self, installed)
        if not state.get("patched"):
            state["patched"] = True
            _patch()
            if os.environ.get("LOCKPROF_SETSID") == "1":
                _own_sessions()

    django.apps.registry.Apps.populate = patched_populate  # type: ignore[method-assign]
    atexit.register(_dump)
