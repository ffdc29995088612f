"""manage.py watch: new and changed sessions are diagnosed as they are written, in place repair."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from django.urls import reverse

from inspector.local import fix, opencode, sessions
from inspector.watch.models import WatchedFile, WatchedFolder
from inspector.watch.views import IN_PLACE_BACKUPS, can_repair_here
from inspector.watch.watcher import Watcher
from inspector.web.models import Transcript
from tests.local.conftest import (
    OPENCODE_BROKEN,
    attacked_store,
    changed,
    opencode_records,
    place_store,
    snapshot,
)
from tests.testdata import CORPUS, files, read

KIMI = (
    CORPUS
    / "openai-chat"
    / ("MoonshotAI-kimi-cli__pr127__531d195b-6436-426e-b010-4bf723a992de.kimi-context.jsonl")
)
CUT_CALL = (
    b'{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "tool_9",'
    b' "function": {"name": "Shell", "arguments": "{\\"command\\": \\"ls\\"}"}}]}\n'
)


def broken_claude() -> bytes:
    return read(files(CORPUS / "claude-code" / "broken", "*4c-02af2759b6*")[0])


def old(path: Path) -> Path:
    stamp = time.time() - 3600
    os.utime(path, (stamp, stamp))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    (root / "-work-app").mkdir(parents=True)
    old_path = root / "-work-app" / "5a3bb1c8-c3ce-466e-b487-24212cbf1da1.jsonl"
    old(_write(old_path, broken_claude()))
    old(_write(root / "kimi.jsonl", read(KIMI)))
    return root


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def listing(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.usefixtures("any_storage")
def test_catch_up_reads_every_session_into_a_project_named_after_the_folder(db, owner, folder):
    before = listing(folder)
    watcher = Watcher(owner, [folder])
    assert watcher.catch_up() == 2
    rows = {row.relative_path: row for row in WatchedFile.objects.all()}
    assert set(rows) == {"-work-app/5a3bb1c8-c3ce-466e-b487-24212cbf1da1.jsonl", "kimi.jsonl"}
    assert rows["-work-app/5a3bb1c8-c3ce-466e-b487-24212cbf1da1.jsonl"].needs_repair
    assert not rows["kimi.jsonl"].needs_repair and rows["kimi.jsonl"].broke_at is None
    (watched,) = WatchedFolder.objects.all()
    assert watched.project.name == "sessions" and watched.path == str(folder.resolve())
    stored = Transcript.objects.get(relative_path="kimi.jsonl")
    assert stored.project == watched.project and stored.format == "openai-chat"
    assert listing(folder) == before  # the watcher writes nothing in what it watches


@pytest.mark.usefixtures("any_storage")
def test_an_appended_line_is_read_alone_and_a_session_that_just_broke_comes_first(
    db, owner, folder, owner_client
):
    watcher = Watcher(owner, [folder])
    watcher.catch_up()
    read_before = watcher.follower.bytes_read
    kimi = folder / "kimi.jsonl"
    with kimi.open("ab") as handle:
        handle.write(CUT_CALL)
    row = watcher.changed(kimi)
    assert row is not None and row.needs_repair and row.broke_at is not None
    assert watcher.follower.bytes_read - read_before <= len(CUT_CALL) + 4096
    # The older transcript of that path was replaced, not kept beside it.
    assert Transcript.objects.filter(relative_path="kimi.jsonl").count() == 1
    project = row.folder.project
    html = owner_client.get(reverse("watch:panel", args=[project.slug])).content.decode()
    assert html.index("kimi.jsonl") < html.index("5a3bb1c8")
    assert 'hx-trigger="every 2s"' in html
    page = owner_client.get(reverse("scan:project", args=[project.slug])).content.decode()
    assert 'id="watched"' in page and "Repair in place" in page


def test_repair_in_place_fixes_the_file_and_the_dashboard_shows_it_clean(
    db, owner, folder, owner_client
):
    watcher = Watcher(owner, [folder])
    watcher.catch_up()
    row = WatchedFile.objects.get(needs_repair=True)
    path = folder / row.relative_path
    original = path.read_bytes()
    url = reverse("watch:repair", args=[row.folder.project.slug, row.pk])
    response = owner_client.post(url, follow=True)
    assert response.status_code == 200
    assert "Repaired" in response.content.decode()
    assert sessions.check(path).verdict == "clean"
    (backup,) = fix.backups_of(path)
    assert backup.read_bytes() == original
    row.refresh_from_db()
    assert not row.needs_repair and row.broke_at is None


def test_repair_in_place_never_writes_outside_the_watched_folder(db, owner, folder, owner_client):
    watcher = Watcher(owner, [folder])
    watcher.catch_up()
    outside = folder.parent / "outside.jsonl"
    old(_write(outside, broken_claude()))
    row = WatchedFile.objects.get(needs_repair=True)
    WatchedFile.objects.filter(pk=row.pk).update(relative_path="../outside.jsonl")
    url = reverse("watch:repair", args=[row.folder.project.slug, row.pk])
    assert owner_client.post(url).status_code == 404
    assert outside.read_bytes() == broken_claude()
    assert not fix.backups_of(outside)


def test_someone_else_cannot_repair_the_owners_session(db, owner, folder, other_client):
    Watcher(owner, [folder]).catch_up()
    row = WatchedFile.objects.get(needs_repair=True)
    before = listing(folder)
    url = reverse("watch:repair", args=[row.folder.project.slug, row.pk])
    assert other_client.post(url).status_code == 404
    assert listing(folder) == before


def test_a_missing_folder_is_named_and_the_others_still_watched(db, owner, folder, tmp_path):
    said: list[str] = []
    watcher = Watcher(owner, [tmp_path / "nope", folder], say=said.append)
    assert [f.path for f in watcher.folders] == [str(folder.resolve())]
    assert any("nope" in line and "not watched" in line for line in said)


@pytest.mark.slow
def test_the_running_watcher_sees_a_new_file_and_an_appended_line_within_seconds(
    transactional_db, owner, folder
):
    watcher = Watcher(owner, [folder])
    watcher.catch_up()
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        time.sleep(0.5)  # let the watch start
        new = folder / "-work-app" / "new-session.jsonl"
        new.write_bytes(read(KIMI))
        assert _until(
            lambda: WatchedFile.objects.filter(relative_path__endswith="new-session.jsonl")
        )
        with new.open("ab") as handle:
            handle.write(CUT_CALL)
        assert _until(
            lambda: WatchedFile.objects.filter(
                relative_path__endswith="new-session.jsonl", needs_repair=True
            )
        )
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()


def _until(found, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found().exists():
            return True
        time.sleep(0.1)
    return False


def _opencode_storage(tmp_path: Path) -> tuple[Path, Path]:
    """A broken OpenCode session in its storage folder (a part left running): the folder
    and the session's info file."""
    storage = tmp_path / "data" / "opencode" / "storage"
    return storage, place_store(storage, opencode_records(OPENCODE_BROKEN), 3600)


def test_watching_only_opencodes_session_folder_offers_no_repair_and_a_post_is_404(
    db, owner, tmp_path, owner_client
):
    storage, path = _opencode_storage(tmp_path)
    watcher = Watcher(owner, [storage / "session"])
    watcher.catch_up()
    (row,) = WatchedFile.objects.all()
    assert (
        row.needs_repair and row.relative_path == path.relative_to(storage / "session").as_posix()
    )
    assert not can_repair_here(row)
    before = snapshot(tmp_path)
    html = owner_client.get(reverse("watch:panel", args=[row.folder.project.slug])).content
    text = html.decode()
    assert "Repair in place" not in text
    assert f"would also write {storage.resolve()}, outside the watched folder" in text
    url = reverse("watch:repair", args=[row.folder.project.slug, row.pk])
    assert owner_client.post(url).status_code == 404
    assert changed(before, snapshot(tmp_path)) == set()


def test_repair_in_place_of_an_opencode_session_writes_only_inside_the_watched_storage(
    db, owner, tmp_path, owner_client
):
    storage, path = _opencode_storage(tmp_path)
    watcher = Watcher(owner, [storage])
    watcher.catch_up()
    (row,) = WatchedFile.objects.all()  # one session, not one row per message or part file
    assert row.needs_repair and can_repair_here(row)
    data = tmp_path / "data"  # all of OpenCode's folder (the server's own media is beside it)
    before = snapshot(data)
    url = reverse("watch:repair", args=[row.folder.project.slug, row.pk])
    response = owner_client.post(url, follow=True)
    assert "Repaired" in response.content.decode()
    assert sessions.check(path).verdict == "clean"
    row.refresh_from_db()
    assert not row.needs_repair and not row.error  # the whole session read again, clean
    touched = changed(before, snapshot(data))
    assert touched and [p for p in touched if not p.is_relative_to(storage)] == []
    backups = storage / IN_PLACE_BACKUPS
    assert fix.backups_of(path, backups)  # kept inside what the user named
    assert not (storage.parent / opencode.BACKUPS).exists()
    watcher.catch_up()  # the backups are not read as sessions
    assert WatchedFile.objects.count() == 1
    assert fix.undo(path, backup_dir=backups).status == "restored"


@pytest.mark.parametrize("record", ["message", "part"])
def test_repair_in_place_of_a_record_whose_id_climbs_out_writes_nothing(
    db, owner, tmp_path, owner_client, record
):
    storage = tmp_path / "data" / "opencode" / "storage"
    (tmp_path / "OUTSIDE").mkdir()
    path, victim = attacked_store(storage, record)
    watcher = Watcher(owner, [storage])
    watcher.catch_up()
    row = WatchedFile.objects.get(relative_path=path.relative_to(storage).as_posix())
    url = reverse("watch:repair", args=[row.folder.project.slug, row.pk])
    before = snapshot(tmp_path)
    # The attack: a row saying "needs repair" (as it did before the record changed).
    WatchedFile.objects.filter(pk=row.pk).update(needs_repair=True, error="")
    response = owner_client.post(url, follow=True)
    assert not list(tmp_path.rglob("PWNED_MSG*"))
    assert changed(before, snapshot(tmp_path)) == set()  # nothing written, nothing deleted
    assert "is not its file&#x27;s name" in response.content.decode()  # it says why
    # Read again, the session says why it is not read, and offers no repair.
    WatchedFile.objects.filter(pk=row.pk).delete()
    Watcher(owner, [storage]).catch_up()
    (row,) = WatchedFile.objects.all()  # one session, not one row per message or part file
    assert str(victim) in row.error and not row.needs_repair and not can_repair_here(row)
    url = reverse("watch:repair", args=[row.folder.project.slug, row.pk])
    assert owner_client.post(url).status_code == 404
    assert changed(before, snapshot(tmp_path)) == set()


def test_a_post_for_a_row_without_the_button_is_404(db, owner, folder, owner_client):
    Watcher(owner, [folder]).catch_up()
    clean = WatchedFile.objects.get(needs_repair=False)
    before = listing(folder)
    url = reverse("watch:repair", args=[clean.folder.project.slug, clean.pk])
    assert owner_client.post(url).status_code == 404
    assert listing(folder) == before


def test_the_watcher_reads_no_backup_or_hidden_file_as_a_session(db, owner, folder):
    (folder / ".transcript-inspector-backups" / "s").mkdir(parents=True)
    old(_write(folder / ".transcript-inspector-backups" / "s" / "copy.jsonl", read(KIMI)))
    old(_write(folder / "transcript-inspector-backups.json", read(KIMI)))  # a name, not a folder
    (folder / opencode.BACKUPS).mkdir()
    old(_write(folder / opencode.BACKUPS / "copy.json", read(KIMI)))
    old(_write(folder / f"kimi.jsonl{fix.BACKUP_MARK}20260101T000000Z", read(KIMI)))
    Watcher(owner, [folder]).catch_up()
    assert sorted(r.relative_path for r in WatchedFile.objects.all()) == [
        "-work-app/5a3bb1c8-c3ce-466e-b487-24212cbf1da1.jsonl",
        "kimi.jsonl",
        "transcript-inspector-backups.json",
    ]


def test_a_link_in_the_watched_folder_to_a_session_outside_is_not_read(db, owner, folder, tmp_path):
    outside = tmp_path / "elsewhere.jsonl"
    old(_write(outside, broken_claude()))
    (folder / "link.jsonl").symlink_to(outside)
    before = snapshot(tmp_path)
    Watcher(owner, [folder]).catch_up()
    assert not WatchedFile.objects.filter(relative_path="link.jsonl").exists()
    assert WatchedFile.objects.count() == 2
    media = tmp_path / "media"  # the server's own storage of what it read
    assert [p for p in changed(before, snapshot(tmp_path)) if not p.is_relative_to(media)] == []
