"""Hypothesis profiles for the engine's property tests.

Pick one with ``HYPOTHESIS_PROFILE``: ``ci`` (default: a few thousand
examples over the whole property file, well under a minute), ``dev`` (a
quick look while editing) or ``fuzz`` (long runs hunting for edge cases).
``test_properties.py`` applies the chosen profile to its own tests only, so
other packages' hypothesis tests keep their settings.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

settings.register_profile("ci", max_examples=500, **_COMMON)
settings.register_profile("dev", max_examples=60, **_COMMON)
settings.register_profile("fuzz", max_examples=20_000, **_COMMON)
