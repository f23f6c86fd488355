"""A LocalTieredStorage-style remote store (Kafka's `kafka-storage` test jar, a real
RemoteStorageManager keeping remote segments in a directory): `kafka-tiered-storage/` holds one
`<topic>-<partition>-<topicId>` directory a partition, holding `<startOffset>-<segmentId><suffix>`
files (`.log`, `.index`, `.timeindex`, `.txnindex`, `.leader_epoch_checkpoint`, `.snapshot`),
as `RemoteTopicPartitionDirectory` and `RemoteLogSegmentFileset` name them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import InputError, os_error, path_error

ROOT_NAME = "kafka-tiered-storage"
_UUID = r"[a-zA-Z0-9_-]{22}"
_PARTITION_DIR = re.compile(rf"(.+)-(\d+)-({_UUID})")
_FILE = re.compile(rf"(\d+)-({_UUID})(\..+)")


@dataclass(slots=True)
class StoredSegment:
    """The files of one remote segment id in the store."""

    segment_id: str
    start_offset: int
    files: dict[str, int] = field(default_factory=dict)  # suffix -> size in bytes
    names: list[str] = field(default_factory=list)  # the files' names as in the store (offset zero-padded)

    @property
    def log_size(self) -> int | None:
        return self.files.get(".log")


@dataclass(slots=True)
class StoredPartition:
    path: Path
    topic: str
    partition: int
    topic_id: str
    segments: dict[str, StoredSegment] = field(default_factory=dict)
    strays: list[str] = field(default_factory=list)  # names that are no segment file


def store_root(path: str | os.PathLike) -> Path:
    """The store's `kafka-tiered-storage` directory: PATH itself or PATH/kafka-tiered-storage."""
    p = Path(path)
    if not p.is_dir():
        said = path_error(p) or f"{p}: not a directory"
        raise InputError(f"{said} (--remote-dir)")
    inner = p / ROOT_NAME
    return inner if inner.is_dir() else p


def read_store(path: str | os.PathLike) -> dict[tuple[str, int], StoredPartition]:
    """Every partition directory of the store by (topic id, partition)."""
    root = store_root(path)
    out: dict[tuple[str, int], StoredPartition] = {}
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        raise os_error(root, exc) from exc
    for name in names:
        m = _PARTITION_DIR.fullmatch(name)
        if m is None or not (root / name).is_dir():
            continue
        part = StoredPartition(root / name, m.group(1), int(m.group(2)), m.group(3))
        try:
            entries = list(os.scandir(part.path))
        except OSError as exc:
            raise os_error(part.path, exc) from exc
        for entry in entries:
            f = _FILE.fullmatch(entry.name)
            if f is None or not entry.is_file():
                part.strays.append(entry.name)
                continue
            seg = part.segments.get(f.group(2))
            if seg is None:
                seg = part.segments[f.group(2)] = StoredSegment(f.group(2), int(f.group(1)))
            seg.files[f.group(3)] = entry.stat().st_size
            seg.names.append(entry.name)
        out[(part.topic_id, part.partition)] = part
    return out
