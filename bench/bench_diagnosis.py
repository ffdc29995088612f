"""The diagnosis of every real session, as a ratio to orjson.loads of the same bytes.

Targets (issue 29): ``report()`` (load + repair + diagnose, what ``repair
--report`` runs) within 2.0 times ``orjson.loads`` of the same bytes over the
whole test corpus, within 2.5 on every single session in it; memory at most
5 times the file's size.

The baseline keeps what it decoded, as any reader must: a JSON document is
``orjson.loads(data)``, a file of JSON lines ``[orjson.loads(line) for line in
lines]``. Each round times, file by file, the baseline then the diagnosis back
to back, each repeated until it has run for at least ``--floor`` ms, so a
machine that speeds up or slows down between rounds moves both sides of a
round's ratio together; a file's ratio is the median of its rounds, the
corpus's the median of the rounds' totals. Both sides run as the callers run
them: with the cyclic collector paused (``inspector.collector``), and once
more with it running on both sides (``--running``).

Memory is ``tracemalloc``'s peak of one ``report()`` above what was allocated
before it, divided by the file's size (what Python allocated; ``bench_memory``
gives the resident set of a whole upload in a fresh process).

``--extra DIR`` adds the files of another folder of real sessions (e.g. a
``~/.claude/projects``), read as they are.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inspector import collector
from inspector.diagnosis import report
from tests.testdata import CORPUS, files, read

SUFFIXES = (".json", ".jsonl")


def baseline_of(data: bytes) -> Callable[[], object]:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        lines = data.splitlines()
        return lambda: [_line(line) for line in lines if line.strip()]
    return lambda: orjson.loads(data)


def _line(line: bytes) -> object:
    # A damaged line (a real session's cut write) costs the reader its attempt too.
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def timed(fn: Callable[[], object], times: int, paused: bool) -> float:
    gc.collect()
    start = time.perf_counter()
    if paused:
        with collector.paused():
            for _ in range(times):
                fn()
    else:
        for _ in range(times):
            fn()
    return (time.perf_counter() - start) / times


def corpus(extra: list[Path]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for path in files(CORPUS):
        if path.suffix in SUFFIXES:
            found[str(path.relative_to(CORPUS))] = read(path)
    for folder in extra:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES:
                found[f"{folder.name}/{path.relative_to(folder)}"] = path.read_bytes()
    readable = {}
    for name, data in found.items():
        try:
            report(data)
        except Exception:  # not a transcript (or refused): nothing to diagnose
            continue
        readable[name] = data
    return readable


def peak_of(fn: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def measure(sessions: dict[str, bytes], rounds: int, floor: float, paused: bool) -> None:
    jobs = {}
    for name, data in sessions.items():
        base = baseline_of(data)
        diag = (lambda d: lambda: report(d))(data)
        once = max(timed(base, 1, paused), timed(diag, 1, paused) / 2, 1e-7)
        jobs[name] = (base, diag, max(1, round(floor / 1000 / once)))
    per: dict[str, list[float]] = {name: [] for name in jobs}
    totals: list[tuple[float, float]] = []
    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        round_base = round_diag = 0.0
        for name, (base, diag, times) in jobs.items():
            b = timed(base, times, paused)
            d = timed(diag, times, paused)
            per[name].append(d / b)
            round_base += b
            round_diag += d
            old = best.get(name, (b, d))
            best[name] = (min(old[0], b), min(old[1], d))
        totals.append((round_base, round_diag))
    ratios = {name: statistics.median(r) for name, r in per.items()}
    overall = sorted(d / b for b, d in totals)
    size = sum(len(data) for data in sessions.values())
    base_s = min(b for b, _ in totals)
    diag_s = min(d for _, d in totals)
    mode = "collector paused on both sides" if paused else "collector running on both sides"
    print(f"\n{mode}: {len(sessions)} sessions, {size / 1e6:.1f} MB, {rounds} rounds")
    print(
        f"corpus: orjson.loads {size / base_s / 1e6:.0f} MB/s, report() {size / diag_s / 1e6:.0f}"
        f" MB/s; report/orjson median {statistics.median(overall):.2f}"
        f" ({overall[0]:.2f}-{overall[-1]:.2f}) (target <= 2.0)"
    )
    worst = sorted(ratios, key=ratios.__getitem__, reverse=True)
    over = [name for name in worst if ratios[name] > 2.5]
    print(f"sessions over 2.5: {len(over)} of {len(ratios)} (target 0)")
    print("worst sessions (median ratio, range, size, best orjson / report):")
    for name in worst[:12]:
        r = sorted(per[name])
        b, d = best[name]
        print(
            f"  {ratios[name]:5.2f} ({r[0]:.2f}-{r[-1]:.2f})  {len(sessions[name]) / 1e3:9.1f} KB"
            f"  {b * 1e3:8.3f} / {d * 1e3:8.3f} ms  {name}"
        )
    big = sorted(sessions, key=lambda n: len(sessions[n]), reverse=True)[:5]
    print("largest sessions:")
    for name in big:
        print(f"  {ratios[name]:5.2f}  {len(sessions[name]) / 1e6:6.2f} MB  {name}")


def memory(sessions: dict[str, bytes], minimum: int) -> None:
    sized = {n: d for n, d in sessions.items() if len(d) >= minimum}
    peaks = {name: peak_of(lambda d=data: report(d)) / len(data) for name, data in sized.items()}
    # orjson's own peak on the same bytes: decoding a line holds several times its size
    # for a moment (a long base64 image in one line: ten times and more).
    floor = {name: peak_of(baseline_of(data)) / len(data) for name, data in sized.items()}
    worst = sorted(peaks, key=peaks.__getitem__, reverse=True)
    print(
        f"\nmemory (tracemalloc peak / file size), {len(sized)} sessions of "
        f"{minimum / 1000:.0f} KB or more: report() median x{statistics.median(peaks.values()):.1f}"
        f" (orjson.loads of the same bytes x{statistics.median(floor.values()):.1f}), over 5: "
        f"{sum(p > 5 for p in peaks.values())} (target 0), over orjson's peak + 2: "
        f"{sum(peaks[n] > floor[n] + 2 for n in peaks)}"
    )
    print("  report()  orjson   size       session")
    for name in worst[:10]:
        print(
            f"  x{peaks[name]:5.1f}   x{floor[name]:5.1f}  {len(sized[name]) / 1e3:8.1f} KB  {name}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--floor", type=float, default=20, help="ms each timing runs at least")
    parser.add_argument("--running", action="store_true", help="also with the collector running")
    parser.add_argument("--extra", type=Path, action="append", default=[])
    parser.add_argument("--memory-from", type=int, default=64 * 1024, help="bytes")
    parser.add_argument("--only", default="", help="only the sessions whose name holds this")
    parser.add_argument(
        "--min-size", type=int, default=0, help="only sessions this many bytes or more"
    )
    args = parser.parse_args()
    sessions = {
        n: d for n, d in corpus(args.extra).items() if args.only in n and len(d) >= args.min_size
    }
    measure(sessions, args.rounds, args.floor, paused=True)
    if args.running:
        measure(sessions, args.rounds, args.floor, paused=False)
    memory(sessions, args.memory_from)


if __name__ == "__main__":
    main()
