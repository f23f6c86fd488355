"""Segment indexes: `.index` (offset → position), `.timeindex` (timestamp → offset), `.txnindex`
(aborted transactions). Fixed-size big-endian entries, read in bounded chunks.

Kafka preallocates `.index`/`.timeindex` (10 MB by default) and trims them on a clean shutdown; after a
crash the tail is zeros. The entries end at the last one not all zeros, found from the back without
reading holes (`used_entries`); all-zero entries before it (a hole, or zeros written where entries
should be) are counted, not listed (`IndexTail.gap`): work and memory follow the bytes on disk,
whatever the file's length (format/extents.py).
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_tools.format.extents import CHUNK, EntryWalk, ZeroRun, end_of_data, first_zero_entry, fixed_entries
from kafka_tools.format.plural import plural
from kafka_tools.format.shared_methods import SharedMethods

OFFSET_INDEX_ENTRY = struct.Struct(">iI")  # relative offset, physical position
TIME_INDEX_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
TXN_INDEX_ENTRY = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset


@dataclass(init=False, slots=True, repr=False, eq=False)
class OffsetIndexEntry(SharedMethods):
    """One `.index` entry: its slot, the absolute offset and the file position it maps to."""

    slot: int
    offset: int
    position: int

    def __init__(self, slot: int, offset: int, position: int) -> None:
        self.slot = slot
        self.offset = offset
        self.position = position


@dataclass(init=False, slots=True, repr=False, eq=False)
class TimeIndexEntry(SharedMethods):
    """One `.timeindex` entry: its slot, a timestamp and the absolute offset it maps to."""

    slot: int
    timestamp: int
    offset: int

    def __init__(self, slot: int, timestamp: int, offset: int) -> None:
        self.slot = slot
        self.timestamp = timestamp
        self.offset = offset


@dataclass(init=False, slots=True, repr=False, eq=False)
class AbortedTxn(SharedMethods):
    """One `.txnindex` entry: an aborted transaction of a producer, its offsets and the LSO then."""

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
    """What follows the last real entry (zero padding and/or a partial entry), and the all-zero
    entries before it (`gap`: a hole or zeros where entries should be, counted, not listed)."""

    entries: int  # slots up to the last real entry (the gap's included)
    zero_entries: int  # preallocated (zeroed) slots after them
    trailing_bytes: int  # bytes that do not make a whole entry
    position: int  # byte position where the real entries end
    gap: ZeroRun = field(default_factory=ZeroRun)

    def __init__(
        self,
        entries: int,
        zero_entries: int,
        trailing_bytes: int,
        position: int,
        gap: ZeroRun | None = None,
    ) -> None:
        self.entries = entries
        self.zero_entries = zero_entries
        self.trailing_bytes = trailing_bytes
        self.position = position
        self.gap = ZeroRun() if gap is None else gap


def _iter_fixed(
    path: str | os.PathLike, width: int, tail: bool = True
) -> tuple[Iterator[tuple[int, bytes]], IndexTail]:
    """The file's entries up to its last one that is not all zeros (see `used_entries`), read in
    chunks, holes skipped; what follows them, and the all-zero entries met among them (counted in the
    tail as the walk goes, never listed). `tail`: a zero entry 0 counts (`.index`/`.timeindex`, whose
    first entry may be (0, 0)); a `.txnindex` entry is never all zeros."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        size = _regular_size(fd, path)
        whole, entries = used_entries(fd, size, width)
    except BaseException:
        os.close(fd)
        raise
    if tail and whole and not entries:
        entries = 1
    out = IndexTail(entries, whole - entries, size % width, entries * width)
    return _entries_of(fd, width, entries, out, tail), out


def _regular_size(fd: int, path: str | os.PathLike) -> int:
    """The file's size; a directory is an error as reading it would be, another kind of file (a FIFO,
    a device) holds no entries: it is never read, so it cannot block or go on for ever."""
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _entries_of(
    fd: int, width: int, entries: int, tail: IndexTail, keep_first: bool
) -> Iterator[tuple[int, bytes]]:
    walk = EntryWalk(tail.gap)
    try:
        yield from fixed_entries(fd, 0, width, entries, walk, keep_first)
    finally:
        os.close(fd)
    if walk.shortened:  # shortened while read: the entries as far as they go
        tail.entries = walk.slots
        tail.zero_entries = tail.trailing_bytes = 0
        tail.position = walk.slots * width


def used_entries(fd: int, size: int, width: int) -> tuple[int, int]:
    """(whole entries in the file, entries up to and including the last one not all zeros).

    Kafka preallocates `.index`/`.timeindex` (`RandomAccessFile.setLength`, a sparse file of up to
    `segment.index.bytes`) and appends entries from the start; what follows the last entry is zeros.
    The end is found from the back: holes are skipped unread (SEEK_DATA/SEEK_HOLE) and written zeros
    read in chunks, so time and memory follow the entries, never the file's length (a broker's 1 GiB
    preallocation, or an 8 GiB sparse file). Unlike a binary search over zero slots, an entry written
    after a run of zeros is still found (validate reports the run: `IndexTail.gap`)."""
    whole = size // width
    last = end_of_data(fd, 0, whole * width)
    return whole, -(-last // width)


def gap_message(gap: ZeroRun, width: int) -> str:
    """The one line for all-zero entries among an index's entries (`IndexTail.gap`)."""
    return (
        f"{plural(gap.entries, 'entry', 'entries')} all zeros among the entries, the first at entry "
        f"{gap.first_slot} (byte {gap.first_slot * width}): a hole or zeros where entries should be "
        f"(not listed)"
    )


class IndexGap(ValueError):
    """An all-zero entry (past the first) before later entries: no lookup table, whatever its length."""

    def __init__(self, slot: int, width: int) -> None:
        super().__init__(f"entry {slot} (byte {slot * width}) is all zeros and entries follow it")
        self.slot = slot


def entry_bytes(fd: int, size: int, width: int) -> bytes:
    """The bytes of the entries before the zero tail (`used_entries`), read in chunks; fewer when the
    file is shortened meanwhile. Raises IndexGap at the first all-zero entry past the first that entries
    follow (a hole, or zeros written): nothing after it is read, so a file of any length with one entry
    at its end costs what its entries before the gap cost."""
    _whole, entries = used_entries(fd, size, width)
    end = entries * width
    step = CHUNK - CHUNK % width
    parts = []
    at = 0
    while at < end:
        chunk = os.pread(fd, min(end - at, step), at)
        if not chunk:
            break
        zero = first_zero_entry(chunk if at else chunk[width:], width)
        if zero >= 0:
            slot = at // width + zero + (0 if at else 1)
            if slot < entries:
                raise IndexGap(slot, width)
        parts.append(chunk)
        at += len(chunk)
    data = b"".join(parts)
    return data[: len(data) - len(data) % width]


def read_offset_index(path: str | os.PathLike, base_offset: int) -> tuple[list[OffsetIndexEntry], IndexTail]:
    return _read_sparse(
        path, base_offset, OFFSET_INDEX_ENTRY, lambda s, rel, pos: OffsetIndexEntry(s, rel, pos)
    )


def read_time_index(path: str | os.PathLike, base_offset: int) -> tuple[list[TimeIndexEntry], IndexTail]:
    return _read_sparse(path, base_offset, TIME_INDEX_ENTRY, lambda s, ts, rel: TimeIndexEntry(s, ts, rel))


def _read_sparse(path, base_offset: int, layout: struct.Struct, make) -> tuple[list, IndexTail]:
    """Every entry before the zero tail; all-zero ones among them counted in the tail's `gap`."""
    found, tail = _iter_fixed(path, layout.size)
    return [_absolute(make(slot, *layout.unpack(raw)), base_offset) for slot, raw in found], tail


def _absolute(entry, base_offset: int):
    entry.offset += base_offset
    return entry


def read_txn_index(path: str | os.PathLike) -> tuple[list[AbortedTxn], IndexTail]:
    """The aborted transactions, up to the last entry not all zeros (a real one never is: its last
    offset, the abort marker, follows its first)."""
    found, tail = _iter_fixed(path, TXN_INDEX_ENTRY.size, tail=False)
    return [AbortedTxn(slot, *TXN_INDEX_ENTRY.unpack(raw)) for slot, raw in found], tail


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
    """The last entry of an index that is not all zeros (a preallocated tail is zeros: `used_entries`
    finds its end without reading holes); None when it has none. Raises UntrustedIndexSize when the
    file is not a whole number of entries."""
    width = layout.size
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        size = _regular_size(fd, path)
        if size % width:
            raise UntrustedIndexSize(f"{path}: {size} bytes is not a whole number of {width}-byte entries")
        _whole, entries = used_entries(fd, size, width)
        if not entries:
            return None
        raw = os.pread(fd, width, (entries - 1) * width)
        return layout.unpack(raw) if len(raw) == width else None
    finally:
        os.close(fd)


class UntrustedIndexSize(ValueError):
    """An index file whose length is not a whole number of entries."""
