"""Tiered storage as a broker leaves it, built for the tests: `__remote_log_metadata` records written
by the independent encoder (tests/format/kraft_encoder.py, from Kafka 4.4.0's JSON schemas), a user
partition's local log, and a LocalTieredStorage store directory
(`kafka-tiered-storage/<topic>-<partition>-<topicId>/<start>-<segmentId>.<suffix>`)."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.format.kraft_encoder import batch, frame, load_schemas
from tests.independent import FIXTURES
from tests.support.replica_logs import Batch, write_replica

SCHEMAS = load_schemas(FIXTURES / "remote-log-metadata-schemas")
COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = range(4)
MARKED, DELETE_PARTITION_STARTED, DELETE_PARTITION_FINISHED = range(3)


def kafka_uuid(seed: int | None = None) -> str:
    raw = uuid.uuid4().bytes if seed is None else seed.to_bytes(16, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@dataclass
class Metadata:
    """The events of one user partition, in the order a broker wrote them."""

    topic: str
    topic_id: str
    partition: int = 0
    values: list[bytes] = field(default_factory=list)

    @property
    def tip(self) -> dict:
        return {"name": self.topic, "id": self.topic_id, "partition": self.partition}

    def add(
        self,
        seg_id: str,
        start: int,
        end: int,
        ts: int,
        *,
        epochs=None,
        size: int = 100,
        broker: int = 1,
        state: int = COPY_STARTED,
    ) -> None:
        data = {
            "remoteLogSegmentId": {"topicIdPartition": self.tip, "id": seg_id},
            "startOffset": start,
            "endOffset": end,
            "brokerId": broker,
            "maxTimestampMs": ts,
            "eventTimestampMs": ts,
            "segmentLeaderEpochs": [
                {"leaderEpoch": e, "offset": o} for e, o in sorted((epochs or {0: start}).items())
            ],
            "segmentSizeInBytes": size,
            "customMetadata": None,
            "remoteLogSegmentState": state,
            "txnIndexEmpty": True,
        }
        self.values.append(frame(SCHEMAS["RemoteLogSegmentMetadataRecord"], 0, data))

    def update(self, seg_id: str, state: int, ts: int, broker: int = 1) -> None:
        data = {
            "remoteLogSegmentId": {"topicIdPartition": self.tip, "id": seg_id},
            "brokerId": broker,
            "eventTimestampMs": ts,
            "customMetadata": None,
            "remoteLogSegmentState": state,
        }
        self.values.append(frame(SCHEMAS["RemoteLogSegmentMetadataUpdateRecord"], 0, data))

    def copied(self, seg_id: str, start: int, end: int, ts: int, **kw) -> None:
        self.add(seg_id, start, end, ts, **kw)
        self.update(seg_id, COPY_FINISHED, ts + 1)

    def partition_delete(self, state: int, ts: int) -> None:
        data = {
            "topicIdPartition": self.tip,
            "brokerId": 1,
            "eventTimestampMs": ts,
            "remotePartitionDeleteState": state,
        }
        self.values.append(frame(SCHEMAS["RemotePartitionDeleteMetadataRecord"], 0, data))


def write_metadata(log_dir: Path, number: int, events: list[bytes], per_batch: int = 3) -> Path:
    """`__remote_log_metadata-<number>` holding the values, `per_batch` a batch (no keys, as Kafka)."""
    part = log_dir / f"__remote_log_metadata-{number}"
    part.mkdir(parents=True, exist_ok=True)
    chunks = [events[i : i + per_batch] for i in range(0, len(events), per_batch)]
    offset, out = 0, []
    for chunk in chunks:
        out.append(batch(offset, [(None, v) for v in chunk]))
        offset += len(chunk)
    (part / "00000000000000000000.log").write_bytes(b"".join(out))
    return part


def write_local(log_dir: Path, topic_id: str, start: int, end: int, epochs: list[tuple[int, int]]) -> Path:
    """`orders-0` holding offsets start..end-1 (one record a batch), its partition.metadata and
    leader-epoch-checkpoint."""
    built = write_replica(
        log_dir, 1, [Batch(0, [b"v"]) for _ in range(end - start)], log_start=start, epochs=epochs
    )
    (built.path / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    return built.path


def write_store(
    root: Path,
    topic: str,
    partition: int,
    topic_id: str,
    segments: dict[str, tuple[int, int]],
    suffixes=(".log", ".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint"),
) -> Path:
    """A LocalTieredStorage directory: for each segment id (start offset, .log size) its files."""
    part = root / "kafka-tiered-storage" / f"{topic}-{partition}-{topic_id}"
    part.mkdir(parents=True, exist_ok=True)
    for seg_id, (start, size) in segments.items():
        for suffix in suffixes:
            # named as LocalTieredStorage names them: the start offset zero-padded to 20 digits
            (part / f"{start:020d}-{seg_id}{suffix}").write_bytes(b"\0" * (size if suffix == ".log" else 8))
    return part
