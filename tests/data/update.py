"""Copy what the tests need from the team's material folder into the repository.

The repository must pass its tests with nothing beside it, so the spec, its
worked cases, the seed documents, the real corpus and the provider oracle
live here as copies. The team's folder is where new material arrives; running
this script is the deliberate step that brings it in:

    .venv/bin/python tests/data/update.py PATH-TO-THE-TEAMS-FOLDER

Files are added or replaced, never removed: the repository also holds real
files of its own (found for shapes and defects the team's corpus lacks), so a
file gone upstream is removed by hand. A README's table gains the rows it
lacks and keeps its own. Data files over 64 KiB are stored zstd-compressed as
`NAME.zst` (a tenth of the size for JSON lines); `tests/testdata.py` reads
both kinds, and `git diff --stat` after a run shows what changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import zstandard

REPO = Path(__file__).resolve().parents[2]
COMPRESS_OVER = 64 * 1024
LEVEL = 19

# (source in the team's folder, destination in the repository, compress large files)
COPIES = [
    ("SPEC.md", "docs/SPEC.md", False),
    ("spec/cases", "docs/spec/cases", False),
    ("seeds", "docs/seeds", False),
    ("corpus", "tests/data/corpus", True),
    ("provider-oracle", "tests/data/oracle", True),
]


def copy_file(source: Path, target: Path, compress: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    if source.name == "README.md" and target.is_file():
        target.write_text(merged_readme(target.read_text(), data.decode()))
        return
    if compress and len(data) > COMPRESS_OVER and source.name != "README.md":
        packed = zstandard.ZstdCompressor(level=LEVEL).compress(data)
        target.with_name(target.name + ".zst").write_bytes(packed)
    else:
        target.write_bytes(data)


def merged_readme(ours: str, theirs: str) -> str:
    """Our README with each table row of theirs that it lacks (by the row's first cell)."""
    have = {_first_cell(line) for line in ours.splitlines() if line.startswith("| ")}
    extra = [
        line
        for line in theirs.splitlines()
        if line.startswith("| ") and _first_cell(line) not in have and "---" not in line
    ]
    return ours.rstrip("\n") + "\n" + "".join(line + "\n" for line in extra) if extra else ours


def _first_cell(line: str) -> str:
    return line.strip().strip("|").split("|")[0].strip()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: update.py PATH-TO-THE-TEAMS-FOLDER", file=sys.stderr)
        return 2
    incoming = Path(argv[1])
    if not (incoming / "SPEC.md").is_file():
        print(f"{incoming} holds no SPEC.md: name the team's folder", file=sys.stderr)
        return 2
    for source_name, target_name, compress in COPIES:
        source, target = incoming / source_name, REPO / target_name
        if source.is_file():
            copy_file(source, target, compress)
            continue
        for path in sorted(source.rglob("*")):
            if path.is_file():
                copy_file(path, target / path.relative_to(source), compress)
        print(f"{source_name} -> {target_name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
