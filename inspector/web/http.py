"""The request types views are given, for the type checker: HttpRequest as middleware leaves it.

Annotations only: Django still passes a plain ``HttpRequest``; these name the
attributes middleware sets on it, which ``HttpRequest`` itself does not declare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_htmx.middleware import HtmxDetails


class HtmxRequest(HttpRequest):
    """Any request: django-htmx's middleware adds ``htmx``."""

    htmx: HtmxDetails


class SignedInRequest(HtmxRequest):
    """A request to a ``login_required`` view: ``user`` is a real account, never anonymous."""

    user: User
