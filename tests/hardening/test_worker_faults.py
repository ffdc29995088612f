"""A task worker killed with SIGKILL in the middle of a scan; after a restart the scan completes.

The worker is a real ``db_worker`` process on the test database (a file for
SQLite, the test database for PostgreSQL). It stops itself at a chosen point
of its second file and waits there to be killed, so the kill lands where the
test says, not wherever a timer happens to. Then, as a person would: the
scan's "send unfinished files again" button, and a fresh worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from inspector.scan.models import ScanFile, ScanJob
from inspector.scan.workers import worker_command, worker_env
from inspector.web.models import Transcript
from tests.hardening.conftest import assert_rows_whole, orphans
from tests.testdata import CORPUS, files, read

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SESSIONS = (
    files(CORPUS / "claude-code" / "broken", "*.jsonl")[:4] + files(CORPUS / "codex", "*.jsonl")[:1]
)
UNREADABLE = {"garbage.json": b"{this is not json"}
WAIT_SECONDS = 60

# Runs db_worker in this process after wrapping one function: its second call
# writes the marker and sleeps, so the test can kill the worker right there.
PAUSED_WORKER = """
import os, sys, time
from pathlib import Path
import django

django.setup()
from django.core.management import call_command
from inspector.scan import tasks
from inspector.web.models import Transcript

point, marker = os.environ["PAUSE_AT"], Path(os.environ["PAUSE_MARKER"])
owner = Transcript if point == "Transcript.save" else tasks
name = point.rpartition(".")[2]
original, calls = getattr(owner, name), []


def paused(*args, **kwargs):
    calls.append(1)
    if len(calls) == 2:
        marker.write_text(str(os.getpid()))
        time.sleep(120)
        os._exit(3)  # never reached when the test kills it
    return original(*args, **kwargs)


setattr(owner, name, paused)
call_command(*sys.argv[1:])
"""

# Where the worker dies, in the order scan_file gets there.
KILL_POINTS = {
    "claimed, nothing stored": "prepare_upload",
    "bytes stored, no row yet": "Transcript.save",
    "row stored, not placed in the project": "_place",
    "placed, outcome not recorded": "_finish",
    "outcome recorded, job not completed": "complete_if_done",
}

# Found by this test and reported, not fixed here (inspector/scan/tasks.py is not
# ours; a fix for the first needs a sweep of storage, run by something).


@pytest.fixture
def database_tasks(settings) -> None:
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    # The restart here comes at once; a deployment keeps a grace period so that
    # bytes of an upload whose row is still being written are spared.
    settings.INSPECTOR_ORPHAN_GRACE_SECONDS = 0


def start_scan(client: Client) -> ScanJob:
    files = [SimpleUploadedFile(path.name, read(path)) for path in SESSIONS]
    files += [SimpleUploadedFile(name, data) for name, data in UNREADABLE.items()]
    response = client.post(reverse("scan:new"), {"project": "killed", "files": files})
    assert response.status_code == 302
    return ScanJob.objects.get()


def run_paused_worker(point: str, marker: Path) -> subprocess.Popen:
    env = worker_env() | {"PAUSE_AT": point, "PAUSE_MARKER": str(marker)}
    # worker_command() is [python, -m, django, db_worker, ...]: the same worker, wrapped.
    command = [sys.executable, "-c", PAUSED_WORKER, *worker_command()[3:]]
    return subprocess.Popen(command, cwd=settings.BASE_DIR, env=env)


def kill_when_paused(worker: subprocess.Popen, marker: Path) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    try:
        while not marker.exists():
            assert worker.poll() is None, f"the worker left early ({worker.returncode})"
            assert time.monotonic() < deadline, "the worker never reached the kill point"
            time.sleep(0.05)
    finally:
        if worker.poll() is None:
            os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=WAIT_SECONDS)
    assert worker.returncode == -signal.SIGKILL


# How the scan's files reach the workers (inspector.scan.tasks.enqueue_files): a task a
# file (a job of few files), or batches of them, here 4 and 3 files, so each kill point
# (the second call of its function) lands inside the first batch, one file in, but the
# job's end, which a batch reaches once, after its files: the second, the last batch's.
PATHS = {
    "one task a file": (len(SESSIONS) + len(UNREADABLE), 1, "inspector.scan.tasks.scan_file"),
    "batches of files": (0, 4, "inspector.scan.tasks.scan_files"),
}


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("point", KILL_POINTS.values(), ids=KILL_POINTS.keys())
def test_a_scan_whose_worker_was_killed_completes_each_file_once_after_a_restart(
    owner, owner_client, database_tasks, media_root, tmp_path, point, path, settings
):
    settings.INSPECTOR_SCAN_BATCH_ABOVE, settings.INSPECTOR_SCAN_BATCH_FILES, task_path = path
    job = start_scan(owner_client)
    assert job.total == len(SESSIONS) + len(UNREADABLE)
    queued = DBTaskResult.objects.values_list("task_path", "args_kwargs")
    per_task = 1 if task_path.endswith("scan_file") else 4
    assert {task for task, _ in queued} == {task_path}
    assert len(queued) == -(-job.total // per_task)

    marker = tmp_path / "paused"
    kill_when_paused(run_paused_worker(point, marker), marker)
    job.refresh_from_db()
    assert job.status == ScanJob.Status.RUNNING
    counted = job.new + job.updated + job.unchanged + job.duplicate + job.unreadable
    if per_task == 1:  # killed at the second file: the first done, counted once
        assert job.done == counted == (2 if point == "complete_if_done" else 1)
    elif point == "complete_if_done":  # killed after the last batch landed, before the end
        assert job.done == counted == job.total
        assert not job.files.filter(status=ScanFile.Status.PENDING).exists()
    else:  # killed inside the first batch, which lands whole or not at all: none of it
        assert job.done == counted == 0
        assert not Transcript.objects.exists()

    # The restart: a fresh worker at once, nothing else. It finds the killed
    # worker's task still marked running, sees that worker's process is gone and
    # queues the task again, with no waiting for an age
    # (INSPECTOR_TASK_STALE_SECONDS stays at its default), then runs the queue dry.
    restart_env = worker_env() | {"INSPECTOR_ORPHAN_GRACE_SECONDS": "0"}
    subprocess.run(
        worker_command(), cwd=settings.BASE_DIR, env=restart_env, check=True, timeout=120
    )

    job.refresh_from_db()
    assert job.status == ScanJob.Status.DONE
    # Each file has one outcome, counted once.
    assert not job.files.filter(status=ScanFile.Status.PENDING).exists()
    counted = job.new + job.updated + job.unchanged + job.duplicate + job.unreadable
    assert job.done == counted == job.total
    assert job.bytes_done == job.bytes_total
    # One transcript per readable file, at its path in the project, its bytes whole.
    transcripts = Transcript.objects.filter(project=job.project)
    assert sorted(transcripts.values_list("relative_path", flat=True)) == sorted(
        path.name for path in SESSIONS
    )
    assert Transcript.objects.count() == len(SESSIONS)
    for row in job.files.exclude(status="unreadable").select_related("transcript"):
        assert row.transcript is not None and row.transcript.relative_path == row.path
    assert not default_storage.exists(job.storage_dir)  # the uploaded files are cleared
    assert_rows_whole(media_root)

    # The same outcomes as a scan nobody killed, and no stored bytes left without a row.
    statuses = dict(job.files.values_list("path", "status"))
    clean = {path.name: "new" for path in SESSIONS} | dict.fromkeys(UNREADABLE, "unreadable")
    assert statuses == clean
    assert (job.new, job.unreadable) == (len(SESSIONS), len(UNREADABLE))
    assert not orphans(media_root)
    # Every task of the scan ran to its end, the killed one too (run again), and no
    # other was sent (no file was scanned by a task of its own beside its batch's).
    assert set(DBTaskResult.objects.values_list("task_path", "status")) == {
        (task_path, "SUCCESSFUL")
    }
    assert DBTaskResult.objects.count() == len(queued)


def test_a_running_worker_takes_up_a_killed_workers_task_within_a_few_beats(
    owner, owner_client, database_tasks, media_root, tmp_path
):
    job = start_scan(owner_client)
    marker = tmp_path / "paused"
    paused = run_paused_worker("_finish", marker)
    deadline = time.monotonic() + WAIT_SECONDS
    while not marker.exists():
        assert paused.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    # A second worker that keeps running, started while the first is alive:
    # its start finds nothing dead; its beats must.
    command = [arg for arg in worker_command() if arg != "--batch"]
    env = worker_env() | {"INSPECTOR_WORKER_BEAT_SECONDS": "1"}
    live = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env)
    try:
        os.kill(paused.pid, signal.SIGKILL)
        paused.wait(timeout=WAIT_SECONDS)
        deadline = time.monotonic() + WAIT_SECONDS  # a minute, as the issue asks
        while ScanJob.objects.get(pk=job.pk).status != ScanJob.Status.DONE:
            assert live.poll() is None, f"the live worker left ({live.returncode})"
            assert time.monotonic() < deadline, "the killed worker's task was never taken up"
            time.sleep(0.2)
    finally:
        live.terminate()
        live.wait(timeout=WAIT_SECONDS)
    job.refresh_from_db()
    counted = job.new + job.updated + job.unchanged + job.duplicate + job.unreadable
    assert job.done == counted == job.total
    assert Transcript.objects.count() == len(SESSIONS)
    assert_rows_whole(media_root)
