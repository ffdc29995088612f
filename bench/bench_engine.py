"""How fast is ``repair_history`` next to ``orjson.loads`` of the same history?

Run: ``.venv/bin/python bench/bench_engine.py [--sizes 10000,100000,1000000]``.

For each size it generates a canonical history of agent turns (seeded, so
every run measures the same bytes): a healthy one, and one where a share of
the turns (``--damage``, 5 % by default) carries one defect each, every kind
of defect the engine repairs taking its turn. It prints messages per second
and the ratio of ``repair_history`` time to ``orjson.loads`` time of the
same JSON (the issue's target: at most 0.5 on 100k messages), and, when
both 100k and 1M ran, how the time grew (target: at most 12x).

Timings are the best of several runs with the garbage collector off during
each timed call, so that neither side pays for collections the other
triggered.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inspector.engine import repair_history

Message = dict[str, Any]

DAMAGE_KINDS = (
    "dangling",  # a result is missing (PAIR-1)
    "steer",  # a user message between the call and its result (PAIR-2)
    "swapped",  # results out of call order (PAIR-2)
    "orphan",  # a result for a call that is not there (PAIR-3)
    "second_result",  # one call answered twice (PAIR-3)
    "repeated_id",  # ids restart every reply, Kimi style (ID-1)
    "empty_id",  # calls and results without ids (ID-2)
    "blank",  # a blank assistant placeholder before the results (MSG-1)
    "partial",  # arguments cut mid-stream, no result (INT-1, INT-2)
)

TOOLS = ("read_file", "search", "bash", "edit_file", "list_dir", "create_ticket")
WORDS = (
    "the invoice run failed again because the scheduler lost its lease while the worker "
    "was still writing the batch file to storage so we retry with a fresh token and check "
    "that every row landed before closing the ticket with a short summary for the team"
).split()


class _Text:
    """Cheap varied text: slices of one long pseudo-random string."""

    def __init__(self, rng: random.Random, scale: float) -> None:
        self.rng = rng
        self.scale = scale
        self.pool = " ".join(rng.choice(WORDS) for _ in range(200_000))

    def __call__(self, low: int, high: int) -> str:
        length = max(1, round(self.rng.randint(low, high) * self.scale))
        start = self.rng.randrange(0, len(self.pool) - length)
        return self.pool[start : start + length]


def generate(
    size: int, damage: float, seed: int = 7, scale: float = 1.0
) -> tuple[list[Message], dict[str, int]]:
    """A history of about ``size`` messages; a ``damage`` share of turns broken.

    ``scale`` multiplies every text length: small messages make ``orjson.loads``
    cheaper per message, so they are the harder case for the ratio.
    """
    rng = random.Random(seed)
    text = _Text(rng, scale)
    messages: list[Message] = [
        {"role": "system", "content": text(200, 1200), "metadata": {}},
        {"role": "user", "content": text(40, 400), "metadata": {}},
    ]
    counts = dict.fromkeys(DAMAGE_KINDS, 0)
    serial = 0
    turn = 0
    while len(messages) < size:
        turn += 1
        if rng.random() < 0.25:
            messages.append({"role": "assistant", "content": text(40, 600), "metadata": {}})
            messages.append({"role": "user", "content": text(20, 400), "metadata": {}})
            continue
        calls = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            serial += 1
            calls.append(
                {
                    "tool_call_id": f"toolu_{serial:012x}",
                    "name": rng.choice(TOOLS),
                    "arguments": {"path": text(10, 60), "query": text(5, 80)},
                }
            )
        prose = text(20, 300) if rng.random() < 0.4 else ""
        results = [
            {
                "role": "tool",
                "content": text(100, 2000),
                "metadata": {"tool_call_id": call["tool_call_id"]},
            }
            for call in calls
        ]
        assistant = {"role": "assistant", "content": prose, "metadata": {"tool_calls": calls}}
        kind = rng.choice(DAMAGE_KINDS) if rng.random() < damage else None
        if kind:
            counts[kind] += 1
            _damage(kind, assistant, results, messages, rng, text)
        else:
            messages.append(assistant)
            messages.extend(results)
    return messages, counts


def _damage(
    kind: str,
    assistant: Message,
    results: list[Message],
    messages: list[Message],
    rng: random.Random,
    text: Callable[[int, int], str],
) -> None:
    calls = assistant["metadata"]["tool_calls"]
    if kind == "dangling":
        results.pop()
    elif kind == "swapped" and len(results) > 1:
        results.reverse()
    elif kind == "swapped":
        kind = "steer"
    if kind == "repeated_id":
        for number, (call, result) in enumerate(zip(calls, results, strict=True)):
            call["tool_call_id"] = f"functions.{call['name']}:{number}"
            result["metadata"]["tool_call_id"] = call["tool_call_id"]
    elif kind == "empty_id":
        for call, result in zip(calls, results, strict=True):
            call["tool_call_id"] = ""
            result["metadata"] = {"tool_call_id": "", "name": call["name"]}
    elif kind == "partial":
        call = calls[-1]
        call["arguments"] = orjson.dumps(call["arguments"]).decode()[: rng.randint(1, 20)]
        results.pop()
    messages.append(assistant)
    if kind == "blank":
        messages.append({"role": "assistant", "content": "  ", "metadata": {}})
    if kind == "steer":
        messages.append({"role": "user", "content": text(20, 200), "metadata": {}})
    messages.extend(results)
    if kind == "second_result":
        messages.append(dict(results[0]))
    if kind == "orphan":
        messages.append({"role": "assistant", "content": text(40, 300), "metadata": {}})
        messages.append(
            {"role": "tool", "content": text(50, 500), "metadata": {"tool_call_id": "ghost"}}
        )
    if kind == "partial":
        messages.append({"role": "user", "content": text(20, 200), "metadata": {}})


def best_of(
    runs: int, work: Callable[[], object], clock: Callable[[], float] = time.perf_counter
) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            started = clock()
            work()
            best = min(best, clock() - started)
        finally:
            gc.enable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated")
    parser.add_argument("--damage", type=float, default=0.05, help="share of broken turns")
    parser.add_argument("--runs", type=int, default=5, help="best of N (1M sizes use N/2)")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply text lengths (0.2: small messages)"
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    print("gc disabled during each timed call; best of", args.runs, "runs")
    print(
        f"{'history':>22} {'bytes/msg':>9} {'loads ms':>9} {'repair ms':>9} "
        f"{'msgs/s':>12} {'ratio':>6}"
    )
    repair_times: dict[tuple[str, int], float] = {}
    for size in sizes:
        runs = max(2, args.runs // 2) if size >= 1_000_000 else args.runs
        for label, damage in (("healthy", 0.0), (f"{args.damage:.0%} damaged", args.damage)):
            messages, counts = generate(size, damage, scale=args.scale)
            data = orjson.dumps(messages)
            del messages
            loaded = orjson.loads(data)
            loads_time = best_of(runs, lambda data=data: orjson.loads(data))
            repair_time = best_of(runs, lambda loaded=loaded: repair_history(loaded))
            result = repair_history(loaded)
            repair_times[(label, size)] = repair_time
            name = f"{len(loaded):,} {label}"
            print(
                f"{name:>22} {len(data) / len(loaded):9.0f} {loads_time * 1e3:9.1f} "
                f"{repair_time * 1e3:9.1f} {len(loaded) / repair_time:12,.0f} "
                f"{repair_time / loads_time:6.2f}"
            )
            if damage:
                broken = ", ".join(f"{kind} {count}" for kind, count in counts.items())
                print(f"{'':>22} broken turns: {broken}; actions: {len(result.actions):,}")
            del loaded, data, result
    for label in ("healthy", f"{args.damage:.0%} damaged"):
        small, large = repair_times.get((label, 100_000)), repair_times.get((label, 1_000_000))
        if small and large:
            print(f"growth 100k -> 1M, {label}: {large / small:.1f}x (target <= 12x)")


if __name__ == "__main__":
    main()
