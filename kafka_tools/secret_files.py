"""Files that hold credentials (ZooKeeper and broker auth files, a TLS key's password): read in one
place, so that every failure is one line naming the file and what it is for, never its content."""

from __future__ import annotations

import os
import stat

from kafka_tools.errors import InputError, os_reason

# A credentials file is a few lines; anything longer is not one (and is not read into memory whole).
MAX_BYTES = 1 << 20


def read_secret_file(path: str | os.PathLike, what: str) -> str:
    """The text of `path`; InputError "cannot read WHAT PATH: reason" (exit 3) when it cannot be read.
    Opened without blocking: a FIFO or a device named by mistake is refused at once, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"cannot read {what} {path}: not a regular file")
            if info.st_size > MAX_BYTES:
                raise InputError(
                    f"cannot read {what} {path}: {info.st_size} bytes, more than a credentials file"
                )
            data = os.read(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = os_reason(exc) if isinstance(exc, OSError) else type(exc).__name__
        raise InputError(f"cannot read {what} {path}: {reason}") from None
