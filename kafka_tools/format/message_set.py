"""Message sets, magic 0 (Kafka 0.8-0.9) and magic 1 (0.10): messages with CRC32, and the compressed
wrappers that carry a whole inner message set in their value.

Entry layout (LegacyRecord.java): offset int64 @0, size int32 @8, crc uint32 @12 (CRC32 of magic..end),
magic int8 @16, attributes int8 @17, timestamp int64 @18 (magic 1 only), key (int32 length + bytes),
value (int32 length + bytes).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_tools.format import accel
from kafka_tools.format import messages as T
from kafka_tools.format.byte_stream import ByteStream, StreamEnd, StreamError
from kafka_tools.format.checksums import crc32
from kafka_tools.format.compression import CodecAndCrc, DecompressionError, decompress
from kafka_tools.format.plural import plural
from kafka_tools.format.record_batch import LOG_OVERHEAD, TimestampType
from kafka_tools.format.record_reader import INT64_MAX, NO_SEQUENCE, Record, RecordDecodeError
from kafka_tools.format.shared_methods import SharedMethods

ENTRY_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
MESSAGE_OVERHEAD_V0 = 14  # crc + magic + attributes + key length + value length
MESSAGE_OVERHEAD_V1 = 22  # ... + timestamp
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
NO_TIMESTAMP = -1
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


def min_message_size(magic: int) -> int:
    return MESSAGE_OVERHEAD_V0 if magic == 0 else MESSAGE_OVERHEAD_V1


@dataclass(init=False, slots=True, repr=False, eq=False)
class LegacyMessage(CodecAndCrc, SharedMethods):
    """One message (magic 0 or 1) as stored: a plain message, or a compressed wrapper."""

    position: int  # file position of the entry (inner messages: position inside the decompressed set)
    offset: int  # as stored: a wrapper's offset is its last inner message's; v1 inner ones are relative
    size: int  # the size field: bytes from crc to the end of the value
    crc: int
    magic: int
    attributes: int
    timestamp: int  # -1 for magic 0
    key: bytes | None
    value: bytes | None
    computed_crc: int
    _summary: tuple[int, int, int] | None = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        position: int,
        offset: int,
        size: int,
        crc: int,
        magic: int,
        attributes: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        computed_crc: int,
        _summary: tuple[int, int, int] | None = None,
    ) -> None:
        self.position = position
        self.offset = offset
        self.size = size
        self.crc = crc
        self.magic = magic
        self.attributes = attributes
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.computed_crc = computed_crc
        self._summary = _summary

    @property
    def entry_size(self) -> int:
        return self.size + LOG_OVERHEAD

    @property
    def next_position(self) -> int:
        return self.position + self.size + LOG_OVERHEAD

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP
        return (
            TimestampType.LOG_APPEND_TIME
            if self.attributes & TIMESTAMP_TYPE_MASK
            else TimestampType.CREATE_TIME
        )

    @property
    def payload_size(self) -> int:
        return -1 if self.value is None else len(self.value)

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    def inner_messages(self) -> list[LegacyMessage]:
        """The messages inside a compressed wrapper, offsets made absolute as a consumer sees them.

        v0 inner offsets are stored absolute. v1 inner offsets are relative, and the wrapper carries the
        absolute offset of the last one. With LogAppendTime the wrapper's timestamp applies to all.
        """
        if not self.is_compressed:
            return [self]
        where = self.wrapper_payload_position
        if self.value is None:
            raise RecordDecodeError(T.WRAPPER_NULL, where)
        try:
            data = decompress(self.codec, self.value)
        except DecompressionError as exc:
            raise RecordDecodeError(T.UNDECOMPRESSABLE.format(self.codec_label, exc), where) from None
        return self.inner_from(data)

    @property
    def wrapper_payload_position(self) -> int:
        """File position of a wrapper's compressed value (where its inner-set problems are reported)."""
        return self.position + LOG_OVERHEAD + self.size - (0 if self.value is None else len(self.value))

    def inner_from(self, data: bytes) -> list[LegacyMessage]:
        """The inner messages of this wrapper's (already decompressed) value."""
        where = self.wrapper_payload_position
        inner = MessageSetReader(ByteStream(data), where).messages()
        if self.magic >= 1:
            shift = v1_shift(self.offset, inner[-1].offset)
            log_append = self.timestamp_type == TimestampType.LOG_APPEND_TIME
            for i, m in enumerate(inner):
                if m.offset + shift > INT64_MAX:
                    raise RecordDecodeError(T.INNER_V1_PAST_INT64.format(i, m.offset, shift), where)
                m.offset += shift
                if log_append:
                    m.timestamp = self.timestamp
        return inner

    def inner_summary(self) -> tuple[int, int, int]:
        """(count, first offset, last offset) of the messages a consumer would receive, offsets
        absolute; the same answer (or RecordDecodeError) as `inner_messages`, decompressing once and
        walking the inner set in C when it is built."""
        if self._summary is not None:
            return self._summary
        if not self.is_compressed:
            summary = (1, self.offset, self.offset)
        else:
            found = None
            if accel.fast("scan_inner") is not None and self.value is not None:
                try:
                    found = self.summary_of(decompress(self.codec, self.value))
                except DecompressionError:
                    found = None  # inner_messages says why
            if found is None:
                inner = self.inner_messages()
                summary = (len(inner), inner[0].offset, inner[-1].offset)
            else:
                summary = found
        self._summary = summary
        return summary

    def summary_of(self, data: bytes) -> tuple[int, int, int] | None:
        """(count, first offset, last offset) of this wrapper's decompressed inner set `data`, offsets
        absolute, walked in C; None when the C walk is not built or finds the set irregular."""
        scan_inner = accel.fast("scan_inner")
        found = scan_inner(data) if scan_inner is not None else None
        if found is None:
            return None
        count, first, last, high = found
        shift = v1_shift(self.offset, last) if self.magic >= 1 else 0
        if high + shift > INT64_MAX:
            return None  # inner_messages says which
        return count, first + shift, last + shift

    def plain_inner_set(self) -> tuple[bytes, int, int, int | None] | None:
        """A wrapper's decompressed inner set, with what shows it as `inner_messages` would —
        (bytes, count, offset shift, LogAppendTime or None) — when the C walk finds it regular;
        None otherwise (then `inner_messages` is the way, and says what is wrong)."""
        scan_inner = accel.fast("scan_inner")
        if scan_inner is None or not self.is_compressed or self.value is None:
            return None
        try:
            data = decompress(self.codec, self.value)
        except DecompressionError:
            return None
        found = scan_inner(data)
        if found is None:
            return None
        count, first, last, high = found
        shift = v1_shift(self.offset, last) if self.magic >= 1 else 0
        if high + shift > INT64_MAX:
            return None  # inner_messages says which
        self._summary = (count, first + shift, last + shift)
        log_append = self.magic >= 1 and self.timestamp_type == TimestampType.LOG_APPEND_TIME
        return data, count, shift, self.timestamp if log_append else None

    @property
    def base_offset(self) -> int:
        """First offset the entry holds (decompressing a wrapper to find it, as Kafka does)."""
        if not self.is_compressed:
            return self.offset
        return self.inner_messages()[0].offset

    def records(self, limit: int | None = None) -> list[Record]:
        """The messages a consumer would receive from this entry."""
        return [
            Record(m.offset, m.timestamp, m.key, m.value, (), NO_SEQUENCE, m.size + LOG_OVERHEAD)
            for m in self.inner_messages()
        ]


def check_head(buf: bytes | memoryview, at: int, position: int) -> tuple[int, int, int, int, int]:
    """The entry head at `buf[at]` (18 bytes: offset, size, crc, magic, attributes), its magic and size
    checked: what parse_message checks first, and a streamed walk before it reads the message."""
    offset, size, crc, magic, attributes = ENTRY_HEAD.unpack_from(buf, at)
    if magic not in (0, 1):
        raise RecordDecodeError(T.NOT_MESSAGE_MAGIC.format(magic), position + 16)
    if size < min_message_size(magic):
        raise RecordDecodeError(T.MESSAGE_BELOW_MINIMUM.format(size, min_message_size(magic)), position + 8)
    return offset, size, crc, magic, attributes


def parse_message(buf: bytes | memoryview, at: int, position: int, end: int) -> LegacyMessage:
    """Parse the magic 0/1 entry at `buf[at]`; its size field must already be known to fit before `end`."""
    offset, size, crc, magic, attributes = check_head(buf, at, position)
    stop = at + LOG_OVERHEAD + size
    if stop > end:
        raise RecordDecodeError(T.MESSAGE_PAST_SET.format(size), position + 8)
    pos = at + 18
    timestamp = NO_TIMESTAMP
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(buf, pos)
        pos += 8
    key, pos = _sized_bytes(buf, pos, stop, "key", position, at)
    if pos + 4 > stop:
        raise RecordDecodeError(T.VALUE_LENGTH_CUT, position + pos - at)
    value, pos = _sized_bytes(buf, pos, stop, "value", position, at)
    if pos != stop:
        raise RecordDecodeError(T.AFTER_VALUE.format(plural(stop - pos, "byte")), position + pos - at)
    computed = crc32(memoryview(buf)[at + 16 : stop])
    return LegacyMessage(
        position, offset, size, crc, magic, attributes & 0xFF, timestamp, key, value, computed
    )


def iter_messages(data: bytes, position: int) -> Iterator[LegacyMessage]:
    """The messages of a message set known to be well framed (a MessageRun's bytes), one by one;
    `position` is the file position of data[0]."""
    at = 0
    while at < len(data):
        message = parse_message(data, at, position + at, len(data))
        yield message
        at += message.size + LOG_OVERHEAD


def _sized_bytes(
    buf: bytes | memoryview, pos: int, stop: int, what: str, position: int, at: int
) -> tuple[bytes | None, int]:
    (n,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if n == -1:
        return None, pos
    if n < 0 or pos + n > stop:
        raise RecordDecodeError(T.FIELD_PAST_MESSAGE.format(what, n), position + pos - 4 - at)
    return bytes(buf[pos : pos + n]), pos + n


def v1_shift(wrapper_offset: int, last_relative: int) -> int:
    """What makes a v1 wrapper's relative inner offsets absolute: the wrapper holds the last one's
    absolute offset. As Kafka's deep iterator does, a base that comes out negative (a damaged wrapper
    offset) is not applied: the inner offsets are then taken as stored."""
    base = wrapper_offset - last_relative
    return base if base >= 0 else 0


BIG_MESSAGE = 1 << 20  # a streamed walk steps over larger inner messages field by field, never holding one


class MessageSetReader:
    """The one Python walk of a wrapper's inner message set (magic 0/1), over a set held whole
    (`messages()`) or decompressed as a stream (`check()`: offsets only; a message over BIG_MESSAGE is
    stepped over without being held), with the same checks and texts either way. `where` is the file
    position of the wrapper's compressed value, where every inner problem is reported."""

    __slots__ = ("stream", "where")

    def __init__(self, stream: ByteStream, where: int) -> None:
        self.stream = stream
        self.where = where

    def messages(self) -> list[LegacyMessage]:
        out: list[LegacyMessage] = []
        self._walk(out.append, None)
        return out

    def check(self) -> tuple[int, int, int, bool, tuple[array, array]]:
        """(first, last, count, increasing, highs) of the offsets as stored — highs the (index, offset)
        of each offset above all before it, to find the first one a v1 shift moves past int64."""
        state = [None, None, 0, True, (array("q"), array("q"))]

        def seen(offset: int) -> None:
            first, last, count, _, highs = state
            if first is None:
                state[0] = offset
            elif offset <= last:
                state[3] = False
            if not highs[1] or offset > highs[1][-1]:
                highs[0].append(count)
                highs[1].append(offset)
            state[1] = offset
            state[2] = count + 1

        self._walk(None, seen)
        return state[0], state[1], state[2], state[3], state[4]

    def _walk(self, keep, seen) -> None:
        r, where = self.stream, self.where
        count = 0
        while True:
            start = r.position()
            if not r.has(LOG_OVERHEAD + MESSAGE_OVERHEAD_V0):  # too short for any message
                left = r.drain()
                if left:
                    stray = T.INNER_STRAY.format(plural(left, "stray byte"), plural(count, "inner message"))
                    raise RecordDecodeError(stray, where)
                break
            buf, i = r.buf, r.i
            offset, size = _HEAD.unpack_from(buf, i)
            try:
                if i + LOG_OVERHEAD + size <= len(buf):  # held whole: parsed in place
                    message = parse_message(buf, i, start, len(buf))
                    r.i = i + LOG_OVERHEAD + size
                else:
                    check_head(buf, i, start)  # magic, then size: before reading on
                    if keep is not None or size <= BIG_MESSAGE:
                        head = r.take(LOG_OVERHEAD)
                        message = parse_message(head + r.take(size), 0, start, LOG_OVERHEAD + size)
                    else:
                        r.take(LOG_OVERHEAD)
                        _step_over_message(r, size, start)
                        message = None
            except StreamEnd:
                text = T.INNER_AT.format(count, T.MESSAGE_PAST_SET.format(size))
                raise RecordDecodeError(T.INSIDE_PAYLOAD.format(text), where) from None
            except RecordDecodeError as exc:
                if isinstance(exc, StreamError):
                    raise
                text = T.INNER_AT.format(count, exc)
                raise RecordDecodeError(T.INSIDE_PAYLOAD.format(text), where) from None
            if keep is not None:
                keep(message)
            else:
                seen(offset)
            count += 1
        if not count:
            raise RecordDecodeError(T.WRAPPER_EMPTY, where)


def _step_over_message(r: ByteStream, size: int, start: int) -> None:
    """An inner message too large to hold: its fields framed as parse_message frames them."""
    head = r.take(6)  # crc, magic, attributes
    magic = head[4]
    end = r.position() - 6 + size
    if magic == 1:
        r.take(8)
    for what in ("key", "value"):
        (n,) = _INT32.unpack(r.take(4))
        if n == -1:
            continue
        if n < 0 or r.position() + n > end:
            raise RecordDecodeError(T.FIELD_PAST_MESSAGE.format(what, n), r.position() - 4)
        r.skip(n)
    if r.position() != end:
        raise RecordDecodeError(T.AFTER_VALUE.format(plural(end - r.position(), "byte")), r.position())


_HEAD = struct.Struct(">qi")
