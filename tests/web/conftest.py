"""Fixtures for the web tests: transcripts stored for the owner, built on the shared users."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from tests.testdata import CORPUS, read

BROKEN_CLAUDE_CODE = (
    CORPUS
    / "claude-code"
    / "broken"
    / (
        "entireio-cli__entire-checkpoints__4c-02af2759b6-0-full__session-2026-01-13-"
        "5a3bb1c8-c3ce-466e-b487-24212cbf1da1.claude.jsonl"
    )
)

XSS_TEXT = '<script>window.__xss=1</script> and <img src=x onerror="window.__xss=1">'


def canonical(*messages: dict) -> bytes:
    return orjson.dumps(list(messages))


def call(call_id: str, name: str = "search", arguments: object = None) -> dict:
    return {"tool_call_id": call_id, "name": name, "arguments": arguments or {"q": "x"}}


def assistant(*calls: dict, content: str = "") -> dict:
    return {"role": "assistant", "content": content, "metadata": {"tool_calls": list(calls)}}


def result(call_id: str, content: str = "ok") -> dict:
    return {"role": "tool", "content": content, "metadata": {"tool_call_id": call_id}}


def user(content: str) -> dict:
    return {"role": "user", "content": content}


# A call with no result (PAIR-1), a repeated id (ID-1) and a result with no call (PAIR-3).
BROKEN_CANONICAL = canonical(
    user("find the ticket"),
    assistant(call("c1"), content="Looking."),
    user("stop, try again"),
    assistant(call("c2", "fetch"), content="Fetching."),
    result("c2", "ticket 7"),
    assistant(call("c2", "fetch"), content="Again."),
    result("c2", "ticket 7 again"),
    result("nope", "stray result"),
    assistant(content="Done."),
)

HEALTHY_CANONICAL = canonical(
    user("hi"),
    assistant(call("a1"), content="Searching."),
    result("a1", "found"),
    assistant(content="Found it."),
)

XSS_CANONICAL = canonical(
    user(XSS_TEXT),
    assistant(call("x1", name="<b>tool</b>", arguments={"html": XSS_TEXT}), content=XSS_TEXT),
    user(XSS_TEXT),
)


def broken_history(turns: int) -> bytes:
    """Every rule the timeline shows, spread evenly: 661 rows for 300 turns."""
    messages = [user("start")]
    for n in range(turns):
        kind = n % 10
        if kind == 3:  # PAIR-1: a call never answered
            messages.append(assistant(call(f"k{n}"), content=f"dangling {n}"))
        elif kind == 5:  # ID-1: an id used before
            messages += [assistant(call("dup"), content=f"again {n}"), result("dup", f"dup {n}")]
        elif kind == 7:  # PAIR-2: results after a user turn, out of order
            messages += [
                assistant(call(f"a{n}"), call(f"b{n}")),
                user("steer"),
                result(f"b{n}"),
                result(f"a{n}"),
            ]
        elif kind == 8:  # PAIR-3 and MSG-1: a stray result, a blank placeholder
            messages += [result(f"stray{n}", "stray"), {"role": "assistant", "content": "  "}]
        else:
            messages += [assistant(call(f"k{n}"), content=f"step {n}"), result(f"k{n}", f"ok {n}")]
    return canonical(*messages)


BROKEN_LONG = broken_history(300)


def unanswered_calls(count: int) -> bytes:
    """``count`` calls none of which gets a result: long lists of findings and provider issues."""
    return canonical(
        user("go"), *[assistant(call(f"d{n}"), content=f"try {n}") for n in range(count)]
    )


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    # The user fixtures set passwords; the real hasher spends ~0.3 s on each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def store_for(owner) -> Callable[..., object]:
    """Store bytes for a user (the owner by default) and return the transcript."""
    from inspector.web.store import store_upload

    def store(data: bytes, name: str = "transcript.json", user=None):
        transcript, _ = store_upload(user or owner, data, name)
        return transcript

    return store


@pytest.fixture
def transcript(store_for):
    return store_for(BROKEN_CANONICAL, "broken.json")


@pytest.fixture
def claude_transcript(store_for):
    return store_for(read(BROKEN_CLAUDE_CODE), BROKEN_CLAUDE_CODE.name)


@pytest.fixture
def forget_diagnoses():
    """Empty the in-process diagnosis cache so a test reads storage."""
    from inspector.web import store

    store._memory.clear()
    yield
    store._memory.clear()


@pytest.fixture
def refuse_long_lists(monkeypatch):
    """Fail the test if anything reads a stored diagnosis's long lists past their heads."""
    from inspector.diagnosis import stored as cachefile

    def refuse(*path):
        raise AssertionError(f"read the long lists for {path}")

    monkeypatch.setattr(cachefile._Rest, "get", refuse)
