"""Whether a running broker owns a log dir: Kafka takes an fcntl lock on `LOGDIR/.lock` at start-up
and holds it until it stops (FileLock.tryLock in LogManager). While it does, the newest segment of
every partition is being written, the preallocated `.index` is trimmed at each roll, old segments are
renamed `.deleted` and removed: ktool reads such a dir as "live" (log/files/dirs.py says what that changes),
never memory-maps its files, and refuses to repair it.

The lock cannot tell for a copy of a log dir, or a broker on another host's mount: `--live` /
`--offline` (cli/options.py) override it for the whole command through `set_mode`.
"""

from __future__ import annotations

import fcntl
import os
import re

LOCK_FILE = ".lock"

LIVE, OFFLINE = "live", "offline"
MODE_ENV = "KTOOL_LIVENESS"  # how the override reaches child processes (`ktool scan`'s executors)


def set_mode(mode: str | None) -> None:
    """`live`, `offline` or None (the lock decides), for every log dir this process (and the processes
    it starts) reads."""
    if mode not in (None, LIVE, OFFLINE):
        raise ValueError(f"not a liveness mode: {mode!r}")
    if mode is None:
        os.environ.pop(MODE_ENV, None)
    else:
        os.environ[MODE_ENV] = mode


def mode() -> str | None:
    value = os.environ.get(MODE_ENV)
    return value if value in (LIVE, OFFLINE) else None


def is_live(log_dir: str | os.PathLike) -> bool:
    """A broker may be writing `log_dir` now: the override when given, else whether another process
    holds its `.lock`."""
    override = mode()
    if override is not None:
        return override == LIVE
    return lock_held(log_dir)


def lock_held(log_dir: str | os.PathLike) -> bool:
    """Another process holds an fcntl lock on `log_dir/.lock`. Read from /proc/locks (no side effect,
    no permission needed on the file); elsewhere by trying a shared lock for an instant."""
    lock = os.path.join(os.fspath(log_dir), LOCK_FILE)
    try:
        st = os.stat(lock)
    except FileNotFoundError:
        return False  # a broker creates `.lock` before it locks it
    except OSError:
        return True  # cannot tell: assume the careful answer
    held = _held_per_proc_locks(st)
    if held is not None:
        return held
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return True
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock taken for the test
    return False


def _held_per_proc_locks(st: os.stat_result) -> bool | None:
    """From /proc/locks: a lock on this inode by a process other than this one (ktool's own repair
    holds the lock while it works); None when /proc/locks cannot be read."""
    holders = _holders(st)
    return None if holders is None else bool(holders)


def _holders(st: os.stat_result) -> list[int] | None:
    """The pids (other than this process) /proc/locks shows holding a lock on this inode; None when
    /proc/locks cannot be read."""
    try:
        with open("/proc/locks") as f:
            table = f.read()
    except OSError:
        return None
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    me = str(os.getpid())
    pids = []
    for line in table.splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a blocked waiter has "->" after the number)
        if "->" in fields:
            continue
        if len(fields) >= 6 and fields[5] == inode and fields[4] != me and fields[4].isdigit():
            pids.append(int(fields[4]))
    return pids


# What ktool writes into a `.lock` while it holds it to change the log dir (log/repair/write_lock.py), so that
# whoever finds the lock held can tell another ktool from a broker: Kafka never reads the file.
KTOOL_MARK = "ktool pid={pid}: {what}\n"


def held_message(log_dir: str | os.PathLike, what: str) -> str:
    """The one line for a log dir whose `.lock` another process holds, naming it where it can tell:
    another ktool (the pid it wrote into the lock file holds it), or a broker."""
    lock = os.path.join(os.fspath(log_dir), LOCK_FILE)
    try:
        holders = _holders(os.stat(lock)) or []
        with open(lock, "rb") as f:
            mark = f.read(4096).decode("utf-8", "replace")
    except OSError:
        holders, mark = [], ""
    ours = re.match(r"ktool pid=(\d+): (.*)", mark)
    for pid in holders:
        if ours is not None and int(ours[1]) == pid:
            doing = ours[2].strip()
            return (
                f"{log_dir}: another ktool (pid {pid}: {doing}) holds {lock}; {what} changes nothing while "
                "it runs (wait for it to finish)"
            )
    who = f"a running broker (pid {holders[0]})" if holders else "a running broker"
    return f"{log_dir}: {who} holds {lock}; {what} changes nothing while it runs (stop the broker first)"


def may_map(path: str | os.PathLike) -> bool:
    """Memory-map a segment only when no broker holds its log dir: a broker may truncate a segment it
    owns (recovery, follower truncation, the index trimmed at a roll), and touching a mapped page past
    a file's new end kills the reader with SIGBUS. Never under `--live`; never while the lock is held,
    even under `--offline`. `KTOOL_NO_MMAP=1` always reads with pread instead."""
    if os.environ.get("KTOOL_NO_MMAP"):
        return False
    log_dir = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    return not (is_live(log_dir) or lock_held(log_dir))
