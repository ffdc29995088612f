"""The engine's hypothesis profiles (``HYPOTHESIS_PROFILE``) and the local provider endpoint."""

import threading
from collections.abc import Iterator

import pytest

from tests.engine.conftest import settings  # noqa: F401 (importing it registers the profiles)
from tests.guard.endpoint import Endpoint


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    made = Endpoint()
    thread = threading.Thread(target=made.server.serve_forever, daemon=True)
    thread.start()
    yield made
    made.server.shutdown()
    made.server.server_close()
