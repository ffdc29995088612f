"""Password sign-in is throttled per account and per address; a one-time link signs in once."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import SESSION_KEY
from django.db import connections
from django.test import Client
from django.urls import reverse

from inspector.web.signin import SignInTokenGenerator, signin_path, signin_tokens

PASSWORD = "owner-pass-123"  # the owner fixture's


def sign_in(client: Client, username: str, password: str, address: str = "198.51.100.7"):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address
    )


def signed_in(client: Client) -> bool:
    return SESSION_KEY in client.session


@pytest.mark.django_db
def test_thirty_wrong_passwords_then_the_right_one_does_not_sign_in(client, owner, settings):
    for _ in range(30):
        sign_in(client, "owner", "wrong")
    response = sign_in(client, "owner", PASSWORD)
    assert response.status_code == 429
    assert not signed_in(client)
    assert b"Too many failed sign-ins" in response.content
    assert b"signin_link" in response.content


@pytest.mark.django_db
def test_failures_below_the_limit_leave_the_right_password_working(client, owner, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, "owner", "wrong").status_code == 200
    assert sign_in(client, "owner", PASSWORD).status_code == 302
    assert signed_in(client)


@pytest.mark.django_db
def test_failures_of_one_account_from_one_address_lock_that_pair(client, owner, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), "owner", "wrong", address="203.0.113.5")
    assert sign_in(client, "owner", PASSWORD, address="203.0.113.5").status_code == 429
    assert not signed_in(client)


@pytest.mark.django_db
def test_one_address_cannot_lock_an_account_out_for_everyone_else(client, owner, settings):
    # Far past every ceiling one address can reach on its own.
    for _ in range(settings.INSPECTOR_SIGNIN_ADDRESS_FAILURES + 10):
        sign_in(Client(), "owner", "wrong", address="203.0.113.5")
    assert sign_in(Client(), "owner", PASSWORD, address="203.0.113.5").status_code == 429
    assert sign_in(client, "owner", PASSWORD, address="192.0.2.50").status_code == 302
    assert signed_in(client)


@pytest.mark.django_db
def test_an_account_is_locked_after_its_ceiling_from_many_addresses(client, owner, settings):
    settings.INSPECTOR_SIGNIN_ADDRESS_FAILURES = 8
    settings.INSPECTOR_SIGNIN_ACCOUNT_FAILURES = 12
    below_the_pair = settings.AXES_FAILURE_LIMIT - 1
    failures = 0
    n = 0
    while failures < settings.INSPECTOR_SIGNIN_ACCOUNT_FAILURES:
        n += 1
        for _ in range(min(below_the_pair, settings.INSPECTOR_SIGNIN_ACCOUNT_FAILURES - failures)):
            assert sign_in(Client(), "owner", "wrong", address=f"203.0.113.{n}").status_code in (
                200,
                429,
            )
            failures += 1
    assert sign_in(client, "owner", PASSWORD, address="192.0.2.50").status_code == 429
    assert not signed_in(client)


@pytest.mark.django_db
def test_one_failure_short_of_the_account_ceiling_still_signs_in(client, owner, settings):
    settings.INSPECTOR_SIGNIN_ADDRESS_FAILURES = 8
    settings.INSPECTOR_SIGNIN_ACCOUNT_FAILURES = 12
    for n in range(settings.INSPECTOR_SIGNIN_ACCOUNT_FAILURES - 1):
        sign_in(Client(), "owner", "wrong", address=f"203.0.113.{n + 1}")
    assert sign_in(client, "owner", PASSWORD, address="192.0.2.50").status_code == 302


@pytest.mark.django_db
def test_an_address_is_locked_whichever_accounts_it_tries(client, owner, other_user, settings):
    for n in range(settings.INSPECTOR_SIGNIN_ADDRESS_FAILURES):
        sign_in(Client(), f"guess{n}", "wrong", address="203.0.113.99")
    assert sign_in(client, "mallory", "other-pass-123", address="203.0.113.99").status_code == 429
    assert not signed_in(client)
    # The same account from another address is not the address's fault.
    assert sign_in(Client(), "mallory", "other-pass-123", address="192.0.2.1").status_code == 302


@pytest.mark.django_db
def test_another_accounts_sign_in_does_not_clear_an_accounts_failures(
    client, owner, other_user, settings
):
    # The attack the issue ran: rounds of "limit - 1 wrong passwords for one
    # account, then another account signs in", all from one address.
    address = "203.0.113.40"
    for _ in range(3):
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            sign_in(Client(), "owner", "wrong", address=address)
        assert sign_in(Client(), "mallory", "other-pass-123", address=address).status_code in (
            302,
            429,
        )
    assert sign_in(client, "owner", PASSWORD, address=address).status_code == 429
    assert not signed_in(client)


@pytest.mark.django_db
def test_a_sign_in_clears_its_own_failures(client, owner, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(Client(), "owner", "wrong")
    assert sign_in(Client(), "owner", PASSWORD).status_code == 302
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in(Client(), "owner", "wrong")
    assert sign_in(client, "owner", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_a_locked_account_can_still_use_a_one_time_link(client, owner, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), "owner", "wrong")
    assert client.post(signin_path(owner)).status_code == 302
    assert signed_in(client)


@pytest.mark.django_db
def test_consuming_a_link_twice_from_the_same_reading_succeeds_once(owner):
    token = signin_tokens.make_token(owner)
    first, second = type(owner).objects.get(pk=owner.pk), type(owner).objects.get(pk=owner.pk)
    assert signin_tokens.check_token(first, token) and signin_tokens.check_token(second, token)
    assert signin_tokens.consume(first, token) is True
    assert signin_tokens.consume(second, token) is False
    assert not signin_tokens.check_token(first, token)


@pytest.mark.django_db(transaction=True)
def test_a_one_time_link_used_twice_at_once_signs_in_once(owner, monkeypatch):
    path = signin_path(owner)
    # Both requests pass the token check before either goes on: the race the
    # issue saw, made certain.
    arrived = threading.Barrier(2, timeout=20)
    check = SignInTokenGenerator.check_token

    def check_then_wait(self, user, token):
        valid = check(self, user, token)
        arrived.wait()
        return valid

    monkeypatch.setattr(SignInTokenGenerator, "check_token", check_then_wait)
    outcomes: list[tuple[int, bool]] = []

    def use_the_link() -> None:
        try:
            browser = Client()
            response = browser.post(path)
            outcomes.append((response.status_code, signed_in(browser)))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=use_the_link) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == [(302, True), (400, False)]
