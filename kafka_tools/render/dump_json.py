"""`ktool dump-log --json`: one JSON object per line, with stable field names (docs/dump-log.md, "--json").

Every object has `type` (file, batch, message, record, problem, index-entry, …) and `file`.
"""

from __future__ import annotations

import functools
from dataclasses import asdict
from typing import TextIO

from kafka_tools.compact_json import dumps, encode_acyclic
from kafka_tools.format.compression import codec_label
from kafka_tools.format.kafka07 import Kafka07Message
from kafka_tools.format.kinds import FileKind
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.record_batch import (
    CODEC_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    RecordBatch,
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
from kafka_tools.render.dump_text import TIMESTAMP_LABELS, ValidUtf8
from kafka_tools.render.json_kinds import note_object
from kafka_tools.render.values import decode_json


@functools.cache
def _item_types() -> dict[type, str]:
    """The `type` of each item of an index, snapshot or checkpoint file. (Their modules are imported
    with the first such file: the dump of a segment needs none of them.)"""
    from kafka_tools.format import index, snapshot
    from kafka_tools.format.checkpoints import EpochEntry, OffsetCheckpointEntry
    from kafka_tools.format.remote_log_snapshot import RemoteSegmentSnapshot

    return {
        RemoteSegmentSnapshot: "remote-segment",
        index.OffsetIndexEntry: "index-entry",
        index.TimeIndexEntry: "time-index-entry",
        index.AbortedTxn: "aborted-txn",
        snapshot.ProducerEntry: "producer-state",
        OffsetCheckpointEntry: "checkpoint-entry",
        EpochEntry: "leader-epoch-entry",
    }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class DumpTally:
    """What the files of one `dump-log` add up to: the final summary's counts and the exit code.
    (A plain class: a dataclass's generated __init__ is compiled at every start.)"""

    __slots__ = (
        "files", "unreadable", "entries", "records", "records_counted", "problems", "unknown", "exit_code",
    )  # fmt: skip

    def __init__(self) -> None:
        self.files = self.unreadable = self.entries = self.records = self.problems = self.exit_code = 0
        self.unknown = 0
        self.records_counted = True

    def add(self, end: FileEnd) -> None:
        self.entries += end.entries
        self.records += end.records
        self.records_counted &= end.records_counted
        self.problems += end.problems
        self.unknown += end.unknown_records

    def file_done(self, exit_code: int, failed: bool) -> None:
        self.files += 1
        self.unreadable += failed
        self.exit_code = max(self.exit_code, exit_code)

    def merge(self, other: DumpTally) -> None:
        for name in ("files", "unreadable", "entries", "records", "problems", "unknown"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.records_counted &= other.records_counted
        self.exit_code = max(self.exit_code, other.exit_code)


class DumpJsonRenderer:
    def __init__(
        self,
        out: TextIO,
        print_data: bool,
        key_decoder: str = "utf8",
        value_decoder: str = "utf8",
        skip_metadata: bool = False,
        writer: RecordWriter | None = None,
    ) -> None:
        self.out = out
        self.writer = writer or RecordWriter()  # all the decoding: a renderer only shows
        self.print_data = print_data
        self.skip_metadata = skip_metadata  # records and messages carry only their data
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        self._write_valid = ValidUtf8()
        self.tally = DumpTally()  # what the files rendered add up to (finish() prints it)
        self._name_of: str | None = None
        self._name = ""

    def emit(self, obj: dict) -> None:
        self.out.write(encode_acyclic(obj) + "\n")  # dumps' text, without its set-up at each call

    def error(self, path: str, message: str, exit_code: int) -> None:
        """A file that could not be dumped (missing, unreadable, not a Kafka file): in the stream too,
        so a script reading only stdout knows of it."""
        self.emit({"type": "error", "file": path, "message": message, "exitCode": exit_code})

    def finish(self, tally: DumpTally) -> None:
        """The one summary of the invocation, last: every file's counts added up, the worst outcome."""
        self.emit(
            {
                "type": "summary",
                "files": tally.files,
                "unreadable": tally.unreadable,
                "entries": tally.entries,
                "records": tally.records if tally.records_counted else None,
                "errors": tally.problems,
                "unknownRecords": tally.unknown,
                "exitCode": tally.exit_code,
            }
        )

    def render(self, event) -> None:
        if isinstance(event, EntryEvent):
            self._entry(event)
        elif isinstance(event, MessageRunEvent):
            self._run(event)
        elif isinstance(event, ProblemEvent):
            p = event.problem
            self.emit(
                {
                    "type": "problem",
                    "file": event.path,
                    "position": p.position,
                    "offset": p.offset,
                    "kind": p.kind.value,
                    "fatal": p.is_fatal,
                    "message": p.message,
                }
            )
        elif isinstance(event, FileStart):
            self.emit(
                {
                    "type": "file",
                    "file": event.path,
                    "kind": event.kind.value,
                    "baseOffset": _starting_offset(event),
                    "size": event.size,
                }
            )
        elif isinstance(event, ItemsEvent):
            self._items(event)
        elif isinstance(event, FileEnd):
            self.tally.add(event)
            for note in event.notes():  # what the text run says on stderr, in the stream too
                self.emit(note_object(note, False))
            self.emit(
                {
                    "type": "file-summary",
                    "file": event.path,
                    "kind": event.kind.value,
                    "entries": event.entries,
                    "records": event.records if event.records_counted else None,
                    "size": event.size,
                    "validBytes": event.valid_bytes,
                    "trailingBytes": event.trailing_bytes,
                    "errors": event.problems,
                    "unknownRecords": event.unknown_records,
                }
            )

    def _entry(self, event: EntryEvent) -> None:
        entry = event.entry
        if isinstance(entry, RecordBatch):
            if event.lines is not None:  # its line and its records', made from the bytes (batch_lines)
                self._write_valid(self.out, event.lines)
                return
            self.emit(self._batch(event.path, entry))
            records = event.records or []
            if event.decoded is not None:  # KRaft records (many small ones): one write a batch
                if all(d is not None and "metadata" in d for d in event.decoded):
                    self.out.write(self._metadata_records(event.path, entry, records, event.decoded))
                    return
                objs = (self._record(event.path, entry, r, d) for r, d in event.with_decoded(records))
                self.out.write("".join(dumps(o) + "\n" for o in objs))
                return
            for record, decoded in event.with_decoded(records):
                self.emit(self._record(event.path, entry, record, decoded))
            return
        wrapper_only = event.inner is not None or event.inner_set is not None
        if not (self.skip_metadata and wrapper_only):  # a wrapper holds no data of its own
            own = event.decoded[0] if event.decoded and event.inner is None else None
            self.emit(self._message(event.path, entry, entry.position, own, inner=False))
        if event.inner_set is not None:
            if not self._fast_messages(event.path, event.inner_set, entry.position):
                for m in self.writer.inner_messages(entry):
                    self.emit(self._message(event.path, m, entry.position, None, inner=True))
            return
        if event.inner is None:
            return
        for m, decoded in event.with_decoded(event.inner):
            self.emit(self._message(event.path, m, entry.position, decoded, inner=True))

    def _json_name(self, path: str) -> str:
        """The file name as a JSON string: made once a file, not once a batch."""
        if path != self._name_of:
            self._name_of, self._name = path, dumps(path)
        return self._name

    def record_lines_from_bytes(self) -> bool:
        """Whether v2 `record` objects are made in C from the batch's bytes (metadata shown, data as
        UTF-8 text): DumpOptions.record_lines may then be on."""
        return (
            self.writer.has_payload_lines
            and not self.skip_metadata
            and (not self.print_data or self.key_decoder == self.value_decoder == "utf8")
        )

    def batch_lines(self, path: str, b: RecordBatch, section: bytes | None) -> bytes | None:
        """A v2 batch's `batch` object and its `record` objects, made in C from its bytes (`section`:
        its records section decompressed): one piece of output. None for a file name that is not text
        (json.dumps then says it as Python does, record by record). DumpOptions.record_lines when
        `record_lines_from_bytes()`."""
        try:
            name = self._json_name(path)
            return self.writer.payload_lines(
                b, b.timestamp_type.label, self.print_data, name, section, batch_object(name, b)
            )
        except UnicodeEncodeError:
            return None

    def _run(self, event: MessageRunEvent) -> None:
        """Plain v0/v1 messages: their objects made in C in one go (data as UTF-8 text), else one by one."""
        inner_set = (event.data, event.count, 0, None)
        if not self._fast_messages(event.path, inner_set, -1, event.position):
            for m in self.writer.messages(event.data, event.position):
                self.emit(self._message(event.path, m, m.position, None, inner=False))

    def _fast_messages(self, path: str, inner_set, wrapper_position: int, position: int = 0) -> bool:
        """A message set's objects made in C (True) when it holds plain messages only and the data is
        UTF-8 text; False leaves it to `_message`."""
        if (
            not self.writer.has_message_lines
            or self.skip_metadata
            or (self.print_data and not self.key_decoder == self.value_decoder == "utf8")
        ):
            return False
        name = self._json_name(path)
        text = self.writer.message_lines(inner_set, position, True, self.print_data, name, wrapper_position)
        if text is None:  # a compressed message inside a wrapper
            return False
        self._write_valid(self.out, text)
        return True

    def _batch(self, path: str, b: RecordBatch) -> dict:
        return {
            "type": "batch",
            "file": path,
            "position": b.position,
            "baseOffset": b.base_offset,
            "lastOffset": b.last_offset,
            "count": b.records_count,
            "size": b.size,
            "magic": b.magic,
            "crc": b.crc,
            "computedCrc": b.computed_crc,
            "isValid": b.is_valid,
            "compressCodec": b.codec_label,
            "timestampType": b.timestamp_type.label,
            "baseTimestamp": b.base_timestamp,
            "maxTimestamp": b.max_timestamp,
            "partitionLeaderEpoch": b.partition_leader_epoch,
            "producerId": b.producer_id,
            "producerEpoch": b.producer_epoch,
            "baseSequence": b.base_sequence,
            "lastSequence": b.last_sequence,
            "isTransactional": b.is_transactional,
            "isControl": b.is_control,
            "deleteHorizonMs": b.delete_horizon_ms,
            "attributes": b.attributes,
        }

    def _record(self, path: str, b: RecordBatch, r: Record, decoded: dict | None) -> dict:
        obj: dict = {"type": "record", "file": path}
        if not self.skip_metadata:
            obj.update(
                batchPosition=b.position,
                offset=r.offset,
                timestamp=r.timestamp,
                timestampType=b.timestamp_type.label,
                keySize=-1 if r.key is None else len(r.key),
                valueSize=-1 if r.value is None else len(r.value),
                sequence=r.sequence,
                headerKeys=[k for k, _ in r.headers],
            )
        if decoded is not None and "metadata" in decoded:  # a KRaft record: {"type", "version", "data"}
            if b.is_control:
                obj["control"] = self._control(r)
            elif self.print_data:
                obj["key"] = decode_json(r.key, self.key_decoder)
            obj["value"] = decoded["metadata"]
        elif b.is_control:
            obj["control"] = self._control(r)
        elif self.print_data:
            obj["headers"] = [{"key": k, "value": decode_json(v, self.value_decoder)} for k, v in r.headers]
            obj.update(self._data(r.key, r.value, decoded))
        return obj

    def _metadata_records(self, path: str, b: RecordBatch, records: list[Record], decoded: list[dict]) -> str:
        """The lines `_record` gives for a batch of decoded KRaft records, byte for byte, without a
        dict per record: the batch's fields encoded once, each record's own joined in, then its
        decoded value (the one object left to encode)."""
        enc = encode_acyclic
        head = '{"type":"record","file":' + enc(path)
        if not self.skip_metadata:
            head += f',"batchPosition":{b.position},"offset":'
            label = enc(b.timestamp_type.label)
        control, print_data, key_decoder = b.is_control, self.print_data, self.key_decoder
        lines = []
        append = lines.append
        for r, d in zip(records, decoded, strict=True):
            line = head
            if not self.skip_metadata:
                key, value, headers = r.key, r.value, r.headers
                line += (
                    f'{r.offset},"timestamp":{r.timestamp},"timestampType":{label},'
                    f'"keySize":{-1 if key is None else len(key)},'
                    f'"valueSize":{-1 if value is None else len(value)},"sequence":{r.sequence},'
                    f'"headerKeys":{enc([k for k, _ in headers]) if headers else "[]"}'
                )
            if control:
                line += ',"control":' + enc(self._control(r))
            elif print_data:  # metadata records have no key: null, whatever the decoder
                line += ',"key":null' if r.key is None else ',"key":' + enc(decode_json(r.key, key_decoder))
            append(f'{line},"value":{enc(d["metadata"])}}}\n')
        return "".join(lines)

    def _control(self, r: Record) -> dict:
        try:
            c = self.writer.control(r)
        except RecordDecodeError as exc:
            return {"error": str(exc)}
        return {
            "type": c.type_name,
            "typeId": c.type_id,
            "version": c.version,
            "coordinatorEpoch": c.coordinator_epoch,
        }

    def _message(self, path: str, m, position: int, decoded: dict | None, inner: bool) -> dict:
        obj = {
            "type": "message",
            "file": path,
            "position": position,
            "offset": m.offset,
            "inner": inner,
            "magic": m.magic,
            "size": m.size,
            "crc": m.crc,
            "computedCrc": m.computed_crc,
            "isValid": m.is_valid,
            "compressCodec": m.codec_label,
            "attributes": m.attributes,
        }
        if isinstance(m, LegacyMessage):
            obj.update(
                timestampType=m.timestamp_type.label,
                timestamp=m.timestamp,
                keySize=m.key_size,
                valueSize=m.payload_size,
            )
            key, value = m.key, m.value
        else:
            assert isinstance(m, Kafka07Message)
            obj.update(nextOffset=m.next_offset, valueSize=len(m.payload))
            key, value = None, m.payload
        if self.skip_metadata:
            obj = {"type": "message", "file": path, "inner": inner}
        if self.print_data and not m.is_compressed:  # a wrapper's value is its compressed inner set
            obj.update(self._data(key, value, decoded))
        return obj

    def _data(self, key: bytes | None, value: bytes | None, decoded: dict | None) -> dict:
        if decoded is not None:  # an internal topic's record, as the dump service decoded it
            return {"key": decoded["key"], "value": decoded["payload"]}
        return {"key": decode_json(key, self.key_decoder), "value": decode_json(value, self.value_decoder)}

    def _items(self, event: ItemsEvent) -> None:
        if event.header:
            self.emit({"type": "file-header", "file": event.path, **event.header})
        item_types = _item_types()
        for item in event.items:
            if isinstance(item, tuple):
                self.emit({"type": "property", "file": event.path, "key": item[0], "value": item[1]})
                continue
            fields = {_camel(k): v for k, v in asdict(item).items()}
            self.emit({"type": item_types[type(item)], "file": event.path, **fields})


def _starting_offset(event: FileStart) -> int | None:
    """The offset the file's name gives (a log file named otherwise starts at 0, as the text says and
    DumpLogSegments assumes); None for files whose name holds no offset."""
    if event.base_offset is None and event.kind in (FileKind.LOG, FileKind.KAFKA07):
        return 0
    return event.base_offset


def batch_object(name: str, b: RecordBatch) -> str:
    """`encode_acyclic(_batch(path, b)) + "\\n"` in one f-string (`name`: the path as a JSON string):
    made once a batch, and broker-written batches are small (a median of 16 records on a 4.4.0 broker's
    log), so the dict, the properties and the encoder were a fifth of `--json`'s time (issue 51)."""
    attributes = b.attributes
    seq = b.base_sequence
    last_seq = seq if seq == NO_SEQUENCE else (seq + b.last_offset_delta) & 0x7FFFFFFF
    horizon = b.base_timestamp if attributes & DELETE_HORIZON_MASK else "null"
    return (
        f'{{"type":"batch","file":{name},"position":{b.position},"baseOffset":{b.base_offset},'
        f'"lastOffset":{b.base_offset + b.last_offset_delta},"count":{b.records_count},'
        f'"size":{b.batch_length + LOG_OVERHEAD},"magic":{b.magic},"crc":{b.crc},'
        f'"computedCrc":{b.computed_crc},"isValid":{"true" if b.crc == b.computed_crc else "false"},'
        f'"compressCodec":"{codec_label(attributes & CODEC_MASK)}",'
        f'"timestampType":"{TIMESTAMP_LABELS[bool(attributes & TIMESTAMP_TYPE_MASK)]}",'
        f'"baseTimestamp":{b.base_timestamp},"maxTimestamp":{b.max_timestamp},'
        f'"partitionLeaderEpoch":{b.partition_leader_epoch},"producerId":{b.producer_id},'
        f'"producerEpoch":{b.producer_epoch},"baseSequence":{seq},"lastSequence":{last_seq},'
        f'"isTransactional":{"true" if attributes & TRANSACTIONAL_MASK else "false"},'
        f'"isControl":{"true" if attributes & CONTROL_MASK else "false"},'
        f'"deleteHorizonMs":{horizon},"attributes":{attributes}}}\n'
    )
