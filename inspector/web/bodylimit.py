"""A request whose Content-Length is past the limit is refused before its body is read.

The upload form and the API check sizes too, but only once Django reads the
body (the form's file is spooled to disk whole first). Here the declared
length decides: a body longer than the largest anything here takes (an upload,
or a browser scan under ``/scan/``) is a 413 with the limit in words, and a
Content-Length that is not a number of bytes is a 400. The body is never read
into memory: gunicorn discards what the client still sends, in small reads,
before the connection's next request.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

SLACK = 1024 * 1024  # a form's other fields and multipart boundaries around the file


def limit_for(path: str) -> int:
    if path.startswith("/scan/"):
        return int(settings.INSPECTOR_SCAN_MAX_BYTES) + SLACK
    return int(settings.INSPECTOR_MAX_UPLOAD_BYTES) + SLACK


class BodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = request.META.get("CONTENT_LENGTH") or ""
        if length:
            if not (length.isascii() and length.isdigit()):
                return self._refuse(
                    request, 400, f"Content-Length must be a number of bytes, not {length[:40]!r}."
                )
            limit = limit_for(request.path_info)
            if len(length) > 18 or int(length) > limit:
                return self._refuse(
                    request,
                    413,
                    f"The request is larger than the limit of {limit - SLACK:,} bytes; "
                    "nothing of it was read.",
                )
        return self.get_response(request)

    @staticmethod
    def _refuse(request: HttpRequest, status: int, message: str) -> HttpResponse:
        response: HttpResponse
        if request.path_info.startswith("/api/"):
            response = JsonResponse({"error": message}, status=status)
        else:
            response = render(
                request, "inspector/refused.html", {"message": message}, status=status
            )
        response["Connection"] = "close"
        return response
