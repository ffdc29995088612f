"""Where the server answers, for the links the commands print.

``manage.py serve`` (what ``make run`` runs) records the address it serves on
in ``INSPECTOR_ADDRESS_FILE`` while it runs, and puts it in
``INSPECTOR_BASE_URL`` for the processes it starts. A command that prints a
link (``signin_link``, ``scan``) takes, in order: its ``--base-url``,
``INSPECTOR_BASE_URL``, the address of the server running now, and only then
``make run``'s default.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from django.conf import settings

DEFAULT = "http://127.0.0.1:8000"
VARIABLE = "INSPECTOR_BASE_URL"
# Listening on every address: a browser on this machine reaches it on the loopback one.
_ANY = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104


def url_for(host: str, port: int) -> str:
    """The address a browser opens for a server bound to ``host``:``port``."""
    host = _ANY.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _file() -> Path:
    return Path(settings.INSPECTOR_ADDRESS_FILE)


def record(base: str) -> None:
    """Say where this process serves, for commands run while it does (and its children)."""
    os.environ[VARIABLE] = base
    path = _file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps({"url": base, "pid": os.getpid()}))


def forget() -> None:
    """This process no longer serves: the record goes, unless another server's replaced it."""
    recorded = _recorded()
    if recorded is not None and recorded[1] == os.getpid():
        _file().unlink(missing_ok=True)


def _recorded() -> tuple[str, int] | None:
    try:
        value = orjson.loads(_file().read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(value, dict):
        return None
    url, pid = value.get("url"), value.get("pid")
    if not isinstance(url, str) or not isinstance(pid, int) or isinstance(pid, bool):
        return None
    return url, pid


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def base_url(given: str | None = None) -> str:
    """The base of the links to print, without a trailing slash."""
    if given:
        return given.rstrip("/")
    from_env = os.environ.get(VARIABLE, "").strip()
    if from_env:
        return from_env.rstrip("/")
    recorded = _recorded()
    if recorded is not None and _running(recorded[1]):
        return recorded[0].rstrip("/")
    return DEFAULT
