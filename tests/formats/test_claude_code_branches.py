"""Reading a branch other than the active one from a forked Claude Code session."""

from __future__ import annotations

import pytest

from inspector.formats import FormatError, claude_code
from tests.testdata import CORPUS, read

FILES = CORPUS / "claude-code" / "files"
FORKED = [
    "daaain-claude-code-log__dag_fork.jsonl",
    "arcreflex-agent-transcripts__branching.input.jsonl",
]


@pytest.mark.parametrize("name", FORKED)
def test_each_listed_branch_can_be_read_and_is_then_the_one_shown(name):
    data = read(FILES / name)
    default = claude_code.parse(data)
    for branch in default.meta["branches"]:
        parsed = claude_code.parse(data, leaf=branch["leaf"])
        shown = [b for b in parsed.meta["branches"] if b["active"]]
        assert [b["leaf"] for b in shown] == [branch["leaf"]]
        assert shown[0]["length"] == branch["length"]
        assert parsed.meta["branches"][0]["leaf"] == branch["leaf"]


def test_the_last_leaf_reads_the_same_as_the_default():
    data = read(FILES / FORKED[0])
    default = claude_code.parse(data)
    last = default.meta["branches"][0]["leaf"]
    assert claude_code.parse(data, leaf=last).messages == default.messages


def test_a_leaf_that_is_not_in_the_session_is_refused():
    with pytest.raises(FormatError, match="ends a branch"):
        claude_code.parse(read(FILES / FORKED[0]), leaf="not-a-uuid")
