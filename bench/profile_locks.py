"""Where scan workers wait on SQLite: its write lock, the CPU, or their own work.

Generates a tree (as ``bench_scan.py`` does) and scans it with the real command,
1 worker then 2, ``--rounds`` times, on a fresh SQLite file each time, with
``bench/lockprof`` on the workers' PYTHONPATH. For each worker it prints its
lifetime split into CPU, waiting on the run queue (ready, no core free: other work on
the machine), waiting in SQLite's busy handler for the write lock (``BEGIN``), and the
rest; how long it held the write lock, by the code that opened each transaction, with
the COMMITs' own time; and the statements that took longest, inside a transaction
(holding the lock) or outside one. Then the share of one worker's lifetime spent
holding the lock, ``s``, and the speed-up two workers could reach if nothing else
limited them, ``1 / (s + (1 - s) / 2)`` (Amdahl).

    python bench/profile_locks.py --files 400 --mb 120 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scan import generate, report, scan

PROFILER = Path(__file__).resolve().parent / "lockprof"


def quantile(values: list[float], share: float) -> float:
    values = sorted(values)
    return values[min(int(len(values) * share), len(values) - 1)] if values else 0.0


def workers(folder: Path) -> list[dict]:
    found = []
    for path in sorted(folder.glob("*.json")):
        stats = json.loads(path.read_text())
        if stats["argv"][1:2] == ["worker"]:
            found.append(stats)
    return found


def show(stats: dict, statements: int) -> None:
    rest = stats["life"] - stats["cpu"] - stats["runqueue"] - stats["wait"]
    print(
        f"  worker: {stats['life']:.1f} s = CPU {stats['cpu']:.1f} + run queue "
        f"{stats['runqueue']:.1f} + BEGIN waiting for the write lock {stats['wait']:.2f} "
        f"(p90 {quantile(stats['waits'], 0.9) * 1e3:.1f} ms, max "
        f"{max(stats['waits'], default=0) * 1e3:.0f} ms) + rest {rest:.1f}; "
        f"{stats['tasks']} tasks; held the lock {stats['hold']:.2f} s in "
        f"{stats['txns']} transactions (p50 {quantile(stats['holds'], 0.5) * 1e3:.1f} ms, "
        f"p90 {quantile(stats['holds'], 0.9) * 1e3:.1f} ms; COMMITs {stats['commit']:.2f} s)"
    )
    sites = sorted(stats["sites"].items(), key=lambda item: -item[1][1])
    for site, (count, held, waited) in sites:
        if held >= 0.05:
            print(f"    held {held:6.2f} s, waited {waited:5.2f} s, {count:5} x {site}")
    ranked = sorted(stats["sql"].items(), key=lambda item: -item[1][1])
    for key, (count, seconds) in ranked[:statements]:
        print(f"    sql {seconds:6.2f} s {count:6} x {key}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--mb", type=float, default=120)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--sessions",
        action="store_true",
        help="each worker in a session of its own (see lockprof's _own_sessions)",
    )
    parser.add_argument("--statements", type=int, default=6, help="slowest statements shown")
    args = parser.parse_args()
    if os.environ.get("DATABASE_URL"):
        raise SystemExit("SQLite only: unset DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="profile-locks-") as temp:
        work = Path(temp)
        tree = work / "tree"
        size = generate(tree, args.files, args.mb) / (1024 * 1024)
        print(f"{args.files:,} generated sessions, {size:,.0f} MB; {os.cpu_count()} cores")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(PROFILER), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        if args.sessions:
            os.environ["LOCKPROF_SETSID"] = "1"
        for round_ in range(args.rounds):
            results = {}
            for count in (1, 2):
                folder = work / f"locks-{round_}-{count}"
                folder.mkdir()
                os.environ["LOCKPROF_DIR"] = str(folder)
                load = os.getloadavg()[0]
                results[count] = scan(tree, count, work, f"r{round_}-{count}")
                report(
                    f"{count} worker{'s' if count > 1 else ' '} (load {load:.1f})",
                    results[count],
                    size,
                )
                found = workers(folder)
                groups = {stats.get("autogroup") for stats in found}
                print(f"  autogroups of the workers: {', '.join(sorted(map(str, groups)))}")
                for stats in found:
                    show(stats, args.statements)
                if count == 1 and found:
                    one = found[0]
                    share = one["hold"] / one["life"]
                    print(
                        f"  one worker held the write lock {share:.0%} of its life: two "
                        f"could reach at most {1 / (share + (1 - share) / 2):.2f} times one"
                    )
            speed = results[1]["seconds"] / results[2]["seconds"]
            print(f"round {round_ + 1}: speed-up of 2 workers over 1: {speed:.2f}", flush=True)


if __name__ == "__main__":
    main()
