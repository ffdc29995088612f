"""Transcript Inspector's guard as a library: ``from transcript_inspector import guard``.

This package is the distribution's public name for ``inspector.guard``
(``pyproject.toml`` maps it here); everything is defined there.
"""

from inspector.guard import HISTORY_KEYS, PROVIDERS, UNREAD, Guarded, guard

__all__ = ["HISTORY_KEYS", "PROVIDERS", "UNREAD", "Guarded", "guard"]
