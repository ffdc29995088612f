"""The gunicorn command line of `manage.py serve` and `make load`. No Django."""

from __future__ import annotations

import sys


def gunicorn_command(
    bind: str, workers: int, threads: int, timeout: int, graceful: int, *extra: str
) -> list[str]:
    """gunicorn serving ``inspector.wsgi`` with this interpreter: processes of threads (gthread)."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "inspector.wsgi:application",
        "--bind",
        bind,
        "--worker-class",
        "gthread",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--timeout",
        str(timeout),
        "--graceful-timeout",
        str(graceful),
        "--no-control-socket",
        *extra,
    ]
