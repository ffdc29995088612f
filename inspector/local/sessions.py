"""Finding the sessions agents left on this machine, and what each one needs.

``find`` walks every agent's folder (``agents.AGENTS``, each overridable) and
returns the session files newest first, with a warning for each folder that
is missing or cannot be read, so one bad folder never hides the others.
``check`` reads and diagnoses one file without ever writing anything.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from inspector import formats
from inspector.diagnosis import ENGINE_VERSION, Diagnosis, diagnose
from inspector.engine import InvalidTranscript
from inspector.local import opencode
from inspector.local.agents import AGENTS, Agent


@dataclass(frozen=True, slots=True)
class Session:
    agent: Agent
    path: Path
    size: int
    mtime: float

    @property
    def guessed_id(self) -> str:
        return self.agent.session_id(self.path)


@dataclass(slots=True)
class Checked:
    """One session file read and diagnosed; ``error`` says why it could not be."""

    path: Path
    agent: Agent | None
    parsed: formats.Parsed | None = None
    diagnosis: Diagnosis | None = None
    error: str = ""
    unread: list[formats.Problem] = field(default_factory=list)

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
        return self.agent.resume_command(
            self.session_id, self.path, cwd if isinstance(cwd, str) else None
        )


def roots(
    overrides: Mapping[str, Path] | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> list[tuple[Agent, Path]]:
    """Each agent's session folder: the override given for it, else where the agent keeps them."""
    given = overrides or {}
    return [(agent, given.get(agent.name) or agent.root(environ, home)) for agent in AGENTS]


def find(folders: Iterable[tuple[Agent, Path]]) -> tuple[list[Session], list[str]]:
    """The session files in these folders, newest first, and a warning per unreadable folder."""
    found: list[Session] = []
    warnings: list[str] = []
    for agent, root in folders:
        if agent.format == "opencode" and (db := opencode.database(root)) is not None:
            # Newer OpenCode reads only its database (beside ``storage/``, which a new
            # install never makes); the JSON files, where they are, are an older copy.
            try:
                found.extend(Session(agent, *row) for row in opencode.db_sessions(db))
            except sqlite3.Error as error:
                warnings.append(f"{agent.label}: cannot read {db}: {error}")
            continue
        if not root.is_dir():
            warnings.append(f"{agent.label}: no folder at {root} (skipped)")
            continue
        if not os.access(root, os.R_OK | os.X_OK):
            warnings.append(f"{agent.label}: cannot read {root} (skipped)")
            continue
        try:
            paths = sorted(root.glob(agent.pattern))
        except OSError as error:
            warnings.append(f"{agent.label}: cannot list {root}: {error.strerror or error}")
            continue
        for path in paths:
            if not _is_session(agent, root, path):
                continue
            try:
                if opencode.is_session_file(path):  # its messages and parts are files too
                    size, mtime = opencode.stat(path)
                else:
                    stat = path.stat()
                    size, mtime = stat.st_size, stat.st_mtime
            except OSError as error:
                warnings.append(f"{agent.label}: cannot read {path}: {error.strerror or error}")
                continue
            except opencode.StoreError as error:  # listed, and ``check`` says why it is unread
                warnings.append(f"{agent.label}: {error}")
                size, mtime = path.lstat().st_size, path.lstat().st_mtime
            found.append(Session(agent, path, size, mtime))
    found.sort(key=lambda s: (-s.mtime, str(s.path)))
    return found, warnings


def _is_session(agent: Agent, root: Path, path: Path) -> bool:
    if not path.is_file() or agent.skips(path.name):
        return False
    parts = path.relative_to(root).parts[:-1]
    return not any(part in agent.skip_folders or part.startswith(".") for part in parts)


def agent_for(path: Path, folders: Iterable[tuple[Agent, Path]]) -> Agent | None:
    """The agent whose folder holds ``path``, if any."""
    resolved = path.resolve()
    for agent, root in folders:
        try:
            resolved.relative_to(root.resolve())
        except (ValueError, OSError):
            continue
        return agent
    return None


def session_bytes(path: Path) -> bytes:
    """A session as the readers take it: a file's bytes, or an OpenCode session's export."""
    if opencode.is_session_file(path):  # the session's files, as one export
        return opencode.export_bytes(path)
    if opencode.is_db_session(path):  # a session in OpenCode's database
        return opencode.db_export_bytes(path)
    return path.read_bytes()


def check(path: Path, agent: Agent | None = None, data: bytes | None = None) -> Checked:
    """Read and diagnose one file; nothing is written."""
    checked = Checked(path=path, agent=agent)
    try:
        raw = data if data is not None else session_bytes(path)
        fmt = agent.format if agent is not None and agent.format in formats.FORMATS else "auto"
        checked.parsed = formats.load(raw, fmt)
        checked.diagnosis = diagnose(checked.parsed)
    except OSError as error:
        checked.error = f"cannot read {path}: {error.strerror or error}"
    except sqlite3.Error as error:
        checked.error = f"cannot read {path.parent}: {error}"
    except (formats.FormatError, InvalidTranscript, opencode.StoreError) as error:
        checked.error = first_line(str(error))
    else:
        checked.unread = [p for p in checked.parsed.problems if p.kind == "unreadable"]
    return checked


@dataclass(frozen=True, slots=True)
class Verdict:
    """What ``list`` shows of a session, small enough to keep between runs."""

    verdict: str  # "clean" | "needs repair" | "unreadable"
    counts: dict[str, int]
    session_id: str
    resume: str | None
    error: str = ""

    @property
    def needs_repair(self) -> bool:
        return self.verdict == "needs repair"

    @classmethod
    def of(cls, checked: Checked) -> Verdict:
        counts = dict(checked.diagnosis.counts) if checked.diagnosis else {}
        return cls(checked.verdict, counts, checked.session_id, checked.resume_command(),
                   checked.error)  # fmt: skip


class VerdictCache:
    """Verdicts of session files by path, kept while a file's size and time stay the same.

    ``list`` reads every session on the machine; with this, a second run reads
    only the files that changed. It lives in the user's cache folder
    (``$XDG_CACHE_HOME`` or ``~/.cache``), never beside the sessions, and is
    dropped whole when the engine version changes.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_cache_path()
        self._entries: dict[str, dict[str, Any]] = {}
        self._changed = False
        try:
            stored = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        if isinstance(stored, dict) and stored.get("engine") == ENGINE_VERSION:
            entries = stored.get("sessions")
            self._entries = entries if isinstance(entries, dict) else {}

    def verdict(self, session: Session) -> Verdict:
        """The session's verdict: from the cache if the file is unchanged, else diagnosed now."""
        key = str(session.path)
        stamp = [session.size, session.mtime]
        entry = self._entries.get(key)
        if entry is not None and entry.get("stamp") == stamp:
            try:
                return Verdict(**entry["verdict"])
            except (TypeError, KeyError):
                pass
        verdict = Verdict.of(check(session.path, session.agent))
        self._entries[key] = {"stamp": stamp, "verdict": asdict(verdict)}
        self._changed = True
        return verdict

    def save(self) -> None:
        if not self._changed:
            return
        data = orjson.dumps({"engine": ENGINE_VERSION, "sessions": self._entries})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            temporary.write_bytes(data)
            os.replace(temporary, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs time next run


def default_cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "transcript-inspector" / "sessions.json"


def first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else "unknown error"
