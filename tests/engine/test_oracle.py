"""The provider checks against requests real providers answered (tests/data/oracle/).

Every case runs through the check for its provider: a request the provider
accepted gets no problem, one it rejected gets a problem whose text is the
provider's own (the first problem reported, as the provider names the first
thing it refuses). A body that continues a history the provider stores
(``previous_response_id``, ``conversation``) is the one kind the check may
call undecidable ("cannot tell from the body alone"): it then never says
rejected for what may live upstream, and never says accepted either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from inspector.engine.providers import ACCEPTED, CANNOT_TELL, REJECTED, check
from tests.testdata import ORACLE, files, read

CASES = files(ORACLE)


def load(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = orjson.loads(read(path))
    return case


def verdict_of(case: dict[str, Any]) -> Any:
    return check(case["provider"], case["request"], model=case.get("model"))


@pytest.mark.parametrize("path", CASES, ids=[str(p.relative_to(ORACLE)) for p in CASES])
def test_check_agrees_with_the_provider(path: Path) -> None:
    case = load(path)
    verdict = verdict_of(case)
    if verdict.state == CANNOT_TELL:
        # Only a body whose history is partly stored upstream is undecidable.
        assert case["stateful"], (verdict.reason, case["source"])
        assert verdict.reason and not verdict.problems
        return
    if case["status"] == 200:
        assert verdict.state == ACCEPTED, [p.text for p in verdict.problems]
        assert verdict.problems == ()
    else:
        assert verdict.state == REJECTED, case["error"]
        assert verdict.problems[0].text == case["error"], [p.text for p in verdict.problems]


def test_the_undecidable_cases_are_the_stateful_ones() -> None:
    """How many cases the check cannot decide, and why: each continues a stored response."""
    undecided = []
    for path in CASES:
        case = load(path)
        verdict = verdict_of(case)
        if verdict.state == CANNOT_TELL:
            undecided.append(path)
            assert "previous_response_id" in verdict.reason or "conversation" in verdict.reason
        elif case["stateful"]:
            # A stateful body is decided only by a problem the body alone shows.
            assert verdict.state == REJECTED
    stateful = [p for p in CASES if load(p)["stateful"]]
    assert undecided == stateful
    assert len(undecided) == 7
    assert len(CASES) >= 990
