"""Pausing Python's cyclic garbage collector around one heavy read: the callers' decision.

Reading and diagnosing a big session makes millions of small containers that
all stay alive to the end (they are the result). The cyclic collector would
rescan them again and again while they pile up (about half the time of
reading a 50 MB session) and can free none of them; reference counting still
frees everything as usual. So the callers that run a whole upload, scan file
or console command (``inspector.web.store``, the scan worker through it, and
``inspector.cli``) wrap that work in ``paused()``. The pure core
(``inspector.engine``, ``inspector.formats``, ``inspector.diagnosis``) never
touches the collector: a host that embeds it keeps its own settings.

What ``paused`` changes is process-wide, which is why it is the caller's to
decide: while it holds, no thread's cycles are collected (they are when it
ends), and on the way out the objects made during the pause are moved to the
oldest generation, or the first allocation after ``gc.enable()`` would
traverse all of them, in one pass that frees nothing (about 20 ms for a 50 MB
session's messages, as much again for its timeline). Python's only way to
move them is ``gc.freeze()`` then ``gc.unfreeze()``, and the unfreeze would
also release objects a host froze for good (a pre-forking server calls
``gc.freeze()`` before it forks); so when anything is frozen already the move
is skipped, and only the 20 ms are lost.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # pauses in force, across threads: the collector restarts when the last one ends
_restart = False  # whether the collector was running when the first of them began


@contextmanager
def paused() -> Iterator[None]:
    """Pause the cyclic collector for the work inside; nested and concurrent uses are safe."""
    global _depth, _restart
    with _lock:
        if _depth == 0:
            _restart = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restart:
                if gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
