"""django-axes' database handler with one ceiling for each thing it counts.

Axes counts failures for each entry of ``AXES_LOCKOUT_PARAMETERS`` (here the
pair of account and address, the address across accounts, the account across
addresses) but holds them all to one ``AXES_FAILURE_LIMIT``, and a successful
sign-in deletes every attempt any of the entries matches: all of the address's
failures, for every account. This handler changes only those two things.

- ``get_failures`` is the worst of the three counts measured against its own
  ceiling, in units of ``AXES_FAILURE_LIMIT`` (the pair's ceiling), so axes'
  own comparison ``failures >= AXES_FAILURE_LIMIT`` locks exactly when one of
  them reaches its ceiling.
- A success deletes the failures of that account from that address only.
"""

from __future__ import annotations

from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest


def ceilings() -> tuple[int, int, int]:
    """The failures that lock the pair, the address and the account, in that order."""
    return (
        settings.AXES_FAILURE_LIMIT,
        settings.INSPECTOR_SIGNIN_ADDRESS_FAILURES,
        settings.INSPECTOR_SIGNIN_ACCOUNT_FAILURES,
    )


class PerPairHandler(AxesDatabaseHandler):
    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        # get_user_attempts gives one queryset for each AXES_LOCKOUT_PARAMETERS
        # entry, in its order: pair, address, account.
        counts = [
            attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0
            for attempts in self.get_user_attempts(request, credentials)
        ]
        unit = settings.AXES_FAILURE_LIMIT
        # count * unit // ceiling reaches unit exactly when count reaches ceiling.
        return max(
            (count * unit // ceiling for count, ceiling in zip(counts, ceilings(), strict=True)),
            default=0,
        )

    def reset_user_attempts(
        self, request: HttpRequest, credentials: dict[str, Any] | None = None
    ) -> int:
        username = get_client_username(request, credentials)
        deleted, _ = AccessAttempt.objects.filter(
            username=username, ip_address=getattr(request, "axes_ip_address", None)
        ).delete()
        return int(deleted)
