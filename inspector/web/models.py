"""What the web app stores: projects, transcripts (raw bytes live in storage) and API tokens.

The diagnosis is not a model: it is a cache in storage, rebuilt from the raw
bytes when the engine version changes (``inspector.web.store``).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F
from django.db.models.functions import Coalesce
from django.urls import reverse

TOKEN_COLUMNS = ("tokens_in", "tokens_out", "cache_read", "cache_write")
LIST_COLUMNS = ("subagent", "conversations", "conversations_repair")


def new_public_id() -> str:
    # 16 random bytes: 128 bits, 22 url-safe characters; URLs never carry the integer key.
    return secrets.token_urlsafe(16)


class Project(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="projects"
    )
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200)
    # A watched folder is a project of its own, known by where it is, never by
    # its name: two folders called "alpha" are two projects, and neither is
    # the project a scan or an upload named "alpha".
    watched = models.CharField(
        max_length=1300,
        blank=True,
        help_text="host:path of the watched folder this project follows; blank for the others",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "slug"], name="project_owner_slug_unique"),
            models.UniqueConstraint(
                fields=["owner", "watched"],
                condition=~models.Q(watched=""),
                name="project_owner_watched_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.name


# A session's name where lists show one: its path in the folder scanned, else its file name.
SESSION_NAME = models.Case(
    models.When(relative_path="", then=models.F("file_name")), default=models.F("relative_path")
)


class Transcript(models.Model):
    public_id = models.CharField(max_length=32, unique=True, default=new_public_id, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="transcripts"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="transcripts"
    )
    # A subagent's file points at the session that started it (batch scans fill these in).
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    relative_path = models.CharField(max_length=1000, blank=True)
    file_name = models.CharField(max_length=255)
    format = models.CharField(max_length=32)
    size = models.BigIntegerField(help_text="bytes as uploaded, before compression")
    sha256 = models.CharField(max_length=64)
    message_count = models.PositiveIntegerField(default=0)
    # Summaries of the diagnosis, kept on the row so lists need no storage reads.
    counts = models.JSONField(default=dict, blank=True, help_text="findings per rule id")
    verdicts = models.JSONField(
        default=dict, blank=True, help_text="provider -> before/after accepted, first texts"
    )
    needs_repair = models.BooleanField(default=False)
    problems = models.PositiveIntegerField(default=0, help_text="unreadable lines or records")
    meta = models.JSONField(default=dict, blank=True, help_text="session id, branches, ...")
    engine_version = models.CharField(max_length=64, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    # Read out of ``meta`` on every save (``fill_columns``), so a big project's dashboard
    # sums and dates indexed columns instead of reading every row's JSON: when the
    # session's own first timestamp says it began (``meta.timing.first``, as
    # ``datetime.fromisoformat`` reads it, naive as UTC; null when it does not read),
    # and the token counts its file records (JSON integers only, else 0).
    first_at = models.DateTimeField(null=True, blank=True)
    tokens_in = models.BigIntegerField(default=0, db_default=0)
    tokens_out = models.BigIntegerField(default=0, db_default=0)
    cache_read = models.BigIntegerField(default=0, db_default=0)
    cache_write = models.BigIntegerField(default=0, db_default=0)
    # Also from ``meta`` on every save, for the dashboard's plain counts: a subagent's
    # file (``meta.sidechain`` is JSON true), and of a file holding a list of
    # conversations (``meta.conversation_list``, results files), how many and how many
    # of them need repair (0 and 0 for any other file).
    subagent = models.BooleanField(default=False, db_default=False)
    conversations = models.PositiveIntegerField(default=0, db_default=0)
    conversations_repair = models.PositiveIntegerField(default=0, db_default=0)
    # When the session began as its latest scan read it (the latest of its scan files,
    # by id, with a start): the dashboard's date is this, else ``created``. Kept by the
    # scan app whenever a scan file is written (``scan.models.refresh_scan_started``).
    scan_started = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            # The same bytes twice in one project give the existing transcript; in
            # another project they are a transcript of that project too (each with
            # its own copy of the bytes), so no project ever takes another's.
            models.UniqueConstraint(
                fields=["owner", "project", "sha256"],
                condition=models.Q(project__isnull=False),
                name="transcript_project_sha_unique",
            ),
            models.UniqueConstraint(
                fields=["owner", "sha256"],
                condition=models.Q(project__isnull=True),
                name="transcript_loose_sha_unique",
            ),
        ]
        indexes = [
            # store_upload: the owner's transcripts of these bytes, in any project.
            models.Index(fields=["owner", "sha256"], name="transcript_owner_sha_idx"),
            # transcript_list: the owner's transcripts, newest first.
            models.Index(fields=["owner", "-created"], name="transcript_owner_created_idx"),
            # transcript_list filtered by format.
            models.Index(
                fields=["owner", "format", "-created"], name="transcript_owner_format_idx"
            ),
            # transcript_list filtered by "needs repair".
            models.Index(
                fields=["owner", "needs_repair", "-created"], name="transcript_owner_repair_idx"
            ),
            # The project dashboard: counting, filtering by verdict or shape and sorting a
            # project's sessions read this index alone (PostgreSQL), not the wide rows;
            # the page's 50 rows are read after (``reports.page_of``).
            # (Key columns, not INCLUDE, which SQLite lacks.)
            models.Index(
                fields=[
                    "project",
                    "owner",
                    "needs_repair",
                    "problems",
                    "message_count",
                    "format",
                    "created",
                    "id",
                ],
                name="transcript_project_table_idx",
            ),
            # Project search: a project's sessions in the order its hits are listed
            # (``inspector.search.fulltext``), so the first page of a common word walks
            # them in order and stops, instead of sorting every match.
            models.Index(
                "project",
                "owner",
                SESSION_NAME,
                "id",
                name="transcript_project_name_idx",
            ),
            # The day chart: a project's sessions per day of ``first_at`` and verdict,
            # read from this index alone (PostgreSQL).
            models.Index(
                fields=["project", "owner", "first_at", "needs_repair", "message_count"],
                name="transcript_project_first_idx",
            ),
            # The dashboard's totals (``reports.summarize``, ``project_totals``), read
            # from this index alone (PostgreSQL), and each session's findings per rule
            # from the other: a big project's wide rows, JSON and all, took tens of
            # milliseconds a pass to read.
            models.Index(
                fields=[
                    "project",
                    "owner",
                    "needs_repair",
                    "message_count",
                    "size",
                    "parent",
                    *LIST_COLUMNS,
                    *TOKEN_COLUMNS,
                ],
                name="transcript_project_totals_idx",
            ),
            models.Index(
                fields=["project", "owner", "counts"], name="transcript_project_counts_idx"
            ),
            # (The sessions table filtered by a rule reads a partial index of that rule's
            # sessions on PostgreSQL, ``transcript_rule_<rule>_idx``: migration web 0010.)
            # The sessions table's orders by file and by most messages: a page is the index
            # walked in that order (the empty files left out by its message count), not
            # every session of the project read and sorted (the order by file read a big
            # project's 10,000 pages of wide rows, 250-380 ms: ``bench/bench_scale.py``).
            models.Index(
                fields=["project", "owner", "relative_path", "file_name", "id", "message_count"],
                name="transcript_project_file_idx",
            ),
            models.Index(
                fields=["project", "owner", "message_count", "id"],
                name="transcript_project_count_idx",
            ),
            # The sessions table's orders by date (``reports.SESSION_DATE``), its date
            # filter, and its default order (what needs repair first, then the newest):
            # a page is the index walked to its rows, not every session sorted.
            models.Index(
                F("project"),
                F("owner"),
                Coalesce("scan_started", "created"),
                F("id"),
                # And the columns the table filters on, and those of the date: with
                # them, the index alone answers (PostgreSQL), a deep page too.
                F("message_count"),
                F("needs_repair"),
                F("scan_started"),
                F("created"),
                name="transcript_project_date_idx",
            ),
            models.Index(
                F("project"),
                F("owner"),
                F("needs_repair"),
                F("problems"),
                Coalesce("scan_started", "created"),
                F("id"),
                F("message_count"),
                F("scan_started"),
                F("created"),
                name="transcript_project_worst_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.file_name} ({self.public_id})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.fill_columns()
        fields = kwargs.get("update_fields")
        if fields is not None and "meta" in fields:
            kwargs["update_fields"] = {*fields, *META_COLUMNS, *LIST_COLUMNS}
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return reverse("timeline", args=[self.public_id])

    def fill_columns(self) -> None:
        """Set the columns kept from ``meta`` (every save does; ``.update()`` callers must)."""
        for name, value in (meta_columns(self.meta) | list_columns(self.meta)).items():
            setattr(self, name, value)

    @property
    def storage_dir(self) -> str:
        return storage_dir(self.public_id)

    @property
    def raw_path(self) -> str:
        return f"{self.storage_dir}/raw.zst"

    @property
    def session_id(self) -> str:
        return str(self.meta.get("session_id") or "")


META_COLUMNS = ("first_at", *TOKEN_COLUMNS)
_BIGINT = 2**63


def meta_columns(meta: Any) -> dict[str, Any]:
    """The columns a transcript keeps from its ``meta`` (``Transcript.fill_columns``)."""
    timing = meta.get("timing") if isinstance(meta, dict) else None
    if not isinstance(timing, dict):
        timing = {}
    found: dict[str, Any] = {"first_at": first_moment(timing.get("first"))}
    for name in TOKEN_COLUMNS:
        value = timing.get(name)
        # A JSON integer (not a boolean, not 1.5); one beyond a bigint is not a count.
        if isinstance(value, int) and not isinstance(value, bool) and -_BIGINT <= value < _BIGINT:
            found[name] = value
        else:
            found[name] = 0
    return found


def list_columns(meta: Any) -> dict[str, Any]:
    """The dashboard's counts a transcript keeps from its ``meta`` (``fill_columns``)."""
    if not isinstance(meta, dict):
        meta = {}
    listed = meta.get("conversation_list")
    if not isinstance(listed, list):
        listed = []
    return {
        "subagent": meta.get("sidechain") is True,
        "conversations": len(listed),
        # ``reports.summarize_rows``: each conversation's own verdict, read as a truth value.
        "conversations_repair": sum(
            bool(item.get("needs_repair")) for item in listed if isinstance(item, dict)
        ),
    }


def first_moment(first_timestamp: Any) -> datetime | None:
    """The moment of a session's own first timestamp, if it is one (naive: UTC)."""
    if not isinstance(first_timestamp, str):
        return None
    try:
        moment = datetime.fromisoformat(first_timestamp)
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # year 1 with a negative offset: no UTC moment to store
        return None


def storage_dir(public_id: str) -> str:
    # Two-character fan-out keeps directories small on plain file systems.
    return f"transcripts/{public_id[:2]}/{public_id}"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    """A personal API token. Only its sha256 is stored; the token is shown once."""

    public_id = models.CharField(max_length=32, unique=True, default=new_public_id, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=8, help_text="first characters, to tell tokens apart")
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @classmethod
    def issue(cls, user: object, name: str) -> tuple[ApiToken, str]:
        """Create a token; returns the row and the token, which is never stored."""
        token = "ti_" + secrets.token_urlsafe(32)
        row = cls.objects.create(user=user, name=name, token_hash=hash_token(token), hint=token[:7])
        return row, token


class WorkerBeat(models.Model):
    """A task worker's heartbeat (``manage.py worker``): it is alive while this is recent.

    django-tasks-db records which worker claimed a task but not whether that
    worker still lives; the beat is the rest, so a task whose worker died is
    queued again as soon as its beat stops, not after a fixed age.
    """

    worker_id = models.CharField(max_length=64, unique=True)
    beat_at = models.DateTimeField()

    class Meta:
        indexes = [
            # The requeue check's lookup of the claiming workers, and the sweep of old beats.
            models.Index(fields=["beat_at"], name="workerbeat_beat_at_idx"),
        ]

    def __str__(self) -> str:
        return f"worker {self.worker_id} at {self.beat_at:%Y-%m-%d %H:%M:%S}"


class SignInLink(models.Model):
    """A one-time sign-in link: only its token's sha256 is stored.

    ``used`` is set by one conditional UPDATE (``inspector.web.signin``): of any
    number of requests presenting the link at once, the one whose update
    changed a row signs in.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="signin_links"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField()
    used = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"sign-in link for {self.user} ({'used' if self.used else 'unused'})"
