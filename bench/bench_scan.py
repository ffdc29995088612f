"""Batch scans: a generated tree of Claude Code sessions scanned with 1 and with 2 task workers.

Each scan is the real command, `manage.py scan TREE --workers N`, with real
`db_worker` processes on a fresh SQLite file database in WAL mode (or, with
DATABASE_URL set, a fresh database made on that PostgreSQL server and dropped
afterwards). Prints
files/s, MB/s and each worker's peak memory (its ru_maxrss), the speed-up of
2 workers over 1 (target >= 1.7 on a 2-core machine), and the peak of one
worker scanning 200 files and 1,000 files: the same when memory does not grow
with the number of files.

Then the growth: one worker scanning 100 and 10,000 small sessions (``--growth``,
``--growth-kb``): the time ratio (100 is linear), the worker's CPU per file and
its peak memory, 100 files against 10,000. Each line also gives the workers'
CPU-seconds per 1,000 files and MB per CPU-second, which hold better than
wall-clock rates on a machine shared with other work.

    python bench/bench_scan.py                  # 1,000 sessions, about 500 MB
    python bench/bench_scan.py --files 100 --mb 20 --growth 1000
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import claude_code_session

REPO = Path(__file__).resolve().parent.parent
BATCH = 200  # files per folder: the first folder is the 200-file scan
BIG_EVERY = 10  # every tenth session is ten times the size of the others


def sizes(files: int, total_bytes: int) -> list[int]:
    # Nine small sessions and one ten times larger in every ten: a mean of
    # 1.9 small ones. The same pattern in every folder, so any 200 files
    # hold the same largest session as all 1,000.
    small = total_bytes / files / ((BIG_EVERY - 1 + 10) / BIG_EVERY)
    return [int(small * (10 if i % BIG_EVERY == BIG_EVERY - 1 else 1)) for i in range(files)]


def _write(job: tuple[Path, int, int]) -> int:
    path, size, seed = job
    data = claude_code_session(size, seed=seed, damaged=seed % 3 == 0)
    path.write_bytes(data)
    return len(data)


def generate(root: Path, files: int, total_mb: float) -> int:
    jobs = []
    for index, size in enumerate(sizes(files, total_mb * 1024 * 1024)):
        folder = root / f"batch-{index // BATCH}"
        folder.mkdir(parents=True, exist_ok=True)
        jobs.append((folder / f"session-{index:05d}.jsonl", size, index + 1))
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return sum(pool.map(_write, jobs, chunksize=8))


def real_tree(root: Path, source: Path, copies: int) -> int:
    """``copies`` copies of every session under ``source`` (real files), each under a
    folder of its own and each with as many blank lines added at its end as its copy's
    number: distinct bytes, so no copy is the duplicate of another (stored once), with
    the same findings (a blank line is no record). Returns the bytes written."""
    files = [
        path
        for path in sorted(source.rglob("*"))
        if path.is_file() and path.suffix in (".jsonl", ".json")
    ]
    total = 0
    for copy in range(copies):
        for path in files:
            target = root / f"copy-{copy:03d}" / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes() + b"\n" * copy
            target.write_bytes(data)
            total += len(data)
    return total


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (all cores, /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"manage.py {args[0]} failed")
    return result.stdout


@contextmanager
def fresh_database(work: Path, label: str) -> Iterator[str]:
    """A new, empty database for one scan: a SQLite file, or one made on DATABASE_URL's server."""
    server = os.environ.get("DATABASE_URL")
    if not server:
        yield f"sqlite://{work / label / 'bench.sqlite3'}"
        return
    import psycopg

    parts = urlsplit(server)
    # BENCH_DB_PREFIX: where several people share the server, each their own names.
    name = f"{os.environ.get('BENCH_DB_PREFIX', 'bench')}_scan_{os.getpid()}_{label}"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def scan(tree: Path, workers: int, work: Path, label: str) -> dict[str, float | list[float]]:
    env = dict(os.environ, TASKS_BACKEND="database", INSPECTOR_VAR_DIR=str(work / label))
    env["INSPECTOR_MEDIA_ROOT"] = str(work / label / "media")
    with fresh_database(work, label) as url:
        env["DATABASE_URL"] = url
        manage(env, "migrate", "--noinput", "-v", "0")
        began, busy = time.perf_counter(), busy_seconds()
        output = manage(env, "scan", str(tree), "--project", "bench", "--workers", str(workers))
        wall, busy = time.perf_counter() - began, busy_seconds() - busy
    done = re.search(r"Done in ([\d,.]+) s", output)
    peaks = re.search(r"peak memory per worker: ([^;]+); CPU time: ([^\n]+)\.", output)
    files = re.search(r"^\s+files\s+([\d,]+)", output, re.MULTILINE)
    if not (done and peaks and files):
        raise SystemExit("unexpected scan output:\n" + output)
    return {
        "seconds": float(done.group(1).replace(",", "")),
        "wall": wall,
        "files": int(files.group(1).replace(",", "")),
        "peaks": [float(mb.split()[0]) for mb in peaks.group(1).split(", ")],
        "cpu": [float(s.split()[0].replace(",", "")) for s in peaks.group(2).split(", ")],
        "busy": busy,
    }


def report(label: str, result: dict, megabytes: float) -> None:
    seconds = result["seconds"]
    peaks = ", ".join(f"{peak:.0f} MB" for peak in result["peaks"])
    cpu = ", ".join(f"{seconds:.1f} s" for seconds in result["cpu"])
    worker_cpu = sum(result["cpu"])
    print(
        f"{label}: {result['files']:,} files, {megabytes:,.0f} MB in {seconds:.1f} s "
        f"(command {result['wall']:.1f} s) | {result['files'] / seconds:,.1f} files/s, "
        f"{megabytes / seconds:,.1f} MB/s | peak memory per worker: {peaks} | CPU: {cpu} "
        f"({worker_cpu / result['files'] * 1000:,.1f} CPU-s per 1,000 files, "
        f"{megabytes / worker_cpu:,.1f} MB per CPU-second)",
        flush=True,
    )
    # Everything busy on the machine that was not these workers: the command
    # itself, the database server, and whatever else runs here. Other work
    # on a shared 2-core machine takes the second worker's core.
    others = max(result["busy"] - sum(result["cpu"]), 0.0)
    print(
        f"    the rest of the machine was busy {others:,.1f} CPU-seconds during the scan "
        f"({others / result['wall'] / (os.cpu_count() or 1):.0%} of all cores)",
        flush=True,
    )


def growth(work: Path, few: int, many: int, kilobytes: float) -> None:
    """One worker scanning ``few`` and then ``many`` small sessions (the same mix of sizes):
    time and CPU per file, and peak memory, should not grow with the number of files."""
    results = {}
    for count in (few, many):
        tree = work / f"growth-{count}"
        generate(tree, count, count * kilobytes / 1024)
        size = sum(p.stat().st_size for p in tree.rglob("*.jsonl")) / (1024 * 1024)
        results[count] = scan(tree, 1, work, f"growth-{count}")
        report(f"1 worker, {count:,} small files", results[count], size)
    small, large = results[few], results[many]
    scale = many / few
    cpu_ratio = (large["cpu"][0] / large["files"]) / (small["cpu"][0] / small["files"])
    print(
        f"growth {few:,} -> {many:,} files ({scale:,.0f} times the files): scan time "
        f"{large['seconds'] / small['seconds']:,.1f} times ({scale:,.0f} is linear; "
        f"per file {large['seconds'] / large['files'] / (small['seconds'] / small['files']):.2f}"
        f"), worker CPU per file {cpu_ratio:.2f}"
        f" times, worker peak memory {small['peaks'][0]:.0f} MB -> {large['peaks'][0]:.0f} MB "
        f"(ratio {large['peaks'][0] / small['peaks'][0]:.2f}; 1.00 is flat)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000, help="sessions in the tree")
    parser.add_argument("--mb", type=int, default=500, help="size of the tree in MB")
    parser.add_argument(
        "--growth",
        type=int,
        default=10_000,
        help="also scan 100 and this many small sessions, for the growth ratio (0: skip)",
    )
    parser.add_argument(
        "--growth-kb", type=float, default=16, help="the small sessions' mean size in KB"
    )
    parser.add_argument(
        "--real",
        type=Path,
        help="scan copies of the real sessions under this folder instead of generated ones",
    )
    parser.add_argument(
        "--copies", type=int, default=12, help="with --real: how many copies of each session"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as temp:
        work = Path(temp)
        tree = work / "tree"
        began = time.perf_counter()
        if args.real:
            size = real_tree(tree, args.real, args.copies) / (1024 * 1024)
            args.files = sum(1 for _ in tree.rglob("*.json*"))
            what = f"real sessions ({args.copies} copies of {args.real})"
        else:
            size = generate(tree, args.files, args.mb) / (1024 * 1024)
            what = "generated sessions"
        print(
            f"{what}: {args.files:,} files, {size:,.0f} MB, in "
            f"{time.perf_counter() - began:.1f} s ({os.cpu_count()} cores; database: "
            f"{'DATABASE_URL' if os.environ.get('DATABASE_URL') else 'SQLite file, WAL'})",
            flush=True,
        )
        one = scan(tree, 1, work, "one")
        report("1 worker ", one, size)
        two = scan(tree, 2, work, "two")
        report("2 workers", two, size)
        print(
            f"speed-up of 2 workers over 1: {one['seconds'] / two['seconds']:.2f} (target >= 1.7); "
            f"2 workers {size / two['seconds']:,.1f} MB/s (target >= 150), "
            f"1 worker {size / one['seconds']:,.1f} MB/s",
            flush=True,
        )
        if args.files > BATCH and not args.real:
            batch = tree / "batch-0"
            batch_mb = sum(p.stat().st_size for p in batch.iterdir()) / (1024 * 1024)
            few = scan(batch, 1, work, "few")
            report(f"1 worker, {BATCH} files", few, batch_mb)
            print(
                f"peak memory of one worker: {few['peaks'][0]:.0f} MB for {few['files']:,} files, "
                f"{one['peaks'][0]:.0f} MB for {one['files']:,} files "
                f"(ratio {one['peaks'][0] / few['peaks'][0]:.2f}; 1.00 means no growth)",
                flush=True,
            )
        if args.growth:
            growth(work, 100, args.growth, args.growth_kb)


if __name__ == "__main__":
    main()
