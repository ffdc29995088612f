"""Stored bytes left without a row (a process killed mid-upload) are swept, safely."""

from __future__ import annotations

import os
import time

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from inspector.web.store import store_upload, sweep_orphans
from tests.hardening.conftest import orphans
from tests.objectstore import stored_names
from tests.web.conftest import canonical, user

pytestmark = pytest.mark.django_db


def _orphan(media_root, public_id: str, age_seconds: int) -> str:
    directory = f"transcripts/{public_id[:2]}/{public_id}"
    name = default_storage.save(f"{directory}/raw.zst", ContentFile(b"left behind"))
    then = time.time() - age_seconds
    os.utime(media_root / name, (then, then))
    return directory


def test_old_orphans_go_and_recent_ones_and_owned_files_stay(owner, media_root):
    transcript, _ = store_upload(owner, canonical(user("hello")), "kept.json")
    old = _orphan(media_root, "OldOrphanFolder0000001", age_seconds=3600)
    recent = _orphan(media_root, "NewOrphanFolder0000001", age_seconds=5)

    assert sweep_orphans(grace_seconds=600) == [old]

    assert not default_storage.exists(f"{old}/raw.zst")
    assert default_storage.exists(f"{recent}/raw.zst")  # maybe an upload still in flight
    assert default_storage.exists(transcript.raw_path)
    assert len(orphans(media_root)) == 1


def test_sweeping_an_empty_storage_does_nothing(media_root):
    assert sweep_orphans(grace_seconds=0) == []


@pytest.mark.usefixtures("any_storage")
def test_the_sweep_reads_the_ages_from_the_storage_itself(owner):
    # No file system to age a file on: the storage's own modified times decide.
    transcript, _ = store_upload(owner, canonical(user("hello")), "kept.json")
    kept = stored_names()
    directory = "transcripts/Or/OrphanFolder0000000001"
    default_storage.save(f"{directory}/raw.zst", ContentFile(b"left behind"))
    default_storage.save(f"{directory}/diagnosis-0.layout2.bin", ContentFile(b"cache"))

    assert sweep_orphans(grace_seconds=600) == []  # just written: maybe an upload in flight
    assert stored_names(directory) == [
        f"{directory}/diagnosis-0.layout2.bin",
        f"{directory}/raw.zst",
    ]
    assert sweep_orphans(grace_seconds=0) == [directory]

    assert stored_names() == kept and transcript.raw_path in kept
