"""The ``private_copies`` fixture: every temporary folder a step makes, and what it held.

Scans of zips and uploads of agents' databases copy a database into a private
temporary folder and must remove it however the step ends; a test takes the
fixture, runs the step, then checks each folder is gone and what it held when
it was removed (``HELD``: no journal left beside the copy, nothing but it).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

# What each temporary folder held when it was removed.
HELD: dict[Path, list[str]] = {}


@pytest.fixture
def private_copies(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every temporary folder made while the test runs, to see each is gone afterwards."""
    made: list[Path] = []
    real = tempfile.TemporaryDirectory
    HELD.clear()

    class Recorded(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(Path(self.name))

        def cleanup(self) -> None:
            HELD[Path(self.name)] = sorted(p.name for p in Path(self.name).iterdir())
            super().cleanup()

    monkeypatch.setattr(tempfile, "TemporaryDirectory", Recorded)
    return made
