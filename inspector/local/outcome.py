"""What checking and fixing a session report (``Checked``, ``Outcome``), and a repair's proof.

The floor every store stands on (``store``, ``opencode``, ``opencode_db``):
it reads no folder and writes no file. ``diagnosed`` diagnoses a session's
bytes, however a store read them; ``verify`` says whether the bytes a repair
would write read back as the repaired messages, clean. Imports only the pure
core and ``agents`` (for the ``Agent`` a result names).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from inspector import formats
from inspector.diagnosis import Diagnosis, diagnose, repair_parsed
from inspector.engine import InvalidTranscript
from inspector.engine.canonical import call_id_text
from inspector.local.agents import Agent


class StoreError(ValueError):
    """A session's records cannot be read as one session (a store's own reason)."""


@dataclass(slots=True)
class Checked:
    """One session file read and diagnosed; ``error`` says why it could not be."""

    path: Path
    agent: Agent | None
    parsed: formats.Parsed | None = None
    diagnosis: Diagnosis | None = None
    error: str = ""
    unread: list[formats.Problem] = field(default_factory=list)
    # The command that resumes it where its store's is not the agent's (``{session}``).
    resume: str = ""
    # The folder it was started in, where the agent notes it beside the file, not in it.
    cwd: str = ""

    @property
    def session_id(self) -> str:
        meta_id = self.parsed.meta.get("session_id") if self.parsed else None
        if self.agent is None:
            return str(meta_id or self.path.stem)
        return self.agent.session_id(self.path, meta_id if isinstance(meta_id, str) else None)

    @property
    def needs_repair(self) -> bool:
        return bool(self.diagnosis and self.diagnosis.needs_repair)

    @property
    def verdict(self) -> str:
        if self.error:
            return "unreadable"
        return "needs repair" if self.needs_repair else "clean"

    def resume_command(self) -> str | None:
        if self.agent is None:
            return None
        cwd = self.parsed.meta.get("cwd") if self.parsed else None
        cwd = cwd if isinstance(cwd, str) and cwd else self.cwd or None
        return self.agent.resume_command(self.session_id, self.path, cwd, self.resume or None)


def diagnosed(path: Path, agent: Agent | None, data: bytes) -> Checked:
    """Read and diagnose a session's bytes (``path`` names it); nothing is read or written."""
    checked = Checked(path=path, agent=agent)
    try:
        fmt = agent.format if agent is not None and agent.format in formats.FORMATS else "auto"
        checked.parsed = formats.load(data, fmt)
        checked.diagnosis = diagnose(checked.parsed)
    except (formats.FormatError, InvalidTranscript, StoreError) as error:
        checked.error = first_line(str(error))
    else:
        checked.unread = [p for p in checked.parsed.problems if p.kind == "unreadable"]
    return checked


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


def verify(checked: Checked, repaired: bytes) -> str:
    """Why ``repaired`` is not a faithful, clean repair of ``checked``, or ``""``."""
    assert checked.parsed is not None
    again = diagnosed(checked.path, checked.agent, repaired)
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


def alive(pid: int) -> bool:
    """Whether the process ``pid`` (another one) still runs: its temporary files are its own."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else "unknown error"
