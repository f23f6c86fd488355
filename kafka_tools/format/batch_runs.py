"""Runs of ordinary v2 batches, walked in C (`_speedups.scan_batches`): what `ktool validate` needs of
them (counts, offsets, timestamps, the index targets it passed), with no Python object a batch.

A run holds only batches validate's common case accepts as they are: framed, magic 2, uncompressed,
CRC-32C matching, offsets in order and in the segment's range, a record count the offset deltas can
hold. The walk stops before anything else, and the Python walk reports that batch as before, so the
findings are the same with or without the extension.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kafka_tools.format import accel

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class BatchRun(NamedTuple):
    position: int  # of the first batch
    end: int  # the file position after the last one
    count: int  # batches
    records: int  # the batches' record counts, summed
    first_offset: int  # the first batch's base offset
    last_offset: int  # the last batch's last offset
    max_timestamp: int
    has_gaps: bool  # a base offset skipped past the offset before it (within the run or from `prev`)
    hits: list[tuple[int, int, int]]  # (position, base offset, last offset) of the wanted positions passed


def scanner() -> Callable | None:
    """The C walk, or None (extension off): asked once per walk, as every fast path is."""
    return accel.fast("scan_batches")


def batch_run(
    scan: Callable,
    buf,
    i: int,
    position: int,
    stop: int,
    file_end: int,
    prev: int | None,
    lo: int,
    hi: int,
    wanted: Sequence[int],
    check_crc: bool = True,
) -> BatchRun | None:
    """The run of batches at `buf[i]` (file `position`), none starting at or past file position `stop`;
    None when the first batch there is not one a run holds."""
    if prev is not None and not INT64_MIN <= prev <= INT64_MAX:
        return None  # an offset past int64 (base + delta) went before: the Python walk goes on alone
    shift = position - i
    k0 = bisect.bisect_left(wanted, position) if wanted else 0
    k1 = bisect.bisect_left(wanted, stop, k0) if wanted else 0
    j, count, records, first, last, max_ts, gaps, hits = scan(
        buf, i, stop - shift, file_end - shift, prev, lo, hi, wanted[k0:k1], shift, check_crc
    )
    if not count:
        return None
    return BatchRun(position, j + shift, count, records, first, last, max_ts, gaps, hits)
