"""A watched folder is a project of its own: nothing another project stores is touched by it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from inspector.scan import reports
from inspector.share.models import ShareLink
from inspector.watch import ingest
from inspector.watch.models import WatchedFile, WatchedFolder
from inspector.watch.watcher import Watcher
from inspector.web.models import Project, Transcript
from inspector.web.store import project_for, read_raw, store_upload
from tests.testdata import read
from tests.watch.test_watch import CUT_CALL, KIMI, broken_claude

pytestmark = pytest.mark.django_db


def _folder(root: Path, files: dict[str, bytes]) -> Path:
    for relative, data in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    return root


def _paths(project: Project) -> dict[str, str]:
    return dict(Transcript.objects.filter(project=project).values_list("relative_path", "sha256"))


def test_two_folders_of_one_name_are_two_projects_that_keep_their_own_files(owner, tmp_path):
    first = _folder(tmp_path / "a" / "alpha", {"s.jsonl": read(KIMI)})
    second = _folder(tmp_path / "b" / "alpha", {"s.jsonl": broken_claude()})
    watcher = Watcher(owner, [first, second])
    assert watcher.catch_up() == 2
    one, two = (WatchedFolder.objects.get(path=str(root.resolve())) for root in (first, second))
    assert one.project != two.project
    assert one.project.name == "alpha"
    assert str(second.resolve()) in two.project.name  # named by its path
    assert one.project.slug != two.project.slug
    assert one.project.watched == f"{ingest.this_host()}:{first.resolve()}"
    assert two.project.watched == f"{ingest.this_host()}:{second.resolve()}"
    # Each keeps its own file at the same relative path.
    assert set(_paths(one.project)) == set(_paths(two.project)) == {"s.jsonl"}
    assert _paths(one.project) != _paths(two.project)
    # Watching again (the watcher restarted) finds the same projects and changes nothing.
    again = Watcher(owner, [second, first])
    assert [f.project_id for f in again.folders] == [two.project_id, one.project_id]
    again.catch_up()
    assert Transcript.objects.count() == 2


def test_the_same_session_in_two_watched_folders_is_stored_in_both(owner, tmp_path):
    first = _folder(tmp_path / "a" / "alpha", {"s.jsonl": read(KIMI)})
    second = _folder(tmp_path / "b" / "alpha", {"copy.jsonl": read(KIMI)})
    Watcher(owner, [first, second]).catch_up()
    one, two = (WatchedFolder.objects.get(path=str(root.resolve())) for root in (first, second))
    assert _paths(one.project) == {"s.jsonl": _paths(two.project)["copy.jsonl"]}
    for folder in (one, two):
        (row,) = folder.files.all()
        assert row.transcript.project == folder.project
        assert read_raw(row.transcript) == read(KIMI)


def test_watching_a_folder_named_like_a_scan_project_leaves_that_project_alone(owner, tmp_path):
    scanned = project_for(owner, "alpha")
    assert scanned is not None
    kept, _ = store_upload(owner, read(KIMI), "s.jsonl", project=scanned, relative_path="s.jsonl")
    root = _folder(tmp_path / "alpha", {"s.jsonl": broken_claude(), "t.jsonl": read(KIMI)})
    Watcher(owner, [root]).catch_up()
    (folder,) = WatchedFolder.objects.all()
    assert folder.project != scanned and folder.project.slug != "alpha"
    assert list(Transcript.objects.filter(project=scanned)) == [kept]
    assert read_raw(Transcript.objects.get(pk=kept.pk)) == read(KIMI)
    assert set(_paths(folder.project)) == {"s.jsonl", "t.jsonl"}
    # And a scan or upload naming "alpha" still goes to the scan project, not the folder's.
    assert project_for(owner, "alpha") == scanned
    assert project_for(owner, folder.project.name) != folder.project


def test_a_project_named_after_a_watched_folder_is_a_project_of_its_own(owner, tmp_path):
    root = _folder(tmp_path / "alpha", {"s.jsonl": read(KIMI)})
    Watcher(owner, [root]).catch_up()
    (folder,) = WatchedFolder.objects.all()
    assert folder.project.slug == "alpha"
    named = project_for(owner, "alpha")
    assert named is not None and named != folder.project and named.watched == ""
    assert named.slug == "alpha-2" and project_for(owner, "alpha") == named
    store_upload(owner, read(KIMI), "s.jsonl", project=named, relative_path="s.jsonl")
    assert Transcript.objects.filter(project=folder.project).count() == 1


def _grow(watcher: Watcher, path: Path) -> WatchedFile:
    with path.open("ab") as handle:
        handle.write(CUT_CALL)
    row = watcher.changed(path)
    assert row is not None
    return row


def test_a_growing_file_replaces_only_its_own_older_transcript(owner, tmp_path):
    root = _folder(tmp_path / "w", {"s.jsonl": read(KIMI), "twin.jsonl": read(KIMI)})
    watcher = Watcher(owner, [root])
    watcher.catch_up()
    (folder,) = WatchedFolder.objects.all()
    # The same bytes twice in the folder are stored once, and both files show them.
    (older,) = Transcript.objects.filter(project=folder.project)
    assert set(folder.files.values_list("transcript", flat=True)) == {older.pk}
    row = _grow(watcher, root / "s.jsonl")
    assert row.needs_repair and row.transcript != older
    # The twin's bytes did not change: its transcript stays (now under its own path).
    older.refresh_from_db()
    assert older.relative_path == "twin.jsonl" and older.project == folder.project
    assert folder.files.get(relative_path="twin.jsonl").transcript == older
    assert _paths(folder.project) == {"s.jsonl": row.transcript.sha256, "twin.jsonl": older.sha256}
    # Growing again replaces the file's own previous version, nothing else.
    previous = row.transcript
    again = _grow(watcher, root / "s.jsonl")
    assert not Transcript.objects.filter(pk=previous.pk).exists()
    assert _paths(folder.project) == {
        "s.jsonl": again.transcript.sha256,
        "twin.jsonl": older.sha256,
    }


def test_an_older_version_someone_shared_stays_reachable_when_the_file_grows(owner, tmp_path):
    root = _folder(tmp_path / "w", {"s.jsonl": read(KIMI)})
    watcher = Watcher(owner, [root])
    watcher.catch_up()
    (folder,) = WatchedFolder.objects.all()
    (shared,) = Transcript.objects.filter(project=folder.project)
    _, token = ShareLink.issue(shared, ShareLink.FULL, "7")
    row = _grow(watcher, root / "s.jsonl")
    shared.refresh_from_db()
    # Kept, out of the project: the project counts the file once, the link still opens.
    assert shared.project is None and read_raw(shared) == read(KIMI)
    assert list(Transcript.objects.filter(project=folder.project)) == [row.transcript]
    assert reports.project_totals(folder.project)["summary"].sessions == 1
    assert Client().get(reverse("shared_timeline", args=[token])).status_code == 200
    # A revoked link shows nothing: that version goes with the next change.
    link = ShareLink.objects.get()
    previous = row.transcript
    ShareLink.issue(previous, ShareLink.REDACTED, "7")[0].delete()
    _grow(watcher, root / "s.jsonl")
    assert not Transcript.objects.filter(pk=previous.pk).exists()
    assert Transcript.objects.filter(pk=link.transcript_id).exists()


def test_a_watched_projects_dashboard_names_its_folder_and_offers_no_scan_into_it(
    owner, tmp_path, owner_client
):
    root = _folder(tmp_path / "alpha", {"s.jsonl": read(KIMI)})
    Watcher(owner, [root]).catch_up()
    (folder,) = WatchedFolder.objects.all()
    page = owner_client.get(reverse("scan:project", args=[folder.project.slug])).content.decode()
    assert f"{ingest.this_host()}:{root.resolve()}" in page
    assert "Scan more sessions" not in page
    scanned = project_for(owner, "alpha")
    assert scanned is not None
    other = owner_client.get(reverse("scan:project", args=[scanned.slug])).content.decode()
    assert "Scan more sessions" in other
