"""Following session files as agents append to them, reading each byte once.

An agent writes its session by appending lines. ``Follower.read(path)``
returns the whole file's bytes but reads from disk only what was appended
since the last call: it keeps, per file, the bytes read so far and where
they end. The earlier part is trusted to be unchanged while the file keeps
its inode, does not shrink and still ends, at the old offset, with the bytes
it ended with then; otherwise (rewritten, replaced, truncated) the file is
read again from the start, and ``Update.reread`` says so.

Memory: the bytes of the ``keep`` most recently changed files are kept; a
file pushed out is read whole the next time it changes. Repair is
prefix-stable (SPEC §4), so the diagnosis of what was there before does not
change when lines are appended; the caller diagnoses the whole history,
which needs no disk reads.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

# How much of the end of what was read is compared, to notice a rewritten file.
_TAIL = 4096


@dataclass(frozen=True, slots=True)
class Update:
    path: Path
    data: bytes  # the whole file as it is now
    appended: int  # bytes read from disk for this update
    reread: bool  # read from the start (new, rewritten, shrunk or forgotten)


@dataclass(slots=True)
class _State:
    inode: int
    data: bytes


class Follower:
    def __init__(self, keep: int = 64) -> None:
        self._files: OrderedDict[Path, _State] = OrderedDict()
        self._keep = keep
        self.bytes_read = 0  # from disk, over this follower's life

    def forget(self, path: Path) -> None:
        self._files.pop(path, None)

    def read(self, path: Path) -> Update | None:
        """The file's bytes now, reading only what was appended; ``None`` if unchanged or gone."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            self.forget(path)
            return None
        try:
            stat = os.fstat(fd)
            state = self._files.get(path)
            if state is not None and self._still_prefix(fd, stat, state):
                offset = len(state.data)
                if stat.st_size == offset:
                    self._files.move_to_end(path)
                    return None
                appended = self._read_from(fd, offset, stat.st_size)
                data = state.data + appended
                reread = False
            else:
                appended = self._read_from(fd, 0, stat.st_size)
                data = appended
                reread = True
        finally:
            os.close(fd)
        # A last line still being written is kept as it is: the next read goes on from it.
        self._files[path] = _State(stat.st_ino, data)
        self._files.move_to_end(path)
        while len(self._files) > self._keep:
            self._files.popitem(last=False)
        return Update(path, data, len(appended), reread)

    def _still_prefix(self, fd: int, stat: os.stat_result, state: _State) -> bool:
        offset = len(state.data)
        if stat.st_ino != state.inode or stat.st_size < offset:
            return False
        if offset == 0:
            return True
        start = max(0, offset - _TAIL)
        tail = os.pread(fd, offset - start, start)
        self.bytes_read += len(tail)
        return tail == state.data[start:]

    def _read_from(self, fd: int, offset: int, size: int) -> bytes:
        chunks: list[bytes] = []
        position = offset
        while True:
            chunk = os.pread(fd, max(size - position, 1 << 16), position)
            if not chunk:
                break
            chunks.append(chunk)
            position += len(chunk)
        data = b"".join(chunks)
        self.bytes_read += len(data)
        return data
