"""Storing uploads and caching their diagnoses.

Raw bytes are kept exactly as uploaded, zstd-compressed, in Django's default
storage under ``transcripts/<xx>/<public id>/``; the diagnosis beside them is
a cache (compressed orjson of ``Diagnosis.to_dict()``) named after the engine
version that made it, rebuilt from the raw bytes when that version changes.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import OrderedDict
from datetime import timedelta
from typing import Any

import orjson
import zstandard
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from inspector import formats
from inspector.diagnosis import ENGINE_VERSION, Diagnosis, diagnose
from inspector.engine.errors import InvalidTranscript
from inspector.formats import claude_code
from inspector.formats.base import Parsed
from inspector.web.models import Project, Transcript, new_public_id, storage_dir

log = logging.getLogger(__name__)

# How many of a provider's error texts the row keeps for lists; the timeline reads them all.
VERDICT_TEXTS = 3
# Diagnoses kept decoded in this process, so paging a long timeline does not
# decode the whole cache on every request.
MEMORY_CACHE_SIZE = 2


class UnreadableTranscript(ValueError):
    """The bytes are no transcript the loader can read; ``str()`` says why in plain words.

    ``attempts`` lists, for auto-detection, each shape tried and why it refused.
    """

    def __init__(self, message: str, attempts: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts or []


def store_upload(
    owner: Any,
    data: bytes,
    file_name: str,
    project: Project | None = None,
    format: str = "auto",
) -> tuple[Transcript, bool]:
    """Load, diagnose and store an upload; the same bytes twice give the existing transcript.

    Returns ``(transcript, created)``. Raises ``UnreadableTranscript`` for bytes
    no shape accepts. The bytes are written before the row; if the row cannot
    be saved they are removed again.
    """
    if not data:
        raise UnreadableTranscript("The file is empty.")
    sha = hashlib.sha256(data).hexdigest()
    existing = Transcript.objects.filter(owner=owner, sha256=sha).first()
    if existing is not None:
        return existing, False
    parsed = load_bytes(data, format)
    diagnosis = _diagnose(parsed)
    transcript = Transcript(
        public_id=new_public_id(),
        owner=owner,
        project=project,
        file_name=(file_name or "transcript")[:255],
        format=parsed.format,
        size=len(data),
        sha256=sha,
    )
    _apply_summary(transcript, diagnosis)
    directory = transcript.storage_dir
    try:
        _write(transcript.raw_path, data)
        _write(
            _diagnosis_path(transcript.public_id, transcript.engine_version),
            diagnosis_blob(diagnosis),
        )
        with transaction.atomic():
            transcript.save(force_insert=True)
    except IntegrityError:
        delete_files(directory)
        # The same bytes, stored by a request that won the race.
        existing = Transcript.objects.filter(owner=owner, sha256=sha).first()
        if existing is None:
            raise
        return existing, False
    except BaseException:
        delete_files(directory)
        raise
    _remember(transcript, diagnosis)
    return transcript, True


def load_bytes(data: bytes, format: str = "auto") -> Parsed:
    try:
        return formats.load(data, format=format)
    except formats.FormatError as error:
        message, attempts = str(error), []
        if ". Tried " in message and len(error.attempts) > 1:
            # Auto-detection ends its message with what each shape said; the
            # upload page shows that as a list instead.
            message, attempts = message.split(". Tried ")[0] + ".", error.attempts
        raise UnreadableTranscript(_sentence(message), attempts) from error
    except InvalidTranscript as error:
        raise UnreadableTranscript(_sentence(str(error))) from error
    except RecursionError as error:
        raise UnreadableTranscript("The file nests too deeply to be a transcript.") from error
    except Exception as error:
        # A reader bug must not turn an upload into a 500: say so, log it.
        log.exception("the loader failed on %d bytes", len(data))
        raise UnreadableTranscript(
            f"The reader failed on this file ({type(error).__name__}); this is a bug in "
            "Transcript Inspector and has been logged. Try another file or pick the shape."
        ) from error


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _diagnose(parsed: Parsed) -> Diagnosis:
    try:
        return diagnose(parsed)
    except InvalidTranscript as error:
        raise UnreadableTranscript(str(error)) from error
    except RecursionError as error:
        raise UnreadableTranscript("The transcript nests too deeply to be repaired.") from error


def get_diagnosis(transcript: Transcript) -> Diagnosis:
    """The transcript's diagnosis: from memory, from the storage cache, or rebuilt.

    A cache made by another engine version is rebuilt from the raw bytes, and
    the row's summary (counts, verdicts, ...) is brought up to date with it.
    """
    key = (transcript.public_id, ENGINE_VERSION)
    with _memory_lock:
        cached = _memory.get(key)
        if cached is not None:
            _memory.move_to_end(key)
            return cached
    if transcript.engine_version == ENGINE_VERSION:
        path = _diagnosis_path(transcript.public_id, ENGINE_VERSION)
        if default_storage.exists(path):
            diagnosis = Diagnosis.from_dict(orjson.loads(_read(path)))
            _remember(transcript, diagnosis)
            return diagnosis
    return rebuild_diagnosis(transcript)


def get_branch_diagnosis(transcript: Transcript, leaf: str) -> Diagnosis | None:
    """Another branch of a forked Claude Code session, read on demand.

    Only the active branch (the one the tool resumes) is stored; another is
    parsed and diagnosed when asked for and kept in memory like the others.
    ``None`` when the transcript has no branch ending at ``leaf``.
    """
    if transcript.format != claude_code.NAME:
        return None
    key = (transcript.public_id, ENGINE_VERSION, leaf)
    with _memory_lock:
        cached = _memory.get(key)
        if cached is not None:
            _memory.move_to_end(key)
            return cached
    try:
        parsed = claude_code.parse(read_raw(transcript), leaf=leaf)
    except formats.FormatError:
        return None
    diagnosis = _diagnose(parsed)
    with _memory_lock:
        _memory[key] = diagnosis
        while len(_memory) > MEMORY_CACHE_SIZE:
            _memory.popitem(last=False)
    return diagnosis


def rebuild_diagnosis(transcript: Transcript) -> Diagnosis:
    old_version = transcript.engine_version
    diagnosis = _diagnose(load_bytes(read_raw(transcript), transcript.format))
    _apply_summary(transcript, diagnosis)
    path = _diagnosis_path(transcript.public_id, transcript.engine_version)
    default_storage.delete(path)
    _write(path, diagnosis_blob(diagnosis))
    if old_version and old_version != transcript.engine_version:
        default_storage.delete(_diagnosis_path(transcript.public_id, old_version))
    Transcript.objects.filter(pk=transcript.pk).update(
        **{name: getattr(transcript, name) for name in SUMMARY_FIELDS}
    )
    _remember(transcript, diagnosis)
    return diagnosis


def read_raw(transcript: Transcript) -> bytes:
    """The bytes exactly as uploaded."""
    return _read(transcript.raw_path)


def load_transcript(transcript: Transcript) -> Parsed:
    return load_bytes(read_raw(transcript), transcript.format)


def project_for(owner: Any, name: str) -> Project | None:
    """The owner's project of that name, made on first use; ``None`` for a blank name."""
    name = name.strip()
    if not name:
        return None
    project, _ = Project.objects.get_or_create(
        owner=owner, slug=slugify(name)[:200] or "project", defaults={"name": name[:200]}
    )
    return project


def delete_files(directory: str) -> None:
    """Remove every stored file of one transcript (raw bytes and diagnosis caches)."""
    try:
        _, files = default_storage.listdir(directory)
    except FileNotFoundError:
        return
    for name in files:
        default_storage.delete(f"{directory}/{name}")
    with _memory_lock:
        for key in [key for key in _memory if storage_dir(key[0]) == directory]:
            del _memory[key]


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


def diagnosis_blob(diagnosis: Diagnosis) -> bytes:
    # orjson writes the dataclass itself: the same bytes as ``to_dict()`` gives,
    # without the deep copy that costs seconds on a long session.
    return orjson.dumps(diagnosis)


# --- summaries kept on the row ---------------------------------------------

SUMMARY_FIELDS = (
    "message_count",
    "counts",
    "verdicts",
    "needs_repair",
    "problems",
    "meta",
    "engine_version",
)


def _apply_summary(transcript: Transcript, diagnosis: Diagnosis) -> None:
    transcript.message_count = diagnosis.message_count
    transcript.counts = dict(diagnosis.counts)
    transcript.verdicts = verdicts_of(diagnosis)
    transcript.needs_repair = bool(diagnosis.needs_repair)
    transcript.problems = len(diagnosis.problems)
    transcript.meta = diagnosis.meta  # already plain data
    transcript.engine_version = diagnosis.engine_version


def verdicts_of(diagnosis: Diagnosis) -> dict[str, dict[str, Any]]:
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
        }
    return verdicts


# --- storage ---------------------------------------------------------------


def _diagnosis_path(public_id: str, engine_version: str) -> str:
    version = re.sub(r"[^A-Za-z0-9._-]", "_", engine_version) or "none"
    return f"{storage_dir(public_id)}/diagnosis-{version}.zst"


def _write(path: str, data: bytes) -> None:
    compressed = zstandard.ZstdCompressor(level=3).compress(data)
    saved = default_storage.save(path, ContentFile(compressed))
    if saved != path:
        # Another writer got there first with the same content; keep theirs.
        default_storage.delete(saved)


def _read(path: str) -> bytes:
    with default_storage.open(path, "rb") as handle:
        compressed = handle.read()
    # compress() records the content size in the frame, so one call suffices.
    return zstandard.ZstdDecompressor().decompress(compressed)


_memory: OrderedDict[tuple[str, ...], Diagnosis] = OrderedDict()
_memory_lock = threading.Lock()


def _remember(transcript: Transcript, diagnosis: Diagnosis) -> None:
    with _memory_lock:
        _memory[(transcript.public_id, diagnosis.engine_version)] = diagnosis
        _memory.move_to_end((transcript.public_id, diagnosis.engine_version))
        while len(_memory) > MEMORY_CACHE_SIZE:
            _memory.popitem(last=False)
