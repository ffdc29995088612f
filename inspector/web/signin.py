"""One-time sign-in links for the local owner account.

A link carries a random token; the database keeps its sha256 (``SignInLink``),
when it was made and when it was used. Using it is one conditional UPDATE
(``used`` set where it is still NULL and the link is young enough) whose row
count decides: on SQLite and PostgreSQL alike, of any number of requests
presenting the link at once exactly one changes the row and signs in. A link
expires after ``INSPECTOR_SIGNIN_LINK_SECONDS``.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from inspector.web.models import SignInLink, hash_token

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.db.models import QuerySet


class SignInTokenGenerator:
    def __init__(self) -> None:
        self.timeout_seconds = getattr(settings, "INSPECTOR_SIGNIN_LINK_SECONDS", 15 * 60)

    def _now(self) -> datetime:
        return timezone.now()

    def _oldest(self) -> datetime:
        # Through a timestamp, so a clock given as a naive local time (tests) works too.
        return datetime.fromtimestamp(self._now().timestamp(), tz=UTC) - timedelta(
            seconds=self.timeout_seconds
        )

    def make_token(self, user: User) -> str:
        token = secrets.token_urlsafe(32)
        now = timezone.now()
        # Links past their life are of no use to anyone: forget them.
        life = timedelta(seconds=self.timeout_seconds)
        SignInLink.objects.filter(created__lt=now - life).delete()
        SignInLink.objects.create(user=user, token_hash=hash_token(token), created=now)
        return token

    def _usable(self, user: User, token: str) -> QuerySet[SignInLink]:
        return SignInLink.objects.filter(
            user=user, token_hash=hash_token(token), used__isnull=True, created__gte=self._oldest()
        )

    def check_token(self, user: User | None, token: str | None) -> bool:
        """Whether ``token`` is an unused, unexpired link of ``user`` (it stays unused)."""
        if not (user and token):
            return False
        return self._usable(user, token).exists()

    def consume(self, user: User, token: str) -> bool:
        """Use the link up, once: ``True`` for the one request whose update changed its row."""
        return self._usable(user, token).update(used=timezone.now()) == 1


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
