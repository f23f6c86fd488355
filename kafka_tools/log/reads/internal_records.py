"""Keys and values of `__consumer_offsets` / `__transaction_state` records decoded for `dump-log`, as
JSON-ready objects shaped like modern DumpLogSegments' `--offsets-decoder` output
(`{"type": …, "data": {…}}`): the dump service decodes, the text and JSON renderers only print."""

from __future__ import annotations

import functools
import re

from kafka_tools.format.internal_topics import (
    InternalRecord,
    decode_consumer_offsets,
    decode_transaction_state,
    to_jsonable,
)
from kafka_tools.format.kraft import (
    TYPES_WITH_BYTES,
    MetadataDecodeError,
    MetadataRecord,
    decode_control_record,
    decode_metadata_record,
)


def decode_internal(mode: str, key: bytes | None, value: bytes | None) -> dict:
    record = (
        decode_consumer_offsets(key, value) if mode == "offsets" else decode_transaction_state(key, value)
    )
    return shape(record)


def shape(record: InternalRecord) -> dict:
    if record.error and record.key is None:
        key: object = {"type": record.record_type, "version": record.key_version, "error": record.error}
        key["raw"] = to_jsonable(record.raw_key)
    else:
        key = {"type": record.record_type, "version": record.key_version, "data": to_jsonable(record.key)}
    if record.raw_value is None:
        payload: object = None
    elif record.value is None:
        payload = {
            "version": record.value_version,
            "error": record.error,
            "raw": to_jsonable(record.raw_value),
        }
    else:
        payload = {"version": record.value_version, "data": to_jsonable(record.value)}
    return {"key": key, "payload": payload}


def decode_cluster_metadata(
    key: bytes | None, value: bytes | None, control: bool
) -> tuple[dict, MetadataRecord | None, MetadataDecodeError | None]:
    """A `__cluster_metadata` record (or a KRaft control record) shaped as Kafka's
    `--cluster-metadata-decoder` prints it: `{"type": "TOPIC_RECORD", "version": …, "data": {…}}`.
    An unknown type or version keeps its raw value (hex); a record that does not match its schema
    gives the error."""
    try:
        if control:
            record = decode_control_record(key, value)
        elif value is None:
            raise MetadataDecodeError("a metadata record with a null value", 0)
        else:
            record = decode_metadata_record(value)
    except MetadataDecodeError as exc:
        raw = None if value is None else bytes(value).hex()
        return {"type": "UNDECODABLE", "error": exc.message, "position": exc.position, "raw": raw}, None, exc
    if not record.known:
        shaped = {
            "type": kafka_type_name(record.type_name),
            "typeId": record.type_id,
            "version": record.version,
        }
        return {**shaped, "unknown": True, "raw": record.raw.hex()}, record, None
    # bytes (SCRAM salts and keys) become hex, as for the other internal topics; the rest is JSON as is
    fields = to_jsonable(record.fields) if record.type_name in TYPES_WITH_BYTES else record.fields
    if record.layout is not None:  # decoded by a known pre-release layout, not the released schema
        shaped = {
            "type": kafka_type_name(record.type_name),
            "version": record.version,
            "layout": record.layout,
        }
        return {**shaped, "data": fields}, record, None
    return (
        {"type": kafka_type_name(record.type_name), "version": record.version, "data": fields},
        record,
        None,
    )


def decode_remote_log_metadata(value: bytes | None) -> tuple[dict, MetadataDecodeError | None]:
    """A `__remote_log_metadata` record shaped as a KRaft one (`{"type", "version", "state", "data"}`;
    `state` names the segment or partition-delete state id): the same renderers print both. An unknown
    apiKey or version keeps its raw value (hex); a record that does not match its schema gives the error."""
    from kafka_tools.format.remote_log_metadata import decode_remote_log_metadata as decode

    try:
        record = decode(value)
    except MetadataDecodeError as exc:
        raw = None if value is None else bytes(value).hex()
        return {"type": "UNDECODABLE", "error": exc.message, "position": exc.position, "raw": raw}, exc
    head = {"type": kafka_type_name(record.type_name), "version": record.version}
    if not record.known:
        return {**head, "apiKey": record.api_key, "unknown": True, "raw": record.raw.hex()}, None
    if record.state_name is not None:
        head["state"] = record.state_name
    return {**head, "data": to_jsonable(record.fields)}, None


_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@functools.cache
def kafka_type_name(schema_name: str) -> str:
    """`TopicRecord` -> `TOPIC_RECORD`, `NoOpRecord` -> `NO_OP_RECORD`: the names Kafka's
    MetadataRecordType gives and `kafka-dump-log --cluster-metadata-decoder` prints (so a `grep` written
    for Kafka's output works on ktool's); control records get the same treatment."""
    return _SNAKE.sub("_", schema_name).upper()
