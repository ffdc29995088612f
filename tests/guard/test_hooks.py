"""The httpx transports with the official clients, against a local endpoint that records bodies.

The endpoint (``endpoint.py``, the ``endpoint`` fixture) is a real HTTP
server on 127.0.0.1 that keeps every request body it receives.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from inspector.engine.providers import check
from tests.guard.endpoint import Endpoint
from transcript_inspector import Guarded
from transcript_inspector.hooks import AsyncGuardTransport, GuardTransport, provider_of

LOST_RESULT = [
    {"role": "user", "content": "Find it."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    {"role": "user", "content": "Stop."},
]


def openai_client(endpoint: Endpoint, **kwargs: Any) -> openai.OpenAI:
    http = httpx.Client(transport=GuardTransport(**kwargs))
    return openai.OpenAI(base_url=f"{endpoint.url}/v1", api_key="test", http_client=http)


def test_the_openai_client_sends_a_lost_result_repaired(
    endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, Guarded]] = []
    client = openai_client(endpoint, on_guard=lambda p, g: seen.append((p, g)))
    with caplog.at_level(logging.WARNING, logger="transcript_inspector.guard"):
        answer = client.chat.completions.create(model="gpt-4.1", messages=LOST_RESULT)
    assert answer.choices[0].message.content == "ok"
    body = endpoint.body()
    assert body["model"] == "gpt-4.1"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "user"]
    assert body["messages"][2]["tool_call_id"] == "call_1"
    assert check("openai-chat", body).accepted
    assert [(p, g.body) for p, g in seen] == [("openai-chat", body)]
    assert "guarded a openai-chat request" in caplog.text and "PAIR-1" in caplog.text


def test_an_accepted_request_reaches_the_endpoint_byte_for_byte(endpoint: Endpoint) -> None:
    healthy = [LOST_RESULT[0], {"role": "assistant", "content": "Found."}, LOST_RESULT[2]]
    plain = openai.OpenAI(base_url=f"{endpoint.url}/v1", api_key="test")
    plain.chat.completions.create(model="gpt-4.1", messages=healthy)
    openai_client(endpoint).chat.completions.create(model="gpt-4.1", messages=healthy)
    assert endpoint.received[0] == endpoint.received[1]


def test_the_openai_client_sends_a_responses_orphan_as_a_note(endpoint: Endpoint) -> None:
    client = openai_client(endpoint)
    items = [
        {"role": "user", "content": "Go."},
        {"type": "function_call_output", "call_id": "call_lost", "output": "42"},
    ]
    client.responses.create(model="gpt-5", input=items, instructions="Be brief.")
    body = endpoint.body()
    assert body["instructions"] == "Be brief."
    assert not any(i.get("type") == "function_call_output" for i in body["input"])
    assert check("responses", body).accepted


def test_the_anthropic_client_sends_ids_it_accepts(endpoint: Endpoint) -> None:
    # anthropic 2.x sends through httpx2, its fork of httpx: the same transport wraps it.
    http = httpx2.Client(transport=GuardTransport(httpx2.HTTPTransport()))
    client = anthropic.Anthropic(base_url=endpoint.url, api_key="test", http_client=http)
    messages: Any = [
        {"role": "user", "content": "Read."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "functions.read:0", "name": "read", "input": {}}
            ],
        },
        {"role": "user", "content": "Never mind."},
    ]
    answer = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=messages)
    assert answer.content[0].type == "text"
    body = endpoint.body()
    assert body["max_tokens"] == 64
    call = body["messages"][1]["content"][0]
    assert call["id"] == "functions_read_0"
    assert body["messages"][2]["content"][0]["tool_use_id"] == "functions_read_0"
    assert check("anthropic", body).accepted


def test_the_async_openai_client_is_guarded_too(endpoint: Endpoint) -> None:
    async def send() -> None:
        http = httpx.AsyncClient(transport=AsyncGuardTransport())
        client = openai.AsyncOpenAI(base_url=f"{endpoint.url}/v1", api_key="t", http_client=http)
        await client.chat.completions.create(model="gpt-4.1", messages=LOST_RESULT)
        await client.close()

    # A thread of its own: in the whole suite the browser tests' Playwright keeps an event
    # loop running in this one, where asyncio.run refuses to start another.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, send()).result()
    assert check("openai-chat", endpoint.body()).accepted
    assert endpoint.body()["messages"][2]["role"] == "tool"


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("https://api.openai.com/v1/chat/completions", "openai-chat"),
        ("https://api.openai.com/v1/responses", "responses"),
        ("https://api.anthropic.com/v1/messages", "anthropic"),
        ("https://x.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent", "gemini"),
        ("https://api.openai.com/v1/embeddings", None),
        ("https://api.anthropic.com/v1/messages/count_tokens", None),
    ],
)
def test_the_provider_is_read_from_the_path(url: str, provider: str | None) -> None:
    assert provider_of(httpx.URL(url)) == provider
