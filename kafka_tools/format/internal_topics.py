"""Decoders for the records of Kafka's internal topics ``__consumer_offsets`` and ``__transaction_state``.

Both topics store coordinator records whose key starts with an int16 *key version* that selects the
record type, and whose value starts with an int16 *value version* (the schema version of the value).
The schema tables below transcribe Kafka's own message definitions (field names, version ranges,
nullability, flexible versions and tagged fields) from apache/kafka:

* ``group-coordinator/src/main/resources/common/message/`` - ``OffsetCommitKey/Value``,
  ``GroupMetadataKey/Value``, ``ConsumerGroup*Key/Value`` (KIP-848), ``ShareGroup*Key/Value`` (KIP-932);
  older brokers had the same definitions under ``core/src/main/resources/common/message/``;
* ``transaction-coordinator/src/main/resources/common/message/`` - ``TransactionLogKey/Value``;
* ``clients/src/main/resources/common/message/`` - ``ConsumerProtocolSubscription/Assignment``
  (the blobs inside a classic ``consumer`` group's member metadata).

Decoded dicts use the JSON field names with a lower-case first letter; ``bytes`` stay ``bytes``
(:func:`to_jsonable` renders them as lowercase hex); uuids are Kafka's base64 form.
Decoding never raises: problems are reported in :attr:`InternalRecord.error`.

The key and value schemas of both topics in every version Kafka wrote are data, in
format/coordinator_records.py; this module decodes with them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafka_tools.format.coordinator_records import (
    CONSUMER_OFFSETS_RECORDS,
    TRANSACTION_STATE_RECORDS,
    TRANSACTION_STATUS_NAMES,
    RecordKind,
)
from kafka_tools.format.plural import plural
from kafka_tools.format.schema import F, Schema, SchemaError, decode, decode_versioned

__all__ = [
    "CONSUMER_OFFSETS",
    "TRANSACTION_STATE",
    "InternalRecord",
    "decode_assignment",
    "decode_consumer_offsets",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "decode_subscription",
    "decode_transaction_state",
    "to_jsonable",
]

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"


# --------------------------------------------------------------------------------------------------
# Consumer protocol blobs (classic "consumer" groups)
# --------------------------------------------------------------------------------------------------

_CONSUMER_PROTOCOL_MAX_VERSION = 3

CONSUMER_PROTOCOL_SUBSCRIPTION = Schema.make(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    (
        F("Topics", "[]string", "0+"),
        F("UserData", "bytes", "0+", nullable="0+"),
        F(
            "OwnedPartitions",
            "[]struct",
            "1+",
            fields=(F("Topic", "string", "1+"), F("Partitions", "[]int32", "1+")),
        ),
        F("GenerationId", "int32", "2+", default=-1),
        F("RackId", "string", "3+", nullable="3+"),
    ),
)

CONSUMER_PROTOCOL_ASSIGNMENT = Schema.make(
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    (
        F(
            "AssignedPartitions",
            "[]struct",
            "0+",
            fields=(F("Topic", "string", "0+"), F("Partitions", "[]int32", "0+")),
        ),
        F("UserData", "bytes", "0+", nullable="0+"),
    ),
)


def _decode_consumer_protocol(schema: Schema, blob: bytes) -> dict[str, Any]:
    """Decode a consumer-protocol blob: int16 version, then the fields.

    Like Kafka's ``ConsumerProtocol``, a version newer than 3 is read with the v3 layout (newer
    versions only append fields) and the unread tail is then tolerated.
    """
    blob = bytes(blob)
    if len(blob) < 2:
        raise SchemaError(f"{schema.name}: need a 2-byte version but got {plural(len(blob), 'byte')}", 0)
    (version,) = struct.unpack_from(">h", blob, 0)
    if version < 0:
        raise SchemaError(f"{schema.name}: negative version {version}", 0)
    newer = version > _CONSUMER_PROTOCOL_MAX_VERSION
    read_as = _CONSUMER_PROTOCOL_MAX_VERSION if newer else version
    fields = decode(schema, read_as, blob, offset=2, allow_trailing=newer)
    return {"version": version, **fields}


def decode_subscription(blob: bytes) -> dict[str, Any]:
    """Decode a ConsumerProtocolSubscription (v0-v3) blob.

    Returns ``{"version", "topics", "userData", ["ownedPartitions": [{"topic", "partitions"}]],
    ["generationId"], ["rackId"]}`` (bracketed keys only for the versions that have them).
    Raises :class:`SchemaError` on malformed input.
    """
    return _decode_consumer_protocol(CONSUMER_PROTOCOL_SUBSCRIPTION, blob)


def decode_assignment(blob: bytes) -> dict[str, Any]:
    """Decode a ConsumerProtocolAssignment (v0-v3) blob.

    Returns ``{"version", "assignedPartitions": [{"topic", "partitions"}], "userData"}``.
    Raises :class:`SchemaError` on malformed input.
    """
    return _decode_consumer_protocol(CONSUMER_PROTOCOL_ASSIGNMENT, blob)


# StickyAssignor.java's user data (no version prefix): the previous assignment; v1 adds the generation.
# Java reads v1 and falls back to v0 on failure.
STICKY_ASSIGNOR_USER_DATA = Schema.make(
    "StickyAssignorUserData",
    "0-1",
    "none",
    (
        F(
            "PreviousAssignment",
            "[]struct",
            "0+",
            fields=(F("Topic", "string", "0+"), F("Partitions", "[]int32", "0+")),
        ),
        F("Generation", "int32", "1+", default=-1),
    ),
)


def decode_sticky_user_data(blob: bytes) -> dict[str, Any]:
    """Decode StickyAssignor's user data: ``{"previousAssignment": [{"topic", "partitions"}],
    ["generation"]}`` (v1, else v0 without the generation). Raises :class:`SchemaError`."""
    blob = bytes(blob)
    try:
        return decode(STICKY_ASSIGNOR_USER_DATA, 1, blob, offset=0)
    except SchemaError:
        return decode(STICKY_ASSIGNOR_USER_DATA, 0, blob, offset=0)


def decode_cooperative_user_data(blob: bytes) -> int:
    """CooperativeStickyAssignor's user data (subscriptions before v2): the generation, an int32; bytes
    Java cannot read count as no generation (-1), as CooperativeStickyAssignor.memberData does."""
    return struct.unpack_from(">i", blob)[0] if len(blob) >= 4 else -1


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------


@dataclass
class InternalRecord:
    """One decoded record of an internal topic.

    ``raw_key``/``raw_value`` always hold the input bytes, so nothing is lost when ``error`` is set.
    For an unknown record type ``record_type`` is ``"unknown"`` and ``key_version`` carries the type id.
    """

    topic: str
    record_type: str
    key_version: int | None
    key: dict | None
    value_version: int | None
    value: dict | None
    error: str | None
    raw_key: bytes | None
    raw_value: bytes | None

    @property
    def is_tombstone(self) -> bool:
        """True when the record has no value (a deletion marker for compaction)."""
        return self.raw_value is None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (bytes as hex strings, see :func:`to_jsonable`)."""
        return {
            "topic": self.topic,
            "record_type": self.record_type,
            "key_version": self.key_version,
            "key": to_jsonable(self.key),
            "value_version": self.value_version,
            "value": to_jsonable(self.value),
            "is_tombstone": self.is_tombstone,
            "error": self.error,
            "raw_key": to_jsonable(self.raw_key),
            "raw_value": to_jsonable(self.raw_value),
        }


def _as_bytes(data: bytes | bytearray | memoryview | None) -> bytes | None:
    return None if data is None else bytes(data)


def _decode_member_blobs(value: dict[str, Any]) -> None:
    """Replace member subscription/assignment bytes of a ``consumer`` group by their decoded dicts.

    Empty blobs (e.g. a member that has no assignment yet) stay ``b""``. When a blob does not decode
    it is kept as bytes and the reason is stored under ``subscriptionError``/``assignmentError``.
    """
    if value.get("protocolType") != "consumer":
        return
    for member in value.get("members") or ():
        for name, decoder in (("subscription", decode_subscription), ("assignment", decode_assignment)):
            blob = member.get(name)
            if not isinstance(blob, bytes) or not blob:
                continue
            try:
                member[name] = decoder(blob)
            except SchemaError as exc:
                member[f"{name}Error"] = str(exc)


def _name_transaction_status(value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in value.items():
        out[k] = v
        if k == "transactionStatus":
            out["transactionStatusName"] = TRANSACTION_STATUS_NAMES.get(v, f"Unknown({v})")
    return out


def _decode_record(
    topic: str,
    table: dict[int, RecordKind],
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
) -> InternalRecord:
    rec = InternalRecord(
        topic=topic,
        record_type="unknown",
        key_version=None,
        key=None,
        value_version=None,
        value=None,
        error=None,
        raw_key=_as_bytes(key),
        raw_value=_as_bytes(value),
    )
    raw_key, raw_value = rec.raw_key, rec.raw_value
    try:
        if raw_key is None:
            rec.error = "record has no key"
            return rec
        if len(raw_key) < 2:
            rec.error = f"key: need a 2-byte key version but got {plural(len(raw_key), 'byte')}"
            return rec
        (rec.key_version,) = struct.unpack_from(">h", raw_key, 0)
        kind = table.get(rec.key_version)
        if kind is None:
            rec.error = f"unknown record type (key version {rec.key_version}) in {topic}"
            return rec
        rec.record_type = kind.record_type
        try:
            rec.key = decode(kind.key_schema, rec.key_version, raw_key, offset=2)
        except SchemaError as exc:
            rec.error = f"key: {exc}"
            return rec
        if raw_value is None:
            return rec
        if len(raw_value) >= 2:
            (rec.value_version,) = struct.unpack_from(">h", raw_value, 0)
        try:
            _, decoded = decode_versioned(kind.value_schema, raw_value)
        except SchemaError as exc:
            rec.error = f"value: {exc}"
            return rec
        if kind.record_type == "group_metadata":
            _decode_member_blobs(decoded)
        elif kind.record_type == "transaction_log":
            decoded = _name_transaction_status(decoded)
        rec.value = decoded
    except Exception as exc:  # never raise: a decoder bug must not stop a scan of a whole log
        rec.value = None
        rec.error = f"internal decoder error: {type(exc).__name__}: {exc}"
    return rec


def decode_consumer_offsets(
    key: bytes | bytearray | memoryview | None, value: bytes | bytearray | memoryview | None
) -> InternalRecord:
    """Decode one ``__consumer_offsets`` record (key/value as stored). Never raises."""
    return _decode_record(CONSUMER_OFFSETS, CONSUMER_OFFSETS_RECORDS, key, value)


def decode_transaction_state(
    key: bytes | bytearray | memoryview | None, value: bytes | bytearray | memoryview | None
) -> InternalRecord:
    """Decode one ``__transaction_state`` record (key/value as stored). Never raises.

    The value gains a ``transactionStatusName`` entry next to ``transactionStatus``.
    """
    return _decode_record(TRANSACTION_STATE, TRANSACTION_STATE_RECORDS, key, value)


def to_jsonable(obj: Any) -> Any:
    """Make decoded data JSON-serialisable: bytes become lowercase hex strings (recursively).

    Dicts, lists and tuples are converted recursively (dict keys become ``str``); an
    :class:`InternalRecord` becomes its :meth:`InternalRecord.to_dict`; other values are returned as is.
    """
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).hex()
    if isinstance(obj, InternalRecord):
        return obj.to_dict()
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj
