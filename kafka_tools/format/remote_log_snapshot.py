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
what is before it is still returned. The file is read up to its last byte that is not zero, under a cap
checked before reading: a sparse file of any length costs its data, and garbage is said once."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.format.extents import CHUNK, end_of_data
from kafka_tools.format.kraft.decoder import MetadataDecodeError
from kafka_tools.format.plural import plural
from kafka_tools.format.remote_log_metadata import SEGMENT_STATES, decode_remote_log_metadata

REMOTE_LOG_SNAPSHOT = "remote_log_snapshot"  # RemoteLogMetadataSnapshotFile's file name
HEADER = struct.Struct(">hiqi")  # 18 bytes
LENGTH = struct.Struct(">i")
SNAPSHOT_RECORD = 3  # the apiKey of RemoteLogSegmentMetadataSnapshotRecord
VERSION = 0  # Snapshot.CURRENT_VERSION, the only one Kafka reads
# A few hundred bytes a remote segment: 64 MiB is hundreds of thousands of them for one partition.
MAX_REMOTE_LOG_SNAPSHOT_BYTES = 64 << 20


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


def parse_remote_log_snapshot(data: bytes, size: int | None = None) -> RemoteLogSnapshot | None:
    """The snapshot in `data` (None for an empty file, which Kafka reads as no snapshot). `size`: the
    file's length when `data` holds its bytes up to the last one not zero (what follows is zeros: a
    hole, say); else `data` is the whole file and its zero tail is cut here. Zeros where an entry
    should start, to the end, are one problem; so is a run of undecodable entries (its first one's
    message, and how many followed): never a line per four bytes of a hole."""
    if size is None:
        size = len(data)
        data = data.rstrip(b"\0")
    if not size:
        return None
    if size < HEADER.size:
        snap = RemoteLogSnapshot(-1, -1, -1, 0)
        snap.problems.append(SnapshotProblem(0, f"{size} bytes, shorter than the {HEADER.size}-byte header"))
        return snap
    snap = RemoteLogSnapshot(*HEADER.unpack(_bytes(data, 0, HEADER.size)))
    if snap.version != VERSION:
        snap.problems.append(
            SnapshotProblem(0, f"version {snap.version}: Kafka reads version {VERSION} only")
        )
        return snap
    pos = HEADER.size
    undecodable = _Run()
    while pos < size:
        if pos >= len(data):
            undecodable.close(snap)
            message = f"{size - pos} bytes of zeros to the end of the file where an entry should start"
            snap.problems.append(SnapshotProblem(pos, message))
            return snap  # the framing is lost: no count to compare
        if size - pos < LENGTH.size:
            undecodable.close(snap)
            snap.problems.append(SnapshotProblem(pos, f"{size - pos} bytes left, an entry length needs 4"))
            return snap  # the framing is lost: no count to compare
        (length,) = LENGTH.unpack(_bytes(data, pos, pos + LENGTH.size))
        body = pos + LENGTH.size
        if length < 0 or length > size - body:
            undecodable.close(snap)
            snap.problems.append(SnapshotProblem(pos, f"entry length {length}, {size - body} bytes left"))
            return snap  # the framing is lost: no count to compare
        # Empty entries one after another (zeros where lengths should be): decoded once, counted.
        empty = _zero_words(data, pos, size) if length == 0 else 1
        try:
            record = decode_remote_log_metadata(_bytes(data, body, body + length))
        except MetadataDecodeError as exc:
            problem = SnapshotProblem(body + exc.position, exc.message, undecodable=True)
            undecodable.add(snap, problem, empty)
            body += (empty - 1) * LENGTH.size  # past the empty entries after this one
        else:
            if record.known and record.api_key == SNAPSHOT_RECORD:
                undecodable.close(snap)
                snap.segments.append(_segment(pos, record.fields))
            else:
                message = f"a {record.type_name} (apiKey {record.api_key}), not a segment snapshot record"
                undecodable.add(snap, SnapshotProblem(body, message, undecodable=True))
        pos = body + length
    undecodable.close(snap)
    read = len(snap.segments) + undecodable.total
    if read != snap.declared_entries:
        message = f"the header declares {snap.declared_entries} entries, the file holds {read}"
        snap.problems.append(SnapshotProblem(14, message))
    return snap


def _zero_words(data: bytes, pos: int, size: int) -> int:
    """How many 4-byte words of zeros follow `pos` (the bytes past `data`, to `size`, are zeros)."""
    rest = len(data) - pos
    nonzero = rest - len(data[pos:].lstrip(b"\0")) if rest > 0 else 0
    if nonzero == rest:  # zeros to the end of `data`, and past it to the end of the file
        nonzero = size - pos
    return max(1, nonzero // LENGTH.size)


def _bytes(data: bytes, start: int, end: int) -> bytes:
    """`data[start:end]`, the zeros past the end of `data` included."""
    piece = data[start:end]
    return piece + bytes(end - start - len(piece)) if len(piece) < end - start else piece


@dataclass(slots=True)
class _Run:
    """Undecodable entries one after another: the first is kept, the others counted into its message."""

    at: int = -1  # the first one's place in the snapshot's problems
    more: int = 0
    total: int = 0

    def add(self, snap: RemoteLogSnapshot, problem: SnapshotProblem, count: int = 1) -> None:
        self.total += count
        if self.at < 0:
            self.at = len(snap.problems)
            snap.problems.append(problem)
            count -= 1
        self.more += count

    def close(self, snap: RemoteLogSnapshot) -> None:
        if self.at >= 0 and self.more:
            first = snap.problems[self.at]
            more = plural(self.more, "undecodable entry", "undecodable entries")
            snap.problems[self.at] = SnapshotProblem(
                first.position, f"{first.message} (and {more} after it)", True
            )
        self.at, self.more = -1, 0


def read_remote_log_snapshot(path: str | Path) -> RemoteLogSnapshot | None:
    """`parse_remote_log_snapshot` of a file, read up to its last byte not zero (holes skipped unread:
    a sparse file of any length costs its data) and only when that is under the cap. OSError passes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        size = os.fstat(fd).st_size
        end = end_of_data(fd, 0, size)
        if end > MAX_REMOTE_LOG_SNAPSHOT_BYTES:
            head = os.pread(fd, HEADER.size, 0)
            snap = RemoteLogSnapshot(*HEADER.unpack(_bytes(head, 0, HEADER.size)))
            message = (
                f"its data runs to byte {end}, more than the {MAX_REMOTE_LOG_SNAPSHOT_BYTES} bytes ktool "
                f"reads of a remote_log_snapshot"
            )
            snap.problems.append(SnapshotProblem(0, message))
            return snap
        data = _read_to(fd, end)
    finally:
        os.close(fd)
    return parse_remote_log_snapshot(data, max(size, len(data)))


def _read_to(fd: int, end: int) -> bytes:
    parts = []
    at = 0
    while at < end:
        chunk = os.pread(fd, min(CHUNK, end - at), at)
        if not chunk:
            break
        parts.append(chunk)
        at += len(chunk)
    return b"".join(parts)
