"""django-tasks-db's ``db_worker``, with heartbeats, so a killed worker's task runs again at once.

A worker killed outright (SIGKILL, out of memory, a machine lost) leaves its
task marked RUNNING forever: no other worker takes it, and a scan waits for a
file that nobody processes. django-tasks-db records which worker claimed a
task (``worker_ids``) but not whether that worker still lives, so each worker
started by this command also beats (``WorkerBeat``, every
``INSPECTOR_WORKER_BEAT_SECONDS``) and, at start and on every beat, queues
again each RUNNING task whose worker is dead:

- on this machine, when its process is gone (seen at once, a restart included);
- anywhere, when its beat is older than three beats (within a minute).

A task claimed by a worker that never beat (a plain ``db_worker``) is queued
again once RUNNING for ``INSPECTOR_TASK_STALE_SECONDS``, as before. The start
also removes stored bytes such a kill left without their row. Every task of
this project is idempotent, so a task that was in fact still running and runs
again does its work once.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import socket
import threading
from argparse import ArgumentParser
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, connections
from django.utils import timezone
from django.utils.crypto import get_random_string
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand
from django_tasks_db.models import DBTaskResult

from inspector.web.models import WorkerBeat
from inspector.web.store import sweep_orphans

log = logging.getLogger(__name__)

# A beat this many beats old means the worker is gone.
MISSED_BEATS = 3
# Beats of workers gone this long are removed.
FORGET_SECONDS = 24 * 60 * 60
# How long a worker keeps its database connection where the settings keep none
# (SQLite's default): db_worker closes "old" connections twice a task, and
# opening one again (its PRAGMAs included) cost a scan about a tenth of its CPU.
WORKER_CONN_MAX_AGE = 600


def new_worker_id() -> str:
    """``host:pid:random``, at most 64 characters: whose process it is, and where."""
    return f"{this_host()}:{os.getpid()}:{get_random_string(8)}"


def this_host() -> str:
    """This machine as worker ids name it: its host name and a token of its kernel's
    boot and its process namespace, so that two machines (or containers) that share
    a host name never take each other's processes for their own (a pid is only
    looked up where it was given)."""
    name = socket.gethostname()[:30].replace(":", "-")
    return f"{name}~{_process_space()}"


@functools.cache
def _process_space() -> str:
    parts = []
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as handle:
            parts.append(handle.read().strip())
    except OSError:
        pass
    try:
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino).encode())
    except OSError:
        pass
    if not parts:  # no /proc: the host name alone, as before
        return "0"
    return hashlib.sha256(b"/".join(parts)).hexdigest()[:8]


def requeue_orphaned_tasks(beat_seconds: float, stale_seconds: int, me: str = "") -> int:
    """Put back in the queue each RUNNING task whose worker is dead; returns how many.

    Its worker is the last of its ``worker_ids``. Dead: a process of this
    machine that no longer exists, or a beat older than ``MISSED_BEATS``
    beats; a worker that never beat is judged by the task's age instead.
    """
    cutoff = timezone.now() - timedelta(seconds=beat_seconds * MISSED_BEATS)
    running = list(
        DBTaskResult.objects.filter(status="RUNNING").values_list("id", "worker_ids", "started_at")
    )
    claimers = {ids[-1] for _, ids, _ in running if ids}
    beats = dict(
        WorkerBeat.objects.filter(worker_id__in=claimers).values_list("worker_id", "beat_at")
    )
    stale_before = timezone.now() - timedelta(seconds=stale_seconds)
    dead = []
    for task_id, ids, started_at in running:
        worker = ids[-1] if ids else ""
        if worker == me:
            continue
        if worker in beats:
            gone = beats[worker] < cutoff or _process_gone(worker)
        else:
            gone = _process_gone(worker) or started_at is None or started_at <= stale_before
        if gone:
            dead.append(task_id)
    # Only from RUNNING: a task its worker finished meanwhile is left alone.
    count = DBTaskResult.objects.filter(id__in=dead, status="RUNNING").update(
        status="READY", started_at=None
    )
    if count:
        log.warning("requeued %d task(s) whose worker died while running them", count)
    return count


def _process_gone(worker_id: str) -> bool:
    host, _, rest = worker_id.partition(":")
    pid, _, _ = rest.partition(":")
    if host != this_host() or not pid.isdigit():
        return False  # another machine's, or not one of ours: its beat decides
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


class Heart(threading.Thread):
    """Beats for one worker and queues again the tasks of dead ones, until stopped."""

    def __init__(self, worker_id: str, seconds: float) -> None:
        super().__init__(name="worker-heartbeat", daemon=True)
        self.worker_id = worker_id
        self.seconds = seconds
        self.stopped = threading.Event()

    def beat(self) -> None:
        now = timezone.now()
        WorkerBeat.objects.update_or_create(worker_id=self.worker_id, defaults={"beat_at": now})
        requeue_orphaned_tasks(self.seconds, settings.INSPECTOR_TASK_STALE_SECONDS, self.worker_id)
        WorkerBeat.objects.filter(beat_at__lt=now - timedelta(seconds=FORGET_SECONDS)).delete()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.seconds):
                try:
                    self.beat()
                except DatabaseError:
                    log.exception("the worker's heartbeat failed; trying again")
                    close_old_connections()
        finally:
            connection.close()


def keep_connections() -> None:
    """Let this process keep its database connections between tasks (checked before reuse)."""
    for alias in connections:
        settings_dict = connections[alias].settings_dict
        if not settings_dict.get("CONN_MAX_AGE"):
            settings_dict["CONN_MAX_AGE"] = WORKER_CONN_MAX_AGE
            settings_dict["CONN_HEALTH_CHECKS"] = True


class Command(DbWorkerCommand):
    help = "Run a task worker (db_worker) that beats and requeues the tasks of dead workers."

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        # Ours unless given: whose process it is, so a restart sees at once that it died.
        parser.set_defaults(worker_id=None)

    def handle(self, *args: Any, **options: Any) -> None:
        keep_connections()
        options["worker_id"] = options.get("worker_id") or new_worker_id()
        heart = Heart(options["worker_id"], settings.INSPECTOR_WORKER_BEAT_SECONDS)
        heart.beat()
        requeue_orphaned_tasks(
            heart.seconds, settings.INSPECTOR_TASK_STALE_SECONDS, heart.worker_id
        )
        sweep_orphans(settings.INSPECTOR_ORPHAN_GRACE_SECONDS)
        heart.start()
        try:
            super().handle(*args, **options)
        finally:
            heart.stopped.set()
            WorkerBeat.objects.filter(worker_id=heart.worker_id).delete()
