"""Runs of ordinary v2 batches, walked in C (`_speedups.scan_batches`): what `ktool validate` needs of
them (counts, offsets, timestamps, the index targets it passed), with no Python object a batch.

A run holds only batches validate's common case accepts as they are: framed, magic 2, uncompressed,
CRC-32C matching, offsets in order and in the segment's range, a record count the offset deltas can
hold. The walk stops before anything else, and the Python walk reports that batch as before, so the
findings are the same with or without the extension.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from kafka_tools.format import accel
from kafka_tools.format.checksums import crc32c

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


# -- where a v2 segment can be cut (validate's ranges, log/workers/parallel.py) ------------------------------


def begins_with_batch(path: Path) -> bool:
    """Whether the file's first entry is a v2 batch (magic at byte 16)."""
    try:
        with open(path, "rb") as f:
            head = os.pread(f.fileno(), 17, 0)
    except OSError:
        return False
    return len(head) == 17 and head[16] == 2


# baseOffset, length, leaderEpoch, magic, crc, attributes, lastOffsetDelta
_HEADER = struct.Struct(">qiiBIhi")


# Looked through for a batch start after each cut, doubled while none is found (batches are smaller)
RESYNC_WINDOW, RESYNC_MAX = 256 * 1024, 16 * 1024 * 1024


def split_points(path: Path, parts: int) -> list[int]:
    """Positions that cut `path` into about `parts` ranges of equal size, each the first batch start
    found at or after the cut: a header of magic 2 whose length fits and whose CRC-32C matches what
    follows. Nothing is walked from the file's start (that serial walk, a pread a batch, cost as much
    as a range's CRCs). A start found inside another batch's bytes (a batch carried in a record's
    value) is harmless: the range before it then does not end exactly there, and split_prefix stops
    joining at that seam. [] when the file does not begin with a v2 batch."""
    size = path.stat().st_size
    points: list[int] = []
    with open(path, "rb") as f:
        fd = f.fileno()
        head = os.pread(fd, 17, 0)
        if len(head) < 17 or head[16] != 2:
            return []
        for k in range(1, parts):
            cut = max(size * k // parts, points[-1] + 1 if points else 1)
            found = batch_start_after(fd, cut, size)
            if found is None:
                break
            points.append(found)
    return points


def batch_start_after(fd: int, position: int, size: int) -> int | None:
    """The first position at or after `position` that looks like a batch start (split_points' test);
    None when none is found within RESYNC_MAX bytes."""
    window = RESYNC_WINDOW
    if position >= size:
        return None  # the file was shortened below this range since it was split
    while True:
        buf = os.pread(fd, min(window, size - position), position)
        found = _batch_start_in(buf)
        if found is not None:
            return position + found
        if window >= RESYNC_MAX or len(buf) < window:
            return None
        window *= 2


def _batch_start_in(buf: bytes) -> int | None:
    at = 0
    while True:
        magic = buf.find(b"\x02", at + 16)
        if magic < 0:
            return None
        candidate = magic - 16
        at = candidate + 1
        if candidate + 61 > len(buf):
            return None
        length = int.from_bytes(buf[candidate + 8 : candidate + 12], "big", signed=True)
        end = candidate + 12 + length
        if length < 49 or end > len(buf):
            continue
        stored = int.from_bytes(buf[candidate + 17 : candidate + 21], "big")
        if crc32c(memoryview(buf)[candidate + 21 : end]) == stored:
            return candidate


def first_batch_offsets(path: Path, position: int) -> tuple[int, int]:
    """(base offset, last offset) of the batch at `position`."""
    with open(path, "rb") as f:
        base, _, _, _, _, _, delta = _HEADER.unpack(os.pread(f.fileno(), _HEADER.size, position))
    return base, base + delta
