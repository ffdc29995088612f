"""Where ``fix`` and ``undo`` may write: one session's store, and its backups.

Every write, rename, removal, new folder and temporary file of ``fix`` and
``undo``, for every agent, goes through a ``Confined``: the folders it may
touch, each resolved once as found on disk (the session's store, and the
backup folder). A path is refused, with nothing written and an error naming
it, if it is not absolute, holds ``..`` or NUL, lies outside every root, or
if it or any folder between its root and it is a symbolic link. A file is
only ever created new (``O_EXCL | O_NOFOLLOW``) and then renamed into place,
so a link planted where fix writes is never followed. Names that come from
anywhere but a directory listing go through ``safe_name`` first.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path


class Refused(ValueError):
    """A path or a name ``fix`` will not write; the message names the file."""


# A name with no separator, no dot-only name, no NUL, no control character, no leading dot.
_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")


def safe_name(name: object, what: str = "name") -> str:
    """``name`` if it is one plain file name (letters, digits, ``_.+-``), else ``Refused``."""
    if not isinstance(name, str) or not _SAFE.fullmatch(name) or ".." in name:
        raise Refused(f"{what} {name!r} is not a plain file name")
    return name


@dataclass(frozen=True, slots=True)
class Confined:
    """The folders one run of ``fix`` or ``undo`` may write in, resolved; and the folders
    this run made (``mkdir``), so that a backup set it removes takes them with it."""

    roots: tuple[Path, ...]
    made: list[Path] = field(default_factory=list, compare=False)

    @classmethod
    def to(cls, *roots: Path) -> Confined:
        """Confined to ``roots``, each resolved as it is on disk (a root not made yet too)."""
        return cls(tuple(absolute(root).resolve() for root in roots))

    def check(self, path: Path) -> Path:
        """``path`` if it may be written, else ``Refused`` naming it."""
        text = os.fspath(path)
        if "\0" in text:
            raise Refused(f"{text!r} holds a NUL character")
        if not path.is_absolute():
            raise Refused(f"{text} is not an absolute path")
        if ".." in path.parts:
            raise Refused(f"{text} goes up a folder ('..')")
        root = next((r for r in self.roots if path == r or path.is_relative_to(r)), None)
        if root is None:
            where = ", ".join(str(r) for r in self.roots)
            raise Refused(f"{text} is outside what fix may write ({where})")
        current = root
        for part in path.relative_to(root).parts:
            current = current / part
            if current.is_symlink():
                raise Refused(f"{current} is a symbolic link; fix does not follow links")
        return path

    def inside(self, path: Path) -> bool:
        try:
            self.check(path)
        except Refused:
            return False
        return True

    def child(self, folder: Path, name: object, what: str = "name") -> Path:
        """``folder / name``, for a ``name`` that did not come from a directory listing."""
        return self.check(folder / safe_name(name, what))

    def mkdir(self, folder: Path) -> None:
        """Make ``folder`` and the folders above it that are missing, all inside a root."""
        self.check(folder)
        missing: list[Path] = []
        current = folder
        while not current.is_dir():
            missing.append(current)
            current = current.parent
        for each in reversed(missing):
            self.check(each)
            try:
                each.mkdir()
            except FileExistsError:
                pass
            else:
                self.made.append(each)
            self.check(each)

    def create(self, path: Path, data: bytes, mode: int | None) -> None:
        """Write a new file (never an existing one, never through a link), flushed to disk."""
        write_durably(self.check(path), data, mode)

    def temporary(self, folder: Path, prefix: str, data: bytes, mode: int | None) -> Path:
        """A new file in ``folder`` named ``PREFIX<pid>-<random>.tmp`` holding ``data``."""
        name = f"{prefix}{os.getpid()}-{secrets.token_hex(4)}.tmp"
        if os.sep in name or "\0" in name:
            raise Refused(f"{name!r} is not a plain file name")
        path = folder / name
        self.create(path, data, mode)
        return path

    def replace(self, source: Path, target: Path) -> None:
        """Rename ``source`` over ``target`` in one step, and flush the folder."""
        self.check(source)
        self.check(target)
        os.replace(source, target)
        sync_folder(target.parent)

    def unlink(self, path: Path) -> None:
        """Remove one file (or link), if it is there."""
        self.check(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def rmtree(self, folder: Path) -> None:
        """Remove a folder ``fix`` made (a backup set), links inside it not followed, and the
        folders above it this run made for it, left empty (a refused run leaves none)."""
        self.check(folder)
        if folder in self.roots:
            raise Refused(f"{folder} is a root fix writes in; it is not removed")
        shutil.rmtree(folder, ignore_errors=True)
        above = [p for p in self.made if p != folder and folder.is_relative_to(p)]
        for each in sorted(above, key=lambda p: len(p.parts), reverse=True):
            self.check(each)
            with contextlib.suppress(OSError):  # not empty: something else is in it now
                each.rmdir()

    def read(self, path: Path) -> bytes:
        """A file's bytes, never through a link (a backup, a note)."""
        fd = os.open(self.check(path), os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            return handle.read()


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


def write_durably(path: Path, data: bytes, before_mode: int | None) -> None:
    """Create ``path`` new with ``data``, the mode given (else 0600), flushed to disk."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
            handle.flush()
        if before_mode is not None:
            os.fchmod(fd, before_mode & 0o7777)
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
