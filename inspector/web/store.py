"""Storing uploads and caching their diagnoses.

Raw bytes are kept exactly as uploaded, zstd-compressed, in Django's default
storage under ``transcripts/<xx>/<public id>/``; the diagnosis beside them is
a cache named after the engine version that made it and the layout of the
file (``inspector.diagnosis.stored``: a header, a row index and the rows in
chunks, so a timeline page reads only the rows it shows). A cache of another
engine version or layout, or one that does not read whole, is rebuilt from the
raw bytes and the others removed.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import IO, Any

import zstandard
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from inspector import collector, formats
from inspector.diagnosis import (
    ENGINE_VERSION,
    Diagnosis,
    FileDiagnosis,
    Row,
    diagnose_file,
    diagnose_part,
    stored,
)
from inspector.diagnosis.select import GROUP_LIMIT
from inspector.diagnosis.stored import StoredDiagnosis
from inspector.engine.errors import InvalidTranscript
from inspector.formats.base import Parsed
from inspector.web import events
from inspector.web.models import (
    LIST_COLUMNS,
    META_COLUMNS,
    Project,
    Transcript,
    new_public_id,
    storage_dir,
)

log = logging.getLogger(__name__)

# How many of a provider's error texts the row keeps for lists; the timeline reads them all.
VERDICT_TEXTS = 3
# Diagnoses kept open in this process (header and row index; rows stay in
# storage), which spares paging a long timeline a few tens of milliseconds.
# Another branch of a session is held whole, so the number stays small.
MEMORY_CACHE_SIZE = 2


class UnreadableTranscript(ValueError):
    """The bytes are no transcript the loader can read; ``str()`` says why in plain words.

    ``attempts`` lists, for auto-detection, each shape tried and why it refused.
    """

    def __init__(self, message: str, attempts: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts or []


# orjson writes JSON nested at most 255 levels deep (and reads at most 1024):
# what is read in is written back out, as the cache file and as downloads, so
# that is the most the reader takes. Deeper files are refused with this.
DEPTH_LIMIT = 255
TOO_DEEP = (
    f"The file nests JSON more than {DEPTH_LIMIT} levels deep, and Transcript Inspector reads "
    f"at most {DEPTH_LIMIT} levels. No transcript a tool writes nests that deep: check that "
    "this is the file you meant."
)


class TooDeep(UnreadableTranscript):
    """JSON nested deeper than ``DEPTH_LIMIT``: refused on every path with ``TOO_DEEP``."""

    def __init__(self) -> None:
        super().__init__(TOO_DEEP)


def _too_deep(error: BaseException) -> bool:
    text = str(error)
    return isinstance(error, RecursionError) or (
        isinstance(error, TypeError | ValueError)
        and ("Recursion limit" in text or "depth limit exceeded" in text)
    )


@contextmanager
def depth_guarded() -> Iterator[None]:
    """Turn nesting too deep to read or write (anywhere inside) into ``TooDeep``."""
    try:
        yield
    except UnreadableTranscript as error:
        if error.attempts and any("depth limit exceeded" in why for _, why in error.attempts):
            raise TooDeep() from error
        raise
    except (RecursionError, TypeError, ValueError) as error:
        if not _too_deep(error):
            raise
        raise TooDeep() from error


# What diagnosing a file holds at its peak, measured (bench/bench_memory.py on
# every kind of record: lines of `[]`, `0`, `{}` or `"x"`, arrays of numbers,
# of strings, of empty arrays or objects, deep nesting, tiny messages, real
# sessions, one huge string): about three times the bytes (strings are read
# into Python strings, then into messages), plus for each JSON value outside
# strings what Python holds for it. An object costs the most (a message, its
# row and findings come of one); any other value, an array or a scalar after
# a comma, costs a list slot and an object; each line is a record of its own.
# Every weight is at or above the worst measured case of its kind.
BYTES_PER_BYTE = 3
BYTES_PER_OBJECT = 2048
BYTES_PER_VALUE = 256
BYTES_PER_LINE = 384
FIXED_BYTES = 32 * 2**20  # what any diagnosis costs at first (modules it loads, arenas)
# A JSON string, so what is inside strings (code full of braces, commas in
# prose) is not counted as structure. No raw line break is inside a string.
_STRING = re.compile(rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')
_CHUNK = 4 << 20


@dataclass(frozen=True, slots=True)
class Structure:
    """The JSON values of a file, counted outside its strings."""

    objects: int = 0
    arrays: int = 0
    commas: int = 0
    lines: int = 0

    @property
    def values(self) -> int:
        return self.objects + self.arrays + self.commas


def structure(data: bytes) -> Structure:
    """Count ``{``, ``[``, ``,`` and line breaks outside strings, a few MB at a time."""
    objects = arrays = commas = lines = 0
    start = 0
    while start < len(data):
        # Cut at a line break (never inside a string), so no piece splits one.
        cut = data.find(b"\n", min(len(data), start + _CHUNK))
        end = len(data) if cut < 0 else cut + 1
        piece = _STRING.sub(b"", data[start:end])
        objects += piece.count(b"{")
        arrays += piece.count(b"[")
        commas += piece.count(b",")
        lines += piece.count(b"\n")
        start = end
    return Structure(objects, arrays, commas, lines)


def _every_mark(data: bytes) -> Structure:
    """``{``, ``[``, ``,`` and line breaks counted everywhere, strings included: ``structure``'s
    counts or more."""
    return Structure(data.count(b"{"), data.count(b"["), data.count(b","), data.count(b"\n"))


def memory_estimate(data: bytes, counted: Structure | None = None) -> int:
    """An upper bound of the memory diagnosing ``data`` takes, from its size and its values."""
    found = counted if counted is not None else structure(data)
    return (
        len(data) * BYTES_PER_BYTE
        + found.objects * BYTES_PER_OBJECT
        + (found.arrays + found.commas) * BYTES_PER_VALUE
        + found.lines * BYTES_PER_LINE
        + FIXED_BYTES
    )


class TooBigToDiagnose(UnreadableTranscript):
    """Diagnosing the file would take more memory than INSPECTOR_MAX_DIAGNOSIS_MB allows."""


def check_memory(data: bytes) -> None:
    limit = settings.INSPECTOR_MAX_DIAGNOSIS_BYTES
    # The same characters counted inside strings too (plain counts, about three
    # times faster than taking the strings out) can only give more: a file
    # under the limit so is under it, and only the others are counted exactly.
    # The exact pass was 5-7 % of a scan's CPU (bench/profile_scan.py).
    if memory_estimate(data, _every_mark(data)) <= limit:
        return
    counted = structure(data)
    need = memory_estimate(data, counted)
    if need > limit:
        raise TooBigToDiagnose(
            f"Diagnosing this file would take about {need / 2**20:,.0f} MB of memory (it holds "
            f"{counted.values + counted.lines:,} JSON values in {len(data) / 2**20:,.1f} MB); "
            "the limit is "
            f"{limit / 2**20:,.0f} MB. Split it into smaller files, or ask whoever runs this "
            "server to raise INSPECTOR_MAX_DIAGNOSIS_MB."
        )


def store_upload(
    owner: Any,
    data: bytes,
    file_name: str,
    project: Project | None = None,
    format: str = "auto",
    relative_path: str = "",
) -> tuple[Transcript, bool]:
    """Load, diagnose and store an upload; the same bytes twice in a project give its transcript.

    Returns ``(transcript, created)``; ``created`` is true for exactly one of
    any number of concurrent calls with the same bytes and project (the
    database's unique constraint decides), so whoever counts it counts a file
    new once. The row is inserted whole, with its project and
    ``relative_path``: no one ever sees it half placed. A process killed
    before the commit leaves no row, only bytes ``sweep_orphans`` removes.

    Bytes already stored in another project of the owner are stored again
    for this one (a copy of the compressed bytes and of the diagnosis, not
    diagnosed again): each transcript keeps its own files, so deleting one,
    sweeping orphans or re-indexing one never touches another project's.
    Without a project, any transcript of the owner with these bytes is the
    existing one. Raises ``UnreadableTranscript`` for bytes no shape accepts.
    The bytes are written before the row; if the row cannot be saved they
    are removed again.

    A new transcript is announced (``events.transcripts_stored``) with its
    timeline rows when they were just made here (``landed``).

    The same in three steps, for a caller that stores several files in one
    transaction with rows of its own (a scan's batch, ``scan/tasks.py``):
    ``prepare_upload`` each, outside any transaction; ``land`` each in the
    transaction, then ``landed`` after its commit (or ``abandon`` after a rollback).
    What the caller records in that transaction commits with the rows or not at
    all, and a process killed before the commit leaves no row: its retry stores
    the file as new again.
    """
    prepared = prepare_upload(owner, data, file_name, project, format, relative_path)
    try:
        with transaction.atomic():
            stored_as, created = land(prepared)
    except BaseException:
        abandon(prepared)
        raise
    landed([prepared])
    return stored_as, created


@dataclass(slots=True)
class Prepared:
    """An upload made ready outside any transaction (``prepare_upload``): the bytes looked
    up, diagnosed and their files written; its row not yet inserted (``land``)."""

    owner: Any
    project: Project | None
    transcript: Transcript  # the row to insert, or the project's transcript of these bytes
    existing: bool  # ``transcript`` is already stored: no files were written
    encoded: stored.Encoded | None = None
    rows: Sequence[Row] | None = None
    created: bool = False  # set by ``land``


def prepare_upload(
    owner: Any,
    data: bytes,
    file_name: str,
    project: Project | None = None,
    format: str = "auto",
    relative_path: str = "",
) -> Prepared:
    """What ``store_upload`` does before its transaction: everything but the row.

    Holds no lock of the database (on SQLite, the one writer's), so a scan's workers
    diagnose side by side. Raises ``UnreadableTranscript`` as ``store_upload`` does,
    having removed whatever it wrote.
    """
    if not data:
        raise UnreadableTranscript("The file is empty.")
    sha = hashlib.sha256(data).hexdigest()
    # One query for both answers: this project's transcript of these bytes, and a twin
    # of them in another project whose files can be copied (``_copy_or_diagnose``).
    same_bytes = _same_bytes(owner, sha)
    existing = _pick_existing(same_bytes, project)
    if existing is not None:
        return Prepared(owner, project, existing, existing=True)
    transcript = Transcript(
        public_id=new_public_id(),
        owner=owner,
        project=project,
        relative_path=relative_path[:1000],
        file_name=(file_name or "transcript")[:255],
        size=len(data),
        sha256=sha,
    )
    try:
        twin = next((t for t in same_bytes if t.engine_version == ENGINE_VERSION), None)
        encoded, rows = _copy_or_diagnose(transcript, data, format, twin)
    except BaseException:
        delete_files(transcript.storage_dir)
        raise
    return Prepared(owner, project, transcript, existing=False, encoded=encoded, rows=rows)


def land(prepared: Prepared) -> tuple[Transcript, bool]:
    """Insert the prepared row, in the caller's transaction; ``(transcript, created)`` as
    ``store_upload`` returns them (the row of a call that won the race, not created)."""
    if prepared.existing:
        return prepared.transcript, False
    if _inserted(prepared.transcript):
        prepared.created = True
        return prepared.transcript, True
    # The same bytes, stored in this project by a call that won the race.
    found = _existing(prepared.owner, prepared.project, prepared.transcript.sha256)
    if found is None:
        raise IntegrityError(f"transcript {prepared.transcript.public_id} could not be saved")
    return found, False


def landed(uploads: Sequence[Prepared], follow_now: bool = False) -> None:
    """After the commit of the transaction that ``land``-ed these: the files of a row that
    lost its race go, and the new transcripts are announced, all in one signal, with
    ``follow_now``: the apps above may do their part now, from the rows in memory,
    rather than queue it (a scan's worker does; an upload, whose page waits, does not)."""
    new = []
    for prepared in uploads:
        if prepared.existing:
            continue
        if not prepared.created:
            delete_files(prepared.transcript.storage_dir)
            continue
        transcript = prepared.transcript
        if prepared.encoded is not None:
            path = _diagnosis_path(transcript.public_id, transcript.engine_version)
            _remember(transcript, prepared.encoded.open(_opener(path)))
        new.append((transcript, prepared.rows))
    if new:
        events.transcripts_stored.send(sender=Transcript, stored=new, now=follow_now)


def abandon(prepared: Prepared) -> None:
    """After a rollback of the transaction that ``land``-ed it: its files go (no row)."""
    if not prepared.existing:
        prepared.created = False
        delete_files(prepared.transcript.storage_dir)


def _inserted(transcript: Transcript) -> bool:
    """Insert the row; ``False`` when a unique constraint refused it (the caller's
    transaction goes on)."""
    try:
        with transaction.atomic():
            transcript.save(force_insert=True)
    except IntegrityError:
        return False
    return True


def _same_bytes(owner: Any, sha: str) -> list[Transcript]:
    """Every transcript of the owner with these bytes (one per project at most, and loose
    ones), by id: what ``_pick_existing`` and the twin of ``_copy_or_diagnose`` choose from."""
    # By id, not the model's newest-first order: that order made SQLite walk every
    # transcript of the owner by date (transcript_owner_created_idx) for each file;
    # by id it reads transcript_owner_sha_idx.
    return list(Transcript.objects.filter(owner=owner, sha256=sha).order_by("pk"))


def _pick_existing(same_bytes: list[Transcript], project: Project | None) -> Transcript | None:
    """The transcript these bytes already are in ``project``; without a project, the
    first of them wherever they are, a loose copy first."""
    if project is not None:
        return next((t for t in same_bytes if t.project_id == project.pk), None)
    return min(same_bytes, key=lambda t: (t.project_id is not None, t.pk), default=None)


def _existing(owner: Any, project: Project | None, sha: str) -> Transcript | None:
    return _pick_existing(_same_bytes(owner, sha), project)


def _copy_or_diagnose(
    transcript: Transcript, data: bytes, format: str, twin: Transcript | None
) -> tuple[stored.Encoded | None, Sequence[Row] | None]:
    """Write the new transcript's files: copied from ``twin`` (the same bytes in another
    project, diagnosed by this engine), or made.

    Returns the encoded diagnosis and its timeline rows when they were made
    here (``None, None`` for a copy).
    """
    if twin is not None and format in ("auto", twin.format):
        cache = _diagnosis_path(twin.public_id, twin.engine_version)
        try:
            raw, diagnosis = _read(twin.raw_path), _read(cache)
        except OSError:
            pass  # the twin went meanwhile: diagnose the bytes instead
        else:
            transcript.format = twin.format
            for name in SUMMARY_FIELDS:
                setattr(transcript, name, getattr(twin, name))
            _write(transcript.raw_path, raw)
            _write(_diagnosis_path(transcript.public_id, transcript.engine_version), diagnosis)
            return None, None
    check_memory(data)
    found, encoded = _diagnosed(data, format)
    transcript.format = found.format
    _apply_summary(transcript, found)
    _write(transcript.raw_path, _compress(data))
    _write(_diagnosis_path(transcript.public_id, transcript.engine_version), encoded.data)
    return encoded, found.shown.rows


def _diagnosed(data: bytes, format: str) -> tuple[FileDiagnosis, stored.Encoded]:
    """The file diagnosed (``diagnosis.diagnose_file``) and its cache file's bytes.

    The one place the web pauses the garbage collector for a whole file
    (``inspector.collector``): an upload, a scanned file and a rebuild all
    come through here; a branch or conversation read on demand, through
    ``_on_demand``.
    """
    with collector.paused(), depth_guarded():
        found = _guarded(lambda: diagnose_file(data, format), len(data))
        return found, stored.encode(found.shown, GROUP_LIMIT)


def load_bytes(data: bytes, format: str = "auto") -> Parsed:
    return _guarded(lambda: formats.load(data, format=format), len(data))


def load_every(data: bytes, format: str = "auto") -> list[Parsed]:
    """Every conversation of the file (usually one), with ``load_bytes``' errors."""
    return _guarded(lambda: formats.load_all(data, format=format), len(data))


def _guarded[T](work: Callable[[], T], size: int) -> T:
    """``work()`` (reading or diagnosing a file), its failures as ``UnreadableTranscript``."""
    try:
        return work()
    except formats.FormatError as error:
        if "depth limit exceeded" in str(error):
            raise TooDeep() from error
        message, attempts = str(error), []
        if ". Tried " in message and len(error.attempts) > 1:
            # Auto-detection ends its message with what each shape said; the
            # upload page shows that as a list instead.
            message, attempts = message.split(". Tried ")[0] + ".", error.attempts
        raise UnreadableTranscript(_sentence(message), attempts) from error
    except InvalidTranscript as error:
        raise UnreadableTranscript(_sentence(str(error))) from error
    except RecursionError as error:
        raise TooDeep() from error
    except Exception as error:
        if _too_deep(error):
            raise TooDeep() from error
        # A reader bug must not turn an upload into a 500: say so, log it.
        log.exception("reading or diagnosing failed on %d bytes", size)
        raise UnreadableTranscript(
            f"The reader failed on this file ({type(error).__name__}); this is a bug in "
            "Transcript Inspector and has been logged. Try another file or pick the shape."
        ) from error


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def get_conversation_diagnosis(transcript: Transcript, key: int) -> StoredDiagnosis | None:
    """One conversation of a file of several, read on demand; ``None`` if it has no such one."""
    listed = transcript.meta.get("conversation_list") or []
    if not any(item["key"] == key for item in listed):
        return None
    return _on_demand(
        (transcript.public_id, ENGINE_VERSION, f"conversation:{key}"),
        lambda: diagnose_part(read_raw(transcript), transcript.format, conversation=key),
    )


def _on_demand(key: tuple[str, ...], work: Callable[[], Diagnosis]) -> StoredDiagnosis:
    """A diagnosis not stored with the transcript (another branch or conversation), kept in
    memory like the stored ones once made."""
    with _memory_lock:
        cached = _memory.get(key)
        if cached is not None:
            _memory.move_to_end(key)
            return cached
    with collector.paused(), depth_guarded():
        # Held whole in memory; its row index is built once, on the first page.
        diagnosis = stored.in_memory(_guarded(work, 0))
    with _memory_lock:
        _memory[key] = diagnosis
        while len(_memory) > MEMORY_CACHE_SIZE:
            _memory.popitem(last=False)
    return diagnosis


def get_diagnosis(transcript: Transcript) -> StoredDiagnosis:
    """The transcript's whole diagnosis, for reports: every list in it plain and whole.

    Its rows are read from the cache as they are iterated (``StoredRows``).
    """
    return stored.whole(get_page_diagnosis(transcript))


def get_page_diagnosis(transcript: Transcript) -> StoredDiagnosis:
    """The transcript's diagnosis as a timeline page reads it: from memory, storage, or rebuilt.

    Rows are read from storage by position; each long list (findings,
    provider issues, unreadable lines, interrupted calls) holds its length and
    first items and reads the rest when asked for. A cache made by another
    engine version is rebuilt from the raw bytes, and the row's summary
    (counts, verdicts, ...) is brought up to date with it.
    """
    key = (transcript.public_id, ENGINE_VERSION)
    with _memory_lock:
        cached = _memory.get(key)
        if cached is not None:
            _memory.move_to_end(key)
            return cached
    if transcript.engine_version == ENGINE_VERSION:
        path = _diagnosis_path(transcript.public_id, ENGINE_VERSION)
        try:  # no exists() first: on an object storage that is one more round trip a page
            diagnosis = stored.read(_opener(path))
        except FileNotFoundError:
            pass
        except stored.Unreadable as error:
            log.warning("rebuilding the cached diagnosis %s: %s", path, error)
        else:
            _remember(transcript, diagnosis)
            return diagnosis
    return rebuild_diagnosis(transcript)


def get_branch_diagnosis(transcript: Transcript, leaf: str) -> StoredDiagnosis | None:
    """Another branch of a forked Claude Code session, read on demand.

    Only the active branch (the one the tool resumes) is stored; another is
    parsed and diagnosed when asked for and kept in memory like the others.
    ``None`` when the transcript has no branch ending at ``leaf``.
    """
    key = (transcript.public_id, ENGINE_VERSION, leaf)
    try:
        return _on_demand(
            key, lambda: diagnose_part(read_raw(transcript), transcript.format, leaf=leaf)
        )
    except UnreadableTranscript:
        return None


def rebuild_diagnosis(transcript: Transcript) -> StoredDiagnosis:
    """Diagnose the raw bytes again, store the cache, and remove caches of other versions."""
    found, encoded = _diagnosed(read_raw(transcript), transcript.format)
    _apply_summary(transcript, found)
    path = _diagnosis_path(transcript.public_id, transcript.engine_version)
    default_storage.delete(path)
    _write(path, encoded.data)
    directory, _, current = path.rpartition("/")
    for name in default_storage.listdir(directory)[1]:
        # Another engine version's cache, or the single document of the old layout.
        if name.startswith("diagnosis-") and name != current:
            default_storage.delete(f"{directory}/{name}")
    Transcript.objects.filter(pk=transcript.pk).update(
        **{name: getattr(transcript, name) for name in SUMMARY_FIELDS}
    )
    diagnosis = encoded.open(_opener(path))
    _remember(transcript, diagnosis)
    return diagnosis


def read_raw(transcript: Transcript) -> bytes:
    """The bytes exactly as uploaded."""
    # compress() records the content size in the frame, so one call suffices.
    return zstandard.ZstdDecompressor().decompress(_read(transcript.raw_path))


def load_transcript(transcript: Transcript) -> Parsed:
    return load_bytes(read_raw(transcript), transcript.format)


def load_every_of(transcript: Transcript) -> list[Parsed]:
    """Every conversation of a stored transcript (usually one)."""
    return load_every(read_raw(transcript), transcript.format)


def project_for(owner: Any, name: str) -> Project | None:
    """The owner's project of that name, made on first use; ``None`` for a blank name.

    Scans and uploads name their project; a watched folder's project is never
    one of these, even when it bears the same name (it is known by its path:
    ``inspector.watch.ingest.register``). A new project whose slug a watched
    folder holds gets the next free one.
    """
    name = name.strip()[:200]
    if not name:
        return None
    slug = slugify(name)[:200] or "project"
    return project_where(
        owner, name, [slug], Q(watched="") & (Q(slug=slug) | Q(name=name)), watched=""
    )


def project_where(owner: Any, name: str, slugs: list[str], same: Q, **fields: Any) -> Project:
    """The owner's project that ``same`` picks out, else a new one under the first free slug.

    ``slugs`` are tried in order, then the last one numbered (``alpha-2``,
    ...). Safe under concurrency: of two callers making the same project at
    once, the unique slug lets one create it and the other finds it.
    """
    mine = Project.objects.filter(owner=owner)
    found = mine.filter(same).order_by("pk").first()
    if found is not None:
        return found
    base = slugs[-1][:190]
    for slug in [*slugs, *(f"{base}-{n}" for n in range(2, 1000))]:
        holder = mine.filter(slug=slug).first()
        if holder is None:
            try:
                with transaction.atomic():
                    return Project.objects.create(owner=owner, name=name, slug=slug, **fields)
            except IntegrityError:
                holder = mine.filter(slug=slug).first()
        if holder is not None and mine.filter(same, pk=holder.pk).exists():
            return holder  # made meanwhile by another caller
        found = mine.filter(same).order_by("pk").first()
        if found is not None:
            return found  # made meanwhile, under another slug
    raise IntegrityError(f"no free slug for the project {name!r}")


def retire_previous(
    transcript: Transcript, relative_path: str, keep_for: Callable[[Transcript], str]
) -> bool:
    """The older bytes of one file make way for ``transcript``; whether there were any.

    Only the transcripts of ``transcript``'s own project at ``relative_path``
    (the same file, as an earlier scan or the watcher stored it) are looked
    at; another project's are never touched. An older one goes only when
    nothing still shows it:

    - another file of the project holds those bytes now (``keep_for`` names
      its path): it becomes that file's;
    - a live share link shows it: it is kept, out of the project (whose file
      it no longer is), so the link still opens what was shared and the
      owner still finds it among their transcripts;
    - otherwise it is deleted: the file's current bytes replace it.

    Runs in the caller's transaction.
    """
    older = (
        Transcript.objects.filter(
            owner=transcript.owner_id, project=transcript.project_id, relative_path=relative_path
        )
        .exclude(pk=transcript.pk)
        # Newest first, as the model orders them, sorted here: ordered in SQL, SQLite
        # walked every transcript of the owner by date (transcript_owner_created_idx)
        # for each file a scan stores, rather than the project's few at this path
        # (transcript_project_file_idx, whose first columns are these).
        .order_by()
    )
    replaced = False
    for old in sorted(older, key=lambda row: (row.created, row.pk), reverse=True):
        replaced = True
        other = keep_for(old)
        if other:
            Transcript.objects.filter(pk=old.pk).update(relative_path=other)
        elif _shared(old):
            _keep_loose(old)
        else:
            old.delete()
    return replaced


def _shared(transcript: Transcript) -> bool:
    """Whether a share link that still opens shows the transcript (``share.ShareLink.live``)."""
    now = timezone.now()
    links = transcript.share_links.filter(revoked__isnull=True)
    return links.filter(Q(expires__isnull=True) | Q(expires__gt=now)).exists()


def _keep_loose(transcript: Transcript) -> None:
    """Keep a shared transcript out of its project (a loose twin of its bytes takes its links)."""
    try:
        with transaction.atomic():
            Transcript.objects.filter(pk=transcript.pk).update(project=None)
    except IntegrityError:
        # The owner has these very bytes loose already: the links show the same there.
        twin = Transcript.objects.get(
            owner=transcript.owner_id, project=None, sha256=transcript.sha256
        )
        transcript.share_links.update(transcript=twin)
        transcript.delete()


def delete_files(directory: str) -> None:
    """Remove every stored file of one transcript (raw bytes and diagnosis caches)."""
    try:
        _, files = default_storage.listdir(directory)
    except FileNotFoundError:
        return
    for name in files:
        default_storage.delete(f"{directory}/{name}")
    _remove_empty_folders(directory)
    with _memory_lock:
        for key in [key for key in _memory if storage_dir(key[0]) == directory]:
            del _memory[key]


def _remove_empty_folders(directory: str) -> None:
    """Remove ``directory`` and its fan-out folder once empty.

    Through the storage only: ``FileSystemStorage.delete`` of an empty folder
    removes it; an object storage has no folders (a prefix goes with its last
    object), and deleting a key that holds no object does nothing.
    """
    for empty in (directory, directory.rpartition("/")[0]):
        if not empty:
            return
        try:
            default_storage.delete(empty)
        except OSError:
            return  # not empty (another transcript shares the fan-out)


def sweep_orphans(grace_seconds: int) -> list[str]:
    """Delete stored transcript folders that no row owns and that are older than the grace.

    A process killed outright (SIGKILL, out of memory) between writing a
    transcript's bytes and committing its row leaves such a folder; nothing
    else can. The grace period spares uploads whose row is still being
    written. Returns the folders removed.
    """
    removed: list[str] = []
    try:
        fanouts, _ = default_storage.listdir("transcripts")
    except FileNotFoundError:
        return removed
    cutoff = timezone.now() - timedelta(seconds=grace_seconds)
    for fanout in fanouts:
        folders, _ = default_storage.listdir(f"transcripts/{fanout}")
        owned = set(
            Transcript.objects.filter(public_id__in=folders).values_list("public_id", flat=True)
        )
        for public_id in folders:
            directory = f"transcripts/{fanout}/{public_id}"
            if public_id in owned:
                continue
            _, files = default_storage.listdir(directory)
            times = [default_storage.get_modified_time(f"{directory}/{name}") for name in files]
            if any(when > cutoff for when in times):
                continue
            delete_files(directory)
            removed.append(directory)
    if removed:
        log.warning("removed %d stored folder(s) left without a transcript row", len(removed))
    return removed


# --- summaries kept on the row ---------------------------------------------

SUMMARY_FIELDS = (
    "message_count",
    "counts",
    "verdicts",
    "needs_repair",
    "problems",
    "meta",
    "engine_version",
    *META_COLUMNS,  # kept from meta: copied and updated with it
    *LIST_COLUMNS,
)


def _apply_summary(transcript: Transcript, found: FileDiagnosis) -> None:
    """The row's summary: of its one conversation, or the totals of all of them."""
    diagnosis, conversations = found.shown, found.conversations
    transcript.message_count = diagnosis.message_count
    transcript.counts = dict(diagnosis.counts)
    transcript.verdicts = verdicts_of(diagnosis)
    transcript.needs_repair = bool(diagnosis.needs_repair)
    transcript.problems = len(diagnosis.problems)
    transcript.meta = diagnosis.meta  # already plain data
    transcript.engine_version = diagnosis.engine_version
    if conversations:
        counts: dict[str, int] = {}
        for item in conversations:
            for rule, n in item["counts"].items():
                counts[rule] = counts.get(rule, 0) + n
        transcript.counts = counts
        transcript.message_count = sum(item["messages"] for item in conversations)
        transcript.needs_repair = any(item["needs_repair"] for item in conversations)
        transcript.meta = {**diagnosis.meta, "conversation_list": conversations}
    transcript.fill_columns()


def verdicts_of(diagnosis: Diagnosis | StoredDiagnosis) -> dict[str, dict[str, Any]]:
    """What a list shows of each provider's verdict: accepted, rejected or cannot tell."""
    verdicts = {}
    for name, checks in diagnosis.providers.items():
        before, after = checks["before"], checks["after"]
        verdicts[name] = {
            "before_ok": not before,
            "after_ok": not after,
            "before_count": len(before),
            "after_count": len(after),
            "before": [issue["text"] for issue in before[:VERDICT_TEXTS]],
            "after": [issue["text"] for issue in after[:VERDICT_TEXTS]],
            # "Cannot tell from the body alone" (a Responses body continuing a stored
            # response): not "accepted", and the reason with it.
            "before_undecided": list(checks.get("undecided_before", ()))[:1],
            "after_undecided": list(checks.get("undecided_after", ()))[:1],
            "notes": list(
                dict.fromkeys([*checks.get("notes_before", ()), *checks.get("notes_after", ())])
            )[:VERDICT_TEXTS],
        }
    return verdicts


# --- storage ---------------------------------------------------------------


def _diagnosis_path(public_id: str, engine_version: str) -> str:
    version = re.sub(r"[^A-Za-z0-9._-]", "_", engine_version) or "none"
    return f"{storage_dir(public_id)}/diagnosis-{version}.layout{stored.LAYOUT}.bin"


def _opener(path: str) -> Callable[[], IO[bytes]]:
    return lambda: default_storage.open(path, "rb")


def _compress(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(data)


def _write(path: str, data: bytes) -> None:
    saved = default_storage.save(path, ContentFile(data))
    if saved != path:
        # Another writer got there first with the same content; keep theirs.
        default_storage.delete(saved)


def _read(path: str) -> bytes:
    with default_storage.open(path, "rb") as handle:
        return handle.read()


_memory: OrderedDict[tuple[str, ...], StoredDiagnosis] = OrderedDict()
_memory_lock = threading.Lock()


def _remember(transcript: Transcript, diagnosis: StoredDiagnosis) -> None:
    with _memory_lock:
        _memory[(transcript.public_id, diagnosis.engine_version)] = diagnosis
        _memory.move_to_end((transcript.public_id, diagnosis.engine_version))
        while len(_memory) > MEMORY_CACHE_SIZE:
            _memory.popitem(last=False)
