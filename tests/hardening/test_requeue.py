"""A task left RUNNING by a killed worker is queued again when a worker starts or beats."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from inspector.web.management.commands.worker import requeue_orphaned_tasks

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


def _claimed(worker_id: str, started_ago: timedelta) -> DBTaskResult:
    task = _task("RUNNING", started_ago)
    task.worker_ids = [worker_id]
    task.save(update_fields=["worker_ids"])
    return task


def test_tasks_of_a_worker_that_never_beat_are_requeued_once_past_the_threshold():
    # A plain db_worker elsewhere: no beat, so the task's age decides.
    stale = _claimed("elsewhere:51:ffffffff", timedelta(hours=2))
    fresh = _claimed("elsewhere:51:ffffffff", timedelta(seconds=5))
    done = _task("SUCCESSFUL", timedelta(hours=2))

    assert requeue_orphaned_tasks(beat_seconds=10, stale_seconds=600) == 1

    for row in (stale, fresh, done):
        row.refresh_from_db()
    assert (stale.status, stale.started_at) == ("READY", None)
    assert fresh.status == "RUNNING" and fresh.started_at is not None
    assert done.status == "SUCCESSFUL"


def test_requeued_task_is_picked_up_again():
    stale = _claimed("elsewhere:52:gggggggg", timedelta(hours=2))
    requeue_orphaned_tasks(beat_seconds=10, stale_seconds=600)
    assert DBTaskResult.objects.ready().filter(pk=stale.pk).exists()


def test_a_task_of_a_worker_whose_beat_stopped_is_requeued_without_an_age():
    from inspector.web.models import WorkerBeat

    now = timezone.now()
    silent = _claimed("elsewhere:41:aaaaaaaa", timedelta(seconds=40))
    beating = _claimed("elsewhere:42:bbbbbbbb", timedelta(seconds=40))
    never = _claimed("elsewhere:43:cccccccc", timedelta(seconds=40))  # a plain db_worker
    WorkerBeat.objects.create(
        worker_id="elsewhere:41:aaaaaaaa", beat_at=now - timedelta(seconds=31)
    )
    WorkerBeat.objects.create(worker_id="elsewhere:42:bbbbbbbb", beat_at=now - timedelta(seconds=5))

    assert requeue_orphaned_tasks(beat_seconds=10, stale_seconds=600) == 1
    statuses = {t.pk: DBTaskResult.objects.get(pk=t.pk).status for t in (silent, beating, never)}
    assert statuses == {silent.pk: "READY", beating.pk: "RUNNING", never.pk: "RUNNING"}


def test_a_task_of_a_dead_process_on_this_machine_is_requeued_at_once():
    import subprocess
    import sys

    from inspector.web.management.commands.worker import this_host
    from inspector.web.models import WorkerBeat

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    worker = f"{this_host()}:{int(gone.stdout)}:dddddddd"
    task = _claimed(worker, timedelta(seconds=1))
    WorkerBeat.objects.create(worker_id=worker, beat_at=timezone.now())  # its beat is fresh

    assert requeue_orphaned_tasks(beat_seconds=10, stale_seconds=600) == 1
    task.refresh_from_db()
    assert task.status == "READY"


def test_a_machine_of_the_same_host_name_keeps_its_tasks_while_it_beats():
    """Two machines or containers may share a host name (a default image's): a pid of
    the other is never looked up here, so its running task stays its own."""
    import socket
    import subprocess
    import sys

    from inspector.web.management.commands.worker import new_worker_id, this_host
    from inspector.web.models import WorkerBeat

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    name = socket.gethostname()[:30].replace(":", "-")
    assert this_host().startswith(f"{name}~") and this_host() != f"{name}~"
    assert new_worker_id().startswith(f"{this_host()}:") and len(new_worker_id()) <= 64
    twin = f"{name}~ffffffff:{int(gone.stdout)}:eeeeeeee"  # same name, another machine
    assert this_host() != f"{name}~ffffffff"
    task = _claimed(twin, timedelta(seconds=1))
    WorkerBeat.objects.create(worker_id=twin, beat_at=timezone.now())

    assert requeue_orphaned_tasks(beat_seconds=10, stale_seconds=600) == 0
    task.refresh_from_db()
    assert task.status == "RUNNING"
