"""Storing what the watcher read: one transcript per watched file, replaced as the file grows."""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from inspector.watch.models import WatchedFile, WatchedFolder
from inspector.web.models import Project, Transcript
from inspector.web.store import UnreadableTranscript, project_where, retire_previous, store_upload

log = logging.getLogger(__name__)


def this_host() -> str:
    return socket.gethostname()


def register(owner: Any, root: Path) -> WatchedFolder:
    """The owner's watched folder for ``root`` on this machine, with a project of its own.

    The project is known by host and path (``Project.watched``), never by
    name: two folders both called ``alpha`` get two projects, and a scan's
    or upload's project called ``alpha`` is neither. Its name is the
    folder's when no project of the owner has that name yet, else the
    folder's name with its path.
    """
    root = root.resolve()
    host = this_host()
    with transaction.atomic():
        project = _project_of(owner, host, root)
        folder, _ = WatchedFolder.objects.update_or_create(
            owner=owner, host=host, path=str(root), defaults={"project": project}
        )
    return folder


def watched_key(host: str, root: Path | str) -> str:
    return f"{host}:{root}"


def _project_of(owner: Any, host: str, root: Path) -> Project:
    key = watched_key(host, root)
    found = Project.objects.filter(owner=owner, watched=key).first()
    if found is not None:
        return found
    base = root.name.strip() or "watched"
    taken = Project.objects.filter(owner=owner)
    name = base
    for name in (base, f"{base} ({root})", f"{base} ({host}:{root})"):
        if not taken.filter(name=name).exists():
            break
    slugs = [slugify(name)[:200] or "watched", slugify(base)[:200] or "watched"]
    return project_where(owner, name[:200], list(dict.fromkeys(slugs)), Q(watched=key), watched=key)


def ingest(folder: WatchedFolder, path: Path, data: bytes) -> WatchedFile:
    """Diagnose and store ``data``, the whole of ``path`` now; return its watched-file row."""
    relative = path.resolve().relative_to(Path(folder.path)).as_posix()
    now = timezone.now()
    previous = WatchedFile.objects.filter(folder=folder, relative_path=relative).first()
    try:
        transcript, _ = store_upload(
            folder.owner, data, path.name, project=folder.project, relative_path=relative
        )
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
    """Make ``transcript`` the folder's file at ``relative``: the file's older bytes make way.

    ``transcript`` is of the folder's own project (``store_upload`` keeps one
    per project), so nothing of another project is touched. Bytes another
    file of the folder holds stay that file's (stored once); the file's
    earlier transcript goes unless something still shows it
    (``store.retire_previous``: a share link keeps it).
    """

    def other_file(old: Transcript) -> str:
        holders = WatchedFile.objects.filter(folder=folder, transcript=old)
        return (
            holders.exclude(relative_path=relative).values_list("relative_path", flat=True).first()
            or ""
        )

    with transaction.atomic():
        retire_previous(transcript, relative, keep_for=other_file)
        # The same bytes as another file of the folder: that file keeps them (and the path).
        if not other_file(transcript):
            Transcript.objects.filter(pk=transcript.pk).update(relative_path=relative)
