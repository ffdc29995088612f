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
from inspector.formats.exchanges import request_shape
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


def _drop_first_result(body: dict[str, Any], provider: str) -> tuple[dict[str, Any], int] | None:
    """``body`` with its first tool result taken out, and the list position it stood at.

    What a crashed or stopped agent loop leaves: the call went out, its result
    never came back. ``None`` for a body with no result.
    """
    key = {"openai-chat": "messages", "anthropic": "messages"}.get(provider, "")
    key = key or {"responses": "input", "gemini": "contents"}[provider]
    items = list(body.get(key) or [])
    for at, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        if provider == "openai-chat" and item.get("role") == "tool":
            return {**body, key: items[:at] + items[at + 1 :]}, at
        if provider == "responses" and str(item.get("type", "")).endswith("_output"):
            return {**body, key: items[:at] + items[at + 1 :]}, at
        inner = "content" if provider == "anthropic" else "parts"
        parts = item.get(inner)
        kind = "tool_result" if provider == "anthropic" else "functionResponse"
        if not isinstance(parts, list):
            continue
        for n, part in enumerate(parts):
            if isinstance(part, dict) and (part.get("type") == kind or kind in part):
                rest = parts[:n] + parts[n + 1 :]
                kept = [{**item, inner: rest}] if rest else []
                return {**body, key: items[:at] + kept + items[at + 1 :]}, at
    return None


@pytest.mark.parametrize("path", ORACLE_CASES, ids=[p.name[:80] for p in ORACLE_CASES])
def test_an_accepted_body_that_loses_a_result_is_repaired_and_keeps_its_start(path: Path) -> None:
    case = _case(path)
    provider, model = case["provider"], case.get("model")
    if case["status"] != 200 or not check(provider, case["request"], model=model).accepted:
        return
    broken = _drop_first_result(case["request"], provider)
    if broken is None:
        return
    body, at = broken
    verdict = check(provider, body, model=model)
    guarded = guard(body, provider, model=model)
    key = {"responses": "input", "gemini": "contents"}.get(provider, "messages")
    if verdict.accepted:  # a result the provider does not need (one a server tool had)
        assert not guarded.changed
        return
    assert guarded.changed, guarded.findings
    after = check(provider, guarded.body, model=model)
    assert after.accepted, [p.text for p in after.problems]
    # Everything up to the first of the model's items before the loss went out as it was:
    # the results of the turn the repair answers follow that one (consecutive model turns,
    # which Gemini joins, are each a turn to the repair; SPEC §4).
    start = at
    while start > 0 and _from_the_model(body[key][start - 1], provider):
        start -= 1
    assert start < at
    assert guarded.body[key][: start + 1] == body[key][: start + 1]


def _from_the_model(item: Any, provider: str) -> bool:
    if not isinstance(item, dict):
        return False
    if provider == "responses":
        kind = str(item.get("type", "message"))
        return (kind != "message" and not kind.endswith("_output")) or item.get(
            "role"
        ) == "assistant"
    return item.get("role") == ("model" if provider == "gemini" else "assistant")


def test_many_accepted_bodies_have_a_result_to_lose() -> None:
    broken = [
        path
        for path in ORACLE_CASES
        if _case(path)["status"] == 200
        and _drop_first_result(_case(path)["request"], _case(path)["provider"]) is not None
    ]
    assert len(broken) >= 900
