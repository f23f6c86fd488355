"""Holding a log dir's `.lock` from another process, as a running broker does (fcntl record lock)."""

from __future__ import annotations

import fcntl
import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _hold(path: str, ready, release) -> None:
    with open(path, "a+") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        ready.set()
        release.wait(30)


@contextmanager
def lock_held_elsewhere(lock: Path) -> Iterator[None]:
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(lock), ready, release))
    holder.start()
    try:
        if not ready.wait(10):
            raise RuntimeError(f"could not lock {lock}")
        yield
    finally:
        release.set()
        holder.join(10)
