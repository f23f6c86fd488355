"""Segment indexes: `.index` (offset → position), `.timeindex` (timestamp → offset), `.txnindex`
(aborted transactions). Fixed-size big-endian entries, read in bounded chunks.

Kafka preallocates `.index`/`.timeindex` (10 MB by default) and trims them on a clean shutdown; after a
crash the tail is zeros. The entries end at the last one not all zeros, found from the back without
reading holes (`used_entries`): work and memory follow the entries, whatever the file's length.
"""

from __future__ import annotations

import errno
import os
import stat
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


def _iter_fixed(
    path: str | os.PathLike, width: int, tail: bool = True
) -> tuple[Iterator[tuple[int, bytes]], IndexTail]:
    """The file's entries up to its last one that is not all zeros (see `used_entries`), read in
    chunks, and what follows them. `tail`: a zero entry 0 counts (`.index`/`.timeindex`, whose first
    entry may be (0, 0)); a `.txnindex` entry is never all zeros."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        size = _regular_size(fd, path)
        whole, entries = used_entries(fd, size, width)
    except BaseException:
        os.close(fd)
        raise
    if tail and whole and not entries:
        entries = 1
    return _entries_of(fd, width, entries), IndexTail(entries, whole - entries, size % width, entries * width)


def _regular_size(fd: int, path: str | os.PathLike) -> int:
    """The file's size; a directory is an error as reading it would be, another kind of file (a FIFO,
    a device) holds no entries: it is never read, so it cannot block or go on for ever."""
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _entries_of(fd: int, width: int, entries: int) -> Iterator[tuple[int, bytes]]:
    try:
        step = _CHUNK - _CHUNK % width
        slot = 0
        end = entries * width
        at = 0
        while at < end:
            want = min(step, end - at)
            chunk = os.pread(fd, want, at)
            for i in range(0, len(chunk) - len(chunk) % width, width):
                yield slot, chunk[i : i + width]
                slot += 1
            if len(chunk) < want:
                return  # shortened while read: the entries as far as they go
            at += want
    finally:
        os.close(fd)


def used_entries(fd: int, size: int, width: int) -> tuple[int, int]:
    """(whole entries in the file, entries up to and including the last one not all zeros).

    Kafka preallocates `.index`/`.timeindex` (`RandomAccessFile.setLength`, a sparse file of up to
    `segment.index.bytes`) and appends entries from the start; what follows the last entry is zeros.
    The end is found from the back: holes are skipped unread (SEEK_DATA/SEEK_HOLE) and written zeros
    read in chunks, so time and memory follow the entries, never the file's length (a broker's 1 GiB
    preallocation, or an 8 GiB sparse file). Unlike a binary search over zero slots, an entry written
    after a run of zeros is still found (validate reports it)."""
    whole = size // width
    last = _end_of_data(fd, whole * width)
    return whole, -(-last // width)


def entry_bytes(fd: int, size: int, width: int) -> bytes:
    """The bytes of the entries before the zero tail (`used_entries`), read in chunks; fewer when the
    file is shortened meanwhile."""
    _whole, entries = used_entries(fd, size, width)
    parts = []
    at = 0
    while at < entries * width:
        chunk = os.pread(fd, min(entries * width - at, 1 << 24), at)
        if not chunk:
            break
        parts.append(chunk)
        at += len(chunk)
    data = b"".join(parts)
    return data[: len(data) - len(data) % width]


def _end_of_data(fd: int, limit: int) -> int:
    """The position after the last non-zero byte before `limit`; 0 when there is none."""
    last = 0
    for start, end in _data_extents(fd, limit):
        found = _end_in(fd, start, end)
        if found:
            last = found
    return last


def _data_extents(fd: int, limit: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each stretch of the first `limit` bytes that is not a hole, in file order."""
    at = 0
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


def _end_in(fd: int, start: int, end: int) -> int:
    """The position after the last non-zero byte in [start, end), read backwards in chunks; 0 if none."""
    while end > start:
        at = max(start, end - _CHUNK)
        chunk = os.pread(fd, end - at, at)
        kept = len(chunk.rstrip(b"\0"))
        if kept:
            return at + kept
        end = at
    return 0


def read_offset_index(path: str | os.PathLike, base_offset: int) -> tuple[list[OffsetIndexEntry], IndexTail]:
    return _read_sparse(
        path, base_offset, OFFSET_INDEX_ENTRY, lambda s, rel, pos: OffsetIndexEntry(s, rel, pos)
    )


def read_time_index(path: str | os.PathLike, base_offset: int) -> tuple[list[TimeIndexEntry], IndexTail]:
    return _read_sparse(path, base_offset, TIME_INDEX_ENTRY, lambda s, ts, rel: TimeIndexEntry(s, ts, rel))


def _read_sparse(path, base_offset: int, layout: struct.Struct, make) -> tuple[list, IndexTail]:
    """Every entry before the zero tail, zero entries between real ones included."""
    found, tail = _iter_fixed(path, layout.size)
    entries = [_absolute(make(slot, *layout.unpack(raw)), base_offset) for slot, raw in found]
    if len(entries) < tail.entries:  # shortened while read
        tail = IndexTail(len(entries), 0, 0, len(entries) * layout.size)
    return entries, tail


def _absolute(entry, base_offset: int):
    entry.offset += base_offset
    return entry


def read_txn_index(path: str | os.PathLike) -> tuple[list[AbortedTxn], IndexTail]:
    """The aborted transactions, up to the last entry not all zeros (a real one never is: its last
    offset, the abort marker, follows its first)."""
    found, tail = _iter_fixed(path, TXN_INDEX_ENTRY.size, tail=False)
    entries = [AbortedTxn(slot, *TXN_INDEX_ENTRY.unpack(raw)) for slot, raw in found]
    if len(entries) < tail.entries:
        tail = IndexTail(len(entries), 0, 0, len(entries) * TXN_INDEX_ENTRY.size)
    return entries, tail


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
