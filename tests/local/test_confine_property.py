"""For every agent ``fix`` supports: crafted stores, and a snapshot of the whole tree around them.

Each example builds, in a fresh temporary tree, one agent's session store
(broken, so that ``fix`` has something to write) next to a folder
``outside/`` that nothing may touch, crafts it (hostile ids and file names,
links pointing outside, ids that disagree with their file's name, a backup
note that points outside...), and runs ``fix`` and then ``undo``. Before and
after each, every path of the tree (its type, bytes, mode, link target) is
compared. What must hold:

- nothing outside the session's store and its backup folder changed;
- nothing was removed or rewritten unless its bytes are in a kept backup;
- a refused (or clean) run changed nothing at all;
- a crafted store is refused, its reason naming the crafted file;
- ``undo`` puts back every byte outside the backup folder;
- one session file: nothing changes but it and its backups beside it (not the files its
  agent keeps next to it: Cline's task files, the Cline CLI's manifest and sub-agents,
  Kiro's facts, Droid's settings, Copilot's workspace, OpenClaw's index and checkpoints);
- the agent running the session (its lock held, whether or not fix is told whose the
  file is) or writing it while fix works (``changed``) makes fix refuse, changing nothing;
- a record of a kind the reader does not know is in the fixed file byte for byte, or the
  reader refuses the file.
"""

from __future__ import annotations

import hashlib
import io
import os
import secrets
import shutil
import sqlite3
import stat
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from inspector.local import fix, goose_db, hermes_db, opencode, opencode_v2, openhands_cli, store
from inspector.local.agents import BY_NAME, Agent
from inspector.local.confine import Refused, absolute, safe_name
from inspector.local.files import BACKUPS
from inspector.local.rowdb import RowDatabase
from inspector.watch.views import IN_PLACE_BACKUPS
from tests.local.conftest import (
    BROKEN_CLAUDE,
    BROKEN_CODEX,
    BROKEN_PI,
    CLINE_BROKEN,
    CURSOR_HEALTHY,
    HEALTHY_KIMI,
    OPENCODE_BROKEN,
    Node,
    changed,
    make_database,
    opencode_records,
    place_store,
    snapshot,
)
from tests.local.test_goose_db import SCHEMA as GOOSE_SCHEMA
from tests.local.test_goose_db import _insert as goose_insert
from tests.local.test_hermes_db import LOG as HERMES_LOG
from tests.local.test_hermes_db import SECOND as HERMES_SECOND
from tests.local.test_hermes_db import SID as HERMES_SID
from tests.local.test_hermes_db import make_db as make_hermes_db
from tests.local.test_hermes_db import wal_database
from tests.local.test_opencode_v2 import ASSISTANT as V2_ASSISTANT
from tests.local.test_opencode_v2 import SESSION as V2_SESSION
from tests.local.test_opencode_v2 import SESSIONS as V2_SESSIONS
from tests.local.test_opencode_v2 import write_v2_tables
from tests.local.test_openhands_cli import CRASHED as OHCLI_CRASHED
from tests.local.test_openhands_cli import LEGACY as OHCLI_LEGACY
from tests.local.test_openhands_cli import place as place_conversation
from tests.testdata import CORPUS, files, read

AGE = 3600.0
CUT_CALL = (
    b'{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "tool_9",'
    b' "function": {"name": "Shell", "arguments": "{\\"command\\": \\"ls\\"}"}}]}\n'
)


def _gemini_broken() -> bytes:
    """A Gemini CLI session whose later reply repeats the earlier call's id (ID-1)."""
    doc = orjson.loads(read(CORPUS / "gemini" / "kvsankar-agent-history__gemini_cli_golden.json"))
    call = doc["messages"][1]["toolCalls"][0]
    doc["messages"][3]["toolCalls"] = [dict(call)]
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)


# One broken session file of each one-file agent: (where it goes under the home, its bytes).
ONE_FILE: dict[str, tuple[str, Callable[[], bytes]]] = {
    "claude-code": (
        f".claude/projects/-work-app/{BROKEN_CLAUDE['4c-02af2759b6']}.jsonl",
        lambda: read(files(CORPUS / "claude-code" / "broken", "*4c-02af2759b6*")[0]),
    ),
    "codex": (
        ".codex/sessions/2026/02/23/rollout-2026-02-23T13-19-38-x.jsonl",
        lambda: read(CORPUS / "codex" / next(iter(BROKEN_CODEX))),
    ),
    "gemini": (".gemini/tmp/0123abcd/chats/session-2026-01-01T10-00-0000.json", _gemini_broken),
    "kimi": (
        ".kimi/sessions/5d41402abc4b2a76/531d195b.jsonl",
        lambda: read(CORPUS / "openai-chat" / HEALTHY_KIMI) + CUT_CALL,
    ),
    "pi": (
        ".pi/agent/sessions/--work-app--/2025-11-20T10-00-00-000Z_x.jsonl",
        lambda: read(CORPUS / "pi" / BROKEN_PI),
    ),
    # --- agents-b (issue 27) ---
    "copilot": (
        ".copilot/session-state/00000000-0000-4000-8000-000000000003/events.jsonl",
        lambda: read(CORPUS / "copilot" / "derived__cadra-crashed-mid-tool.events.jsonl"),
    ),
    "qwen": (
        ".qwen/projects/-home-dev-app/chats/6f1c2a9e-3b7d-4c1e-9a55-0d2f7e8b4c31.jsonl",
        lambda: read(CORPUS / "qwen" / "derived__qwen-writer-crashed.jsonl"),
    ),
    "kimi-code": (
        ".kimi-code/sessions/3f0a9c2e/9b1d7e40/agents/main/wire.jsonl",
        lambda: read(
            CORPUS / "kimi-code" / "derived__agent-core-basic-test__crashed-in-tool.wire.jsonl"
        ),
    ),
    "droid": (
        ".factory/sessions/-work-app/699d3bc5-08dc-40c3-8ea6-febaebdecbaa.jsonl",
        lambda: read(CORPUS / "droid" / "derived__zirv-crashed-in-tool.jsonl"),
    ),
    # --- end agents-b ---
    # --- agents-a (issue 27): the one-file agents of that branch ---
    "openclaw": (
        ".openclaw/agents/main/sessions/8555a0a4-0b79-459d-939c-e17cdbbf4fe2.jsonl",
        lambda: read(
            CORPUS
            / "pi"
            / "openclaw-openclaw__8555a0a4-0b79-459d-939c-e17cdbbf4fe2.cut-after-call.jsonl"
        ),
    ),
    "hermes": (
        ".hermes/sessions/session_20260214_093012_a1b2c3.json",
        lambda: read(
            CORPUS / "hermes" / "derived__session_20260214_093012_a1b2c3.cut-after-calls.json"
        ),
    ),
    "goose": (
        ".local/share/goose/sessions/20250929_140310.jsonl",
        lambda: read(CORPUS / "goose" / "derived__20250929_140310.cut-after-calls.jsonl"),
    ),
    "kiro": (
        ".kiro/sessions/cli/6110.jsonl",
        lambda: read(CORPUS / "kiro" / "derived__kiro-cli-session.issue-6110.jsonl"),
    ),
    # --- end agents-a ---
    # --- confine: the stores fix writes that were not here yet ---
    "cline": (
        ".cline/data/tasks/1769053680585/api_conversation_history.json",
        lambda: read(CORPUS / "cline" / CLINE_BROKEN),
    ),
    "cline-vscode": (
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1769053680585/"
        "api_conversation_history.json",
        lambda: read(CORPUS / "cline" / CLINE_BROKEN),
    ),
    "roo-code": (
        ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/1769053680585/"
        "api_conversation_history.json",
        lambda: read(CORPUS / "cline" / CLINE_BROKEN),
    ),
    "cline-cli": (
        ".cline/data/sessions/fixture-success-01/fixture-success-01.messages.json",
        lambda: read(
            CORPUS / "cline" / "derived__cline-sdk-success__crashed-in-tool.messages.json"
        ),
    ),
    # Cursor's mirror never writes a call's result, so no call of it reads as unanswered:
    # never broken, never written (NEVER_BROKEN), however it is crafted.
    "cursor": (
        ".cursor/projects/home-user-app/agent-transcripts/5f0c2a7e-1b3d-4e5f-9a8b-7c6d5e4f3a2b/"
        "5f0c2a7e-1b3d-4e5f-9a8b-7c6d5e4f3a2b.jsonl",
        lambda: read(CORPUS / "cursor" / CURSOR_HEALTHY),
    ),
    "hermes-profile": (  # `hermes -p work`: a named profile is a home of its own
        ".hermes/profiles/work/sessions/session_20260214_093012_a1b2c3.json",
        lambda: read(
            CORPUS / "hermes" / "derived__session_20260214_093012_a1b2c3.cut-after-calls.json"
        ),
    ),
    "droid-flat": (  # older builds kept a session directly in sessions/, droid still resumes it
        ".factory/sessions/699d3bc5-08dc-40c3-8ea6-febaebdecbaa.jsonl",
        lambda: read(CORPUS / "droid" / "derived__zirv-crashed-in-tool.jsonl"),
    ),
    "goose-export": (  # `goose session export --format json`: wherever the user put it
        "exports/20250929_1.json",
        lambda: read(CORPUS / "goose" / "derived__20250929_1.export.cut-after-calls.json"),
    ),
    # --- end confine ---
}
# The agent whose session each entry is, as ``fix`` is told it (``sessions.agent_for``).
AGENT_OF: dict[str, str | None] = {
    "hermes-profile": "hermes",
    "droid-flat": "droid",
    "goose-export": None,  # in no agent's folder: fix reads it by its shape alone
}
# What each agent keeps beside a session (from the session's folder): never fix's to touch.
SIBLINGS: dict[str, tuple[str, ...]] = {
    "cline": ("ui_messages.json", "task_metadata.json"),
    "cline-vscode": ("ui_messages.json", "task_metadata.json"),
    "roo-code": ("ui_messages.json", "task_metadata.json"),
    "cline-cli": (
        "{stem_id}.json",  # the manifest
        "reviewer.messages.json",  # a sub-agent's messages
        "{stem_id}.hooks.jsonl",
    ),
    "kiro": ("{stem}.json",),
    "droid": ("{stem}.settings.json",),
    "droid-flat": ("{stem}.settings.json",),
    "copilot": ("workspace.yaml", "checkpoints/index.md"),
    "openclaw": ("sessions.json", "{stem}.checkpoint.9e8d7c6b.jsonl", "{stem}.trajectory.jsonl"),
    "hermes": ("sessions.json", "20260214_093012_a1b2c3.jsonl"),
    "hermes-profile": ("sessions.json",),
    "kimi-code": ("../../state.json",),
    "claude-code": ("agent-1a2b3c4d.jsonl",),
}


def agent_of(key: str) -> Agent | None:
    name = AGENT_OF.get(key, key)
    return BY_NAME[name] if name is not None else None


# Stores whose sessions never need repair (see "cursor" above): fix leaves them as they are.
NEVER_BROKEN = ("cursor",)


_CACHE: dict[str, bytes] = {}


def one_file_bytes(agent: str) -> bytes:
    if agent not in _CACHE:
        _CACHE[agent] = ONE_FILE[agent][1]()
    return _CACHE[agent]


# The message with five parts, and the running tool part the repair rewrites.
MESSAGE = "msg_19b2e4f1a579ujYZpzhDLY7uje"
RUNNING_MESSAGE = "msg_19b2e4f1d4e78IyFVGWCN0e7LV"
RUNNING_PART = "prt_19b2e4f1da60aWe9R6yqmufenv"

# Names and ids an attacker writes: climbing, absolute, with separators, odd but legal.
HOSTILE = st.one_of(
    st.sampled_from(
        [
            "../../../OUTSIDE/PWNED_MSG",
            "../outside/x",
            "..",
            ".",
            "",
            "/etc/passwd",
            "/tmp/x",
            "a/b",
            "a\\b",
            "msg_x/../../y",
            "msg_\u0000x",
            " msg_1",
            "msg_ok.json",
            "-rf",
            "msg_" + "a" * 300,
        ]
    ),
    st.text(alphabet="./\\ab_-~ \u00e9\u0000", min_size=1, max_size=12),
)
# Names a file can have on disk: no separator, no NUL, not "." or "..".
HOSTILE_FILE_NAME = st.text(alphabet=".ab_- ~\u00e9\\+", min_size=1, max_size=12).filter(
    lambda n: n not in (".", "..") and not n.startswith(("msg_", "prt_", "ses_"))
)


@dataclass
class Case:
    tree: Path
    session: Path  # what fix is given
    allowed: list[Path]  # the store and its backup folder: the only places that may change
    backup: Path  # where backups are kept
    crafted: str = ""  # a file or name the refusal must name; "" if the store is not crafted
    undo_note: bool = False  # craft the backup note before undo
    db: Path | None = None
    outside_files: dict[Path, bytes] = field(default_factory=dict)
    # Run while fix runs, between its read and its write (someone else writing the store).
    during: Callable[[], None] | None = None
    # The tree as ``during`` left it: what a run refused after it must still be.
    rebased: dict[Path, Node] | None = None
    # What ``during`` runs after: (the object, the name of its function that plans the write).
    during_after: tuple[object, str] = (opencode_v2.Database, "plan")
    agent: Agent | None = None  # the agent fix is told the session is of
    # One session file: the only file that may change (fix's backups of it beside), or None.
    exact: Path | None = None
    # A record of a kind no reader knows: a fixed file must still hold it, byte for byte.
    kept_line: bytes = b""
    # The backup folder fix is given (Repair in place's inside a watched folder), if any.
    backup_dir: Path | None = None


def _age(path: Path) -> None:
    stamp = time.time() - AGE
    os.utime(path, (stamp, stamp), follow_symlinks=False)


def _outside(tree: Path) -> Path:
    outside = tree / "outside"
    (outside / "OUTSIDE").mkdir(parents=True)
    (outside / "victim.txt").write_bytes(b"not yours")
    return outside


def _unknown_record(agent: str) -> bytes:
    """A record of a kind the agent's reader has never seen (a newer version's event)."""
    if agent == "kiro":
        value: dict[str, object] = {"version": "v1", "kind": "FutureKind", "data": {"k": 1}}
    else:
        value = {"type": "future.event", "data": {"kept": "byte for byte", "n": 1}}
    return orjson.dumps(value) + b"\n"


SESSION_ID_KEYS = ("sessionId", "session_id", "sessionID")


def _with_meta_id(data: bytes, name: str) -> bytes:
    """``data`` with every session id written inside it made ``name`` (ids steer no write)."""

    def renamed(value: object) -> object:
        if isinstance(value, dict):
            return {
                k: name if k in SESSION_ID_KEYS and isinstance(v, str) else renamed(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [renamed(v) for v in value]
        return value

    try:
        return orjson.dumps(renamed(orjson.loads(data)), option=orjson.OPT_INDENT_2)
    except orjson.JSONDecodeError:  # JSON Lines: a record a line
        lines = [orjson.dumps(renamed(orjson.loads(line))) for line in data.splitlines() if line]
        return b"\n".join(lines) + b"\n"


def one_file_case(tree: Path, agent: str, craft: str, now: float, name: str = "") -> Case:
    outside = _outside(tree)
    relative, _ = ONE_FILE[agent]
    path = tree / "home" / relative
    path.parent.mkdir(parents=True)
    data = one_file_bytes(agent)
    case = Case(tree, path, [path.parent], path.parent, agent=agent_of(agent), exact=path)
    case.during_after = (store, "repair_of")
    for n, sibling in enumerate(SIBLINGS.get(agent, ())):
        stem_id = path.name.removesuffix(".messages.json")
        beside = path.parent / sibling.format(stem=path.stem, stem_id=stem_id)
        beside.parent.mkdir(parents=True, exist_ok=True)
        beside.write_bytes(b'{"sibling": %d, "of": "the agent, not fix"}\n' % n)
        _age(beside)
    if craft == "unknown-record":  # after the first record: a reader must keep it or refuse
        first, _, rest = data.partition(b"\n")
        case.kept_line = _unknown_record(agent)
        data = first + b"\n" + case.kept_line + rest
    elif craft == "meta-id":  # the session's id as its records write it, hostile
        data = _with_meta_id(data, name)
    if craft == "file-link":  # the session file is a link to a file outside
        (outside / "session.jsonl").write_bytes(data)
        path.symlink_to(outside / "session.jsonl")
        case.crafted = str(path)
    elif craft == "folder-link":  # the session's folder is a link: its real place is the store
        real = outside / "real-folder"
        path.parent.rename(real)
        (real / path.name).write_bytes(data)
        _age(real / path.name)
        path.parent.symlink_to(real)
        case.allowed, case.backup, case.exact = [real], real, real / path.name
    elif craft == "backup-link":  # a link planted under the name fix's backup will have
        path.write_bytes(data)
        stamp = datetime.fromtimestamp(now, UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path.with_name(f"{path.name}{fix.BACKUP_MARK}{stamp}").symlink_to(outside / "victim.txt")
        path.with_name(f"{path.name}{fix.BACKUP_MARK}{stamp}-1").symlink_to(outside / "gone")
    elif craft == "temp-link":  # a link planted under the name of a temporary file
        path.write_bytes(data)
        planted = path.with_name(f".{path.name}{fix._TEMP_MARK}{os.getpid()}.tmp")
        planted.symlink_to(outside / "victim.txt")
        case.crafted = str(planted)
    elif craft in ("lock", "lock-unknown-agent"):  # the agent runs the session now
        path.write_bytes(data)
        owner = BY_NAME[AGENT_OF.get(agent, agent) or agent]
        lock = owner.lock_of(path)
        assert lock is not None
        lock.write_bytes(orjson.dumps({"pid": os.getppid(), "started_at": "2026-12-04T18:00Z"}))
        _age(lock)
        case.crafted = lock.name
        if craft == "lock-unknown-agent":  # a file fix finds in no agent's folder
            case.agent = None
    elif craft == "changed":  # the agent appends to the session while fix works on it
        path.write_bytes(data)
        case.during = lambda: _append(path, b"\n")
    else:
        path.write_bytes(data)
    if path.exists() and not path.is_symlink():
        _age(path)
    return case


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def _plain(name: str) -> bool:
    try:
        safe_name(name)
    except Refused:
        return False
    return True


def _write_record(path: Path, value: object) -> None:
    path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
    _age(path)


def storage_case(tree: Path, craft: str, name: str) -> Case:
    outside = _outside(tree)
    data = tree / "home" / ".local" / "share" / "opencode"
    storage = data / "storage"
    path = place_store(storage, opencode_records(OPENCODE_BROKEN), AGE)
    backups = data / opencode.BACKUPS
    case = Case(tree, path, [storage, backups], backups)
    message_file = storage / "message" / path.stem / f"{MESSAGE}.json"
    part_file = storage / "part" / RUNNING_MESSAGE / f"{RUNNING_PART}.json"
    if craft in ("message-id", "part-id", "message-session", "part-message"):
        target = message_file if craft.startswith("message") else part_file
        value = orjson.loads(target.read_bytes())
        key = {"message-session": "sessionID", "part-message": "messageID"}.get(craft, "id")
        value[key] = name
        _write_record(target, value)
        case.crafted = str(target)
    elif craft == "id-mismatch":  # a plain id, but not its file's name
        value = orjson.loads(part_file.read_bytes())
        value["id"] = "prt_0000000000000000000000000"
        _write_record(part_file, value)
        case.crafted = str(part_file)
    elif craft == "file-name":  # a record file with a name that is no plain name
        target = part_file.with_name(f"{name}.json")
        value = orjson.loads(part_file.read_bytes())
        value["id"] = name
        part_file.unlink()
        _write_record(target, value)
        case.crafted = "" if _plain(name) else name
    elif craft in ("part-folder-link", "message-folder-link"):
        folder = (
            storage / "part" / RUNNING_MESSAGE
            if craft == "part-folder-link"
            else storage / "message" / path.stem
        )
        moved = outside / "moved"
        folder.rename(moved)
        folder.symlink_to(moved)
        case.crafted = str(folder)
    elif craft == "part-file-link":
        moved = outside / part_file.name
        part_file.rename(moved)
        part_file.symlink_to(moved)
        case.crafted = str(part_file)
    elif craft == "undo-note":
        case.undo_note = True
    return case


def database_case(tree: Path, craft: str, name: str) -> Case:
    outside = _outside(tree)
    data = tree / "home" / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    records = opencode_records(OPENCODE_BROKEN)
    if craft == "row-ids":  # ids in the rows are only SQL parameters: they steer nothing
        text = orjson.dumps(records).replace(RUNNING_PART.encode(), orjson.dumps(name)[1:-1])
        text = text.replace(MESSAGE.encode(), b"../../../OUTSIDE/PWNED_MSG")
        records = orjson.loads(text)
    db = data / "opencode.db"
    if craft == "db-link":  # the database is a link to one outside
        make_database(outside / "opencode.db", records, AGE)
        db.symlink_to(outside / "opencode.db")
    else:
        make_database(db, records, AGE)
    session = db / records[0]["id"]
    backups = data / opencode.BACKUPS
    case = Case(tree, session, [db, db.with_name("opencode.db-wal"), backups], backups, db=db)
    case.allowed.append(db.with_name("opencode.db-shm"))
    if craft == "db-link":
        case.crafted = str(db)
    return case


def conversation_case(tree: Path, craft: str, name: str) -> Case:
    """An OpenHands CLI conversation (``conversations/<id>/events/event-<n>-<id>.json``)."""
    outside = _outside(tree)
    home = tree / "home" / ".openhands"
    conversations = home / "conversations"
    cid = "51b45f91d38a498e9f7f718ad9ec1c60"
    # The conversation's folder named as an attacker names it, where it can be a folder name.
    makeable = "/" not in name and "\0" not in name and len(name.encode()) < 200
    if craft == "conversation-id" and makeable and name not in (".", "..", ""):
        cid = name
    source = OHCLI_LEGACY if craft == "moved" else OHCLI_CRASHED
    path = place_conversation(conversations, source, cid)
    backups = home / BACKUPS
    case = Case(tree, path, [conversations, backups], backups)
    files = sorted(p for p in path.iterdir())
    if craft == "conversation-id" and not _plain(cid):
        case.crafted = cid
    elif craft == "event-id":  # an event whose id is not the one its file's name says
        value = orjson.loads(files[3].read_bytes())
        value["id"] = name
        _write_record(files[3], value)
        case.crafted = files[3].name
    elif craft == "event-link":
        moved = outside / files[3].name
        files[3].rename(moved)
        files[3].symlink_to(moved)
        case.crafted = str(files[3])
    elif craft == "events-link":
        moved = outside / "events"
        path.rename(moved)
        path.symlink_to(moved)
        case.crafted = str(path)
    elif craft == "state-link":  # its base_state.json a link to a file outside
        state = path.parent / openhands_cli.BASE_STATE
        state.rename(outside / "base_state.json")
        state.symlink_to(outside / "base_state.json")
        case.crafted = str(state)
    elif craft == "leaf-id":  # the leaf names an id that is no event's: the hostile name
        state = path.parent / openhands_cli.BASE_STATE
        value = orjson.loads(state.read_bytes())
        value["leaf_event_id"] = name
        _write_record(state, value)
        case.crafted = "leaf_event_id"
    elif craft == "undo-note":
        case.undo_note = True
    return case


def _replaced(value: object, old: str, new: str) -> object:
    """``value`` with ``old`` made ``new`` in every string, JSON held in a string included."""
    if isinstance(value, str):
        if value.startswith(("{", "[")):
            with_json = orjson.loads(value)
            return orjson.dumps(_replaced(with_json, old, new)).decode()
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, old, new) for v in value]
    return value


def _foreign_write(db: Path, session_id: str) -> None:
    """OpenCode writing the session: its assistant message's row touched, as a new event does."""
    connection = sqlite3.connect(db)
    try:
        with connection:
            connection.execute(
                "UPDATE session_message SET time_updated = time_updated + 1 WHERE session_id = ?",
                (session_id,),
            )
    finally:
        connection.close()


def v2_case(tree: Path, craft: str, name: str) -> Case:
    """OpenCode's event-sourced session (``opencode_v2``), crafted."""
    outside = _outside(tree)
    data = tree / "home" / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    tables: dict[str, list[dict[str, object]]] = orjson.loads(
        orjson.dumps(V2_SESSIONS["interrupted"])
    )
    session_id = V2_SESSION
    if craft == "row-ids":  # ids in the rows are only SQL parameters: they steer nothing
        tables = _replaced(tables, V2_ASSISTANT, name)  # type: ignore[assignment]
        tables = _replaced(tables, "call_1", "../../../OUTSIDE/PWNED_MSG")  # type: ignore[assignment]
    elif craft == "session-id":  # the session's own id, as a listing names its path
        tables = _replaced(tables, V2_SESSION, name)  # type: ignore[assignment]
        session_id = name
    elif craft == "sequence":  # the session's event_sequence is not at its last event
        tables["event_sequence"][0]["seq"] = 3
    db = data / "opencode.db"
    if craft == "db-link":  # the database is a link to one outside
        write_v2_tables(outside / "opencode.db", tables, AGE)
        db.symlink_to(outside / "opencode.db")
    else:
        write_v2_tables(db, tables, AGE)
    backups = data / opencode.BACKUPS
    journals = [db.with_name("opencode.db-wal"), db.with_name("opencode.db-shm")]
    case = Case(tree, db / session_id, [db, *journals, backups], backups, db=db)
    given = absolute(db / name)  # what fix is given, made absolute as it makes it
    if craft == "db-link":
        case.crafted = str(db)
    elif craft == "session-id" and not _plain(given.name) and given.parent == db:
        # One component, as fix sees the path ("\\/" is the component "\\", ".." is
        # the folder above), that is no plain name: refused, named.
        case.crafted = given.name
    elif craft == "backup-folder-link":  # the session's backup folder links to one outside
        backups.mkdir()
        (backups / session_id).symlink_to(outside / "OUTSIDE")
        case.crafted = str(backups / session_id)
    elif craft == "changed":
        case.during = lambda: _foreign_write(db, session_id)
    elif craft == "undo-note":
        case.undo_note = True
    return case


# The agents' databases that keep a session as rows (``rowdb``): where each is, its kind.
ROW_DATABASES: dict[str, tuple[str, RowDatabase]] = {
    "goose-db": (".local/share/goose/sessions/sessions.db", goose_db.STORE),
    "hermes-db": (".hermes/state.db", hermes_db.STORE),
    "hermes-profile-db": (".hermes/profiles/work/state.db", hermes_db.STORE),  # `hermes -p work`
}
GOOSE_SID, GOOSE_OTHER = "20250929_140310", "20250930_091500"


def _row_database(db: Path, agent: str, session_id: str) -> None:
    if agent == "goose-db":
        connection = sqlite3.connect(db)
        connection.execute("PRAGMA journal_mode = wal")
        connection.executescript(GOOSE_SCHEMA)
        goose_insert(
            connection,
            session_id,
            read(CORPUS / "goose" / "derived__20250929_140310.cut-after-calls.jsonl"),
        )
        # A second session, which no fix of the first may touch.
        goose_insert(
            connection,
            GOOSE_OTHER,
            read(CORPUS / "goose" / "derived__20250929_140310.healthy.jsonl"),
        )
        connection.commit()
        connection.close()
    else:
        make_hermes_db(db, HERMES_LOG, session_id)
    for file in db.parent.iterdir():
        if file.name.startswith(db.name):
            _age(file)


def _foreign_row_write(db: Path, agent: str, session_id: str) -> None:
    """The agent writing the session meanwhile: one of its message rows touched."""
    column = "created_timestamp" if agent == "goose-db" else "timestamp"
    connection = sqlite3.connect(db)
    try:
        with connection:
            connection.execute(
                f"UPDATE messages SET {column} = {column} + 1 WHERE session_id = ?",
                (session_id,),
            )
    finally:
        connection.close()


def row_database_case(tree: Path, agent: str, craft: str, name: str) -> Case:
    """Goose's ``sessions.db`` or Hermes's ``state.db`` (a profile's too), crafted."""
    outside = _outside(tree)
    relative, kind = ROW_DATABASES[agent]
    db = tree / "home" / relative
    db.parent.mkdir(parents=True)
    session_id = name if craft == "session-id" else GOOSE_SID if agent == "goose-db" else HERMES_SID
    if craft == "db-link":  # the database is a link to one outside
        _row_database(outside / db.name, agent, session_id)
        db.symlink_to(outside / db.name)
    else:
        _row_database(db, agent, session_id)
    backups = db.parent / hermes_db.BACKUPS
    journals = [db.with_name(f"{db.name}-wal"), db.with_name(f"{db.name}-shm")]
    owner = "goose" if agent == "goose-db" else "hermes"
    case = Case(tree, db / session_id, [db, *journals, backups], backups, db=db,
                agent=BY_NAME[owner], during_after=(type(kind), "plan"))  # fmt: skip
    given = absolute(db / session_id)
    if craft == "db-link":
        case.crafted = str(db)
    elif craft == "session-id" and not _plain(given.name) and given.parent == db:
        case.crafted = given.name
    elif craft == "changed":
        case.during = lambda: _foreign_row_write(db, agent, session_id)
    elif craft == "undo-note":
        case.undo_note = True
    return case


def _tamper_rows(case: Case) -> None:
    """Make the newest backup's rows another session's, its note's checksum made to match."""
    (folder,) = fix.backups_of(case.session, case.backup_dir)
    rows_path, note_path = folder / "rows.json", folder / opencode.NOTE
    rows = orjson.loads(rows_path.read_bytes())
    for row in rows["rows"]:
        if isinstance(row["original"], dict):
            for key in ("session_id", "aggregate_id"):
                if key in row["original"]:
                    row["original"][key] = "ses_another"
    raw = orjson.dumps(rows)
    rows_path.write_bytes(raw)
    note = orjson.loads(note_path.read_bytes())
    for entry in note["rows"]:  # a row fix only added has no original: its written row
        if isinstance(entry["written"], dict):
            for key in ("session_id", "aggregate_id"):
                if key in entry["written"]:
                    entry["written"][key] = "ses_another"
    note["rows_sha256"] = hashlib.sha256(raw).hexdigest()
    note_path.write_bytes(orjson.dumps(note))


@contextmanager
def _during(case: Case) -> Iterator[None]:
    """``case.during`` run after fix planned its write (it has read the store) and before it."""
    if case.during is None:
        yield
        return
    owner, name = case.during_after
    plan = getattr(owner, name)
    during = case.during

    def and_then(*args: object, **kwargs: object) -> object:
        out = plan(*args, **kwargs)
        during()
        case.rebased = snapshot(case.tree)
        return out

    setattr(owner, name, and_then)
    try:
        yield
    finally:
        setattr(owner, name, plan)


# The one-file agents whose sessions are JSON Lines (a record a line).
JSONL_AGENTS = tuple(a for a, (relative, _) in ONE_FILE.items() if relative.endswith(".jsonl"))
# The agents that hold a lock beside a session they run.
LOCKING = tuple(a for a in ONE_FILE if (agent := agent_of(a)) is not None and agent.lock)

CASES: list[tuple[str, str]] = [
    *(
        ("openhands-cli", craft)
        for craft in (
            "",
            "moved",  # the result goes before the user's turn: later events renamed
            "conversation-id",
            "event-id",
            "event-link",
            "events-link",
            "state-link",
            "leaf-id",
            "undo-note",
        )
    ),
    *(
        (agent, craft)
        for agent in ONE_FILE
        for craft in ("", "file-link", "folder-link", "changed", "meta-id")
    ),
    *((agent, "unknown-record") for agent in JSONL_AGENTS),
    *((agent, craft) for agent in LOCKING for craft in ("lock", "lock-unknown-agent")),
    ("claude-code", "temp-link"),
    ("codex", "backup-link"),
    ("cline-cli", "backup-link"),
    *((agent, "backup-dir") for agent in ("opencode", "opencode-db", "copilot", "kiro", "cline")),
    *(
        (agent, craft)
        for agent in ROW_DATABASES
        for craft in ("", "session-id", "db-link", "changed", "undo-note")
    ),
    *(
        ("opencode", craft)
        for craft in (
            "",
            "message-id",
            "part-id",
            "message-session",
            "part-message",
            "id-mismatch",
            "file-name",
            "part-folder-link",
            "message-folder-link",
            "part-file-link",
            "undo-note",
        )
    ),
    *(("opencode-db", craft) for craft in ("", "row-ids", "db-link")),
    *(
        ("opencode-v2", craft)
        for craft in (
            "",
            "row-ids",
            "session-id",
            "sequence",
            "db-link",
            "backup-folder-link",
            "changed",
            "undo-note",
        )
    ),
]


def build(tree: Path, agent: str, craft: str, name: str, now: float) -> Case:
    if agent == "openhands-cli":
        return conversation_case(tree, craft, name)
    case = _build(tree, agent, craft, name, now)
    if craft == "backup-dir":  # as Repair in place gives one: hidden in the watched folder
        watched = case.allowed[0].parent if agent in ("opencode", "opencode-db") else tree / "home"
        case.backup_dir = watched / IN_PLACE_BACKUPS
        if case.exact is None:  # its usual backup folder is not to be touched now
            case.allowed.remove(case.backup)
        case.allowed.append(case.backup_dir)
        case.backup = case.backup_dir
    return case


def _build(tree: Path, agent: str, craft: str, name: str, now: float) -> Case:
    if agent == "opencode":
        case = storage_case(tree, craft, name)
    elif agent == "opencode-db":
        case = database_case(tree, craft, name)
    elif agent == "opencode-v2":
        case = v2_case(tree, craft, name)
    elif agent in ROW_DATABASES:
        return row_database_case(tree, agent, craft, name)
    else:
        return one_file_case(tree, agent, craft, now, name)
    case.agent = BY_NAME["opencode"]
    return case


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def _kept(after: dict[Path, Node], backup: Path) -> set[bytes]:
    """Every file's bytes in the backup folder, and each backed-up database row's data."""
    kept: set[bytes] = set()
    for path, node in after.items():
        if node[0] == "file" and _inside(path, [backup]):
            kept.add(node[1])  # type: ignore[arg-type]
    return kept


def _assert_confined(case: Case, before: dict[Path, Node], after: dict[Path, Node]) -> None:
    diff = changed(before, after)
    stray = sorted(p for p in diff if not _inside(p, case.allowed))
    assert not stray, f"changed outside the store: {stray}"
    if case.exact is not None:  # one file: it, and its backups beside it, and nothing else
        mark = f"{case.exact.name}{fix.BACKUP_MARK}"
        other = sorted(
            p
            for p in diff
            if p != case.exact
            and not p.name.startswith(mark)
            and not (case.backup_dir and _inside(p, [case.backup_dir]))
        )
        assert not other, f"changed beside the session: {other}"
    kept = _kept(after, case.backup)
    for path in diff:
        old = before.get(path)
        if old is None or old[0] != "file" or path == case.db or _inside(path, [case.backup]):
            continue
        if path.name.endswith(("-wal", "-shm")):
            continue  # SQLite's own journal
        assert old[1] in kept, f"{path} was changed or removed and is in no kept backup"


def _tamper_note(case: Case, outside: Path) -> None:
    """Point the newest backup's note at a file outside, and its copy at one outside."""
    (folder,) = fix.backups_of(case.session, case.backup_dir)
    note_path = folder / opencode.NOTE
    note = orjson.loads(note_path.read_bytes())
    evil = outside / "OUTSIDE" / "PWNED_MSG.json"
    note["files"][0]["path"] = str(evil)
    note["files"].append({"path": str(case.session.parents[2] / ".." / "x.json"), "order": 99})
    if note["files"][0].get("copy"):
        (outside / "copy.json").write_bytes(b"{}")
        note["files"][0]["copy"] = str(outside / "copy.json")
    note_path.write_bytes(orjson.dumps(note))


def check_case(agent: str, craft: str, name: str) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        tree = Path(temporary).resolve()
        now = time.time()
        case = build(tree, agent, craft, name, now)
        before = snapshot(tree)
        with _during(case):
            outcome = fix.fix(
                case.session,
                case.agent,
                backup_dir=case.backup_dir,
                quiet_seconds=0,
                clock=lambda: now,
            )
        after = snapshot(tree)
        if case.rebased is not None:  # what someone else wrote meanwhile is theirs
            before = case.rebased
        _assert_confined(case, before, after)
        if case.crafted:
            assert outcome.status == "refused", (craft, name, outcome.status, outcome.reason)
            named = (case.crafted, repr(case.crafted), repr(case.crafted)[1:-1])
            assert any(n in outcome.reason for n in named), outcome.reason
        if agent in NEVER_BROKEN:  # read clean, or refused: never written
            assert outcome.status in ("clean", "refused"), (agent, craft, outcome.reason)
            assert changed(before, after) == set(), outcome.reason
            return
        if craft in ("", "folder-link", "backup-link", "undo-note", "moved", "backup-dir"):
            assert outcome.status == "fixed", (agent, craft, outcome.reason)
        if craft in ("changed", "sequence", "lock", "lock-unknown-agent"):
            # written meanwhile, or not OpenCode's own order, or the agent runs it now
            assert outcome.status == "refused", (craft, outcome.status, outcome.reason)
        # Every case's session is broken: whatever its ids, it never reads "nothing to repair".
        assert outcome.status != "clean", (agent, craft, name, outcome.reason)
        if outcome.status in ("refused", "clean"):
            assert changed(before, after) == set(), outcome.reason
            return
        if outcome.status == "failed":  # what was kept is checked above; nothing to undo
            if "nothing was changed" in outcome.reason or "is as it was" in outcome.reason:
                assert changed(before, after) == set(), outcome.reason
            return
        assert outcome.status == "fixed", (craft, name, outcome.status, outcome.reason)
        if case.kept_line:  # the record no reader knows is in the fixed file, byte for byte
            assert case.kept_line in case.session.read_bytes(), agent
        if craft == "backup-link":  # the planted links are left as they were, and not used
            assert outcome.backup is not None and outcome.backup.name.endswith("-2")
        if case.undo_note:
            if agent == "opencode-v2" or agent in ROW_DATABASES:
                _tamper_rows(case)
            else:
                _tamper_note(case, tree / "outside")
            tampered = snapshot(tree)
            undone = fix.undo(case.session, backup_dir=case.backup_dir)
            assert undone.status == "refused", undone.reason
            assert changed(tampered, snapshot(tree)) == set()
            return
        undone = fix.undo(case.session, backup_dir=case.backup_dir)
        assert undone.status == "restored", undone.reason
        restored = snapshot(tree)
        _assert_confined(case, before, restored)
        left = {
            p
            for p in changed(before, restored)
            if not _inside(p, [case.backup])
            and p != case.db  # its rows are compared below: SQLite rewrites pages its own way
            and not p.name.endswith(("-wal", "-shm"))
        }
        # Undo puts every byte back; only an emptied folder of an added record may stay.
        assert all(restored.get(p) == ("dir",) for p in left), sorted(left)
        if case.db is not None:
            assert _rows(case.db) == _rows_of_snapshot(before, case.db, tree)


def _rows(db: Path) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        # Not sqlite_sequence: AUTOINCREMENT's high-water mark (Goose's messages) stays past
        # the id of a row fix added and undo removed, so that no later row reuses that id.
        tables = [t for (t,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'"
            " ORDER BY name")]  # fmt: skip
        return [
            (table, *row)
            for table in tables
            for row in connection.execute(f"SELECT * FROM {table} ORDER BY rowid")
        ]
    finally:
        connection.close()


def _rows_of_snapshot(before: dict[Path, Node], db: Path, tree: Path) -> list[tuple[object, ...]]:
    """The rows of the database as it was in ``before``, read from a copy of its bytes."""
    copy = tree / "before.db"
    node = before[db]
    copy.write_bytes(node[1])  # type: ignore[arg-type]
    try:
        return _rows(copy)
    finally:
        copy.unlink()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), name=HOSTILE)
# Found by this test: a session id holding NUL made fix raise; one ending in "/" names
# the component before it.
@example(case=("opencode-v2", "session-id"), name="\x00/\\")
@example(case=("opencode-v2", "session-id"), name="\\/")
@example(case=("opencode-v2", "session-id"), name="..")
def test_fix_and_undo_of_a_crafted_store_change_nothing_outside_it(
    case: tuple[str, str], name: str
) -> None:
    agent, craft = case
    if craft == "file-name":
        return  # drawn with a file name below
    check_case(agent, craft, name)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=HOSTILE_FILE_NAME)
def test_a_record_file_whose_name_is_not_plain_makes_fix_refuse(name: str) -> None:
    check_case("opencode", "file-name", name)


def test_every_case_is_run_once() -> None:
    # Hypothesis draws the cases; this runs each of them at least once, with the id.
    for agent, craft in CASES:
        name = "msg ok" if craft == "file-name" else "../../../OUTSIDE/PWNED_MSG"
        check_case(agent, craft, name)


# --- An uploaded zip's agent databases, copied to a private temporary folder (scan) ---------

ZIP_CRAFTS = (
    "",
    "member-name",  # the database member under a hostile folder name
    "climbing",  # members named out of the zip: absolute, '..', a drive, backslashes
    "link-member",  # a member that is a symbolic link (its bytes name a file outside)
    "session-ids",  # sessions whose ids are hostile, or name a file outside
    "not-a-database",  # bytes that are no SQLite database under a database's name
    "planted-temp",  # links and folders named like ours in the temporary base
    "wal",  # a WAL database with its -wal and -shm members, a session only in the -wal
    "wal-link",  # a database whose -wal member is a link naming a file outside
)
SECRET = b'{"secret": "outside the zip"}\n'
CLIMBING = (
    "../../outside/opencode.db",
    "/tmp/x/state.db",
    "C:/state.db",
    "a/../../state.db",
    "a\\..\\..\\outside\\sessions.db",
)


def _zip(members: list[tuple[str, bytes, bool]]) -> bytes:
    """A zip of ``(name, bytes, is_link)``: a link member as ``zip -y`` stores one."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data, is_link in members:
            info = zipfile.ZipInfo(member, (2026, 1, 2, 3, 4, 5))
            info.compress_type = zipfile.ZIP_DEFLATED
            if is_link:
                info.create_system = 3
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def _database_bytes(build: Path, kind: str, session_id: str | None = None) -> bytes:
    """The bytes of one agent's database (``opencode.db`` of the v2 tables, or ``state.db``)."""
    folder = build / secrets.token_hex(4)
    folder.mkdir(parents=True)
    if kind == "state.db":
        make_hermes_db(folder / kind, HERMES_LOG, sid=session_id or HERMES_SID)
    else:
        tables = orjson.loads(orjson.dumps(V2_SESSIONS["interrupted"]))
        if session_id is not None:
            tables = _replaced(tables, V2_SESSION, session_id)
        write_v2_tables(folder / kind, tables, AGE)
    return (folder / kind).read_bytes()


def zip_members(tree: Path, craft: str, name: str) -> list[tuple[str, bytes, bool]]:
    build = tree / "build"
    outside = tree / "outside"
    (outside / "secret.jsonl").write_bytes(SECRET)
    members = [("claude/cut.jsonl", one_file_bytes("claude-code"), False)]
    if craft in ("", "planted-temp"):
        members += [
            ("opencode/opencode.db", _database_bytes(build, "opencode.db"), False),
            ("hermes/state.db", _database_bytes(build, "state.db"), False),
        ]
    elif craft == "member-name":
        members.append((f"{name}/opencode.db", _database_bytes(build, "opencode.db"), False))
    elif craft == "climbing":
        members += [(member, _database_bytes(build, "state.db"), False) for member in CLIMBING]
    elif craft == "link-member":
        target = str(outside / "opencode.db")
        shutil.copyfile(tree / "outside" / "victim.txt", outside / "opencode.db")
        members += [("opencode.db", target.encode(), True), ("state.db", b"../outside", True)]
    elif craft == "session-ids":
        members += [
            ("a/opencode.db", _database_bytes(build, "opencode.db", name), False),
            ("b/state.db", _database_bytes(build, "state.db", name), False),
            ("c/state.db", _database_bytes(build, "state.db", f"../../..{outside}/secret"),
             False),
        ]  # fmt: skip
    elif craft in ("wal", "wal-link"):
        build.mkdir(parents=True)
        journal = wal_database(build)
        members += [(f"hermes/{n}", data, False) for n, data in journal.items()]
        if craft == "wal-link":
            members[-2] = ("hermes/state.db-wal", str(outside / "secret.jsonl").encode(), True)
    elif craft == "not-a-database":
        members.append(("goose/sessions.db", b"SQLite format 3\x00" + b"\xff" * 4000, False))
    shutil.rmtree(build, ignore_errors=True)
    return members


def _plant(temp: Path, outside: Path) -> None:
    """Links and folders named like our private folders, days old: none is ours to touch
    (a link, a file, a name mkdtemp does not make; the sweep of stale ones leaves them)."""
    (temp / "inspector-zipdb-planted1").symlink_to(outside)
    (temp / "inspector-zipdb-planted2").symlink_to(outside / "victim.txt")
    (temp / "inspector-zipdb-afile123").write_bytes(b"a file")
    (temp / "inspector-zipdb-someone").mkdir()
    (temp / "inspector-zipdb-someone" / "opencode.db").symlink_to(outside / "victim.txt")
    stamp = time.time() - 3 * 24 * 3600
    for path in [*temp.iterdir(), temp / "inspector-zipdb-someone" / "opencode.db"]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)


@contextmanager
def _private_base(temp: Path, storage: Path) -> Iterator[None]:
    """Temporary folders made in ``temp``, and the storage a scan writes to, ``storage``."""
    from django.conf import settings as django_settings
    from django.test import override_settings

    was = tempfile.tempdir
    tempfile.tempdir = str(temp)
    stores_setting = {
        **django_settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(storage)},
        },
    }
    try:
        with override_settings(STORAGES=stores_setting):
            yield
    finally:
        tempfile.tempdir = was


def check_zip(craft: str, name: str) -> None:
    from inspector.scan import tasks

    with tempfile.TemporaryDirectory() as temporary:
        tree = Path(temporary).resolve()
        outside = _outside(tree)
        temp, storage = tree / "tmp", tree / "storage"
        temp.mkdir()
        storage.mkdir()
        data = _zip(zip_members(tree, craft, name))
        if craft == "planted-temp":
            _plant(temp, outside)
        before = snapshot(tree)
        with _private_base(temp, storage), zipfile.ZipFile(io.BytesIO(data)) as archive:
            _plan, found = tasks.unpack_zip(archive, "job/files", tasks.zip_limits())
        after = snapshot(tree)
        diff = changed(before, after)
        # Only new files in storage: nothing else changed, the private folders are gone.
        assert all(p.is_relative_to(storage) and p not in before for p in diff), sorted(diff)
        stored = [node[1] for p, node in after.items() if p in diff and node[0] == "file"]
        assert SECRET not in stored and b"not yours" not in stored
        for item in found:
            assert "inspector-zipdb" not in item.reason and str(temp) not in item.reason, item
            assert not item.source or item.source.startswith("job/files/"), item
            if item.source:
                assert (storage / item.source) in diff
        if craft in ("", "planted-temp"):  # each session of each database read, as a row
            assert {f.path for f in found if f.source} == {
                "claude/cut.jsonl",
                f"opencode/opencode.db/{V2_SESSION}",
                f"hermes/state.db/{HERMES_SID}",
            }
        if craft == "wal":  # the session only the -wal holds is read too
            assert {f.path for f in found if f.source} >= {
                f"hermes/state.db/{HERMES_SID}",
                f"hermes/state.db/{HERMES_SECOND}",
            }
        if craft == "wal-link":  # a log that is no log: the database's own rows alone
            assert {f.path for f in found if f.source} == {
                "claude/cut.jsonl",
                f"hermes/state.db/{HERMES_SID}",
            }
        if craft in ("link-member", "not-a-database"):  # unreadable, whatever the bytes name
            assert all(f.reason for f in found if f.path != "claude/cut.jsonl"), found
        if craft == "climbing":  # no member named out of the zip is read
            # (the one folder left in front of every name is stripped, as ever)
            assert [f.path for f in found] == ["cut.jsonl"], found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(craft=st.sampled_from(ZIP_CRAFTS), name=HOSTILE)
def test_a_crafted_zips_databases_are_read_in_a_private_folder_that_goes(
    craft: str, name: str
) -> None:
    check_zip(craft, name)


def test_every_zip_case_is_run_once() -> None:
    for craft in ZIP_CRAFTS:
        check_zip(craft, "../../../OUTSIDE/PWNED_MSG")
