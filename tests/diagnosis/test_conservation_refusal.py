"""A repair that would lose content is refused before anything is shown or written.

No rule of the engine loses content (the corpus and the property tests hold
it to that); these tests stand in a lossy engine to show what a user gets if
one ever did: a refusal naming what would be lost, and the file untouched.
"""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from inspector import cli, diagnosis, formats
from inspector.engine import Repair, repair_history
from inspector.engine.conservation import ContentLost
from inspector.local import fix

HISTORY = [
    {"role": "user", "content": "find the invoice"},
    {
        "role": "assistant",
        "content": "looking",
        "metadata": {"tool_calls": [{"tool_call_id": "c1", "name": "search", "arguments": {}}]},
    },
]


def dropping_the_first_message(messages, *args, **kwargs) -> Repair:
    """The real repair, then a bug: the user's first message is lost."""
    real = repair_history(messages, *args, **kwargs)
    return Repair(real.messages[1:], real.interrupted, real.actions)


@pytest.fixture
def lossy_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diagnosis, "repair_history", dropping_the_first_message)


def test_a_real_repair_is_not_refused():
    parsed = formats.load(orjson.dumps(HISTORY))
    assert diagnosis.diagnose(parsed).needs_repair
    assert diagnosis.repaired_bytes(parsed)


def test_a_lossy_repair_is_refused_by_the_diagnosis_and_the_download(lossy_engine):
    parsed = formats.load(orjson.dumps(HISTORY))
    with pytest.raises(ContentLost, match=r"text of message 0 \(find the invoice\)"):
        diagnosis.repair_parsed(parsed)
    with pytest.raises(ContentLost):
        diagnosis.diagnose(parsed)
    with pytest.raises(ContentLost):
        diagnosis.repaired_bytes_all([parsed])


def test_the_repair_command_refuses_it_with_exit_2(lossy_engine, tmp_path: Path, capsys):
    path = tmp_path / "history.json"
    path.write_bytes(orjson.dumps(HISTORY))
    out = io.StringIO()
    assert cli.main(["repair", str(path)], out) == cli.BAD_INPUT
    assert out.getvalue() == ""
    assert "would lose" in capsys.readouterr().err


def test_fix_in_place_refuses_it_and_leaves_the_file_alone(lossy_engine, tmp_path: Path):
    path = tmp_path / "history.json"
    data = orjson.dumps(HISTORY)
    path.write_bytes(data)
    outcome = fix.fix(path, quiet_seconds=0)
    assert outcome.status == "refused"
    assert "would lose" in outcome.reason
    assert path.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.json"]
