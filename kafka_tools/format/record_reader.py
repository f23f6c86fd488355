"""The records section of a v2 batch, record by record: the pure-Python reader (the reference the C
reader in csrc/ is tested against, with the same checks and error texts) and the switch to C.

The varint record layout (DefaultRecord.java): length varint, attributes int8, timestampDelta varlong,
offsetDelta varint, key (varint length, bytes), value (varint length, bytes), headers (varint count,
each a varint-length key and value).
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_tools.format import accel
from kafka_tools.format import messages as T
from kafka_tools.format.byte_stream import ByteStream, StreamEnd, StreamError, VarintTooLong
from kafka_tools.format.plural import plural

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # offsets and timestamps are int64: a sum past them is damage
NO_SEQUENCE = -1


class RecordDecodeError(ValueError):
    """The records of a batch (or a compressed wrapper) cannot be decoded."""

    # the pure-Python walk's records before the damage, for `iter_records` to give them first as the
    # C iterator does (a list of the batch's records is never kept otherwise)
    records_before: list = []  # noqa: RUF012 (never changed: an instance's is set whole)

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


class Record(NamedTuple):
    """One record of any generation, as a consumer would see it."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    sequence: int = NO_SEQUENCE
    size: int = 0  # bytes the record occupies in its batch (v2) or message size (v0/v1)


def decode_records_py(
    data: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
) -> list[Record]:
    """Decode `count` varint records from an uncompressed records section (the pure-Python reference
    of the C `decode_records`): the RecordReader over the section held whole."""
    if not isinstance(data, bytes):
        data = bytes(data)  # indexing bytes is faster than indexing a memoryview
    return RecordReader(
        ByteStream(data), count, base_offset, base_timestamp, log_append_time, base_sequence
    ).records()


_U64 = 0xFFFFFFFFFFFFFFFF


def _varint(r: ByteStream, buf: bytes, i: int) -> tuple[int, int]:
    """A signed varint at buf[i] (the stream's buffer) longer than a byte, or past the buffer: (value,
    index after it); read from the stream when it runs past the buffer (then the stream's buffer may
    be another piece, and the index is in it)."""
    end = len(buf)
    raw = shift = 0
    j = i
    while j < end:
        b = buf[j]
        j += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            raw &= _U64  # Kafka reads varlongs into a Java long: the low 64 bits
            return (raw >> 1) ^ -(raw & 1), j
        if j - i >= 10:
            raise VarintTooLong
        shift += 7
    r.i = i
    value = r.zigzag()
    return value, r.i


_PAD = b"\x80" * 2  # after the buffer in the fast path: see RecordReader._walk


def _piece(r: ByteStream) -> tuple[bytes, int, bytes, int]:
    """The fast path's view of the stream's current piece: (piece, its stream position, the piece
    padded, its length)."""
    return r.buf, r.base, r.buf + _PAD, len(r.buf)


class RecordReader:
    """The one Python walk of a v2 records section, field by field with every check the C reader
    makes and the same error texts: over a section held whole (`records()`: the Records) or over a
    payload decompressed as a stream (`check()`: offsets only; keys and values are stepped over, so
    memory stays at a piece whatever a record's size). Bytes come from a ByteStream; the fast path
    reads its buffer in place and calls it only at a piece's end."""

    __slots__ = ("stream", "count", "base_offset", "base_timestamp", "log_append_time", "base_sequence")

    def __init__(
        self,
        stream: ByteStream,
        count: int,
        base_offset: int,
        base_timestamp: int,
        log_append_time: int | None,
        base_sequence: int,
    ) -> None:
        self.stream = stream
        self.count = count
        self.base_offset = base_offset
        self.base_timestamp = base_timestamp
        self.log_append_time = log_append_time
        self.base_sequence = base_sequence

    def records(self) -> list[Record]:
        """Every record, built."""
        return self._walk(True)[0]

    def check(self) -> tuple[int | None, int | None, int, bool]:
        """(first offset delta, last offset delta, count, whether the deltas increase), nothing kept."""
        _, first, last, increasing = self._walk(False)
        return first, last, self.count, increasing

    def _walk(self, keep: bool) -> tuple[list[Record], int | None, int | None, bool]:
        r = self.stream
        base_offset, base_timestamp = self.base_offset, self.base_timestamp
        log_append_time, base_sequence = self.log_append_time, self.base_sequence
        no_seq = base_sequence == NO_SEQUENCE
        out: list[Record] = []
        append = out.append
        make = Record._make
        first = last = None
        increasing = True
        # The fast path reads `buf`, the stream's buffer with a few 0x80 bytes after it: a varint read
        # there is never a one-byte one, so it goes to _varint, which reads the stream itself.
        raw, i, base = r.buf, r.i, r.base
        buf = raw + _PAD
        end = len(raw)
        k = start = 0
        rec_end = length = None
        try:
            for k in range(self.count):  # noqa: B007 (k names the record in the errors)
                start = base + i
                rec_end = None
                b = buf[i]
                if b < 0x80:
                    length = (b >> 1) ^ -(b & 1)
                    i += 1
                else:
                    length, i = _varint(r, raw, i)
                    if r.buf is not raw:  # the stream moved to another piece
                        raw, base, buf, end = _piece(r)
                if length < 6:
                    raise RecordDecodeError(T.BAD_LENGTH.format(length), start)
                rec_end = base + i + length
                if i < end:
                    i += 1  # record attributes (unused)
                else:
                    r.i = i
                    r.byte()
                    i = r.i
                    if r.buf is not raw:  # the stream moved to another piece
                        raw, base, buf, end = _piece(r)
                b = buf[i]
                if b < 0x80:
                    ts_delta = (b >> 1) ^ -(b & 1)
                    i += 1
                else:
                    ts_delta, i = _varint(r, raw, i)
                    if r.buf is not raw:  # the stream moved to another piece
                        raw, base, buf, end = _piece(r)
                b = buf[i]
                if b < 0x80:
                    off_delta = (b >> 1) ^ -(b & 1)
                    i += 1
                else:
                    off_delta, i = _varint(r, raw, i)
                    if r.buf is not raw:  # the stream moved to another piece
                        raw, base, buf, end = _piece(r)
                b = buf[i]
                if b < 0x80:
                    n = (b >> 1) ^ -(b & 1)
                    i += 1
                else:
                    n, i = _varint(r, raw, i)
                    if r.buf is not raw:  # the stream moved to another piece
                        raw, base, buf, end = _piece(r)
                key = None
                if n >= 0:
                    if i + n <= end:
                        key = buf[i : i + n] if keep else None
                        i += n
                    else:
                        key = _field(r, i, n, keep)
                        i = r.i
                        if r.buf is not raw:  # the stream moved to another piece
                            raw, base, buf, end = _piece(r)
                elif n != -1:
                    raise RecordDecodeError(T.BAD_KEY.format(n), start)
                b = buf[i]
                if b < 0x80:
                    n = (b >> 1) ^ -(b & 1)
                    i += 1
                else:
                    n, i = _varint(r, raw, i)
                    if r.buf is not raw:  # the stream moved to another piece
                        raw, base, buf, end = _piece(r)
                value = None
                if n >= 0:
                    if i + n <= end:
                        value = buf[i : i + n] if keep else None
                        i += n
                    else:
                        value = _field(r, i, n, keep)
                        i = r.i
                        if r.buf is not raw:  # the stream moved to another piece
                            raw, base, buf, end = _piece(r)
                elif n != -1:
                    raise RecordDecodeError(T.BAD_VALUE.format(n), start)
                if buf[i] == 0 and i < end:
                    headers: tuple = ()
                    i += 1
                else:
                    headers = _read_headers(r, i, rec_end, start, keep)
                    i = r.i
                    if r.buf is not raw:  # the stream moved to another piece
                        raw, base, buf, end = _piece(r)
                if base + i != rec_end:
                    raise RecordDecodeError(T.FIELDS_END.format(length), start)
                offset = base_offset + off_delta
                if not INT64_MIN <= offset <= INT64_MAX:
                    raise RecordDecodeError(T.OFFSET_OVERFLOW.format(off_delta), start)
                if log_append_time is None:
                    timestamp = base_timestamp + ts_delta
                    if not INT64_MIN <= timestamp <= INT64_MAX:
                        raise RecordDecodeError(T.TIMESTAMP_OVERFLOW.format(ts_delta), start)
                else:
                    timestamp = log_append_time
                if keep:
                    append(
                        make(
                            (
                                offset,
                                timestamp,
                                key,
                                value,
                                headers,
                                NO_SEQUENCE if no_seq else (base_sequence + off_delta) & 0x7FFFFFFF,
                                rec_end - start,
                            )
                        )
                    )
                elif first is None:
                    first = last = off_delta
                else:
                    if off_delta <= last:
                        increasing = False
                    last = off_delta
        except (StreamEnd, VarintTooLong, RecordDecodeError) as exc:
            if isinstance(exc, StreamError):
                raise
            if r.buf is raw and i > r.i:
                r.i = min(i, end)
            # A record whose length claims more bytes than the section holds is that first, whatever
            # broke while reading it (a stream learns the section's end only now).
            if rec_end is not None and rec_end > r.position() + r.drain():
                exc = RecordDecodeError(T.BAD_LENGTH.format(length), start)
            elif isinstance(exc, StreamEnd):
                exc = RecordDecodeError(T.PAST_END, start)
            elif isinstance(exc, VarintTooLong):
                exc = RecordDecodeError(T.TOO_LONG, start)
            error = RecordDecodeError(T.RECORD_AT.format(k, exc), start)
            error.records_before = out
            raise error from None
        r.i = i
        at = r.position()
        left = r.drain()
        if left:
            error = RecordDecodeError(
                T.STRAY_BYTES.format(plural(left, "stray byte"), plural(self.count, "record")), at
            )
            error.records_before = out
            raise error
        return out, first, last, increasing


def _field(r: ByteStream, i: int, n: int, keep: bool) -> bytes | None:
    """A key or value that runs past the buffer: read across the stream's pieces (kept) or stepped
    over (not kept: memory stays at a piece whatever its size)."""
    r.i = i
    if keep:
        return r.take(n)
    r.skip(n)
    return None


def _read_headers(r: ByteStream, i: int, rec_end: int, start: int, keep: bool) -> tuple:
    """A record's headers (key text, value bytes) from r.buf[i] on, each length checked against the
    record's end; read in place while they lie in the buffer, from the stream past it. Leaves r.i
    after them."""
    buf = r.buf
    end = len(buf)
    count, i = _varint(r, buf, i)
    if r.buf is not buf:
        buf, end = r.buf, len(r.buf)
    if count < 0 or count * 2 > max(rec_end - r.base - i, 0):  # none fit: the end is checked after
        raise RecordDecodeError(T.BAD_HEADER_COUNT.format(count), start)
    headers = []
    for _ in range(count):
        b = buf[i] if i < end else 0x80
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            i += 1
        else:
            n, i = _varint(r, buf, i)
            if r.buf is not buf:
                buf, end = r.buf, len(r.buf)
        if n < 0 or r.base + i + n > rec_end:
            raise RecordDecodeError(T.BAD_HEADER_KEY.format(n), start)
        if i + n <= end:
            hkey = buf[i : i + n] if keep else None
            i += n
        else:
            hkey = _field(r, i, n, keep)
            buf, i = r.buf, r.i
            end = len(buf)
        b = buf[i] if i < end else 0x80
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            i += 1
        else:
            n, i = _varint(r, buf, i)
            if r.buf is not buf:
                buf, end = r.buf, len(r.buf)
        if n < -1 or (n >= 0 and r.base + i + n > rec_end):  # -1: null, the end is checked after
            raise RecordDecodeError(T.BAD_HEADER_VALUE.format(n), start)
        hvalue = None
        if n >= 0:
            if i + n <= end:
                hvalue = buf[i : i + n] if keep else None
                i += n
            else:
                hvalue = _field(r, i, n, keep)
                buf, i = r.buf, r.i
                end = len(buf)
        if keep:
            headers.append((hkey.decode("utf-8", "replace"), hvalue))
    r.i = i
    return tuple(headers)


def decode_records(
    data: bytes | memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
) -> list[Record]:
    """decode_records_py's records, in C when the C paths are on (accel)."""
    fn = accel.fast("decode_records") or decode_records_py
    return fn(data, count, base_offset, base_timestamp, log_append_time, base_sequence)


if accel.C is not None:
    accel.C.configure(Record, RecordDecodeError)  # the types the C reader makes and raises
    accel.C.slot_fields(Record)  # `record.offset` read as a slot: a third of a full decode's time
HAS_SPEEDUPS = accel.BUILT
