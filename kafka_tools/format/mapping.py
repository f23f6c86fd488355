"""Who decides whether a segment file may be memory-mapped. The decoder knows nothing of brokers:
log/ installs the broker-lock check (kafka_tools.broker_lock.may_map) when it is imported. This module
imports nothing, so installing the policy costs no decoder import (TAB completion, `--help`)."""

from __future__ import annotations

import os
from collections.abc import Callable


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
