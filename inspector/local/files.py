"""A session kept as several files of an agent's store, fixed file by file, and undone.

What crosses between a store kind of files (``opencode.Files``: OpenCode's
storage folder; ``openhands.Events``: OpenHands' event files) and this: the
kind reads its files, plans a ``Change`` of each file to write, add or
remove, says where the copy of a file goes in a backup set (``copy_at``) and
which files a backup's note may name. This module does the rest the same for
both: reading one of its JSON files (``read_json``); the dry run's outcome
(``would_fix``); the backup set, each changed or removed file copied and a
note of what was written (``write_backup``); the changes put in place, each
file in one step from a temporary file outside the store, the session read
back and the originals put back if it is not clean (``write_checked``); and
for ``undo``, the note read (``newest_note``) and the copies put back where
the files are still the ones fix wrote (``put_back_copies``). Every path
goes through the ``Confined`` given. ``EventFolder`` is the whole kind for a
session that is a folder of event files, one event a file (OpenHands' and its
CLI's), each stating only how it reads, plans and names its files.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from inspector.local.confine import Confined, Refused, absolute, safe_name, sync_folder
from inspector.local.outcome import Checked, Outcome, StoreError, diagnosed, sha256
from inspector.local.store import LocalStore, Run, Stop, repair_of

BACKUPS = "transcript-inspector-backups"
NOTE = "note.json"
TEMP = "tmp"


@dataclass(frozen=True, slots=True)
class Change:
    """One file: ``old`` None for a file the repair adds, ``new`` None for one it removes."""

    path: Path
    old: bytes | None
    new: bytes | None


def read_json(path: Path) -> tuple[bytes, Any]:
    """One JSON file of a store: its bytes and its value; ``StoreError`` for a link (fix
    reads and writes no file through one), something that is no file, or bytes that are
    not JSON."""
    mode = path.lstat().st_mode  # one call for both questions: a store has many files
    if stat.S_ISLNK(mode):
        raise StoreError(f"{path} is a symbolic link; fix does not follow links")
    if not stat.S_ISREG(mode):
        raise StoreError(f"{path} is not a file")
    data = path.read_bytes()
    try:
        return data, orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise StoreError(f"{path} is not JSON ({error.msg})") from None


def would_fix(
    path: Path, checked: Checked, plan: Callable[[], list[Change]], confined: Confined
) -> tuple[list[Change], Outcome]:
    """The changes ``plan`` gives, each path checked inside ``confined``, and the dry run's
    outcome; ``Stop`` where the plan is refused (``StoreError``)."""
    try:
        planned = plan()
        for change in planned:
            confined.check(change.path)
    except StoreError as error:
        raise Stop("refused", f"{error}; nothing was changed") from None
    result = Outcome(path, "would-fix", "", checked, files=[c.path for c in planned])
    result.touched = [n for n, c in enumerate(planned, 1) if c.old is not None]
    result.added = sum(1 for c in planned if c.old is None)
    return planned, result


def backup_folder(
    base: Path, session_id: str, clock: Callable[[], float], confined: Confined
) -> Path:
    """A new backup set's folder, ``<base>/<session_id>/<stamp>`` (``-1``, ``-2``... after a
    stamp already taken), made."""
    stamp = datetime.fromtimestamp(clock(), UTC).strftime("%Y%m%dT%H%M%S%fZ")
    sessions = confined.child(base, session_id, "the session id")
    candidate = sessions / stamp
    n = 1
    while candidate.exists() or candidate.is_symlink():
        candidate = sessions / f"{stamp}-{n}"
        n += 1
    confined.mkdir(candidate)
    return candidate


def write_backup(
    folder: Path,
    note: dict[str, Any],
    planned: list[Change],
    copy_at: Callable[[int, Change], Path],
    confined: Confined,
    *,
    ordered: bool,
) -> None:
    """Copy each file ``planned`` changes or removes to ``copy_at(n, change)`` in ``folder``
    and write ``note`` with an entry a file (``files``: its path, the hashes of what it
    was and what fix writes, its copy, and with ``ordered`` its place in the plan)."""
    files: list[dict[str, Any]] = []
    for n, change in enumerate(planned):
        entry: dict[str, Any] = {"path": str(change.path), "original_sha256": None}
        entry["written_sha256"] = sha256(change.new) if change.new is not None else None
        if change.old is not None:
            copy = copy_at(n, change)
            confined.mkdir(copy.parent)
            confined.create(copy, change.old, change.path.lstat().st_mode)
            entry["original_sha256"] = sha256(change.old)
            entry["copy"] = str(copy)
        if ordered:
            entry["order"] = n
        files.append(entry)
    note["files"] = files
    confined.create(folder / NOTE, orjson.dumps(note, option=orjson.OPT_INDENT_2), None)


def write_checked(
    result: Outcome,
    planned: list[Change],
    folder: Path,
    confined: Confined,
    *,
    unchanged: Callable[[], bool],
    read: Callable[[Path], bytes],
    name: str,
    who: str,
) -> Outcome:
    """Put ``planned`` in place after its backup set ``folder`` was written, if the session
    is still as read (``unchanged``, and each file to change as it was), and read it back
    with ``read``: the fixed ``result``, or the refusal or failure with the session as it
    was and no backup set."""
    path, checked = result.path, result.checked
    assert checked is not None  # ``would_fix``'s
    if not unchanged() or any(
        change.old is not None and confined.read(change.path) != change.old for change in planned
    ):
        confined.rmtree(folder)
        return Outcome(
            path,
            "refused",
            f"session {name} changed while it was being fixed ({who} may be running); "
            "nothing was changed",
        )
    temporary = confined.roots[1] / TEMP
    written: list[Change] = []
    try:
        for change in planned:
            _apply(change, temporary, confined)
            written.append(change)
    except OSError as error:
        put_back(written, temporary, confined)
        confined.rmtree(folder)
        return Outcome(path, "failed", f"could not write {error}; the session is as it was")
    try:
        again = diagnosed(path, checked.agent, read(path))
        clean = not (again.error or again.needs_repair)
    except (OSError, StoreError):  # a file of it changed or went meanwhile
        clean = False
    if not clean:
        put_back(planned, temporary, confined)
        confined.rmtree(folder)
        return Outcome(path, "failed", "the repaired session did not read back clean; it is back")
    result.status = "fixed"
    result.backup = folder
    return result


def apply(changes: list[Change], temporary_folder: Path, confined: Confined) -> None:
    """Make the changes, in order: each file written as ``new``, or removed (``new`` None)."""
    for change in changes:
        _apply(change, temporary_folder, confined)


def back_up_and_write(
    result: Outcome,
    planned: list[Change],
    confined: Confined,
    *,
    folder_name: str,
    clock: Callable[[], float],
    unchanged: Callable[[], bool],
    read: Callable[[Path], bytes],
    name: str,
    who: str,
) -> Outcome:
    """A backup set under ``folder_name`` (each file's copy numbered in plan order, no
    order kept: its files are put back in any order), then ``write_checked``: for a
    store whose files are each a whole event (``EventFolder``)."""
    folder = backup_folder(confined.roots[1], folder_name, clock, confined)
    note: dict[str, Any] = {
        "original": str(result.path),
        "written_at": datetime.fromtimestamp(clock(), UTC).isoformat(),
    }

    def copy_at(n: int, change: Change) -> Path:
        return folder / f"{n}.{change.path.name}"

    write_backup(folder, note, planned, copy_at, confined, ordered=False)
    return write_checked(
        result, planned, folder, confined, unchanged=unchanged, read=read, name=name, who=who
    )


def _apply(change: Change, temporary_folder: Path, confined: Confined) -> None:
    if change.new is None:
        confined.unlink(change.path)
        sync_folder(change.path.parent)
        return
    replace(change.path, change.new, temporary_folder, confined)


def replace(target: Path, data: bytes, temporary_folder: Path, confined: Confined) -> None:
    """Put ``data`` at ``target`` in one step, from a temporary file in ``temporary_folder``
    (outside the store: an agent may read every file of a folder of its own)."""
    confined.mkdir(temporary_folder)
    confined.check(target)
    mode = target.lstat().st_mode if target.exists() else 0o644
    temporary = confined.temporary(temporary_folder, f"{target.name}.", data, mode)
    try:
        confined.mkdir(target.parent)
        confined.replace(temporary, target)
    finally:
        confined.unlink(temporary)


def put_back(done: list[Change], temporary_folder: Path, confined: Confined) -> None:
    """Undo the changes ``done``, last first: each file as it was, those added removed."""
    for change in reversed(done):
        if change.old is None:
            confined.unlink(change.path)
        else:
            replace(change.path, change.old, temporary_folder, confined)


def backup_sets(folder: Path) -> list[Path]:
    """The backup sets in a session's backup ``folder`` (those with a note), oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / NOTE).is_file())


Note = tuple[list[dict[str, Any]], list[Path], list[Path | None]]


def newest_note(backups: list[Path], name: str, confined: Confined) -> tuple[Path, Note]:
    """The newest of a session's ``backups`` and its note (``read_note``); ``Stop`` where
    the session ``name`` has none."""
    if not backups:
        raise Stop("refused", f"no backup of the session {name} to restore")
    return backups[-1], read_note(backups[-1], confined)


def read_note(folder: Path, confined: Confined) -> Note:
    """The entries of backup set ``folder``'s note, the file each names and its copy (``None``
    for a file fix added), each path checked inside ``confined``; ``Stop`` where the note
    cannot be read."""
    try:
        note = orjson.loads(confined.read(folder / NOTE))
        entries = note["files"]
        if not isinstance(entries, list):
            raise TypeError("its files are not a list")
        targets = [confined.check(Path(entry["path"])) for entry in entries]
        copies = [confined.check(Path(e["copy"])) if e.get("copy") else None for e in entries]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as error:
        raise Stop("refused", f"cannot read the backup's note: {error}") from None
    return entries, targets, copies


def put_back_copies(
    path: Path,
    folder: Path,
    note: Note,
    confined: Confined,
    *,
    force: bool,
    who: str,
) -> Outcome:
    """Restore backup set ``folder`` (its ``read_note``, each path already held to be the
    session's own) if every file is still what fix wrote (or ``force``) and every copy
    what it copied, last written first, and remove the set."""
    entries, targets, copies = note
    for entry, target in zip(entries, targets, strict=True):
        current = confined.read(target) if target.exists() else None
        now = sha256(current) if current is not None else None
        if now != entry.get("written_sha256") and not force:
            return Outcome(
                path,
                "refused",
                f"{target.name} changed since fix wrote it ({who} wrote more); restoring "
                f"{folder.name} would lose that. Use --force to restore anyway.",
                backup=folder,
            )
    originals: dict[Path, bytes] = {}
    for entry, copy in zip(entries, copies, strict=True):
        if copy is not None:
            originals[copy] = confined.read(copy)
            if sha256(originals[copy]) != entry.get("original_sha256"):
                return Outcome(path, "refused", f"{folder} is not the copy fix made", backup=folder)
    temporary = confined.roots[1] / TEMP
    for n in sorted(range(len(entries)), key=lambda n: -_order(entries[n])):
        copy = copies[n]
        if copy is not None:
            replace(targets[n], originals[copy], temporary, confined)
        else:
            confined.unlink(targets[n])
    confined.rmtree(folder)
    return Outcome(path, "restored", f"restored from {folder}", backup=folder)


def _order(entry: dict[str, Any]) -> int:
    order = entry.get("order", 0)
    return order if isinstance(order, int) else 0


@dataclass(frozen=True, slots=True)
class Event:
    """One event file of an ``EventFolder`` session, as read."""

    path: Path
    # What the file's name calls the event (OpenHands: its number; its CLI: the event's id).
    id: int | str
    data: bytes
    value: Any


class EventFolder(LocalStore):
    """A session that is an ``events/`` folder, one event a file, fixed file by file and
    undone: OpenHands' store (``openhands.Events``) and its CLI's
    (``openhands_cli.Conversations``) alike. A kind states how it reads and plans
    (``events``, ``changes``), what fix may write (``owned``), where a session's backups
    go (``backup_name``), what a reason calls a session (``word``), and the hooks of
    ``LocalStore`` that list and read its sessions."""

    who = "OpenHands"
    word = "session"

    def events(self, path: Path) -> list[Event]:
        """The session's events in order; ``StoreError`` where its agent would misread them."""
        raise NotImplementedError

    def changes(self, found: list[Event], repaired: bytes, path: Path) -> list[Change]:
        """The files to write, add and remove for the ``repaired`` event list."""
        raise NotImplementedError

    def owned(self, target: Path, path: Path) -> bool:
        """Whether ``target`` is a file fix may write (or a note may name) for ``path``."""
        raise NotImplementedError

    def backup_name(self, name: str) -> str:
        """The folder of session ``name``'s backup sets, in the backup folder."""
        return name

    def sessions(self, root: Path) -> list[tuple[Path, int, float]] | None:
        if not root.is_dir():
            return None
        out = []
        for folder in sorted(root.iterdir()):
            candidate = folder / "events"
            if folder.is_symlink() or not self.owns(candidate):
                continue
            size, newest = self.stat(candidate)
            if size:
                out.append((candidate, size, newest))
        return out

    def read(self, path: Path) -> bytes:
        """The session's events as one JSON list, what the shape's reader reads."""
        try:
            return orjson.dumps([e.value for e in self.events(path)], option=orjson.OPT_INDENT_2)
        except Refused as refused:
            raise StoreError(str(refused)) from None

    def confinement(self, path: Path, backup_dir: Path | None = None) -> Confined:
        """The folder of the sessions and the backup folder (beside it unless given)."""
        root = absolute(path).parent.parent.resolve()
        base = absolute(backup_dir) if backup_dir else root.parent / BACKUPS
        return Confined.to(root, base)

    def locate(self, path: Path, backup_dir: Path | None) -> tuple[Confined, Path]:
        path = absolute(path)
        safe_name(path.parent.name, f"the {self.word} id")
        if path.name != "events":
            raise Refused(f"{path} is not a {self.word}'s events folder")
        confined = self.confinement(path, backup_dir)
        return confined, confined.check(confined.roots[0] / path.parent.name / "events")

    def repair(self, path: Path, confined: Confined, run: Run) -> Outcome:
        try:
            before = self.stat(path)
            found = self.events(path)
        except (OSError, StoreError, Refused) as error:
            reason = f"cannot read the {self.word}: {error}; nothing was changed"
            return Outcome(path, "refused", reason)
        name = path.parent.name
        data = orjson.dumps([e.value for e in found], option=orjson.OPT_INDENT_2)
        checked, repaired = repair_of(
            path, data, run, before[1], name=name, what=f"{self.word} {name}", who=self.who
        )

        def plan() -> list[Change]:
            planned = self.changes(found, repaired, path)
            for change in planned:
                if not self.owned(change.path, path):
                    raise StoreError(f"the repair would write {change.path}")
            return planned

        planned, result = would_fix(path, checked, plan, confined)
        if run.dry_run:
            return result
        return back_up_and_write(
            result,
            planned,
            confined,
            folder_name=self.backup_name(name),
            clock=run.clock,
            unchanged=lambda: self.stat(path) == before,
            read=self.read,
            name=name,
            who=self.who,
        )

    def backups(self, path: Path, backup_dir: Path | None = None) -> list[Path]:
        base = self.confinement(path, backup_dir).roots[1]
        return backup_sets(base / self.backup_name(path.parent.name))

    def restore(self, path: Path, confined: Confined, backups: list[Path], force: bool) -> Outcome:
        folder, note = newest_note(backups, path.parent.name, confined)
        _, targets, copies = note
        for target, copy in zip(targets, copies, strict=True):
            if not self.owned(target, path):
                reason = f"the backup's note names {target}; nothing was changed"
                return Outcome(path, "refused", reason)
            if copy is not None and copy.parent != folder:
                reason = f"the backup's note names {copy}; nothing was changed"
                return Outcome(path, "refused", reason)
        return put_back_copies(path, folder, note, confined, force=force, who=self.who)
