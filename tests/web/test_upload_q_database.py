"""Amazon Q's / Kiro CLI's data.sqlite3 uploaded on its own (kirodb, issue 27): each
conversation row its own transcript, read as the q-chat shape, from a private copy."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from inspector.local import q_db
from inspector.web.models import Transcript
from tests.local.test_q_db import CWD, KILLED, make_db, other_conversation
from tests.private_copies import HELD
from tests.testdata import read
from tests.web.test_upload import post_file

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("v2", [False, True], ids=["q", "kiro"])
def test_each_conversation_row_is_its_own_transcript(
    owner_client, tmp_path: Path, private_copies: list[Path], v2: bool
):
    db = tmp_path / "data.sqlite3"
    make_db(db, {CWD: read(KILLED), "/home/dev/other": other_conversation()}, v2=v2)
    response = post_file(owner_client, db.read_bytes(), "q-backup.sqlite3")
    assert response.status_code == 200, response.content.decode()[:2000]
    stored = {t.relative_path: t for t in Transcript.objects.all()}
    broken_name = orjson.loads(read(KILLED))["conversation_id"] if v2 else q_db.session_name(CWD)
    other_name = (
        orjson.loads(other_conversation())["conversation_id"]
        if v2
        else q_db.session_name("/home/dev/other")
    )
    assert set(stored) == {f"q-backup.sqlite3/{broken_name}", f"q-backup.sqlite3/{other_name}"}
    assert {t.format for t in stored.values()} == {"q-chat"}
    assert stored[f"q-backup.sqlite3/{broken_name}"].needs_repair
    assert not stored[f"q-backup.sqlite3/{other_name}"].needs_repair
    assert len(private_copies) == 1 and not private_copies[0].exists()
    assert list(HELD.values()) == [["data.sqlite3"]]
