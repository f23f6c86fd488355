"""The broker's small text files: offset checkpoints, leader-epoch checkpoints, meta.properties,
partition.metadata (CheckpointFile.scala: a version line, a count line, then one entry per line) and
KRaft's quorum-state (one JSON object). Their file names: format/kinds.py."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafka_tools.format.plural import plural
from kafka_tools.format.shared_methods import SharedMethods

MAX_TEXT_FILE = 64 * 1024 * 1024


class CheckpointError(ValueError):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(init=False, slots=True, repr=False, eq=False)
class OffsetCheckpointEntry(SharedMethods):
    topic: str
    partition: int
    offset: int

    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset


@dataclass(init=False, slots=True, repr=False, eq=False)
class EpochEntry(SharedMethods):
    epoch: int
    start_offset: int

    def __init__(self, epoch: int, start_offset: int) -> None:
        self.epoch = epoch
        self.start_offset = start_offset


@dataclass(init=False, slots=True, repr=False, eq=False)
class Checkpoint(SharedMethods):
    version: int
    entries: list = field(default_factory=list)

    def __init__(self, version: int, entries: list | None = None) -> None:
        self.version = version
        self.entries = [] if entries is None else entries


def _read_text(path: str | os.PathLike) -> list[str]:
    size = os.path.getsize(path)
    if size > MAX_TEXT_FILE:
        raise CheckpointError(f"{size} bytes is too large for a checkpoint file", 0)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointError(
            f"not UTF-8 text (byte {exc.start})", raw[: exc.start].count(b"\n") + 1
        ) from None
    return text.splitlines()


def _read_checkpoint(path: str | os.PathLike, fields: int, parse) -> Checkpoint:
    lines = _read_text(path)
    if not lines:
        return Checkpoint(0, [])  # brokers create checkpoint files empty before the first write
    if len(lines) < 2:
        raise CheckpointError("a checkpoint needs a version line and a count line", len(lines) + 1)
    try:
        version = int(lines[0].strip())
    except ValueError:
        raise CheckpointError(f"version line {lines[0][:40]!r} is not a number", 1) from None
    if version != 0:
        raise CheckpointError(f"unknown checkpoint version {version}", 1)
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CheckpointError(f"count line {lines[1][:40]!r} is not a number", 2) from None
    body = lines[2:]
    if count != len(body):
        raise CheckpointError(f"count line says {plural(count, 'entry')} but the file has {len(body)}", 2)
    entries = []
    for n, line in enumerate(body, start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"expected {fields} fields, found {len(parts)}: {line[:60]!r}", n)
        try:
            entries.append(parse(parts))
        except ValueError:
            raise CheckpointError(f"malformed entry {line[:60]!r}", n) from None
    return Checkpoint(version, entries)


def read_offset_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """`topic partition offset` lines (recovery point, replication, log start, cleaner)."""
    return _read_checkpoint(path, 3, lambda p: OffsetCheckpointEntry(p[0], int(p[1]), int(p[2])))


def offsets_by_partition(
    log_dir: str | os.PathLike, name: str, warnings: list[str], unused: str
) -> dict[tuple[str, int], int] | None:
    """The offsets of a log dir's checkpoint `name` by (topic, partition), the last entry winning as in
    the broker's map; None when the file is missing or cannot be read (then a warning ending in
    `unused`: what is done instead)."""
    path = os.path.join(os.fspath(log_dir), name)
    if not os.path.isfile(path):
        return None
    try:
        entries = read_offset_checkpoint(path).entries
    except (CheckpointError, OSError) as exc:
        warnings.append(f"{path}: unreadable ({exc}); {unused}")
        return None
    return {(e.topic, e.partition): e.offset for e in entries}


def read_leader_epoch_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """`epoch startOffset` lines."""
    return _read_checkpoint(path, 2, lambda p: EpochEntry(int(p[0]), int(p[1])))


def read_properties(path: str | os.PathLike) -> dict[str, str]:
    """A Java properties file of simple `key=value` lines (meta.properties)."""
    props: dict[str, str] = {}
    for n, line in enumerate(_read_text(path), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        sep = min((i for i in (stripped.find("="), stripped.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise CheckpointError(f"not a key=value line: {stripped[:60]!r}", n)
        props[stripped[:sep].strip()] = stripped[sep + 1 :].strip()
    return props


def meta_node_id(props: dict[str, str]) -> str | None:
    """The node's id in meta.properties, as Kafka's MetaProperties reads it: `node.id` in version 1 (KRaft),
    `broker.id` in version 0 (ZooKeeper mode; some KRaft tools wrote `node.id` there too)."""
    if props.get("version", "0").strip() == "1":
        return props.get("node.id")
    return props.get("broker.id", props.get("node.id"))


def read_partition_metadata(path: str | os.PathLike) -> dict[str, str]:
    """`partition.metadata` (Kafka 2.8+): `version: 0` and `topic_id: …` lines."""
    meta: dict[str, str] = {}
    for n, line in enumerate(_read_text(path), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise CheckpointError(f"not a `key: value` line: {line[:60]!r}", n)
        meta[key.strip()] = value.strip()
    return meta


def read_quorum_state(path: str | os.PathLike) -> dict[str, object]:
    """KRaft's `quorum-state` (QuorumStateData as JSON: leaderId, leaderEpoch, votedId, currentVoters,
    data_version, …), one object on one line."""
    from kafka_tools import bounded_json  # KRaft's quorum-state only: not on the offset checkpoints' path

    text = "\n".join(_read_text(path))
    try:
        state = bounded_json.loads(text)
    except bounded_json.JsonRejected as exc:
        raise CheckpointError(str(exc), text[: exc.pos].count("\n") + 1) from None
    if not isinstance(state, dict) or "leaderEpoch" not in state:
        raise CheckpointError("not a quorum state (a JSON object with leaderEpoch)", 1)
    return state
