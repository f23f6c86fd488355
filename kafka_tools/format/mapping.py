"""Who decides whether a segment file may be memory-mapped, and what keeps a mapped file whole.

Touching a mapped page past a file's end kills the reader with SIGBUS, so a map is made only when:
- the installed policy allows it: log/ installs the broker-lock check (log/files/broker_lock.may_map)
  when it is imported; the decoder knows nothing of brokers. `KTOOL_NO_MMAP=1` always reads with pread;
- no ktool repair holds the log dir: a reader holds a shared flock on the log dir's directory (the
  directory whose `.lock` the broker takes) while its maps live; ktool's writers (`truncate`, its
  `--undo`) take it exclusively (`maps_excluded`) and are refused while a map is open. A reader that
  finds the writer there reads with pread instead (a file shortened under pread is a short read: an
  error line, never a signal). flock on the directory, not `.lock`: the broker's own fcntl lock on
  `.lock` is untouched (flock and fcntl locks do not meet on Linux), so a broker still starts while
  ktool reads, and nothing is created in the log dir;
- the extension's SIGBUS guard is there (format/csrc/map_guard.c): a file shortened by anyone else
  (a broker, `truncate -s`) while mapped ends the command with "FILE: changed under us (shortened
  while read)", exit 3, in C and in the pure-Python walk alike.

This module imports only the standard library, so installing the policy costs no decoder import."""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SHORTENED = "changed under us (shortened while read)"


class ShortenedWhileRead(OSError):
    """A file found shorter than when its read began (a pread came back short): someone else cut it.
    Said in the words of the SIGBUS guard's line for a cut under a map, so that a cut reads the same
    whether the file was mapped or read; `position`: where the read found it short."""

    def __init__(self, position: int, filename: str | os.PathLike | int | None = None) -> None:
        # A file object opened on a descriptor is named by the number: no path to say.
        super().__init__(errno.EIO, SHORTENED, None if isinstance(filename, int) else filename)
        self.position = position


def _env_allows_map(path: str | os.PathLike) -> bool:
    return not os.environ.get("KTOOL_NO_MMAP")


_policy: Callable[[str | os.PathLike], bool] = _env_allows_map


def set_map_policy(policy: Callable[[str | os.PathLike], bool]) -> None:
    global _policy
    _policy = policy


def safe_to_map(path: str | os.PathLike) -> bool:
    """Memory-map a segment only when the installed policy allows it: a broker may truncate a segment
    it owns, and touching a mapped page past a file's new end kills the reader with SIGBUS.
    `KTOOL_NO_MMAP=1` always reads with pread instead."""
    return _policy(path)


def log_dir_of(path: str | os.PathLike) -> str:
    """The log dir of a segment or side file: the directory above its partition directory."""
    return os.path.dirname(os.path.dirname(os.path.abspath(path)))


class MappedFile:
    """A whole file mapped read-only, its pages guarded against SIGBUS, its log dir held shared: no
    ktool repair shortens it while this lives. `close()` (or dropping it) releases all three."""

    __slots__ = ("map", "_slot", "_hold", "_guard")

    def __init__(self, mapped: mmap.mmap, slot: int, hold: int, guard) -> None:
        self.map = mapped
        self._slot = slot
        self._hold = hold
        self._guard = guard

    def close(self) -> None:
        if self._slot >= 0:
            self._guard.map_guard_remove(self._slot)
            self._slot = -1
            try:
                self.map.close()
            except BufferError:
                pass  # a view of it is still alive: the map goes when the view does
        if self._hold >= 0:
            os.close(self._hold)  # closing drops the shared flock
            self._hold = -1

    def __del__(self) -> None:
        self.close()


def map_file(fd: int, path: str | os.PathLike, size: int) -> MappedFile | None:
    """`path` (open as `fd`, `size` bytes) mapped read-only, or None: read it with pread instead (an
    empty file, the policy says no, a ktool repair holds the log dir, no SIGBUS guard, no address space)."""
    if size <= 0 or not safe_to_map(path):
        return None
    from kafka_tools.format import accel

    guard = accel.map_guard()
    if guard is None:
        return None
    guard.map_guard_install()
    hold = _hold_shared(log_dir_of(path))
    if hold < 0:
        return None
    try:
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        os.close(hold)
        if exc.errno == errno.ENOMEM:  # no address space for the file's length (a limit, a huge sparse
            return None  # file): pread reads what is there instead
        raise
    except BaseException:
        os.close(hold)
        raise
    slot = guard.map_guard_add(mapped, os.fsencode(path))
    if slot < 0:
        mapped.close()
        os.close(hold)
        return None
    return MappedFile(mapped, slot, hold, guard)


def _hold_shared(log_dir: str) -> int:
    """An fd of `log_dir` holding a shared flock, or -1: a ktool writer holds it, or it cannot be
    opened (then nothing says no writer runs: no map)."""
    try:
        fd = os.open(log_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return -1
    return fd


@contextmanager
def maps_excluded(log_dir: str | os.PathLike) -> Iterator[None]:
    """Held by every ktool command that shortens, replaces or removes files of `log_dir` (truncate and
    its undo, after taking `.lock`): an exclusive flock on the directory, so no ktool maps a file of it
    meanwhile (readers read with pread then). Raises OSError (EBUSY, exit 3) at once while another
    ktool reads the log dir through maps, naming the log dir; never waits."""
    fd = os.open(os.fspath(log_dir), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            _exclusive(fd)
        except BlockingIOError:
            why = (
                "another ktool (validate, dump-log, read, scan) is reading it through memory maps; "
                "run again when it ends"
            )
            raise OSError(errno.EBUSY, why, os.fspath(log_dir)) from None
        yield
    finally:
        os.close(fd)


def _exclusive(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        # A map this process made and no longer uses may wait in a reference cycle: collect, ask again.
        import gc

        gc.collect()
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
