"""Folders of session files that ``manage.py watch`` follows, and what it found in them."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models

from inspector.web.models import Project, Transcript


class WatchedFolder(models.Model):
    """One folder a watcher follows on ``host``; its sessions land in ``project``."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="watched_folders"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="watched_folders")
    path = models.CharField(max_length=1000, help_text="absolute, on host")
    host = models.CharField(max_length=255, help_text="the machine that holds the files")
    started = models.DateTimeField(auto_now_add=True)
    seen = models.DateTimeField(null=True, blank=True, help_text="the watcher's last sign of life")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "host", "path"], name="watched_folder_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.host}:{self.path}"

    def file_path(self, relative: str) -> Path | None:
        """The absolute path of one of its files, or ``None`` if ``relative`` leaves the folder."""
        try:
            root = Path(self.path).resolve()
            candidate = (root / relative).resolve()
        except (OSError, ValueError):  # a NUL in the name, a loop of links
            return None
        if candidate == root or not candidate.is_relative_to(root):
            return None
        return candidate


class WatchedFile(models.Model):
    """One session file in a watched folder: its latest transcript and when it broke."""

    folder = models.ForeignKey(WatchedFolder, on_delete=models.CASCADE, related_name="files")
    relative_path = models.CharField(max_length=1000)
    transcript = models.ForeignKey(
        Transcript, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    size = models.BigIntegerField(default=0)
    needs_repair = models.BooleanField(default=False)
    broke_at = models.DateTimeField(
        null=True, blank=True, help_text="when it last went from clean (or new) to broken"
    )
    changed = models.DateTimeField(help_text="when its bytes last changed")
    error = models.TextField(blank=True, help_text="why the latest bytes could not be read")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["folder", "relative_path"], name="watched_file_unique"),
        ]
        ordering = ["-needs_repair", models.F("broke_at").desc(nulls_last=True), "-changed"]

    def __str__(self) -> str:
        return self.relative_path
