"""The scan's tasks: ``scan_file`` for one file, ``scan_files`` for a batch of them, and
``expand_zip`` for an uploaded zip.

A job of at most ``INSPECTOR_SCAN_BATCH_ABOVE`` files sends one ``scan_file`` a file;
a larger one, one ``scan_files`` per ``INSPECTOR_SCAN_BATCH_FILES`` files (the task's
round trip through the queue, paid once a batch). A batch reads, diagnoses and stores
the files of each group (its files, up to ``GROUP_BYTES`` of them) one after the other,
holding no lock of the database, then records the whole group in one transaction: the
transcripts' rows, the files' outcomes and the job's counters, then the group's search
entries in one more. On SQLite, whose one writer at a time is every worker's, that is
two waits for the write lock and two commits a group instead of three a file
(README, "Why two workers do not scale on SQLite"). A group lands whole or not at all:
a worker killed in the middle of one leaves its files pending (their stored bytes, with
no row, go at the next worker's start: ``store.sweep_orphans``), the groups before it
finished and counted, and the batch run again does only what was left pending.

Each task is safe to run twice. A file moves from pending to an outcome with a
conditional UPDATE, and the job's counters are bumped in SQL (``done = done + 1``) in
the same transaction, so a retried task counts once and concurrent workers never lose
a count. Whoever finishes a job's last file (that UPDATE returns the counters) links
subagents to their parent sessions and marks the job done.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import sqlite3
import tempfile
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import DatabaseError, connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.fields.json import KT
from django.tasks import task
from django.utils import timezone

from inspector.local import databases, openhands_cli, stores
from inspector.local.outcome import StoreError
from inspector.local.store import FILE
from inspector.scan.models import ScanFile, ScanJob, refresh_scan_started
from inspector.scan.sources import (
    DATABASES,
    Found,
    Limits,
    ZipPlan,
    ZipRefused,
    is_database,
    is_row_of,
    plan_zip,
    row_time,
    session_start,
    zip_started,
)
from inspector.web import tally
from inspector.web.diskfull import DISK_FULL, is_disk_full
from inspector.web.models import Project, Transcript
from inspector.web.store import (
    Prepared,
    UnreadableTranscript,
    abandon,
    land,
    landed,
    prepare_upload,
    retire_previous,
    sweep_orphans,
)

log = logging.getLogger(__name__)

Status = ScanFile.Status
# ScanFile status -> the ScanJob counter it adds to.
COUNTERS = {
    Status.NEW: "new",
    Status.UPDATED: "updated",
    Status.UNCHANGED: "unchanged",
    Status.DUPLICATE: "duplicate",
    Status.UNREADABLE: "unreadable",
}


@dataclass(slots=True)
class Outcome:
    status: Status
    reason: str = ""
    sha256: str = ""
    transcript: Transcript | None = None
    started: datetime | None = None
    # Whether ``transcript`` was inserted by this run, in the transaction ``_finish`` runs in.
    created: bool = False
    # Whether this run recorded the outcome (``_finish``); ``None`` until it tried.
    finished: bool | None = None
    # The stored file whose row is still to insert (``store.land``), for a new transcript.
    prepared: Prepared | None = None


# A batch's files are recorded a group at a time, a group holding files up to this many
# bytes (one file at least): what a worker holds in memory before the group's commit is
# their timeline rows, two to four times their size.
GROUP_BYTES = 8 * 1024 * 1024


@task()
def scan_file(file_id: int) -> str:
    """Store and diagnose one file of a scan; a second run of the same file does nothing."""
    row = ScanFile.objects.select_related("job__owner", "project").filter(pk=file_id).first()
    if row is None or not row.is_pending:
        return "already finished"
    statuses, failed = _scan_group([row])
    if failed is not None:
        raise failed  # the file stays pending, to be retried
    return statuses[0]


@task()
def scan_files(file_ids: list[int]) -> str:
    """``scan_file`` for each of ``file_ids`` still pending, in order, a group of them
    (``_groups``) recorded in one transaction; a second run of the batch does only what
    the first left pending.

    A database error on one file leaves it pending and the batch goes on; the task then
    fails (with the first such error), so the queue shows it, and the job's retry sends
    the pending files again, as it does for a failed ``scan_file``.
    """
    rows = list(
        ScanFile.objects.select_related("job__owner", "project")
        .filter(pk__in=file_ids, status=Status.PENDING)
        .order_by("pk")
    )
    if not rows:
        # Killed between a last group's commit and the job's end: end it now.
        job_id = ScanFile.objects.filter(pk__in=file_ids).values_list("job_id", flat=True).first()
        if job_id is not None:
            complete_if_done(job_id)
        return "already finished"
    counts: dict[str, int] = {}
    failed: DatabaseError | None = None
    for group in _groups(rows):
        statuses, error = _scan_group(group)
        failed = failed or error
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
    if failed is not None:
        raise failed
    return ", ".join(f"{status} {count}" for status, count in counts.items()) or "already finished"


def _groups(rows: list[ScanFile]) -> Iterator[list[ScanFile]]:
    """The rows in order, in groups of one job's files of at most ``GROUP_BYTES`` together
    (a larger file alone)."""
    group: list[ScanFile] = []
    size = 0
    for row in rows:
        if group and (size + row.size > GROUP_BYTES or row.job_id != group[0].job_id):
            yield group
            group, size = [], 0
        group.append(row)
        size += row.size
    if group:
        yield group


def _scan_group(rows: list[ScanFile]) -> tuple[list[str], DatabaseError | None]:
    """Scan these pending files of one job and record them in one transaction (``_record``).

    Returns the statuses of the files recorded, and the first database error that left
    any of them pending. A group that cannot be recorded whole is recorded a file at a
    time, so one file's error leaves that file pending, not its group.
    """
    # The scan page's "now scanning": a write of its own, so once a group.
    ScanJob.objects.filter(pk=rows[0].job_id).update(current_file=rows[0].path)
    ready: list[tuple[ScanFile, Outcome]] = []
    failed: DatabaseError | None = None
    for row in rows:
        try:
            ready.append((row, _scan(row)))
        except DatabaseError as error:
            log.exception("scanning %s: database error, the file stays pending", row.path)
            failed = failed or error
    if not ready:
        return [], failed
    try:
        counted = _record(ready)
    except Exception as error:
        if len(ready) > 1:
            # One file's error must not keep the group's other files pending.
            log.exception("recording %d files at once failed: one at a time now", len(ready))
            statuses: list[str] = []
            for row, _outcome in ready:
                done, alone = _scan_group([row])
                statuses += done
                failed = failed or alone
            return statuses, failed
        row, outcome = ready[0]
        if isinstance(error, DatabaseError):
            log.exception("scanning %s: database error, the file stays pending", row.path)
            return [], failed or error
        # One bad file never stops a scan, a bug in placing it included.
        log.exception("scanning %s failed", row.path)
        outcome = Outcome(Status.UNREADABLE, _bug(error), outcome.sha256, started=outcome.started)
        ready = [(row, outcome)]
        try:
            counted = _record(ready)
        except DatabaseError as again:
            log.exception("scanning %s: database error, the file stays pending", row.path)
            return [], failed or again
    _recorded(ready, counted)
    return [outcome.status for _row, outcome in ready], failed


def _record(ready: list[tuple[ScanFile, Outcome]]) -> tuple[int, int] | None:
    """Record these scanned files of one job, all in one transaction: each new transcript's
    row (``store.land``) placed in the project, each file's outcome, the job's counters;
    the job's done and total files after them (``_count``). Rolled back, the new
    transcripts' stored files go too."""
    try:
        with transaction.atomic():
            for row, outcome in ready:
                if outcome.prepared is not None:
                    # The row, its place and the file's outcome commit together: a worker
                    # killed before the commit leaves no row, so the retry stores the file
                    # again and counts it new, never "unchanged".
                    transcript, created = land(outcome.prepared)
                    outcome.transcript, outcome.created = transcript, created
                    outcome.status, outcome.reason = _place(transcript, created, row)
                outcome.finished = _finish(row, outcome)
            return _count([(row, outcome) for row, outcome in ready if outcome.finished])
    except BaseException:
        for _row, outcome in ready:
            if outcome.prepared is not None:
                abandon(outcome.prepared)
        raise


def _recorded(ready: list[tuple[ScanFile, Outcome]], counted: tuple[int, int] | None) -> None:
    """After ``_record``'s commit: the new transcripts announced (search indexes them,
    in one transaction more), uploaded files removed, the job ended after its last file."""
    # Search indexes the rows now, from memory: no second task reads them back.
    landed([o.prepared for _row, o in ready if o.prepared is not None], follow_now=True)
    for row, _outcome in ready:
        if row.job.source != ScanJob.Source.FOLDER and row.source:
            default_storage.delete(row.source)
    if counted is not None:
        complete_if_done(ready[0][0].job_id, counted)


@task()
def expand_zip(job_id: int, zip_name: str) -> str:
    """Read an uploaded zip's members into storage, one at a time, then scan them."""
    job = ScanJob.objects.filter(pk=job_id, status=ScanJob.Status.PREPARING).first()
    if job is None:
        return "already expanded"
    try:
        with default_storage.open(zip_name, "rb") as handle, zipfile.ZipFile(handle) as archive:
            plan, found = unpack_zip(archive, f"{job.storage_dir}/files", zip_limits())
    except (zipfile.BadZipFile, ZipRefused, OSError, EOFError) as error:
        reason = str(error) if isinstance(error, ZipRefused) else f"The zip is damaged: {error}."
        ScanJob.objects.filter(pk=job.pk).update(
            status=ScanJob.Status.FAILED, notes=[*job.notes, reason], finished=timezone.now()
        )
        delete_stored(job)
        return "failed"
    default_storage.delete(zip_name)
    ScanJob.objects.filter(pk=job.pk).update(notes=[*job.notes, *plan.notes])
    start(job, found)
    return "expanded"


def unpack_zip(
    archive: zipfile.ZipFile, folder: str, limits: Limits
) -> tuple[ZipPlan, list[Found]]:
    """The zip's plan (``plan_zip``: raises ``ZipRefused``), and each member it keeps read
    into storage under ``folder`` by our own names: a file as it is, an agent's database as
    its sessions (``_unpack_database``)."""
    databases.sweep_private_folders()
    plan = plan_zip(archive, limits)
    found: list[Found] = []
    conversations = _conversations(plan.members)
    for index, (info, name) in enumerate(plan.members):
        stem = f"{folder}/{index:06d}"
        held = conversations.get(str(PurePosixPath(name).parent))
        if held is not None:  # an OpenHands CLI conversation's file: read with the others
            if held[0] is info and PurePosixPath(name).parent.name == "events":
                found.append(_unpack_conversation(archive, held, name, stem))
        elif is_database(name):
            wal = plan.wal.get(info.filename)
            found.extend(_unpack_database(archive, info, name, stem, limits, wal))
        else:
            found.append(_unpack(archive, info, name, stem))
    return plan, found


def _conversations(members: list[tuple[zipfile.ZipInfo, str]]) -> dict[str, list[zipfile.ZipInfo]]:
    """The OpenHands CLI conversations among a zip's members: each ``events/`` folder holding
    event files (``event-<n>-<id>.json``), with its members, and the ``base_state.json``
    beside it, which is read with them (it is no session of its own)."""
    held: dict[str, list[zipfile.ZipInfo]] = {}
    for info, name in members:
        path = PurePosixPath(name)
        if path.parent.name == "events" and openhands_cli.event_index(path.name):
            held.setdefault(str(path.parent), []).append(info)
    for info, name in members:
        path = PurePosixPath(name)
        if path.name == openhands_cli.BASE_STATE and str(path.parent / "events") in held:
            held[str(path.parent)] = [info]  # left out: the events hold the conversation
    return held


def _unpack_conversation(
    archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], name: str, stem: str
) -> Found:
    """An OpenHands CLI conversation's event members, as one transcript named by its
    ``events`` folder: the events in index order, one list, as a scanned folder is read."""
    folder = str(PurePosixPath(name).parent)
    started = max((s for s in map(zip_started, infos) if s is not None), default=None)
    try:
        members = []
        for info in infos:
            with archive.open(info) as member:
                members.append((PurePosixPath(info.filename).name, member.read()))
        data = openhands_cli.export_members(members)
    except (zipfile.BadZipFile, EOFError, NotImplementedError, zlib.error) as error:
        reason = f"This conversation could not be unpacked ({error}); the rest were read."
        return Found(folder, "", sum(i.file_size for i in infos), started, reason)
    except StoreError as error:
        reason = f"This OpenHands CLI conversation is not read: {error}."
        return Found(folder, "", sum(i.file_size for i in infos), started, reason)
    stored = default_storage.save(f"{stem}.json", ContentFile(data))
    return Found(folder, stored, len(data), started)


def _unpack(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, stem: str) -> Found:
    """One member into storage (under our own name, never the member's)."""
    started = zip_started(info)
    try:
        with archive.open(info) as member:
            data = member.read()
    except (zipfile.BadZipFile, EOFError, NotImplementedError, zlib.error) as error:
        reason = f"This member of the zip could not be unpacked ({error}); the rest were read."
        return Found(name, "", info.file_size, started, reason)
    stored = default_storage.save(f"{stem}{PurePosixPath(name).suffix}", ContentFile(data))
    return Found(name, stored, len(data), started)


def _unpack_database(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    name: str,
    stem: str,
    limits: Limits,
    wal: zipfile.ZipInfo | None = None,
) -> list[Found]:
    """Each session of an agent's database member, into storage as its own transcript
    (``<member>/<sessionID>``), read read-only through its store, as a folder scan reads one.

    SQLite reads only files, and the upload may be in object storage: the member is copied
    (at most its declared size, as ``zipfile`` stops there) into a private temporary folder
    under our own name, and that folder goes whatever happens. A member that cannot be read
    is one unreadable file saying why; a session that cannot, one unreadable session.

    Its ``-wal`` member (``wal``: the writes committed but not yet checkpointed) is copied
    beside it the same way, as ``<database>-wal``, so SQLite reads them with it; its ``-shm``
    never is (SQLite builds its own index of the log, here in the private folder). Without
    one, the copy is marked a rollback database, so a reader makes no journal files at all.
    """
    started = zip_started(info)
    kind = PurePosixPath(name).name
    with tempfile.TemporaryDirectory(prefix=databases.ZIP_PRIVATE) as private:
        db = Path(private).resolve() / kind

        def why(error: Exception) -> str:  # the member's name, never our temporary path
            return str(error).replace(str(db), name).replace(private, "")

        try:
            with archive.open(info) as member, db.open("xb+") as copy:
                # With its -wal beside it, the copy stays in WAL mode so SQLite reads that log.
                databases.copy_into(member, copy, out_of_wal=wal is None)
            if wal is not None:
                log_copy = db.with_name(f"{kind}-wal")
                with archive.open(wal) as member, log_copy.open("xb") as log_file:
                    shutil.copyfileobj(member, log_file, 1024 * 1024)
        except (zipfile.BadZipFile, EOFError, NotImplementedError, zlib.error, OSError) as error:
            reason = (
                f"This member of the zip could not be unpacked ({why(error)}); the rest were read."
            )
            return [Found(name, "", info.file_size, started, reason)]
        try:
            listed = DATABASES[kind](db)
        except (sqlite3.Error, StoreError, OSError) as error:
            reason = (
                f"This member could not be read as {kind} ({why(error)}): its sessions are "
                "left out; the rest of the zip was read."
            )
            return [Found(name, "", info.file_size, started, reason)]
        except Exception as error:  # one bad member never stops a scan, a reader bug included
            log.exception("listing the sessions of %s failed", name)
            return [Found(name, "", info.file_size, started, _bug(error))]
        found = []
        for number, (session, _count, newest) in enumerate(listed):
            path = f"{name}/{session.name}"
            when = row_time(newest) or started
            store = stores.for_path(session)
            if not is_row_of(session, db) or store is FILE:
                # Only ever a row of this database: an id naming a path is never a file read.
                reason = f"This session of {name} has an id that is no session name: skipped."
                found.append(Found(path, "", 0, when, reason))
                continue
            try:
                data = store.read(session)  # read-only
            except (sqlite3.Error, StoreError, OSError) as error:
                reason = f"This session of {name} could not be read ({why(error)})."
                found.append(Found(path, "", 0, when, reason))
                continue
            except Exception as error:  # a reader bug: this session only
                log.exception("reading %s failed", path)
                found.append(Found(path, "", 0, when, _bug(error)))
                continue
            if len(data) > limits.max_file_bytes:
                reason = (
                    f"This session is over the {limits.max_file_bytes:,} bytes limit for one "
                    "transcript: skipped."
                )
                found.append(Found(path, "", len(data), when, reason))
                continue
            stored = default_storage.save(f"{stem}-{number:06d}.jsonl", ContentFile(data))
            found.append(Found(path, stored, len(data), when))
    return found


def zip_limits() -> Limits:
    return Limits(
        max_bytes=settings.INSPECTOR_SCAN_MAX_BYTES,
        max_files=settings.INSPECTOR_SCAN_MAX_FILES,
        max_ratio=settings.INSPECTOR_ZIP_MAX_RATIO,
        max_file_bytes=settings.INSPECTOR_MAX_UPLOAD_BYTES,
    )


def start(job: ScanJob, found: list[Found], enqueue: bool = True) -> list[int]:
    """Record the job's files and, with ``enqueue``, send their tasks (``enqueue_files``).

    The total is set before any task is sent, so no worker can see the job
    complete early. Returns the files' ids (to run them inline).
    """
    rows = [
        ScanFile(
            job=job,
            project_id=job.project_id,
            path=item.path[:1000],
            source=item.source,
            size=item.size,
            started=item.started,
            reason=item.reason,
        )
        for item in found
    ]
    with transaction.atomic():
        ScanFile.objects.bulk_create(rows, batch_size=500)
        ScanJob.objects.filter(pk=job.pk).update(
            total=len(rows),
            bytes_total=sum(item.size for item in found),
            status=ScanJob.Status.RUNNING,
        )
    ids = [row.pk for row in rows]
    if not ids:
        complete_if_done(job.pk)
    elif enqueue:
        enqueue_files(ids)
    return ids


def enqueue_files(ids: list[int]) -> int:
    """Send the tasks that scan these files: one ``scan_file`` a file for at most
    ``INSPECTOR_SCAN_BATCH_ABOVE`` of them, else one ``scan_files`` per
    ``INSPECTOR_SCAN_BATCH_FILES``. Returns how many tasks were sent."""
    if len(ids) <= settings.INSPECTOR_SCAN_BATCH_ABOVE:
        for file_id in ids:
            scan_file.enqueue(file_id)
        return len(ids)
    size = settings.INSPECTOR_SCAN_BATCH_FILES
    batches = [ids[at : at + size] for at in range(0, len(ids), size)]
    for batch in batches:
        scan_files.enqueue(batch)
    return len(batches)


def retry_pending(job: ScanJob) -> int:
    """Send the job's unfinished work to the workers again (after a worker was killed)."""
    if job.status == ScanJob.Status.PREPARING:
        expand_zip.enqueue(job.pk, f"{job.storage_dir}/upload.zip")
        return 1
    # A killed worker may have left stored bytes without their row.
    sweep_orphans(settings.INSPECTOR_ORPHAN_GRACE_SECONDS)
    pending = list(
        job.files.filter(status=Status.PENDING).order_by("pk").values_list("pk", flat=True)
    )
    enqueue_files(pending)
    # Every file may be in while the job is not marked done (its last step failed).
    complete_if_done(job.pk)
    return len(pending)


# --- one file --------------------------------------------------------------


def _scan(row: ScanFile) -> Outcome:
    if row.reason:
        return Outcome(Status.UNREADABLE, row.reason, started=row.started)
    try:
        data = _read(row)
    except OSError as error:
        reason = error.strerror or str(error)
        return Outcome(Status.UNREADABLE, f"The file could not be read: {reason}.")
    except StoreError as error:  # a session of many files that do not read as one
        return Outcome(Status.UNREADABLE, f"The session could not be read: {error}.")
    sha = hashlib.sha256(data).hexdigest()
    started = session_start(data) or row.started
    try:
        prepared = prepare_upload(
            row.job.owner,
            data,
            PurePosixPath(row.path).name,
            project=row.project,
            relative_path=row.path,
        )
    except UnreadableTranscript as error:
        return Outcome(Status.UNREADABLE, _reason(error), sha, started=started)
    except DatabaseError:
        raise  # the file stays pending, to be retried
    except Exception as error:
        if is_disk_full(error):
            log.error("scanning %s: the disk is full", row.path)
            return Outcome(Status.UNREADABLE, DISK_FULL, sha, started=started)
        # One bad file never stops a scan, a reader bug included.
        log.exception("scanning %s failed", row.path)
        return Outcome(Status.UNREADABLE, _bug(error), sha, started=started)
    del data
    return Outcome(Status.NEW, "", sha, started=started, prepared=prepared)


def _read(row: ScanFile) -> bytes:
    if row.job.source == ScanJob.Source.FOLDER:
        path = Path(row.source)
        if path.is_dir():  # an OpenHands session: its events, read as one list (sources.walk)
            return stores.for_path(path).read(path)
        if path.parent.name in DATABASES and path.parent.is_file():  # a database's session
            try:
                return stores.for_path(path).read(path)  # read-only
            except sqlite3.Error as error:
                raise StoreError(f"cannot read {path.parent}: {error}") from None
        return path.read_bytes()
    with default_storage.open(row.source, "rb") as handle:
        return handle.read()


def _bug(error: Exception) -> str:
    return (
        f"The scan failed on this file ({type(error).__name__}); this is a bug in "
        "Transcript Inspector and has been logged."
    )


def _reason(error: UnreadableTranscript) -> str:
    reason = str(error)
    if error.attempts:
        tried = "; ".join(f"{name}: {why}" for name, why in error.attempts)
        reason = f"{reason} Tried {tried}."
    return reason


def _place(transcript: Transcript, created: bool, row: ScanFile) -> tuple[Status, str]:
    """Make ``transcript`` the project's file at ``row.path``; say what that changed.

    ``transcript`` is of ``row.project`` (``store_upload`` keeps one per
    project), so nothing here touches another project. ``created`` came from
    the database's unique constraint: of two scans storing the same bytes in
    the project at once, one made the row (new) and the other finds it.
    """
    if not created:
        transcript.refresh_from_db(fields=["relative_path"])
        if transcript.relative_path == row.path:
            return Status.UNCHANGED, ""
    # A changed file replaces what an earlier scan stored for its path.
    replaced = retire_previous(transcript, row.path, keep_for=_scanned_files(row))
    if not created and row.job.files.filter(path=transcript.relative_path).exists():
        return Status.DUPLICATE, f"Same bytes as {transcript.relative_path}; stored once."
    if created:
        return (Status.UPDATED if replaced else Status.NEW), ""
    # Bytes this project has under another path, which this scan does not hold
    # (the file was moved or renamed): the transcript follows it. Not new here.
    was = transcript.relative_path or f"{transcript.file_name} (an upload)"
    Transcript.objects.filter(pk=transcript.pk).update(relative_path=row.path)
    transcript.relative_path = row.path
    if replaced:
        return Status.UPDATED, f"Stored before as {was}; it replaces the older bytes of this path."
    return Status.UNCHANGED, f"Stored before as {was}: the same bytes, now at this path."


def _scanned_files(row: ScanFile) -> Callable[[Transcript], str]:
    """Another path of this job whose bytes are the transcript's, or ``""``."""

    def other_path(old: Transcript) -> str:
        return (
            row.job.files.filter(transcript=old)
            .exclude(path=row.path)
            .values_list("path", flat=True)
            .first()
            or ""
        )

    return other_path


def _finish(row: ScanFile, outcome: Outcome) -> bool:
    """Record the outcome once; ``False`` when another run of the task got there first.

    All or nothing with the caller's transaction (``_record``'s, that inserts the
    transcript): no savepoint of its own, as nothing here is undone alone. The job's
    counters are the caller's to bump (``_count``), once for all the files it records.
    """
    with transaction.atomic(savepoint=False):
        changed = ScanFile.objects.filter(pk=row.pk, status=Status.PENDING).update(
            status=outcome.status,
            reason=outcome.reason,
            sha256=outcome.sha256,
            transcript=outcome.transcript,
            started=outcome.started,
            finished=timezone.now(),
        )
        if not changed:
            return False
        if outcome.transcript is not None and outcome.created:
            # Inserted in this very transaction: no other transaction sees it yet, so the
            # file just recorded is its only scan file and the latest (``latest_start``).
            Transcript.objects.filter(pk=outcome.transcript.pk).update(scan_started=outcome.started)
            outcome.transcript.scan_started = outcome.started
        elif outcome.transcript is not None:
            refresh_scan_started([outcome.transcript.pk])
    return True


def _count(finished: list[tuple[ScanFile, Outcome]]) -> tuple[int, int] | None:
    """Add these files of one job, their outcomes just recorded (``_finish``), to the
    job's counters; the job's done and total files after them (``None`` for no files).

    One UPDATE ... RETURNING (SQLite 3.35 and later, PostgreSQL) a group, at the end of
    its transaction (on PostgreSQL the job's row stays locked from there to the commit):
    the counters as this transaction left them, so exactly one group's task sees the
    last file in, and no other needs to read the job again (``complete_if_done``).
    """
    if not finished:
        return None
    added = Counter(COUNTERS[outcome.status] for _row, outcome in finished)
    quote = connection.ops.quote_name
    # Column names from COUNTERS only; every value is a parameter.
    bumps = "".join(f", {quote(name)} = {quote(name)} + %s" for name in added)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(ScanJob._meta.db_table)} SET done = done + %s, "  # noqa: S608
            f"bytes_done = bytes_done + %s{bumps} WHERE id = %s RETURNING done, total",
            [
                len(finished),
                sum(row.size for row, _outcome in finished),
                *added.values(),
                finished[0][0].job_id,
            ],
        )
        found = cursor.fetchone()
    return None if found is None else (found[0], found[1])


# --- the end of a job ------------------------------------------------------


def complete_if_done(job_id: int, counted: tuple[int, int] | None = None) -> bool:
    """Finish the job if every file is done; ``True`` for the one caller that finished it.

    ``counted``: the job's done and total files as the caller's own counter update left
    them (``_finish``); short of the total, files are still to come and nothing is read.
    """
    if counted is not None and counted[0] < counted[1]:
        return False
    job = ScanJob.objects.filter(pk=job_id).select_related("project").first()
    if job is None or job.status != ScanJob.Status.RUNNING or job.done < job.total:
        return False
    link_subagents(job.project)
    won = ScanJob.objects.filter(pk=job_id, status=ScanJob.Status.RUNNING).update(
        status=ScanJob.Status.DONE, finished=timezone.now(), current_file=""
    )
    if won:
        delete_stored(job)
        if tally.available():
            # Every file of the scan appended its project's tallies: one row per key again.
            tally.fold(job.project_id)
    return bool(won)


def link_subagents(project: Project) -> int:
    """Point every subagent transcript of the project at its parent session; returns changes.

    A subagent's file (``agent-*.jsonl``, ``<session>/subagents/*.jsonl``)
    names its parent's session id; the parent is the project's transcript
    with that session id that is not itself a subagent. Files may arrive in
    any order over many workers, so this runs once all of them are in.
    """
    rows = (
        Transcript.objects.filter(project=project)
        .annotate(
            session=KT("meta__session_id"),
            parent_session=KT("meta__parent_session"),
            sidechain=ExpressionWrapper(Q(meta__sidechain=True), output_field=BooleanField()),
        )
        .values_list("pk", "session", "parent_session", "sidechain", "parent_id", "relative_path")
    )
    sessions: dict[str, int] = {}
    subagents: list[tuple[int, str, int | None]] = []
    for pk, session, parent_session, sidechain, parent_id, path in rows:
        if sidechain:
            subagents.append((pk, parent_session or _session_from_path(path), parent_id))
        elif session:
            sessions.setdefault(session, pk)
    changed = 0
    for pk, parent_session, linked in subagents:
        target = sessions.get(parent_session)
        if target is not None and target != linked:
            changed += Transcript.objects.filter(pk=pk).update(parent=target)
    return changed


def _session_from_path(path: str) -> str:
    # <session>/subagents/agent-x.jsonl
    parts = PurePosixPath(path).parts
    return parts[-3] if len(parts) >= 3 and parts[-2] == "subagents" else ""


def delete_stored(job: ScanJob) -> None:
    """Remove whatever an uploaded scan still keeps in storage."""
    if job.source == ScanJob.Source.FOLDER:
        return
    _delete_tree(job.storage_dir)


def _delete_tree(directory: str) -> None:
    try:
        folders, files = default_storage.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in files:
        default_storage.delete(f"{directory}/{name}")
    for name in folders:
        _delete_tree(f"{directory}/{name}")
    try:
        # An empty folder goes (FileSystemStorage); an object storage has none, and
        # deleting a key that holds no object does nothing.
        default_storage.delete(directory)
    except OSError:
        pass  # a folder in use stays
