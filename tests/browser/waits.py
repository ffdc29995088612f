"""Waiting for the page without Playwright's ``wait_for_function``.

``wait_for_function`` polls by evaluating its expression with ``eval`` inside
the page, which the app's CSP forbids (no 'unsafe-eval'): it passes only when
the condition already holds at the first look, so it failed on a busy machine.
``page.evaluate`` goes through the browser's debugging protocol, which the CSP
does not govern, so polling it from here waits as long as it takes.
"""

from __future__ import annotations

import time
from typing import Any


def wait_until(page: Any, expression: str, timeout: float = 15.0) -> None:
    """Return once ``expression`` is truthy in ``page``; fail with it after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout:.0f} s: {expression}")
        time.sleep(0.05)
