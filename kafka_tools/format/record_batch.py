"""Record batches, magic 2 (Kafka 0.11+): the header, its CRC-32C, and the varint records inside.

On-disk layout (DefaultRecordBatch.java), byte offsets from the start of the entry:
baseOffset int64 @0, batchLength int32 @8, partitionLeaderEpoch int32 @12, magic int8 @16,
crc uint32 @17 (CRC-32C of attributes..end), attributes int16 @21, lastOffsetDelta int32 @23,
baseTimestamp int64 @27, maxTimestamp int64 @35, producerId int64 @43, producerEpoch int16 @51,
baseSequence int32 @53, recordsCount int32 @57, records @61.

The records inside a batch are read by format/record_reader.py (the Python reference and its C twin).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

from kafka_tools.format import accel
from kafka_tools.format import messages as T
from kafka_tools.format.checksums import crc32c
from kafka_tools.format.compression import (
    MAX_DECOMPRESSED,
    CodecAndCrc,
    DecompressionError,
    decompress_buffer,
)
from kafka_tools.format.record_reader import NO_SEQUENCE, Record, RecordDecodeError, decode_records
from kafka_tools.format.shared_methods import SharedMethods

BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = BATCH_HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength, not counted in batchLength
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49
CRC_START = 21  # the CRC covers attributes..end

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40


class TimestampType(IntEnum):
    NO_TIMESTAMP = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        """The name Kafka prints before a timestamp (`CreateTime: 1588…`)."""
        return _TIMESTAMP_LABELS[int(self)]  # int(): an enum's .value is slow, and this is once a batch


_TIMESTAMP_LABELS = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


class ControlType(IntEnum):
    """Kafka's ControlRecordType ids (2-4 since KRaft, 5-6 since Kafka 3.8)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(init=False, slots=True, repr=False, eq=False)
class ControlRecord(SharedMethods):
    """The key/value of a record in a control batch (transaction markers and KRaft records)."""

    version: int
    type_id: int
    coordinator_epoch: int | None  # only for ABORT/COMMIT end-transaction markers

    def __init__(self, version: int, type_id: int, coordinator_epoch: int | None) -> None:
        self.version = version
        self.type_id = type_id
        self.coordinator_epoch = coordinator_epoch

    @property
    def type_name(self) -> str:
        try:
            return ControlType(self.type_id).name
        except ValueError:
            return "UNKNOWN"


@dataclass(init=False, slots=True, repr=False, eq=False)
class RecordBatch(CodecAndCrc, SharedMethods):
    """A magic-2 batch read from a segment; `records()` decompresses and decodes its contents."""

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    payload: memoryview | bytes  # the records section (still compressed when the batch is); no copy
    computed_crc: int

    def __init__(
        self,
        position: int,
        base_offset: int,
        batch_length: int,
        partition_leader_epoch: int,
        magic: int,
        crc: int,
        attributes: int,
        last_offset_delta: int,
        base_timestamp: int,
        max_timestamp: int,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        records_count: int,
        payload: memoryview | bytes,
        computed_crc: int,
    ) -> None:
        self.position = position
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.records_count = records_count
        self.payload = payload
        self.computed_crc = computed_crc

    @property
    def size(self) -> int:
        """Bytes the batch occupies in the file, log overhead included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def entry_size(self) -> int:
        """The same as `size`: named as on the other generations' entries."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def next_position(self) -> int:
        return self.position + self.size

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def count(self) -> int:
        return self.records_count

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        return (
            TimestampType.LOG_APPEND_TIME
            if self.attributes & TIMESTAMP_TYPE_MASK
            else TimestampType.CREATE_TIME
        )

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: a compacted batch keeps its tombstones' delete horizon in baseTimestamp."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    def records(self, limit: int | None = None) -> list[Record]:
        """Decompress and decode every record; raises RecordDecodeError with the byte position."""
        return self.decode_payload(self._section(limit))

    def iter_records(self, limit: int | None = None) -> Iterator[Record]:
        """`records()` one at a time, for a loop that lets each record go before the next: with the C
        paths on, each is made when asked for (its memory stays in cache, a list of the batch is never
        built). A decode error comes when the damaged record is reached, after the ones before it (the
        pure-Python reference decodes the batch whole, then gives the same records and error)."""
        fn = accel.fast("iter_records")
        if fn is None:
            return self._iter_records_py(limit)
        attributes = self.attributes  # read once: this runs once a batch, before its records
        data = self._section(limit) if attributes & CODEC_MASK else self.payload
        log_append = self.max_timestamp if attributes & TIMESTAMP_TYPE_MASK else None
        return fn(
            data,
            self.records_count,
            self.base_offset,
            self.base_timestamp,
            log_append,
            self.base_sequence,
            self.payload_error,
        )

    def _iter_records_py(self, limit: int | None) -> Iterator[Record]:
        try:
            records = self.records(limit)
        except RecordDecodeError as exc:
            yield from exc.records_before
            raise
        yield from records

    def _section(self, limit: int | None) -> bytes | bytearray | memoryview:
        """The records section, decompressed when the batch is."""
        data = self.payload
        if self.is_compressed:
            try:
                data = decompress_buffer(self.codec, data, MAX_DECOMPRESSED if limit is None else limit)
            except DecompressionError as exc:
                raise RecordDecodeError(
                    T.UNDECOMPRESSABLE.format(self.codec_label, exc),
                    self.position + RECORD_BATCH_OVERHEAD,
                ) from None
        return data

    def records_section(self) -> bytes | bytearray | memoryview:
        """The records section, decompressed once when the batch is compressed (RecordDecodeError
        when it cannot be): what the C record lines are made from, their reader checking each record
        as `records()` would."""
        return self._section(None)

    def payload_args(self, section: bytes | bytearray | memoryview | None = None) -> tuple:
        """What the C record walkers take of a batch: its records section (`section` when given: a
        compressed batch's, decompressed), count, base offset, base timestamp, LogAppendTime (or
        None) and base sequence."""
        log_append = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None
        return (
            self.payload if section is None else section,
            self.records_count,
            self.base_offset,
            self.base_timestamp,
            log_append,
            self.base_sequence,
        )

    def decode_payload(self, data: bytes | memoryview) -> list[Record]:
        """The records of this batch's (already decompressed) records section."""
        try:
            return decode_records(*self._decode_args(data))
        except RecordDecodeError as exc:
            raise self.payload_error(exc) from None

    def _decode_args(self, data: bytes | bytearray | memoryview) -> tuple:
        log_append = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None
        count, base_sequence = self.records_count, self.base_sequence
        return (data, count, self.base_offset, self.base_timestamp, log_append, base_sequence)

    def payload_error(self, exc: RecordDecodeError) -> RecordDecodeError:
        """A decoder's error in the records section, as this batch's (its file position, and said to be
        inside the payload when the batch is compressed)."""
        where = self.position + RECORD_BATCH_OVERHEAD + (0 if self.is_compressed else exc.position)
        text = T.INSIDE_PAYLOAD.format(exc) if self.is_compressed else str(exc)
        error = RecordDecodeError(text, where)
        error.records_before = exc.records_before
        return error


def parse_batch_header(buf: bytes | memoryview, at: int, position: int) -> RecordBatch:
    """Parse the batch whose entry starts at `buf[at]` (file position `position`).

    The caller has checked that the whole entry (batchLength + 12 bytes) lies inside `buf`.
    """
    (
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    ) = BATCH_HEADER.unpack_from(buf, at)
    end = at + LOG_OVERHEAD + batch_length
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    return RecordBatch(
        position,
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes & 0xFFFF,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
        view[at + RECORD_BATCH_OVERHEAD : end],
        crc32c(view[at + CRC_START : end]),
    )


def records_until_damage(
    entry: CodecAndCrc, first_offset: int | None = None, count: int | None = None
) -> tuple[list[Record], RecordDecodeError | None]:
    """An entry's records at or above `first_offset` (at most `count`), read one at a time as a
    consumer or Kafka's DumpLogSegments with --deep-iteration reads them: the records before a damaged
    one, and that damage (None when there is none before the last record wanted). Reading stops at the
    `count`-th record: damage after it is not looked for."""
    records: list[Record] = []
    try:
        if first_offset is None and count is None:
            records.extend(entry.iter_records())  # kept as they come: a damaged one ends the list
        elif count is None or count > 0:
            for r in entry.iter_records():
                if first_offset is None or r.offset >= first_offset:
                    records.append(r)
                    if len(records) == count:
                        break
    except RecordDecodeError as exc:
        return records, exc
    return records, None


def control_record(record: Record) -> ControlRecord:
    """Decode a control batch's record: key = int16 version + int16 type; markers add a value."""
    key = record.key
    if key is None or len(key) < 4:
        raise RecordDecodeError("control record key is shorter than 4 bytes", 0)
    version, type_id = struct.unpack_from(">hh", key, 0)
    epoch = None
    if (
        type_id in (ControlType.ABORT, ControlType.COMMIT)
        and record.value is not None
        and len(record.value) >= 6
    ):
        _, epoch = struct.unpack_from(">hi", record.value, 0)
    return ControlRecord(version, type_id, epoch)
