"""Every worked example in shared/spec/cases, run as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from inspector.engine import Buffer
from tests.testdata import CASES

from .helpers import repair_history

CASE_FILES = sorted(CASES.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    return orjson.loads(path.read_bytes())


def test_the_shared_cases_are_there() -> None:
    # A moved or empty folder must fail loudly, not pass with zero cases.
    assert CASE_FILES, f"no spec cases found in {CASES}"
    kinds = {_load(path)["kind"] for path in CASE_FILES}
    assert kinds <= {"repair", "buffer"}, f"unknown case kinds: {kinds}"


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda path: path.stem)
def test_spec_case(path: Path) -> None:
    case = _load(path)
    expected = case["expected"]
    if case["kind"] == "buffer":
        buffer = Buffer(case["input"])
        buffer.append(case["append"])
        assert orjson.dumps(buffer.messages) == orjson.dumps(expected["messages"])
        return
    read_only = case.get("options", {}).get("read_only")
    is_read_only = None if read_only is None else set(read_only).__contains__
    repaired = repair_history(case["input"], is_read_only)
    assert orjson.dumps(repaired.messages) == orjson.dumps(expected["messages"])
    assert repaired.interrupted == expected["interrupted"]
    assert {action.rule for action in repaired.actions} == set(expected["rules"])
