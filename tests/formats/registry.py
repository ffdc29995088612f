"""Each registered shape's corpus files, found from the registry (``formats.FORMATS``).

A shape's files are in ``tests/data/corpus/<NAME>/`` (subfolders too; the
corpus README lists each with its source). Tests that need files of every
shape (the shape contract, the fuzz seeds) take them from here, so a shape
added to the registry is covered without naming it anywhere else.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from inspector import formats
from tests.testdata import CORPUS, files, read


@cache
def corpus_of(name: str) -> list[Path]:
    """The corpus files of shape ``name``, smallest first."""
    return sorted(files(CORPUS / name), key=lambda p: (len(read(p)), p.as_posix()))


@cache
def seed_of(name: str) -> Path | None:
    """The fuzz seed of shape ``name``: its smallest corpus file that reads as that shape
    with a call answered (the smallest that reads at all when none has one)."""
    readable = None
    for path in corpus_of(name):
        try:
            parsed = formats.load(read(path), name)
        except formats.FormatError:
            continue
        if any(m["role"] == "tool" for m in parsed.messages):
            return path
        readable = readable or path
    return readable


def seeds() -> list[Path]:
    """One fuzz seed a registered shape (a shape without one is the contract test's failure)."""
    return [path for name in formats.FORMATS if (path := seed_of(name)) is not None]
