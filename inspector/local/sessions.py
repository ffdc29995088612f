"""Finding the sessions agents left on this machine, and what each one needs.

``find`` walks every agent's folder (``agents.AGENTS``, each overridable) and
returns the session files newest first, with a warning for each folder that
is missing or cannot be read, so one bad folder never hides the others.
``check`` reads and diagnoses one file without ever writing anything.
Which store a session is in (one file, OpenCode's folder or database) is
``stores``' answer; this module names none.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from inspector.diagnosis import ENGINE_VERSION
from inspector.local import stores
from inspector.local.agents import AGENTS, Agent
from inspector.local.outcome import Checked, StoreError, diagnosed, first_line
from inspector.local.store import noted_cwd

# The names every reader of many files (a scan, the watcher) takes for a session's.
SUFFIXES = (".jsonl", ".json")


def is_session_name(name: str) -> bool:
    return name.lower().endswith(SUFFIXES)


@dataclass(frozen=True, slots=True)
class Session:
    agent: Agent
    path: Path
    size: int
    mtime: float

    @property
    def guessed_id(self) -> str:
        return self.agent.session_id(self.path)


def roots(
    overrides: Mapping[str, Path] | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> list[tuple[Agent, Path]]:
    """Each agent's session folder: the override given for it, else where the agent keeps them."""
    given = overrides or {}
    return [
        (agent, root)
        for agent in AGENTS
        for root in ([given[agent.name]] if agent.name in given else agent.roots(environ, home))
    ]


def find(folders: Iterable[tuple[Agent, Path]]) -> tuple[list[Session], list[str]]:
    """The session files in these folders, newest first, and a warning per unreadable folder."""
    found: list[Session] = []
    warnings: list[str] = []
    for agent, root in folders:
        try:
            listed = _listed(agent, root)
        except StoreError as error:
            warnings.append(f"{agent.label}: {error}")
            continue
        if listed is not None:  # a store that lists its own sessions (a database)
            found.extend(Session(agent, *row) for row in listed)
            continue
        if not root.is_dir():
            warnings.append(f"{agent.label}: no folder at {root} (skipped)")
            continue
        if not os.access(root, os.R_OK | os.X_OK):
            warnings.append(f"{agent.label}: cannot read {root} (skipped)")
            continue
        try:
            paths = sorted(
                {p for pattern in (agent.pattern, *agent.also) for p in root.glob(pattern)}
            )
        except OSError as error:
            warnings.append(f"{agent.label}: cannot list {root}: {error.strerror or error}")
            continue
        for path in paths:
            if not _is_session(agent, root, path):
                continue
            try:
                size, mtime = stores.for_path(path).stat(path)
            except OSError as error:
                warnings.append(f"{agent.label}: cannot read {path}: {error.strerror or error}")
                continue
            except StoreError as error:  # listed, and ``check`` says why it is unread
                warnings.append(f"{agent.label}: {error}")
                size, mtime = path.lstat().st_size, path.lstat().st_mtime
            found.append(Session(agent, path, size, mtime))
    found.sort(key=lambda s: (-s.mtime, str(s.path)))
    return found, warnings


def _listed(agent: Agent, root: Path) -> list[tuple[Path, int, float]] | None:
    """The sessions a store of ``agent`` lists itself (a database's), or ``None``."""
    for store in stores.of(agent):
        if (listed := store.sessions(root)) is not None:
            return listed
    return None


def _is_session(agent: Agent, root: Path, path: Path) -> bool:
    if not path.is_file() or agent.skips(path.name) or not agent.is_named_after_folder(path):
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
    """A session as the readers take it: a file's bytes, or its store's export of its records."""
    return stores.for_path(path).read(path)


def check(path: Path, agent: Agent | None = None, data: bytes | None = None) -> Checked:
    """Read and diagnose one file; nothing is written."""
    if data is None:
        try:
            data = session_bytes(path)
        except OSError as error:
            return Checked(path, agent, error=f"cannot read {path}: {error.strerror or error}")
        except sqlite3.Error as error:
            return Checked(path, agent, error=f"cannot read {path.parent}: {error}")
        except StoreError as error:
            return Checked(path, agent, error=first_line(str(error)))
    checked = diagnosed(path, agent, data)
    checked.resume = stores.for_path(path).resume
    checked.cwd = noted_cwd(checked)
    return checked


@dataclass(frozen=True, slots=True)
class Verdict:
    """What ``list`` shows of a session, small enough to keep between runs."""

    verdict: str  # "clean" | "needs repair" | "unreadable"
    counts: dict[str, int]
    session_id: str
    resume: str | None
    error: str = ""
    title: str = ""  # the session's first prompt, what a person knows it by

    @property
    def needs_repair(self) -> bool:
        return self.verdict == "needs repair"

    @classmethod
    def of(cls, checked: Checked) -> Verdict:
        counts = dict(checked.diagnosis.counts) if checked.diagnosis else {}
        title = checked.diagnosis.meta.get("first_prompt") if checked.diagnosis else None
        return cls(checked.verdict, counts, checked.session_id, checked.resume_command(),
                   checked.error, title if isinstance(title, str) else "")  # fmt: skip


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


__all__ = [
    "Checked",
    "Session",
    "Verdict",
    "VerdictCache",
    "agent_for",
    "check",
    "default_cache_path",
    "find",
    "first_line",
    "is_session_name",
    "roots",
    "session_bytes",
]
