"""Repair one session file in place, so that the agent resumes it; and undo that.

``fix`` never leaves a half-written session: the repair is written to a
temporary file beside the original, flushed to disk, given the original's
mode, and renamed over it in one step (``os.replace``), so a process killed
at any moment leaves the old file or the new one. Before the rename:

- the original is copied to a backup (beside it, ``NAME.ti-backup-STAMP``,
  or in ``backup_dir``), with a small JSON note saying what was written;
- the repair is read back in memory and diagnosed: it must be clean, and
  reading it again must give exactly the repaired messages, or nothing is
  written;
- the file is stat'ed again: if it changed since it was read (the agent is
  still writing), nothing is written.

A file written to in the last ``quiet_seconds`` is refused outright: the
agent may still be running. After the rename the file is read back and
diagnosed once more; if it is not what was written and clean, the original
is put back. ``undo`` restores the newest backup, byte for byte, if the file
is still the one ``fix`` wrote.

Where it may write is stated once, by ``confinement``: the folder that holds
the session file (resolved as found on disk) and the backup folder, or, for
OpenCode, its storage folder (or database) and its backup folder. Every
write, rename and removal goes through that ``confine.Confined``, which
refuses a link (the session file itself or any folder below the root), a
name with a separator, ``..`` or NUL, and anything outside those folders:
the run is ``refused``, nothing written, the reason naming the file.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from difflib import SequenceMatcher
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

import orjson

from inspector.diagnosis import repair_parsed, repaired_bytes
from inspector.engine.canonical import call_id_text
from inspector.local import opencode, opencode_db
from inspector.local.agents import Agent
from inspector.local.confine import Confined, Refused, absolute
from inspector.local.sessions import Checked, check, first_line

QUIET_SECONDS = 5.0
BACKUP_MARK = ".ti-backup-"
NOTE_SUFFIX = ".note"
_TEMP_MARK = ".ti-fix-"


@dataclass(slots=True)
class Outcome:
    """What ``fix`` or ``undo`` did to one file.

    ``status``: ``clean`` (nothing to repair), ``fixed``, ``would-fix``
    (dry run), ``refused`` (nothing changed, ``reason`` says why),
    ``failed`` (nothing changed, or the original was put back), ``restored``
    (undo).
    """

    path: Path
    status: str
    reason: str = ""
    checked: Checked | None = None
    backup: Path | None = None
    # Original line numbers (1-based) the repair rewrote or removed, and lines it added.
    touched: list[int] = field(default_factory=list)
    added: int = 0
    # A session of several files (OpenCode's storage): the files written, added or removed.
    files: list[Path] = field(default_factory=list)
    # A session in OpenCode's database: the rows written, added or removed ("part prt_x rewritten").
    records: list[str] = field(default_factory=list)

    @property
    def changed_file(self) -> bool:
        return self.status in ("fixed", "restored")


class _Stop(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Stamp:
    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> _Stamp:
        stat = path.stat()
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ino)


def fix(
    path: Path,
    agent: Agent | None = None,
    *,
    dry_run: bool = False,
    backup_dir: Path | None = None,
    quiet_seconds: float = QUIET_SECONDS,
    clock: Callable[[], float] = time.time,
) -> Outcome:
    """Repair ``path`` in place (see the module docstring); never raises for a bad file."""
    path = absolute(path)  # not resolved: a link in the session's own place is refused
    if opencode.is_session_file(path) or opencode.is_db_session(path):  # many files, or a db
        return opencode.fix(
            path,
            agent,
            dry_run=dry_run,
            backup_dir=backup_dir,
            quiet_seconds=quiet_seconds,
            clock=clock,
        )
    try:
        confined, path = _single_file(path, backup_dir)
        return _fix(path, confined, agent, dry_run, quiet_seconds, clock)
    except _Stop as stop:
        return Outcome(path, stop.status, stop.reason)
    except Refused as refused:
        return Outcome(path, "refused", f"{refused}; nothing was changed")
    except OSError as error:  # a backup or temporary file that could not be made
        reason = f"could not write {error.filename or path}: {error.strerror or error}"
        return Outcome(path, "failed", f"{reason}; {path.name} is as it was")


def confinement(path: Path, backup_dir: Path | None = None) -> Confined:
    """The folders ``fix`` and ``undo`` of the session ``path`` may write in, and nothing else.

    One session file: the folder holding it and the backup folder (the same
    folder unless ``backup_dir``). OpenCode's storage: the storage folder
    (its ``session/``, ``message/``, ``part/``) and the backup folder beside
    it; OpenCode's database: the folder holding the database, and the backup
    folder.
    """
    path = absolute(path)
    if opencode.is_session_file(path):
        root = opencode.storage_root(path).resolve()
        return Confined.to(root, opencode.backup_base(root, backup_dir))
    if opencode.is_db_session(path):
        data = opencode_db.data_dir(path).resolve()
        return Confined.to(data, opencode_db.backup_base(path, backup_dir))
    store = path.parent.resolve()
    return Confined.to(store, backup_dir or store)


def _single_file(path: Path, backup_dir: Path | None) -> tuple[Confined, Path]:
    """The confinement of one session file, and its path inside it (it must not be a link)."""
    confined = confinement(path, backup_dir)
    path = confined.roots[0] / path.name
    return confined, confined.check(path)


def _fix(
    path: Path,
    confined: Confined,
    agent: Agent | None,
    dry_run: bool,
    quiet_seconds: float,
    clock: Callable[[], float],
) -> Outcome:
    _sweep_temporaries(path, confined)
    try:
        before = _Stamp.of(path)
        data = confined.read(path)
    except OSError as error:
        raise _Stop("refused", f"cannot read {path}: {error.strerror or error}") from None
    checked = check(path, agent, data)
    if checked.error or checked.parsed is None or checked.diagnosis is None:
        raise _Stop("refused", f"cannot read {path.name}: {checked.error}; nothing was changed")
    if not checked.diagnosis.needs_repair:
        return Outcome(path, "clean", "nothing to repair", checked)
    age = clock() - before.mtime_ns / 1e9
    if age < quiet_seconds and not dry_run:
        raise _Stop(
            "refused",
            f"{path.name} was written {max(age, 0):.1f} s ago: the agent may still be running. "
            "Close it (or wait) and run fix again; nothing was changed.",
        )

    repaired = repaired_bytes(checked.parsed)
    problem = _verify(checked, repaired)
    if problem:
        raise _Stop("failed", f"the repair did not verify ({problem}); nothing was changed")
    touched, added = _line_changes(data, repaired)
    outcome = Outcome(path, "would-fix", "", checked, touched=touched, added=added)
    if dry_run:
        return outcome

    backup = _backup_path(path, clock, confined)
    mode = path.lstat().st_mode
    temporary = confined.temporary(path.parent, f".{path.name}{_TEMP_MARK}", repaired, mode)
    try:
        confined.create(backup, data, mode)
        note = {
            "original": str(path),
            "original_sha256": _sha256(data),
            "written_sha256": _sha256(repaired),
            "written_at": datetime.fromtimestamp(clock(), UTC).isoformat(),
        }
        confined.create(_note_path(backup), orjson.dumps(note, option=orjson.OPT_INDENT_2), None)
        if _Stamp.of(path) != before or confined.read(path) != data:
            _discard(confined, backup, _note_path(backup))
            raise _Stop(
                "refused",
                f"{path.name} changed while it was being fixed (the agent may be running); "
                "nothing was changed",
            )
        confined.replace(temporary, path)
    finally:
        _discard(confined, temporary)

    # Read back what is on disk now: it must be what was written, and clean.
    try:
        on_disk: bytes | None = confined.read(path)
    except OSError:
        on_disk = None
    if on_disk != repaired or on_disk is None:
        return Outcome(
            path,
            "failed",
            f"{path.name} changed right after the fix (the agent may be running); "
            f"the original is kept at {backup}",
            checked,
            backup,
        )
    again = check(path, checked.agent, on_disk)
    if again.error or again.needs_repair:
        _restore(path, data, confined)
        raise _Stop("failed", "the repaired file did not read back clean; the original is back")
    outcome.status = "fixed"
    outcome.backup = backup
    return outcome


def _verify(checked: Checked, repaired: bytes) -> str:
    """Why ``repaired`` is not a faithful, clean repair of ``checked``, or ``""``."""
    assert checked.parsed is not None
    again = check(checked.path, checked.agent, repaired)
    if again.error or again.parsed is None:
        return f"it does not read back: {again.error}"
    if again.needs_repair:
        rules = ", ".join(sorted(again.diagnosis.counts)) if again.diagnosis else "?"
        return f"it still needs repair ({rules})"
    expected = [_essence(m) for m in repair_parsed(checked.parsed).messages]
    if [_essence(m) for m in again.parsed.messages] != expected:
        return "reading it back does not give the repaired messages"
    return ""


def _essence(message: dict[str, Any]) -> tuple[Any, ...]:
    """What a message says, as any shape can write it: role, content, calls and the id answered.

    The marks the engine adds (``healed``, ``outcome``, notes) have no place in
    most files, so they are left out; what was said, and by whom, is not.
    """
    metadata = message.get("metadata") or {}
    calls = tuple(
        (call_id_text(call), call.get("name"), _json(call.get("arguments")))
        for call in metadata.get("tool_calls") or ()
    )
    content = message.get("content")
    if isinstance(content, str):  # a string is one text part, however a shape writes it
        content = [{"type": "text", "text": content}] if content else []
    return (message.get("role"), _json(content), call_id_text(metadata), calls)


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _line_changes(old: bytes, new: bytes) -> tuple[list[int], int]:
    """Old line numbers not kept byte for byte in ``new``, and how many new lines were added."""
    a, b = old.splitlines(), new.splitlines()
    # Compare hashes: equal lines compare in one step however long they are.
    matcher = SequenceMatcher(None, [hash(x) for x in a], [hash(x) for x in b], autojunk=False)
    touched: list[int] = []
    added = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            touched.extend(range(i1 + 1, i2 + 1))
        if tag in ("replace", "insert"):
            added += max(0, (j2 - j1) - (i2 - i1))
    return touched, added


def undo(path: Path, *, backup_dir: Path | None = None, force: bool = False) -> Outcome:
    """Put back the newest backup ``fix`` made of ``path``, if the file is still fix's output."""
    path = absolute(path)
    if opencode.is_session_file(path):
        return opencode.undo(path, backup_dir=backup_dir, force=force)
    if opencode.is_db_session(path):
        return opencode_db.undo(path, backup_dir=backup_dir, force=force)
    try:
        confined, path = _single_file(path, backup_dir)
        return _undo(path, confined, backup_dir, force)
    except Refused as refused:
        return Outcome(path, "refused", f"{refused}; nothing was changed")


def _undo(path: Path, confined: Confined, backup_dir: Path | None, force: bool) -> Outcome:
    backups = backups_of(path, backup_dir)
    if not backups:
        return Outcome(path, "refused", f"no backup of {path.name} to restore")
    backup = backups[-1]
    try:
        note = orjson.loads(confined.read(_note_path(backup)))
        current = confined.read(path) if path.exists() else None
    except (OSError, orjson.JSONDecodeError) as error:
        return Outcome(path, "refused", f"cannot read the backup's note: {error}")
    if not isinstance(note, dict):
        return Outcome(path, "refused", f"{_note_path(backup).name} is not the note fix wrote")
    if current is not None and _sha256(current) != note.get("written_sha256") and not force:
        return Outcome(
            path,
            "refused",
            f"{path.name} changed since fix wrote it (the agent wrote more); restoring "
            f"{backup.name} would lose that. Use --force to restore anyway.",
            backup=backup,
        )
    original = confined.read(backup)
    if _sha256(original) != note.get("original_sha256"):
        return Outcome(path, "refused", f"{backup.name} is not the copy fix made", backup=backup)
    _restore(path, original, confined, backup.lstat().st_mode)
    _discard(confined, backup, _note_path(backup))
    return Outcome(path, "restored", f"restored from {backup.name}", backup=backup)


def backups_of(path: Path, backup_dir: Path | None = None) -> list[Path]:
    """The backups ``fix`` made of ``path``, oldest first."""
    path = absolute(path)
    if opencode.is_session_file(path):
        return opencode.backups(path, backup_dir)
    if opencode.is_db_session(path):
        return opencode_db.backups(path, backup_dir)
    folder = (absolute(backup_dir) if backup_dir else path.parent).resolve()
    if not folder.is_dir():
        return []
    found = [
        p
        for p in folder.glob(f"{glob_escape(path.name)}{BACKUP_MARK}*")
        if not p.name.endswith(NOTE_SUFFIX) and _note_path(p).is_file()
    ]
    return sorted(found, key=lambda p: p.name)


def _backup_path(path: Path, clock: Callable[[], float], confined: Confined) -> Path:
    folder = confined.roots[-1]  # the backup folder (``confinement``): ``backup_dir``, or beside
    confined.mkdir(folder)
    stamp = datetime.fromtimestamp(clock(), UTC).strftime("%Y%m%dT%H%M%S%fZ")
    candidate = folder / f"{path.name}{BACKUP_MARK}{stamp}"
    n = 1
    while candidate.exists() or candidate.is_symlink():
        candidate = folder / f"{path.name}{BACKUP_MARK}{stamp}-{n}"
        n += 1
    return confined.check(candidate)


def _note_path(backup: Path) -> Path:
    return backup.with_name(backup.name + NOTE_SUFFIX)


def _restore(path: Path, data: bytes, confined: Confined, mode: int | None = None) -> None:
    """Put ``data`` at ``path`` the same atomic way ``fix`` writes."""
    current_mode = mode if mode is not None else path.lstat().st_mode
    temporary = confined.temporary(path.parent, f".{path.name}{_TEMP_MARK}", data, current_mode)
    try:
        confined.replace(temporary, path)
    finally:
        _discard(confined, temporary)


def _discard(confined: Confined, *paths: Path) -> None:
    for path in paths:
        confined.unlink(path)


def _sweep_temporaries(path: Path, confined: Confined) -> None:
    """Remove temporary files a killed ``fix`` of this file left beside it."""
    for leftover in path.parent.glob(f".{glob_escape(path.name)}{_TEMP_MARK}*.tmp"):
        pid = leftover.name.rsplit(_TEMP_MARK, 1)[-1].removesuffix(".tmp").split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            confined.unlink(leftover)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# What the OpenCode writer (``inspector.local.opencode``) shares with the one-file fix.
verify = _verify
alive = _alive

__all__ = [
    "BACKUP_MARK",
    "QUIET_SECONDS",
    "Outcome",
    "backups_of",
    "confinement",
    "first_line",
    "fix",
    "undo",
]
