"""The bytes a file really holds, for the readers of fixed-width entries (indexes, producer snapshots)
and of the small files read whole: never the file's apparent length.

A broker preallocates `.index`/`.timeindex` sparse (`RandomAccessFile.setLength`), and a damaged or
hostile directory can hold a file of any length with one entry written at its end: 4 KB on disk, 1 GiB
long. Holes are skipped unread (SEEK_DATA/SEEK_HOLE), written zeros read in bounded chunks, and an
all-zero entry is counted, never made an object: a run of a hundred million of them is one `ZeroRun`.
Work follows the bytes on disk, memory stays flat.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass

CHUNK = 1 << 20
_NONZERO = bytes([0] + [1] * 255)


def data_extents(fd: int, start: int, limit: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each stretch of [start, limit) that is not a hole, in file order."""
    at = start
    while at < limit:
        try:
            data = os.lseek(fd, at, os.SEEK_DATA)
            hole = os.lseek(fd, data, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                return  # only a hole from `at` to the end
            yield at, limit  # no hole support here: all of it is data
            return
        if data >= limit:
            return
        yield data, min(hole, limit)
        at = hole


def next_data(fd: int, at: int, limit: int) -> int | None:
    """The first position at or after `at` that is not in a hole, or None if [at, limit) is all hole:
    a scan for entries jumps a sparse stretch instead of reading gigabytes of zeros the disk never held."""
    try:
        data = os.lseek(fd, at, os.SEEK_DATA)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return None
        return at  # no hole support here: all of it is data
    return data if data < limit else None


def end_of_data(fd: int, start: int, limit: int) -> int:
    """The position after the last non-zero byte in [start, limit); `start` when there is none. The
    extents are searched from the last one back, each read backwards in chunks: a file's zero tail,
    written or a hole, costs no memory and no time for its holes."""
    extents = list(data_extents(fd, start, limit))
    for first, end in reversed(extents):
        found = _end_in(fd, first, end)
        if found:
            return found
    return start


def _end_in(fd: int, start: int, end: int) -> int:
    """The position after the last non-zero byte in [start, end), read backwards in chunks; 0 if none."""
    while end > start:
        at = max(start, end - CHUNK)
        chunk = os.pread(fd, end - at, at)
        kept = len(chunk.rstrip(b"\0"))
        if kept:
            return at + kept
        end = at
    return 0


def first_zero_entry(chunk: bytes, width: int) -> int:
    """The index of the first whole `width`-byte entry of `chunk` that is all zeros, or -1. Linear and
    in C: one flag byte per entry, the OR of the entries' columns (a column is every `width`-th byte)."""
    zero = bytes(width)
    if zero not in chunk:
        return -1
    whole = len(chunk) - len(chunk) % width
    if not whole:
        return -1
    mask = 0
    for column in range(width):
        mask |= int.from_bytes(chunk[column:whole:width].translate(_NONZERO), "big")
    return mask.to_bytes(whole // width, "big").find(b"\0")


@dataclass(slots=True)
class ZeroRun:
    """All-zero entries met among a file's entries: how many, and the first one's slot. Not entries
    (none of Kafka's is all zeros, but an index's first), and never listed one by one."""

    entries: int = 0
    first_slot: int = -1

    def add(self, slot: int, count: int) -> None:
        if count <= 0:
            return
        if self.first_slot < 0:
            self.first_slot = slot
        self.entries += count


@dataclass(slots=True)
class EntryWalk:
    """What a walk over fixed-width entries met besides the entries it yielded."""

    zeros: ZeroRun
    slots: int = 0  # slots accounted for (yielded or counted as zeros): fewer than asked when shortened
    shortened: bool = False


def fixed_entries(
    fd: int, start: int, width: int, slots: int, walk: EntryWalk, keep_first_zero: bool = False
) -> Iterator[tuple[int, bytes]]:
    """(slot, bytes) of each entry of `slots` entries of `width` bytes from `start` that is not all
    zeros, holes skipped unread; the all-zero ones counted in `walk.zeros` (`keep_first_zero`: slot 0
    is yielded even when it is, as an index's first entry (0, 0) may be). A file shortened while read
    ends the walk (`walk.shortened`): the entries as far as they go."""
    end = start + slots * width
    zero = bytes(width)
    step = CHUNK - CHUNK % width
    slot = 0
    for first, stop in data_extents(fd, start, end):
        head = max((first - start) // width, slot)
        if head > slot:
            if slot == 0 and keep_first_zero:
                yield 0, zero
                slot = 1
            walk.zeros.add(slot, head - slot)
            slot = head
        last = min(-(-(stop - start) // width), slots)
        at, stop_at = start + slot * width, start + last * width
        while at < stop_at:
            want = min(step, stop_at - at)
            chunk = os.pread(fd, want, at)
            whole = len(chunk) - len(chunk) % width
            if first_zero_entry(chunk, width) < 0:
                for i in range(0, whole, width):
                    yield slot, chunk[i : i + width]
                    slot += 1
            else:
                for i in range(0, whole, width):
                    raw = chunk[i : i + width]
                    if raw != zero or (slot == 0 and keep_first_zero):
                        yield slot, raw
                    else:
                        walk.zeros.add(slot, 1)
                    slot += 1
            walk.slots = slot
            if len(chunk) < want:
                walk.shortened = True
                return
            at += want
    if slot < slots:  # a hole to the end
        if slot == 0 and keep_first_zero:
            yield 0, zero
            slot = 1
        walk.zeros.add(slot, slots - slot)
    walk.slots = slots
