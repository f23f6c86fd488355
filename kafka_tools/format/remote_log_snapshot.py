"""`remote_log_snapshot`: the file Kafka 3.6 and 3.7's TopicBasedRemoteLogMetadataManager kept in each
user partition's directory (`FileBasedRemoteLogMetadataCache`, `RemoteLogMetadataSnapshotFile`), the
remote segments it had replayed from `__remote_log_metadata` up to an offset, so a restart need not
read the topic again (no longer in 3.9's kafka-storage jar). Its layout, from apache/kafka's
`RemoteLogMetadataSnapshotFile`:

    header  version int16 (0), metadata partition int32, metadata partition offset int64,
            entries int32                                                      (18 bytes)
    entry   length int32, then a `RemoteLogMetadataSerde` value of apiKey 3
            (RemoteLogSegmentMetadataSnapshotRecord)                           (repeated)

An empty file is no snapshot (Kafka creates it empty). Every problem is kept with its byte position;
what is before it is still returned."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.format.kraft.decoder import MetadataDecodeError
from kafka_tools.format.remote_log_metadata import SEGMENT_STATES, decode_remote_log_metadata

REMOTE_LOG_SNAPSHOT = "remote_log_snapshot"  # RemoteLogMetadataSnapshotFile's file name
HEADER = struct.Struct(">hiqi")  # 18 bytes
LENGTH = struct.Struct(">i")
SNAPSHOT_RECORD = 3  # the apiKey of RemoteLogSegmentMetadataSnapshotRecord
VERSION = 0  # Snapshot.CURRENT_VERSION, the only one Kafka reads


@dataclass(frozen=True, slots=True)
class RemoteSegmentSnapshot:
    """One remote segment of the snapshot, at its entry's byte position."""

    position: int
    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: dict[int, int]  # epoch -> its first offset
    segment_size_in_bytes: int
    custom_metadata: str | None  # hex
    state: str
    txn_index_empty: bool


@dataclass(frozen=True, slots=True)
class SnapshotProblem:
    position: int
    message: str
    undecodable: bool = False  # an entry's value does not match its schema (else: the framing)


@dataclass(slots=True)
class RemoteLogSnapshot:
    version: int
    metadata_partition: int
    metadata_partition_offset: int
    declared_entries: int
    segments: list[RemoteSegmentSnapshot] = field(default_factory=list)
    problems: list[SnapshotProblem] = field(default_factory=list)


def _segment(position: int, f: dict) -> RemoteSegmentSnapshot:
    state = f["remoteLogSegmentState"]
    custom = f["customMetadata"]
    return RemoteSegmentSnapshot(
        position,
        f["segmentId"],
        f["startOffset"],
        f["endOffset"],
        f["brokerId"],
        f["maxTimestampMs"],
        f["eventTimestampMs"],
        {e["leaderEpoch"]: e["offset"] for e in f["segmentLeaderEpochs"]},
        f["segmentSizeInBytes"],
        None if custom is None else custom.hex(),
        SEGMENT_STATES.get(state, f"UNKNOWN({state})"),
        f["txnIndexEmpty"],
    )


def parse_remote_log_snapshot(data: bytes) -> RemoteLogSnapshot | None:
    """The snapshot in `data` (None for an empty file, which Kafka reads as no snapshot)."""
    if not data:
        return None
    if len(data) < HEADER.size:
        snap = RemoteLogSnapshot(-1, -1, -1, 0)
        snap.problems.append(
            SnapshotProblem(0, f"{len(data)} bytes, shorter than the {HEADER.size}-byte header")
        )
        return snap
    snap = RemoteLogSnapshot(*HEADER.unpack_from(data, 0))
    if snap.version != VERSION:
        snap.problems.append(
            SnapshotProblem(0, f"version {snap.version}: Kafka reads version {VERSION} only")
        )
        return snap
    pos = HEADER.size
    while pos < len(data):
        if len(data) - pos < LENGTH.size:
            snap.problems.append(
                SnapshotProblem(pos, f"{len(data) - pos} bytes left, an entry length needs 4")
            )
            return snap
        (length,) = LENGTH.unpack_from(data, pos)
        body = pos + LENGTH.size
        if length < 0 or length > len(data) - body:
            message = f"entry length {length}, {len(data) - body} bytes left"
            snap.problems.append(SnapshotProblem(pos, message))
            return snap
        try:
            record = decode_remote_log_metadata(data[body : body + length])
        except MetadataDecodeError as exc:
            snap.problems.append(SnapshotProblem(body + exc.position, exc.message, undecodable=True))
        else:
            if record.known and record.api_key == SNAPSHOT_RECORD:
                snap.segments.append(_segment(pos, record.fields))
            else:
                message = f"a {record.type_name} (apiKey {record.api_key}), not a segment snapshot record"
                snap.problems.append(SnapshotProblem(body, message, undecodable=True))
        pos = body + length
    read = len(snap.segments) + sum(p.undecodable for p in snap.problems)
    if read != snap.declared_entries:
        message = f"the header declares {snap.declared_entries} entries, the file holds {read}"
        snap.problems.append(SnapshotProblem(14, message))
    return snap


def read_remote_log_snapshot(path: str | Path) -> RemoteLogSnapshot | None:
    """`parse_remote_log_snapshot` of a file (a few entries a segment: read whole). OSError passes."""
    with open(path, "rb") as f:
        return parse_remote_log_snapshot(f.read())
