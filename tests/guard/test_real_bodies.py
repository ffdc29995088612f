"""The guard on request bodies real providers answered, and on the corpus' recorded requests.

``tests/data/oracle`` holds ~1,000 requests with the provider's real answer:
an accepted one must come back byte for byte; a refused one must come back
accepted by the provider check, or, where no repair rule changes anything,
as it was with the provider's words in its findings. The corpus'
recorded exchanges (pydantic-ai's, crewAI's... ``*.extracted.json``) give
more real bodies, each request as the agent sent it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from inspector import diagnosis, formats
from inspector.engine.providers import CANNOT_TELL, check
from inspector.formats.canonical import request_shape
from tests.testdata import CORPUS, ORACLE, files, read
from transcript_inspector import guard

ORACLE_CASES = files(ORACLE)


def _case(path: Path) -> dict[str, Any]:
    case: dict[str, Any] = orjson.loads(read(path))
    return case


@pytest.mark.parametrize("path", ORACLE_CASES, ids=[p.name[:80] for p in ORACLE_CASES])
def test_oracle_body(path: Path) -> None:
    case = _case(path)
    provider, body, model = case["provider"], case["request"], case.get("model")
    sent = orjson.dumps(body)
    guarded = guard(body, provider, model=model)
    assert orjson.dumps(body) == sent
    before = check(provider, body, model=model)
    if case["status"] == 200 or before.state == CANNOT_TELL:
        # What the provider took (or the check cannot judge) goes out exactly as it was.
        assert orjson.dumps(guarded.body) == sent
        assert not guarded.changed
        return
    texts = [f["text"] for f in guarded.findings]
    assert case["error"] in texts  # the provider's own words, first
    if guarded.changed:
        after = check(provider, guarded.body, model=model)
        assert after.accepted, [p.text for p in after.problems]
    else:
        # Only what no repair touches goes out as it came: the engine finds nothing to do.
        parsed = formats.load(sent, provider)
        assert diagnosis.repair_parsed(parsed).actions == []
        assert orjson.dumps(guarded.body) == sent


def test_the_oracle_has_refused_bodies_the_guard_repairs() -> None:
    repaired = []
    for path in ORACLE_CASES:
        case = _case(path)
        if case["status"] != 200 and check(case["provider"], case["request"]).rejected:
            guarded = guard(case["request"], case["provider"], model=case.get("model"))
            if guarded.changed:
                repaired.append(path.name)
    assert len(repaired) >= 5


def _recorded_requests() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path in files(CORPUS, "*.extracted.json"):
        recording = orjson.loads(read(path))
        for number, item in enumerate(recording["interactions"]):
            body = item.get("request_body")
            if isinstance(body, dict):
                provider = request_shape(body, str(item.get("uri") or ""))
                found.append((f"{path.name}#{number}", provider, body))
    return found


RECORDED = _recorded_requests()


@pytest.mark.parametrize(("name", "provider", "body"), RECORDED, ids=[r[0][:90] for r in RECORDED])
def test_recorded_request(name: str, provider: str, body: dict[str, Any]) -> None:
    sent = orjson.dumps(body)
    guarded = guard(body, provider)
    if check(provider, body).accepted:
        assert orjson.dumps(guarded.body) == sent
        assert not guarded.changed and not guarded.findings
    else:
        assert check(provider, guarded.body).accepted, guarded.findings


def test_the_corpus_gives_recorded_requests_for_every_provider() -> None:
    assert {provider for _, provider, _ in RECORDED} == {
        "openai-chat",
        "responses",
        "anthropic",
        "gemini",
    }
    assert len(RECORDED) >= 40
