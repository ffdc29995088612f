"""Stored files in an S3-compatible object storage: through the storage API, never a path.

Against moto's S3 over HTTP (tests/objectstore.py), as a deployment sets it
with ``INSPECTOR_S3_*``.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from inspector.diagnosis import ENGINE_VERSION
from inspector.scan.workers import storage_env, worker_env
from inspector.settings import default_storage_from
from inspector.web import objectstore, store
from inspector.web.models import Transcript
from tests.web.conftest import BROKEN_CANONICAL, broken_history
from tests.web.test_diagnosis_cache import cold_get, row_keys, timeline_url

pytestmark = pytest.mark.django_db

PREFIX = "team/inspector/"  # what s3_bucket sets INSPECTOR_S3_PREFIX to


def test_a_file_reads_back_by_ranges_and_seeks(s3_bucket, s3_server):
    data = bytes(range(256)) * 4096  # 1 MiB
    name = default_storage.save("transcripts/ab/abc/raw.zst", ContentFile(data))
    assert name == "transcripts/ab/abc/raw.zst"
    # Under the configured prefix, in the bucket.
    assert s3_server.keys(s3_bucket) == [f"{PREFIX}transcripts/ab/abc/raw.zst"]
    with default_storage.open(name, "rb") as handle:
        assert handle.read(10) == data[:10]
        handle.seek(500_000)
        assert handle.read(300_000) == data[500_000:800_000]
        assert handle.seek(-7, io.SEEK_END) == len(data) - 7
        assert handle.read() == data[-7:]
        assert handle.read(5) == b""
    with default_storage.open(name, "rb") as handle:
        assert handle.seek(0, io.SEEK_END) == len(data)  # its length asked before any read
        handle.seek(0)
        assert handle.read() == data


@pytest.fixture
def gets(monkeypatch) -> list[tuple[int, int | None, int]]:
    """Each GET the storage makes: where it starts, how much it asks, how much came."""
    made: list[tuple[int, int | None, int]] = []
    real_get = objectstore.RangedReader._get

    def counting(self, start, length):
        data = real_get(self, start, length)
        made.append((start, length, len(data)))
        return data

    monkeypatch.setattr(objectstore.RangedReader, "_get", counting)
    return made


def test_small_reads_in_a_row_fetch_ahead_and_a_read_after_a_seek_fetches_exactly(s3_bucket, gets):
    members = {f"session-{n:03d}.jsonl": bytes([65 + n % 26]) * 900 for n in range(60)}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    default_storage.save("upload.zip", ContentFile(buffer.getvalue()))
    with default_storage.open("upload.zip", "rb") as handle, zipfile.ZipFile(handle) as archive:
        assert {info.filename: archive.read(info) for info in archive.infolist()} == members
    # The directory, then a member's header and name, whose read fetches ahead: the
    # others come with it (60 members, a GET or three each, read one by one).
    assert len(gets) <= 6

    data = bytes(range(256)) * 16384  # 4 MiB
    default_storage.save("stream.bin", ContentFile(data))
    gets.clear()
    with default_storage.open("stream.bin", "rb") as handle:
        assert b"".join(handle.chunks(64 * 1024)) == data
    assert len(gets) <= 10  # not one per 64 KB chunk (64): the window doubles
    gets.clear()
    with default_storage.open("stream.bin", "rb") as handle:
        handle.seek(1_000_000)
        assert handle.read(5000) == data[1_000_000:1_005_000]
        handle.seek(3_000_000)
        assert handle.read(100) == data[3_000_000:3_000_100]
    assert gets == [(1_000_000, 5000, 5000), (3_000_000, 100, 100)]


def test_an_empty_file_and_a_missing_one_read_as_on_a_disk(s3_bucket):
    default_storage.save("empty.bin", ContentFile(b""))
    with default_storage.open("empty.bin", "rb") as handle:
        assert handle.read() == b"" and handle.read(10) == b""
    with pytest.raises(FileNotFoundError), default_storage.open("missing.bin", "rb") as handle:
        handle.read(1)


def test_an_object_replaced_while_open_fails_the_read_instead_of_mixing_bytes(s3_bucket, s3_server):
    default_storage.save("cache.bin", ContentFile(b"a" * 200_000))
    with default_storage.open("cache.bin", "rb") as handle:
        assert handle.read(10) == b"a" * 10
        # Another writer puts new bytes under the same key meanwhile.
        s3_server.client().put_object(
            Bucket=s3_bucket, Key=f"{PREFIX}cache.bin", Body=b"b" * 200_000
        )
        handle.seek(150_000)
        with pytest.raises(OSError, match="replaced"):
            handle.read(10)


def test_a_taken_name_is_never_overwritten(s3_bucket):
    first = default_storage.save("files/000001.json", ContentFile(b"first"))
    second = default_storage.save("files/000001.json", ContentFile(b"second"))
    assert first == "files/000001.json" and second != first
    with default_storage.open(first, "rb") as handle:
        assert handle.read() == b"first"


def test_objects_are_private_and_never_linked_to(s3_bucket, s3_server, owner):
    transcript, _ = store.store_upload(owner, BROKEN_CANONICAL, "broken.json")
    for key in s3_server.keys(s3_bucket):
        grants = s3_server.client().get_object_acl(Bucket=s3_bucket, Key=key)["Grants"]
        assert [grant["Permission"] for grant in grants] == ["FULL_CONTROL"]
        assert all(grant["Grantee"]["Type"] == "CanonicalUser" for grant in grants)
    with pytest.raises(NotImplementedError):
        default_storage.url(transcript.raw_path)


def test_upload_timeline_download_and_delete_write_nothing_to_the_local_disk(
    s3_bucket, s3_server, owner_client, settings, django_capture_on_commit_callbacks
):
    upload = SimpleUploadedFile("broken.json", BROKEN_CANONICAL)
    response = owner_client.post(reverse("upload"), {"file": upload})
    assert response.status_code == 302
    transcript = Transcript.objects.get()
    keys = s3_server.keys(s3_bucket)
    assert keys == sorted(
        f"{PREFIX}{name}"
        for name in (
            transcript.raw_path,
            store._diagnosis_path(transcript.public_id, transcript.engine_version),
        )
    )
    page = cold_get(owner_client, timeline_url(transcript))
    assert page.status_code == 200 and row_keys(page.content.decode())
    original = owner_client.get(reverse("download", args=[transcript.public_id, "original"]))
    assert original.status_code == 200 and original.content == BROKEN_CANONICAL
    assert not Path(settings.MEDIA_ROOT).exists()  # nothing local, not even a folder

    with django_capture_on_commit_callbacks(execute=True):
        owner_client.post(reverse("delete", args=[transcript.public_id]))
    assert s3_server.keys(s3_bucket) == []
    assert not Path(settings.MEDIA_ROOT).exists()


def test_a_later_page_fetches_a_small_part_of_the_cache_from_the_bucket(
    s3_bucket, owner_client, store_for, gets, forget_diagnoses
):
    transcript = store_for(broken_history(1500), "longer.json")  # 3,305 rows, 17 pages
    size = default_storage.size(store._diagnosis_path(transcript.public_id, ENGINE_VERSION))
    gets.clear()
    response = cold_get(owner_client, timeline_url(transcript, page=9))
    assert response.status_code == 200 and len(row_keys(response.content.decode())) > 0
    # The prefix, header and index, then the page's chunks: a few GETs, a fraction of it.
    assert 0 < sum(came for _, _, came in gets) < size / 4
    assert len(gets) <= 6


def test_the_settings_choose_the_storage_from_the_variables():
    assert default_storage_from({}) == {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    chosen = default_storage_from(
        {
            "INSPECTOR_S3_BUCKET": "sessions",
            "INSPECTOR_S3_ENDPOINT_URL": "http://10.0.0.5:9000",
            "INSPECTOR_S3_PREFIX": "/inspector/",
        }
    )
    assert chosen["BACKEND"] == "inspector.web.objectstore.ObjectStorage"
    assert chosen["OPTIONS"] == {
        "bucket_name": "sessions",
        "endpoint_url": "http://10.0.0.5:9000",
        "region_name": "us-east-1",
        "location": "inspector",
        "addressing_style": "path",
    }
    aws = default_storage_from({"INSPECTOR_S3_BUCKET": "b", "INSPECTOR_S3_REGION": "eu-west-3"})
    assert aws["OPTIONS"]["region_name"] == "eu-west-3"
    assert aws["OPTIONS"]["endpoint_url"] is None and aws["OPTIONS"]["addressing_style"] is None


def test_workers_are_started_on_the_storage_this_process_uses(s3_bucket, s3_server, monkeypatch):
    monkeypatch.setenv("INSPECTOR_MEDIA_ROOT", "/somewhere/else")
    env = worker_env()
    assert env["INSPECTOR_S3_BUCKET"] == s3_bucket
    assert env["INSPECTOR_S3_ENDPOINT_URL"] == s3_server.endpoint
    assert env["INSPECTOR_S3_PREFIX"] == "team/inspector"
    assert env["INSPECTOR_S3_REGION"] == "us-east-1"
    # The worker's settings make the same storage from these.
    assert default_storage_from(env)["OPTIONS"]["bucket_name"] == s3_bucket


def test_workers_on_local_files_get_no_bucket(settings, monkeypatch, tmp_path):
    monkeypatch.setenv("INSPECTOR_S3_BUCKET", "left-from-elsewhere")
    env = storage_env(default_storage)
    assert env == {"INSPECTOR_S3_BUCKET": None, "INSPECTOR_MEDIA_ROOT": str(tmp_path / "media")}
