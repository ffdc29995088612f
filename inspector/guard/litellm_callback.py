"""A LiteLLM callback that guards the body LiteLLM sends, on every route (needs litellm).

>>> import litellm
>>> from transcript_inspector.litellm import GuardCallback
>>> litellm.callbacks = [GuardCallback()]        # or litellm.input_callback

LiteLLM takes OpenAI-shaped ``messages`` for ``completion()`` whatever the
provider, and Responses ``input`` for ``responses()``; each route then writes
the provider's own request body (Anthropic's ``messages`` and ``system``,
Gemini's ``contents``, a Responses ``input``...) and, just before sending it,
hands that very dict to its input callbacks' ``log_pre_api_call`` as
``kwargs["additional_args"]["complete_input_dict"]``. ``GuardCallback`` guards
it there, as that provider's body (``inspector.guard.guard``), and puts the
repaired history into that dict, so the route sends what the guard gave back:
the repair is made on the bytes that go out, in the provider's own shape,
which is what the guard's checks judge (not on the OpenAI-shaped messages
before LiteLLM's translation, which may move or merge what the guard kept).

Which provider a body is for: ``contents`` is Gemini's; ``input`` (with no
``messages``) Responses'; ``messages`` is Anthropic's when LiteLLM routes to
Anthropic (``custom_llm_provider``), OpenAI Chat's otherwise (OpenAI and the
OpenAI-compatible providers). LiteLLM swallows what a callback raises, and
the guard never raises on an odd body, so a request is never lost to it.

LiteLLM's other hooks do not do this: ``async_pre_call_hook`` runs on its
proxy only, ``async_pre_request_hook`` on its native Anthropic ``/messages``
path, and the prompt-management hook only for a ``prompt_id``.
"""

from __future__ import annotations

import logging
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from inspector.guard import HISTORY_KEYS, guard
from inspector.guard.hooks import OnGuard

__all__ = ["GuardCallback", "provider_of_body"]

log = logging.getLogger("transcript_inspector.guard")

_GEMINI_ROUTES = frozenset({"gemini", "vertex_ai", "vertex_ai_beta"})
_ANTHROPIC_ROUTES = frozenset({"anthropic", "anthropic_text"})


def provider_of_body(body: Any, route: Any) -> str | None:
    """The guard's provider for a request body LiteLLM is about to send on ``route``
    (its ``custom_llm_provider``), or ``None`` for a body of no shape the guard reads."""
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("contents"), list):
        return "gemini"
    if isinstance(body.get("messages"), list):
        return "anthropic" if route in _ANTHROPIC_ROUTES else "openai-chat"
    if isinstance(body.get("input"), list):
        return "responses"
    return None


class GuardCallback(CustomLogger):
    """Guards each request body LiteLLM sends, in place, just before it goes out.

    ``read_only`` names tools that only read (see ``guard``); ``on_guard``, if
    given, gets ``(provider, guarded)`` for every body guarded. What changed is
    logged on the ``transcript_inspector.guard`` logger, as the transports do.
    """

    def __init__(self, *, read_only: tuple[str, ...] = (), on_guard: OnGuard | None = None):
        super().__init__()
        self.read_only = read_only
        self.on_guard = on_guard

    def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
        details = kwargs if isinstance(kwargs, dict) else {}
        extra = details.get("additional_args")
        body = extra.get("complete_input_dict") if isinstance(extra, dict) else None
        route = details.get("custom_llm_provider")
        provider = provider_of_body(body, route)
        if provider is None:
            return
        assert isinstance(body, dict)
        wanted = model if provider == "gemini" and isinstance(model, str) else None
        guarded = guard(body, provider, model=wanted, read_only=self.read_only)
        if self.on_guard is not None:
            self.on_guard(provider, guarded)
        if not guarded.changed:
            return
        log.warning(
            "guarded a %s request LiteLLM sends (%s): %d finding(s)",
            provider,
            route,
            len(guarded.findings),
        )
        for finding in guarded.findings:
            log.warning("  %s: %s", finding["rule"], finding["text"])
        # The route sends this very dict: only the history changes (``guard`` keeps the rest).
        key = HISTORY_KEYS[provider]
        body[key] = guarded.body[key]

    async def async_log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
        self.log_pre_api_call(model, messages, kwargs)
