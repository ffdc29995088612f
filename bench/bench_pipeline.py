"""The whole pipeline (load, repair, diagnose) as a ratio to orjson.loads of the same lines.

Target (issue 4): at most 3 on the largest corpus session and on a generated
50 MB Claude Code session.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import claude_code_session

from inspector import formats
from inspector.diagnosis import diagnose

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(label: str, data: bytes, repeat: int) -> None:
    lines = data.splitlines()

    def baseline() -> list:
        # Keep what was decoded, as any reader must: dropping each record at
        # once would measure a cheaper job than the pipeline's.
        return [orjson.loads(line) for line in lines if line.strip()]

    def baseline_document() -> None:
        orjson.loads(data)

    try:
        orjson.loads(data)
        base = best_of(repeat, baseline_document)
    except orjson.JSONDecodeError:
        base = best_of(repeat, baseline)
    load_t = best_of(repeat, lambda: formats.load(data))
    parsed = formats.load(data)
    diag_t = best_of(repeat, lambda: diagnose(parsed))
    total = load_t + diag_t
    print(
        f"{label}: {len(data) / 1e6:.1f} MB, {len(parsed.messages):,} messages "
        f"({len(data) / max(1, len(parsed.messages)) / 1000:.1f} KB each) | "
        f"orjson.loads {base * 1000:.0f} ms | load {load_t * 1000:.0f} ms, "
        f"repair+diagnose {diag_t * 1000:.0f} ms | pipeline/orjson ratio {total / base:.2f} "
        f"(target <= 3)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=50, help="size of the generated session")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sessions = [
        p for p in CORPUS.rglob("*.jsonl") if "claude-code" in p.parts and "broken" not in p.parts
    ]
    largest = max(sessions, key=lambda p: p.stat().st_size)
    measure(f"largest corpus session ({largest.name})", largest.read_bytes(), args.repeat)
    measure(
        f"generated Claude Code session ({args.mb} MB)",
        claude_code_session(args.mb * 1024 * 1024),
        args.repeat,
    )


if __name__ == "__main__":
    main()
