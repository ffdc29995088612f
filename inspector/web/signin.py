"""One-time sign-in links for the local owner account.

The token is Django's password-reset token machinery with its own salt: it
hashes the user's ``last_login``, so signing in once (which updates
``last_login``, by a compare-and-set that only one request can win)
invalidates the link, and it expires after
``INSPECTOR_SIGNIN_LINK_SECONDS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.encoding import force_bytes
from django.utils.http import base36_to_int, urlsafe_base64_encode

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class SignInTokenGenerator(PasswordResetTokenGenerator):
    key_salt = "inspector.web.signin.SignInTokenGenerator"

    def __init__(self) -> None:
        super().__init__()
        self.timeout_seconds = getattr(settings, "INSPECTOR_SIGNIN_LINK_SECONDS", 15 * 60)

    def _make_hash_value(self, user: AbstractBaseUser, timestamp: int) -> str:
        login = (
            "" if user.last_login is None else user.last_login.replace(microsecond=0, tzinfo=None)
        )
        return f"{user.pk}{user.password}{login}{timestamp}{user.is_active}"

    def check_token(self, user: User | None, token: str | None) -> bool:
        # The parent reads PASSWORD_RESET_TIMEOUT; a sign-in link has its own,
        # shorter life, so the check is written out here.
        if not (user and token) or token.count("-") != 1:
            return False
        ts_b36, _ = token.split("-")
        try:
            ts = base36_to_int(ts_b36)
        except ValueError:
            return False
        expected = self._make_token_with_timestamp(user, ts, self.secret)
        if not constant_time_compare(expected, token):
            return False
        return 0 <= self._num_seconds(self._now()) - ts <= self.timeout_seconds

    def consume(self, user: AbstractBaseUser) -> bool:
        """Use the link up, once: ``True`` for the one request that does.

        The token is valid while ``last_login`` is what it hashed; moving
        ``last_login`` on, only from the value this request read, is one
        compare-and-set in the database, so of two requests that checked the
        same token at the same time exactly one signs in.
        """
        unchanged = type(user)._default_manager.filter(pk=user.pk)
        if user.last_login is None:
            unchanged = unchanged.filter(last_login__isnull=True)
        else:
            unchanged = unchanged.filter(last_login=user.last_login)
        return unchanged.update(last_login=timezone.now()) == 1


signin_tokens = SignInTokenGenerator()


def signin_path(user: User) -> str:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("signin_link", args=[uid, signin_tokens.make_token(user)])


def ensure_owner(username: str = "owner") -> tuple[User, bool]:
    """The first superuser, created with an unusable password if none exists."""
    User = get_user_model()
    existing = User.objects.filter(is_superuser=True).order_by("pk").first()
    if existing is not None:
        return existing, False
    user = User.objects.create_superuser(username=username, email="", password=None)
    return user, True
