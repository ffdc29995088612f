"""Making scan jobs: from a folder on disk (the ``scan`` command) or from a browser upload."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile

from inspector.local.sessions import is_session_name
from inspector.scan import tasks
from inspector.scan.models import ScanJob
from inspector.scan.sources import Found, walk
from inspector.web.models import Project


def folder_job(owner: Any, project: Project, root: Path) -> tuple[ScanJob, list[Found]]:
    """A job for every session file under ``root``; not started (the command decides how)."""
    found, notes = walk(root)
    job = ScanJob.objects.create(
        owner=owner, project=project, source=ScanJob.Source.FOLDER, label=str(root), notes=notes
    )
    return job, found


def upload_job(owner: Any, project: Project, uploads: list[UploadedFile]) -> ScanJob:
    """Keep the uploaded files in storage under the job, then send one task per file."""
    job = ScanJob.objects.create(
        owner=owner, project=project, source=ScanJob.Source.UPLOAD, label=_label(uploads)
    )
    found: list[Found] = []
    others: list[str] = []
    seen: set[str] = set()
    for index, upload in enumerate(uploads):
        name = PurePosixPath((upload.name or "upload").replace("\\", "/")).name
        if not is_session_name(name) or name in seen:
            others.append(name)
            continue
        seen.add(name)
        stored = default_storage.save(
            f"{job.storage_dir}/files/{index:06d}.{_suffix(name)}", upload
        )
        found.append(Found(name, stored, upload.size or 0))
    if others:
        job.notes = [
            f"Left out {len(others):,} file(s) that are not .json or .jsonl sessions, or whose "
            f"name came twice: {', '.join(others[:5])}{' …' if len(others) > 5 else ''}."
        ]
        job.save(update_fields=["notes"])
    tasks.start(job, found)
    return job


def zip_job(owner: Any, project: Project, upload: UploadedFile) -> ScanJob:
    """Keep the zip in storage and let a task read its members (the form checked its limits)."""
    job = ScanJob.objects.create(
        owner=owner, project=project, source=ScanJob.Source.ZIP, label=upload.name or "upload.zip"
    )
    stored = default_storage.save(f"{job.storage_dir}/upload.zip", upload)
    tasks.expand_zip.enqueue(job.pk, stored)
    return job


def _label(uploads: list[UploadedFile]) -> str:
    if len(uploads) == 1:
        return uploads[0].name or "1 file"
    return f"{len(uploads):,} files"


def _suffix(name: str) -> str:
    return "jsonl" if name.lower().endswith(".jsonl") else "json"
