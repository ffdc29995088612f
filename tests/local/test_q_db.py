"""Amazon Q's and Kiro CLI's data.sqlite3 (kirodb, issue 27): listed, fixed in one row, undone.

The databases are made with Q's own schema (aws/amazon-q-developer-cli
``database/sqlite_migrations/007_conversations_table.sql``, and Kiro's
``008_multiple_conversations_per_path.sql`` for ``conversations_v2``), their
values the q-chat corpus rows as ``set_conversation_by_path`` writes them (the
folder as key, ``serde_json::to_string`` of the state as value). ``list`` must
name each conversation in the database, ``fix`` must write the repaired value
into its row only (backup outside the database, refusal while the agent
writes or when the row changed meanwhile) and print the resume command run in
the row's folder, ``undo`` must put the row back, and nothing else in the tree
may change, whatever the keys.
"""

from __future__ import annotations

import io
import os
import sqlite3
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from inspector import cli, formats
from inspector.diagnosis import diagnose
from inspector.local import databases, fix, q_db
from inspector.local.agents import AGENTS
from tests.local.conftest import changed, snapshot
from tests.testdata import CORPUS, read

KILLED = CORPUS / "q-chat" / "derived__data-sqlite3-row.killed-mid-tool.json"
HEALTHY = CORPUS / "q-chat" / "derived__data-sqlite3-row.healthy.json"
CWD = "/home/dev/projects/billing-api"  # the folder the corpus rows were written in
V1_SCHEMA = "CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT);"
V2_SCHEMA = """
CREATE TABLE conversations_v2 (
    key TEXT NOT NULL, conversation_id TEXT NOT NULL, value TEXT NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    PRIMARY KEY (key, conversation_id));
CREATE INDEX idx_conversations_v2_key_updated ON conversations_v2(key, updated_at DESC);
"""
AGE = 3600.0
UPDATED = 1757664853077


def other_conversation() -> bytes:
    """The healthy row as another conversation (the corpus rows are one at two moments)."""
    state = orjson.loads(read(HEALTHY))
    state["conversation_id"] = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
    return orjson.dumps(state)


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


def make_db(db: Path, rows: dict[str, bytes], *, v2: bool = False, age: float = AGE) -> None:
    """A data.sqlite3 holding ``rows`` (key -> value) as Q (or, ``v2``, Kiro) writes them."""
    db.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(db)
    connection.executescript(V1_SCHEMA + "CREATE TABLE state (key TEXT PRIMARY KEY, value BLOB);")
    connection.execute("INSERT INTO state VALUES ('telemetry.clientId', 'c0ffee')")
    if v2:
        connection.executescript(V2_SCHEMA)
    for key, value in rows.items():
        text = value.decode()
        if v2:
            cid = orjson.loads(value)["conversation_id"]
            connection.execute(
                "INSERT INTO conversations_v2 VALUES (?, ?, ?, ?, ?)",
                (key, cid, text, UPDATED - 1000, UPDATED),
            )
        else:
            connection.execute("INSERT INTO conversations VALUES (?, ?)", (key, text))
    connection.commit()
    connection.close()
    stamp = time.time() - age
    os.utime(db, (stamp, stamp))


def table(db: Path) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        names = [n for (n,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]  # fmt: skip
        return [(n, *row) for n in names for row in connection.execute(f"SELECT * FROM {n}")]
    finally:
        connection.close()


def value_of(db: Path, key: str, *, v2: bool = False) -> bytes:
    connection = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        name = "conversations_v2" if v2 else "conversations"
        (value,) = connection.execute(f"SELECT value FROM {name} WHERE key = ?", (key,)).fetchone()
        return str(value).encode()
    finally:
        connection.close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("HOME", str(root))
    for agent in AGENTS:
        if agent.env:
            monkeypatch.delenv(agent.env, raising=False)
    (tmp_path / "outside.txt").write_bytes(b"not yours")
    return root


def q_db_path(home: Path, folder: str = "amazon-q") -> Path:
    return home / ".local" / "share" / folder / "data.sqlite3"


def test_a_session_name_is_one_plain_file_name_whatever_the_key():
    assert q_db.session_name("/home/me/billing-api") == "_2Fhome_2Fme_2Fbilling-api"
    assert q_db.session_name("/a", "3d9f6a1c-2b7e-4f05-8c3d-6e1a9b2f7c40") == (
        "3d9f6a1c-2b7e-4f05-8c3d-6e1a9b2f7c40"
    )
    names = {q_db.session_name(k) for k in ("/a_b", "/a+b", "/a b", "/a/b", "/a.b", "/ab")}
    assert len(names) == 6
    long = q_db.session_name("/x" * 300)
    assert len(long) <= 200 and long != q_db.session_name("/x" * 301)


def test_list_names_each_conversation_of_the_database_and_its_resume_in_its_folder(home):
    db = q_db_path(home)
    make_db(db, {CWD: read(KILLED), "/home/dev/other": read(HEALTHY)})
    status, out = run("list", "--json")
    records = {orjson.loads(line)["path"]: orjson.loads(line) for line in out.splitlines()}
    broken = records[str(db / q_db.session_name(CWD))]
    assert broken["verdict"] == "needs repair"
    assert broken["resume"] == f"cd {CWD} && q chat --resume"
    assert records[str(db / q_db.session_name("/home/dev/other"))]["verdict"] == "clean"
    assert len(records) == 2
    assert status == 1


def test_xdg_data_home_moves_the_database(home, tmp_path, monkeypatch):
    moved = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(moved))
    make_db(moved / "kiro-cli" / "data.sqlite3", {CWD: read(KILLED)}, v2=True)
    _, out = run("list", "--json")
    paths = {orjson.loads(line)["path"] for line in out.splitlines()}
    cid = orjson.loads(read(KILLED))["conversation_id"]
    assert paths == {str(moved / "kiro-cli" / "data.sqlite3" / cid)}


def test_fix_writes_the_repaired_value_into_the_row_and_undo_puts_it_back(home):
    db = q_db_path(home)
    make_db(db, {CWD: read(KILLED), "/home/dev/other": read(HEALTHY)})
    session = db / q_db.session_name(CWD)
    before_rows = table(db)
    before = snapshot(home.parent)
    status, out = run("fix", str(session))
    assert status == 0, out
    assert f"cd {CWD} && q chat --resume" in out
    fixed = value_of(db, CWD)
    parsed = formats.load(fixed, "q-chat")
    assert not diagnose(parsed).needs_repair
    state = orjson.loads(fixed)
    assert state["history"] == orjson.loads(read(KILLED))["history"]
    assert "CancelledToolUses" in state["next_message"]["content"]
    # Only that row's value changed; the other row and the other tables are as they were.
    after_rows = table(db)
    assert [r for r in after_rows if CWD not in r] == [r for r in before_rows if CWD not in r]
    # Everything written is the database and the backup folder beside it.
    backups = db.parent / q_db.BACKUPS
    diff = changed(before, snapshot(home.parent))
    assert all(p == db or p.is_relative_to(backups) for p in diff), sorted(diff)
    (backup,) = fix.backups_of(session)
    (row,) = orjson.loads((backup / q_db.ROWS).read_bytes())["rows"]
    assert row["original"]["value"] == read(KILLED).decode()
    status, out = run("fix", "--undo", str(session))
    assert status == 0, out
    assert value_of(db, CWD) == read(KILLED)
    assert table(db) == before_rows


def test_kiro_conversations_v2_row_is_fixed_by_its_id_and_keeps_its_updated_at(home):
    db = q_db_path(home, "kiro-cli")
    make_db(db, {CWD: read(KILLED)}, v2=True)
    cid = orjson.loads(read(KILLED))["conversation_id"]
    status, out = run("fix", str(db / cid))
    assert status == 0, out
    assert f"cd {CWD} && kiro-cli chat --resume-id {cid}" in out
    connection = sqlite3.connect(db)
    try:
        ((value, updated),) = connection.execute(
            "SELECT value, updated_at FROM conversations_v2"
        ).fetchall()
        (old,) = connection.execute("SELECT COUNT(*) FROM conversations").fetchone()
    finally:
        connection.close()
    assert updated == UPDATED  # --resume still picks the conversation it picked
    assert old == 0  # the v1 table Kiro no longer reads is left alone
    assert not diagnose(formats.load(value.encode(), "q-chat")).needs_repair


def test_fix_refuses_while_the_agent_writes_the_database(home):
    db = q_db_path(home)
    make_db(db, {CWD: read(KILLED)}, age=0.0)
    before = snapshot(home.parent)
    outcome = fix.fix(db / q_db.session_name(CWD))
    assert outcome.status == "refused", outcome.reason
    assert changed(before, snapshot(home.parent)) == set()


def test_fix_refuses_when_the_row_changed_after_it_was_read(home, monkeypatch):
    db = q_db_path(home)
    make_db(db, {CWD: read(KILLED)})
    plan = q_db.Database.plan

    def and_q_writes(self, rows, largest, session_id, repaired):  # type: ignore[no-untyped-def]
        planned = plan(self, rows, largest, session_id, repaired)
        connection = sqlite3.connect(db)
        with connection:
            connection.execute("UPDATE conversations SET value = ? WHERE key = ?",
                               (read(HEALTHY).decode(), CWD))  # fmt: skip
        connection.close()
        return planned

    monkeypatch.setattr(q_db.Database, "plan", and_q_writes)
    outcome = fix.fix(db / q_db.session_name(CWD), quiet_seconds=0)
    assert outcome.status == "refused", outcome.reason
    assert value_of(db, CWD) == read(HEALTHY)  # Q's write stands
    assert fix.backups_of(db / q_db.session_name(CWD)) == []


# Keys a folder path can be, and keys an attacker writes.
KEYS = st.one_of(
    st.sampled_from(
        [
            "../x",
            "../../outside/victim.txt",
            "/etc/passwd",
            "",
            ".",
            "..",
            "a/../../b",
            "/home/dev/" + "x" * 400,
            "/tmp/é ü/日本",
            "-rf",
            "/a\\b",
            "/a\x00b",
            "~",
        ]
    ),
    st.text(alphabet="./\\ab_-~+ \u00e9\u65e5\u0000", min_size=0, max_size=40),
)
IDS = st.one_of(
    st.just(None),  # the v1 table
    st.sampled_from(["3d9f6a1c-2b7e-4f05-8c3d-6e1a9b2f7c40", "../x", "", "/etc/passwd", "a" * 300]),
)


def check_confined(key: str, conversation_id: str | None) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        tree = Path(temporary).resolve()
        (tree / "outside").mkdir()
        (tree / "outside" / "victim.txt").write_bytes(b"not yours")
        db = tree / "home" / ".local" / "share" / "amazon-q" / "data.sqlite3"
        value = read(KILLED)
        if conversation_id is not None:
            state = orjson.loads(value)
            state["conversation_id"] = conversation_id
            value = orjson.dumps(state)
        rows = {key: value, "/home/dev/other": other_conversation()}
        make_db(db, rows, v2=conversation_id is not None)
        session = db / q_db.session_name(key, conversation_id)
        before_rows = table(db)
        before = snapshot(tree)
        outcome = fix.fix(session, quiet_seconds=0)
        assert outcome.status == "fixed", (key, conversation_id, outcome.reason)
        allowed = [db, db.with_name("data.sqlite3-journal"), db.parent / q_db.BACKUPS]
        diff = changed(before, snapshot(tree))
        stray = [p for p in diff if not any(p == a or p.is_relative_to(a) for a in allowed)]
        assert not stray, stray
        assert [r for r in table(db) if "/home/dev/other" in r] == [
            r for r in before_rows if "/home/dev/other" in r
        ]
        undone = fix.undo(session)
        assert undone.status == "restored", undone.reason
        assert table(db) == before_rows
        left = changed(before, snapshot(tree)) - {db}
        assert all(p.is_relative_to(db.parent / q_db.BACKUPS) for p in left), sorted(left)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=KEYS, conversation_id=IDS)
@example(key="../x", conversation_id=None)
@example(key="/home/dev/" + "x" * 400, conversation_id=None)
@example(key="/tmp/é ü/日本", conversation_id="../x")
def test_fix_and_undo_of_any_row_change_nothing_outside_the_database_and_its_backups(
    key: str, conversation_id: str | None
) -> None:
    check_confined(key, conversation_id)


def test_a_name_no_row_has_is_refused_and_a_climbing_one_never_leaves_the_folder(home):
    db = q_db_path(home)
    make_db(db, {CWD: read(KILLED)})
    before = snapshot(home.parent)
    for name in ("_2Fnowhere", "..", "../../outside.txt", "a/b", "x\\y"):
        outcome = fix.fix(db / name, quiet_seconds=0)
        assert outcome.status in ("refused", "failed"), (name, outcome.status)
    assert changed(before, snapshot(home.parent)) == set()


@pytest.mark.parametrize("v2", [False, True], ids=["q", "kiro"])
def test_a_database_handed_over_whole_is_known_by_its_tables_and_each_row_read(tmp_path, v2):
    db = tmp_path / "uploaded-under-any-name"
    make_db(db, {CWD: read(KILLED), "/home/dev/other": other_conversation()}, v2=v2)
    kind, found = databases.read_sessions([db.read_bytes()], 10**7)
    assert kind == "data.sqlite3"
    assert sorted(s.data for s in found) == sorted([read(KILLED), other_conversation()])
    assert all(not s.reason for s in found)
    killed = next(s for s in found if s.data == read(KILLED))
    cid = orjson.loads(read(KILLED))["conversation_id"]
    assert killed.name == (cid if v2 else q_db.session_name(CWD))


def test_rows_of_two_folders_sharing_a_conversation_id_get_names_of_their_own(home):
    db = q_db_path(home, "kiro-cli")
    make_db(db, {CWD: read(KILLED), "/home/dev/copy": read(KILLED)}, v2=True)
    names = [path.name for path, _, _ in q_db.sessions(db)]
    assert len(set(names)) == 2
    assert all(name.startswith("_2Fhome_2Fdev_2F") for name in names)
    outcome = fix.fix(db / q_db.session_name(CWD, orjson.loads(read(KILLED))["conversation_id"],
                                             shared=True), quiet_seconds=0)  # fmt: skip
    assert outcome.status == "fixed", outcome.reason
    assert value_of(db, "/home/dev/copy", v2=True) == read(KILLED)  # the other row is untouched


def test_fix_finds_a_kiro_conversation_by_its_id_and_list_gives_its_resume(home):
    db = q_db_path(home, "kiro-cli")
    make_db(db, {CWD: read(KILLED)}, v2=True)
    cid = orjson.loads(read(KILLED))["conversation_id"]
    _, listed = run("list", "--json")
    (record,) = [orjson.loads(line) for line in listed.splitlines()]
    assert record["resume"] == f"cd {CWD} && kiro-cli chat --resume-id {cid}"
    status, out = run("fix", cid)
    assert status == 0, out
    assert not diagnose(formats.load(value_of(db, CWD, v2=True), "q-chat")).needs_repair
