"""Two scans of the same files at once, in threads against the test database (SQLite WAL on a
file, or PostgreSQL under DATABASE_URL): each file is new once per project, and nothing of
another project moves.

Both scans store each file at the same moment: a barrier holds every call of
``store_upload`` until the other scan has reached the same file, which is the
interleaving the issue saw ("219 new" for 200 files); the database does the rest.
"""

from __future__ import annotations

import io
import re
import threading
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connections

from inspector.scan import tasks
from inspector.scan.models import ScanJob
from inspector.web.models import Project, Transcript
from tests.testdata import CORPUS, read

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = (
    CORPUS
    / "claude-code"
    / "projects"
    / "-Users-dain-workspace-danieldemmel-me-next"
    / "3680252d-d4e3-4416-bddd-8f5b5b4fdb7f.jsonl"
)
FILES = 200


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """200 distinct sessions: one real session under 200 session ids."""
    root = tmp_path / "sessions"
    root.mkdir()
    data = read(SESSION)
    for index in range(FILES):
        session = str(uuid.UUID(int=index + 1))
        changed = data.replace(b"3680252d-d4e3-4416-bddd-8f5b5b4fdb7f", session.encode())
        (root / f"{session}.jsonl").write_bytes(changed)
    return root


def scan_at_once(monkeypatch, owner, root: Path, projects: tuple[str, str]) -> list[str]:
    """Run ``manage.py scan`` twice at once, one thread each; what each printed, by project."""
    both = threading.Barrier(2, timeout=60)
    store = tasks.prepare_upload

    def store_together(*args, **kwargs):
        both.wait()  # the other scan holds the same file now
        return store(*args, **kwargs)

    monkeypatch.setattr(tasks, "prepare_upload", store_together)
    printed: dict[int, str] = {}
    failed: list[BaseException] = []

    def scan(index: int, project: str) -> None:
        out = io.StringIO()
        try:
            call_command("scan", str(root), project=project, owner=owner.username, stdout=out)
        except BaseException as error:
            failed.append(error)
            both.abort()
        finally:
            printed[index] = out.getvalue()
            connections.close_all()

    threads = [threading.Thread(target=scan, args=item) for item in enumerate(projects)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failed, failed
    return [printed[index] for index in range(len(projects))]


def new_in(output: str) -> int:
    found = re.search(r"files\s+[\d,]+\s+([\d,]+) new", output)
    assert found, output
    return int(found.group(1).replace(",", ""))


def test_two_scans_of_the_same_files_into_one_project_count_each_file_new_once(
    monkeypatch, owner, tree
):
    printed = scan_at_once(monkeypatch, owner, tree, ("same", "same"))
    jobs = list(ScanJob.objects.order_by("id"))
    assert len(jobs) == 2 and all(job.status == ScanJob.Status.DONE for job in jobs)
    assert sum(job.new for job in jobs) == FILES
    assert sum(job.unchanged for job in jobs) == FILES
    assert all(job.done == FILES and job.updated == job.duplicate == 0 for job in jobs)
    assert Transcript.objects.count() == FILES
    assert sorted(new_in(text) for text in printed) == sorted(job.new for job in jobs)


def test_two_scans_of_the_same_files_into_two_projects_keep_them_in_both(monkeypatch, owner, tree):
    printed = scan_at_once(monkeypatch, owner, tree, ("first", "second"))
    for name, text in zip(("first", "second"), printed, strict=True):
        job = ScanJob.objects.get(project__name=name)
        assert (job.status, job.done, job.new, job.unchanged) == ("done", FILES, FILES, 0)
        assert new_in(text) == FILES
        assert Transcript.objects.filter(project=job.project).count() == FILES
    assert Project.objects.count() == 2
    assert Transcript.objects.count() == 2 * FILES
