"""Recorded exchanges: the request and response bodies of recorded API calls.

The corpus' ``.extracted.json`` files hold the request and response bodies of
recorded API calls as ``{"interactions": [{"uri", "request_body",
"response_status", "response_body"}, ...]}``. Each request carries the whole
history so far, so the last exchange is the fullest conversation: its
request's messages with its response appended. Writing a changed history back
appends one more interaction holding the repaired history as its request (no
response), so the recording stays as it was and reading the file again gives
the repaired history. The four provider shapes read them. No Django.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector.formats.base import FormatError
from inspector.formats.detect import list_shape
from inspector.formats.jsondoc import dump_like


@dataclass(slots=True)
class Exchange:
    """One recorded request/response pair. ``index`` is its 0-based position."""

    index: int
    uri: str
    request: dict[str, Any]
    response: Any
    status: int | None


def exchanges(doc: Any) -> list[Exchange] | None:
    """The exchanges of an ``{"interactions": [...]}`` recording, or None if it is not one."""
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        return None
    found = []
    for index, item in enumerate(doc["interactions"]):
        if isinstance(item, dict) and isinstance(item.get("request_body"), dict):
            status = item.get("response_status")
            found.append(
                Exchange(
                    index,
                    str(item.get("uri") or ""),
                    item["request_body"],
                    item.get("response_body"),
                    status if isinstance(status, int) else None,
                )
            )
    return found


def request_shape(body: dict[str, Any], uri: str = "") -> str:
    """Which provider a recorded request body was sent to."""
    if "chat/completions" in uri:
        return "openai-chat"
    if uri.rstrip("/").endswith("/responses") or "/responses?" in uri:
        return "responses"
    if "generateContent" in uri or "generativelanguage" in uri or "aiplatform" in uri:
        return "gemini"
    if "/v1/messages" in uri:
        return "anthropic"
    if "contents" in body:
        return "gemini"
    if "input" in body:
        return "responses"
    messages = body.get("messages")
    if isinstance(messages, list):
        shape = list_shape(messages)
        if shape in ("anthropic", "openai-chat"):
            return shape
        if "max_tokens" in body and ("system" in body or "tool_choice" in body):
            return "anthropic"
        return "openai-chat"
    return ""


def use_exchange(
    found: list[Exchange],
    shape: str,
    conversation: int | None,
    meta: dict[str, Any],
    state: dict[str, Any],
) -> Exchange:
    """``pick_exchange``, noting in ``meta`` and ``state`` which exchange was read."""
    chosen = pick_exchange(found, shape, conversation)
    meta |= {"container": "exchanges", "exchanges": len(found), "exchange": chosen.index}
    meta["response_status"] = chosen.status
    state |= {"mode": "exchange", "exchange": chosen}
    return chosen


def pick_exchange(found: list[Exchange], shape: str, conversation: int | None) -> Exchange:
    """The exchange to read: the last one, or ``conversation`` (0-based) when given.

    Refuses (``FormatError``) when that exchange was sent to another provider:
    a recording can switch providers midway, and its last exchange decides.
    """
    if not found:
        raise FormatError("the recording holds no request bodies")
    if conversation is None:
        chosen = found[-1]
    elif 0 <= conversation < len(found):
        chosen = found[conversation]
    else:
        raise FormatError(
            f"the recording has {len(found)} exchanges; there is no exchange {conversation}"
        )
    actual = request_shape(chosen.request, chosen.uri)
    if actual != shape:
        api = actual or "an unknown API"
        number = chosen.index + 1
        raise FormatError(f"exchange {number} of the recording was sent to {api}, not {shape}")
    return chosen


def append_exchange(doc: dict[str, Any], chosen: Exchange, body: dict[str, Any]) -> dict[str, Any]:
    """The recording with one more interaction whose request is ``body`` (no response)."""
    interaction: dict[str, Any] = {"uri": chosen.uri, "request_body": body}
    return {**doc, "interactions": [*doc["interactions"], interaction]}


@dataclass(slots=True)
class Request:
    """What a provider document holds: ``read_request``'s answer.

    ``items`` is the list of messages (contents, input items) the history is
    read from; ``body`` the request body around it (``{}`` for a bare list);
    ``response`` the recorded response body of the exchange read (``None``
    unless the file is a recording); ``state`` and ``meta`` the ``Parsed``'s
    beginnings (``state["mode"]``: ``list``, ``body`` or ``exchange``).
    """

    items: list[Any]
    body: dict[str, Any]
    response: Any
    state: dict[str, Any]
    meta: dict[str, Any]


def read_request(
    doc: Any,
    data: bytes,
    shape: str,
    key: str,
    conversation: int | None,
    *,
    refused: str,
    is_body: Callable[[dict[str, Any]], bool] | None = None,
    text_input: bool = False,
) -> Request:
    """The items of a provider document: a bare list, a request body or a recording.

    A request body is an object whose ``key`` is a list (or, with ``is_body``,
    one that it accepts); a recording is read at its last exchange, or
    ``conversation``. ``FormatError`` with ``refused`` for anything else, and
    when the body's ``key`` is no list (with ``text_input``, a string is one
    user message, noted ``state["input_text"]``: the Responses ``input``).
    """
    state: dict[str, Any] = {"data": data, "doc": doc}
    meta: dict[str, Any] = {}
    body: dict[str, Any] = {}
    response = None
    if isinstance(doc, list):
        state["mode"] = "list"
        return Request(doc, body, response, state, meta)
    if isinstance(doc, dict) and (found := exchanges(doc)) is not None:
        chosen = use_exchange(found, shape, conversation, meta, state)
        body, response = chosen.request, chosen.response
    elif isinstance(doc, dict) and (
        is_body(doc) if is_body is not None else isinstance(doc.get(key), list)
    ):
        body = doc
        state["mode"] = "body"
    else:
        raise FormatError(refused)
    items = body.get(key)
    if text_input and isinstance(items, str):
        items = [{"role": "user", "content": items}]
        state["input_text"] = True
    if not isinstance(items, list):
        raise FormatError(f"the request body has no {key!r} list")
    return Request(items, body, response, state, meta)


def request_body(
    state: dict[str, Any], key: str, items: list[Any], **fields: Any
) -> dict[str, Any]:
    """The request body ``read_request`` read, with ``items`` under ``key``.

    Each of ``fields`` is set to its value, or removed where it is ``None``
    (a system prompt the repaired history no longer has).
    """
    body = dict(state["body"])
    body[key] = items
    for name, value in fields.items():
        if value is None:
            body.pop(name, None)
        else:
            body[name] = value
    return body


def write_request(state: dict[str, Any], key: str, items: list[Any], **fields: Any) -> bytes:
    """The document ``read_request`` read, written with ``items`` (``request_body``).

    A bare list is written as ``items``, a body as the body, a recording
    with one more exchange (``append_exchange``), each laid out as the file was.
    """
    data: bytes = state["data"]
    if state["mode"] == "list":
        return dump_like(items, data)
    body = request_body(state, key, items, **fields)
    if state["mode"] == "body":
        return dump_like(body, data)
    return dump_like(append_exchange(state["doc"], state["exchange"], body), data)
