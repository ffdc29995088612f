"""Scans from the browser: many files or one zip, zip limits, and the job page."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from inspector.scan import reports
from inspector.scan.jobs import folder_job
from inspector.scan.models import ScanJob
from inspector.scan.tasks import start
from inspector.web.models import Project, Transcript
from tests.scan.conftest import EMPTY_SESSION, MIXED, PROJECTS, zip_of, zip_with

pytestmark = pytest.mark.django_db

SESSION = MIXED["alpha/cut-call.jsonl"].read_bytes()


def post_scan(client, *files: tuple[str, bytes], project: str = "web"):
    uploads = [SimpleUploadedFile(name, data) for name, data in files]
    return client.post(reverse("scan:new"), {"project": project, "files": uploads})


def numbers(job: ScanJob) -> dict[str, object]:
    summary = reports.summarize(reports.job_transcripts(job))
    paths = set(reports.job_transcripts(job).values_list("relative_path", flat=True))
    broken = set(
        reports.job_transcripts(job)
        .filter(needs_repair=True)
        .values_list("relative_path", flat=True)
    )
    counts = {name: getattr(job, name) for name in ("total", "new", "unchanged", "unreadable")}
    return counts | {
        "sessions": summary.sessions,
        "messages": summary.messages,
        "needs_repair": summary.needs_repair,
        "linked": summary.linked,
        "findings": summary.findings,
        "paths": paths,
        "broken": broken,
        "unreadable_paths": set(
            job.files.filter(status="unreadable").values_list("path", flat=True)
        ),
    }


@pytest.mark.usefixtures("any_storage")
def test_zip_upload_of_the_corpus_gives_the_same_numbers_as_the_command(
    run_scan, other_client, other_user
):
    cli, _ = run_scan(PROJECTS)
    # Zipping the folder itself puts "projects/" in front of every name; it is taken off.
    response = post_scan(other_client, ("projects.zip", zip_of(PROJECTS, prefix="projects/")))
    web = ScanJob.objects.get(owner=other_user)
    assert response.status_code == 302
    assert response["Location"] == web.get_absolute_url()
    assert web.status == ScanJob.Status.DONE
    assert web.source == ScanJob.Source.ZIP
    assert numbers(web) == numbers(cli)
    assert EMPTY_SESSION in numbers(web)["unreadable_paths"]
    # Nothing of the upload is left in storage once the scan is done.
    assert not default_storage.exists(web.storage_dir)


@pytest.mark.usefixtures("any_storage")
def test_many_files_upload_stores_each_and_leaves_out_what_is_no_session(owner_client, owner):
    response = post_scan(
        owner_client,
        ("cut-call.jsonl", SESSION),
        ("empty.jsonl", b""),
        ("notes.txt", b"hello"),
    )
    job = ScanJob.objects.get()
    assert response.status_code == 302
    assert (job.status, job.total, job.new, job.unreadable) == ("done", 2, 1, 1)
    transcript = Transcript.objects.get()
    assert (transcript.relative_path, transcript.needs_repair) == ("cut-call.jsonl", True)
    assert transcript.project == Project.objects.get(owner=owner, slug="web")
    assert "notes.txt" in " ".join(job.notes)
    assert not default_storage.exists(job.storage_dir)


def test_zip_bomb_is_refused_before_anything_is_read(owner_client):
    bomb = zip_with({"bomb.jsonl": b"\n" * (50 * 1024 * 1024)})
    assert len(bomb) < 200 * 1024
    response = post_scan(owner_client, ("bomb.zip", bomb))
    assert response.status_code == 400
    assert "This looks like a zip bomb, so nothing was read." in response.content.decode()
    assert not ScanJob.objects.exists()


def test_zip_with_too_many_files_is_refused(owner_client, settings):
    settings.INSPECTOR_SCAN_MAX_FILES = 3
    members = {f"s{n}.jsonl": SESSION for n in range(5)}
    response = post_scan(owner_client, ("many.zip", zip_with(members)))
    assert response.status_code == 400
    assert "The zip holds 5 files; the limit is 3." in response.content.decode()
    assert not ScanJob.objects.exists()


def test_zip_larger_than_the_limit_once_unpacked_is_refused(owner_client, settings):
    settings.INSPECTOR_SCAN_MAX_BYTES = 10_000
    response = post_scan(owner_client, ("big.zip", zip_with({"a.jsonl": SESSION * 3})))
    assert response.status_code == 400
    assert "The zip would unpack to" in response.content.decode()


@pytest.mark.usefixtures("any_storage")
def test_unsafe_zip_names_are_skipped_with_notes_and_never_written(owner_client, tmp_path):
    members = {
        "../escape.jsonl": SESSION,
        "/etc/absolute.jsonl": SESSION,
        "C:/windows.jsonl": SESSION,
        "__MACOSX/project/._session.jsonl": b"\x00\x05",
        "project/": b"",
        "project/ok.jsonl": SESSION,
        "project/readme.txt": b"hi",
    }
    response = post_scan(owner_client, ("unsafe.zip", zip_with(members)))
    job = ScanJob.objects.get()
    assert response.status_code == 302
    assert (job.total, job.new) == (1, 1)
    assert Transcript.objects.get().relative_path == "ok.jsonl"
    notes = " ".join(job.notes)
    assert "out of the zip with '..': skipped (../escape.jsonl)" in notes
    assert "absolute path: skipped" in notes and "/etc/absolute.jsonl" in notes
    assert "C:/windows.jsonl" in notes
    assert "macOS metadata (__MACOSX): skipped" in notes
    assert "project/readme.txt" in notes
    assert not list(tmp_path.rglob("escape.jsonl"))
    assert not list(tmp_path.rglob("absolute.jsonl"))
    page = owner_client.get(job.get_absolute_url()).content.decode()
    assert "Left out before scanning" in page
    assert "escape.jsonl" in page


@pytest.mark.usefixtures("any_storage")
def test_a_damaged_zip_member_is_unreadable_and_the_rest_are_scanned(owner_client):
    data = bytearray(zip_with({"a/good.jsonl": SESSION, "a/bad.jsonl": SESSION}))
    bad = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("a/bad.jsonl")
    start = bad.header_offset + 30 + len(bad.filename) + len(bad.extra)
    for offset in range(start + 10, start + 20):  # scramble the middle of its compressed bytes
        data[offset] ^= 0xFF
    response = post_scan(owner_client, ("damaged.zip", bytes(data)))
    job = ScanJob.objects.get()
    assert response.status_code == 302
    assert (job.status, job.total, job.new, job.unreadable) == ("done", 2, 1, 1)
    reason = job.files.get(path="bad.jsonl").reason
    assert reason.startswith("This member of the zip could not be unpacked")
    assert Transcript.objects.get().relative_path == "good.jsonl"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ((("a.zip", b"not a zip"),), "This is not a zip file that can be read"),
        ((("a.zip", zip_with({"x.jsonl": SESSION})), ("b.jsonl", SESSION)), "Upload one .zip"),
        ((("notes.txt", b"hello"),), "None of these is a session file"),
        ((("empty.zip", zip_with({"readme.md": b"hi"})),), "The zip holds no session files"),
    ],
)
def test_bad_uploads_are_refused_with_a_message(owner_client, files, message):
    response = post_scan(owner_client, *files)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not ScanJob.objects.exists()


def test_upload_needs_a_project_name(owner_client):
    response = post_scan(owner_client, ("a.jsonl", SESSION), project="")
    assert response.status_code == 400
    assert not ScanJob.objects.exists()


def test_scan_page_opens_for_a_user(other_client):
    response = other_client.get(reverse("scan:new"))
    assert response.status_code == 200
    assert 'name="files"' in response.content.decode() and "multiple" in response.content.decode()


def test_scan_page_sends_anonymous_visitors_to_sign_in(client):
    response = client.get(reverse("scan:new"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert client.post(reverse("scan:new")).status_code == 302


# --- the job page ----------------------------------------------------------


@pytest.fixture
def running_job(owner, mixed_tree: Path) -> ScanJob:
    """A job whose files are recorded but not yet processed by any worker."""
    project = Project.objects.create(owner=owner, name="mixed", slug="mixed")
    job, found = folder_job(owner, project, mixed_tree)
    start(job, found, enqueue=False)
    job.refresh_from_db()
    return job


def test_progress_fragment_polls_every_second_while_the_scan_runs(owner_client, running_job):
    response = owner_client.get(running_job.get_absolute_url(), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="progress"')
    assert "<html" not in body
    assert 'hx-trigger="every 1s"' in body
    assert f'hx-get="{running_job.get_absolute_url()}"' in body
    assert "0/7" in body
    assert response["Vary"] and "HX-Request" in response["Vary"]


def test_progress_fragment_stops_polling_when_the_scan_is_done(owner_client, running_job):
    owner_client.post(reverse("scan:retry", args=[running_job.public_id]))  # immediate backend
    response = owner_client.get(running_job.get_absolute_url(), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "hx-trigger" not in body
    assert "7/7" in body
    assert "empty.jsonl" in body and "The file is empty." in body
    assert "3 need repair." in body


def test_job_page_survives_a_reload_and_shows_the_same_progress(owner_client, running_job):
    first = owner_client.get(running_job.get_absolute_url())
    again = owner_client.get(running_job.get_absolute_url())
    assert first.status_code == again.status_code == 200
    assert "<html" in first.content.decode()
    assert "Send unfinished files again" in again.content.decode()


def test_another_users_job_is_404_page_fragment_and_retry(other_client, running_job):
    url = running_job.get_absolute_url()
    assert other_client.get(url).status_code == 404
    assert other_client.get(url, HTTP_HX_REQUEST="true").status_code == 404
    assert other_client.post(reverse("scan:retry", args=[running_job.public_id])).status_code == 404
    running_job.refresh_from_db()
    assert running_job.done == 0


def test_anonymous_visitor_is_sent_to_sign_in_from_a_job(client, running_job):
    response = client.get(running_job.get_absolute_url())
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_retry_takes_only_post(owner_client, running_job):
    assert owner_client.get(reverse("scan:retry", args=[running_job.public_id])).status_code == 405


@pytest.mark.usefixtures("any_storage")
def test_an_openhands_cli_conversation_in_a_zip_is_one_session_read_as_its_events(owner_client):
    """Its event members and base_state.json are one transcript, named by its events folder."""
    import orjson

    from tests.local.test_openhands_cli import CRASHED
    from tests.testdata import read

    cid = "51b45f91d38a498e9f7f718ad9ec1c60"
    stream = orjson.loads(read(CRASHED))
    members = {
        f"convs/{cid}/events/event-{i:05d}-{e['id']}.json": orjson.dumps(e)
        for i, e in enumerate(stream)
    }
    members[f"convs/{cid}/base_state.json"] = orjson.dumps({"id": cid})
    members["other/ok.jsonl"] = SESSION
    response = post_scan(owner_client, ("conversations.zip", zip_with(members)))
    assert response.status_code == 302
    job = ScanJob.objects.get()
    assert (job.status, job.total, job.unreadable) == ("done", 2, 0)
    transcript = Transcript.objects.get(relative_path=f"convs/{cid}/events")
    assert transcript.format == "openhands-cli" and transcript.needs_repair


@pytest.mark.usefixtures("any_storage")
def test_a_zipped_conversation_with_an_index_gap_is_unreadable_saying_why(owner_client):
    import orjson

    from tests.local.test_openhands_cli import CRASHED
    from tests.testdata import read

    stream = orjson.loads(read(CRASHED))
    members = {
        f"c/events/event-{i:05d}-{e['id']}.json": orjson.dumps(e)
        for i, e in enumerate(stream)
        if i != 4
    }
    post_scan(owner_client, ("gap.zip", zip_with(members)))
    job = ScanJob.objects.get()
    assert (job.status, job.total, job.unreadable) == ("done", 1, 1)
    (row,) = job.files.all()
    assert "after a gap" in row.reason
