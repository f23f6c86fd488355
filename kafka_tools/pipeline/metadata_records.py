"""The `metadata` table of `ktool scan --cluster-metadata`: every record of a `__cluster_metadata`
segment decoded by format/kraft.py, and of a `__remote_log_metadata` segment (tiered storage) by
format/remote_log_metadata.py, one row each (offset, type, version, state, fields as JSON text), in
the executors, range by range like the `records` table. Records are independent of one another, so no
replay is needed here (`ktool metadata` and `ktool tiered audit` replay them).

SCRAM credentials keep their user, mechanism and iterations only: salt, storedKey and serverKey are
left out of the fields."""

from __future__ import annotations

import base64
from collections.abc import Iterator

from kafka_tools.compact_json import dumps
from kafka_tools.format.record_batch import RecordBatch, RecordDecodeError
from kafka_tools.format.remote_log_metadata import REMOTE_LOG_METADATA
from kafka_tools.log.internal_records import kafka_type_name
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
        yield from _remote_chunks(spec, start, end)
        return
    if spec.topic != CLUSTER_METADATA:
        return
    from kafka_tools.format import kraft

    cols = _new(METADATA)
    rows = 0
    for entry in iter_entries(spec, start, end):
        if not isinstance(entry, RecordBatch) or not entry.is_valid:
            continue  # the batches and findings tables say why
        try:
            records = entry.records()
        except RecordDecodeError:
            continue
        control = entry.is_control
        for rec in records:
            error = None
            try:
                if control:
                    m = kraft.decode_control_record(rec.key or b"", rec.value or b"")
                else:
                    m = kraft.decode_metadata_record(rec.value or b"")
            except kraft.MetadataDecodeError as exc:
                m, error = None, str(exc)  # names the byte inside the value
            cols["batch_position"].append(entry.position)
            cols["offset"].append(rec.offset)
            cols["timestamp"].append(rec.timestamp)
            cols["is_control"].append(control)
            cols["record_type"].append(None if m is None else kafka_type_name(m.type_name))
            cols["type_id"].append(None if m is None else m.type_id)
            cols["version"].append(None if m is None else m.version)
            cols["known"].append(None if m is None else m.known)
            cols["state"].append(None)
            cols["fields"].append(None if m is None else fields_json(m.type_name, m.fields))
            cols["error"].append(error)
            rows += 1
        if rows >= CHUNK_ROWS:
            yield cols
            cols, rows = _new(METADATA), 0
    if rows:
        yield cols


def _remote_chunks(spec: SegmentSpec, start: int, end: int | None) -> Iterator[dict[str, list]]:
    """`__remote_log_metadata` rows: the records dump-log's `--remote-log-metadata-decoder` shows, its
    type names (REMOTE_LOG_SEGMENT_METADATA_RECORD, …) and state names; `type_id` is the apiKey."""
    from kafka_tools.format.kraft.decoder import MetadataDecodeError
    from kafka_tools.format.remote_log_metadata import decode_remote_log_metadata

    cols = _new(METADATA)
    rows = 0
    for entry in iter_entries(spec, start, end):
        if not isinstance(entry, RecordBatch) or not entry.is_valid or entry.is_control:
            continue  # the batches and findings tables say why; a control batch holds no metadata
        try:
            records = entry.records()
        except RecordDecodeError:
            continue
        for rec in records:
            error = None
            try:
                m = decode_remote_log_metadata(rec.value)
            except MetadataDecodeError as exc:
                m, error = None, str(exc)  # names the byte inside the value
            cols["batch_position"].append(entry.position)
            cols["offset"].append(rec.offset)
            cols["timestamp"].append(rec.timestamp)
            cols["is_control"].append(False)
            cols["record_type"].append(None if m is None else kafka_type_name(m.type_name))
            cols["type_id"].append(None if m is None else m.api_key)
            cols["version"].append(None if m is None else m.version)
            cols["known"].append(None if m is None else m.known)
            cols["state"].append(None if m is None else m.state_name)
            cols["fields"].append(None if m is None or not m.known else fields_json(m.type_name, m.fields))
            cols["error"].append(error)
            rows += 1
        if rows >= CHUNK_ROWS:
            yield cols
            cols, rows = _new(METADATA), 0
    if rows:
        yield cols
