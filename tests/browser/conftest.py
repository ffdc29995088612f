"""Playwright driving Debian's Chromium against pytest-django's live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.browser)


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


@pytest.fixture
def signed_in_page(page, live_server, owner):
    """A page whose browser context carries the owner's session cookie."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(owner.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = owner.get_session_auth_hash()
    session.save()
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": session.session_key,
                "url": live_server.url,
            }
        ]
    )
    return page
