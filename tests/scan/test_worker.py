"""The scan through real ``db_worker`` processes on the test database (SQLite or PostgreSQL)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from inspector.diagnosis import ENGINE_VERSION
from inspector.scan.models import ScanJob
from inspector.scan.workers import database_url, worker_command, worker_env
from inspector.search.models import SearchIndexed, SearchRow
from inspector.web.models import Transcript
from tests.scan.conftest import MIXED_NEEDS_REPAIR, MIXED_UNREADABLE, zip_of


def assert_indexed(transcripts, count: int) -> None:
    """Each transcript is indexed, at this engine version, with every row that has text."""
    from inspector.search import fulltext
    from inspector.web import store

    assert len(transcripts) == count
    for transcript in transcripts:
        indexed = SearchIndexed.objects.get(transcript=transcript)
        rows = [
            (row["key"], fulltext.row_text(row))
            for row in store.get_diagnosis(transcript).rows
            if fulltext.row_text(row)
        ]
        assert indexed.engine_version == ENGINE_VERSION and indexed.rows == len(rows) > 0
        entries = SearchRow.objects.filter(transcript=transcript).order_by("position")
        assert list(entries.values_list("key", "body")) == rows


@pytest.fixture
def database_tasks(settings) -> None:
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


@pytest.mark.usefixtures("any_storage")
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_worker_processes_scan_a_tree_end_to_end(owner, mixed_tree, database_tasks):
    out = io.StringIO()
    call_command("scan", str(mixed_tree), project="mixed", owner="owner", workers=2, stdout=out)
    job = ScanJob.objects.get()
    # Each file's task ran in a worker, through the database queue, and was counted once;
    # each new transcript was indexed for project search by that same task, from the
    # rows its diagnosis made (no second task: inspector.search.signals).
    done = DBTaskResult.objects.filter(status="SUCCESSFUL")
    assert done.filter(task_path="inspector.scan.tasks.scan_file").count() == 7
    assert not DBTaskResult.objects.exclude(task_path="inspector.scan.tasks.scan_file").exists()
    assert not DBTaskResult.objects.exclude(status="SUCCESSFUL").exists()
    assert_indexed(Transcript.objects.all(), 5)
    assert (job.status, job.total, job.done, job.new, job.unreadable) == ("done", 7, 7, 5, 2)
    assert job.bytes_done == job.bytes_total
    flagged = set(
        Transcript.objects.filter(needs_repair=True).values_list("relative_path", flat=True)
    )
    assert flagged == MIXED_NEEDS_REPAIR
    assert set(job.files.filter(status="unreadable").values_list("path", flat=True)) == (
        MIXED_UNREADABLE
    )
    assert "Workers: 2, peak memory per worker:" in out.getvalue()


@pytest.mark.usefixtures("any_storage")
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_zip_upload_waits_in_the_queue_until_a_worker_process_runs_it(
    owner_client, mixed_tree, database_tasks
):
    response = owner_client.post(
        reverse("scan:new"),
        {"project": "web", "files": [SimpleUploadedFile("mixed.zip", zip_of(mixed_tree))]},
    )
    job = ScanJob.objects.get()
    assert response.status_code == 302
    assert job.status == ScanJob.Status.PREPARING  # nothing ran in the request
    fragment = owner_client.get(job.get_absolute_url(), HTTP_HX_REQUEST="true")
    assert 'hx-trigger="every 1s"' in fragment.content.decode()
    # One worker, until the queue is empty: the zip's task, then one task per file.
    subprocess.run(worker_command(), cwd=settings.BASE_DIR, env=worker_env(), check=True)
    job.refresh_from_db()
    assert (job.status, job.total, job.new, job.unreadable) == ("done", 7, 5, 2)
    done = DBTaskResult.objects.filter(status="SUCCESSFUL")
    assert done.filter(task_path__startswith="inspector.scan.tasks.").count() == 8
    assert done.count() == 8  # the index was made by the scan's own tasks
    assert_indexed(Transcript.objects.all(), 5)
    fragment = owner_client.get(job.get_absolute_url(), HTTP_HX_REQUEST="true")
    assert "hx-trigger" not in fragment.content.decode()
    assert not default_storage.exists(job.storage_dir)


def test_database_url_names_the_database_this_process_uses(db):
    url = database_url(connection.settings_dict)
    assert url.startswith("sqlite:///" if connection.vendor == "sqlite" else "postgres://")
    # The database's name ends the URL's path (PostgreSQL's options follow as its query).
    named = urlsplit(url).path.rsplit("/", 1)[-1]
    assert named == str(connection.settings_dict["NAME"]).rsplit("/", 1)[-1]


def test_database_url_quotes_postgres_credentials():
    url = database_url(
        {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "test_inspector",
            "USER": "app",
            "PASSWORD": "p@ss/word",
            "HOST": "db.internal",
            "PORT": "5433",
            "OPTIONS": {"sslmode": "require"},
        }
    )
    assert url == "postgres://app:p%40ss%2Fword@db.internal:5433/test_inspector?sslmode=require"


def test_each_worker_process_runs_in_a_session_of_its_own(tmp_path, monkeypatch) -> None:
    # Under Linux's autogroup scheduling a busy machine shares its cores out by session:
    # workers in the scan command's session would get one share between them.
    from inspector.scan import workers

    script = (
        "import os, sys; from pathlib import Path; "
        "Path(sys.argv[1], str(os.getpid())).write_text(str(os.getsid(0)))"
    )
    monkeypatch.setattr(
        workers, "worker_command", lambda: [sys.executable, "-c", script, str(tmp_path)]
    )
    exits = workers.run_workers(2, lambda: None)
    assert [worker.code for worker in exits] == [0, 0]
    sessions = {int(path.read_text()) for path in tmp_path.iterdir()}
    assert len(sessions) == 2
    assert os.getsid(0) not in sessions
