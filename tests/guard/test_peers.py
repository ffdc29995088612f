"""The guard on the broken histories its peers are built for (``peer_cases``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inspector.engine.providers import check
from tests.guard.peer_cases import CASES, texts
from transcript_inspector import guard


@pytest.mark.parametrize(("name", "provider", "body"), CASES, ids=[c[0] for c in CASES])
def test_each_peer_case_is_repaired_and_loses_no_text(
    name: str, provider: str, body: dict[str, Any]
) -> None:
    guarded = guard(body, provider)
    if check(provider, body).accepted:
        # A call cut mid-stream that Chat Completions takes as it is: sent as it is.
        assert not guarded.changed and orjson.dumps(guarded.body) == orjson.dumps(body)
        return
    assert guarded.changed
    assert check(provider, guarded.body).accepted, guarded.findings
    # A text moved into a note or a result is still there, inside a longer string.
    sent = texts(guarded.body)
    assert all(any(text in out for out in sent) for text in texts(body)), name


def test_most_peer_cases_are_refused_as_they_are() -> None:
    refused = [name for name, provider, body in CASES if check(provider, body).rejected]
    assert len(refused) >= len(CASES) - 1
