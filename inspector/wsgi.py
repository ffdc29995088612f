import os
from collections.abc import Iterable
from typing import IO
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from django.core.exceptions import BadRequest
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inspector.settings")


class WholeBody:
    """``wsgi.input`` that refuses to end before the body's Content-Length.

    When a client goes away mid-upload, servers (gunicorn, runserver) hand
    over the bytes that arrived and then an empty read. Django would take that
    for a shorter body, and a JSONL session cut at a line break reads as a
    valid, shorter transcript: stored, with the wrong sha256. A 400 instead.
    """

    def __init__(self, stream: IO[bytes], length: int) -> None:
        self.stream, self.left = stream, length

    def read(self, size: int = -1) -> bytes:
        want = self.left if size is None or size < 0 else min(size, self.left)
        parts = []
        while want > 0:
            data = self.stream.read(want)
            if not data:
                raise BadRequest("The request body ended before its Content-Length.")
            parts.append(data)
            want -= len(data)
            self.left -= len(data)
        return b"".join(parts)

    def readline(self, size: int = -1) -> bytes:
        line = self.stream.readline(size)
        self.left -= len(line)
        return line


def _whole_bodies(app: WSGIApplication) -> WSGIApplication:
    def wrapped(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > 0:
            environ["wsgi.input"] = WholeBody(environ["wsgi.input"], length)
        return app(environ, start_response)

    return wrapped


application = _whole_bodies(get_wsgi_application())
