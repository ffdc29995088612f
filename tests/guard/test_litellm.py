"""The guard under LiteLLM: its OpenAI-routed calls go through the ``httpx`` client it is given.

LiteLLM sends OpenAI (and OpenAI-compatible) calls through
``litellm.client_session``; the guard's transport there guards each body it
sends. Its Anthropic route uses a client of its own, which that setting does
not reach (``docs/guard.md`` says so).
"""

from __future__ import annotations

import os

# LiteLLM fetches a price list over the network on import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
import litellm
import pytest

from inspector.engine.providers import check
from tests.guard.endpoint import Endpoint
from tests.guard.test_hooks import LOST_RESULT
from transcript_inspector.hooks import GuardTransport


def test_a_litellm_openai_call_is_sent_guarded(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(litellm, "client_session", httpx.Client(transport=GuardTransport()))
    answer = litellm.completion(
        model="openai/gpt-4.1", api_base=f"{endpoint.url}/v1", api_key="test", messages=LOST_RESULT
    )
    assert answer.choices[0].message.content == "ok"
    body = endpoint.body()
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "user"]
    assert body["messages"][2]["tool_call_id"] == "call_1"
    assert check("openai-chat", body).accepted
