"""Keys and values of `__consumer_offsets` / `__transaction_state` records decoded for `dump-log`, as
JSON-ready objects shaped like modern DumpLogSegments' `--offsets-decoder` output
(`{"type": …, "data": {…}}`): the dump service decodes, the text and JSON renderers only print."""

from __future__ import annotations

from kafka_tools.format.internal_topics import (
    InternalRecord,
    decode_consumer_offsets,
    decode_transaction_state,
    to_jsonable,
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
