"""The guard under LiteLLM, against a local endpoint that records what it received.

``GuardCallback`` guards the provider body each route writes (OpenAI Chat,
Anthropic, Gemini from ``completion()``'s OpenAI-shaped messages; Responses
from ``responses()``), just before LiteLLM sends it. The transport in
``litellm.client_session`` reaches only the OpenAI-routed calls.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# LiteLLM fetches a price list over the network on import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
import litellm
import orjson
import pytest

from inspector.engine.providers import check
from tests.guard.endpoint import Endpoint
from tests.guard.test_hooks import LOST_RESULT
from transcript_inspector import Guarded
from transcript_inspector.hooks import GuardTransport
from transcript_inspector.litellm import GuardCallback, provider_of_body

HEALTHY = [
    {"role": "user", "content": "Find it."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "found"},
    {"role": "user", "content": "Thanks."},
]
LOST_OUTPUT = [
    {"role": "user", "content": "Find it."},
    {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
    {"role": "user", "content": "Stop."},
]

Seen = list[tuple[str, Guarded]]


# LiteLLM copies ``callbacks`` into these lists on a call: each test starts with them empty.
LISTS = ["callbacks", "input_callback", "_async_input_callback", "success_callback"]
LISTS += ["_async_success_callback", "failure_callback", "_async_failure_callback"]


@pytest.fixture(autouse=True)
def no_callbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LISTS:
        monkeypatch.setattr(litellm, name, [])


@pytest.fixture
def seen() -> Iterator[Seen]:
    found: Seen = []
    litellm.callbacks = [GuardCallback(on_guard=lambda provider, g: found.append((provider, g)))]
    yield found


def chat(endpoint: Endpoint, model: str, messages: list[dict[str, Any]]) -> Callable[[], Any]:
    base = f"{endpoint.url}/v1" if model.startswith("openai/") else endpoint.url
    extra = {"max_tokens": 64} if model.startswith("anthropic/") else {}
    return lambda: litellm.completion(
        model=model, api_base=base, api_key="test", messages=messages, **extra
    )


ROUTES = [
    ("openai/gpt-4.1", "openai-chat", "/v1/chat/completions"),
    ("anthropic/claude-sonnet-4-5", "anthropic", "/v1/messages"),
    ("gemini/gemini-2.5-flash", "gemini", "/models/gemini-2.5-flash:generateContent"),
]


@pytest.mark.parametrize(("model", "provider", "path"), ROUTES)
def test_a_completion_is_sent_guarded_on_each_route(
    endpoint: Endpoint,
    seen: Seen,
    caplog: pytest.LogCaptureFixture,
    model: str,
    provider: str,
    path: str,
) -> None:
    with caplog.at_level(logging.WARNING, logger="transcript_inspector.guard"):
        answer = chat(endpoint, model, LOST_RESULT)()
    assert answer.choices[0].message.content == "ok"
    sent_to, raw = endpoint.received[-1]
    assert sent_to.split("?")[0] == path
    body = orjson.loads(raw)
    assert not check(provider, orjson.loads(orjson.dumps(seen[0][1].body))).rejected
    assert check(provider, body).accepted, body
    # What the endpoint got is what the guard gave back: the repaired history, sent.
    assert [(p, g.changed) for p, g in seen] == [(provider, True)]
    key = {"gemini": "contents"}.get(provider, "messages")
    assert body[key] == seen[0][1].body[key]
    assert "PAIR-1" in caplog.text and f"guarded a {provider} request" in caplog.text


@pytest.mark.parametrize(("model", "provider", "path"), ROUTES)
def test_an_accepted_completion_goes_out_as_litellm_writes_it(
    endpoint: Endpoint, model: str, provider: str, path: str
) -> None:
    chat(endpoint, model, HEALTHY)()  # no callback: LiteLLM's own bytes
    found: list[tuple[str, Guarded]] = []
    litellm.callbacks = [GuardCallback(on_guard=lambda *a: found.append(a))]
    chat(endpoint, model, HEALTHY)()
    (first, second) = endpoint.received
    assert first == second
    assert [(p, g.changed, g.findings) for p, g in found] == [(provider, False, [])]


def test_a_responses_call_is_sent_guarded(endpoint: Endpoint, seen: Seen) -> None:
    litellm.responses(
        model="openai/gpt-5", api_base=f"{endpoint.url}/v1", api_key="test", input=LOST_OUTPUT
    )
    sent_to, raw = endpoint.received[-1]
    body = orjson.loads(raw)
    assert sent_to == "/v1/responses"
    assert [item.get("type") for item in body["input"]] == [
        None,
        "function_call",
        "function_call_output",
        None,
    ]
    assert body["input"][2]["call_id"] == "call_1"
    assert check("responses", body).accepted
    assert [(p, g.changed) for p, g in seen] == [("responses", True)]


def test_an_async_completion_is_sent_guarded(endpoint: Endpoint, seen: Seen) -> None:
    async def send() -> None:
        await litellm.acompletion(
            model="anthropic/claude-sonnet-4-5",
            api_base=endpoint.url,
            api_key="test",
            messages=LOST_RESULT,
            max_tokens=64,
        )

    # A thread of its own: in the whole suite Playwright's loop runs in this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, send()).result()
    assert check("anthropic", endpoint.body()).accepted
    assert [(p, g.changed) for p, g in seen] == [("anthropic", True)]


@pytest.mark.parametrize(
    ("body", "route", "provider"),
    [
        ({"contents": []}, "gemini", "gemini"),
        ({"contents": []}, "vertex_ai", "gemini"),
        ({"messages": []}, "anthropic", "anthropic"),
        ({"messages": []}, "openai", "openai-chat"),
        ({"messages": []}, "deepseek", "openai-chat"),
        ({"input": []}, "openai", "responses"),
        ({"input": "one string"}, "openai", None),
        ({"prompt": "text"}, "openai", None),
        ([], "openai", None),
    ],
)
def test_the_provider_is_told_by_the_body_and_the_route(
    body: Any, route: str, provider: str | None
) -> None:
    assert provider_of_body(body, route) == provider


def test_a_call_with_no_body_to_guard_is_left_alone() -> None:
    callback = GuardCallback()
    details: dict[str, Any] = {"additional_args": {"complete_input_dict": {"prompt": "x"}}}
    callback.log_pre_api_call("m", [], details)
    callback.log_pre_api_call("m", [], {})
    callback.log_pre_api_call("m", [], None)
    assert details == {"additional_args": {"complete_input_dict": {"prompt": "x"}}}


def test_a_litellm_openai_call_through_the_transport_is_sent_guarded(
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
