"""A copy's own clock: the newest time the log dirs themselves hold. A copy of a quiet cluster (nothing
written after a transaction that hangs) has data no newer than that transaction, so its age there is
nil; but a KRaft node appends to its metadata log every few hundred milliseconds (NoOpRecord, broker
heartbeats' registrations), and the broker rewrites its checkpoints every few seconds, so they say how
long the cluster ran past its newest data. The newest of: the metadata log's newest batch timestamp,
the checkpoint files' mtimes, and the mtime of each partition's newest segment."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.errors import KtoolError
from kafka_tools.log.files.dirs import PartitionPlace, list_partition, partition_from
from kafka_tools.log.retention.segment_facts import (
    IndexUntrusted,
    last_offset_index_entry,
    scan_entries,
    stat_ms,
)

METADATA_PARTITION = "__cluster_metadata-0"
# What a broker rewrites while it runs (LogManager's and ReplicaManager's checkpoint intervals, KRaft's
# quorum-state on each election).
CHECKPOINTS = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
    f"{METADATA_PARTITION}/quorum-state",
)


@dataclass(frozen=True, slots=True)
class CopyClock:
    ms: int
    source: str  # what said it, for the output


def copy_clock(partitions: Iterable[PartitionPlace]) -> CopyClock | None:
    """The newest time among the files of the partitions' log dirs; None when none holds one."""
    parts = list(partitions)
    found: list[CopyClock] = []
    for log_dir in dict.fromkeys(p.log_dir for p in parts):
        newest = _metadata_log_newest(log_dir / METADATA_PARTITION)
        if newest is not None:
            found.append(newest)
        for name in CHECKPOINTS:
            found += _mtime(log_dir / name)
    for part in parts:
        logs = sorted(Path(part.path).glob("*.log"))  # type: ignore[attr-defined]
        if logs:
            found += _mtime(logs[-1])
    return max(found, key=lambda c: c.ms, default=None)


def _mtime(path: Path) -> list[CopyClock]:
    try:
        return [CopyClock(stat_ms(path)[1], f"mtime of {path}")]
    except OSError:
        return []


def _metadata_log_newest(directory: Path) -> CopyClock | None:
    """The newest batch timestamp of the metadata log's last segment, read from its last `.index` entry
    on (the whole segment when that index cannot be used)."""
    if not directory.is_dir():
        return None
    try:
        segments = partition_from(list_partition(directory, live=False)).segments
    except (OSError, KtoolError):
        return None
    if not segments:
        return None
    last = segments[-1]
    start = 0
    try:
        entry = last_offset_index_entry(last.offset_index) if last.offset_index else None
        if entry is not None and 0 <= entry[1] < os.path.getsize(last.log):
            start = entry[1]
        scan = scan_entries(last.log, start)
        if scan.max_timestamp < 0 and start:
            scan = scan_entries(last.log, 0)
    except (IndexUntrusted, OSError):
        return None
    if scan.max_timestamp < 0:
        return None
    return CopyClock(scan.max_timestamp, f"the newest record of {last.log}")
