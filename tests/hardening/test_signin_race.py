"""A one-time link used by several requests at once, against a running server, signs in once.

The requests go through real sockets to pytest-django's live server (a
threaded WSGI server, one thread a request, each with its own database
connection), on whichever database the suite runs on: SQLite by default,
PostgreSQL under ``DATABASE_URL`` (``.ci/run``).
"""

from __future__ import annotations

import re
import threading

import pytest
import requests

from inspector.web.signin import signin_path

ROUNDS = 8


def browser(base: str) -> tuple[requests.Session, str]:
    """A fresh browser with its CSRF cookie and the form token to post with it."""
    session = requests.Session()
    page = session.get(f"{base}/login/", timeout=30)
    page.raise_for_status()
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found, "the sign-in page has no CSRF token"
    return session, found.group(1)


def race(base: str, path: str, browsers: list[tuple[requests.Session, str]]) -> list[int]:
    url = base + path
    start = threading.Barrier(len(browsers), timeout=30)
    statuses: list[int] = []

    def use(session: requests.Session, csrf: str) -> None:
        start.wait()
        response = session.post(
            url,
            data={"csrfmiddlewaretoken": csrf},
            headers={"Referer": url},
            allow_redirects=False,
            timeout=60,
        )
        statuses.append(response.status_code)

    threads = [threading.Thread(target=use, args=pair) for pair in browsers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    return statuses


def signed_in(session: requests.Session, base: str) -> bool:
    # The account page sends anyone not signed in to the sign-in page.
    return session.get(f"{base}/account/", allow_redirects=False, timeout=30).status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("racers", [2, 5])
def test_a_link_made_and_used_at_once_by_several_requests_signs_in_once(live_server, owner, racers):
    base = live_server.url
    for _ in range(ROUNDS):
        browsers = [browser(base) for _ in range(racers)]
        # Each round's link is made right after the last round's sign-in: a
        # validity resting on a sign-in time kept to the second would pass twice.
        owner.refresh_from_db()
        statuses = race(base, signin_path(owner), browsers)
        assert sorted(statuses) == [302] + [400] * (racers - 1), statuses
        assert sum(signed_in(session, base) for session, _ in browsers) == 1


@pytest.mark.django_db(transaction=True)
def test_a_link_shown_first_then_used_twice_at_once_signs_in_once(live_server, owner):
    base = live_server.url
    for _ in range(ROUNDS):
        owner.refresh_from_db()
        path = signin_path(owner)
        browsers = [browser(base) for _ in range(2)]
        for session, _ in browsers:  # GET only shows the button and leaves the link unused
            assert session.get(base + path, timeout=30).status_code == 200
        assert sorted(race(base, path, browsers)) == [302, 400]
