"""Small, strict readers for environment variables.

Each helper returns the default when the variable is unset or empty and
raises ``ImproperlyConfigured`` naming the variable when the value cannot be
read, so a typo in a deployment fails at start-up instead of quietly falling
back to a default.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str = "") -> str:
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use one of 1/0, true/false")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below the minimum of {minimum}")
    return number


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    value = _raw(name)
    if value is None:
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str) -> dict:
    """Turn ``postgres://user:pass@host:port/name?opt=v`` into a DATABASES entry.

    Only PostgreSQL and SQLite are supported: those are the two databases the
    test suite runs against.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured("DATABASE_URL names no database (postgres://.../NAME)")
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured("DATABASE_URL has an invalid port") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(port or ""),
            # JIT compiling is for long reports: the planner takes a dashboard's query over
            # a big project for one (cost past jit_above_cost) and spends 40-80 ms compiling
            # what then runs in less (bench/bench_scale.py). ``?options=...`` replaces it.
            "OPTIONS": {"options": "-c jit=off"} | dict(parse_qsl(parts.query)),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    if scheme == "sqlite":
        path = unquote(parts.path)
        if not path:
            raise ImproperlyConfigured("DATABASE_URL names no SQLite file (sqlite:///PATH)")
        return sqlite_database(path)
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {scheme!r} is not supported; use postgres:// or sqlite:///"
    )


def sqlite_database(path: str) -> dict:
    # WAL lets the web server read while a task worker writes; the busy
    # timeout and IMMEDIATE transactions make concurrent writers wait instead
    # of failing with "database is locked".
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;"
            ),
        },
    }
