"""Share tests build on the web fixtures (users, stored transcripts) and the browser ones."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from tests.web.conftest import (  # noqa: F401
    _fast_password_hashing,
    forget_diagnoses,
    refuse_long_lists,
    store_for,
    transcript,
)


@pytest.fixture
def make_link(request: pytest.FixtureRequest) -> Callable[..., tuple[object, str]]:
    """Issue a link (for ``transcript`` unless told otherwise); returns the row and the token."""
    from inspector.share.models import ShareLink

    def make(mode: str = "redacted", expiry: str = "7", for_transcript=None):
        target = for_transcript or request.getfixturevalue("transcript")
        return ShareLink.issue(target, mode, expiry)

    return make


@pytest.fixture
def freeze_time(monkeypatch: pytest.MonkeyPatch) -> Callable[[timedelta], None]:
    """Move ``django.utils.timezone.now`` forward by a fixed amount, frozen there."""
    from django.utils import timezone

    real_now = timezone.now

    def move(by: timedelta) -> None:
        frozen = real_now() + by
        monkeypatch.setattr(timezone, "now", lambda: frozen)

    return move
