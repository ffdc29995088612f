"""Fixtures shared by every test: users, clients, and isolated storage.

Engine and formats tests use none of these and need no database.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"
CASES = SHARED / "spec" / "cases"


@pytest.fixture(autouse=True)
def _isolated_storage_and_tasks(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # Only tests that touch Django settings pay for this; pure tests skip it.
    if "settings" not in request.fixturenames and not _uses_django(request):
        return
    settings = request.getfixturevalue("settings")
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}


def _uses_django(request: pytest.FixtureRequest) -> bool:
    names = set(request.fixturenames)
    return bool(
        names
        & {
            "db",
            "client",
            "owner",
            "other_user",
            "owner_client",
            "other_client",
            "transactional_db",
            "live_server",
            "django_db_setup",
        }
    ) or bool(request.node.get_closest_marker("django_db"))


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="owner", password="owner-pass-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="mallory", password="other-pass-123")


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def other_client(other_user):
    from django.test import Client

    other = Client()
    other.force_login(other_user)
    return other
