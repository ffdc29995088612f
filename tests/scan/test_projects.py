"""A session scanned into two projects stays in both; no scan or upload takes another's file."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from inspector.scan import reports
from inspector.scan.models import ScanFile
from inspector.share.models import ShareLink
from inspector.web.models import Project, Transcript
from inspector.web.store import read_raw, store_upload, sweep_orphans
from tests.scan.conftest import CODEX
from tests.testdata import read

pytestmark = pytest.mark.django_db

STORED = 5  # readable sessions in the mixed tree


def _sessions(name: str) -> int:
    return reports.project_totals(Project.objects.get(name=name))["summary"].sessions


def test_a_session_scanned_into_a_second_project_stays_in_the_first(run_scan, mixed_tree):
    first, _ = run_scan(mixed_tree, project="coderabbit")
    before = dict(Transcript.objects.values_list("pk", "relative_path"))
    second, output = run_scan(mixed_tree, project="fresh")
    # New in the second project, and still in the first: both dashboards count them.
    assert (second.new, second.unchanged, second.updated) == (STORED, 0, 0)
    assert f"{STORED} new" in output
    assert (
        f"Note: {STORED} of the new files are also in other projects, which keep theirs: "
        f"coderabbit ({STORED}). Each project has its own copy."
    ) in output
    assert _sessions("coderabbit") == _sessions("fresh") == STORED
    first_project = Project.objects.get(name="coderabbit")
    assert (
        dict(Transcript.objects.filter(project=first_project).values_list("pk", "relative_path"))
        == before
    )
    # Each copy reads whole on its own; neither scan's page points at the other's.
    for transcript in Transcript.objects.all():
        assert read_raw(transcript)
    assert not set(reports.job_transcripts(first)) & set(reports.job_transcripts(second))
    # Scanning the first again: nothing is new there, nothing moves.
    again, output = run_scan(mixed_tree, project="coderabbit")
    assert (again.new, again.unchanged) == (0, STORED)
    assert "0 new" in output and "also in other projects" not in output
    assert _sessions("coderabbit") == _sessions("fresh") == STORED
    assert not sweep_orphans(0)  # every stored folder has its row


def test_deleting_one_projects_copy_leaves_the_others(run_scan, mixed_tree, owner_client):
    run_scan(mixed_tree, project="one")
    run_scan(mixed_tree, project="two")
    gone = Transcript.objects.get(project__name="one", relative_path="alpha/clean.jsonl")
    kept = Transcript.objects.get(project__name="two", relative_path="alpha/clean.jsonl")
    response = owner_client.post(reverse("delete", args=[gone.public_id]))
    assert response.status_code == 302
    assert not Transcript.objects.filter(pk=gone.pk).exists()
    assert read_raw(kept) == (mixed_tree / "alpha" / "clean.jsonl").read_bytes()
    page = owner_client.get(kept.get_absolute_url())
    assert page.status_code == 200


def test_uploading_bytes_a_project_holds_into_another_project_keeps_both(
    run_scan, mixed_tree, owner_client
):
    run_scan(mixed_tree, project="scanned")
    data = (mixed_tree / "alpha" / "clean.jsonl").read_bytes()
    response = owner_client.post(
        reverse("upload"), {"file": SimpleUploadedFile("clean.jsonl", data), "project": "mine"}
    )
    assert response.status_code == 302
    uploaded = Transcript.objects.get(project__name="mine")
    assert Transcript.objects.filter(project__name="scanned").count() == STORED
    assert read_raw(uploaded) == data
    # Without a project, the same bytes are the stored transcript, wherever it is.
    again, created = store_upload(uploaded.owner, data, "clean.jsonl")
    assert not created and again.sha256 == uploaded.sha256


def test_a_folder_scan_never_takes_a_file_an_upload_stored_elsewhere(run_scan, mixed_tree, owner):
    data = (mixed_tree / "codex" / "compaction.jsonl").read_bytes()
    loose, _ = store_upload(owner, data, "compaction.jsonl")
    run_scan(mixed_tree, project="mixed")
    loose.refresh_from_db()
    assert loose.project is None and loose.relative_path == ""
    assert Transcript.objects.filter(project__name="mixed").count() == STORED


@pytest.mark.usefixtures("any_storage")
def test_a_changed_file_keeps_its_shared_older_version_out_of_the_project(run_scan, mixed_tree):
    run_scan(mixed_tree, project="mixed")
    old = Transcript.objects.get(relative_path="alpha/clean.jsonl")
    ShareLink.issue(old, ShareLink.REDACTED, "never")
    target = mixed_tree / "alpha" / "clean.jsonl"
    target.write_bytes(read(CODEX / "swiftdiaries-agent-transcripts__codex-session.jsonl"))
    job, _ = run_scan(mixed_tree, project="mixed")
    assert job.files.get(path="alpha/clean.jsonl").status == ScanFile.Status.UPDATED
    old.refresh_from_db()
    assert old.project is None and old.share_links.exists()
    assert _sessions("mixed") == STORED


def test_the_scan_page_says_which_projects_also_hold_the_new_files(
    run_scan, mixed_tree, owner_client
):
    run_scan(mixed_tree, project="coderabbit")
    second, _ = run_scan(mixed_tree, project="fresh")
    page = owner_client.get(second.get_absolute_url()).content.decode()
    assert f"{STORED} new" in page
    assert f"{STORED} of the new files are also in other projects" in page
    assert f"coderabbit ({STORED})" in page
    for slug in ("coderabbit", "fresh"):
        dashboard = owner_client.get(reverse("scan:project", args=[slug])).content.decode()
        assert "alpha/clean.jsonl" in dashboard


def test_a_file_uploaded_into_the_project_before_is_not_new_when_scanned(
    run_scan, mixed_tree, owner
):
    project = Project.objects.create(owner=owner, name="mixed", slug="mixed")
    data = (mixed_tree / "alpha" / "clean.jsonl").read_bytes()
    uploaded, _ = store_upload(project.owner, data, "mine.jsonl", project=project)
    job, _ = run_scan(mixed_tree, project="mixed")
    assert (job.new, job.unchanged) == (STORED - 1, 1)
    row = job.files.get(path="alpha/clean.jsonl")
    assert row.transcript == uploaded
    assert (
        row.reason == "Stored before as mine.jsonl (an upload): the same bytes, now at this path."
    )
    assert _sessions("mixed") == STORED
