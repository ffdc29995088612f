"""Where each agent keeps its sessions on disk, and the command that resumes one.

One definition for every caller: the console command's ``list`` and ``fix``,
the web timeline's "to resume" hint and the watcher all read this table.
Each folder can be overridden (``--root claude-code=/path``, or the agent's
own environment variable, which the agent itself honours too).

Adding an agent is one ``Agent`` row. Its ``format`` names the shape its
files are in (``inspector.formats.FORMATS``). Where a session is not one file
(a folder of record files, or a database like OpenCode's ``opencode.db``),
``store`` names the store kinds that read, fix and undo it
(``inspector.local.stores.STORES``, each a ``store.LocalStore`` subclass
in its own module): ``sessions`` and ``fix`` find it there, unedited.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Agent:
    """One agent: ``name`` is its id; ``format`` the shape (``inspector.formats``) it writes.

    Its sessions are the files matching ``pattern`` under ``home/sessions``,
    where ``home`` is ``$env`` when that is set, else ``~/default_home``.
    ``resume`` is the command that resumes a session, with ``{session}`` for
    its id (and ``{path}`` for its file, where the agent takes a path).
    ``store`` names its store kinds in ``inspector.local.stores.STORES``;
    empty, one session is one file.
    """

    name: str
    label: str
    format: str
    env: str
    default_home: str
    sessions: str
    pattern: str
    resume: str
    # Files in the folder that are not resumable sessions of their own.
    skip_prefixes: tuple[str, ...] = ()
    skip_folders: tuple[str, ...] = ()
    store: str = ""

    def root(self, environ: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
        """The folder holding this agent's sessions on this machine."""
        configured = (os.environ if environ is None else environ).get(self.env)
        base = Path(configured) if configured else (home or Path.home()) / self.default_home
        return base / self.sessions if self.sessions else base

    def session_id(self, path: Path, meta_id: str | None = None) -> str:
        """The id the agent resumes this file under."""
        if meta_id:
            return meta_id
        if path.name == "context.jsonl":  # Kimi's newer layout: <session-id>/context.jsonl
            return path.parent.name
        return path.stem

    def resume_command(self, session: str, path: Path | None = None, cwd: str | None = None) -> str:
        command = self.resume.format(session=session, path=path or "")
        return f"cd {_quoted(cwd)} && {command}" if cwd else command


def _quoted(text: str) -> str:
    if text and all(c.isalnum() or c in "/._-+:@%" for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


AGENTS: tuple[Agent, ...] = (
    Agent(
        name="claude-code",
        label="Claude Code",
        format="claude-code",
        env="CLAUDE_CONFIG_DIR",
        default_home=".claude",
        sessions="projects",
        pattern="*/*.jsonl",
        resume="claude --resume {session}",
        skip_prefixes=("agent-",),
    ),
    Agent(
        name="codex",
        label="Codex",
        format="codex",
        env="CODEX_HOME",
        default_home=".codex",
        sessions="sessions",
        pattern="**/rollout-*.jsonl",
        resume="codex resume {session}",
    ),
    Agent(
        name="gemini",
        label="Gemini CLI",
        format="gemini",
        env="GEMINI_CLI_HOME",
        default_home=".gemini",
        sessions="tmp",
        pattern="*/chats/session-*.json",
        resume="gemini --resume {session}",
    ),
    Agent(
        name="kimi",
        label="Kimi CLI",
        format="openai-chat",
        env="KIMI_SHARE_DIR",
        default_home=".kimi",
        sessions="sessions",
        pattern="**/*.jsonl",
        resume="kimi --session {session}",
        skip_prefixes=("wire",),
    ),
    Agent(
        name="pi",
        label="pi",
        format="pi",
        env="PI_CODING_AGENT_DIR",
        default_home=".pi/agent",
        sessions="sessions",
        pattern="*/*.jsonl",
        resume="pi --session {path}",
    ),
    Agent(
        # sst/opencode: a session is its info file plus its message and part files
        # (inspector.local.opencode reads them as one); XDG_DATA_HOME moves the folder.
        name="opencode",
        label="OpenCode",
        format="opencode",
        env="XDG_DATA_HOME",
        default_home=".local/share",
        sessions="opencode/storage",
        pattern="session/*/ses_*.json",
        resume="opencode --session {session}",
        store="opencode",
    ),
)

BY_NAME = {agent.name: agent for agent in AGENTS}
BY_FORMAT = {agent.format: agent for agent in AGENTS if agent.format != "openai-chat"}

# The shapes whose repaired file a user puts back in the agent's own folder by hand
# (the download page says where): the agent finds a session there by its file's name.
IN_PLACE_FORMATS = ("claude-code", "codex")


def in_place_target(format: str, session: str, cwd: str, file_name: str) -> tuple[str, str] | None:
    """Where a repaired session of ``format`` goes so its agent resumes it: (name, path).

    The path is written from ``~`` with the agent's default folder; ``None``
    for a shape no agent resumes from a file it finds by name.
    """
    if format not in IN_PLACE_FORMATS:
        return None
    agent = BY_FORMAT[format]
    root = f"~/{agent.default_home}/{agent.sessions}"
    if format == "claude-code":
        name = f"{session}.jsonl" if session else file_name
        # Claude Code names a project's folder after its path, every other character a dash.
        folder = re.sub(r"[^A-Za-z0-9]", "-", cwd) if cwd else "<the project's folder>"
    else:  # Codex: rollouts by day
        name = file_name if file_name.startswith("rollout-") else f"rollout-{session}.jsonl"
        day = re.search(r"rollout-(\d{4})-(\d{2})-(\d{2})T", name)
        folder = "/".join(day.groups()) if day else "<year>/<month>/<day>"
    return name, f"{root}/{folder}/{name}"
