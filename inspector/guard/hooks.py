"""Opt-in hooks that guard every request an ``httpx`` client sends: the official clients' way in.

The ``openai`` and ``anthropic`` Python clients send through the ``httpx``
client they are handed (``http_client=``; anthropic's own fork of it,
``httpx2``, since anthropic 2.x), so one transport guards them all:

>>> import httpx, openai
>>> from transcript_inspector.hooks import GuardTransport
>>> client = openai.OpenAI(http_client=httpx.Client(transport=GuardTransport()))
>>> import httpx2, anthropic
>>> transport = GuardTransport(httpx2.HTTPTransport())
>>> claude = anthropic.Anthropic(http_client=httpx2.Client(transport=transport))

``GuardTransport`` (and ``AsyncGuardTransport`` for the async clients) wraps
the transport that really sends (``httpx.HTTPTransport()`` unless given one):
a POST whose path names a provider's endpoint (``/chat/completions``,
``/responses``, ``/messages``, ``:generateContent``) has its JSON body guarded
(``inspector.guard.guard``) and, where the guard changed it, sent as repaired,
with what changed logged on the ``transcript_inspector.guard`` logger (a
warning per request, a line per finding) and handed to ``on_guard`` if given.
Every other request, and a body that is not JSON, goes out untouched.
Nothing here imports ``httpx`` unless no transport is given;
``transcript_inspector`` alone never does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from inspector.guard import Guarded, guard

__all__ = ["AsyncGuardTransport", "GuardTransport", "guard_request", "provider_of"]

log = logging.getLogger("transcript_inspector.guard")

OnGuard = Callable[[str, Guarded], None]


class _URL(Protocol):
    @property
    def path(self) -> str: ...


class _Request(Protocol):
    """What the guard reads of an ``httpx`` (or ``httpx2``, which anthropic uses) request."""

    @property
    def method(self) -> str: ...
    @property
    def url(self) -> Any: ...
    @property
    def headers(self) -> Any: ...
    @property
    def extensions(self) -> Any: ...
    def read(self) -> bytes: ...


def provider_of(url: _URL) -> str | None:
    """The provider whose request body a POST to ``url`` carries, from its path, or ``None``."""
    path = url.path.rstrip("/")
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    return None


def _gemini_model(url: _URL) -> str | None:
    # .../models/gemini-2.5-flash:generateContent: Gemini names the model in the URL only.
    last = url.path.rsplit("/", 1)[-1]
    return last.split(":", 1)[0] or None


def guard_request[R: _Request](
    request: R, provider: str | None = None, on_guard: OnGuard | None = None
) -> R:
    """``request`` with its body guarded: the same object where nothing changed.

    A new request is made of the same class (``httpx.Request`` or ``httpx2.Request``).
    """
    provider = provider or provider_of(request.url)
    if request.method != "POST" or provider is None:
        return request
    try:
        body = orjson.loads(request.read())
    except (orjson.JSONDecodeError, RuntimeError):  # not JSON; a body streamed asynchronously
        return request
    model = _gemini_model(request.url) if provider == "gemini" else None
    guarded = guard(body, provider, model=model)
    if on_guard is not None:
        on_guard(provider, guarded)
    if not guarded.changed:
        return request
    log.warning(
        "guarded a %s request to %s: %d finding(s)",
        provider,
        request.url.path,
        len(guarded.findings),
    )
    for finding in guarded.findings:
        log.warning("  %s: %s", finding["rule"], finding["text"])
    content = orjson.dumps(guarded.body)
    headers = type(request.headers)(request.headers)
    headers["content-length"] = str(len(content))
    made: R = type(request)(  # type: ignore[call-arg]
        request.method, request.url, headers=headers, content=content, extensions=request.extensions
    )
    return made


class _Guarding:
    """What both transports hold: the transport that sends, and how to guard for it.

    ``DEFAULT`` is overridden by each transport: the name of the ``httpx`` transport
    it sends through when the caller gives none.
    """

    DEFAULT: str

    def __init__(
        self, transport: Any = None, *, provider: str | None = None, on_guard: OnGuard | None = None
    ) -> None:
        if transport is None:
            import httpx  # only needed when the caller does not bring its own transport

            transport = getattr(httpx, self.DEFAULT)()
        self.transport = transport
        self.provider = provider
        self.on_guard = on_guard

    def _guarded(self, request: Any) -> Any:
        return guard_request(request, self.provider, self.on_guard)


class GuardTransport(_Guarding):
    """A transport that guards each provider request before ``transport`` sends it.

    ``transport`` is the ``httpx`` (or ``httpx2``) transport that really sends;
    ``httpx.HTTPTransport()`` when none is given. The client only calls
    ``handle_request`` and ``close``, so this works for both libraries.
    """

    DEFAULT = "HTTPTransport"

    def handle_request(self, request: Any) -> Any:
        return self.transport.handle_request(self._guarded(request))

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> GuardTransport:
        self.transport.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.transport.__exit__(*exc)


class AsyncGuardTransport(_Guarding):
    """``GuardTransport`` for the async clients (``openai.AsyncOpenAI``, ...)."""

    DEFAULT = "AsyncHTTPTransport"

    async def handle_async_request(self, request: Any) -> Any:
        # The clients hand a body they built in memory: reading it does not block.
        return await self.transport.handle_async_request(self._guarded(request))

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def __aenter__(self) -> AsyncGuardTransport:
        await self.transport.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.transport.__aexit__(*exc)
