"""Files that hold credentials (ZooKeeper and broker auth files, a TLS key's password): read in one
place, so that every failure is one line naming the file and what it is for, never its content."""

from __future__ import annotations

import os
from pathlib import Path

from kafka_tools.errors import InputError, os_reason


def read_secret_file(path: str | os.PathLike, what: str) -> str:
    """The text of `path`; InputError "cannot read WHAT PATH: reason" (exit 3) when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = os_reason(exc) if isinstance(exc, OSError) else type(exc).__name__
        raise InputError(f"cannot read {what} {path}: {reason}") from None
