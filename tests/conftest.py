"""Fixtures shared by every test: users, clients, and isolated storage.

Engine and formats tests use none of these and need no database.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# The object storage fixtures: a real S3-compatible server (s3_server, s3_bucket, any_storage);
# private_copies: the temporary folders a step makes, and what each held when removed.
pytest_plugins = ["tests.objectstore", "tests.private_copies"]


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


# --- browser tests: Playwright driving Debian's Chromium against the live server ---
# Defined here, not in tests/browser/, because Playwright allows one instance per
# thread: every folder with browser tests shares this session-wide browser.

CHROMIUM = os.environ.get("INSPECTOR_CHROMIUM", "/usr/bin/chromium")
# Playwright's sync API runs an event loop in the test thread; Django's
# async-safety check would otherwise refuse ORM calls made by fixtures there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# The machine's network is closed: without these, Chromium keeps trying to
# reach Google's services and logs refused connections.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is missing at {CHROMIUM}: run `make test`, which installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server) -> Iterator[object]:
    context = browser.new_context(base_url=live_server.url, accept_downloads=True)
    page = context.new_page()
    page.csp_violations = []  # type: ignore[attr-defined]
    page.on(
        "console",
        lambda msg: (
            page.csp_violations.append(msg.text)  # type: ignore[attr-defined]
            if "Content Security Policy" in msg.text
            else None
        ),
    )
    yield page
    context.close()


def signed_in_cookie(user, url: str) -> dict:
    """A session cookie for ``user`` on the live server at ``url``, for a browser context."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return {"name": settings.SESSION_COOKIE_NAME, "value": session.session_key, "url": url}


@pytest.fixture
def signed_in_page(page, live_server, owner):
    """A page whose browser context carries the owner's session cookie."""
    page.context.add_cookies([signed_in_cookie(owner, live_server.url)])
    return page


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # `-m "not browser"` gives a quick run without Chromium.
    for item in items:
        if "page" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
