"""Peak memory of diagnosing one file, divided by the file's size.

Each case runs in a fresh process (``--one``), which reads the file, loads,
diagnoses and encodes the cache file as an upload does, and reports its peak
resident set (ru_maxrss) above the interpreter's own after imports. Two kinds
of input: Claude Code sessions as real ones are (bench/gen.py), and files of
many tiny records (a message of a few bytes each), the worst case per byte.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen import claude_code_session

ROOT = Path(__file__).resolve().parent.parent


def tiny_records(count: int) -> bytes:
    """``count`` one-word user messages as a canonical JSON list: ~30 bytes each."""
    return orjson.dumps([{"role": "user", "content": f"m{n}"} for n in range(count)])


def tiny_lines(count: int) -> bytes:
    """``count`` minimal Claude Code records, one a line, each the parent of the next."""
    lines = []
    parent = None
    for n in range(count):
        uid = f"u{n}"
        lines.append(
            orjson.dumps(
                {
                    "type": "user",
                    "uuid": uid,
                    "parentUuid": parent,
                    "sessionId": "s",
                    "message": {"role": "user", "content": "x"},
                }
            )
        )
        parent = uid
    return b"\n".join(lines) + b"\n"


def one(path: str) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inspector.settings")
    django.setup()
    from inspector.web.store import UnreadableTranscript, _diagnosed

    base = _high_water()
    data = Path(path).read_bytes()
    try:
        _diagnosed(data, "auto")  # what an upload does: read, diagnose, encode the cache file
    except UnreadableTranscript:
        pass  # refused after reading: what it took on the way counts all the same
    print(_high_water() - base)


def _high_water() -> int:
    # VmHWM belongs to this process's memory: ru_maxrss would keep the parent's
    # peak across exec.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(name: str, data: bytes) -> None:
    with tempfile.NamedTemporaryFile(suffix=".json") as handle:
        handle.write(data)
        handle.flush()
        out = subprocess.run(
            [sys.executable, __file__, "--one", handle.name],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    peak = int(out.stdout.strip().splitlines()[-1])
    print(
        f"{name:<44} {len(data) / 1e6:8.1f} MB  peak {peak / 1e6:8.1f} MB  "
        f"ratio {peak / len(data):6.1f}"
    )


def main() -> None:
    print("peak memory above the interpreter's ÷ file size (load + diagnose + cache file)")
    for mb in (5, 50):
        measure(f"Claude Code session, {mb} MB", claude_code_session(mb * 1024 * 1024))
    measure("canonical, 1,000,000 tiny messages", tiny_records(1_000_000))
    measure("Claude Code, 300,000 tiny records", tiny_lines(300_000))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one(sys.argv[2])
    else:
        main()
