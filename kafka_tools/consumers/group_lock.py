"""One run at a time per consumer group: migrate-offsets, offsets import and --undo hold an exclusive
lock per group they move, from planning to read-back, so that two runs never write over each other's
offsets nor journal the other's half-written state.

An fcntl lock on a file per group under ktool's state directory (``locks/groups``): released by the
kernel when the process ends however it ends, so a killed run leaves nothing to clean up. The files are
kept: removing one would race the next run that opens it. It holds for the runs of one user on one
host, which is where the journals live too.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import quote

from kafka_tools.errors import InputError
from kafka_tools.state import locks_dir, make_state_dir


@contextmanager
def group_locks(groups: Iterable[str], directory: Path | None = None) -> Iterator[None]:
    """Hold the lock of every group in `groups` (taken in sorted order) or raise InputError naming the
    first one another run holds. `directory`: where the lock files are (default: the state directory)."""
    locks = make_state_dir(locks_dir() / "groups" if directory is None else directory, "lock directory")
    with ExitStack() as held:
        for group in sorted(set(groups)):
            held.enter_context(_group_lock(locks, group))
        yield


def lock_file(locks: Path, group: str) -> Path:
    """The group's lock file: its name percent-encoded (any group id is a file name), hashed if long."""
    name = quote(group, safe="")
    if len(name) > 200:  # a file name is 255 bytes at most
        name = name[:100] + "-" + hashlib.sha256(group.encode()).hexdigest()
    return locks / f"{name}.lock"


@contextmanager
def _group_lock(locks: Path, group: str) -> Iterator[None]:
    path = lock_file(locks, group)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise InputError(f"{path}: cannot open the lock of group {group}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            by = f" (pid {holder})" if holder.isdigit() else ""
            raise InputError(
                f"group {group}: another ktool run is moving its offsets{by}; wait for it to end ({path})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # for the message of the run it refuses
        yield
    finally:
        os.close(fd)
