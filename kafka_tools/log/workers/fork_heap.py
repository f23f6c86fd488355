"""The heap a forked worker inherits, kept out of its garbage collector (`gc.freeze`) while workers live.

Why: a forked child that collects garbage its parent made runs that garbage's destructors in the wrong
process. A confluent-kafka client left in a reference cycle (by a test calling ktool in-process, or by
any embedding program) is destroyed by librdkafka, whose threads the child does not have: the child
dies of SIGSEGV, and a pool waiting for its answer waits for ever (CI, stop 47). Frozen, the parent's
objects are never collected in a child; the child's own objects still are. It also keeps a child's
collections from writing to pages it shares with the parent (fewer copied on write).

Nested freezes are counted: the heap is given back to the collector when the outermost ends, unless
it was frozen before (ktool's start-up freezes what it built, cli/start_up.py: unfreezing would undo
that, so what was frozen here stays frozen until the command exits, as start-up's objects do).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_depth = 0
_frozen_before = False  # the heap was frozen when the outermost freeze_for_fork() came


def freeze_for_fork() -> None:
    """Before forking: every object made so far is left out of every collection, here and in children."""
    global _depth, _frozen_before
    if _depth == 0:
        _frozen_before = gc.get_freeze_count() > 0
    gc.freeze()
    _depth += 1


def thaw_after_fork() -> None:
    """Once the children of the matching freeze_for_fork() are reaped: collected as before."""
    global _depth
    _depth -= 1
    if _depth == 0 and not _frozen_before:
        gc.unfreeze()


@contextmanager
def frozen_for_fork() -> Iterator[None]:
    freeze_for_fork()
    try:
        yield
    finally:
        thaw_after_fork()
