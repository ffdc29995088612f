"""The writer shared by the shapes whose records chain by a parent id (``formats.linked``)."""

from __future__ import annotations

import orjson
import pytest

from tests.formats.shapes import check_written_back
from tests.testdata import CORPUS, read

# A broken file of each chained shape, and the key its records name their parent by.
CHAINED = {
    "qwen": (CORPUS / "qwen" / "derived__qwen-writer-crashed.jsonl", "parentUuid"),
    "copilot": (CORPUS / "copilot" / "derived__cadra-crashed-mid-tool.events.jsonl", "parentId"),
    "droid": (CORPUS / "droid" / "derived__zirv-crashed-in-tool.jsonl", "parentId"),
}


@pytest.mark.parametrize("parent", [[], {}, ["x"], {"id": "x"}], ids=["list", "dict", "ids", "obj"])
@pytest.mark.parametrize("shape", CHAINED)
def test_a_parent_that_is_no_id_is_written_back_without_a_crash(shape: str, parent: object):
    # A damaged record whose parent is a list or an object names no record: the repair is
    # still written (it raised TypeError, an error page on download and a crash of fix;
    # found by the damaged-sessions properties under the fuzz profile).
    path, key = CHAINED[shape]
    lines = read(path).splitlines()
    for n, line in enumerate(lines):
        value = orjson.loads(line)
        if key in value and n > 0:
            lines[n] = orjson.dumps({**value, key: parent})
    check_written_back(b"\n".join(lines) + b"\n")
