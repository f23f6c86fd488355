"""Kafka 0.7 `NNNN.kafka` segments, where a message's offset is a byte position.

Entry layout (kafka.message.Message, 0.7): size int32 (bytes after it), magic int8, attributes int8 (only
when magic == 1; codec in the low 2 bits: 0 none, 1 gzip, 2 snappy), crc uint32 (CRC32 of the payload),
payload. A compressed message's payload is itself a 0.7 message set. The file's name is its start offset,
so a message's offset is that start plus the message's byte position in the file.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kafka_tools.format import messages as T
from kafka_tools.format.checksums import crc32
from kafka_tools.format.compression import Codec, CodecAndCrc, DecompressionError, decompress
from kafka_tools.format.plural import plural
from kafka_tools.format.problems import Problem, ProblemKind
from kafka_tools.format.record_reader import NO_SEQUENCE, Record, RecordDecodeError
from kafka_tools.format.segment import SegmentWindow
from kafka_tools.format.shared_methods import SharedMethods

SIZE_FIELD = 4
CODEC_MASK = 0x03


def min_size(magic: int) -> int:
    return 5 if magic == 0 else 6  # magic (+ attributes) + crc


@dataclass(init=False, slots=True, repr=False, eq=False)
class Kafka07Message(CodecAndCrc, SharedMethods):
    position: int  # byte position in the file (inner messages: inside the decompressed set)
    offset: int  # start offset of the file + position (inner messages: their wrapper's)
    size: int
    magic: int
    attributes: int
    crc: int
    payload: bytes
    computed_crc: int

    def __init__(
        self,
        position: int,
        offset: int,
        size: int,
        magic: int,
        attributes: int,
        crc: int,
        payload: bytes,
        computed_crc: int,
    ) -> None:
        self.position = position
        self.offset = offset
        self.size = size
        self.magic = magic
        self.attributes = attributes
        self.crc = crc
        self.payload = payload
        self.computed_crc = computed_crc

    @property
    def entry_size(self) -> int:
        return self.size + SIZE_FIELD

    @property
    def next_position(self) -> int:
        return self.position + self.size + SIZE_FIELD

    @property
    def next_offset(self) -> int:
        """What a 0.7 consumer fetches next: the byte offset just past this message."""
        return self.offset + self.entry_size

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK if self.magic == 1 else Codec.NONE

    def inner_messages(self) -> list[Kafka07Message]:
        if not self.is_compressed:
            return [self]
        header = 1 + (1 if self.magic == 1 else 0) + 4
        where = self.position + SIZE_FIELD + header
        try:
            data = decompress(self.codec, self.payload)
        except DecompressionError as exc:
            raise RecordDecodeError(T.UNDECOMPRESSABLE.format(self.codec_label, exc), where) from None
        inner = []
        for item in walk_kafka07(data, 0, len(data), self.offset):
            if isinstance(item, Problem):
                raise RecordDecodeError(T.INSIDE_PAYLOAD.format(f"inner message set: {item.message}"), where)
            item.offset = self.offset
            inner.append(item)
        return inner

    def records(self, limit: int | None = None) -> list[Record]:
        return [
            Record(m.offset, -1, None, m.payload, (), NO_SEQUENCE, m.entry_size)
            for m in self.inner_messages()
        ]


def parse_kafka07(buf: bytes | memoryview, at: int, position: int, base_offset: int) -> Kafka07Message:
    (size,) = struct.unpack_from(">i", buf, at)
    magic = buf[at + 4]
    pos = at + 5
    attributes = 0
    if magic == 1:
        attributes = buf[pos]
        pos += 1
    (crc,) = struct.unpack_from(">I", buf, pos)
    pos += 4
    stop = at + SIZE_FIELD + size
    payload = bytes(buf[pos:stop])
    return Kafka07Message(
        position, base_offset + position, size, magic, attributes, crc, payload, crc32(payload)
    )


def walk_kafka07(buf: bytes, position: int, end: int, base_offset: int) -> Iterator[Kafka07Message | Problem]:
    """Walk an in-memory 0.7 message set (used for the inside of compressed wrappers)."""
    while position < end:
        problem = _frame_problem(buf, position, end, base_offset)
        if problem is not None:
            yield problem
            return
        message = parse_kafka07(buf, position, position, base_offset)
        yield message
        position = message.next_position


def _frame_problem(
    buf, at: int, remaining_end: int, base_offset: int, position: int | None = None
) -> Problem | None:
    position = at if position is None else position
    remaining = remaining_end - at
    offset = base_offset + position
    if remaining < SIZE_FIELD + 1:
        return Problem(
            position,
            ProblemKind.TRUNCATED_HEADER,
            f"{plural(remaining, 'trailing byte')}, too few for a message",
            offset,
        )
    (size,) = struct.unpack_from(">i", buf, at)
    magic = buf[at + 4]
    if magic not in (0, 1):
        return Problem(position, ProblemKind.UNKNOWN_MAGIC, f"unknown 0.7 magic {magic}", offset)
    if size < min_size(magic):
        return Problem(
            position,
            ProblemKind.SIZE_BELOW_MINIMUM,
            f"message size {size} is below {min_size(magic)}",
            offset,
        )
    if size > remaining - SIZE_FIELD:
        return Problem(
            position,
            ProblemKind.TRUNCATED_ENTRY,
            f"message of {size + SIZE_FIELD} bytes runs past the end of the file "
            f"({plural(remaining, 'byte')} left)",
            offset,
        )
    return None


def iter_kafka07_entries(
    path: str | os.PathLike,
    base_offset: int,
    start: int = 0,
    end: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Kafka07Message | Problem]:
    """Yield each message of a 0.7 `.kafka` file, then at most one fatal Problem."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        win = SegmentWindow(f, size)
        limit = size if end is None else min(size, end)
        position = start
        while position < limit:
            if progress is not None:
                progress(position)
            head = min(SIZE_FIELD + 6, size - position)
            i = win.ensure(position, head)
            if head >= 4 and struct.unpack_from(">i", win.buf, i)[0] == 0 and win.is_zero_from(position):
                yield Problem(
                    position,
                    ProblemKind.ZERO_TAIL,
                    f"{plural(size - position, 'zero byte')} at the end of the file",
                    base_offset + position,
                )
                return
            problem = _frame_problem(win.buf, i, i + (size - position), base_offset, position)
            if problem is not None:
                yield problem
                return
            (msg_size,) = struct.unpack_from(">i", win.buf, i)
            i = win.ensure(position, msg_size + SIZE_FIELD)
            message = parse_kafka07(win.buf, i, position, base_offset)
            yield message
            position = message.next_position
        if progress is not None:
            progress(position)


_CANDIDATE = re.compile(rb"(?=[\x00-\x7f][\s\S]{3}[\x00\x01])")
_NONZERO = re.compile(rb"[^\x00]")


def resync_kafka07(path: str | os.PathLike, start: int, limit: int = 1 << 20) -> list[int]:
    """Positions of valid messages (framed, CRC-checked) after damage that lost the framing at
    `start - 1`: what lies beyond a hole that truncation would throw away. A 0.7 message has no offset
    to look for, so candidates are positions whose size and magic fit; the CRC decides."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        end = min(size, start + (1 << 30))
        win = SegmentWindow(f, size)
        pos = start
        while pos + SIZE_FIELD + 5 <= end:
            chunk = min(8 * 1024 * 1024, end - pos)
            i0 = win.ensure(pos, chunk)
            m = _CANDIDATE.search(win.buf, i0, i0 + chunk)
            if m is None:
                pos += max(1, chunk - SIZE_FIELD - 1)
                continue
            cand = pos + (m.start() - i0)
            if win.buf[m.start() : m.start() + 5] == bytes(5):  # a run of zeros: skip to its end
                z = _NONZERO.search(win.buf, m.start(), i0 + chunk)
                pos = max(cand + 1, pos + ((z.start() if z else i0 + chunk) - i0) - SIZE_FIELD)
                continue
            if _valid_at(win, cand, size):
                found = []
                for item in iter_kafka07_entries(path, 0, cand):
                    if isinstance(item, Problem) or len(found) >= limit:
                        break
                    if item.is_valid:
                        found.append(item.position)
                return found
            pos = cand + 1
    return []


def _valid_at(win: SegmentWindow, position: int, size: int) -> bool:
    if size - position < SIZE_FIELD + 5:
        return False
    i = win.ensure(position, SIZE_FIELD + 1)
    (length,) = struct.unpack_from(">i", win.buf, i)
    magic = win.buf[i + 4]
    if magic not in (0, 1) or length < min_size(magic) or position + SIZE_FIELD + length > size:
        return False
    i = win.ensure(position, SIZE_FIELD + length)
    return parse_kafka07(win.buf, i, position, 0).is_valid
