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
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
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


def kinds(count: int) -> dict[str, bytes]:
    """Files of every kind of record, about ``count`` values each: tiny ones cost most a byte."""
    n = count
    return {
        "lines of []": b"[]\n" * n,
        "lines of 0": b"0\n" * n,
        "lines of {}": b"{}\n" * n,
        'lines of "x"': b'"x"\n' * n,
        "one array of 0": b"[" + b",".join([b"0"] * n) + b"]",
        "one array of []": b"[" + b",".join([b"[]"] * n) + b"]",
        "one array of {}": b"[" + b",".join([b"{}"] * n) + b"]",
        'one array of "x"': b"[" + b",".join([b'"x"'] * n) + b"]",
        "lines of [0,0,0,0,0,0,0,0]": b"[0,0,0,0,0,0,0,0]\n" * (n // 8),
        'lines of {"a":0,"b":[],"c":{}}': b'{"a":0,"b":[],"c":{}}\n' * (n // 4),
        "lines of deep [[[...]]]": (b"[" * 200 + b"]" * 200 + b"\n") * (n // 200),
        "messages of number arrays": orjson.dumps(
            [{"role": "user", "content": [0] * 50} for _ in range(n // 50)]
        ),
        "tiny messages": tiny_records(n // 5),
        "tiny Claude Code records": tiny_lines(n // 10),
        "one huge string": b'"' + b"ab" * (4 * n) + b'"',
        "lines of 10 KB strings": (b'"' + b"x" * 10_000 + b'"\n') * max(1, n // 1000),
        "code full of braces in strings": orjson.dumps(
            [
                {"role": "user", "content": "fn f() { if x { [a, b, {c: d}] } }, " * 30}
                for _ in range(max(1, n // 300))
            ]
        ),
    }


def peak(data: bytes) -> int:
    """Peak memory of diagnosing ``data`` in a fresh process, above the interpreter's own."""
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
    return int(out.stdout.strip().splitlines()[-1])


def measure(name: str, data: bytes) -> None:
    from inspector.web.store import memory_estimate

    used = peak(data)
    estimate = memory_estimate(data)
    print(
        f"{name:<36} {len(data) / 1e6:7.1f} MB  peak {used / 1e6:7.1f} MB  "
        f"x{used / len(data):6.1f} of its size  estimate {estimate / 1e6:7.1f} MB  "
        f"peak/estimate {used / estimate:5.2f}"
    )


def main() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inspector.settings")
    django.setup()
    print("peak memory above the interpreter's (load + diagnose + cache file), and the estimate")
    for mb in (5, 50):
        measure(f"Claude Code session, {mb} MB", claude_code_session(mb * 1024 * 1024))
    for name, data in kinds(600_000).items():
        measure(name, data)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one(sys.argv[2])
    else:
        main()
