"""Hardening tests build on the web fixtures (users, stored transcripts) and the browser ones."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.web.conftest import (  # noqa: F401
    _fast_password_hashing,
    forget_diagnoses,
    store_for,
    transcript,
)


def stored_files(root: Path) -> set[str]:
    """Every file under MEDIA_ROOT, as storage names."""
    if not root.exists():
        return set()
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


def assert_consistent(root: Path) -> None:
    """Rows and stored bytes match one to one, and every row's bytes hash to its sha256."""
    assert_rows_whole(root)
    assert not orphans(root), f"stored bytes without a row: {orphans(root)}"


def assert_rows_whole(root: Path) -> None:
    """Every transcript row has its bytes in storage, and they hash to its sha256."""
    from inspector.web import store
    from inspector.web.models import Transcript

    files = stored_files(root)
    for row in Transcript.objects.all():
        assert row.raw_path in files, f"{row} has no stored bytes"
        data = store.read_raw(row)
        assert len(data) == row.size
        assert hashlib.sha256(data).hexdigest() == row.sha256, f"{row} differs from its sha256"


def orphans(root: Path) -> list[str]:
    """Stored transcript files that belong to no row.

    Each transcript keeps ``raw.zst`` and its diagnosis caches in its own
    directory; any other file under ``transcripts/`` is an orphan.
    """
    from inspector.web.models import Transcript, storage_dir

    directories = {
        storage_dir(public_id)
        for public_id in Transcript.objects.values_list("public_id", flat=True)
    }
    return sorted(
        name
        for name in stored_files(root)
        if name.startswith("transcripts/") and name.rpartition("/")[0] not in directories
    )


@pytest.fixture
def media_root(settings) -> Path:
    return Path(settings.MEDIA_ROOT)
