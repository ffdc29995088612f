"""What the views of every app share: the request types they are given, and three answers.

The request types are annotations only: Django still passes a plain
``HttpRequest``; these name the attributes middleware sets on it, which
``HttpRequest`` itself does not declare. ``owned_or_404``, ``bad_request``
and ``attachment`` are the answers the web, share, scan and search views
give alike; they live on the web floor so that no app imports another's views.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db.models import Model, QuerySet
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.http import content_disposition_header

from inspector.web import store

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_htmx.middleware import HtmxDetails


class HtmxRequest(HttpRequest):
    """Any request: django-htmx's middleware adds ``htmx``."""

    htmx: HtmxDetails


class SignedInRequest(HtmxRequest):
    """A request to a ``login_required`` view: ``user`` is a real account, never anonymous."""

    user: User


def owned_or_404[M: Model](request: HttpRequest, rows: type[M] | QuerySet[M], **lookup: Any) -> M:
    """The signed-in user's row that ``lookup`` names, or 404 (also for anyone else's)."""
    return get_object_or_404(rows, owner=request.user, **lookup)


def bad_request(request: HttpRequest, form: Form) -> HttpResponse:
    return render(request, "inspector/bad_request.html", {"form": form}, status=400)


# What each download is sent as, by the end of its name.
_CONTENT_TYPES = {
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
    ".html": "text/html; charset=utf-8",
}


def content_type(name: str) -> str:
    """The Content-Type of a download named ``name`` (bytes to save, if nothing else)."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    return _CONTENT_TYPES.get(suffix, "application/octet-stream")


def attachment(made: Callable[[], tuple[bytes, str]]) -> HttpResponse:
    """A download of what ``made`` gives (its bytes, its file name), or 400 saying why not.

    ``made`` runs with the nesting depth guarded (``store.depth_guarded``); a
    transcript that no longer reads is answered in plain words.
    """
    try:
        with store.depth_guarded():
            data, name = made()
    except store.UnreadableTranscript as error:
        return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(data, content_type=content_type(name))
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response
