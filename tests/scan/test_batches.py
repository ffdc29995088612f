"""A scan of many files sends a task per batch of files (``scan_files``), not one a file.

The contract: a job of at most ``INSPECTOR_SCAN_BATCH_ABOVE`` files sends one
``scan_file`` a file (the tests of that path hold as they were); a larger one sends one
``scan_files`` per ``INSPECTOR_SCAN_BATCH_FILES`` files, each file in exactly one batch.
A batch scans its files as ``scan_file`` does, and records a group of them (up to
``tasks.GROUP_BYTES`` of files) in one transaction, so the outcomes and the job's
counters are those of a scan file by file, a group lands whole or not at all, and a
batch run again does nothing more. The kill points of a batch are in
tests/hardening/test_worker_faults.py.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from django.db import DatabaseError
from django_tasks_db.models import DBTaskResult

from inspector.scan import tasks
from inspector.scan.jobs import folder_job
from inspector.scan.models import ScanFile, ScanJob
from inspector.scan.tasks import scan_file, scan_files, start
from inspector.web.models import Transcript
from inspector.web.store import project_for
from tests.hardening.conftest import assert_rows_whole, orphans

COUNTERS = ("total", "done", "new", "updated", "unchanged", "duplicate", "unreadable")


def counters(job: ScanJob) -> dict[str, int]:
    job.refresh_from_db()
    return {name: getattr(job, name) for name in (*COUNTERS, "bytes_done", "bytes_total")}


def outcomes(job: ScanJob) -> dict[str, tuple[str, str]]:
    return {row.path: (row.status, row.reason) for row in job.files.all()}


@pytest.fixture
def database_tasks(settings) -> None:
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def queued() -> list[tuple[str, list[object]]]:
    rows = DBTaskResult.objects.order_by("enqueued_at").values_list("task_path", "args_kwargs")
    return [(path.rpartition(".")[2], args["args"]) for path, args in rows]


@pytest.mark.django_db
@pytest.mark.parametrize("above", [0, 3, 6, 7, 50])
@pytest.mark.parametrize("size", [1, 3, 7])
def test_a_job_above_the_threshold_sends_each_file_in_exactly_one_batch(
    owner, mixed_tree, database_tasks, settings, above, size
):
    settings.INSPECTOR_SCAN_BATCH_ABOVE, settings.INSPECTOR_SCAN_BATCH_FILES = above, size
    job, found = folder_job(owner, project_for(owner, "mixed"), mixed_tree)
    ids = start(job, found)
    sent = queued()
    if len(ids) <= above:
        assert sent == [("scan_file", [file_id]) for file_id in ids]
    else:
        assert {name for name, _ in sent} == {"scan_files"}
        batches = [args[0] for _, args in sent]
        assert all(1 <= len(batch) <= size for batch in batches)  # type: ignore[arg-type]
        assert len(batches) == -(-len(ids) // size)
        assert [file_id for batch in batches for file_id in batch] == ids  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_a_batch_gives_the_outcomes_and_counters_of_a_scan_file_by_file(
    owner, other_user, mixed_tree
):
    one_by_one, found = folder_job(owner, project_for(owner, "mixed"), mixed_tree)
    for file_id in start(one_by_one, found, enqueue=False):
        scan_file.call(file_id)
    batched, found = folder_job(other_user, project_for(other_user, "mixed"), mixed_tree)
    ids = start(batched, found, enqueue=False)
    scan_files.call(ids[:3])
    assert ScanJob.objects.get(pk=batched.pk).status == ScanJob.Status.RUNNING
    scan_files.call(ids[3:])

    assert outcomes(batched) == outcomes(one_by_one)
    assert counters(batched) == counters(one_by_one)
    assert batched.status == one_by_one.status == ScanJob.Status.DONE
    stored = Transcript.objects.filter(project=batched.project)
    assert sorted(stored.values_list("relative_path", "sha256")) == sorted(
        Transcript.objects.filter(project=one_by_one.project).values_list("relative_path", "sha256")
    )

    # The batch again (a requeued task): nothing more is stored or counted.
    before = counters(batched), outcomes(batched), stored.count()
    assert scan_files.call(ids) == "already finished"
    assert (counters(batched), outcomes(batched), stored.count()) == before


@pytest.mark.django_db
def test_a_database_error_on_one_file_leaves_it_pending_and_the_batch_goes_on(
    owner, mixed_tree, monkeypatch
):
    job, found = folder_job(owner, project_for(owner, "mixed"), mixed_tree)
    ids = start(job, found, enqueue=False)
    failing = ScanFile.objects.get(pk=ids[1]).path
    scan = tasks._scan

    def scan_or_fail(row: ScanFile) -> tasks.Outcome:
        if row.path == failing:
            raise DatabaseError("the database hiccupped")
        return scan(row)

    monkeypatch.setattr(tasks, "_scan", scan_or_fail)
    with pytest.raises(DatabaseError, match="hiccupped"):
        scan_files.call(ids)
    pending = job.files.filter(status=ScanFile.Status.PENDING)
    assert list(pending.values_list("path", flat=True)) == [failing]
    assert counters(job)["done"] == len(ids) - 1
    assert ScanJob.objects.get(pk=job.pk).status == ScanJob.Status.RUNNING

    monkeypatch.setattr(tasks, "_scan", scan)
    scan_files.call(ids)  # the retry: only the file left pending
    numbers = counters(job)
    assert numbers["done"] == numbers["total"] == len(ids)
    assert sum(numbers[name] for name in COUNTERS[2:]) == len(ids)
    assert job.status == ScanJob.Status.DONE


@pytest.mark.django_db
def test_a_database_error_recording_one_file_of_a_group_leaves_only_it_pending(
    owner, mixed_tree, monkeypatch, settings
):
    job, found = folder_job(owner, project_for(owner, "mixed"), mixed_tree)
    ids = start(job, found, enqueue=False)
    readable = [row for row in job.files.order_by("pk") if row.size and row.path != "garbage.json"]
    failing = readable[1].path
    place = tasks._place

    def place_or_fail(transcript, created, row):
        if row.path == failing:
            raise DatabaseError("the database hiccupped")
        return place(transcript, created, row)

    monkeypatch.setattr(tasks, "_place", place_or_fail)
    with pytest.raises(DatabaseError, match="hiccupped"):
        scan_files.call(ids)
    # The group was rolled back and recorded again a file at a time: all but that one.
    pending = job.files.filter(status=ScanFile.Status.PENDING)
    assert list(pending.values_list("path", flat=True)) == [failing]
    assert counters(job)["done"] == len(ids) - 1
    assert not Transcript.objects.filter(relative_path=failing).exists()
    media = Path(settings.MEDIA_ROOT)
    assert not orphans(media)  # the rolled-back rows' stored bytes went with them
    assert_rows_whole(media)

    monkeypatch.setattr(tasks, "_place", place)
    scan_files.call(ids)
    assert counters(job)["done"] == len(ids)
    assert job.files.get(path=failing).status == ScanFile.Status.NEW
    assert ScanJob.objects.get(pk=job.pk).status == ScanJob.Status.DONE


@pytest.mark.django_db
def test_a_batch_records_its_files_a_group_of_at_most_group_bytes_at_a_time(
    owner, mixed_tree, monkeypatch
):
    job, found = folder_job(owner, project_for(owner, "mixed"), mixed_tree)
    ids = start(job, found, enqueue=False)
    sizes = list(job.files.order_by("pk").values_list("size", flat=True))
    monkeypatch.setattr(tasks, "GROUP_BYTES", max(sizes) + 1)
    recorded = []
    record = tasks._record

    def counting(ready):
        recorded.append([row.size for row, _outcome in ready])
        return record(ready)

    monkeypatch.setattr(tasks, "_record", counting)
    scan_files.call(ids)
    assert [size for group in recorded for size in group] == sizes
    assert len(recorded) > 1
    # Each group is as many files as fit (a file alone when it is bigger than the limit).
    for group, after in pairwise(recorded):
        assert sum(group) <= tasks.GROUP_BYTES or len(group) == 1
        assert sum(group) + after[0] > tasks.GROUP_BYTES
    assert counters(job)["done"] == len(ids)
