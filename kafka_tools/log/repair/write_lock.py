"""The one way ktool takes a log dir to change files in it: an exclusive fcntl lock on `LOGDIR/.lock`,
the lock a broker takes at start-up (FileLock in LogManager). Holding it keeps a broker from starting
on the directory, another ktool repair from planning on files this one is changing, and ktool's
readers from memory-mapping them (they read a held log dir as live: broker_lock.may_map).

Taken before anything is planned, held until the last change is on disk. While held, the lock file
says `ktool pid=N: what`, so a second command that finds it held names this one instead of blaming a
broker (broker_lock.held_message); a broker never reads the file. Its old content (a broker's is empty)
is put back on release, and a `.lock` ktool created is removed again.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from kafka_tools.errors import InputError, os_error, os_reason
from kafka_tools.format.mapping import maps_excluded
from kafka_tools.log.files.broker_lock import KTOOL_MARK, LOCK_FILE, held_message


@contextmanager
def write_lock(log_dir: Path, what: str) -> Iterator[None]:
    """Hold `log_dir/.lock` exclusively for `what` (e.g. `ktool truncate`); InputError (exit 3, one line
    naming the holder) at once when another process holds it."""
    lock_path = log_dir / LOCK_FILE
    existed = os.path.lexists(lock_path)
    try:
        # O_NOFOLLOW: a `.lock` that is a symbolic link is not followed out of the log dir.
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise InputError(f"{lock_path}: cannot open the log dir lock: {os_reason(exc)}") from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InputError(held_message(log_dir, what)) from None
        old = os.pread(fd, 4096, 0)
        _mark(fd, KTOOL_MARK.format(pid=os.getpid(), what=what).encode())
        try:
            with ExitStack() as maps:
                try:  # and no ktool reader has a file of the log dir mapped meanwhile (format/mapping.py)
                    maps.enter_context(maps_excluded(log_dir))
                except OSError as exc:
                    raise os_error(log_dir, exc) from None
                yield
        finally:
            if existed:
                _mark(fd, old)
            else:
                lock_path.unlink(missing_ok=True)  # still held: no other process has locked it
    finally:
        os.close(fd)


def _mark(fd: int, content: bytes) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, content, 0)
