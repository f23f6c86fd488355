"""The cluster-describing requests confluent-kafka's Python binding lacks, on ktool's own socket
(broker/wire.py): DescribeTopicPartitions (KIP-966's eligible leader replicas, Kafka 3.8+),
ListPartitionReassignments (2.4+), DescribeLogDirs (1.0+; sizes), DescribeQuorum (KRaft) and a node's
own DescribeConfigs (2.8+'s flexible v4; a KRaft controller answers it too, KIP-919).

Each is asked only after ApiVersions says the broker has it; a broker without it answers None (the
caller shows the column unknown, or says in one line what the brokers cannot tell).
Schemas: Kafka's clients/src/main/resources/common/message/*.json.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafka_tools.broker.wire import (
    NO_TAGS,
    Connection,
    Reader,
    compact_array,
    compact_string,
    pick_version,
)
from kafka_tools.errors import InputError

DESCRIBE_LOG_DIRS, LIST_REASSIGNMENTS, DESCRIBE_QUORUM, DESCRIBE_TOPIC_PARTITIONS = 35, 46, 55, 75
DESCRIBE_CONFIGS, BROKER_RESOURCE = 32, 4
METADATA_TOPIC = "__cluster_metadata"
_PAGE = 2000  # DescribeTopicPartitions' ResponsePartitionLimit default


@dataclass(slots=True)
class PartitionDetail:
    """What DescribeTopicPartitions adds to librdkafka's Metadata: epochs and ELR (None: not held)."""

    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    elr: list[int] | None
    last_known_elr: list[int] | None
    offline: list[int]


@dataclass(slots=True)
class Reassignment:
    replicas: list[int]
    adding: list[int]
    removing: list[int]


@dataclass(slots=True)
class ReplicaState:
    """A voter or observer of the metadata log (DescribeQuorum's ReplicaState; -1: unknown)."""

    node: int
    directory_id: str | None
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass(slots=True)
class Quorum:
    leader: int
    leader_epoch: int
    high_watermark: int
    voters: list[ReplicaState]
    observers: list[ReplicaState]
    endpoints: dict[int, list[str]] = field(default_factory=dict)  # v2: each node's listeners


def describe_topic_partitions(
    conn: Connection, versions: dict[int, tuple[int, int]] | None, topics: list[str]
) -> dict[tuple[str, int], PartitionDetail] | None:
    """Every partition of `topics`, page after page (the cursor), None before Kafka 3.8."""
    if pick_version(versions, DESCRIBE_TOPIC_PARTITIONS, (0, 0)) is None or not topics:
        return None
    out: dict[tuple[str, int], PartitionDetail] = {}
    cursor: tuple[str, int] | None = None
    names = [compact_string(t) + NO_TAGS for t in topics]
    while True:
        body = compact_array(names) + struct.pack(">i", _PAGE)
        if cursor is None:
            body += struct.pack(">b", -1)
        else:
            body += b"\x01" + compact_string(cursor[0]) + struct.pack(">i", cursor[1]) + NO_TAGS
        data = _ask(conn, DESCRIBE_TOPIC_PARTITIONS, 0, body + NO_TAGS)
        r = Reader(data)
        r.take(">i")
        for _ in range(r.compact_count()):
            r.take(">h")  # a topic's error: its partitions are simply not there
            name = r.compact_string() or ""
            r.uuid()
            r.take(">b")
            for _ in range(r.compact_count()):
                r.take(">h")
                index, leader, epoch = r.take(">iii")
                replicas, isr = r.compact_ints() or [], r.compact_ints() or []
                elr, last_known = r.compact_ints(), r.compact_ints()
                offline = r.compact_ints() or []
                r.skip_tags()
                out[(name, index)] = PartitionDetail(leader, epoch, replicas, isr, elr, last_known, offline)
            r.take(">i")
            r.skip_tags()
        if r.take(">b") < 0:
            return out
        cursor = (r.compact_string() or "", r.take(">i"))
        r.skip_tags()
        if cursor[0] not in topics:
            return out


def list_reassignments(
    conn: Connection, versions: dict[int, tuple[int, int]] | None, timeout_ms: int
) -> dict[tuple[str, int], Reassignment] | None:
    """Every partition being reassigned (the request goes to the controller); None before 2.4."""
    if pick_version(versions, LIST_REASSIGNMENTS, (0, 0)) is None:
        return None
    data = _ask(conn, LIST_REASSIGNMENTS, 0, struct.pack(">i", timeout_ms) + b"\x00" + NO_TAGS)
    r = Reader(data)
    r.take(">i")
    error = r.take(">h")
    message = r.compact_string()
    if error:
        raise InputError(f"broker {conn.where}: ListPartitionReassignments: {message or f'error {error}'}")
    out: dict[tuple[str, int], Reassignment] = {}
    for _ in range(r.compact_count()):
        name = r.compact_string() or ""
        for _ in range(r.compact_count()):
            index = r.take(">i")
            replicas, adding, removing = (
                r.compact_ints() or [],
                r.compact_ints() or [],
                r.compact_ints() or [],
            )
            r.skip_tags()
            out[(name, index)] = Reassignment(replicas, adding, removing)
        r.skip_tags()
    return out


def describe_log_dirs(
    conn: Connection, versions: dict[int, tuple[int, int]] | None
) -> dict[tuple[str, int], int] | None:
    """The size in bytes of each partition replica this broker holds (its current log, not a future
    one being moved in); None before Kafka 2.4 (no flexible DescribeLogDirs)."""
    version = pick_version(versions, DESCRIBE_LOG_DIRS, (2, 4))
    if version is None:
        return None
    r = Reader(_ask(conn, DESCRIBE_LOG_DIRS, version, b"\x00" + NO_TAGS))
    r.take(">i")
    if version >= 3 and (error := r.take(">h")):
        raise InputError(f"broker {conn.where}: DescribeLogDirs: error {error}")
    sizes: dict[tuple[str, int], int] = {}
    for _ in range(r.compact_count()):
        r.take(">h")
        r.compact_string()
        for _ in range(r.compact_count()):
            name = r.compact_string() or ""
            for _ in range(r.compact_count()):
                index, size, _lag, future = r.take(">iqq?")
                r.skip_tags()
                if not future:
                    sizes[(name, index)] = sizes.get((name, index), 0) + size
            r.skip_tags()
        if version >= 4:
            r.take(">qq")
        r.skip_tags()
    return sizes


def describe_quorum(conn: Connection, versions: dict[int, tuple[int, int]] | None) -> Quorum | None:
    """The metadata log's leader, voters and observers as the active controller has them; None: the
    brokers have no DescribeQuorum (not KRaft, or before 3.3)."""
    version = pick_version(versions, DESCRIBE_QUORUM, (0, 2))
    if version is None:
        return None
    partition = struct.pack(">i", 0) + NO_TAGS
    topic = compact_string(METADATA_TOPIC) + compact_array([partition]) + NO_TAGS
    r = Reader(_ask(conn, DESCRIBE_QUORUM, version, compact_array([topic]) + NO_TAGS))
    error = r.take(">h")
    message = r.compact_string() if version >= 2 else None
    if error:
        raise InputError(f"broker {conn.where}: DescribeQuorum: {message or f'error {error}'}")
    quorum: Quorum | None = None
    for _ in range(r.compact_count()):
        r.compact_string()
        for _ in range(r.compact_count()):
            r.take(">i")
            error = r.take(">h")
            message = r.compact_string() if version >= 2 else None
            if error:
                raise InputError(f"broker {conn.where}: DescribeQuorum: {message or f'error {error}'}")
            leader, epoch, high_watermark = r.take(">iiq")
            voters = r.compact_array(lambda r: _replica(r, version)) or []
            observers = r.compact_array(lambda r: _replica(r, version)) or []
            r.skip_tags()
            quorum = Quorum(leader, epoch, high_watermark, voters, observers)
        r.skip_tags()
    if quorum is None:
        raise InputError(f"broker {conn.where}: DescribeQuorum answered without the metadata partition")
    if version >= 2:
        for _ in range(r.compact_count()):
            node = r.take(">i")
            listeners = []
            for _ in range(r.compact_count()):
                name, host, port = r.compact_string(), r.compact_string(), r.take(">H")
                r.skip_tags()
                listeners.append(f"{name}://{host}:{port}")
            r.skip_tags()
            quorum.endpoints[node] = listeners
    return quorum


@dataclass(slots=True)
class NodeConfigs:
    """DescribeConfigs' answer for one node (a broker resource): its values, or why there are none."""

    node: int
    error: int  # 0, or Kafka's error code (31: CLUSTER_AUTHORIZATION_FAILED; 42: INVALID_REQUEST)
    message: str | None
    values: dict[str, str | None]


def describe_node_configs(
    conn: Connection, versions: dict[int, tuple[int, int]] | None, node: int, keys: list[str]
) -> NodeConfigs | None:
    """`keys` of node `node`'s own configuration (static and dynamic, as it runs), asked of the node
    itself: a node answers only for its own id (ConfigHelper: "Unexpected broker id", error 42).
    None: no flexible DescribeConfigs (Kafka before 2.8)."""
    version = pick_version(versions, DESCRIBE_CONFIGS, (4, 4))
    if version is None:
        return None
    names = compact_array([compact_string(k) for k in keys])
    resource = struct.pack(">b", BROKER_RESOURCE) + compact_string(str(node)) + names + NO_TAGS
    no_synonyms_nor_documentation = b"\x00\x00"
    r = Reader(_ask(conn, DESCRIBE_CONFIGS, version, compact_array([resource]) + no_synonyms_nor_documentation
                    + NO_TAGS))  # fmt: skip
    r.take(">i")
    out: NodeConfigs | None = None
    for _ in range(r.compact_count()):
        error = r.take(">h")
        message = r.compact_string()
        r.take(">b")
        name = r.compact_string()
        values: dict[str, str | None] = {}
        for _ in range(r.compact_count()):
            key, value = r.compact_string(), r.compact_string()
            r.take(">?b?")
            for _ in range(r.compact_count()):  # synonyms (none asked for)
                r.compact_string(), r.compact_string(), r.take(">b")
                r.skip_tags()
            r.take(">b")
            r.compact_string()
            r.skip_tags()
            values[key or ""] = value
        r.skip_tags()
        if name == str(node):
            out = NodeConfigs(node, error, message, values)
    if out is None:
        raise InputError(f"broker {conn.where}: DescribeConfigs answered without node {node}")
    return out


def _replica(r: Reader, version: int) -> ReplicaState:
    node = r.take(">i")
    directory = r.uuid() if version >= 2 else None
    end = r.take(">q")
    fetch, caught_up = r.take(">qq") if version >= 1 else (-1, -1)
    r.skip_tags()
    return ReplicaState(node, directory, end, fetch, caught_up)


def _ask(conn: Connection, key: int, version: int, body: bytes) -> bytes:
    data = conn.ask(key, version, body, flexible=True)
    if data is None:
        raise InputError(f"broker {conn.where} closed the connection on request {key} v{version}")
    return data
