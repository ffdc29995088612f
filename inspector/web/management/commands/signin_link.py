from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from inspector.web import address
from inspector.web.signin import ensure_owner, signin_path


class Command(BaseCommand):
    help = "Print a one-time sign-in link (for the owner, or --user NAME)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="username (default: the owner account)")
        parser.add_argument(
            "--base-url",
            default=None,
            help="where the server answers (default: $INSPECTOR_BASE_URL, else the address "
            f"the running server serves on, else {address.DEFAULT})",
        )

    def handle(self, *args: Any, user: str | None, base_url: str | None, **options: Any) -> None:
        if user:
            account = get_user_model().objects.filter(username=user).first()
            if account is None:
                raise CommandError(f"no user named {user!r}")
        else:
            account, _ = ensure_owner()
        self.stdout.write(f"{address.base_url(base_url)}{signin_path(account)}")
