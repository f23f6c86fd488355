"""One run at a time per consumer group: migrate-offsets, offsets import and --undo hold an exclusive
lock per group they move, from planning to read-back, so that two runs never write over each other's
offsets nor journal the other's half-written state.

One file under ktool's state directory (``locks/groups.lock``) and one byte-range lock in it per group,
at an offset drawn from a hash of the group's name: one descriptor however many groups a run moves
(`--all-groups` on a cluster with thousands of groups would exhaust descriptors with a file each), and
released by the kernel when the process ends however it ends, so a killed run leaves nothing to clean
up. It holds for the runs of one user on one host, which is where the journals live too.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka_tools.errors import InputError, os_reason
from kafka_tools.keep.state import locks_dir, make_state_dir

LOCK_FILE = "groups.lock"
_FLOCK = "@hhqqi"  # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid (padded by the kernel)


def lock_offset(group: str) -> int:
    """The byte a group's lock covers: 56 bits of its name's SHA-256 (a collision only serialises two
    groups' runs, never lets two runs of one group through)."""
    return int(hashlib.sha256(group.encode("utf-8", "surrogatepass")).hexdigest()[:14], 16)


@contextmanager
def group_locks(groups: Iterable[str], directory: Path | None = None) -> Iterator[None]:
    """Hold the lock of every group in `groups` or raise InputError naming the first one another run
    holds (and its pid). `directory`: where the lock file is (default: the state directory)."""
    locks = make_state_dir(locks_dir() if directory is None else directory, "lock directory")
    path = locks / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise InputError(f"{path}: cannot open the group lock file: {os_reason(exc)}") from None
    try:  # closing the one descriptor releases every lock this process holds on the file
        for group in sorted(set(groups)):
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, lock_offset(group))
            except OSError:
                by = _holder(fd, lock_offset(group))
                raise InputError(
                    f"group {group}: another ktool run is moving its offsets{by}; wait for it to end "
                    f"(lock {path})"
                ) from None
        yield
    finally:
        os.close(fd)


def _holder(fd: int, offset: int) -> str:
    """`` (pid N)`` of the process holding the byte, from F_GETLK; empty where that cannot be read."""
    try:
        asked = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0).ljust(64, b"\0")
        kind, _, _, _, pid = struct.unpack_from(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, asked))
    except (OSError, struct.error, OverflowError):
        return ""
    return f" (pid {pid})" if kind != fcntl.F_UNLCK and pid > 0 else ""
