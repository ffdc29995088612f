"""A task left RUNNING by a killed worker is queued again when a worker starts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from inspector.web.management.commands.worker import requeue_stale_tasks

pytestmark = pytest.mark.django_db


def _task(status: str, started_ago: timedelta | None) -> DBTaskResult:
    return DBTaskResult.objects.create(
        status=status,
        started_at=None if started_ago is None else timezone.now() - started_ago,
        args_kwargs={"args": [1], "kwargs": {}},
        task_path="inspector.scan.tasks.scan_file",
        backend_name="default",
        run_after=timezone.now(),
    )


def test_only_tasks_running_past_the_threshold_are_requeued():
    stale = _task("RUNNING", timedelta(hours=2))
    fresh = _task("RUNNING", timedelta(seconds=5))
    done = _task("SUCCESSFUL", timedelta(hours=2))

    assert requeue_stale_tasks(stale_seconds=600) == 1

    for row in (stale, fresh, done):
        row.refresh_from_db()
    assert (stale.status, stale.started_at) == ("READY", None)
    assert fresh.status == "RUNNING" and fresh.started_at is not None
    assert done.status == "SUCCESSFUL"


def test_requeued_task_is_picked_up_again():
    stale = _task("RUNNING", timedelta(hours=2))
    requeue_stale_tasks(stale_seconds=600)
    assert DBTaskResult.objects.ready().filter(pk=stale.pk).exists()
