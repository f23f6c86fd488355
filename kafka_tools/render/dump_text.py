"""`ktool dump-log` as text: the lines and field names of Kafka's DumpLogSegments.

Message sets v0/v1 and 0.7 files print as Kafka 0.9/0.10 printed them (`offset: … position: … isvalid:
… payloadsize: … magic: … compresscodec: NoCompressionCodec crc: …`); v2 batches as modern Kafka does
(`baseOffset: … lastOffset: … count: …` then `| offset: …` per record).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from kafka_tools.compact_json import dumps, encode_acyclic
from kafka_tools.format.compression import Codec, codec_label
from kafka_tools.format.kafka07 import Kafka07Message
from kafka_tools.format.kinds import FileKind
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.plural import plural
from kafka_tools.format.record_batch import (
    CODEC_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    RecordBatch,
    TimestampType,
)
from kafka_tools.format.record_reader import Record, RecordDecodeError
from kafka_tools.log.reads.dump_events import (
    EntryEvent,
    FileEnd,
    FileStart,
    ItemsEvent,
    MessageRunEvent,
    ProblemEvent,
)
from kafka_tools.log.reads.record_writer import RecordWriter
from kafka_tools.render.lines import LineWriter, show
from kafka_tools.render.values import decode_text, printable_name

Fields = list[tuple[str, object]]


class DumpTextRenderer:
    def __init__(
        self,
        out: LineWriter,
        err: LineWriter,
        print_data: bool,
        skip_metadata: bool,
        key_decoder: str = "utf8",
        value_decoder: str = "utf8",
        writer: RecordWriter | None = None,
    ) -> None:
        self.out = out
        self.err = err
        self.writer = writer or RecordWriter()  # all the decoding: a renderer only shows
        self.print_data = print_data
        self.skip_metadata = skip_metadata
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        self._write_valid = ValidUtf8()

    def render(self, event) -> None:
        if isinstance(event, EntryEvent):
            self._entry(event)
        elif isinstance(event, MessageRunEvent):
            self._run(event)
        elif isinstance(event, ProblemEvent):
            p = event.problem
            at = f" (offset {p.offset})" if p.offset is not None else ""
            self.err.problem(f"{event.path}: position {p.position}{at}: {p.kind.value}: {p.message}")
        elif isinstance(event, FileStart):
            self.out.plain(f"Dumping {event.path}")
            if event.kind in (FileKind.LOG, FileKind.KAFKA07):
                self.out.plain(
                    f"Starting offset: {event.base_offset if event.base_offset is not None else 0}"
                )
            elif event.kind == FileKind.METADATA_SNAPSHOT:
                # KRaft names a snapshot `<end offset>-<epoch>.checkpoint` (bootstrap.checkpoint: neither).
                stem = event.path.rsplit("/", 1)[-1].split(".", 1)[0]
                end, _, epoch = stem.partition("-")
                if end.isdigit() and epoch.isdigit():
                    self.out.plain(f"Snapshot end offset: {int(end)}, epoch: {int(epoch)}")
        elif isinstance(event, ItemsEvent):
            self._items(event)
        elif isinstance(event, FileEnd):
            name = event.path.rsplit("/", 1)[-1]
            if event.trailing_bytes:
                self.out.plain(f"Found {plural(event.trailing_bytes, 'invalid byte')} at the end of {name}")
            for note in event.notes():
                self.err.problem(note)

    # -- log entries -------------------------------------------------------------------------------

    def _entry(self, event: EntryEvent) -> None:
        entry = event.entry
        if isinstance(entry, RecordBatch):
            self._batch(event, entry)
        elif event.inner_set is not None:
            if not self._fast_messages(event.inner_set, entry.position):
                for message in self.writer.inner_messages(entry):
                    self._message(message, entry.position, None)
        elif event.inner is not None:
            for message, decoded in event.with_decoded(event.inner):
                self._message(message, entry.position, decoded)
        else:
            self._message(entry, entry.position, event.decoded[0] if event.decoded else None)

    def _run(self, event: MessageRunEvent) -> None:
        """Plain v0/v1 messages: formatted in C in one go when the line is Kafka 0.9's own (no colour,
        metadata shown, data as UTF-8 text), else message by message as below."""
        if not self._fast_messages((event.data, event.count, 0, None), -1, event.position):
            for m in self.writer.messages(event.data, event.position):
                self._message(m, m.position, None)

    def _fast_messages(self, inner_set, wrapper_position: int, position: int = 0) -> bool:
        """Print a message set's lines in C (True), when the line is Kafka 0.9's own and the set holds
        plain messages only; False leaves it to `_message`."""
        if (
            not self.writer.has_message_lines
            or self.out.colour
            or self.skip_metadata
            or (self.print_data and not self.key_decoder == self.value_decoder == "utf8")
        ):
            return False
        text = self.writer.message_lines(inner_set, position, False, self.print_data, "", wrapper_position)
        if text is None:  # a compressed message inside a wrapper
            return False
        self._write_valid(self.out.stream, text)
        return True

    def _message(self, m: LegacyMessage | Kafka07Message, position: int, decoded: dict | None) -> None:
        if self.skip_metadata:
            # Only the data, as for v2 records: nothing at all for a message whose data is not printed.
            key, value = (m.key, m.value) if isinstance(m, LegacyMessage) else (None, m.payload)
            shown = self.print_data and not m.is_compressed and (value is not None or decoded is not None)
            data = self._data(key, value, decoded) if shown else []
            if data:
                self.out.fields(data)
            return
        fields: Fields = [("offset", m.offset), ("position", position)]
        if isinstance(m, LegacyMessage):
            if m.magic >= 1:
                fields.append((m.timestamp_type.label, m.timestamp))
            fields += [
                ("isvalid", m.is_valid),
                ("payloadsize", m.payload_size),
                ("magic", m.magic),
                ("compresscodec", _legacy_codec(m.codec)),
                ("crc", m.crc),
            ]
            if m.key is not None:
                fields.append(("keysize", m.key_size))
            key, value = m.key, m.value
        else:
            fields += [
                ("isvalid", m.is_valid),
                ("payloadsize", len(m.payload)),
                ("magic", m.magic),
                ("compresscodec", _legacy_codec(m.codec)),
                ("crc", m.crc),
            ]
            key, value = None, m.payload
        # Kafka 0.9 printed neither key nor payload of a message whose value is null (a tombstone).
        if self.print_data and (value is not None or decoded is not None):
            fields += self._data(key, value, decoded)
        self.out.fields(fields)

    def _batch(self, event: EntryEvent, b: RecordBatch) -> None:
        if event.lines is not None:  # its line and its records', made from the bytes (batch_lines)
            self._write_valid(self.out.stream, event.lines)
            return
        self.out.fields(_batch_fields(b))
        records = event.records or ()
        if (
            self.writer.has_record_lines
            and records
            and not (self.out.colour or self.skip_metadata or b.is_control or event.decoded is not None)
            and (not self.print_data or self.key_decoder == self.value_decoder == "utf8")
        ):
            # The bulk case: Kafka's record lines, made in C, one write a batch.
            text = self.writer.record_lines(records, b.timestamp_type.label, self.print_data)
            self._write_valid(self.out.stream, text)
        elif (
            event.decoded is not None
            and not (self.out.colour or self.skip_metadata)
            and all(d is not None and "metadata" in d for d in event.decoded)
        ):
            self.out.stream.write(
                _metadata_lines(b, records, event.decoded, self.writer)
            )  # KRaft: one write a batch
        elif self.out.colour or self.print_data or self.skip_metadata or b.is_control or event.decoded:
            for record, decoded in event.with_decoded(records):
                self._record(b, record, decoded)
        elif records:
            # The common bulk case (plain text, metadata only): one formatted write a batch.
            label = b.timestamp_type.label
            self.out.stream.write(
                "".join(
                    f"| offset: {r.offset} {label}: {r.timestamp} "
                    f"keySize: {-1 if r.key is None else len(r.key)} "
                    f"valueSize: {-1 if r.value is None else len(r.value)} sequence: {r.sequence} "
                    f"headerKeys: [{','.join(printable_name(k) for k, _ in r.headers)}]\n"
                    for r in records
                )
            )

    def batch_lines(self, path: str, b: RecordBatch, section: bytes | None) -> bytes:
        """A v2 batch's line and its records' lines, made in C from its bytes (`section`: its records
        section decompressed): one piece of output. DumpOptions.record_lines when
        `record_lines_from_bytes()`."""
        head = batch_line(b)
        return self.writer.payload_lines(b, b.timestamp_type.label, self.print_data, None, section, head)

    def record_lines_from_bytes(self) -> bool:
        """Whether v2 record lines are Kafka's own and made in C (DumpOptions.record_lines may be on)."""
        return (
            self.writer.has_payload_lines
            and not (self.out.colour or self.skip_metadata)
            and (not self.print_data or self.key_decoder == self.value_decoder == "utf8")
        )

    def _record(self, b: RecordBatch, r: Record, decoded: dict | None) -> None:
        fields: Fields = []
        if not self.skip_metadata:
            fields += [
                ("offset", r.offset),
                (b.timestamp_type.label, r.timestamp),
                ("keySize", -1 if r.key is None else len(r.key)),
                ("valueSize", -1 if r.value is None else len(r.value)),
                ("sequence", r.sequence),
                ("headerKeys", "[" + ",".join(printable_name(k) for k, _ in r.headers) + "]"),
            ]
            if b.is_control:
                fields += _control_fields(r, self.writer)
        if decoded is not None and "metadata" in decoded:  # a KRaft record, as Kafka's decoder prints it
            fields.append(("payload", _compact(decoded["metadata"])))
        elif self.print_data and not b.is_control:
            if r.headers:
                shown = (
                    f"{printable_name(k)}:{decode_text(v, self.value_decoder) if v is not None else 'null'}"
                    for k, v in r.headers
                )
                fields.append(("headers", "[" + ",".join(shown) + "]"))
            fields += self._data(r.key, r.value, decoded)
        self.out.fields(fields, prefix="| ")

    def _data(self, key: bytes | None, value: bytes | None, decoded: dict | None) -> Fields:
        """The data fields: a record of an internal topic as the dump service decoded it, else the key
        and value as the decoders given show them."""
        if decoded is not None:
            return [("key", _compact(decoded["key"])), ("payload", _compact(decoded["payload"]))]
        fields: Fields = []
        k = decode_text(key, self.key_decoder)
        if k is not None:
            fields.append(("key", k))
        v = decode_text(value, self.value_decoder)
        if v is not None:
            fields.append(("payload", v))
        return fields

    # -- other files -------------------------------------------------------------------------------

    def _items(self, event: ItemsEvent) -> None:
        fields_of = _item_fields()
        for item in event.items:
            self.out.fields(fields_of(item))
        if event.kind == FileKind.PRODUCER_SNAPSHOT and event.header:
            h = event.header
            self.out.fields([("version", h["version"]), ("crc", h["crc"]), ("entries", len(event.items))])
        if event.kind == FileKind.REMOTE_LOG_SNAPSHOT and event.header:
            self.out.fields(list(event.header.items()))


def _batch_fields(b: RecordBatch) -> Fields:
    """A v2 batch's line, as DumpLogSegments prints it."""
    horizon = b.delete_horizon_ms
    return [
        ("baseOffset", b.base_offset),
        ("lastOffset", b.last_offset),
        ("count", b.records_count),
        ("baseSequence", b.base_sequence),
        ("lastSequence", b.last_sequence),
        ("producerId", b.producer_id),
        ("producerEpoch", b.producer_epoch),
        ("partitionLeaderEpoch", b.partition_leader_epoch),
        ("isTransactional", b.is_transactional),
        ("isControl", b.is_control),
        ("deleteHorizonMs", "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"),
        ("position", b.position),
        (b.timestamp_type.label, b.max_timestamp),
        ("size", b.size),
        ("magic", b.magic),
        ("compresscodec", b.codec_label),
        ("crc", b.crc),
        ("isvalid", b.is_valid),
    ]


def batch_line(b: RecordBatch) -> str:
    """`line_of(_batch_fields(b))` in one f-string: plain text is made once a batch, and broker-written
    batches are small (a median of 16 records on a 4.4.0 broker's log), so the list of pairs, the
    properties and `show` per field were a quarter of dump-log's time (bench/HISTORY.md, issue 51)."""
    attributes = b.attributes
    horizon = (
        f"OptionalLong[{b.base_timestamp}]" if attributes & DELETE_HORIZON_MASK else "OptionalLong.empty"
    )
    last = b.base_offset + b.last_offset_delta
    seq = b.base_sequence
    last_seq = seq if seq == NO_SEQUENCE else (seq + b.last_offset_delta) & 0x7FFFFFFF
    return (
        f"baseOffset: {b.base_offset} lastOffset: {last} count: {b.records_count} baseSequence: {seq} "
        f"lastSequence: {last_seq} producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
        f"partitionLeaderEpoch: {b.partition_leader_epoch} "
        f"isTransactional: {'true' if attributes & TRANSACTIONAL_MASK else 'false'} "
        f"isControl: {'true' if attributes & CONTROL_MASK else 'false'} deleteHorizonMs: {horizon} "
        f"position: {b.position} "
        f"{TIMESTAMP_LABELS[bool(attributes & TIMESTAMP_TYPE_MASK)]}: {b.max_timestamp} "
        f"size: {b.batch_length + LOG_OVERHEAD} magic: {b.magic} "
        f"compresscodec: {codec_label(attributes & CODEC_MASK)} "
        f"crc: {b.crc} isvalid: {'true' if b.crc == b.computed_crc else 'false'}\n"
    )


# A v2 batch's timestamp label by its attribute bit (TimestampType's labels).
TIMESTAMP_LABELS = (TimestampType.CREATE_TIME.label, TimestampType.LOG_APPEND_TIME.label)


def utf8_writer(stream) -> Callable[[bytes], object]:
    """How valid UTF-8 bytes (the C formatters' output) go to `stream`: straight to the binary buffer
    beneath a UTF-8 text stream, saving a decode and an encode of every byte. Found once a stream
    (ValidUtf8), not once a batch (three lookups, one through cli/pipe.py's `__getattr__`)."""
    buffer = getattr(stream, "buffer", None)
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    if buffer is None or encoding != "utf8":
        return lambda data: stream.write(bytes(data).decode("utf-8", "replace"))
    guarded = getattr(stream, "write_bytes", None)  # cli/pipe.py's stdout: a closed pipe is no error
    if guarded is not None:
        return guarded

    def write(data: bytes) -> None:
        stream.flush()  # the text written before it first
        buffer.write(data)

    return write


class ValidUtf8:
    """Valid UTF-8 bytes written to a stream, its `utf8_writer` kept while the stream stays the same."""

    __slots__ = ("stream", "write")

    def __init__(self) -> None:
        self.stream: object = None
        self.write: Callable[[bytes], object] = print

    def __call__(self, stream, data: bytes) -> None:
        if stream is not self.stream:
            self.stream, self.write = stream, utf8_writer(stream)
        self.write(data)


def _legacy_codec(codec: int) -> str:
    try:
        return Codec(codec).legacy_label
    except ValueError:
        return f"UnknownCodec({codec})"


def _control_fields(r: Record, writer: RecordWriter) -> Fields:
    try:
        c = writer.control(r)
    except RecordDecodeError:
        return [("controlType", "UNPARSEABLE")]
    if c.coordinator_epoch is not None:
        return [("endTxnMarker", c.type_name), ("coordinatorEpoch", c.coordinator_epoch)]
    return [("controlType", f"{c.type_name}({c.type_id})")]


def _metadata_lines(b: RecordBatch, records, decoded: list[dict], writer: RecordWriter) -> str:
    """The lines `_record` prints (plain text) for a batch of decoded KRaft records, byte for byte,
    without a field list per record."""
    label = b.timestamp_type.label
    control = b.is_control
    lines = []
    append = lines.append
    for r, d in zip(records, decoded, strict=True):
        key, value = r.key, r.value
        line = (
            f"| offset: {r.offset} {label}: {r.timestamp} keySize: {-1 if key is None else len(key)} "
            f"valueSize: {-1 if value is None else len(value)} sequence: {r.sequence} "
            f"headerKeys: [{','.join(k for k, _ in r.headers)}]"
        )
        if control:
            line += "".join(f" {k}: {show(v)}" for k, v in _control_fields(r, writer))
        append(f"{line} payload: {encode_acyclic(d['metadata'])}\n")
    return "".join(lines)


def _compact(value: object) -> str:
    return dumps(value)


def _optional_long(value: int) -> str:
    """A producer snapshot's -1 (no open transaction) or offset, as Java prints an OptionalLong."""
    return "OptionalLong.empty" if value < 0 else f"OptionalLong[{value}]"


@functools.cache
def _item_fields() -> Callable[[object], Fields]:
    """The fields of one item of an index, snapshot, checkpoint or properties file. (Their modules
    are imported with the first such file: the dump of a segment needs none of them.)"""
    from kafka_tools.format import index, snapshot
    from kafka_tools.format.checkpoints import EpochEntry, OffsetCheckpointEntry
    from kafka_tools.format.remote_log_snapshot import RemoteSegmentSnapshot

    def fields(item) -> Fields:
        if isinstance(item, RemoteSegmentSnapshot):
            epochs = ",".join(f"{e}={o}" for e, o in item.segment_leader_epochs.items())
            return [
                ("position", item.position),
                ("segmentId", item.segment_id),
                ("startOffset", item.start_offset),
                ("endOffset", item.end_offset),
                ("state", item.state),
                ("brokerId", item.broker_id),
                ("segmentSizeInBytes", item.segment_size_in_bytes),
                ("segmentLeaderEpochs", "{" + epochs + "}"),
                ("maxTimestampMs", item.max_timestamp_ms),
                ("eventTimestampMs", item.event_timestamp_ms),
                ("txnIndexEmpty", item.txn_index_empty),
            ]
        if isinstance(item, index.OffsetIndexEntry):
            return [("offset", item.offset), ("position", item.position)]
        if isinstance(item, index.TimeIndexEntry):
            return [("timestamp", item.timestamp), ("offset", item.offset)]
        if isinstance(item, index.AbortedTxn):
            return [
                ("version", item.version),
                ("producerId", item.producer_id),
                ("firstOffset", item.first_offset),
                ("lastOffset", item.last_offset),
                ("lastStableOffset", item.last_stable_offset),
            ]
        if isinstance(item, snapshot.ProducerEntry):
            return [
                ("producerId", item.producer_id),
                ("producerEpoch", item.producer_epoch),
                ("coordinatorEpoch", item.coordinator_epoch),
                # Java's OptionalLong, and the entry's timestamp twice, as DumpLogSegments prints them
                ("currentTxnFirstOffset", _optional_long(item.current_txn_first_offset)),
                ("lastTimestamp", item.timestamp),
                ("firstSequence", item.first_sequence),
                ("lastSequence", item.last_sequence),
                ("lastOffset", item.last_offset),
                ("offsetDelta", item.offset_delta),
                ("timestamp", item.timestamp),
            ]
        if isinstance(item, OffsetCheckpointEntry):
            return [("topic", item.topic), ("partition", item.partition), ("offset", item.offset)]
        if isinstance(item, EpochEntry):
            return [("epoch", item.epoch), ("startOffset", item.start_offset)]
        key, value = item
        if isinstance(value, (list, dict)):  # quorum-state's voters
            value = dumps(value)
        return [(key, value)]

    return fields
