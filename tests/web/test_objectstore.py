"""Stored files in an S3-compatible object storage: through the storage API, never a path."""

from __future__ import annotations

import io

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

pytestmark = pytest.mark.django_db


def test_a_file_reads_back_by_ranges_and_seeks(s3_bucket, s3_server):
    data = bytes(range(256)) * 4096  # 1 MiB
    name = default_storage.save("transcripts/ab/abc/raw.zst", ContentFile(data))
    assert name == "transcripts/ab/abc/raw.zst"
    # Under the configured prefix, in the bucket.
    assert s3_server.keys(s3_bucket) == ["team/inspector/transcripts/ab/abc/raw.zst"]
    with default_storage.open(name, "rb") as handle:
        assert handle.read(10) == data[:10]
        handle.seek(500_000)
        assert handle.read(300_000) == data[500_000:800_000]
        assert handle.seek(-7, io.SEEK_END) == len(data) - 7
        assert handle.read() == data[-7:]
        assert handle.read(5) == b""
    with default_storage.open(name, "rb") as handle:
        assert handle.read() == data
