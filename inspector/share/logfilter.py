"""Keep share tokens out of the app's logs.

Django logs request paths: ``django.server`` every request the development
server answers, ``django.request`` every 4xx and 5xx response. A share
token is in the path, and anyone who reads the logs could open the link, so
settings.LOGGING runs these records through ``RedactShareTokens``. No Django
imports: logging is configured before the apps load.
"""

from __future__ import annotations

import logging
import re

SHARE_PATH = re.compile(r"(/s/)[^/\s?#\"'<>]+")
REDACTED = r"\1[redacted]"


def redact_share_paths(text: str) -> str:
    return SHARE_PATH.sub(REDACTED, text)


class RedactShareTokens(logging.Filter):
    """Rewrites ``/s/<token>`` to ``/s/[redacted]`` in a record's message.

    The request a record carries goes too when its path holds a token: mail
    and other handlers would print its path and headers.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is not ours to fix; let it through as it is
            return True
        if "/s/" in message:
            cleaned = redact_share_paths(message)
            if cleaned != message:
                record.msg, record.args = cleaned, ()
        request = getattr(record, "request", None)
        path = getattr(request, "path", None) or getattr(request, "path_info", None)
        if isinstance(path, str) and redact_share_paths(path) != path:
            delattr(record, "request")  # set by Django's loggers, unknown to LogRecord
        return True
