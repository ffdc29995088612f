"""Broken histories that the guard's peers are built for, as request bodies of each provider.

The kinds ``turnsafe`` (PyPI, 0.1.0) names in its docs (unanswered call,
misplaced, orphan and repeated results, repeated call ids, a tool_result not
first, empty content) and the ones only this engine reads (cut calls,
refused id patterns, empty ids, Responses items, Gemini turns). Each case is
``(name, provider, body)``; every text in it is unique, so "this text is in
the output" means what it says. ``tests/guard/test_peers.py`` holds the
guard to them; ``bench/bench_peers.py`` puts the peers beside it.
"""

from __future__ import annotations

from typing import Any

Body = dict[str, Any]


def _chat_call(cid: str, arguments: str = '{"q": "x"}') -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "search", "arguments": arguments}}


def _chat(*messages: dict[str, Any]) -> Body:
    return {"model": "gpt-4.1", "messages": [{"role": "user", "content": "ask one"}, *messages]}


def _claude(*messages: dict[str, Any]) -> Body:
    first = {"role": "user", "content": [{"type": "text", "text": "ask two"}]}
    return {"model": "claude-sonnet-4-5", "max_tokens": 256, "messages": [first, *messages]}


def _use(cid: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": "search", "input": {"q": "y"}}


def _result(cid: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": text}


CASES: list[tuple[str, str, Body]] = [
    (
        "unanswered call",
        "openai-chat",
        _chat(
            {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
            {"role": "user", "content": "stop one"},
        ),
    ),
    (
        "result after a user message",
        "openai-chat",
        _chat(
            {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
            {"role": "user", "content": "steer one"},
            {"role": "tool", "tool_call_id": "call_1", "content": "result one"},
        ),
    ),
    (
        "orphan result",
        "openai-chat",
        _chat({"role": "tool", "tool_call_id": "call_gone", "content": "result two"}),
    ),
    (
        "repeated result",
        "openai-chat",
        _chat(
            {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_1")]},
            {"role": "tool", "tool_call_id": "call_1", "content": "result three"},
            {"role": "tool", "tool_call_id": "call_1", "content": "result four"},
        ),
    ),
    (
        "call id used twice in a turn",
        "openai-chat",
        _chat(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_chat_call("call_0"), _chat_call("call_0", '{"q": "z"}')],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": "result five"},
            {"role": "tool", "tool_call_id": "call_0", "content": "result six"},
        ),
    ),
    (
        "call cut mid-stream",
        "openai-chat",
        _chat(
            {
                "role": "assistant",
                "content": "prose one",
                "tool_calls": [_chat_call("call_1", '{"q": "inv')],
            },
            {"role": "user", "content": "go on one"},
        ),
    ),
    (
        "unanswered tool_use",
        "anthropic",
        _claude(
            {"role": "assistant", "content": [_use("toolu_1")]},
            {"role": "user", "content": [{"type": "text", "text": "stop two"}]},
        ),
    ),
    (
        "tool_result not first",
        "anthropic",
        _claude(
            {"role": "assistant", "content": [_use("toolu_1")]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "steer two"},
                    _result("toolu_1", "result seven"),
                ],
            },
        ),
    ),
    (
        "empty text block",
        "anthropic",
        _claude(
            {"role": "assistant", "content": [{"type": "text", "text": ""}, _use("toolu_1")]},
            {"role": "user", "content": [_result("toolu_1", "result eight")]},
        ),
    ),
    (
        "Kimi ids (functions.read:0)",
        "anthropic",
        _claude(
            {"role": "assistant", "content": [_use("functions.search:0")]},
            {"role": "user", "content": [_result("functions.search:0", "result nine")]},
        ),
    ),
    (
        "Responses: lost output",
        "responses",
        {
            "model": "gpt-5",
            "input": [
                {"role": "user", "content": "ask three"},
                {"type": "function_call", "call_id": "call_r", "name": "search", "arguments": "{}"},
                {"role": "user", "content": "stop three"},
            ],
        },
    ),
    (
        "Gemini: one response for two calls",
        "gemini",
        {
            "contents": [
                {"role": "user", "parts": [{"text": "ask four"}]},
                {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "search", "args": {"q": "a"}}},
                        {"functionCall": {"name": "search", "args": {"q": "b"}}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": "search", "response": {"r": "ten"}}}],
                },
            ]
        },
    ),
]


def texts(value: Any) -> set[str]:
    """Every text of more than a word in ``value`` (the cases' unique texts), wherever it is.

    A call's ``arguments`` are not text: a cut call's go with it (INT-1), by design.
    """
    found: set[str] = set()
    if isinstance(value, str):
        if " " in value:
            found.add(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != "arguments":
                found |= texts(item)
    elif isinstance(value, list):
        for item in value:
            found |= texts(item)
    return found
