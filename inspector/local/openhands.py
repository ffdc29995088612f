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
from pathlib import Path

import orjson

from inspector.local import files
from inspector.local.confine import safe_name
from inspector.local.files import Change, Event
from inspector.local.outcome import StoreError

_EVENT = re.compile(r"(0|[1-9][0-9]{0,11})\.json")
_PAGE = re.compile(r"([0-9]{1,12})-([0-9]{1,12})\.json")


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


def stat(path: Path) -> tuple[int, float]:
    size, newest = 0, 0.0
    for _, file in _event_files(path):
        info = file.stat()
        size += info.st_size
        newest = max(newest, info.st_mtime)
    return size, newest


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


def _owned(target: Path, path: Path) -> bool:
    """A file ``fix`` may write for the session of ``path``: an event file or a cache page."""
    if target.parent == path:
        return _EVENT.fullmatch(target.name) is not None
    return target.parent == path.parent / "event_cache" and bool(_PAGE.fullmatch(target.name))


class Events(files.EventFolder):
    """OpenHands' file store: a session is its ``events/`` folder, one event a file."""

    owns = staticmethod(is_session)
    stat = staticmethod(stat)
    events = staticmethod(events)
    changes = staticmethod(changes)
    owned = staticmethod(_owned)
    whole = "the session"


STORE = Events()
