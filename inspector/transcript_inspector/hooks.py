"""The guard's ``httpx`` transports for the ``openai`` and ``anthropic`` clients (needs httpx).

Defined in ``inspector.guard.hooks``; see there.
"""

from inspector.guard.hooks import AsyncGuardTransport, GuardTransport, guard_request, provider_of

__all__ = ["AsyncGuardTransport", "GuardTransport", "guard_request", "provider_of"]
