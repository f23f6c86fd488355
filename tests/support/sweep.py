"""The exhaustive tier: whether the full sweep was asked for, and a seeded sample of cases when not.

CI runs every distinct case a sweep guards plus a seeded sample of the rest; `tests/run.sh --exhaustive`
(KTOOL_EXHAUSTIVE=1) runs all of them, and the tests marked ``exhaustive``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def exhaustive() -> bool:
    """`tests/run.sh --exhaustive` is running: sample nothing."""
    return os.environ.get("KTOOL_EXHAUSTIVE") == "1"


def rounds(ci: int, full: int) -> int:
    """How many rounds a race or fuzz loop runs: `ci` in CI and the fast tier, `full` in the sweep."""
    return full if exhaustive() else ci


def sample(cases: Sequence[T], ci: int, seed: int = 49) -> list[T]:
    """Every case in the sweep; otherwise `ci` of them (seeded, so a failure reproduces), in their order."""
    if exhaustive() or len(cases) <= ci:
        return list(cases)
    keep = sorted(random.Random(seed).sample(range(len(cases)), ci))
    return [cases[i] for i in keep]
