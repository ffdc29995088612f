"""OpenHands' sessions: a session read from its event files, fixed file by file; and undone.

OpenHands (All-Hands-AI/OpenHands) keeps each conversation in its file store
(``file_store_path``, default ``~/.openhands``; ``FILE_STORE_PATH`` moves
it, as ``core/config/utils.py`` reads every setting from the environment)
under ``sessions/<sid>/``: ``events/<id>.json``, one event a file, ids from
0 up (``storage/locations.py``), and ``event_cache/<start>-<end>.json``,
copies of 25 events at a time that ``EventStore`` reads before the single
files. A session is named by its ``events`` folder here; ``read`` gives its
events, in id order, as the JSON list ``inspector.formats.openhands`` reads.

``fix`` repairs that list and writes back only the event files whose event
changed, the files of events the repair added (the next ids, as OpenHands
appends), and removes those of events it dropped, each replaced in one step
from a temporary file outside ``sessions/``; the cache pages that hold a
copy of a touched event are removed with them (OpenHands would read the old
copy first; it reads the single files where a page is missing). Before
anything is written every file to change or remove is copied to a backup
set outside ``sessions/`` (``<store>/transcript-inspector-backups/<sid>/
<stamp>/``) with a note of what was written; a session written in the last
``quiet_seconds`` is refused (OpenHands may be running), and so is one that
changed while it was being fixed. The session is read back and diagnosed;
if it is not clean the originals are put back. ``undo`` puts the set back
if the files are still the ones ``fix`` wrote.

What may be written is stated once (``confinement``): the ``sessions``
folder and the backup folder. ``read`` refuses a session with a linked
event file, an event whose ``id`` is not its file's name, or a session id
that is not a plain name; every file written is a number's ``.json`` in this
session's ``events/`` or a page of its ``event_cache/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from inspector.local import files
from inspector.local.confine import Confined, Refused, absolute, safe_name
from inspector.local.files import BACKUPS, Change
from inspector.local.files import NOTE as NOTE  # its old home: tests read it here
from inspector.local.outcome import Outcome, StoreError
from inspector.local.store import LocalStore, Run, repair_of

_EVENT = re.compile(r"(0|[1-9][0-9]{0,11})\.json")
_PAGE = re.compile(r"([0-9]{1,12})-([0-9]{1,12})\.json")


@dataclass(frozen=True, slots=True)
class Event:
    path: Path
    id: int
    data: bytes
    value: Any


def is_session(path: Path) -> bool:
    return path.name == "events" and path.is_dir() and not path.is_symlink()


def session_of(path: Path) -> Path | None:
    """The ``events`` folder of the session an event file or a cache page belongs to."""
    if path.suffix != ".json":
        return None
    if path.parent.name == "events" and _EVENT.fullmatch(path.name):
        return path.parent
    if path.parent.name == "event_cache" and _PAGE.fullmatch(path.name):
        events = path.parent.parent / "events"
        return events if events.is_dir() else None
    return None


def _event_files(folder: Path) -> list[tuple[int, Path]]:
    found = []
    for file in folder.iterdir():
        match = _EVENT.fullmatch(file.name)
        if match:
            found.append((int(match.group(1)), file))
    return sorted(found)


def events(path: Path) -> list[Event]:
    """The session's events in id order; ``StoreError`` for one that is not OpenHands'."""
    safe_name(path.parent.name, "the session id")
    out = []
    for number, file in _event_files(path):
        data, value = files.read_json(file)
        if not isinstance(value, dict) or value.get("id", number) != number:
            raise StoreError(f"{file.name} does not hold event {number}")
        out.append(Event(file, number, data, value))
    if not out:
        raise StoreError(f"{path} holds no event")
    return out


def export_bytes(path: Path) -> bytes:
    try:
        return orjson.dumps([e.value for e in events(path)], option=orjson.OPT_INDENT_2)
    except Refused as refused:
        raise StoreError(str(refused)) from None


def stat(path: Path) -> tuple[int, float]:
    size, newest = 0, 0.0
    for _, file in _event_files(path):
        info = file.stat()
        size += info.st_size
        newest = max(newest, info.st_mtime)
    return size, newest


def sessions(root: Path) -> list[tuple[Path, int, float]] | None:
    if not root.is_dir():
        return None
    out = []
    for folder in sorted(root.iterdir()):
        candidate = folder / "events"
        if folder.is_symlink() or not is_session(candidate):
            continue
        size, newest = stat(candidate)
        if size:
            out.append((candidate, size, newest))
    return out


def confinement(path: Path, backup_dir: Path | None = None) -> Confined:
    """The ``sessions`` folder and the backup folder (beside it unless given)."""
    root = absolute(path).parent.parent.resolve()
    base = absolute(backup_dir) if backup_dir else root.parent / BACKUPS
    return Confined.to(root, base)


def changes(found: list[Event], repaired: bytes, path: Path) -> list[Change]:
    """The event files to write, add and remove, and the cache pages to remove."""
    old = {e.id: e for e in found}
    seen: set[int] = set()
    out: list[Change] = []
    for value in orjson.loads(repaired):
        number = value.get("id")
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise StoreError(f"the repair writes an event whose id {number!r} is not OpenHands'")
        if number in seen:
            raise StoreError(f"the repair writes event {number} twice")
        seen.add(number)
        event = old.get(number)
        if event is None:
            out.append(Change(path / f"{number}.json", None, orjson.dumps(value)))
        elif value != event.value:
            out.append(Change(event.path, event.data, orjson.dumps(value)))
    out += [Change(e.path, e.data, None) for e in found if e.id not in seen]
    touched = {int(c.path.stem) for c in out}
    cache = path.parent / "event_cache"
    if cache.is_dir() and not cache.is_symlink():
        for page in sorted(cache.iterdir()):
            match = _PAGE.fullmatch(page.name)
            if match and any(int(match[1]) <= n < int(match[2]) for n in touched):
                if page.is_symlink() or not page.is_file():
                    raise StoreError(f"{page} is a link or not a file")
                out.append(Change(page, page.read_bytes(), None))
    return out


def _fix(path: Path, confined: Confined, run: Run) -> Outcome:
    try:
        before = stat(path)
        found = events(path)
    except (OSError, StoreError, Refused) as error:
        return Outcome(path, "refused", f"cannot read the session: {error}; nothing was changed")
    sid = path.parent.name
    data = orjson.dumps([e.value for e in found], option=orjson.OPT_INDENT_2)
    checked, repaired = repair_of(
        path, data, run, before[1], name=sid, what=f"session {sid}", who="OpenHands"
    )
    planned, result = files.would_fix(
        path, checked, lambda: changes(found, repaired, path), confined
    )
    if run.dry_run:
        return result
    return files.back_up_and_write(
        result,
        planned,
        confined,
        folder_name=sid,
        clock=run.clock,
        unchanged=lambda: stat(path) == before,
        read=export_bytes,
        name=sid,
        who="OpenHands",
    )


def backups(path: Path, backup_dir: Path | None = None) -> list[Path]:
    return files.backup_sets(confinement(path, backup_dir).roots[1] / path.parent.name)


def _undo(path: Path, confined: Confined, backups: list[Path], force: bool) -> Outcome:
    folder, note = files.newest_note(backups, path.parent.name, confined)
    _, targets, copies = note
    own = (path, path.parent / "event_cache")
    for target, copy in zip(targets, copies, strict=True):
        if target.parent not in own or not (
            _EVENT.fullmatch(target.name) or _PAGE.fullmatch(target.name)
        ):
            return Outcome(
                path, "refused", f"the backup's note names {target}; nothing was changed"
            )
        if copy is not None and copy.parent != folder:
            return Outcome(path, "refused", f"the backup's note names {copy}; nothing was changed")
    return files.put_back_copies(path, folder, note, confined, force=force, who="OpenHands")


class Events(LocalStore):
    """OpenHands' file store: a session is its ``events/`` folder, one event a file."""

    owns = staticmethod(is_session)
    stat = staticmethod(stat)
    read = staticmethod(export_bytes)
    confinement = staticmethod(confinement)
    backups = staticmethod(backups)
    whole = "the session"

    def sessions(self, root: Path) -> list[tuple[Path, int, float]] | None:
        return sessions(root)

    def locate(self, path: Path, backup_dir: Path | None) -> tuple[Confined, Path]:
        path = absolute(path)
        safe_name(path.parent.name, "the session id")
        if path.name != "events":
            raise Refused(f"{path} is not a session's events folder")
        confined = confinement(path, backup_dir)
        return confined, confined.check(confined.roots[0] / path.parent.name / "events")

    repair = staticmethod(_fix)
    restore = staticmethod(_undo)


STORE = Events()
