"""The one settings module. Every knob is an environment variable (README: Configuration).

With nothing set it runs locally: SQLite under ``var/``, a secret key made
once into ``var/``, DEBUG off.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.utils.csp import CSP

from inspector.env import (
    database_from_url,
    env_bool,
    env_int,
    env_list,
    env_str,
    sqlite_database,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("INSPECTOR_VAR_DIR", str(BASE_DIR / "var"))).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _local_secret_key() -> str:
    # Generated once so sessions and signed links survive restarts of a local
    # server; a deployment sets SECRET_KEY instead.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = env_str("SECRET_KEY") or _local_secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_tasks_db",
    "axes",
    "inspector.web",
    "inspector.scan",
    "inspector.share",
    "inspector.watch",
    "inspector.search",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Before anything reads the body (CSRF's check, the views): a declared length
    # past the limit is refused unread.
    "inspector.web.bodylimit.BodyLimitMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A full disk is a 507 that says so, not a bare 500.
    "inspector.web.diskfull.DiskFullMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "inspector.urls"
WSGI_APPLICATION = "inspector.wsgi.application"
ASGI_APPLICATION = "inspector.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL")
DATABASES = {
    "default": database_from_url(_database_url)
    if _database_url
    else sqlite_database(str(VAR_DIR / "inspector.sqlite3"))
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Tests get a file rather than SQLite's in-memory default, so the scan
    # test's real task worker process can share the test database; one name
    # per test run, so two runs on one checkout never share a file.
    DATABASES["default"]["TEST"] = {
        "NAME": str(Path(tempfile.gettempdir()) / f"inspector-test-{os.getpid()}.sqlite3")
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Background work (scans, diagnoses of big uploads) goes through Django's task
# framework; the database backend lets any number of workers on any number of
# machines share the queue. Tests switch to the immediate backend.
TASKS_BACKEND = env_str("TASKS_BACKEND", "database")
if TASKS_BACKEND == "database":
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
elif TASKS_BACKEND == "immediate":
    TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}
else:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        f"TASKS_BACKEND={TASKS_BACKEND!r} is not one of 'database', 'immediate'"
    )

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed password sign-ins are throttled by django-axes (inspector/web/lockout.py),
# three counts each with its own ceiling: INSPECTOR_SIGNIN_FAILURES failures of
# one account from one address lock that pair; INSPECTOR_SIGNIN_ADDRESS_FAILURES
# from one address, whatever the accounts, lock the address; and
# INSPECTOR_SIGNIN_ACCOUNT_FAILURES of one account, from anywhere, lock the
# account. The account's ceiling is above the address's, so no one address can
# lock an account out for everyone else. A successful sign-in clears only its
# own pair's failures. All for INSPECTOR_SIGNIN_LOCKOUT_MINUTES. The address is
# REMOTE_ADDR: a header a client can write itself is never trusted for it.
# One-time sign-in links do not go through passwords and still work.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "inspector.web.lockout.PerPairHandler"
AXES_FAILURE_LIMIT = env_int("INSPECTOR_SIGNIN_FAILURES", 5, minimum=1)
INSPECTOR_SIGNIN_ADDRESS_FAILURES = env_int(
    "INSPECTOR_SIGNIN_ADDRESS_FAILURES", 4 * AXES_FAILURE_LIMIT, minimum=1
)
INSPECTOR_SIGNIN_ACCOUNT_FAILURES = env_int(
    "INSPECTOR_SIGNIN_ACCOUNT_FAILURES", 5 * INSPECTOR_SIGNIN_ADDRESS_FAILURES, minimum=1
)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("INSPECTOR_SIGNIN_LOCKOUT_MINUTES", 15, minimum=1))
# The order matters: inspector/web/lockout.py reads the counts in this order.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address", "username"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env_str("INSPECTOR_MEDIA_ROOT", str(VAR_DIR / "media")))
# Stored transcripts, caches and scan uploads: local files under MEDIA_ROOT, or
# an S3-compatible bucket once INSPECTOR_S3_BUCKET is set (README: Object
# storage). Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or
# boto3's other usual places); objects stay private and are never linked to.


def default_storage_from(environ: Mapping[str, str]) -> dict[str, Any]:
    """``STORAGES["default"]`` for these variables (the tests make theirs with it too)."""
    bucket = environ.get("INSPECTOR_S3_BUCKET", "").strip()
    if not bucket:
        return {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    endpoint = environ.get("INSPECTOR_S3_ENDPOINT_URL", "").strip()
    return {
        "BACKEND": "inspector.web.objectstore.ObjectStorage",
        "OPTIONS": {
            "bucket_name": bucket,
            "endpoint_url": endpoint or None,
            "region_name": environ.get("INSPECTOR_S3_REGION", "").strip() or "us-east-1",
            "location": environ.get("INSPECTOR_S3_PREFIX", "").strip().strip("/"),
            # A server of one's own is reached by path (http://host:9000/bucket/key).
            "addressing_style": "path" if endpoint else None,
        },
    }


STORAGES = {
    "default": default_storage_from(os.environ),
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("INSPECTOR_MANIFEST_STATIC", False)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Serve straight from the finders locally so `make run` needs no collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Uploads: the limit is enforced in the upload form and API as well; these
# keep Django from buffering more than that in memory or on disk.
INSPECTOR_MAX_UPLOAD_BYTES = env_int("INSPECTOR_MAX_UPLOAD_MB", 200, minimum=1) * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = INSPECTOR_MAX_UPLOAD_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("INSPECTOR_MAX_UPLOAD_FILES", 1000, minimum=1)
# The most memory diagnosing one file may take, by inspector.web.store's estimate
# (every JSON value outside strings counted in the bytes, each weighted at the
# worst measured for its kind): a file of millions of tiny records costs far
# more than its size, and beyond this it is refused before it is read. 2.5 GB
# takes a real session at the upload limit (200 MB, estimated at about 2.1 GB).
INSPECTOR_MAX_DIAGNOSIS_BYTES = env_int("INSPECTOR_MAX_DIAGNOSIS_MB", 2560, minimum=16) * 2**20

# Batch scans from the browser (inspector.scan). A zip is checked against
# these from its directory before a byte is inflated, so a zip bomb is refused
# up front; small members (under 1 MB) are never bombs and skip the ratio test.
INSPECTOR_SCAN_MAX_BYTES = env_int("INSPECTOR_SCAN_MAX_MB", 2048, minimum=1) * 1024 * 1024
INSPECTOR_SCAN_MAX_FILES = env_int("INSPECTOR_SCAN_MAX_FILES", 10_000, minimum=1)
INSPECTOR_ZIP_MAX_RATIO = env_int("INSPECTOR_ZIP_MAX_RATIO", 100, minimum=1)
# A scan of more files than INSPECTOR_SCAN_BATCH_ABOVE sends one task per
# INSPECTOR_SCAN_BATCH_FILES files (inspector.scan.tasks.scan_files) instead of one a
# file: a real session is small, and a task's round trip through the queue was a tenth
# of its file's time. Each file of a batch still commits on its own.
INSPECTOR_SCAN_BATCH_ABOVE = env_int("INSPECTOR_SCAN_BATCH_ABOVE", 40, minimum=0)
INSPECTOR_SCAN_BATCH_FILES = env_int("INSPECTOR_SCAN_BATCH_FILES", 20, minimum=1)
# Stored bytes with no transcript row (left by a process killed mid-upload) are
# removed when a scan is retried and when `make run` starts, once this old.
INSPECTOR_ORPHAN_GRACE_SECONDS = env_int("INSPECTOR_ORPHAN_GRACE_SECONDS", 600, minimum=0)
# The web server of `manage.py serve` (`make run`): gunicorn's processes and threads
# per process, and how long one request may take before its process is restarted.
INSPECTOR_WEB_WORKERS = env_int("INSPECTOR_WEB_WORKERS", 2, minimum=1)
INSPECTOR_WEB_THREADS = env_int("INSPECTOR_WEB_THREADS", 4, minimum=1)
INSPECTOR_WEB_TIMEOUT_SECONDS = env_int("INSPECTOR_WEB_TIMEOUT_SECONDS", 300, minimum=10)
# Where a running `manage.py serve` records the address it serves on, so the
# links other commands print (signin_link, scan) point at it (inspector/web/address.py).
INSPECTOR_ADDRESS_FILE = VAR_DIR / "serving.json"
# Folders of agent sessions `manage.py watch` (and `make run`) follows; none by default.
INSPECTOR_WATCH = env_list("INSPECTOR_WATCH")
# A task RUNNING this long, claimed by a worker that never beat (a plain db_worker),
# is taken for one whose worker was killed, and queued again (every task is idempotent).
INSPECTOR_TASK_STALE_SECONDS = env_int("INSPECTOR_TASK_STALE_SECONDS", 600, minimum=0)
# Each `manage.py worker` beats this often; a worker that missed three beats, or
# whose process on this machine is gone, is dead, and its task is queued again.
INSPECTOR_WORKER_BEAT_SECONDS = env_int("INSPECTOR_WORKER_BEAT_SECONDS", 10, minimum=1)

# Security headers. A strict CSP: everything from self, scripts only from
# self or with the per-request nonce that {% htmx_script %} carries, no
# inline styles, no framing, no plugins.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

# Behind TLS (any real deployment): secure cookies, HSTS, redirect to https.
INSPECTOR_HTTPS = env_bool("INSPECTOR_HTTPS", False)
if INSPECTOR_HTTPS:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # Share tokens live in paths (/s/<token>/) and the request loggers print
    # paths: the filter rewrites them to /s/[redacted]. On the two loggers, so
    # handlers Django attached itself see clean records too; on the handler,
    # for anything else that logs a path.
    "filters": {"share_tokens": {"()": "inspector.share.logfilter.RedactShareTokens"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["share_tokens"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.server": {"level": "WARNING", "filters": ["share_tokens"]},
        "django.request": {"filters": ["share_tokens"]},
    },
}
