"""The map lock between ktool's readers and its writers (format/mapping.py): a shared flock on the log
dir while a segment is mapped, taken exclusively by truncate. Each side is held by another process,
as two ktool commands would; the broker's own fcntl lock on `.lock` never meets it."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafka_tools.format import accel
from kafka_tools.format.mapping import map_file, maps_excluded
from kafka_tools.format.segment import SegmentWindow

pytestmark = pytest.mark.skipif(
    accel.map_guard() is None, reason="the C extension (its SIGBUS guard) is not built"
)


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    seg = part / f"{0:020d}.log"
    seg.write_bytes(bytes(range(256)) * 64)
    return seg


def _map_and_wait(path: str, ready, release) -> None:
    with open(path, "rb") as f:
        held = map_file(f.fileno(), path, os.fstat(f.fileno()).st_size)
        assert held is not None
        ready.set()
        release.wait(30)
        held.close()


def _exclude_and_wait(log_dir: str, ready, release) -> None:
    with maps_excluded(log_dir):
        ready.set()
        release.wait(30)


@contextmanager
def _elsewhere(target, arg: str) -> Iterator[None]:
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=target, args=(arg, ready, release))
    proc.start()
    try:
        assert ready.wait(10), "the other process did not take its side of the lock"
        yield
    finally:
        release.set()
        proc.join(10)


def test_truncate_is_refused_while_another_ktool_maps_a_file_of_the_log_dir(segment: Path) -> None:
    log_dir = segment.parent.parent
    with _elsewhere(_map_and_wait, str(segment)):
        with pytest.raises(OSError) as refused:
            with maps_excluded(log_dir):
                pass
        assert refused.value.filename == str(log_dir)
        assert "reading it through memory maps" in refused.value.strerror
    with maps_excluded(log_dir):  # the reader is gone: the writer goes ahead
        pass


def test_a_reader_reads_with_pread_while_a_ktool_writer_holds_the_log_dir(segment: Path) -> None:
    with _elsewhere(_exclude_and_wait, str(segment.parent.parent)):
        with open(segment, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            assert map_file(f.fileno(), str(segment), size) is None
            win = SegmentWindow(f, size, use_mmap=True)
            at = win.ensure(1000, 16)
            assert bytes(win.view[at : at + 16]) == segment.read_bytes()[1000:1016]


def test_a_broker_still_takes_its_lock_while_ktool_maps(segment: Path) -> None:
    """Kafka's FileLock.tryLock on `.lock` (an fcntl lock) succeeds while a ktool reader maps: ktool
    never stops a broker from starting."""
    lock = segment.parent.parent / ".lock"
    lock.touch()
    with _elsewhere(_map_and_wait, str(segment)):
        with open(lock, "a+") as f:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
