"""What a file in a log directory is, judged by its name the way Kafka's DumpLogSegments does."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import PurePath

# The names of the text files a log dir and its partitions hold (their contents: format/checkpoints.py).
OFFSET_CHECKPOINTS = frozenset(
    {
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    }
)
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
QUORUM_STATE = "quorum-state"  # KRaft: the election state of __cluster_metadata-0
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"  # KRaft: the metadata a log dir was formatted with
REMOTE_LOG_SNAPSHOT = "remote_log_snapshot"  # tiered storage, 3.6/3.7: a partition's remote segments

# Suffixes the log cleaner and segment deletion add while they work; the content keeps its format.
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")
_PARTITION_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-f]+-(?P<state>delete|future|stray))?$"
)


class FileKind(str, Enum):
    LOG = "log"
    KAFKA07 = "kafka07"
    OFFSET_INDEX = "offset-index"
    TIME_INDEX = "time-index"
    TXN_INDEX = "txn-index"
    PRODUCER_SNAPSHOT = "producer-snapshot"
    OFFSET_CHECKPOINT = "offset-checkpoint"
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
    META_PROPERTIES = "meta-properties"
    PARTITION_METADATA = "partition-metadata"
    QUORUM_STATE = "quorum-state"  # KRaft
    # KRaft: `bootstrap.checkpoint` and the `<end offset>-<epoch>.checkpoint` snapshots of
    # __cluster_metadata-0, record batches as in a segment
    METADATA_SNAPSHOT = "metadata-snapshot"
    REMOTE_LOG_SNAPSHOT = "remote-log-snapshot"  # format/remote_log_snapshot.py
    UNKNOWN = "unknown"


_BY_SUFFIX = {
    ".log": FileKind.LOG,
    ".kafka": FileKind.KAFKA07,
    ".index": FileKind.OFFSET_INDEX,
    ".timeindex": FileKind.TIME_INDEX,
    ".txnindex": FileKind.TXN_INDEX,
    ".snapshot": FileKind.PRODUCER_SNAPSHOT,
    ".checkpoint": FileKind.METADATA_SNAPSHOT,
}


def strip_transient(name: str) -> str:
    for suffix in TRANSIENT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def kind_of(path: str | PurePath) -> FileKind:
    name = strip_transient(PurePath(path).name)
    if name in OFFSET_CHECKPOINTS:
        return FileKind.OFFSET_CHECKPOINT
    if name == LEADER_EPOCH_CHECKPOINT:
        return FileKind.LEADER_EPOCH_CHECKPOINT
    if name == "meta.properties":
        return FileKind.META_PROPERTIES
    if name == "partition.metadata":
        return FileKind.PARTITION_METADATA
    if name == QUORUM_STATE:
        return FileKind.QUORUM_STATE
    if name == REMOTE_LOG_SNAPSHOT:
        return FileKind.REMOTE_LOG_SNAPSHOT
    return _BY_SUFFIX.get(PurePath(name).suffix, FileKind.UNKNOWN)


def base_offset_of(path: str | PurePath) -> int | None:
    """The offset a segment file's name carries (`00000000000000000123.log` → 123), if any."""
    stem = strip_transient(PurePath(path).name).split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


def partition_of(path: str | PurePath) -> tuple[str, int] | None:
    """(topic, partition) from a segment's directory name (`orders-3/…` → ("orders", 3))."""
    return topic_partition(PurePath(path).parent.name)


def set_aside_state(dir_name: str) -> str | None:
    """`delete`, `stray` or `future` for a partition directory the broker renamed
    `topic-N.<uuid>-<state>` (LogManager: a deleted partition kept for file.delete.delay.ms, a replica
    set aside as stray, a replica being moved between log dirs); None for a plain `topic-N`."""
    match = _PARTITION_DIR.match(dir_name)
    return match.group("state") if match else None


def topic_partition(dir_name: str) -> tuple[str, int] | None:
    """(topic, partition) a partition directory's name gives (`orders-3` → ("orders", 3)), if it is one."""
    match = _PARTITION_DIR.match(dir_name)
    if not match:
        return None
    return match.group("topic"), int(match.group("partition"))
