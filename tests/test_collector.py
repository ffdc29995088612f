"""The collector pause is the callers' (``inspector.collector``); the pure core never touches it."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from inspector import collector, formats
from inspector.diagnosis import diagnose, repaired_bytes
from tests.testdata import CORPUS, files, read


def _holds(generation: int, obj: object) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_what_a_pause_built_leaves_it_in_the_oldest_generation():
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():  # a nested pause leaves resuming to the outer one
            pass
        assert not gc.isenabled()
        built = [[n] for n in range(1000)]
    assert gc.isenabled()
    # Not young: the next allocation does not traverse it all to free nothing.
    assert not _holds(0, built) and not _holds(1, built)
    assert _holds(2, built)
    assert gc.get_freeze_count() == 0  # nothing left out of collections


def test_a_cycle_made_while_paused_is_still_collected():
    class Node:
        pass

    with collector.paused():
        node = Node()
        node.self = node  # type: ignore[attr-defined]
        ref = weakref.ref(node)
    del node
    gc.collect()
    assert ref() is None


def test_a_hosts_frozen_objects_stay_frozen():
    # A pre-forking server freezes what it loaded before it forks; a pause must not undo that.
    kept = [[n] for n in range(100)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with collector.paused():
            [[n] for n in range(100)]
        # Still frozen: unfreezing would empty the permanent generation. (A frozen object
        # may still be freed meanwhile, by reference counting: the count is not exact.)
        assert gc.get_freeze_count() >= frozen - 100
        assert gc.isenabled()
    finally:
        gc.unfreeze()
    del kept


def test_a_collector_the_host_switched_off_stays_off():
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pauses_in_two_threads_restart_the_collector_only_when_both_end():
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector.paused():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(5)
    with collector.paused():
        pass
    assert not gc.isenabled()  # the other thread's pause still holds
    release.set()
    thread.join(5)
    assert gc.isenabled()


@pytest.fixture
def collector_untouchable(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the pure core changed the garbage collector")

    for name in ("disable", "enable", "freeze", "unfreeze", "collect", "set_threshold"):
        monkeypatch.setattr(gc, name, refuse)


@pytest.mark.parametrize(
    "path",
    [p for p in files(CORPUS, "*") if p.suffix in {".jsonl", ".json", ".zst", ".log"}][:40],
    ids=lambda p: p.name[:60],
)
def test_reading_and_diagnosing_never_touch_the_collector(collector_untouchable, path):
    data = read(path)
    try:
        every = formats.load_all(data)
    except formats.FormatError:
        return  # not a transcript: nothing more to diagnose
    for parsed in every:
        diagnose(parsed)
        repaired_bytes(parsed)
