"""Where the tests' data lives in the repository, and how to read it.

Everything the suite reads is inside the repository (see `tests/data/update.py`
for how it is brought in from the team's shared folder):

- `docs/SPEC.md`, its worked cases `docs/spec/cases/*.json` and the seed
  documents `docs/seeds/`;
- the real corpus `tests/data/corpus/` (its README names each file's source,
  commit and licence);
- the provider oracle `tests/data/oracle/` (requests real providers answered).

Files over 64 KiB are stored zstd-compressed as `NAME.zst`. Tests name a file
by its real name (`CORPUS / "codex" / "x.jsonl"`) and read it with `read`;
`files` lists a folder under those names, and `expand` writes a folder out
uncompressed for code that must be handed a real folder (scans, the CLI).
"""

from __future__ import annotations

import atexit
import fnmatch
import shutil
import tempfile
from functools import cache
from pathlib import Path

import zstandard

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
SPEC = DOCS / "SPEC.md"
CASES = DOCS / "spec" / "cases"
SEEDS = DOCS / "seeds"
DATA = REPO / "tests" / "data"
CORPUS = DATA / "corpus"
ORACLE = DATA / "oracle"

PACKED = ".zst"


def read(path: Path) -> bytes:
    """The bytes of a data file named by its real name, compressed on disk or not."""
    if path.is_file():
        return path.read_bytes()
    packed = path.with_name(path.name + PACKED)
    if packed.is_file():
        return zstandard.ZstdDecompressor().decompress(packed.read_bytes())
    raise FileNotFoundError(f"no test data at {path} (nor {packed.name})")


def real_name(stored: Path) -> Path:
    """The name a stored file is read under: `x.jsonl.zst` is `x.jsonl`."""
    return stored.with_name(stored.name.removesuffix(PACKED))


def files(folder: Path, pattern: str = "*", *, recursive: bool = True) -> list[Path]:
    """The data files in a folder under their real names, sorted; READMEs left out."""
    stored = folder.rglob("*") if recursive else folder.iterdir()
    found = {real_name(p) for p in stored if p.is_file() and p.name != "README.md"}
    return sorted(p for p in found if fnmatch.fnmatch(p.name, pattern))


def expand(folder: Path, target: Path) -> Path:
    """Write `folder`'s data files, uncompressed, into `target`; return `target`."""
    for path in files(folder):
        out = target / path.relative_to(folder)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(read(path))
    return target


@cache
def expanded(folder: Path) -> Path:
    """`folder` written out uncompressed once per test process, in a folder removed at exit."""
    target = Path(tempfile.mkdtemp(prefix="inspector-testdata-"))
    atexit.register(shutil.rmtree, target, ignore_errors=True)
    return expand(folder, target / folder.name)
