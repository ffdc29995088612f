"""The engine's hypothesis profiles (``HYPOTHESIS_PROFILE``), for the guard's properties too."""

from tests.engine.conftest import settings  # noqa: F401 (importing it registers the profiles)
