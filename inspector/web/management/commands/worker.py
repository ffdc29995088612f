"""django-tasks-db's ``db_worker``, recovering from killed workers first.

A worker killed outright (SIGKILL, out of memory, a machine lost) leaves its
task marked RUNNING forever: no other worker takes it, and a scan waits for a
file that nobody processes. On start this command puts such tasks back in the
queue (RUNNING for longer than ``INSPECTOR_TASK_STALE_SECONDS``) and removes
stored bytes such a kill left without their row, then works as ``db_worker``
does. Every task of this project is idempotent, so a task that was in fact
still running elsewhere and runs again does its work once.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand
from django_tasks_db.models import DBTaskResult

from inspector.web.store import sweep_orphans

log = logging.getLogger(__name__)


def requeue_stale_tasks(stale_seconds: int) -> int:
    """Put tasks RUNNING for longer than ``stale_seconds`` back in the queue."""
    cutoff = timezone.now() - timedelta(seconds=stale_seconds)
    count = DBTaskResult.objects.filter(
        Q(started_at__lte=cutoff) | Q(started_at__isnull=True), status="RUNNING"
    ).update(status="READY", started_at=None)
    if count:
        log.warning("requeued %d task(s) whose worker stopped while running them", count)
    return count


class Command(DbWorkerCommand):
    help = "Run a task worker (db_worker) after requeueing tasks whose worker was killed."

    def handle(self, *args: Any, **options: Any) -> None:
        requeue_stale_tasks(settings.INSPECTOR_TASK_STALE_SECONDS)
        sweep_orphans(settings.INSPECTOR_ORPHAN_GRACE_SECONDS)
        super().handle(*args, **options)
