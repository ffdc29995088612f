"""The guard beside turnsafe (PyPI) on the same broken histories, and the time per body.

Run: ``.venv/bin/python bench/bench_peers.py`` (turnsafe comes with ``make install-test``).

For each case of ``tests/guard/peer_cases.py`` it prints what each library
sends: ``accepted`` or ``REFUSED`` by the provider's check
(``engine.providers``, held to ~1,000 real answers), whether every text of
the body is still in it (``lost N`` when not), and ``not read`` where the
library takes no such body (turnsafe reads Chat and Anthropic message lists
only) or raised. Then the time per 200-message body, healthy and with the
last turn cut, for both (CPU time, as ``bench_guard`` measures it).
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_guard import best_of, bodies

from inspector.engine.providers import check
from tests.guard.peer_cases import CASES, texts
from transcript_inspector import guard

try:
    import turnsafe
except ImportError:  # only the test extras install it
    turnsafe = None

TURNSAFE = {"openai-chat": "openai", "anthropic": "anthropic"}


def _turnsafe(body: dict[str, Any], provider: str) -> dict[str, Any] | str:
    if turnsafe is None:
        return "not installed"
    if provider not in TURNSAFE:
        return "not read"
    try:
        return {**body, "messages": turnsafe.repair(body["messages"], TURNSAFE[provider])}
    except Exception as exc:  # the peer's refusal, shown as such
        return f"raised {type(exc).__name__}"


def _verdict(body: dict[str, Any] | str, provider: str, sent: dict[str, Any]) -> str:
    if isinstance(body, str):
        return body
    state = "accepted" if check(provider, body).accepted else "REFUSED"
    out = texts(body)
    lost = sum(1 for text in texts(sent) if not any(text in o for o in out))
    return f"{state}, lost {lost}" if lost else state


def main() -> None:
    version = getattr(turnsafe, "__version__", "not installed")
    print(f"{'case':38} {'provider':12} {'guard':22} turnsafe {version}")
    for name, provider, body in CASES:
        ours = _verdict(guard(body, provider).body, provider, body)
        theirs = _verdict(_turnsafe(body, provider), provider, body)
        print(f"{name:38} {provider:12} {ours:22} {theirs}")
    if turnsafe is None:
        print("turnsafe is not installed: `make install-test` brings it; no times")
        return
    print(f"\n{'200 messages':24} {'guard':>10} {'turnsafe':>10}")
    for provider in TURNSAFE:
        for kind, body in bodies(200, provider).items():
            if kind == "5% broken":
                continue
            ours = best_of(7, partial(guard, body, provider))
            theirs = best_of(7, partial(_turnsafe, body, provider))
            print(f"{provider + ' ' + kind:24} {ours * 1e3:8.3f}ms {theirs * 1e3:8.3f}ms")


if __name__ == "__main__":
    main()
