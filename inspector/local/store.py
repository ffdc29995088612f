"""A session store: where an agent keeps its sessions, read, fixed and undone in place.

``LocalStore`` is the base every store kind derives from, and is itself the
common kind: **one session, one file** (Claude Code, Codex, Gemini CLI, Kimi,
pi). A store that keeps a session in several files (OpenCode's storage
folder, ``opencode.py``) or in a database (OpenCode's ``opencode.db``,
``opencode_db.py``) overrides the hooks below and is registered in
``stores.STORES`` under the name an agent gives in ``Agent.store``
(``agents.py``). ``sessions`` (finding and checking) and ``fix`` (fixing and
undoing) ask ``stores`` which store a session is in and call these hooks;
they never name a store kind themselves. The hooks, and who overrides them:

- ``owns(path)``: this store names the session ``path`` (the base: any file);
- ``sessions(root)``: the sessions a store lists itself (a database's rows),
  or ``None`` to find them by the agent's ``pattern`` (the base);
- ``stat(path)``: size and last write of one found session;
- ``read(path)``: the session's bytes as the readers take them;
- ``confinement(path, backup_dir)``: the folders ``fix`` and ``undo`` may
  write in (``confine.Confined``), and nothing else; ``locate``: that, and
  the session's path checked inside it;
- ``repair(path, confined, run)``: the repair written in place; it starts
  with ``repair_of`` (diagnosed, not clean, quiet for ``run.quiet_seconds``,
  its repair proven by ``outcome.verify``) and raises ``Stop`` to end early;
- ``restore(path, confined, backups, force)``: the newest backup put back;
  ``backups(path, backup_dir)``: the backups made, oldest first.

``fix`` and ``undo`` are the same for every kind: they ``locate``, call the
hook, and turn ``Stop``, ``Refused``, ``StoreError`` and ``OSError`` into the
``Outcome`` they report, so a store kind never raises for a bad session.

The one-file ``fix`` never leaves a half-written session: the repair is
written to a temporary file beside the original, flushed to disk, given the
original's mode, and renamed over it in one step (``os.replace``), so a
process killed at any moment leaves the old file or the new one. Before the
rename:

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

Every write, rename and removal goes through the store's
``confine.Confined``, which refuses a link (the session file itself or any
folder below the root), a name with a separator, ``..`` or NUL, and anything
outside its folders: the run is ``refused``, nothing written, the reason
naming the file.

Imports only downward: ``outcome`` (the results and the repair's proof),
``confine``, ``agents`` and the pure core.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from difflib import SequenceMatcher
from glob import escape as glob_escape
from pathlib import Path

import orjson

from inspector.diagnosis import repaired_bytes
from inspector.formats import FormatError
from inspector.local.agents import AGENTS, Agent
from inspector.local.confine import Confined, Refused, absolute
from inspector.local.outcome import (
    Checked,
    Outcome,
    StoreError,
    alive,
    diagnosed,
    first_line,
    sha256,
    verify,
)

QUIET_SECONDS = 5.0
BACKUP_MARK = ".ti-backup-"
NOTE_SUFFIX = ".note"
_TEMP_MARK = ".ti-fix-"


class Stop(Exception):
    """Ends a fix early with this outcome: ``LocalStore.fix`` turns it into the ``Outcome``."""

    def __init__(self, status: str, reason: str, checked: Checked | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.checked = checked


@dataclass(frozen=True, slots=True)
class _Stamp:
    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> _Stamp:
        stat = path.stat()
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ino)


@dataclass(frozen=True, slots=True)
class Run:
    """One ``fix`` as asked: whose session, a dry run or not, how quiet it must be, the clock."""

    agent: Agent | None
    dry_run: bool = False
    quiet_seconds: float = QUIET_SECONDS
    clock: Callable[[], float] = time.time


class LocalStore:
    """One session, one file; the base of every store kind (see the module docstring)."""

    # How a reason names a session that is more than one file (``None``: by its file's name).
    whole: str | None = None
    # The command that resumes a session of this store, where not the agent's (``{session}``).
    resume = ""

    def owns(self, path: Path) -> bool:
        """Whether ``path`` names a session of this store."""
        return True

    def sessions(self, root: Path) -> list[tuple[Path, int, float]] | None:
        """The sessions under ``root`` (name, size, last write), or ``None``: find them by pattern.

        Raises ``StoreError`` (its reason the warning ``list`` shows) if they cannot be read.
        """
        return None

    def stat(self, path: Path) -> tuple[int, float]:
        stat = path.stat()
        return stat.st_size, stat.st_mtime

    def read(self, path: Path) -> bytes:
        return path.read_bytes()

    def confinement(self, path: Path, backup_dir: Path | None = None) -> Confined:
        """The folder holding the session file and the backup folder (the same unless given)."""
        store = absolute(path).parent.resolve()
        return Confined.to(store, backup_dir or store)

    def locate(self, path: Path, backup_dir: Path | None) -> tuple[Confined, Path]:
        """Where ``fix`` and ``undo`` may write, and ``path`` checked inside it (not a link).

        Raises ``Refused``. The base: the session file in the folder holding it.
        """
        confined = self.confinement(path, backup_dir)
        return confined, confined.check(confined.roots[0] / path.name)

    def fix(self, path: Path, run: Run, backup_dir: Path | None = None) -> Outcome:
        """Repair ``path`` in place (see the module docstring); never raises for a bad file.

        Kinds override ``locate`` and ``repair``, not this.
        """
        if nul := _holds_nul(path):
            return nul
        try:
            confined, path = self.locate(path, backup_dir)
            return self.repair(path, confined, run)
        except Stop as stop:
            return Outcome(path, stop.status, stop.reason, stop.checked)
        except Refused as refused:
            return Outcome(path, "refused", f"{refused}; nothing was changed")
        except OSError as error:  # a backup or temporary file that could not be made
            reason = f"could not write {error.filename or path}: {error.strerror or error}"
            return Outcome(path, "failed", f"{reason}; {self.whole or path.name} is as it was")

    def repair(self, path: Path, confined: Confined, run: Run) -> Outcome:
        """The repair itself, inside ``confined``: the one-file way (the module docstring)."""
        return _fix(path, confined, run)

    def undo(self, path: Path, *, backup_dir: Path | None = None, force: bool = False) -> Outcome:
        """Put back the newest backup ``fix`` made of ``path``, if it is still fix's output.

        Kinds override ``locate`` and ``restore``, not this.
        """
        if nul := _holds_nul(path):
            return nul
        try:
            confined, path = self.locate(path, backup_dir)
            return self.restore(path, confined, self.backups(path, backup_dir), force)
        except Stop as stop:
            return Outcome(path, stop.status, stop.reason, stop.checked)
        except StoreError as error:
            return Outcome(path, "refused", f"cannot read the session: {error}")
        except Refused as refused:
            return Outcome(path, "refused", f"{refused}; nothing was changed")

    def restore(self, path: Path, confined: Confined, backups: list[Path], force: bool) -> Outcome:
        """Put back the newest of ``backups`` inside ``confined``: the one-file way."""
        return _undo(path, confined, backups, force)

    def backups(self, path: Path, backup_dir: Path | None = None) -> list[Path]:
        """The backups ``fix`` made of ``path``, oldest first."""
        path = absolute(path)
        folder = (absolute(backup_dir) if backup_dir else path.parent).resolve()
        if not folder.is_dir():
            return []
        found = [
            p
            for p in folder.glob(f"{glob_escape(path.name)}{BACKUP_MARK}*")
            if not p.name.endswith(NOTE_SUFFIX) and _note_path(p).is_file()
        ]
        return sorted(found, key=lambda p: p.name)


FILE = LocalStore()


# The most of a file beside a session that ``noted_cwd`` reads (an agent's small state file).
_NOTE_BYTES = 1 << 20


def noted_cwd(checked: Checked) -> str:
    """The folder ``checked`` was started in as its agent notes it beside the session file
    (``Agent.cwd_noted``), where the session's records do not say; ``""`` if nothing says.

    Only read: a link, a file too large or not JSON, or no text under the key is nothing.
    """
    agent, parsed = checked.agent, checked.parsed
    if agent is None or not agent.cwd_noted or (parsed and parsed.meta.get("cwd")):
        return ""
    relative, key = agent.cwd_noted
    note = Path(os.path.normpath(checked.path.parent / relative))
    try:
        if note.is_symlink() or note.stat().st_size > _NOTE_BYTES:
            return ""
        value = orjson.loads(note.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return ""
    found: object = value
    for part in key.split("."):  # a dotted key names a field inside another
        found = found.get(part) if isinstance(found, dict) else None
    return found if isinstance(found, str) else ""


def repair_of(
    path: Path, data: bytes, run: Run, written: float, *, name: str, what: str, who: str
) -> tuple[Checked, bytes]:
    """``data`` diagnosed, and its repair proven by ``verify``; ``Stop`` if none is to be written.

    Stops when it does not read (``name`` names it), is clean, was written at ``written``
    (seconds) less than ``run.quiet_seconds`` ago (``what`` was, ``who`` may be running),
    or its repair does not verify. Every store kind's ``repair`` starts here.
    """
    checked = diagnosed(path, run.agent, data)
    checked.cwd = noted_cwd(checked)
    if checked.error or checked.parsed is None or checked.diagnosis is None:
        raise Stop("refused", f"cannot read {name}: {checked.error}; nothing was changed")
    if not checked.diagnosis.needs_repair:
        raise Stop("clean", "nothing to repair", checked)
    age = run.clock() - written
    if age < run.quiet_seconds and not run.dry_run:
        raise Stop(
            "refused",
            f"{what} was written {max(age, 0):.1f} s ago: {who} may still be running. "
            "Close it (or wait) and run fix again; nothing was changed.",
        )
    for owner in () if run.dry_run else _lockers(run.agent, checked.parsed.format):
        if held := _held(path, owner):
            raise Stop(
                "refused", f"{held}. Close it (or wait) and run fix again; nothing was changed."
            )
    try:
        repaired = repaired_bytes(checked.parsed)
    except FormatError as error:  # the shape cannot write this repair (Qwen's compression)
        reason = f"the repair of {name} cannot be written in its shape: {first_line(str(error))}"
        raise Stop("refused", f"{reason}; nothing was changed", checked) from None
    problem = verify(checked, repaired)
    if problem:
        raise Stop("failed", f"the repair did not verify ({problem}); nothing was changed")
    return checked, repaired


def _lockers(agent: Agent | None, format: str) -> tuple[Agent, ...]:
    """The agents whose lock beside a session would say they run it: its own agent; where
    fix was not told whose it is (a file in no agent's folder), every agent that writes its
    shape and locks what it runs. Unsure whose the file is, fix heeds every lock it may have."""
    if agent is not None:
        return (agent,)
    return tuple(a for a in AGENTS if a.lock and a.format == format)


def _held(path: Path, agent: Agent) -> str:
    """Why the agent's lock beside ``path`` says it is running the session now, or ``""``.

    A lock naming a process that no longer runs is stale (a kiro-cli that was killed leaves
    one) and holds nothing; one whose process cannot be read may be live, so it holds.
    """
    lock = agent.lock_of(path)
    if lock is None or not lock.is_file():
        return ""
    try:
        value = orjson.loads(lock.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        value = None
    pid = value.get("pid") if isinstance(value, dict) else None
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return f"{lock.name} names no process: {agent.label} may be running this session"
    if not alive(pid):
        return ""
    return f"{agent.label} (process {pid}, in {lock.name}) is running this session"


def _fix(path: Path, confined: Confined, run: Run) -> Outcome:
    dry_run, clock = run.dry_run, run.clock
    _sweep_temporaries(path, confined)
    try:
        before = _Stamp.of(path)
        data = confined.read(path)
    except OSError as error:
        raise Stop("refused", f"cannot read {path}: {error.strerror or error}") from None
    checked, repaired = repair_of(
        path, data, run, before.mtime_ns / 1e9, name=path.name, what=path.name, who="the agent"
    )
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
            "original_sha256": sha256(data),
            "written_sha256": sha256(repaired),
            "written_at": datetime.fromtimestamp(clock(), UTC).isoformat(),
        }
        confined.create(_note_path(backup), orjson.dumps(note, option=orjson.OPT_INDENT_2), None)
        if _Stamp.of(path) != before or confined.read(path) != data:
            _discard(confined, backup, _note_path(backup))
            raise Stop(
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
    again = diagnosed(path, checked.agent, on_disk)
    if again.error or again.needs_repair:
        _restore(path, data, confined)
        raise Stop("failed", "the repaired file did not read back clean; the original is back")
    outcome.status = "fixed"
    outcome.backup = backup
    return outcome


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
        if pid.isdigit() and not alive(int(pid)):
            confined.unlink(leftover)


def _undo(path: Path, confined: Confined, backups: list[Path], force: bool) -> Outcome:
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
    if current is not None and sha256(current) != note.get("written_sha256") and not force:
        return Outcome(
            path,
            "refused",
            f"{path.name} changed since fix wrote it (the agent wrote more); restoring "
            f"{backup.name} would lose that. Use --force to restore anyway.",
            backup=backup,
        )
    original = confined.read(backup)
    if sha256(original) != note.get("original_sha256"):
        return Outcome(path, "refused", f"{backup.name} is not the copy fix made", backup=backup)
    _restore(path, original, confined, backup.lstat().st_mode)
    _discard(confined, backup, _note_path(backup))
    return Outcome(path, "restored", f"restored from {backup.name}", backup=backup)


def _holds_nul(path: Path) -> Outcome | None:
    """A refusal for a path holding a NUL character (no file's name can: the system calls
    would raise, not answer), else ``None``. A session id read from a database may hold one."""
    if "\0" not in str(path):
        return None
    return Outcome(path, "refused", f"{str(path)!r} holds a NUL character; nothing was changed")
