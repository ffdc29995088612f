from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from inspector.env import database_from_url, env_bool, env_int, env_list
from inspector.web.signin import ensure_owner, signin_path
from tests.testdata import REPO

pytestmark = pytest.mark.django_db


def test_home_page_loads_htmx_with_the_csp_nonce(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    policy = response.headers["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
    assert re.search(
        rf'<script src="/static/django_htmx/htmx-2\.min\.js"[^>]* nonce="{nonce}"', html
    )
    assert "default-src 'self'" in policy and "unsafe-inline" not in policy


def test_body_sends_the_csrf_token_on_htmx_requests(client):
    html = client.get("/").content.decode()
    assert re.search(r'<body hx-headers=\'\{"X-CSRFToken": "[A-Za-z0-9]{32,}"\}\'>', html)


def test_security_headers_are_sent(client):
    response = client.get("/")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "same-origin"


def test_healthz_reports_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response["Cache-Control"].startswith("max-age=0")


def test_healthz_is_503_when_the_database_fails(client, monkeypatch):
    from django.db.backends.utils import CursorWrapper

    def broken(*args, **kwargs):
        raise RuntimeError("database down")

    monkeypatch.setattr(CursorWrapper, "execute", broken)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "error"


def test_signin_link_signs_in_once(client, django_user_model):
    owner, created = ensure_owner()
    assert created and owner.is_superuser and not owner.has_usable_password()
    path = signin_path(owner)
    assert client.get(path).status_code == 200  # GET only shows the button
    assert "_auth_user_id" not in client.session
    response = client.post(path)
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(owner.pk)
    client.logout()
    assert client.post(path).status_code == 400  # second use refused


def test_signin_link_with_a_forged_token_is_refused(client):
    owner, _ = ensure_owner()
    good = signin_path(owner)
    forged = good.rstrip("/")[:-3] + "abc/"
    assert client.post(forged).status_code == 400
    assert client.post("/signin/xx/1-abc/").status_code == 400


def test_ensure_owner_is_idempotent():
    first, created = ensure_owner()
    second, created_again = ensure_owner()
    assert created and not created_again and first.pk == second.pk


def test_signin_link_expires(client, settings, monkeypatch):
    from inspector.web import signin

    owner, _ = ensure_owner()
    path = signin_path(owner)
    later = signin.signin_tokens._now().timestamp() + signin.signin_tokens.timeout_seconds + 5
    import datetime

    monkeypatch.setattr(
        signin.signin_tokens, "_now", lambda: datetime.datetime.fromtimestamp(later)
    )
    assert client.post(path).status_code == 400


@pytest.mark.parametrize(
    ("value", "expected"), [("1", True), ("true", True), ("off", False), ("", False)]
)
def test_env_bool_reads_common_spellings(monkeypatch, value, expected):
    monkeypatch.setenv("X_FLAG", value)
    assert env_bool("X_FLAG") is expected


def test_env_helpers_fail_loudly_on_bad_values(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env_bool("X_FLAG")
    monkeypatch.setenv("X_NUM", "12a")
    with pytest.raises(ImproperlyConfigured, match="X_NUM"):
        env_int("X_NUM", 3)
    monkeypatch.setenv("X_NUM", "0")
    with pytest.raises(ImproperlyConfigured, match="minimum"):
        env_int("X_NUM", 3, minimum=1)
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert env_list("X_LIST") == ["a", "b", "c"]


def test_database_url_is_parsed_for_postgres():
    db = database_from_url("postgres://postgres:p%40ss@127.0.0.1:5432/inspector?sslmode=disable")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "postgres",
        "p@ss",
        "127.0.0.1",
        "5432",
        "inspector",
    )
    assert db["OPTIONS"] == {"sslmode": "disable", "options": "-c jit=off"}
    # The URL's own server options replace the default (JIT off).
    own = database_from_url("postgres://u@127.0.0.1/i?options=-c%20work_mem%3D64MB")
    assert own["OPTIONS"] == {"options": "-c work_mem=64MB"}
    with pytest.raises(ImproperlyConfigured):
        database_from_url("mysql://x/y")


def test_settings_refuse_a_bad_value_at_start_up(tmp_path):
    env = {**os.environ, "DEBUG": "perhaps", "INSPECTOR_VAR_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "DEBUG='perhaps' is not a boolean" in result.stderr


def test_local_secret_key_is_generated_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env["INSPECTOR_VAR_DIR"] = str(tmp_path)
    env["DJANGO_SETTINGS_MODULE"] = "inspector.settings"
    code = (
        "import django\n"
        "django.setup()\n"
        "from django.conf import settings\n"
        "print(settings.SECRET_KEY)"
    )
    run = [sys.executable, "-c", code]
    first = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    second = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert first.stdout == second.stdout and len(first.stdout.strip()) >= 50
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_database_follows_database_url(settings):
    from django.db import connection

    configured = settings.DATABASES["default"]
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        assert connection.vendor == "postgresql"
    else:
        # The local default: SQLite with WAL so a worker can write while pages read.
        assert connection.vendor == "sqlite"
        assert "journal_mode=WAL" in configured["OPTIONS"]["init_command"]
        assert configured["OPTIONS"]["timeout"] >= 5


def test_the_pure_core_and_the_console_command_import_no_django():
    code = (
        "import sys, inspector.engine, inspector.formats, inspector.local;"
        "import inspector.diagnosis, inspector.cli;"
        "import pkgutil, importlib;"
        "[importlib.import_module(m.name)"
        " for p in (inspector.engine, inspector.formats, inspector.diagnosis, inspector.local)"
        " for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.')];"
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_admin_requires_staff(client):
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302
