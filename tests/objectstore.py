"""A real S3-compatible HTTP server for the tests: moto's server mode, started once per run.

Tests that take ``any_storage`` run twice: on the local files of the
embedded default and on a fresh bucket of this server, through the same
settings a deployment sets (``INSPECTOR_S3_*``, ``inspector.settings``). In
the S3 run nothing may appear under the local media root.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The tests' ports (tests never take another helper's).
PORTS = range(9150, 9200)


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS.start}-{PORTS.stop - 1} for the S3 server")


class S3Server:
    """moto's S3 over HTTP in a thread of this process, and a client of it."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="test-key",
            aws_secret_access_key="test-secret",
        )

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        return sorted(item["Key"] for page in pages for item in page.get("Contents", ()))

    def stop(self) -> None:
        self._server.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    yield server
    server.stop()


def storage_settings(endpoint: str, bucket: str, prefix: str = "") -> dict[str, Any]:
    """``STORAGES["default"]`` as ``inspector.settings`` makes it from ``INSPECTOR_S3_*``."""
    from inspector.settings import default_storage_from

    return default_storage_from(
        {
            "INSPECTOR_S3_BUCKET": bucket,
            "INSPECTOR_S3_ENDPOINT_URL": endpoint,
            "INSPECTOR_S3_PREFIX": prefix,
        }
    )


@pytest.fixture
def s3_bucket(s3_server: S3Server, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The default storage on a new bucket of the S3 server, under a key prefix.

    Afterwards, nothing may be under the local media root: every stored byte
    went to the bucket.
    """
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the server's request log
    bucket = f"inspector-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=bucket)
    # Credentials as a deployment gives them: boto3 reads them from the environment.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    settings.STORAGES = {
        **settings.STORAGES,
        "default": storage_settings(s3_server.endpoint, bucket, prefix="team/inspector"),
    }
    from django.core.files.storage import default_storage

    assert getattr(default_storage, "bucket_name", None) == bucket  # the switch took
    media_root = Path(settings.MEDIA_ROOT)
    yield bucket
    # What the test patched on the storage goes before the storage does: the settings
    # fixture, set up after pytest-django's monkeypatch, puts back the local one first.
    monkeypatch.undo()
    written = [str(path) for path in media_root.rglob("*")] if media_root.exists() else []
    assert written == [], f"written to the local media root with S3 on: {written}"
    assert not media_root.exists()


@pytest.fixture(params=["local", "s3"])
def any_storage(request: pytest.FixtureRequest) -> str:
    """Run the test on local files and again on the S3 server; the name of the run."""
    if request.param == "s3":
        request.getfixturevalue("s3_bucket")
    return str(request.param)


def stored_names(directory: str = "") -> list[str]:
    """Every file the default storage holds under ``directory``, read by its own API.

    The same on local files and in a bucket (where a "folder" is a prefix), so
    a test of what is left after a delete holds on both.
    """
    from django.core.files.storage import default_storage

    try:
        folders, files = default_storage.listdir(directory)
    except FileNotFoundError:
        return []
    prefix = f"{directory}/" if directory else ""
    names = [f"{prefix}{name}" for name in files]
    for folder in folders:
        names += stored_names(f"{prefix}{folder}")
    return sorted(names)
