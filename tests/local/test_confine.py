"""fix and undo write only inside the session's own store and its backup folder."""

from __future__ import annotations

import hashlib
import io
import os
import re
from pathlib import Path

import orjson
import pytest

from inspector import cli
from inspector.local import fix, opencode
from inspector.local.confine import Confined, Refused, safe_name
from tests.local.conftest import (
    ATTACK_ID,
    OPENCODE_BROKEN,
    Home,
    attacked_store,
    changed,
    opencode_records,
    place_store,
    snapshot,
)


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


@pytest.mark.parametrize("record", ["message", "part"])
def test_a_record_whose_id_climbs_out_of_storage_makes_fix_refuse_and_write_nothing(
    tmp_path: Path, record: str, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = tmp_path / "data" / "opencode" / "storage"
    (tmp_path / "OUTSIDE").mkdir()
    path, victim = attacked_store(storage, record)
    before = snapshot(tmp_path)
    status, out = run("fix", str(path))
    assert status == 2, out
    err = capsys.readouterr().err
    assert str(victim) in err and "is not its file's name" in err and "nothing was changed" in err
    assert changed(before, snapshot(tmp_path)) == set()  # nothing written, nothing deleted
    assert not list(tmp_path.rglob("PWNED_MSG*"))
    assert fix.fix(path, quiet_seconds=0).status == "refused"
    assert changed(before, snapshot(tmp_path)) == set()
    assert ATTACK_ID  # the id the attack used


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "../x", "a/b", "/etc/passwd", "a\\b", "x\0y", ".hidden", "a..b", "a b", 7],
)
def test_a_name_that_is_not_one_plain_file_name_is_refused(name: object) -> None:
    with pytest.raises(Refused):
        safe_name(name)


def test_plain_names_pass() -> None:
    for name in ("msg_19b2e4f1a579ujYZpzhDLY7uje", "rollout-2026.jsonl", "a+b_c-d.json"):
        assert safe_name(name) == name


def test_paths_outside_through_links_or_climbing_are_refused(tmp_path: Path) -> None:
    store, outside = tmp_path / "store", tmp_path / "outside"
    (store / "sub").mkdir(parents=True)
    outside.mkdir()
    (store / "out").symlink_to(outside)
    (store / "file.json").symlink_to(outside / "target.json")
    confined = Confined.to(store)
    root = confined.roots[0]
    assert confined.check(root / "sub" / "new.json") == root / "sub" / "new.json"
    for bad, named in (
        (root / "out" / "x.json", f"{root / 'out'} is a symbolic link"),  # a folder below
        (root / "file.json", f"{root / 'file.json'} is a symbolic link"),  # the file itself
        (root / ".." / "outside" / "x.json", "goes up a folder"),
        (outside / "x.json", f"{outside / 'x.json'} is outside what fix may write"),
        (Path("relative.json"), "relative.json is not an absolute path"),
        (Path(f"{root}/a\0b"), "holds a NUL character"),
    ):
        with pytest.raises(Refused, match=re.escape(named)):
            confined.check(bad)
    with pytest.raises(Refused):
        confined.child(root, "../x.json")
    with pytest.raises(Refused):
        confined.mkdir(root / "out" / "deeper")
    assert not (outside / "deeper").exists()


def test_a_link_planted_where_fix_writes_is_never_followed(tmp_path: Path) -> None:
    store, outside = tmp_path / "store", tmp_path / "outside"
    store.mkdir()
    outside.mkdir()
    confined = Confined.to(store)
    planted = confined.roots[0] / "new.json"
    planted.symlink_to(outside / "victim")  # dangling: exists() says False
    with pytest.raises(Refused):
        confined.create(planted, b"x", None)
    assert not (outside / "victim").exists()
    os.unlink(planted)
    confined.create(planted, b"x", None)
    with pytest.raises(FileExistsError):
        confined.create(planted, b"y", None)  # a file is only ever made new
    assert planted.read_bytes() == b"x"


def test_list_names_a_session_with_a_linked_folder_and_goes_on(
    agent_home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = tmp_path / "data" / "opencode" / "storage"
    path, _ = attacked_store(storage, "part")
    folder = storage / "part" / "msg_19b2e4f1a579ujYZpzhDLY7uje"
    folder.rename(tmp_path / "elsewhere")
    folder.symlink_to(tmp_path / "elsewhere")
    status, out = run("list", "--json", "--root", f"opencode={storage}")
    assert status in (0, 1)
    assert str(path) in out and "unreadable" in out
    assert str(agent_home.root / ".claude") in out  # the other agents' sessions still listed
    assert f"{folder} is a symbolic link" in capsys.readouterr().err


def test_undo_writes_no_file_of_another_session_that_a_crafted_note_names(
    tmp_path: Path,
) -> None:
    storage = tmp_path / "data" / "opencode" / "storage"
    records = opencode_records(OPENCODE_BROKEN)
    path = place_store(storage, records, 3600)
    other = orjson.loads(
        orjson.dumps(records).replace(b"ses_64d1", b"ses_74d1").replace(b"msg_19b2", b"msg_29b2")
    )
    other = [r for r in other if "messageID" not in r] + [
        {**r, "id": r["id"].replace("prt_19b2", "prt_29b2")} for r in other if "messageID" in r
    ]
    place_store(storage, other, 3600)
    assert fix.fix(path).status == "fixed"
    (folder,) = fix.backups_of(path)
    victim = next((storage / "part").glob("msg_29b2*/*.json"))
    evil = b'{"id": "evil"}'
    copy = folder / "files" / "evil.json"
    copy.write_bytes(evil)
    note = orjson.loads((folder / opencode.NOTE).read_bytes())
    note["files"].append(
        {
            "path": str(victim),
            "copy": str(copy),
            "original_sha256": hashlib.sha256(evil).hexdigest(),
            "written_sha256": hashlib.sha256(victim.read_bytes()).hexdigest(),
            "order": 0,
        }
    )
    (folder / opencode.NOTE).write_bytes(orjson.dumps(note))
    before = snapshot(tmp_path)
    outcome = fix.undo(path)
    assert outcome.status == "refused" and str(victim) in outcome.reason
    assert changed(before, snapshot(tmp_path)) == set()
