"""The `metadata` table of `ktool scan --cluster-metadata`: every record of a `__cluster_metadata`
segment decoded by format/kraft.py, and of a `__remote_log_metadata` segment (tiered storage) by
format/remote_log_metadata.py, one row each (offset, type, version, state, fields as JSON text), in
the executors, range by range like the `records` table. Records are independent of one another, so no
replay is needed here (`ktool metadata` and `ktool tiered audit` replay them).

SCRAM credentials keep their user, mechanism and iterations only: salt, storedKey and serverKey are
left out of the fields."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator

from kafka_tools.compact_json import dumps
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.remote_log_metadata import REMOTE_LOG_METADATA
from kafka_tools.log.reads.internal_records import kafka_type_name
from kafka_tools.pipeline.tables import METADATA
from kafka_tools.pipeline.tasks import CHUNK_ROWS, SegmentSpec, _new, iter_entries

CLUSTER_METADATA = "__cluster_metadata"
SECRET_FIELDS = {"UserScramCredentialRecord": ("salt", "storedKey", "serverKey")}


def _json_default(value: object) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    return str(value)


def fields_json(type_name: str, fields: dict) -> str:
    """The record's fields as JSON text (bytes as base64), secrets left out."""
    secret = SECRET_FIELDS.get(type_name)
    if secret:
        fields = {k: v for k, v in fields.items() if k not in secret}
    return dumps(fields, default=_json_default)


def metadata_chunks(spec: SegmentSpec, start: int = 0, end: int | None = None) -> Iterator[dict[str, list]]:
    """Column lists for the `metadata` table (without file/topic/partition); nothing for segments of
    other topics. A record that cannot be decoded is a row with its `error`."""
    if spec.topic == REMOTE_LOG_METADATA:
        yield from _chunks(spec, start, end, _remote_row, with_control=False)
    elif spec.topic == CLUSTER_METADATA:
        yield from _chunks(spec, start, end, _cluster_row, with_control=True)


# A record's decoded columns, in this order (the others come from its batch and itself).
_DECODED = ("record_type", "type_id", "version", "known", "state", "fields", "error")
_UNDECODED = (None, None, None, None, None, None)


def _cluster_row(rec, control: bool) -> tuple:
    """A `__cluster_metadata` record's decoded columns (_DECODED)."""
    from kafka_tools.format import kraft

    try:
        if control:
            m = kraft.decode_control_record(rec.key or b"", rec.value or b"")
        else:
            m = kraft.decode_metadata_record(rec.value or b"")
    except kraft.MetadataDecodeError as exc:
        return (*_UNDECODED, str(exc))  # names the byte inside the value
    fields = fields_json(m.type_name, m.fields)
    return (kafka_type_name(m.type_name), m.type_id, m.version, m.known, None, fields, None)


def _remote_row(rec, control: bool) -> tuple:
    """A `__remote_log_metadata` record's decoded columns (_DECODED): the records dump-log's
    `--remote-log-metadata-decoder` shows, its type names (REMOTE_LOG_SEGMENT_METADATA_RECORD, …) and
    state names; `type_id` is the apiKey."""
    from kafka_tools.format.kraft.decoder import MetadataDecodeError
    from kafka_tools.format.remote_log_metadata import decode_remote_log_metadata

    try:
        m = decode_remote_log_metadata(rec.value)
    except MetadataDecodeError as exc:
        return (*_UNDECODED, str(exc))  # names the byte inside the value
    fields = fields_json(m.type_name, m.fields) if m.known else None
    return (kafka_type_name(m.type_name), m.api_key, m.version, m.known, m.state_name, fields, None)


def _chunks(
    spec: SegmentSpec,
    start: int,
    end: int | None,
    row_of: Callable[[object, bool], tuple],
    with_control: bool,
) -> Iterator[dict[str, list]]:
    """The rows of every record of the valid batches in [start, end), `row_of` decoding each; control
    batches only `with_control` (`__remote_log_metadata`'s hold no metadata)."""
    cols = _new(METADATA)
    rows = 0
    for entry in iter_entries(spec, start, end):
        if not isinstance(entry, RecordBatch) or not entry.is_valid:
            continue  # the batches and findings tables say why
        if entry.is_control and not with_control:
            continue
        try:
            records = entry.records()
        except RecordDecodeError:
            continue
        control = entry.is_control
        for rec in records:
            cols["batch_position"].append(entry.position)
            cols["offset"].append(rec.offset)
            cols["timestamp"].append(rec.timestamp)
            cols["is_control"].append(control)
            for name, value in zip(_DECODED, row_of(rec, control), strict=True):
                cols[name].append(value)
            rows += 1
        if rows >= CHUNK_ROWS:
            yield cols
            cols, rows = _new(METADATA), 0
    if rows:
        yield cols
