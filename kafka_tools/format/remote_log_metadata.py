"""`__remote_log_metadata` values (tiered storage, KIP-405) decoded by the KRaft table interpreter.

Kafka writes them with `RemoteLogMetadataSerde`, whose framing is the one of `__cluster_metadata`
(AbstractApiMessageSerde: unsigned varint frame version 1, apiKey, version, then the flexible
message), but apiKeys 0-3 name the remote-storage messages below, not KRaft's: a table of their own,
compiled and read by `format.kraft.decoder`'s `compile_struct`/`decode_body` (one interpreter).
The schemas transcribe apache/kafka `storage/src/main/resources/message/RemoteLogSegmentMetadata*Record
.json` and `RemotePartitionDeleteMetadataRecord.json` (every released version is 0, flexible).
The records carry no key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_tools.format import accel
from kafka_tools.format.kraft.decoder import (
    MetadataDecodeError,
    Program,
    compile_struct,
    decode_body,
    read_frame,
)

__all__ = [
    "PARTITION_DELETE_STATES",
    "REMOTE_LOG_METADATA",
    "RemoteLogMetadataRecord",
    "SEGMENT_STATES",
    "decode_remote_log_metadata",
    "decode_remote_log_metadata_py",
]

REMOTE_LOG_METADATA = "__remote_log_metadata"

#: RemoteLogSegmentState ids (storage/api .../RemoteLogSegmentState.java).
SEGMENT_STATES: dict[int, str] = {
    0: "COPY_SEGMENT_STARTED",
    1: "COPY_SEGMENT_FINISHED",
    2: "DELETE_SEGMENT_STARTED",
    3: "DELETE_SEGMENT_FINISHED",
}
#: RemotePartitionDeleteState ids (storage/api .../RemotePartitionDeleteState.java).
PARTITION_DELETE_STATES: dict[int, str] = {
    0: "DELETE_PARTITION_MARKED",
    1: "DELETE_PARTITION_STARTED",
    2: "DELETE_PARTITION_FINISHED",
}

_ALL = (0, -1)


def _f(
    name: str, type_: str, fields: tuple = (), nullable: bool = False, default: str | None = None
) -> tuple:
    """A field as `kraft.generate` renders one: valid (and nullable when asked) in every version."""
    return (name, type_, _ALL, _ALL if nullable else None, None, None, default, fields)


_TXN_INDEX_EMPTY = ("TxnIndexEmpty", "bool", _ALL, None, _ALL, 0, None, ())  # tagged, tag 0 (Kafka 4.x)
_TOPIC_ID_PARTITION = _f(
    "TopicIdPartition", "struct", (_f("Name", "string"), _f("Id", "uuid"), _f("Partition", "int32"))
)
_SEGMENT_ID = _f("RemoteLogSegmentId", "struct", (_TOPIC_ID_PARTITION, _f("Id", "uuid")))
_LEADER_EPOCHS = _f("SegmentLeaderEpochs", "[]struct", (_f("LeaderEpoch", "int32"), _f("Offset", "int64")))
_CUSTOM = _f("CustomMetadata", "bytes", nullable=True, default="null")
_SEGMENT = (
    _f("StartOffset", "int64"),
    _f("EndOffset", "int64"),
    _f("BrokerId", "int32"),
    _f("MaxTimestampMs", "int64"),
    _f("EventTimestampMs", "int64"),
    _LEADER_EPOCHS,
    _f("SegmentSizeInBytes", "int32"),
    _CUSTOM,
    _f("RemoteLogSegmentState", "int8"),
    _TXN_INDEX_EMPTY,
)

#: The JSON schemas as data, in `kraft.generate.load`'s form: (name, kind, apiKey, validVersions,
#: flexibleVersions, fields); a test checks it equals fixtures/remote-log-metadata-schemas.
SCHEMAS: tuple[tuple, ...] = (
    ("RemoteLogSegmentMetadataRecord", "metadata", 0, (0, 0), _ALL, (_SEGMENT_ID, *_SEGMENT)),
    (
        "RemoteLogSegmentMetadataUpdateRecord",
        "metadata",
        1,
        (0, 0),
        _ALL,
        (
            _SEGMENT_ID,
            _f("BrokerId", "int32"),
            _f("EventTimestampMs", "int64"),
            _CUSTOM,
            _f("RemoteLogSegmentState", "int8"),
        ),
    ),
    (
        "RemotePartitionDeleteMetadataRecord",
        "metadata",
        2,
        (0, 0),
        _ALL,
        (
            _TOPIC_ID_PARTITION,
            _f("BrokerId", "int32"),
            _f("EventTimestampMs", "int64"),
            _f("RemotePartitionDeleteState", "int8"),
        ),
    ),
    (
        "RemoteLogSegmentMetadataSnapshotRecord",
        "metadata",
        3,
        (0, 0),
        _ALL,
        (_f("SegmentId", "uuid"), *_SEGMENT),
    ),
)

# apiKey -> (name, {version: program}); every version flexible ("flexibleVersions": "0+")
_TYPES: dict[int, tuple[str, dict[int, Program]]] = {
    api_key: (name, {v: compile_struct(fields, v, True) for v in range(low, high + 1)})
    for name, _kind, api_key, (low, high), _flexible, fields in SCHEMAS
}


@dataclass(frozen=True, slots=True)
class RemoteLogMetadataRecord:
    """One `__remote_log_metadata` value. `fields` use the schema names with a lower-case first letter
    (uuids in Kafka's base64, `customMetadata` bytes or None); `state_name` names the segment or
    partition-delete state id. `known` is False (fields empty) for an apiKey or version this table
    lacks: a newer Kafka's record is shown raw, not refused."""

    api_key: int
    type_name: str
    version: int
    fields: dict[str, Any]
    known: bool
    raw: bytes

    @property
    def state_name(self) -> str | None:
        if "remoteLogSegmentState" in self.fields:
            state = self.fields["remoteLogSegmentState"]
            return SEGMENT_STATES.get(state, f"UNKNOWN({state})")
        if "remotePartitionDeleteState" in self.fields:
            state = self.fields["remotePartitionDeleteState"]
            return PARTITION_DELETE_STATES.get(state, f"UNKNOWN({state})")
        return None


_LABEL = "remote log metadata"


def decode_remote_log_metadata_py(value: bytes | bytearray | memoryview) -> RemoteLogMetadataRecord:
    """Decode one value as `RemoteLogMetadataSerde.deserialize` reads it (the reference in pure Python;
    `decode_remote_log_metadata` runs the same programs in C when it is built).

    Raises `MetadataDecodeError` (with the byte position) for a frame version other than 1, or a body
    that does not match its schema (trailing bytes included).
    """
    raw = bytes(value)
    api_key, version, pos = read_frame(raw, _LABEL)
    known = _TYPES.get(api_key)
    if known is None:
        return RemoteLogMetadataRecord(api_key, "Unknown", version, {}, False, raw)
    name, programs = known
    program = programs.get(version)
    if program is None:
        return RemoteLogMetadataRecord(api_key, name, version, {}, False, raw)
    fields = decode_body(program, raw, pos, f"{name} v{version}")
    return RemoteLogMetadataRecord(api_key, name, version, fields, True, raw)


def _speedups():
    """kraft.c's second table, given these programs (bound at import, as KRaft's: a million records
    go through it in a replay; KTOOL_PURE_PYTHON=1 turns it off)."""
    ext = accel.C
    if ext is None or not hasattr(ext, "kraft_decode_remote"):
        return None
    attrs = (None, "api_key", "type_name", "version", "fields", "known", "raw", None)
    ext.kraft_configure(1, _LABEL, _TYPES, RemoteLogMetadataRecord, attrs, MetadataDecodeError)
    return ext


_C = _speedups()
HAS_SPEEDUPS = _C is not None
_decode = _C.kraft_decode_remote if _C is not None else decode_remote_log_metadata_py


def decode_remote_log_metadata(value: bytes | bytearray | memoryview | None) -> RemoteLogMetadataRecord:
    """Decode one value as `RemoteLogMetadataSerde.deserialize` reads it.

    Raises `MetadataDecodeError` (with the byte position) for a null value, a frame version other
    than 1, or a body that does not match its schema (trailing bytes included).
    """
    if value is None:
        raise MetadataDecodeError("a remote log metadata record with a null value", 0)
    return _decode(value)
