"""How fast is ``transcript_inspector.guard`` on request bodies of growing size?

Run: ``.venv/bin/python bench/bench_guard.py [--sizes 200,2000,20000]``.

For each provider and size it builds a request body from ``bench_engine``'s
seeded history (``formats.to_wire``, ids as they are) and times ``guard``:

- ``accepted``: a healthy history (the body an agent sends most of the time,
  checked and copied; the target is under 1 ms at 200 messages);
- ``last turn``: the same history whose last call lost its result (the
  usual break: the agent was stopped mid-tool): the accepted start is kept,
  the rest repaired;
- ``reused id``: the stopped history again, its last call under the id of the
  history's first call (Kimi's ids restart, say): the shortcut that reads only
  the items after the kept start leaves it to the plain path, which reads the
  whole body, but the start is still kept as sent;
- ``5% broken``: a share of all turns broken, every kind of defect in turn.

It prints milliseconds of CPU time per body (the best of a few runs, the
garbage collector off: the machine is shared, and wall time there measures
the neighbours), per size how the time grew against the smallest size per
message (1.0 is linear), and, measured in the same run on the same body,
``x check``: the guard's time over the provider check's alone (the least any
guard must do: read the whole body once), the ratio that holds under load.
No time is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_engine
from bench_engine import generate

from inspector import formats
from inspector.engine.providers import check
from transcript_inspector import PROVIDERS, guard


def best_of(runs: int, work: Callable[[], object]) -> float:
    """The least CPU time of ``runs`` calls of ``work``, in seconds."""
    return bench_engine.best_of(runs, work, time.process_time)


def bodies(size: int, provider: str) -> dict[str, dict[str, Any]]:
    healthy, _ = generate(size, 0.0)
    stopped = [
        *healthy,
        {
            "role": "assistant",
            "content": "Let me look.",
            "metadata": {"tool_calls": [{"tool_call_id": "toolu_last", "name": "grep"}]},
        },
        {"role": "user", "content": "Stop, look elsewhere.", "metadata": {}},
    ]
    first_id = next(
        call["tool_call_id"] for m in healthy for call in m["metadata"].get("tool_calls") or ()
    )
    reused = [*stopped[:-2], _with_call_id(stopped[-2], first_id), stopped[-1]]
    broken, _ = generate(size, 0.05)
    extra = {"model": "m", "max_tokens": 1024, "tools": []}
    kinds = (
        ("accepted", healthy),
        ("last turn", stopped),
        ("reused id", reused),
        ("5% broken", broken),
    )
    return {name: {**extra, **formats.to_wire(history, provider)} for name, history in kinds}


def _with_call_id(message: dict[str, Any], cid: str) -> dict[str, Any]:
    calls = [{**call, "tool_call_id": cid} for call in message["metadata"]["tool_calls"]]
    return {**message, "metadata": {**message["metadata"], "tool_calls": calls}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="200,2000,20000")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    head = " ".join(f"{n:>10}" for n in sizes)
    print(f"{'provider':12} {'body':10} {head}   growth/msg   x check at {sizes[0]}")
    over: list[str] = []  # the bodies above the 1 ms at the smallest size
    for provider in PROVIDERS:
        times: dict[str, list[float]] = {}
        ratio: dict[str, float] = {}
        for size in sizes:
            for name, body in bodies(size, provider).items():
                verdict = check(provider, guard(body, provider).body)
                assert verdict.accepted, (provider, name, size)  # the bench measures real work
                work = partial(guard, body, provider)
                runs = args.runs if size <= 2000 else 2  # seconds each at 20,000
                spent = best_of(runs, work)
                times.setdefault(name, []).append(spent)
                if size == sizes[0]:
                    ratio[name] = spent / best_of(runs, partial(check, provider, body))
        for name, row in times.items():
            cells = " ".join(f"{t * 1e3:8.3f}ms" for t in row)
            growth = " ".join(
                f"{(t / row[0]) / (n / sizes[0]):.2f}"
                for t, n in zip(row[1:], sizes[1:], strict=True)
            )
            print(f"{provider:12} {name:10} {cells}   {growth:10}   {ratio[name]:6.1f}", flush=True)
            if row[0] >= 1e-3:
                over.append(f"{provider} {name} ({row[0] * 1e3:.2f} ms)")
    print(f"over 1 ms at {sizes[0]} messages: {', '.join(over) or 'none'}")


if __name__ == "__main__":
    main()
