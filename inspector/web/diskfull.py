"""A full disk answers 507 Insufficient Storage with a sentence that says so.

``store_upload`` already removes what it had written when anything fails
(nothing is left half-stored); this middleware only words the failure: an
``OSError`` of ENOSPC or EDQUOT from storage, or a database that could not
write for want of space (SQLite's "database or disk is full", PostgreSQL's
SQLSTATE 53100 ``disk_full``), anywhere in the exception's chain.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

log = logging.getLogger(__name__)

DISK_FULL = (
    "The server's disk is full, so nothing was stored. Try again once whoever runs this "
    "server has freed some space."
)


def is_disk_full(error: BaseException | None) -> bool:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(error, DatabaseError):
            if "disk is full" in str(error) or getattr(error, "sqlstate", None) == "53100":
                return True
        if getattr(error, "sqlstate", None) == "53100":  # psycopg's DiskFull under Django's
            return True
        error = error.__cause__ or error.__context__
    return False


class DiskFullMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_disk_full(exception):
            return None
        log.error("disk full on %s %s: %s", request.method, request.path, exception)
        if request.path.startswith("/api/"):
            return JsonResponse({"error": DISK_FULL}, status=507)
        return render(request, "inspector/refused.html", {"message": DISK_FULL}, status=507)
