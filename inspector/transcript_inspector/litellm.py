"""The guard's LiteLLM callback (needs litellm): ``litellm.callbacks = [GuardCallback()]``.

Defined in ``inspector.guard.litellm_callback``; see there.
"""

from inspector.guard.litellm_callback import GuardCallback, provider_of_body

__all__ = ["GuardCallback", "provider_of_body"]
