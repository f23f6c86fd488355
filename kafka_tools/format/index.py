"""Segment indexes: `.index` (offset → position), `.timeindex` (timestamp → offset), `.txnindex`
(aborted transactions). Fixed-size big-endian entries, read in bounded chunks.

Kafka preallocates `.index`/`.timeindex` (10 MB by default) and trims them on a clean shutdown; after a
crash the tail is zeros. As DumpLogSegments does, a zero entry after the first one ends the index.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from kafka_tools.format.shared_methods import SharedMethods

OFFSET_INDEX_ENTRY = struct.Struct(">iI")  # relative offset, physical position
TIME_INDEX_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
TXN_INDEX_ENTRY = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset
_CHUNK = 1 << 20


@dataclass(init=False, slots=True, repr=False, eq=False)
class OffsetIndexEntry(SharedMethods):
    slot: int
    offset: int
    position: int

    def __init__(self, slot: int, offset: int, position: int) -> None:
        self.slot = slot
        self.offset = offset
        self.position = position


@dataclass(init=False, slots=True, repr=False, eq=False)
class TimeIndexEntry(SharedMethods):
    slot: int
    timestamp: int
    offset: int

    def __init__(self, slot: int, timestamp: int, offset: int) -> None:
        self.slot = slot
        self.timestamp = timestamp
        self.offset = offset


@dataclass(init=False, slots=True, repr=False, eq=False)
class AbortedTxn(SharedMethods):
    slot: int
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def __init__(
        self,
        slot: int,
        version: int,
        producer_id: int,
        first_offset: int,
        last_offset: int,
        last_stable_offset: int,
    ) -> None:
        self.slot = slot
        self.version = version
        self.producer_id = producer_id
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.last_stable_offset = last_stable_offset


@dataclass(init=False, slots=True, repr=False, eq=False)
class IndexTail(SharedMethods):
    """What follows the last real entry: zero padding and/or a partial entry."""

    entries: int  # real entries read
    zero_entries: int  # preallocated (zeroed) slots after them
    trailing_bytes: int  # bytes that do not make a whole entry
    position: int  # byte position where the real entries end

    def __init__(self, entries: int, zero_entries: int, trailing_bytes: int, position: int) -> None:
        self.entries = entries
        self.zero_entries = zero_entries
        self.trailing_bytes = trailing_bytes
        self.position = position


def _iter_fixed(path: str | os.PathLike, size: int) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as f:
        step = _CHUNK - _CHUNK % size
        slot = 0
        while True:
            chunk = f.read(step)
            if not chunk:
                return
            whole = len(chunk) - len(chunk) % size
            for i in range(0, whole, size):
                yield slot, chunk[i : i + size]
                slot += 1
            if whole != len(chunk):
                return


def read_offset_index(path: str | os.PathLike, base_offset: int) -> tuple[list[OffsetIndexEntry], IndexTail]:
    return _read_sparse(
        path, base_offset, OFFSET_INDEX_ENTRY, lambda s, rel, pos: OffsetIndexEntry(s, rel, pos)
    )


def read_time_index(path: str | os.PathLike, base_offset: int) -> tuple[list[TimeIndexEntry], IndexTail]:
    return _read_sparse(path, base_offset, TIME_INDEX_ENTRY, lambda s, ts, rel: TimeIndexEntry(s, ts, rel))


def _read_sparse(path, base_offset: int, layout: struct.Struct, make) -> tuple[list, IndexTail]:
    entries = []
    zeros = 0
    zero_entry = bytes(layout.size)
    for slot, raw in _iter_fixed(path, layout.size):
        if raw == zero_entry and slot > 0:
            zeros += 1
            continue
        if zeros:
            # Non-zero data after a zero run: not a preallocated tail. Count the zeros as entries.
            for z in range(slot - zeros, slot):
                entries.append(_absolute(make(z, *layout.unpack(zero_entry)), base_offset))
            zeros = 0
        entries.append(_absolute(make(slot, *layout.unpack(raw)), base_offset))
    size = os.path.getsize(path)
    return entries, IndexTail(len(entries), zeros, size % layout.size, len(entries) * layout.size)


def _absolute(entry, base_offset: int):
    entry.offset += base_offset
    return entry


def read_txn_index(path: str | os.PathLike) -> tuple[list[AbortedTxn], IndexTail]:
    entries = [
        AbortedTxn(slot, *TXN_INDEX_ENTRY.unpack(raw))
        for slot, raw in _iter_fixed(path, TXN_INDEX_ENTRY.size)
    ]
    size = os.path.getsize(path)
    return entries, IndexTail(
        len(entries), 0, size % TXN_INDEX_ENTRY.size, len(entries) * TXN_INDEX_ENTRY.size
    )


def offset_index_columns(data: bytes, entries: int) -> tuple[array, array]:
    """(relative offsets, positions) of the first `entries` `.index` entries in `data`, as two
    unsigned 32-bit columns (one conversion for the whole file: a lookup bisects them)."""
    column = array("I")
    column.frombytes(data[: entries * OFFSET_INDEX_ENTRY.size])
    if sys.byteorder == "little":
        column.byteswap()
    return column[0::2], column[1::2]


def time_index_pairs(data: bytes) -> list[tuple[int, int]]:
    """(timestamp, relative offset) of every whole `.timeindex` entry in `data`."""
    whole = len(data) - len(data) % TIME_INDEX_ENTRY.size
    return list(TIME_INDEX_ENTRY.iter_unpack(data[:whole]))


def last_entry(path: str | os.PathLike, layout: struct.Struct) -> tuple | None:
    """The last entry of an index that is not all zeros (a preallocated tail is zeros), read backwards
    in small chunks from the end; None when it has none. Raises UntrustedIndexSize when the file is
    not a whole number of entries."""
    width = layout.size
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size % width:
            raise UntrustedIndexSize(f"{path}: {size} bytes is not a whole number of {width}-byte entries")
        end = size
        while end > 0:
            start = max(0, end - _BACK_CHUNK)
            chunk = os.pread(fd, end - start, start)
            for at in range(len(chunk) - width, -1, -width):
                if chunk.count(0, at, at + width) != width:
                    return layout.unpack_from(chunk, at)
            end = start
        return None
    finally:
        os.close(fd)


class UntrustedIndexSize(ValueError):
    """An index file whose length is not a whole number of entries."""


_BACK_CHUNK = 12 * 1024
