"""A temporary home holding agents' session folders made of real corpus sessions."""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from inspector.local.agents import AGENTS
from tests.testdata import CORPUS, DATA, files, read

# OpenCode 1.18.33's own tables (read from its opencode.db; see tests/data/README.md).
OPENCODE_SCHEMA = DATA / "opencode-1.18.33-schema.sql"

BROKEN_CLAUDE = {
    # A Task call the session ends on, never answered (PAIR-1).
    "4c-02af2759b6": "5a3bb1c8-c3ce-466e-b487-24212cbf1da1",
    # A checkpoint that starts with a result whose call is not in the file (PAIR-3).
    "17-55e38d324c": "47a78253-7d91-4be2-bfd3-f5ac53c9195b",
}
BROKEN_CODEX = {
    "kvsankar-agent-history__codex_with_escalation.jsonl": "PAIR-1",
    "madshn-localpush__rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl": (
        "INT-1"
    ),
}
HEALTHY_CODEX = [
    "kvsankar-agent-history__codex_session_with_compaction.jsonl",
    "madshn-localpush__rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
]
HEALTHY_GEMINI = [
    "kvsankar-agent-history__gemini_cli_golden.json",
    "entireio-cli__entire-checkpoints__51-3fab7adf0b-0-full__session-2026-01-10-"
    "fa4593e0-f7e1-4dd1-b656-da95fb4d60fa.gemini-cli.json",
]
BROKEN_PI = "badlogic-pi-mono__before-compaction.jsonl"
HEALTHY_PI = "badlogic-pi-mono__large-session.jsonl"
OPENCODE_BROKEN = "derived__storage-records-interrupted.opencode.json"
OPENCODE_HEALTHY = "derived__export-healthy.opencode.json"
HEALTHY_KIMI = "MoonshotAI-kimi-cli__pr127__531d195b-6436-426e-b010-4bf723a992de.kimi-context.jsonl"


@dataclass
class Home:
    root: Path
    broken: dict[Path, str] = field(default_factory=dict)  # path -> a rule it breaks
    healthy: list[Path] = field(default_factory=list)
    ids: dict[Path, str] = field(default_factory=dict)
    # OpenCode sessions: their info file names them, their messages and parts are files too.
    stores: set[Path] = field(default_factory=set)

    def all(self) -> list[Path]:
        return [*self.broken, *self.healthy]


def opencode_records(name: str) -> list[dict]:
    """A corpus OpenCode session as its storage records: session info, messages, parts."""
    doc = orjson.loads(read(CORPUS / "opencode" / name))
    if isinstance(doc, list):
        return doc
    records = [doc["info"], *(m["info"] for m in doc["messages"])]
    return records + [p for m in doc["messages"] for p in m["parts"]]


def place_store(storage: Path, records: list[dict], age: float) -> Path:
    """Write records as OpenCode lays them out (JSON.stringify(x, null, 2)); the info file."""
    stamp = time.time() - age
    session_file = None
    for record in records:
        if "projectID" in record:
            path = storage / "session" / record["projectID"] / f"{record['id']}.json"
            session_file = path
        elif "messageID" in record:
            path = storage / "part" / record["messageID"] / f"{record['id']}.json"
        else:
            path = storage / "message" / record["sessionID"] / f"{record['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))
        os.utime(path, (stamp, stamp))
    assert session_file is not None
    return session_file


def make_database(
    db: Path, records: list[dict], age: float, schema: Path = OPENCODE_SCHEMA
) -> None:
    """OpenCode's database holding these records, as ``opencode import`` writes them.

    The schema is OpenCode 1.18.33's own, or ``schema`` (a fork's: Kilo's). A row's
    ``data`` is the record less its ids as ``JSON.stringify`` writes it; a message's
    ``time_created`` is its ``time.created``, a part's the time of writing, and
    ``time_updated`` the time of writing: ``age`` seconds ago. The files' times are set to then too.
    """
    stamp = int((time.time() - age) * 1000)
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode = wal")
    connection.executescript(schema.read_text())
    sessions_of: dict[str, str] = {}
    for r in records:
        if "projectID" in r:
            project = (r["projectID"], r["directory"], stamp, stamp, "[]")
            connection.execute(
                "INSERT OR IGNORE INTO project (id, worktree, time_created, time_updated, "
                "sandboxes) VALUES (?,?,?,?,?)",
                project,
            )
            row = (r["id"], r["projectID"], r.get("slug", "s"), r["directory"], r["title"],
                   r.get("version", "1"), r["time"]["created"], r["time"]["updated"])  # fmt: skip
            connection.execute(
                "INSERT INTO session (id, project_id, slug, directory, title, version, "
                "time_created, time_updated) VALUES (?,?,?,?,?,?,?,?)",
                row,
            )
    for r in records:
        if "projectID" in r or "messageID" in r:
            continue
        sessions_of[r["id"]] = r["sessionID"]
        data = {k: v for k, v in r.items() if k not in ("id", "sessionID")}
        row = (r["id"], r["sessionID"], r["time"]["created"], stamp, orjson.dumps(data).decode())
        connection.execute("INSERT INTO message VALUES (?,?,?,?,?)", row)
    for r in records:
        if "messageID" in r:
            data = {k: v for k, v in r.items() if k not in ("id", "sessionID", "messageID")}
            row = (r["id"], r["messageID"], sessions_of[r["messageID"]], stamp, stamp,
                   orjson.dumps(data).decode())  # fmt: skip
            connection.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", row)
    connection.commit()
    connection.close()
    for file in db.parent.glob(db.name + "*"):
        os.utime(file, (stamp / 1000, stamp / 1000))


def rows_of(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the tables fix may touch, all columns, by id."""
    connection = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return {
            table: connection.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
            for table in ("project", "session", "message", "part")
        }
    finally:
        connection.close()


def _renamed(records: list[dict], old: str, new: str) -> list[dict]:
    """The records with every id starting ``old`` starting ``new`` (a second session)."""
    return orjson.loads(orjson.dumps(records).replace(old.encode(), new.encode()))


def _place(home: Home, path: Path, data: bytes, age: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


@pytest.fixture
def agent_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    home = Home(tmp_path / "home")
    monkeypatch.setenv("HOME", str(home.root))
    for agent in AGENTS:
        for name in (agent.env, agent.home_env, *(env for env, _ in agent.more_env)):
            monkeypatch.delenv(name, raising=False)
    age = 3600.0  # an hour ago and older: no agent is writing to these

    claude = home.root / ".claude" / "projects" / "-work-app"
    for marker, session in BROKEN_CLAUDE.items():
        source = files(CORPUS / "claude-code" / "broken", f"*{marker}*")[0]
        path = _place(home, claude / f"{session}.jsonl", read(source), age)
        home.broken[path] = "PAIR"
        home.ids[path] = session
        age += 60
    small = [
        p
        for p in files(CORPUS / "claude-code" / "projects", "*.jsonl")
        if len(p.relative_to(CORPUS / "claude-code" / "projects").parts) == 2
        and not p.name.startswith("agent-")
        and 2_000 < len(read(p)) < 40_000
    ][:2]
    assert len(small) == 2
    for source in small:
        home.healthy.append(_place(home, claude / source.name, read(source), age))
        age += 60

    codex = home.root / ".codex" / "sessions" / "2026" / "02" / "23"
    for n, (name, rule) in enumerate(BROKEN_CODEX.items()):
        target = codex / (name.split("__", 1)[1] if "rollout-" in name else f"rollout-x{n}.jsonl")
        home.broken[_place(home, target, read(CORPUS / "codex" / name), age)] = rule
        age += 60
    for n, name in enumerate(HEALTHY_CODEX):
        target = codex / (name.split("__", 1)[1] if "rollout-" in name else f"rollout-y{n}.jsonl")
        home.healthy.append(_place(home, target, read(CORPUS / "codex" / name), age))
        age += 60

    gemini = home.root / ".gemini" / "tmp" / "0123abcd" / "chats"
    for n, name in enumerate(HEALTHY_GEMINI):
        target = gemini / f"session-2026-01-0{n + 1}T10-00-{n:08x}.json"
        home.healthy.append(_place(home, target, read(CORPUS / "gemini" / name), age))
        age += 60

    kimi = home.root / ".kimi" / "sessions" / "5d41402abc4b2a76" / "531d195b.jsonl"
    home.healthy.append(_place(home, kimi, read(CORPUS / "openai-chat" / HEALTHY_KIMI), age))
    age += 60

    pi = home.root / ".pi" / "agent" / "sessions" / "--work-app--"
    # Mario Zechner's own sessions: one ends on a bash call with no result.
    broken_pi = pi / "2025-11-20T10-00-00-000Z_before-compaction.jsonl"
    home.broken[_place(home, broken_pi, read(CORPUS / "pi" / BROKEN_PI), age)] = "PAIR-1"
    age += 60
    healthy_pi = pi / "2025-11-21T10-00-00-000Z_large-session.jsonl"
    home.healthy.append(_place(home, healthy_pi, read(CORPUS / "pi" / HEALTHY_PI), age))
    age += 60

    storage = home.root / ".local" / "share" / "opencode" / "storage"
    # A session OpenCode was killed in (a bash part left running, a glob part pending).
    broken_oc = place_store(storage, opencode_records(OPENCODE_BROKEN), age)
    home.broken[broken_oc] = "PAIR-1"
    home.ids[broken_oc] = broken_oc.stem
    home.stores.add(broken_oc)
    age += 60
    healthy = opencode_records(OPENCODE_HEALTHY)
    for old, new in (("ses_64d1", "ses_74d1"), ("msg_19b2", "msg_29b2"), ("prt_19b2", "prt_29b2")):
        healthy = _renamed(healthy, old, new)
    healthy_oc = place_store(storage, healthy, age)
    home.healthy.append(healthy_oc)
    home.stores.add(healthy_oc)
    age = _agents_a(home, age)
    age = _q_databases(home, age)

    # --- agents-b (issue 27): one healthy session of each, in its agent's own folder ---
    for relative, source in (
        (
            ".copilot/session-state/copilot-sess-1/events.jsonl",
            CORPUS / "copilot" / "kitfunso-hippo-memory__tests_fixtures_copilot_events.jsonl",
        ),
        (
            ".qwen/projects/-home-dev-app/chats/6f1c2a9e-3b7d-4c1e-9a55-0d2f7e8b4c31.jsonl",
            CORPUS / "qwen" / "derived__qwen-writer-healthy.jsonl",
        ),
        (
            ".kimi-code/sessions/3f0a9c2e/9b1d7e40/agents/main/wire.jsonl",
            CORPUS / "kimi-code" / "derived__agent-core-basic-test__tool-turn.wire.jsonl",
        ),
        (
            ".factory/sessions/-work-app/699d3bc5-08dc-40c3-8ea6-febaebdecbaa.jsonl",
            CORPUS / "droid" / "Glubiz-zirv-dynamic-cli__tests_fixtures_droid_session.jsonl",
        ),
        (
            ".cline/data/sessions/1784094124598_rruoq/1784094124598_rruoq.messages.json",
            CORPUS / "cline" / "cline-cline__sdk_fixtures_session_session.messages.json",
        ),
    ):
        home.healthy.append(_place(home, home.root / relative, read(source), age))
        age += 60
    # --- end agents-b ---
    # agents-c: OpenHands' store is there, with no session (tests/local/test_openhands.py
    # places its sessions, folders of event files, where it reads them).
    (home.root / ".openhands" / "sessions").mkdir(parents=True)
    # ohcli: so is the OpenHands CLI's conversations folder (test_openhands_cli.py fills it).
    (home.root / ".openhands" / "conversations").mkdir(parents=True)
    return home


# --- agents-a (issue 27): OpenClaw, Cursor, Cline / Roo Code ---
OPENCLAW_BROKEN = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"
CLINE_BROKEN = "gmfstu-Online-Card-Architecture__exported_conversation_1769053680585__api_conversation_history.json"  # noqa: E501
CURSOR_HEALTHY = "Tdexixi-code-with-ai-contest__cursor_agent_transcript.jsonl"
HERMES_CUT_LOG = "derived__session_20260214_093012_a1b2c3.cut-after-calls.json"


def cline_answered() -> bytes:
    """The broken Cline task without its last reply (the unanswered call): a healthy task."""
    return orjson.dumps(orjson.loads(read(CORPUS / "cline" / CLINE_BROKEN))[:-1])


def _agents_a(home: Home, age: float) -> float:
    """OpenClaw's agents (pi's sessions), Cursor's transcripts, Cline's and Roo Code's tasks,
    Hermes's session logs and transcripts, Goose's sessions of before its database."""
    claw = home.root / ".openclaw" / "agents"
    broken = claw / "main" / "sessions" / f"{OPENCLAW_BROKEN}.jsonl"
    home.broken[_place(home, broken, read(CORPUS / "pi" / BROKEN_PI), age)] = "PAIR-1"
    age += 60
    healthy = claw / "ops" / "sessions" / "1a2b3c4d-0000-4000-8000-000000000001.jsonl"
    home.healthy.append(_place(home, healthy, read(CORPUS / "pi" / HEALTHY_PI), age))
    age += 60
    # Not sessions: the key index, a compaction's checkpoint copy, a run's trace.
    _place(home, claw / "main" / "sessions" / "sessions.json", b"{}", age)
    checkpoint = f"{OPENCLAW_BROKEN}.checkpoint.9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b.jsonl"
    _place(home, claw / "main" / "sessions" / checkpoint, read(CORPUS / "pi" / BROKEN_PI), age)
    _place(home, claw / "main" / "sessions" / f"{OPENCLAW_BROKEN}.trajectory.jsonl", b"{}\n", age)

    transcripts = home.root / ".cursor" / "projects" / "home-user-app" / "agent-transcripts"
    chat = "5f0c2a7e-1b3d-4e5f-9a8b-7c6d5e4f3a2b"
    cursor = transcripts / chat / f"{chat}.jsonl"
    home.healthy.append(_place(home, cursor, read(CORPUS / "cursor" / CURSOR_HEALTHY), age))
    age += 60

    task = home.root / ".cline" / "data" / "tasks" / "1769053680585"
    path = _place(
        home, task / "api_conversation_history.json", read(CORPUS / "cline" / CLINE_BROKEN), age
    )
    home.broken[path] = "PAIR-1"
    home.ids[path] = "1769053680585"
    _place(home, task / "ui_messages.json", b"[]", age)  # the UI's log: not the conversation
    age += 60
    storage = home.root / ".config" / "Code" / "User" / "globalStorage"
    for extension, stamp in (("saoudrizwan.claude-dev", "1769053680586"),
                             ("rooveterinaryinc.roo-cline", "1769053680587"),
                             ("kilocode.kilo-code", "1769053680588")):  # fmt: skip
        task = storage / extension / "tasks" / stamp
        home.healthy.append(
            _place(home, task / "api_conversation_history.json", cline_answered(), age)
        )
        age += 60
    hermes = home.root / ".hermes" / "sessions"
    cut = read(CORPUS / "hermes" / HERMES_CUT_LOG)
    path = _place(home, hermes / "session_20260214_093012_a1b2c3.json", cut, age)
    home.broken[path] = "PAIR-1"
    home.ids[path] = "20260214_093012_a1b2c3"
    age += 60
    transcript = read(CORPUS / "hermes" / "derived__gateway-transcript.healthy.jsonl")
    home.healthy.append(_place(home, hermes / "20260215_180211_9c8d7e.jsonl", transcript, age))
    _place(home, hermes / "sessions.json", b"{}", age)  # the gateway's index: not a session
    age += 60
    goose = home.root / ".local" / "share" / "goose" / "sessions"
    cut = read(CORPUS / "goose" / "derived__20250929_140310.cut-after-calls.jsonl")
    path = _place(home, goose / "20250929_140310.jsonl", cut, age)
    home.broken[path] = "PAIR-1"
    home.ids[path] = "20250929_140310"
    age += 60
    whole = read(CORPUS / "goose" / "derived__20250929_140310.healthy.jsonl")
    home.healthy.append(_place(home, goose / "fix-leap-years.jsonl", whole, age))
    age += 60
    kiro = home.root / ".kiro" / "sessions" / "cli"
    cut = read(CORPUS / "kiro" / "derived__kiro-cli-session.issue-6110.jsonl")
    path = _place(home, kiro / "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9.jsonl", cut, age)
    home.broken[path] = "PAIR-1"
    facts = b'{"session_id":"3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9","cwd":"/work/app"}'
    _place(home, kiro / "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9.json", facts, age)  # not listed
    age += 60
    return age


# --- end agents-a ---


# --- kirodb (issue 27): Amazon Q's and Kiro CLI's data folders, with no database yet (their
# databases are made in tests/local/test_q_db.py): listed as empty, warned of by none.
def _q_databases(home: Home, age: float) -> float:
    for folder in ("amazon-q", "kiro-cli"):
        (home.root / ".local" / "share" / folder).mkdir(parents=True)
    return age


# --- end kirodb ---


# What a node of a tree is: ("dir",), ("file", bytes, mode) or ("link", target).
Node = tuple[object, ...]


def snapshot(root: Path) -> dict[Path, Node]:
    """Every path under ``root`` (links not followed): its type, bytes, mode or link target."""
    out: dict[Path, Node] = {}
    for folder, dirs, names in os.walk(root, followlinks=False):
        for name in [*dirs, *names]:
            path = Path(folder) / name
            info = path.lstat()
            if path.is_symlink():
                out[path] = ("link", os.readlink(path))
            elif path.is_dir():
                out[path] = ("dir",)
            else:
                out[path] = ("file", path.read_bytes(), info.st_mode & 0o7777)
    return out


def changed(before: dict[Path, Node], after: dict[Path, Node]) -> set[Path]:
    """The paths added, removed or different between two snapshots."""
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


ATTACK_ID = "../../../OUTSIDE/PWNED_MSG"


def attacked_store(storage: Path, record: str) -> tuple[Path, Path]:
    """The broken OpenCode session with one record's ``id`` (only in its content) made
    ``../../../OUTSIDE/PWNED_MSG``, as in the issue: a message holding five parts, or a
    part. Its info file, and the file whose content was changed."""
    records = opencode_records(OPENCODE_BROKEN)
    path = place_store(storage, records, 3600)
    message = "msg_19b2e4f1a579ujYZpzhDLY7uje"  # the reply with five parts
    if record == "message":
        victim = storage / "message" / path.stem / f"{message}.json"
    else:  # the part OpenCode left running: one the repair rewrites
        victim = (
            storage
            / "part"
            / "msg_19b2e4f1d4e78IyFVGWCN0e7LV"
            / ("prt_19b2e4f1da60aWe9R6yqmufenv.json")
        )
    value = orjson.loads(victim.read_bytes())
    value["id"] = ATTACK_ID
    victim.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
    stamp = time.time() - 3600
    os.utime(victim, (stamp, stamp))
    return path, victim
