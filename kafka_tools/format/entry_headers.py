"""An entry's head, for every generation: the frame checks every walk makes of it (`frame_fault`, the one
place a size or magic is judged) and the header-only walk (`iter_headers`) that locating an offset,
splitting a segment and a quick validation read without decoding a record."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import NamedTuple

from kafka_tools.format.extents import end_of_data
from kafka_tools.format.mapping import ShortenedWhileRead
from kafka_tools.format.message_set import min_message_size
from kafka_tools.format.plural import plural
from kafka_tools.format.problems import Problem, ProblemKind
from kafka_tools.format.record_batch import (
    BATCH_HEADER,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    RECORD_BATCH_OVERHEAD,
)

HEADER_UP_TO_MAGIC = 17  # offset + size + (crc | partitionLeaderEpoch) + magic


class EntryHeader(NamedTuple):
    """One entry's header, read without its records, for every generation: what locating an offset,
    splitting a segment, a fast validation or a question about timestamps needs. v0/v1 fields a
    header does not carry are None (a wrapper's first offset needs decompression); 0.7 entries have
    their byte position as offset."""

    position: int
    entry_size: int  # bytes the entry occupies in the file, log header included
    magic: int
    first_offset: int | None  # v2: the base offset; v0/v1: None; 0.7: the position
    last_offset: int
    max_timestamp: int  # v2: maxTimestamp; v1: the message's (a wrapper's is its largest); else -1
    attributes: int
    records_count: int | None  # v2 only
    producer_id: int | None  # v2 only (-1: none)
    crc: int | None  # as stored (None for 0.7 headers, which put it after an optional byte)
    computed_crc: int | None = None  # when the walk checked it (v2 in `walk_entries(light=True)`)
    buf: bytes | None = None  # `iter_headers(whole=True)`: the entry is buf[at:at + entry_size]
    at: int = 0

    @property
    def base_offset(self) -> int | None:
        return self.first_offset

    @property
    def last_offset_delta(self) -> int:
        return self.last_offset - self.first_offset

    @property
    def is_valid(self) -> bool:
        return self.crc == self.computed_crc

    @property
    def codec(self) -> int:
        return self.attributes & 0x07

    @property
    def is_compressed(self) -> bool:
        return self.attributes & 0x07 != 0

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


BatchHeader = EntryHeader  # the name the fast validation walk's callers know (v2 entries only there)
MAGICS = (0, 1, 2)
UNKNOWN_MAGIC_MIN_SIZE = 14  # the smallest frame stepped over when the magic is unknown


def entry_minimum(magic: int) -> int:
    """The smallest size field an entry of this magic can hold (Kafka's record overheads)."""
    if magic == 2:
        return MIN_BATCH_LENGTH
    return min_message_size(magic) if magic in (0, 1) else UNKNOWN_MAGIC_MIN_SIZE


class FrameFault(NamedTuple):
    """Why an entry's frame cannot be followed (or, UNKNOWN_MAGIC, read), from its 17-byte head: the
    one place the size and length checks are made. Callers word it (`problem()` is the walk's)."""

    kind: ProblemKind
    position: int
    remaining: int  # bytes from `position` to the end of the file
    offset: int | None = None
    size: int | None = None  # the size field
    magic: int | None = None

    @property
    def minimum(self) -> int:
        return entry_minimum(self.magic)

    def problem(self) -> Problem:
        kind = self.kind
        if kind is ProblemKind.ZERO_TAIL:
            text = f"{plural(self.remaining, 'zero byte')} at the end of the file"
        elif kind is ProblemKind.TRUNCATED_HEADER:
            text = (
                f"{plural(self.remaining, 'trailing byte')}, too few for an entry header "
                f"({HEADER_UP_TO_MAGIC})"
            )
        elif kind is ProblemKind.SIZE_BELOW_MINIMUM:
            text = f"entry size {self.size} is below the minimum {self.minimum} for magic {self.magic}"
        elif kind is ProblemKind.TRUNCATED_ENTRY:
            text = (
                f"entry of {self.size + LOG_OVERHEAD} bytes runs past the end of the file "
                f"({self.remaining} left)"
            )
        else:
            text = f"unknown magic {self.magic}"
        return Problem(self.position, kind, text, self.offset)


def frame_fault(offset: int, size: int, magic: int, position: int, remaining: int) -> FrameFault | None:
    """The checks every walk makes of an entry's head (offset, size, magic) before reading further:
    a size below its magic's minimum, an entry past the end of the file, an unknown magic."""
    if size < entry_minimum(magic):
        return FrameFault(ProblemKind.SIZE_BELOW_MINIMUM, position, remaining, offset, size, magic)
    if size > remaining - LOG_OVERHEAD:
        return FrameFault(ProblemKind.TRUNCATED_ENTRY, position, remaining, offset, size, magic)
    if magic not in MAGICS:
        return FrameFault(ProblemKind.UNKNOWN_MAGIC, position, remaining, offset, size, magic)
    return None


HEAD_BYTES = RECORD_BATCH_OVERHEAD  # the longest header read (v2's, 61 bytes; v1 26, v0 18)
HEADER_CHUNK = 1 << 20  # bytes read at a time by a header walk (a consumer's default fetch size)
_LEGACY_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
KAFKA07_SIZE_FIELD = 4
KAFKA07_MIN_SIZE = 5  # magic + crc (magic 0)


def iter_headers(
    fd: int,
    start: int = 0,
    end: int | None = None,
    *,
    whole: bool = False,
    chunk: int = HEADER_CHUNK,
    limit: int | None = None,
    kafka07: bool = False,
) -> Iterator[EntryHeader | FrameFault]:
    """The headers of the entries that start in [start, end) of an open segment file, stepping from
    one to the next by their size fields as `walk_entries` does; at the first entry the walk could
    not follow or read (FrameFault: a zero or cut tail, a size below its minimum, an unknown magic)
    the walk yields it and ends. Only the heads are read, in chunks of `chunk` bytes by pread (no
    length from the file is allocated before it is checked against the file's size); with `whole`,
    each entry's bytes come too (buf[at:at + entry_size]), the chunk doubled until the entry fits, up
    to `limit` (an entry larger comes without its bytes: buf None). `kafka07`: a 0.7 `.kafka`
    segment (4-byte size, magic; the offsets are byte positions)."""
    size = os.fstat(fd).st_size
    stop = size if end is None else min(size, end)
    head_min = KAFKA07_SIZE_FIELD + 1 if kafka07 else HEADER_UP_TO_MAGIC
    buf, bstart = b"", start
    pos = start
    while pos < stop:
        remaining = size - pos
        if remaining < head_min:
            zero = zero_from(fd, pos, size)
            yield FrameFault(ProblemKind.ZERO_TAIL if zero else ProblemKind.TRUNCATED_HEADER, pos, remaining)
            return
        i = pos - bstart
        if i + min(HEAD_BYTES, remaining) > len(buf):
            buf, bstart, i = os.pread(fd, min(chunk, remaining), pos), pos, 0
            if len(buf) < min(HEAD_BYTES, remaining):
                raise ShortenedWhileRead(pos)
        if kafka07:
            (length,) = _INT32.unpack_from(buf, i)
            magic = buf[i + KAFKA07_SIZE_FIELD]
            if length == 0 and zero_from(fd, pos, size):
                yield FrameFault(ProblemKind.ZERO_TAIL, pos, remaining)
                return
            if length < KAFKA07_MIN_SIZE:
                yield FrameFault(ProblemKind.SIZE_BELOW_MINIMUM, pos, remaining, None, length, magic)
                return
            entry = length + KAFKA07_SIZE_FIELD
            if entry > remaining:
                yield FrameFault(ProblemKind.TRUNCATED_ENTRY, pos, remaining, None, length, magic)
                return
        else:
            offset, length = _LOG_HEAD.unpack_from(buf, i)
            magic = buf[i + 16]
            if magic > 127:
                magic -= 256
            if length == 0 and offset == 0 and zero_from(fd, pos, size):
                yield FrameFault(ProblemKind.ZERO_TAIL, pos, remaining)
                return
            fault = frame_fault(offset, length, magic, pos, remaining)
            if fault is not None:
                yield fault
                return
            entry = length + LOG_OVERHEAD
        entry_buf = None
        if whole:
            if i + entry > len(buf):
                want = chunk
                while want < entry:
                    want *= 2
                if limit is None or want <= limit:
                    chunk = want
                    buf, bstart, i = os.pread(fd, min(chunk, remaining), pos), pos, 0
                    if len(buf) < entry:
                        raise ShortenedWhileRead(pos)
            if i + entry <= len(buf):
                entry_buf = buf
        yield _header(buf, i, pos, entry, magic, kafka07, entry_buf)
        pos += entry


_LOG_HEAD = struct.Struct(">qi")


def _header(
    buf, i: int, position: int, entry: int, magic: int, kafka07: bool, data: bytes | None
) -> EntryHeader:
    at = 0 if data is None else i
    if kafka07:
        return EntryHeader(
            position, entry, magic, position, position, -1, 0, None, None, None, None, data, at
        )
    if magic == 2:
        h = BATCH_HEADER.unpack_from(buf, i)
        first = h[0]
        return EntryHeader(
            position, entry, 2, first, first + h[6], h[8], h[5] & 0xFFFF, h[12], h[9], h[4], None, data, at
        )  # fmt: skip
    offset, _, crc, _, attributes = _LEGACY_HEAD.unpack_from(buf, i)
    timestamp = _INT64.unpack_from(buf, i + 18)[0] if magic == 1 else -1
    return EntryHeader(
        position, entry, magic, None, offset, timestamp, attributes & 0xFF, None, None, crc, None, data, at
    )  # fmt: skip


def zero_from(fd: int, position: int, size: int) -> bool:
    """Whether the file holds only zeros from `position` on (a preallocated or crash-grown tail). The
    tail's data extents are read from the back and its holes not at all: a 1 GiB sparse tail costs
    its bytes on disk, not 1 GiB of reads (issue 49)."""
    return end_of_data(fd, position, size) <= position
