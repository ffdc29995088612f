"""The OpenHands CLI's conversations: read from their event files, fixed file by file; undone.

The CLI (OpenHands/OpenHands-CLI ``locations.py``) keeps its conversations in
``$OPENHANDS_CONVERSATIONS_DIR``, else ``$OPENHANDS_PERSISTENCE_DIR/
conversations``, else ``~/.openhands/conversations``; the SDK's
``LocalConversation`` puts each in ``<that>/<conversation id hex>/``:
``base_state.json`` (the agent, the stats, ``leaf_event_id``: the event the
next one follows) and ``events/event-<index>-<event id>.json``, one event a
file, indexes from 0 up with no gap (``EventLog._scan_and_build_index``
stops at the first missing index). A conversation is named by its
``events`` folder here; ``read`` gives its events in index order, as the
JSON list ``inspector.formats.openhands_cli`` reads. ``openhands --resume
<id>`` continues one.

``fix`` repairs that list and writes back only what changed: an event whose
content changed is rewritten under its name, an event the repair added is a
new file (``event-<index>-<id>.json``), and where an event was added or
dropped before others those after it are renamed to their new index (same
id, same bytes unless their ``parent_id`` changed), so the log has no gap;
where the conversation's ``leaf_event_id`` named its last event it names the
new last one (else the SDK, resuming from the old leaf, would not see the
added result and would run the action again). Each file is replaced in one
step from a temporary file outside ``conversations/``. Before anything is
written every file to change or remove is copied to a backup set outside
``conversations/`` (``<its parent>/transcript-inspector-backups/
conversation-<id>/<stamp>/``) with a note of what was written; a
conversation written in the last ``quiet_seconds`` is refused (the CLI may
be running it; it holds no lock between its writes), and so is one that
changed while it was being fixed. The conversation is read back and
diagnosed; if it is not clean the originals are put back. ``undo`` puts the
set back if the files are still the ones ``fix`` wrote.

What may be written is stated once (``confinement``): the conversations
folder and the backup folder. ``read`` refuses a conversation with a linked
or misnamed event file, an index gap, an event whose ``id`` is not its
file's, a ``leaf_event_id`` other than its last event (a branched
conversation), or an id that is not a plain name; every file written is an
event file of this conversation's ``events/`` or its ``base_state.json``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from inspector.formats.jsondoc import dump_like
from inspector.formats.openhands_cli import NOT_NODES
from inspector.local import files
from inspector.local.confine import safe_name
from inspector.local.files import Change, Event
from inspector.local.outcome import StoreError

BASE_STATE = "base_state.json"
# persistence_const.py EVENT_NAME_RE: the index (5 digits or more) and the event's id.
_EVENT = re.compile(r"event-([0-9]{5,12})-([0-9a-fA-F-]{8,64})\.json")
_LEAF = re.compile(rb'("leaf_event_id"\s*:\s*")([0-9A-Za-z_-]{1,64})(")')


def _event_files(folder: Path) -> list[tuple[int, str, Path]]:
    found = []
    for file in folder.iterdir():
        match = _EVENT.fullmatch(file.name)
        if match:
            found.append((int(match.group(1)), match.group(2), file))
    return sorted(found)


def is_session(path: Path) -> bool:
    """An ``events`` folder holding the SDK's event files (not OpenHands V0's ``<n>.json``)."""
    if path.name != "events" or path.is_symlink() or not path.is_dir():
        return False
    try:
        return any(_EVENT.fullmatch(file.name) for file in path.iterdir())
    except OSError:
        return False


def session_of(path: Path) -> Path | None:
    """The ``events`` folder of the conversation an event file or ``base_state.json`` is of."""
    if path.parent.name == "events" and _EVENT.fullmatch(path.name):
        return path.parent
    if path.name == BASE_STATE and is_session(path.parent / "events"):
        return path.parent / "events"
    return None


def event_index(name: str) -> tuple[int, str] | None:
    """The index and event id an event file's name says (``event-00003-<id>.json``), or None."""
    match = _EVENT.fullmatch(name)
    return (int(match.group(1)), match.group(2)) if match else None


def _event_value(name: str, index: int, position: int, name_id: str, data: bytes) -> Any:
    """The event a file named ``name`` holds, found at ``position`` of its folder in index
    order; ``StoreError`` where the SDK would not read it there (``EventLog``'s rules)."""
    if index != position:
        what = "twice" if index < position else "after a gap"
        raise StoreError(f"{name}: index {index} comes {what} (the SDK reads none after)")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise StoreError(f"{name} is not JSON ({error})") from None
    if not isinstance(value, dict) or value.get("id") != name_id:
        raise StoreError(f"{name} does not hold the event its name says")
    return value


def export_members(members: list[tuple[str, bytes]]) -> bytes:
    """A conversation's event files given by name and bytes (a zip's members), as ``read``
    gives them: the events in index order, one list; ``StoreError`` where the SDK would not
    read them so (a gap, an index twice, a file that does not hold its event)."""
    found: list[tuple[int, str, str, bytes]] = []
    for name, data in members:
        said = event_index(name)
        if said is not None:
            found.append((said[0], said[1], name, data))
    found.sort()
    values = [_event_value(name, i, n, name_id, data)
              for n, (i, name_id, name, data) in enumerate(found)]  # fmt: skip
    if not values:
        raise StoreError("no event file")
    return orjson.dumps(values, option=orjson.OPT_INDENT_2)


def events(path: Path) -> list[Event]:
    """The conversation's events in index order; ``StoreError`` for one the SDK would misread."""
    safe_name(path.parent.name, "the conversation id")
    out: list[Event] = []
    for index, name_id, file in _event_files(path):
        if file.is_symlink() or not file.is_file():
            raise StoreError(f"{file} is a link or not a file")
        data = file.read_bytes()
        value = _event_value(file.name, index, len(out), name_id, data)
        out.append(Event(file, name_id, data, value))
    if not out:
        raise StoreError(f"{path} holds no event")
    leaf = _leaf(path)
    nodes = [e.id for e in out if e.value.get("kind") not in NOT_NODES]
    if leaf is not None and nodes and leaf != nodes[-1]:
        raise StoreError(
            f"its leaf_event_id is {leaf}, not its last event: a branched conversation, "
            "which this tool does not fix"
        )
    return out


def _leaf(path: Path) -> str | None:
    """``base_state.json``'s ``leaf_event_id``, where it names one."""
    state = path.parent / BASE_STATE
    if state.is_symlink():
        raise StoreError(f"{state} is a link")
    if not state.is_file():
        return None
    try:
        value = orjson.loads(state.read_bytes())
    except orjson.JSONDecodeError as error:
        raise StoreError(f"{BASE_STATE} is not JSON ({error})") from None
    leaf = value.get("leaf_event_id") if isinstance(value, dict) else None
    return leaf if isinstance(leaf, str) else None


def stat(path: Path) -> tuple[int, float]:
    size, newest = 0, 0.0
    state = path.parent / BASE_STATE
    files = [file for _, _, file in _event_files(path)] + ([state] if state.is_file() else [])
    for file in files:
        info = file.stat()
        size += info.st_size if file != state else 0
        newest = max(newest, info.st_mtime)
    return size, newest


def changes(found: list[Event], repaired: bytes, path: Path) -> list[Change]:
    """The event files to write, add, rename and remove, and ``base_state.json``'s new leaf."""
    old = {e.id: e for e in found}
    out: list[Change] = []
    kept: set[Path] = set()
    values = orjson.loads(repaired)
    for index, value in enumerate(values):
        number = value.get("id") if isinstance(value, dict) else None
        if not isinstance(number, str) or not _EVENT.fullmatch(f"event-00000-{number}.json"):
            raise StoreError(f"the repair writes an event whose id {number!r} names no file")
        target = path / f"event-{index:05d}-{safe_name(number, 'an event id')}.json"
        if target in kept:
            raise StoreError(f"the repair writes event {number} twice")
        kept.add(target)
        event = old.get(number)
        if event is None:
            like = found[min(index, len(found)) - 1].data
            out.append(Change(target, None, dump_like(value, like)))
        elif value != event.value:
            new = dump_like(value, event.data)
            out.append(Change(target, event.data if target == event.path else None, new))
        elif target != event.path:
            out.append(Change(target, None, event.data))
    out += [Change(e.path, e.data, None) for e in found if e.path not in kept]
    leaf = _leaf(path)
    nodes = [v["id"] for v in values if v.get("kind") not in NOT_NODES]
    if leaf is not None and nodes and nodes[-1] != leaf:
        state = path.parent / BASE_STATE
        data = state.read_bytes()
        new, count = _LEAF.subn(lambda m: m[1] + nodes[-1].encode() + m[3], data)
        before, after = orjson.loads(data), orjson.loads(new) if count == 1 else None
        if after is None or {**before, "leaf_event_id": nodes[-1]} != after:
            raise StoreError(f"{BASE_STATE} names its leaf where this tool cannot change it")
        out.append(Change(state, data, new))
    return out


def _owned(target: Path, path: Path) -> bool:
    """A file ``fix`` may write for the conversation of ``path``: an event file or its state."""
    if target.parent == path:
        return _EVENT.fullmatch(target.name) is not None
    return target == path.parent / BASE_STATE


class Conversations(files.EventFolder):
    """The OpenHands CLI's conversations: one is its ``events/`` folder, one event a file."""

    owns = staticmethod(is_session)
    stat = staticmethod(stat)
    events = staticmethod(events)
    changes = staticmethod(changes)
    owned = staticmethod(_owned)
    word = "conversation"
    whole = "the conversation"

    def backup_name(self, name: str) -> str:
        return f"conversation-{name}"


STORE = Conversations()
