"""Storing what the watcher read: one transcript per watched file, replaced as the file grows."""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from inspector.watch.models import WatchedFile, WatchedFolder
from inspector.web.models import Transcript
from inspector.web.store import UnreadableTranscript, project_for, store_upload

log = logging.getLogger(__name__)


def this_host() -> str:
    return socket.gethostname()


def register(owner: Any, root: Path) -> WatchedFolder:
    """The owner's watched folder for ``root`` on this machine; its project is named after it."""
    root = root.resolve()
    project = project_for(owner, root.name.strip() or "watched")
    assert project is not None  # its name is not blank
    folder, _ = WatchedFolder.objects.update_or_create(
        owner=owner, host=this_host(), path=str(root), defaults={"project": project}
    )
    return folder


def ingest(folder: WatchedFolder, path: Path, data: bytes) -> WatchedFile:
    """Diagnose and store ``data``, the whole of ``path`` now; return its watched-file row."""
    relative = path.resolve().relative_to(Path(folder.path)).as_posix()
    now = timezone.now()
    previous = WatchedFile.objects.filter(folder=folder, relative_path=relative).first()
    try:
        transcript, _ = store_upload(folder.owner, data, path.name, project=folder.project)
    except UnreadableTranscript as error:
        values: dict[str, Any] = {"error": str(error), "size": len(data), "changed": now}
        return _save(folder, relative, values)
    except Exception:  # one bad file never stops the watcher, a reader bug included
        log.exception("watching %s: diagnosing failed", path)
        values = {"error": "Diagnosing this file failed; the error is logged.", "changed": now}
        return _save(folder, relative, values)
    _place(transcript, folder, relative)
    broke = transcript.needs_repair and (previous is None or not previous.needs_repair)
    values = {
        "transcript": transcript,
        "size": len(data),
        "needs_repair": transcript.needs_repair,
        # Still broken: it broke when it first did. Clean again: it has not broken.
        "broke_at": now
        if broke
        else (previous.broke_at if previous is not None and transcript.needs_repair else None),
        "changed": now,
        "error": "",
    }
    return _save(folder, relative, values)


def forget(folder: WatchedFolder, path: Path) -> None:
    """The file is gone: its row goes; its transcript stays, like any stored upload."""
    relative = path.resolve().relative_to(Path(folder.path)).as_posix()
    WatchedFile.objects.filter(folder=folder, relative_path=relative).delete()


def _save(folder: WatchedFolder, relative: str, values: dict[str, Any]) -> WatchedFile:
    row, _ = WatchedFile.objects.update_or_create(
        folder=folder, relative_path=relative, defaults=values
    )
    return row


def _place(transcript: Transcript, folder: WatchedFolder, relative: str) -> None:
    """Make ``transcript`` the project's file at ``relative``, replacing the older bytes."""
    with transaction.atomic():
        older = Transcript.objects.filter(
            owner=folder.owner_id, project=folder.project_id, relative_path=relative
        ).exclude(pk=transcript.pk)
        for old in older:
            old.delete()
        Transcript.objects.filter(pk=transcript.pk).update(
            project=folder.project_id, relative_path=relative
        )
