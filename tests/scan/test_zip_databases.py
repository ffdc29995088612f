"""A scan of an uploaded zip takes the sessions kept in agents' databases among its members,
as a folder scan does: each session its own transcript named ``<member>/<sessionID>``, read
read-only from a private temporary copy (SQLite reads only files; the upload may be in object
storage) that is gone afterwards, also when the member cannot be read."""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from inspector.local import databases
from inspector.scan.models import ScanJob
from inspector.web.models import Transcript
from tests.local.conftest import changed, snapshot
from tests.local.test_hermes_db import LOG, SECOND, SID, make_db, wal_database
from tests.local.test_opencode_v2 import SESSION, make_v2_database
from tests.private_copies import HELD
from tests.scan.conftest import MIXED, zip_with
from tests.scan.test_upload import post_scan

pytestmark = pytest.mark.django_db

CUT = MIXED["alpha/cut-call.jsonl"].read_bytes()
CLEAN = MIXED["alpha/clean.jsonl"].read_bytes()


@pytest.mark.usefixtures("any_storage")
def test_each_session_of_a_database_in_a_zip_is_a_transcript_and_its_copy_is_gone(
    owner_client, tmp_path: Path, private_copies: list[Path]
):
    make_v2_database(tmp_path / "opencode.db", "interrupted", age=3600)
    (tmp_path / "hermes").mkdir()
    make_db(tmp_path / "hermes" / "state.db", LOG)
    members = {
        "opencode/opencode.db": (tmp_path / "opencode.db").read_bytes(),
        "opencode/opencode.db-wal": b"",  # its log beside it (empty): copied with it
        "hermes/state.db": (tmp_path / "hermes" / "state.db").read_bytes(),
        "claude/cut.jsonl": CUT,
        "claude/clean.jsonl": CLEAN,
    }
    response = post_scan(owner_client, ("agents.zip", zip_with(members)))
    job = ScanJob.objects.get()
    assert response.status_code == 302
    stored = dict(Transcript.objects.values_list("relative_path", "needs_repair"))
    assert stored == {
        f"opencode/opencode.db/{SESSION}": True,
        f"hermes/state.db/{SID}": True,
        "claude/cut.jsonl": True,
        "claude/clean.jsonl": False,
    }
    assert (job.status, job.total, job.new, job.unreadable) == ("done", 4, 4, 0)
    shapes = dict(Transcript.objects.values_list("relative_path", "format"))
    assert shapes[f"hermes/state.db/{SID}"] != shapes[f"opencode/opencode.db/{SESSION}"]
    assert all(shapes.values())
    assert not any("opencode/opencode.db-wal" in note for note in job.notes)
    # One private copy per database member, and none is left; nothing left in storage.
    assert len(private_copies) == 2
    assert not any(path.exists() for path in private_copies)
    # OpenCode's (WAL) read with its log (SQLite made its index beside it); Hermes's alone.
    assert sorted(HELD.values()) == [
        ["opencode.db", "opencode.db-shm", "opencode.db-wal"],
        ["state.db"],
    ]
    assert not default_storage.exists(job.storage_dir)


@pytest.mark.usefixtures("any_storage")
def test_a_database_member_it_cannot_read_is_unreadable_and_the_rest_scanned(
    owner_client, private_copies: list[Path]
):
    members = {
        "goose/sessions.db": b"not a database at all" * 100,
        "claude/cut.jsonl": CUT,
    }
    post_scan(owner_client, ("agents.zip", zip_with(members)))
    job = ScanJob.objects.get()
    assert (job.status, job.total, job.new, job.unreadable) == ("done", 2, 1, 1)
    assert set(Transcript.objects.values_list("relative_path", flat=True)) == {"claude/cut.jsonl"}
    reason = job.files.get(path="goose/sessions.db").reason
    assert reason.startswith("This member could not be read as sessions.db")
    assert "inspector-zipdb" not in reason  # our temporary path is not shown
    assert len(private_copies) == 1
    assert not private_copies[0].exists()


@pytest.mark.usefixtures("any_storage")
def test_a_session_id_naming_a_path_reads_no_file(owner_client, tmp_path: Path):
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(CUT)
    make_db(tmp_path / "state.db", LOG, sid=f"../../../../../../../../..{secret}")
    post_scan(
        owner_client, ("agents.zip", zip_with({"state.db": (tmp_path / "state.db").read_bytes()}))
    )
    job = ScanJob.objects.get()
    assert not Transcript.objects.exists()
    assert (job.total, job.unreadable) == (1, 1)
    assert "no session name" in job.files.get().reason


def test_the_private_copy_goes_when_reading_fails_unexpectedly(
    owner_client, tmp_path: Path, private_copies: list[Path], monkeypatch: pytest.MonkeyPatch
):
    from inspector.local import stores

    class Failing:
        def read(self, path: Path) -> bytes:
            raise RuntimeError("a reader bug")

    make_db(tmp_path / "state.db", LOG)
    monkeypatch.setattr(stores, "for_path", lambda path: Failing())
    post_scan(owner_client, ("a.zip", zip_with({"state.db": (tmp_path / "state.db").read_bytes()})))
    assert not Transcript.objects.exists()
    job = ScanJob.objects.get()  # the bug is this session's alone
    assert (job.status, job.total, job.unreadable) == ("done", 1, 1)
    assert "bug in Transcript Inspector" in job.files.get().reason
    assert len(private_copies) == 1
    assert not private_copies[0].exists()


@pytest.mark.usefixtures("any_storage")
def test_a_session_whose_last_write_is_no_time_is_still_scanned(owner_client, tmp_path: Path):
    make_db(tmp_path / "state.db", LOG)
    with sqlite3.connect(tmp_path / "state.db") as connection:
        connection.execute("UPDATE messages SET timestamp = 1e300")
        connection.execute("UPDATE sessions SET started_at = 1e300")
    connection.close()
    post_scan(owner_client, ("a.zip", zip_with({"state.db": (tmp_path / "state.db").read_bytes()})))
    job = ScanJob.objects.get()
    assert (job.status, job.new) == ("done", 1)
    assert Transcript.objects.get().relative_path == f"state.db/{SID}"


def _aged(path: Path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp), follow_symlinks=False)


def test_the_next_zip_step_removes_only_our_stale_private_folders(
    owner_client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A worker killed mid-step leaves its private folder; the next zip step sweeps such
    folders: only ours (named as ours, a folder, not a link), in the temporary base, left
    untouched for hours; a link inside one is removed, never followed."""
    tree = tmp_path / "tree"
    temp, outside = tree / "tmp", tree / "outside"
    temp.mkdir(parents=True)
    outside.mkdir()
    (outside / "victim.txt").write_bytes(b"not yours")
    (outside / "folder").mkdir()
    (outside / "folder" / "kept.db").write_bytes(b"kept")
    day = 24 * 3600.0
    stale = temp / "inspector-zipdb-k1lled0a"  # a killed step's: removed, links in it not followed
    stale.mkdir()
    (stale / "state.db").write_bytes(b"a copy")
    (stale / "link").symlink_to(outside / "folder")
    (stale / "file-link").symlink_to(outside / "victim.txt")
    killed_upload = temp / "inspector-db-k1lled0b"  # a killed upload's copy: removed too
    killed_upload.mkdir()
    (killed_upload / "upload").write_bytes(b"an uploaded copy")
    fresh = temp / "inspector-zipdb-running"  # a step running now: kept
    fresh.mkdir()
    (fresh / "opencode.db").write_bytes(b"being read")
    busy = temp / "inspector-zipdb-oldbutbu"  # made long ago, written in just now: kept
    busy.mkdir()
    (busy / "opencode.db-wal").write_bytes(b"new")
    (temp / "inspector-zipdb-alinkto1").symlink_to(outside / "folder")  # a link: kept
    (temp / "inspector-zipdb-afile123").write_bytes(b"a file")  # not a folder: kept
    (temp / "inspector-zipdb-notours").mkdir()  # not a name of ours (7 letters): kept
    (temp / "someone-elses-12345678").mkdir()  # not our prefix: kept
    for path in [*stale.iterdir(), stale, *killed_upload.iterdir(), killed_upload, busy,
                 *temp.glob("inspector-zipdb-a*"), temp / "inspector-zipdb-notours",
                 temp / "someone-elses-12345678"]:  # fmt: skip
        _aged(path, day)
    before = snapshot(tree)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    make_db(tmp_path / "state.db", LOG)
    post_scan(owner_client, ("a.zip", zip_with({"state.db": (tmp_path / "state.db").read_bytes()})))
    assert ScanJob.objects.get().new == 1
    gone = changed(before, snapshot(tree))
    assert gone == {
        stale,
        stale / "state.db",
        stale / "link",
        stale / "file-link",
        killed_upload,
        killed_upload / "upload",
    }
    assert not stale.exists() and (outside / "folder" / "kept.db").read_bytes() == b"kept"
    assert databases.sweep_private_folders() == []  # nothing more to sweep


@pytest.mark.usefixtures("any_storage")
def test_a_databases_wal_member_is_read_with_it(
    owner_client, tmp_path: Path, private_copies: list[Path]
):
    files = wal_database(tmp_path)
    members = {f"hermes/{name}": data for name, data in files.items()}
    post_scan(owner_client, ("agents.zip", zip_with(members)))
    job = ScanJob.objects.get()
    # The session only the -wal holds is read too (the one folder in front is stripped).
    assert set(Transcript.objects.values_list("relative_path", flat=True)) == {
        f"state.db/{SID}",
        f"state.db/{SECOND}",
    }
    assert (job.status, job.total, job.new, job.unreadable) == ("done", 2, 2, 0)
    # Its -shm is not copied (SQLite made its own in the private folder), and says so.
    assert [HELD[p] for p in private_copies] == [["state.db", "state.db-shm", "state.db-wal"]]
    assert not any(path.exists() for path in private_copies)
    assert any("hermes/state.db-shm" in note and "index" in note for note in job.notes)
    assert not any("hermes/state.db-wal" in note for note in job.notes)


@pytest.mark.usefixtures("any_storage")
def test_without_its_wal_a_wal_database_gives_what_it_holds_and_says_so(owner_client, tmp_path):
    files = wal_database(tmp_path)
    members = {"hermes/state.db": files["state.db"], "other/state.db-wal": files["state.db-wal"]}
    post_scan(owner_client, ("agents.zip", zip_with(members)))
    job = ScanJob.objects.get()
    # A -wal in another folder is no log of this database: not read, and said so.
    assert set(Transcript.objects.values_list("relative_path", flat=True)) == {f"state.db/{SID}"}
    assert any("other/state.db-wal" in note and "journal" in note for note in job.notes)
