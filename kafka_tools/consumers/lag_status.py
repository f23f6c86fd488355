"""A partition's consumer status in Burrow's terms, judged over a sliding window of offset samples.

Burrow (LinkedIn's lag checker) does not alarm on a lag figure: it looks at how the committed offset
and the lag move over a window of samples. The rules here, in order:

* ERR: the committed offset went backwards within the window, or lies past the log end offset;
* OK: the lag was 0 at some sample of the window (the consumer caught up), or fewer than
  ``MIN_SAMPLES`` samples are known yet;
* STOP: lag > 0 and the committed offset did not move over the window while no live member owns the
  partition, or nothing was ever committed (nobody is committing);
* STALL: lag > 0 and the committed offset did not move over the window although a member owns the
  partition (it is stuck on a message);
* WARN: the committed offset moves, but the lag grew at every sample of the window (falling behind);
* OK otherwise.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field

OK = "OK"
WARN = "WARN"
STALL = "STALL"
STOP = "STOP"
ERR = "ERR"

WINDOW = 10  # samples, as Burrow's default `intervals`
MIN_SAMPLES = 3


@dataclass(frozen=True)
class Sample:
    at: float
    offset: int | None  # committed offset (None: never committed)
    log_end: int
    owned: bool  # a live member owns the partition

    @property
    def lag(self) -> int | None:
        return None if self.offset is None else max(0, self.log_end - self.offset)


def evaluate(samples: list[Sample]) -> str:
    """The status of one partition from its samples, oldest first (see the module docstring)."""
    if not samples:
        return OK
    last = samples[-1]
    offsets = [s.offset for s in samples if s.offset is not None]
    if any(b < a for a, b in itertools.pairwise(offsets)) or (
        last.offset is not None and last.offset > last.log_end
    ):
        return ERR
    if any(s.lag == 0 for s in samples) or len(samples) < MIN_SAMPLES:
        return OK
    if last.offset is None:
        return STOP
    if len(set(offsets)) == 1:
        return STALL if last.owned else STOP
    lags = [s.lag for s in samples]
    if all(b is not None and a is not None and b > a for a, b in itertools.pairwise(lags)):
        return WARN
    return OK


@dataclass
class PartitionWindow:
    """The last ``WINDOW`` samples of one partition and the status they gave last time."""

    samples: deque[Sample] = field(default_factory=lambda: deque(maxlen=WINDOW))
    status: str | None = None

    def add(self, sample: Sample) -> tuple[str | None, str] | None:
        """Add a sample; (old status, new status) when the status changed, else None."""
        self.samples.append(sample)
        new = evaluate(list(self.samples))
        if new == self.status:
            return None
        old, self.status = self.status, new
        return old, new
