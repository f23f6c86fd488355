"""The reads the groups commands and the cluster views make, on ktool's own client, for a security
librdkafka's build here cannot speak (SASL GSSAPI: confluent-kafka's wheels are built without libsasl2):
the brokers (racks, controller, cluster id) and every topic's partitions (Metadata v4-v6), a group's
committed offsets (OffsetFetch v3-v5 at its coordinator), each partition's log start and end (ListOffsets
v1 at its leader) and topic configs (DescribeConfigs v1). Versions as
KIP-896 leaves them on Kafka 4 (no Metadata before v4), so from Kafka 1.0 on.

Facts from Kafka's MetadataRequest/Response, OffsetFetchRequest/Response and ListOffsetsRequest/Response
JSON schemas."""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_tools.broker.cluster_wire import DESCRIBE_CONFIGS
from kafka_tools.broker.wire import (
    FIND_COORDINATOR,
    GROUP_AUTHORIZATION_FAILED,
    LOADING,
    NOT_AVAILABLE,
    NOT_COORDINATOR,
    Connection,
    Reader,
    WireError,
    api_versions,
    at_coordinator,
    by_topic,
    group_denied,
    pick_version,
    string,
    topic_partitions,
)
from kafka_tools.errors import InputError

if TYPE_CHECKING:
    from kafka_tools.broker.security import BrokerSecurity

METADATA, OFFSET_FETCH, LIST_OFFSETS = 3, 9, 2
TOPIC_RESOURCE, UNKNOWN_TOPIC = 2, 3
# DescribeConfigs' config_source, as Kafka's ConfigSource names them
CONFIG_SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}
EARLIEST, LATEST = -2, -1


@dataclass(frozen=True)
class PartitionMetadata:
    leader: int  # -1: none
    replicas: list[int]
    isrs: list[int]  # librdkafka's name, so the cluster views read either


@dataclass
class Metadata:
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)  # node id -> host, port
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)  # (topic, partition) -> node id
    partitions: dict[str, dict[int, PartitionMetadata]] = field(default_factory=dict)  # topics without error
    racks: dict[int, str] = field(default_factory=dict)  # node id -> broker.rack, where set
    cluster_id: str | None = None
    controller: int | None = None


class OwnReads:
    """One connection to the first bootstrap server, its ApiVersions asked once; a leader or coordinator
    reached with the same security settings."""

    def __init__(self, bootstrap: tuple[str, int], timeout: float, security: BrokerSecurity | None) -> None:
        self.bootstrap, self.timeout, self.security = bootstrap, timeout, security
        self._conn: Connection | None = None
        self._versions: dict[int, tuple[int, int]] = {}

    def _connection(self) -> Connection:
        if self._conn is None:
            self._conn = Connection(*self.bootstrap, self.timeout, self.security)
            self._versions = api_versions(self._conn) or {}
        return self._conn

    def _version(self, key: int, ours: tuple[int, int], name: str) -> int:
        conn = self._connection()
        version = pick_version(self._versions, key, ours)
        if version is None:
            raise InputError(f"broker {conn.where}: no {name} version ktool speaks (Kafka 1.0+)")
        return version

    def _ask(self, conn: Connection, key: int, version: int, body: bytes, name: str) -> Reader:
        data = conn.ask(key, version, body)
        if data is None:
            raise InputError(f"broker {conn.where}: closed the connection on {name}")
        return Reader(data)

    def metadata(self, topics: list[str] | None = None) -> Metadata:
        """The brokers, and each partition's leader of `topics` (every topic when None)."""
        version = self._version(METADATA, (4, 6), "Metadata")
        names = b"\xff\xff\xff\xff" if topics is None else struct.pack(">i", len(topics))
        names += b"".join(string(t) for t in topics or [])
        try:
            r = self._ask(self._connection(), METADATA, version, names + b"\x00", "Metadata")
            r.take(">i")  # throttle
            out = Metadata()
            for node, host, port, rack in r.array(
                lambda r: (r.take(">i"), r.string(), r.take(">i"), r.nullable_string())
            ):
                out.brokers[node] = (host, port)
                if rack is not None:
                    out.racks[node] = rack
            out.cluster_id = r.nullable_string()
            controller = r.take(">i")
            out.controller = controller if controller >= 0 else None
            for _ in range(r.take(">i")):
                error, name, _internal = r.take(">h"), r.string(), r.take(">b")
                for _ in range(r.take(">i")):
                    _perror, partition, leader = r.take(">hii")
                    replicas = r.array(lambda r: r.take(">i"))
                    isrs = r.array(lambda r: r.take(">i"))
                    if version >= 5:
                        r.array(lambda r: r.take(">i"))  # offline replicas
                    if not error:
                        out.leaders[(name, partition)] = leader
                        out.partitions.setdefault(name, {})[partition] = PartitionMetadata(
                            leader, replicas, isrs
                        )
        except WireError as exc:
            raise InputError(
                f"broker {self._conn.where}: an answer ktool cannot read (Metadata: {exc})"
            ) from None
        return out

    def topic_configs(self, topics: list[str], names: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
        """DescribeConfigs v1 of `topics`: name -> (value, source) for the `names` set somewhere, Kafka's
        own defaults left out (as Broker.topic_configs); a topic the brokers do not have gets {}."""
        self._version(DESCRIBE_CONFIGS, (1, 1), "DescribeConfigs")
        wanted = list(dict.fromkeys(names))
        keys = struct.pack(">i", len(wanted)) + b"".join(string(n) for n in wanted)
        body = struct.pack(">i", len(topics))
        body += b"".join(struct.pack(">b", TOPIC_RESOURCE) + string(t) + keys for t in topics) + b"\x00"
        conn = self._connection()
        try:
            r = self._ask(conn, DESCRIBE_CONFIGS, 1, body, "DescribeConfigs")
            r.take(">i")  # throttle
            out: dict[str, dict[str, tuple[str, str]]] = {}
            for _ in range(r.take(">i")):
                error, message = r.take(">h"), r.nullable_string()
                r.take(">b")
                topic = r.string()
                found = {}
                for _ in range(r.take(">i")):
                    name, value = r.string(), r.nullable_string()
                    _read_only, source, _sensitive = r.take(">bbb")
                    r.array(lambda r: (r.string(), r.nullable_string(), r.take(">b")))  # synonyms
                    if name in wanted and value is not None and source != 5:
                        found[name] = (value, CONFIG_SOURCES.get(source, "UNKNOWN"))
                if error and error != UNKNOWN_TOPIC:
                    raise InputError(
                        f"broker {conn.where}: DescribeConfigs of topic {topic}: {message or error}"
                    )
                out[topic] = {} if error else found
            return out
        except WireError as exc:
            raise InputError(
                f"broker {conn.where}: an answer ktool cannot read (DescribeConfigs: {exc})"
            ) from None

    def committed(self, group: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
        """OffsetFetch of `partitions` at the group's coordinator; None where the group has no offset."""
        conn = self._connection()
        find = self._version(FIND_COORDINATOR, (0, 2), "FindCoordinator")
        version = self._version(OFFSET_FETCH, (3, 5), "OffsetFetch")
        body = string(group) + topic_partitions(partitions)

        def ask(c: Connection) -> dict[tuple[str, int], int | None] | None:
            r = self._ask(c, OFFSET_FETCH, version, body, "OffsetFetch")
            r.take(">i")  # throttle
            out: dict[tuple[str, int], int | None] = {}
            for _ in range(r.take(">i")):
                topic = r.string()
                for _ in range(r.take(">i")):
                    partition, offset = r.take(">iq")
                    if version >= 5:
                        r.take(">i")  # leader epoch
                    r.nullable_string()  # metadata
                    r.take(">h")
                    out[(topic, partition)] = offset if offset >= 0 else None
            error = r.take(">h")
            if error == GROUP_AUTHORIZATION_FAILED:
                raise group_denied(c.where, group, self.security)
            if error in (LOADING, NOT_AVAILABLE, NOT_COORDINATOR):
                return None
            if error:
                raise InputError(f"broker {c.where}: OffsetFetch of group {group} refused (error {error})")
            return out

        try:
            return at_coordinator(conn, group, find, self.timeout, time.monotonic() + self.timeout, ask)
        except WireError as exc:
            raise InputError(
                f"broker {conn.where}: an answer ktool cannot read (OffsetFetch: {exc})"
            ) from None

    def watermarks(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """(log start, log end) of each partition: ListOffsets v1 (earliest, latest) at its leader."""
        self._version(LIST_OFFSETS, (1, 1), "ListOffsets")
        meta = self.metadata(sorted({t for t, _ in partitions}))
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in partitions:
            if tp not in meta.leaders or meta.leaders[tp] not in meta.brokers:
                raise InputError(f"broker {self._conn.where}: {tp[0]}-{tp[1]} has no leader")
            by_leader.setdefault(meta.leaders[tp], []).append(tp)
        out: dict[tuple[str, int], tuple[int, int]] = {}
        for node, tps in sorted(by_leader.items()):
            low = self._list_offsets(meta.brokers[node], tps, EARLIEST)
            high = self._list_offsets(meta.brokers[node], tps, LATEST)
            out.update({tp: (low[tp], high[tp]) for tp in tps})
        return out

    def _list_offsets(
        self, address: tuple[str, int], partitions: list[tuple[str, int]], at: int
    ) -> dict[tuple[str, int], int]:
        topics = by_topic(partitions)
        body = struct.pack(">ii", -1, len(topics))
        for topic, numbers in topics.items():
            body += string(topic) + struct.pack(">i", len(numbers))
            body += b"".join(struct.pack(">iq", n, at) for n in numbers)
        conn = self._connection()
        reused = address == (conn.host, conn.port)
        leader = conn if reused else Connection(*address, self.timeout, self.security)
        try:
            r = self._ask(leader, LIST_OFFSETS, 1, body, "ListOffsets")
            out = {}
            for _ in range(r.take(">i")):
                topic = r.string()
                for _ in range(r.take(">i")):
                    partition, error, _time, offset = r.take(">ihqq")
                    if error:
                        raise InputError(
                            f"broker {leader.where}: ListOffsets of {topic}-{partition}: error {error}"
                        )
                    out[(topic, partition)] = offset
            return out
        except WireError as exc:
            raise InputError(
                f"broker {leader.where}: an answer ktool cannot read (ListOffsets: {exc})"
            ) from None
        finally:
            if not reused:
                leader.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
