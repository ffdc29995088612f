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

import fnmatch
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Agent:
    """One agent: ``name`` is its id; ``format`` the shape (``inspector.formats``) it writes.

    Its sessions are the files matching ``pattern`` under ``home/sessions``,
    where ``home`` is ``$env`` when that is set, else ``~/default_home``.
    ``resume`` is the command that resumes a session, with ``{session}`` for
    its id (and ``{path}`` for its file, where the agent takes a path;
    ``{owner}`` for the name of the folder two above the file, where the
    agent names the sessions' owner so: OpenClaw's agent id). An empty ``env``
    is an agent no environment variable moves.
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
    # Names (``fnmatch`` patterns) of files in the folder that are not sessions.
    skip_names: tuple[str, ...] = ()
    # The session's id is its folder's name (one folder a session: Cline's tasks).
    id_from_folder: bool = False
    # More patterns of session files beside ``pattern`` (another kind of file, same folder).
    also: tuple[str, ...] = ()
    # What the file's name has before the id (``session_`` in Hermes's session_<id>.json).
    id_prefix: str = ""
    # The path under ``$env`` to the agent's home (Goose: $GOOSE_PATH_ROOT/data).
    env_sub: str = ""
    # Variables read after ``env``, each with the path under it to the agent's home.
    more_env: tuple[tuple[str, str], ...] = ()
    # The command that resumes a session of its database (a path ``<x>.db/<id>``), if other.
    db_resume: str = ""
    # A variable that stands for the user's home folder, under which ``default_home`` is.
    home_env: str = ""
    # Older names of ``default_home``, used (first found) where it does not exist yet.
    legacy_homes: tuple[str, ...] = ()
    # The file the agent holds beside a session while it runs it (``{stem}``, ``{name}``:
    # the session file's stem, name), naming its process as JSON ``{"pid": ...}``; a lock
    # whose process runs refuses a fix.
    lock: str = ""
    # A folder of the agent's home holding named profiles, each a home of its own whose
    # sessions are listed too where no variable names the home (Hermes: profiles/<name>),
    # and the command resuming a profile's session (``{profile}``: its name).
    profiles: str = ""
    profile_resume: str = ""
    # Named profiles kept as homes beside the default one, ``<default_home><this><name>``
    # in the same folder (OpenClaw's ``--profile <name>``: ~/.openclaw-<name>), listed too
    # where no variable names the state folder itself; ``profile_resume`` resumes them.
    sibling_profiles: str = ""
    # A variable whose value the agent appends to ``default_home``'s name as it is
    # (Hermes: $HERMES_DATA_DIR_SUFFIX, ``-dev`` for ~/.hermes-dev), where no variable names it.
    home_suffix_env: str = ""
    # An editor extension's: the editors it runs in, each (its folder, the command opening
    # it). A folder is under the base (``$env``, else ``~/default_home``), or under the
    # user's home where it starts ``~/`` (a remote server's); ``sessions`` is under each.
    # The first is ``root``; the others holding sessions are listed too; ``{editor}`` in
    # ``resume`` is the command of the editor whose folder holds the session.
    editors: tuple[tuple[str, str], ...] = ()
    # What a file the agent keeps beside a session ``<id>.jsonl`` ends with after the id
    # (``<id>.json``: Kiro's facts), holding that session's facts: no session of its own.
    facts: tuple[str, ...] = ()
    # Where the agent notes the folder a session was started in when its records do not
    # say: a JSON file (from the session file's folder) and its key (dotted: a field inside
    # another).
    cwd_noted: tuple[str, str] | tuple[()] = ()
    # The session's file is its folder's name and this (the other files matching ``pattern``
    # in that folder are its sub-agents': the Cline CLI's <id>/<id>.messages.json).
    named_after_folder: str = ""

    def root(self, environ: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
        """The folder holding this agent's sessions on this machine."""
        values = os.environ if environ is None else environ
        for name, sub in ((self.env, self.env_sub), *self.more_env):
            configured = values.get(name, "").strip() if name else ""
            if configured:
                base = Path(configured) / sub if sub else Path(configured)
                break
        else:
            moved = values.get(self.home_env, "").strip() if self.home_env else ""
            user = Path(moved) if moved else (home or Path.home())
            suffix = values.get(self.home_suffix_env, "") if self.home_suffix_env else ""
            base = user / (self.default_home + suffix.replace("\0", ""))
            if self.legacy_homes and not base.exists():
                older = (user / name for name in self.legacy_homes)
                base = next((folder for folder in older if folder.is_dir()), base)
        if self.editors:
            base = base / self.editors[0][0]
        return base / self.sessions if self.sessions else base

    def roots(
        self, environ: Mapping[str, str] | None = None, home: Path | None = None
    ) -> list[Path]:
        """Every folder holding this agent's sessions: ``root``, then each profile's."""
        first = self.root(environ, home)
        values = os.environ if environ is None else environ
        if self.sibling_profiles:
            return [first, *self._sibling_homes(values, home)]
        if self.editors:
            return [first, *self._other_editors(first, home)]
        if not self.profiles or any(values.get(n, "").strip() for n in self._variables()):
            return [first]
        folder = (first.parent if self.sessions else first) / self.profiles
        try:
            named = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:
            named = []
        return [first, *(p / self.sessions if self.sessions else p for p in named)]

    def _variables(self) -> tuple[str, ...]:
        return tuple(n for n in (self.env, *(n for n, _ in self.more_env), self.home_env) if n)

    def _other_editors(self, first: Path, home: Path | None) -> list[Path]:
        """The session folders of the other editors the extension runs in, where they are."""
        base = first.parents[len(Path(self.sessions).parts)]  # the base the first editor is in
        folders = [
            ((home or Path.home()) / folder[2:] if folder.startswith("~/") else base / folder)
            / self.sessions
            for folder, _ in self.editors[1:]
        ]
        return [folder for folder in folders if folder.is_dir()]

    def editor_of(self, path: Path | None) -> str:
        """The command opening the editor whose folder holds ``path`` (the first's if none)."""
        if not self.editors:
            return ""
        up = len(Path(self.sessions).parts) + len(Path(self.pattern).parts) - 1
        if path is not None and "**" not in self.pattern and len(path.parents) > up:
            holder = path.parents[up].parts
            for folder, command in self.editors:
                tail = Path(folder.removeprefix("~/")).parts
                if holder[-len(tail) :] == tail:
                    return command
        return self.editors[0][1]

    def _sibling_homes(self, values: Mapping[str, str], home: Path | None) -> list[Path]:
        """The session folders of the profiles beside the default home, by name."""
        if any(values.get(n, "").strip() for n in (self.env, *(n for n, _ in self.more_env))):
            return []  # a variable names the state folder: the agent reads that one only
        moved = values.get(self.home_env, "").strip() if self.home_env else ""
        folder = ((Path(moved) if moved else (home or Path.home())) / self.default_home).parent
        try:
            named = sorted(
                p for p in folder.iterdir() if self._sibling_profile(p.name) and p.is_dir()
            )
        except OSError:
            return []
        return [p / self.sessions if self.sessions else p for p in named]

    def _sibling_profile(self, name: str) -> str:
        """The profile a home folder of this name is, beside the default home ('' if none)."""
        prefix = Path(self.default_home).name + self.sibling_profiles
        rest = name[len(prefix) :] if name.startswith(prefix) else ""
        # The agent's own rule for a profile's name; "default" is the default home itself.
        return rest if _PROFILE_NAME.fullmatch(rest) and rest.lower() != "default" else ""

    def profile_of(self, path: Path | None) -> str:
        """The profile whose home holds ``path`` (``<profiles>/<name>/<folder>/<session>``)."""
        if self.sibling_profiles and path is not None and "**" not in self.pattern:
            # <home>/<sessions>/<pattern>: the home is as many folders up as those name
            up = len(Path(self.sessions).parts) + len(Path(self.pattern).parts) - 1
            return self._sibling_profile(path.parents[up].name) if len(path.parents) > up else ""
        if not self.profiles or path is None or len(path.parts) < 4:
            return ""
        return path.parts[-3] if path.parts[-4] == self.profiles else ""

    def lock_of(self, path: Path) -> Path | None:
        """The lock file the agent holds beside the session ``path`` while it runs it."""
        return (
            path.with_name(self.lock.format(stem=path.stem, name=path.name)) if self.lock else None
        )

    def session_id(self, path: Path, meta_id: str | None = None) -> str:
        """The id the agent resumes this file under."""
        if meta_id:
            return meta_id
        if path.name in _FOLDER_NAMED or self.id_from_folder:  # <session-id>/<its one file>
            return path.parent.name
        if path.name == "wire.jsonl" and path.parent.parent.name == "agents":
            return path.parents[2].name  # Kimi Code: <session-id>/agents/main/wire.jsonl
        return path.stem.removeprefix(self.id_prefix) if self.id_prefix else path.stem

    def is_named_after_folder(self, path: Path) -> bool:
        """Whether ``path`` is a session by its name (any name, unless ``named_after_folder``)."""
        suffix = self.named_after_folder
        return not suffix or path.name == path.parent.name + suffix

    def skips(self, name: str) -> bool:
        """Whether a file of this name in the folder is not one of the agent's sessions."""
        return name.startswith(self.skip_prefixes) or any(
            fnmatch.fnmatchcase(name, pattern) for pattern in self.skip_names
        )

    def resume_command(
        self, session: str, path: Path | None = None, cwd: str | None = None,
        template: str | None = None,
    ) -> str:  # fmt: skip
        """The command that resumes ``session``; ``template`` where its store's is another."""
        owner = path.parent.parent.name if path is not None else ""
        in_db = path is not None and path.parent.suffix == ".db" and bool(self.db_resume)
        profile = self.profile_of(path)
        chosen = self.profile_resume if profile else self.db_resume if in_db else self.resume
        template = template or chosen
        command = template.format(
            session=session, path=path or "", owner=owner or "main", profile=profile,
            editor=self.editor_of(path),
        )  # fmt: skip
        return f"cd {_quoted(cwd)} && {command}" if cwd else command


# A profile's name as OpenClaw allows it (src/cli/profile-utils.ts PROFILE_NAME_RE).
_PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")

# The file names of layouts where a session is a folder named by its id.
_FOLDER_NAMED = (
    "context.jsonl",  # Kimi's newer layout
    "events.jsonl",  # GitHub Copilot CLI
)


def _quoted(text: str) -> str:
    if text and all(c.isalnum() or c in "/._-+:@%" for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


# Where VS Code keeps its extensions' storage (Electron's appData): $XDG_CONFIG_HOME or
# ~/.config on Linux, ~/Library/Application Support on macOS (which no variable moves).
_VSCODE_ENV = "" if sys.platform == "darwin" else "XDG_CONFIG_HOME"
_VSCODE_HOME = "Library/Application Support" if sys.platform == "darwin" else ".config"

# The editors a VS Code extension runs in, by their folder in appData (and the folder
# their remote server keeps on the machine it runs on), with the command opening each.
_VSCODE_EDITORS = (
    ("Code", "code"),
    ("Code - Insiders", "code-insiders"),
    ("VSCodium", "codium"),
    ("Cursor", "cursor"),
    ("Windsurf", "windsurf"),
    ("~/.vscode-server/data", "code"),
    ("~/.cursor-server/data", "cursor"),
)

# Where Rust's dirs::data_local_dir() is (Amazon Q's and Kiro CLI's data folder):
# $XDG_DATA_HOME or ~/.local/share on Linux, ~/Library/Application Support on macOS.
_DATA_ENV = "" if sys.platform == "darwin" else "XDG_DATA_HOME"
_DATA_HOME = "Library/Application Support" if sys.platform == "darwin" else ".local/share"

# A Cline / Roo Code task's other files: the UI's log and the task's metadata.
_CLINE_TASK_FILES = ("ui_messages.json", "task_metadata.json")

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
        # wire.jsonl is its UI log; context_<n>.jsonl the copies /clear and a revert rotate
        # out (utils/path.py next_available_rotation); subagents/ holds sub-agents' own.
        skip_prefixes=("wire", "context_"),
        skip_folders=("subagents",),
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
    Agent(
        # Kilo-Org/kilocode, OpenCode's fork (kilocli, issue 27): OpenCode's session, message
        # and part tables in kilo.db in its data folder, $XDG_DATA_HOME/kilo (packages/opencode/
        # src/global/index.ts app "kilo"); $KILO_DB names another database, a dev channel's is
        # opencode-<channel>.db there (packages/core/src/database/database.ts). Read and fixed
        # as OpenCode's (opencode_db.KILO lists them); `kilo --session <id>` (-s) resumes one
        # (packages/opencode/src/cli/cmd/tui/thread.ts).
        name="kilo",
        label="Kilo CLI",
        format="opencode",
        env="XDG_DATA_HOME",
        default_home=".local/share",
        sessions="kilo/storage",
        pattern="session/*/ses_*.json",
        resume="kilo --session {session}",
        store="kilo",
    ),
    # --- agents-a (issue 27): OpenClaw, Cursor, Cline / Roo Code ---
    Agent(
        # openclaw/openclaw (src/config/paths.ts, sessions/paths.ts): pi's session format, one
        # file a session under agents/<agentId>/sessions/; sessions.json is the key index,
        # <id>.checkpoint.<uuid>.jsonl a copy kept before a compaction, *.trajectory.jsonl a
        # run's trace, <id>.jsonl.reset.<time> / .deleted.<time> archived sessions.
        # Its state folder (src/config/paths.ts resolveStateDir): $OPENCLAW_STATE_DIR (or the
        # older $CLAWDBOT_STATE_DIR), else .openclaw in the home folder, which $OPENCLAW_HOME
        # moves (src/infra/home-dir.ts), else the first of its older names found there.
        name="openclaw",
        label="OpenClaw",
        format="pi",
        env="OPENCLAW_STATE_DIR",
        more_env=(("CLAWDBOT_STATE_DIR", ""),),
        home_env="OPENCLAW_HOME",
        legacy_homes=(".clawdbot", ".moldbot", ".moltbot"),
        default_home=".openclaw",
        sessions="agents",
        pattern="*/sessions/*.jsonl",
        resume="openclaw agent --agent {owner} --session-id {session} --message continue",
        # src/cli/profile.ts: `--profile <name>` (`--dev`: the profile "dev") makes the state
        # folder ~/.openclaw-<name> before anything runs, unless $OPENCLAW_STATE_DIR is set.
        sibling_profiles="-",
        profile_resume=(
            "openclaw --profile {profile} agent --agent {owner} --session-id {session}"
            " --message continue"
        ),
        skip_names=("sessions.json", "*.trajectory.jsonl", "*.checkpoint.*.jsonl"),
        # src/agents/session-write-lock.ts: <session>.jsonl.lock ({"pid", "createdAt"}) while
        # a run writes the session.
        lock="{name}.lock",
    ),
    Agent(
        # Cursor's agent transcripts: projects/<workspace>/agent-transcripts/<id>/<id>.jsonl
        # (older: agent-transcripts/<id>.jsonl); CURSOR_CONFIG_DIR moves ~/.cursor.
        name="cursor",
        label="Cursor",
        format="cursor",
        env="CURSOR_CONFIG_DIR",
        default_home=".cursor",
        sessions="projects",
        pattern="*/agent-transcripts/**/*.jsonl",
        resume="cursor-agent --resume {session}",
        skip_folders=("subagents",),
    ),
    Agent(
        # The Cline CLI: $CLINE_DIR (~/.cline)/data/tasks/<taskId>/api_conversation_history.json.
        name="cline",
        label="Cline CLI",
        format="cline",
        env="CLINE_DIR",
        default_home=".cline",
        sessions="data/tasks",
        pattern="*/api_conversation_history.json",
        resume="cline task open {session}",
        id_from_folder=True,
        skip_names=_CLINE_TASK_FILES,
    ),
    Agent(
        # The Cline CLI built on @cline/core (cline/cline apps/cli, sdk/packages/shared
        # storage/paths.ts): $CLINE_SESSION_DATA_DIR, else $CLINE_DATA_DIR/sessions, else
        # $CLINE_DIR (~/.cline)/data/sessions holds <id>/<id>.messages.json (beside its
        # manifest <id>.json and its sub-agents' <agent>.messages.json); `cline --id` resumes.
        name="cline-cli",
        label="Cline CLI (sessions)",
        format="cline",
        env="CLINE_SESSION_DATA_DIR",
        more_env=(("CLINE_DATA_DIR", "sessions"), ("CLINE_DIR", "data/sessions")),
        default_home=".cline/data/sessions",
        sessions="",
        pattern="*/*.messages.json",
        resume="cline --id {session}",
        id_from_folder=True,
        named_after_folder=".messages.json",
        skip_names=("*.hooks.jsonl",),
    ),
    Agent(
        # The Cline extension: VS Code's globalStorage (Electron's appData: $XDG_CONFIG_HOME
        # on Linux). A task is resumed from Cline's History in VS Code.
        name="cline-vscode",
        label="Cline (VS Code)",
        format="cline",
        env=_VSCODE_ENV,
        default_home=_VSCODE_HOME,
        sessions="User/globalStorage/saoudrizwan.claude-dev/tasks",
        editors=_VSCODE_EDITORS,
        pattern="*/api_conversation_history.json",
        resume="{editor} .  # then Cline > History > task {session}",
        id_from_folder=True,
        skip_names=_CLINE_TASK_FILES,
    ),
    Agent(
        name="roo-code",
        label="Roo Code (VS Code)",
        format="cline",
        env=_VSCODE_ENV,
        default_home=_VSCODE_HOME,
        sessions="User/globalStorage/rooveterinaryinc.roo-cline/tasks",
        editors=_VSCODE_EDITORS,
        pattern="*/api_conversation_history.json",
        resume="{editor} .  # then Roo Code > History > task {session}",
        id_from_folder=True,
        skip_names=_CLINE_TASK_FILES,
    ),
    Agent(
        # Kilo Code's extension (a fork of Roo Code): the same task folders as Cline's.
        name="kilo-code",
        label="Kilo Code (VS Code)",
        format="cline",
        env=_VSCODE_ENV,
        default_home=_VSCODE_HOME,
        sessions="User/globalStorage/kilocode.kilo-code/tasks",
        editors=_VSCODE_EDITORS,
        pattern="*/api_conversation_history.json",
        resume="{editor} .  # then Kilo Code > History > task {session}",
        id_from_folder=True,
        skip_names=_CLINE_TASK_FILES,
    ),
    Agent(
        # NousResearch/hermes-agent: $HERMES_HOME (~/.hermes)/sessions/ holds the CLI's session
        # logs (session_<id>.json, rewritten after each step) and the gateway's transcripts
        # (<id>.jsonl) beside sessions.json, the gateway's index. `hermes --resume` reads the
        # session from $HERMES_HOME/state.db: where it exists, hermes_db lists and fixes its
        # rows (agents-c) and the JSON logs, copies Hermes does not read back, are not listed.
        name="hermes",
        label="Hermes Agent",
        format="hermes",
        env="HERMES_HOME",
        default_home=".hermes",
        sessions="sessions",
        pattern="session_*.json",
        also=("*.jsonl",),
        resume="hermes --resume {session}",
        id_prefix="session_",
        store="hermes",
        db_resume="hermes --resume {session}",
        # A named profile is a home of its own, $HERMES_HOME/profiles/<name> (hermes_constants
        # named_profile_home); `hermes -p <name>` sets HERMES_HOME to it before anything runs.
        profiles="profiles",
        profile_resume="hermes -p {profile} --resume {session}",
        # hermes_constants._get_platform_default_hermes_home: ~/.hermes + $HERMES_DATA_DIR_SUFFIX.
        home_suffix_env="HERMES_DATA_DIR_SUFFIX",
    ),
    Agent(
        # block/goose: its data folder is $GOOSE_PATH_ROOT/data, else $XDG_DATA_HOME/goose
        # (~/.local/share/goose); versions before its database kept sessions/<name>.jsonl,
        # resumed by name. Newer ones keep sessions/sessions.db (goose_db.py reads it).
        name="goose",
        label="Goose",
        format="goose",
        env="GOOSE_PATH_ROOT",
        env_sub="data",
        more_env=(("XDG_DATA_HOME", "goose"),),
        default_home=".local/share/goose",
        sessions="sessions",
        pattern="*.jsonl",
        resume="goose session --resume --name {session}",
        db_resume="goose session --resume --session-id {session}",
        store="goose",
    ),
    Agent(
        # Kiro CLI (closed source): ~/.kiro/sessions/cli/<session-id>.jsonl, its facts (cwd,
        # ...) in the <session-id>.json beside it and, while a kiro-cli runs it, a
        # <session-id>.lock naming that process ({"pid", "started_at"}). $KIRO_HOME stands
        # for ~/.kiro (as the tools that launch Kiro in a folder of their own set it); Kiro's
        # docs resume one session by id with `kiro-cli chat --resume-id <id>`, from any folder.
        name="kiro",
        label="Kiro CLI",
        format="kiro",
        env="KIRO_HOME",
        default_home=".kiro",
        sessions="sessions/cli",
        pattern="*.jsonl",
        resume="kiro-cli chat --resume-id {session}",
        lock="{stem}.lock",
        facts=(".json",),
    ),
    # --- end agents-a ---
    # --- kirodb (issue 27): Amazon Q Developer CLI and Kiro CLI's data.sqlite3 ---
    Agent(
        # aws/amazon-q-developer-cli (chat-cli util/paths.rs database_path_static): Rust's
        # dirs::data_local_dir()/amazon-q/data.sqlite3 ($XDG_DATA_HOME or ~/.local/share on
        # Linux, ~/Library/Application Support on macOS); a conversation per folder in its
        # conversations table (q_db.py), resumed by `q chat --resume` in that folder.
        name="amazon-q",
        label="Amazon Q Developer CLI",
        format="q-chat",
        env=_DATA_ENV,
        default_home=_DATA_HOME,
        sessions="amazon-q",
        pattern="data.sqlite3/*",  # none: the database lists its conversations (q_db)
        resume="q chat --resume",
        store="q",
    ),
    Agent(
        # Kiro CLI's own copy of Q's database: dirs::data_local_dir()/kiro-cli/data.sqlite3,
        # its conversations in conversations_v2 since December 2025 (several a folder);
        # `kiro-cli chat --resume-id <conversation_id>` in the folder resumes that one.
        name="kiro-db",
        label="Kiro CLI (data.sqlite3)",
        format="q-chat",
        env=_DATA_ENV,
        default_home=_DATA_HOME,
        sessions="kiro-cli",
        pattern="data.sqlite3/*",
        resume="kiro-cli chat --resume-id {session}",
        store="q",
    ),
    # --- end kirodb ---
    # --- agents-b (issue 27): Copilot CLI, Qwen Code, Kimi Code, Factory Droid ---
    Agent(
        # github/copilot-cli: COPILOT_HOME (default ~/.copilot) holds session-state/<id>/
        # events.jsonl beside workspace.yaml and checkpoints/; --resume takes the folder's id.
        name="copilot",
        label="GitHub Copilot CLI",
        format="copilot",
        env="COPILOT_HOME",
        default_home=".copilot",
        sessions="session-state",
        pattern="*/events.jsonl",
        resume="copilot --resume={session}",
    ),
    Agent(
        # QwenLM/qwen-code: its runtime folder ($QWEN_RUNTIME_DIR, else ~/.qwen) holds
        # projects/<project>/chats/<session-id>.jsonl; qwen --resume takes the id.
        name="qwen",
        label="Qwen Code",
        format="qwen",
        env="QWEN_RUNTIME_DIR",
        default_home=".qwen",
        sessions="projects",
        pattern="*/chats/*.jsonl",
        resume="qwen --resume {session}",
    ),
    Agent(
        # MoonshotAI/kimi-code (the TypeScript Kimi Code, which replaced the Python Kimi
        # CLI above): $KIMI_CODE_HOME (default ~/.kimi-code) holds
        # sessions/<work-dir bucket>/<session-id>/agents/<agent>/wire.jsonl; the main
        # agent's is the conversation `kimi --session <id>` resumes, from the folder the
        # session was made in (<session-id>/state.json's workDir; it refuses another).
        name="kimi-code",
        label="Kimi Code",
        format="kimi-code",
        env="KIMI_CODE_HOME",
        default_home=".kimi-code",
        sessions="sessions",
        pattern="*/*/agents/main/wire.jsonl",
        resume="kimi --session {session}",
        cwd_noted=("../../state.json", "workDir"),
    ),
    Agent(
        # Factory's droid CLI (closed source): ~/.factory/sessions/<cwd, each / a dash>/
        # <session-id>.jsonl beside <session-id>.settings.json. Its bundle (@factory/cli
        # 0.225) takes the home folder from $FACTORY_HOME_OVERRIDE before $HOME, and still
        # resumes a session kept directly in sessions/ (older builds wrote them there).
        name="droid",
        label="Factory Droid",
        format="droid",
        env="",
        home_env="FACTORY_HOME_OVERRIDE",
        default_home=".factory",
        sessions="sessions",
        pattern="*/*.jsonl",
        also=("*.jsonl",),
        resume="droid --resume {session}",
        facts=(".settings.json",),
    ),
    # --- end agents-b ---
    # --- agents-c (issue 27): OpenHands ---
    Agent(
        # All-Hands-AI/OpenHands: its file store (file_store_path, default ~/.openhands, moved
        # by FILE_STORE_PATH as core/config/utils.py reads each setting from the environment)
        # holds sessions/<sid>/events/<id>.json; `openhands --conversation <sid>` continues one.
        name="openhands",
        label="OpenHands",
        format="openhands",
        env="FILE_STORE_PATH",
        default_home=".openhands",
        sessions="sessions",
        pattern="*/events",
        resume="openhands --conversation {session}",
        id_from_folder=True,
        store="openhands",
    ),
    Agent(
        # OpenHands/OpenHands-CLI (locations.py get_conversations_dir): the CLI's conversations,
        # which the V1 SDK's LocalConversation keeps in <dir>/<id hex>/ (base_state.json and
        # events/event-<index>-<event id>.json); <dir> is $OPENHANDS_CONVERSATIONS_DIR, else
        # $OPENHANDS_PERSISTENCE_DIR/conversations, else ~/.openhands/conversations.
        # `openhands --resume <id>` (argparsers/util.py add_resume_args) continues one, in the
        # folder it was started in: the CLI gives the resumed conversation the current folder
        # as its workspace (setup.py get_work_dir), the old one is base_state.json's.
        name="openhands-cli",
        label="OpenHands CLI",
        format="openhands-cli",
        env="OPENHANDS_CONVERSATIONS_DIR",
        more_env=(("OPENHANDS_PERSISTENCE_DIR", "conversations"),),
        default_home=".openhands/conversations",
        sessions="",
        pattern="*/events",
        resume="openhands --resume {session}",
        id_from_folder=True,
        store="openhands-cli",
        cwd_noted=("base_state.json", "workspace.working_dir"),
    ),
    # --- end agents-c ---
)

BY_NAME = {agent.name: agent for agent in AGENTS}
_NOT_SESSIONS = tuple(dict.fromkeys(name for agent in AGENTS for name in agent.skip_names))


def never_a_session(name: str) -> bool:
    """A file name some agent keeps beside its sessions that is none (for a watched folder)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _NOT_SESSIONS)


_FACTS = tuple(dict.fromkeys(suffix for agent in AGENTS for suffix in agent.facts))


def facts_of_a_session(path: Path) -> bool:
    """A file an agent keeps beside the session of its name, holding its facts, not a session.

    Kiro's ``<id>.json`` beside ``<id>.jsonl``, Droid's ``<id>.settings.json``: known by the
    session file beside it, so a ``.json`` session of another agent is never taken for one.
    """
    name = path.name
    return any(
        name.endswith(suffix)
        and len(name) > len(suffix)
        and path.with_name(name[: -len(suffix)] + ".jsonl").is_file()
        for suffix in _FACTS
    )


# The agent each shape is first written by (OpenClaw writes pi's, Roo Code Cline's).
BY_FORMAT: dict[str, Agent] = {}
for _agent in AGENTS:
    if _agent.format != "openai-chat":
        BY_FORMAT.setdefault(_agent.format, _agent)

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
