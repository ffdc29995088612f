"""A batch scan: one job, one row per file, one task per file.

A job's counters change only by adding in SQL (``done = done + 1``), in the transaction
that moves one of its files from pending to an outcome with a conditional
UPDATE. Any number of workers can finish files of one job at once without
losing a count, and a file whose task runs twice (a worker killed and the
task sent again) is counted once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.urls import reverse

from inspector.web.models import Project, Transcript, new_public_id


class ScanJob(models.Model):
    class Source(models.TextChoices):
        FOLDER = "folder", "Folder on the server"
        UPLOAD = "upload", "Uploaded files"
        ZIP = "zip", "Uploaded zip"

    class Status(models.TextChoices):
        PREPARING = "preparing", "Reading the zip"
        RUNNING = "running", "Scanning"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    public_id = models.CharField(max_length=32, unique=True, default=new_public_id, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scan_jobs"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="scan_jobs")
    source = models.CharField(max_length=16, choices=Source.choices)
    label = models.CharField(max_length=1000, help_text="the folder scanned or the zip's name")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PREPARING)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0, help_text="files finished, whatever the outcome")
    new = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    duplicate = models.PositiveIntegerField(default=0)
    unreadable = models.PositiveIntegerField(default=0)
    bytes_total = models.BigIntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0)
    current_file = models.CharField(max_length=1000, blank=True)
    notes = models.JSONField(
        default=list, blank=True, help_text="what was left out before scanning, and why"
    )
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [
            # project_detail: the project's latest scans, newest first.
            models.Index(fields=["project", "-created"], name="scanjob_project_created_idx"),
        ]

    def __str__(self) -> str:
        return f"scan {self.public_id} of {self.project}"

    def get_absolute_url(self) -> str:
        return reverse("scan:job", args=[self.public_id])

    @property
    def storage_dir(self) -> str:
        """Where an uploaded scan keeps its files until each one is processed."""
        return f"scans/{self.public_id}"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def took(self) -> str:
        """How long the scan ran, for people ("4.2 s", "3 min 5 s"); empty until it ends."""
        if self.finished is None:
            return ""
        seconds = max((self.finished - self.created).total_seconds(), 0)
        if seconds < 60:
            return f"{seconds:.1f} s"
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"

    @property
    def percent(self) -> int:
        if self.bytes_total:
            return min(100, self.bytes_done * 100 // self.bytes_total)
        if self.total:
            return self.done * 100 // self.total
        return 100 if self.is_finished else 0


class ScanFile(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Waiting"
        NEW = "new", "Stored"
        UPDATED = "updated", "Changed, replaced"
        UNCHANGED = "unchanged", "Unchanged, skipped"
        DUPLICATE = "duplicate", "Same bytes as another file"
        UNREADABLE = "unreadable", "Unreadable"

    job = models.ForeignKey(ScanJob, on_delete=models.CASCADE, related_name="files")
    # Denormalised from the job: the dashboard asks about a project's paths.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="scan_files")
    path = models.CharField(max_length=1000, help_text="relative to the folder or zip scanned")
    source = models.CharField(
        max_length=1000,
        help_text="where the bytes are: a path on disk (folder scans) or a storage name (uploads)",
    )
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.TextField(blank=True)
    transcript = models.ForeignKey(
        Transcript, null=True, blank=True, on_delete=models.SET_NULL, related_name="scan_files"
    )
    started = models.DateTimeField(
        null=True, blank=True, help_text="when the session began, as far as the file tells"
    )
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["path", "id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "path"], name="scanfile_job_path_unique"),
        ]
        indexes = [
            # job page: the job's unreadable files; retry: its pending ones.
            models.Index(fields=["job", "status"], name="scanfile_job_status_idx"),
            # project_detail: the latest outcome for each path (unreadable files now).
            models.Index(fields=["project", "path", "id"], name="scanfile_project_path_idx"),
            # reports.sessions_of: each session's date, its latest file's start, read from
            # the index alone (PostgreSQL) for every session a dashboard sorts by date.
            models.Index(
                fields=["transcript", "-id", "started"],
                condition=models.Q(started__isnull=False),
                name="scanfile_transcript_start_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path} ({self.get_status_display()})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        with transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)
            if self.transcript_id is not None:
                refresh_scan_started([self.transcript_id])

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING


def latest_start() -> models.Subquery:
    """A transcript's session start as its latest scan file with one read it."""
    return models.Subquery(
        ScanFile.objects.filter(transcript=models.OuterRef("pk"), started__isnull=False)
        .order_by("-id")
        .values("started")[:1]
    )


def refresh_scan_started(transcript_ids: Iterable[int]) -> None:
    """Set ``Transcript.scan_started`` of these transcripts from their scan files.

    Called wherever a scan file is written with its transcript (``ScanFile.save``,
    ``tasks._finish``), in that write's transaction. The rows are locked first, so
    the UPDATE's snapshot sees every file of another worker that got there first.
    """
    ids = sorted(set(transcript_ids))
    with transaction.atomic(savepoint=False):  # all or nothing with the caller's write
        rows = Transcript.objects.filter(pk__in=ids)
        list(rows.select_for_update().order_by("pk").values_list("pk", flat=True))
        rows.update(scan_started=latest_start())
