"""A local stand-in for the providers' endpoints: it records each body and answers as they do.

A real HTTP server on 127.0.0.1 (a thread of the test process; the
``endpoint`` fixture in ``conftest.py`` starts and stops it) that keeps every
request body it receives and answers just enough for the client libraries to
parse the answer.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

CHAT_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4.1",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "ok"},
        }
    ],
}
RESPONSES_ANSWER = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-5",
    "status": "completed",
    "output": [],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
ANTHROPIC_ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
GEMINI_ANSWER = {
    "candidates": [
        {
            "content": {"role": "model", "parts": [{"text": "ok"}]},
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
    "modelVersion": "gemini-2.5-flash",
}
ANSWERS = {"/v1/chat/completions": CHAT_ANSWER, "/v1/responses": RESPONSES_ANSWER}
ANSWERS["/v1/messages"] = ANTHROPIC_ANSWER


def answer_for(path: str) -> dict[str, Any]:
    """The answer to a POST to ``path``: Gemini's for any ``models/...:generateContent``."""
    path = path.split("?", 1)[0]
    if path.endswith(":generateContent"):
        return GEMINI_ANSWER
    return ANSWERS[path]


class Endpoint:
    def __init__(self) -> None:
        self.received: list[tuple[str, bytes]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                endpoint.received.append((self.path, self.rfile.read(length)))
                answer = orjson.dumps(answer_for(self.path))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def body(self) -> dict[str, Any]:
        found: dict[str, Any] = orjson.loads(self.received[-1][1])
        return found
