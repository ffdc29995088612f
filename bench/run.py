"""Run every benchmark in this folder, one after another (`make bench`).

Benchmarks print ratios and rates; none of them asserts wall time. Each is a
script `bench_*.py` with its own flags; this runner calls them with defaults.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Benchmarks with a target of their own: bench_scale needs a PostgreSQL server and
# ten minutes or more (`make bench-scale`).
OWN_TARGET = {"bench_scale"}


def main() -> int:
    failures = 0
    for script in sorted(HERE.glob("bench_*.py")):
        if script.stem in OWN_TARGET:
            continue
        print(f"\n=== {script.stem}", flush=True)
        result = subprocess.run([sys.executable, str(script)], cwd=HERE.parent, check=False)
        failures += result.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
