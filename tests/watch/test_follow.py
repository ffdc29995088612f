"""Following a growing file reads each byte once; a rewritten file is read again whole."""

from __future__ import annotations

import os
from pathlib import Path

from inspector.local.follow import Follower


def test_appended_lines_are_all_that_is_read(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    follower = Follower()
    first = follower.read(path)
    assert first is not None and first.reread and first.data == b'{"a": 1}\n'
    assert follower.read(path) is None  # nothing new
    with path.open("ab") as handle:
        handle.write(b'{"b": 2}\n')
    second = follower.read(path)
    assert second is not None and not second.reread
    assert second.appended == 9 and second.data == path.read_bytes()


def test_a_file_that_grows_by_a_million_lines_is_read_once(tmp_path: Path):
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"")
    follower = Follower()
    follower.read(path)
    reads = 0
    line = b'{"type":"user","n":0}\n'
    for _ in range(100):
        with path.open("ab") as handle:
            handle.write(line * 10_000)
        update = follower.read(path)
        assert update is not None and not update.reread
        reads += 1
    size = path.stat().st_size
    assert size == len(line) * 1_000_000
    assert update.data == path.read_bytes()
    # Every byte once, plus the short tail compared at each read to notice a rewrite.
    assert size <= follower.bytes_read <= size + reads * 4096


def test_a_rewritten_truncated_or_replaced_file_is_read_again(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\ntwo\n")
    follower = Follower()
    follower.read(path)
    path.write_bytes(b"ONE\ntwo\nthree\n")  # same inode, same prefix length, new bytes
    update = follower.read(path)
    assert update is not None and update.reread and update.data == b"ONE\ntwo\nthree\n"
    path.write_bytes(b"x\n")  # shrunk
    update = follower.read(path)
    assert update is not None and update.reread and update.data == b"x\n"
    other = tmp_path / "new.jsonl"
    other.write_bytes(b"x\ny\n")
    os.replace(other, path)  # another inode, as fix's atomic rename makes
    update = follower.read(path)
    assert update is not None and update.reread and update.data == b"x\ny\n"


def test_a_forgotten_file_is_read_whole_again(tmp_path: Path):
    follower = Follower(keep=1)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(b"a\n")
    b.write_bytes(b"b\n")
    follower.read(a)
    follower.read(b)  # pushes a out
    with a.open("ab") as handle:
        handle.write(b"a2\n")
    update = follower.read(a)
    assert update is not None and update.reread and update.data == b"a\na2\n"
    assert follower.read(tmp_path / "gone.jsonl") is None
