"""The view (cluster/view.py) of a live cluster through its brokers, as Kafka's TopicCommand reads it:
DescribeCluster (live brokers, controller, cluster id), Metadata (leader, replicas, ISR), DescribeConfigs
(min.insync.replicas), through librdkafka; DescribeTopicPartitions (leader epoch, ELR) and
ListPartitionReassignments, which librdkafka's binding lacks, through ktool's own client
(broker/cluster_wire.py), each only where ApiVersions says the brokers have it. Over SASL GSSAPI, which
librdkafka's build lacks, the Metadata and DescribeConfigs go on ktool's own client too
(broker/own_reads.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_tools.broker.client import Broker
from kafka_tools.broker.cluster_wire import (
    PartitionDetail,
    Quorum,
    Reassignment,
    describe_log_dirs,
    describe_quorum,
    describe_topic_partitions,
    list_reassignments,
)
from kafka_tools.broker.probe import first_server
from kafka_tools.broker.wire import Connection, WireError, api_versions
from kafka_tools.cluster.view import BrokerView, ClusterView, PartitionView
from kafka_tools.errors import InputError

MIN_ISR = "min.insync.replicas"
KAFKA_MIN_ISR_DEFAULT = 1  # Kafka's default when neither the topic nor the brokers set it


@dataclass
class LiveTopics:
    partitions: list[PartitionView]
    missing: list[str]
    notes: list[str] = field(default_factory=list)  # what could not be asked, one line each


def describe_cluster(broker: Broker) -> ClusterView:
    """DescribeCluster (Kafka 2.8+: the brokers' racks too), else the Metadata response's brokers,
    controller and cluster id (0.10.1+), as an older broker gives them: the live brokers either way."""
    from confluent_kafka import KafkaError, KafkaException

    where = f"broker {broker.config.bootstrap}"
    own = broker.own_client
    if own is not None:  # SASL GSSAPI: the Metadata response's brokers (racks too), controller and id
        meta = own.metadata([])
        return ClusterView(
            cluster_id=meta.cluster_id,
            controller=meta.controller,
            brokers=[
                BrokerView(id=n, host=h, port=p, rack=meta.racks.get(n))
                for n, (h, p) in sorted(meta.brokers.items())
            ],
            source=where,
        )
    if not broker.before_0_10:
        admin = broker.admin()
        timeout = broker.config.timeout
        try:
            result = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout + 5)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if not (isinstance(err, KafkaError) and err.code() == KafkaError._UNSUPPORTED_FEATURE):
                raise broker.failure("DescribeCluster", exc) from None
        except TimeoutError:
            raise broker.timed_out("no answer to DescribeCluster") from None
        else:
            nodes = sorted(result.nodes, key=lambda n: n.id)
            return ClusterView(
                cluster_id=result.cluster_id,
                controller=result.controller.id if result.controller is not None else None,
                brokers=[BrokerView(id=n.id, host=n.host, port=n.port, rack=n.rack) for n in nodes],
                source=where,
            )
    try:
        metadata = broker.admin().list_topics(timeout=broker.config.timeout)
    except KafkaException as exc:
        raise broker.failure("cannot read the cluster's metadata", exc) from None
    nodes = sorted(metadata.brokers.values(), key=lambda n: n.id)
    return ClusterView(
        cluster_id=metadata.cluster_id,
        controller=metadata.controller_id if metadata.controller_id >= 0 else None,
        brokers=[BrokerView(id=n.id, host=n.host, port=n.port) for n in nodes],
        source=where,
    )


def _own_client(broker: Broker, host: str, port: int) -> Connection:
    return Connection(host, port, broker.config.timeout, broker.config.security)


def _with_own_client(
    broker: Broker,
    address: tuple[str, int],
    ask: Callable[[Connection, dict | None], object],
) -> object | None:
    """`ask` on ktool's own connection to `address`. None without asking when the brokers are known to
    be older than 0.10 (they have none of these)."""
    if broker.before_0_10:
        return None
    conn = _own_client(broker, *address)
    try:
        return ask(conn, api_versions(conn))
    except WireError as exc:
        raise InputError(f"broker {conn.where}: an answer ktool cannot read ({exc})") from None
    finally:
        conn.close()


def _topics_metadata(broker: Broker) -> dict[str, dict[int, object]]:
    """Every topic without an error: its partitions (leader, replicas, isrs), from librdkafka's Metadata or
    (SASL GSSAPI) ktool's own."""
    from confluent_kafka import KafkaException

    if (own := broker.own_client) is not None:
        return own.metadata().partitions
    try:
        metadata = broker.admin().list_topics(timeout=broker.config.timeout)
    except KafkaException as exc:
        raise broker.failure("cannot list topics", exc) from None
    return {name: dict(t.partitions) for name, t in metadata.topics.items() if not t.error}


def read_topics(broker: Broker, cluster: ClusterView, wanted: list[str] | None) -> LiveTopics:
    """Every partition of the topics `wanted` (all, internal ones included, when None), with statuses."""
    known = _topics_metadata(broker)
    names = sorted(known) if wanted is None else [t for t in dict.fromkeys(wanted) if t in known]
    missing = [] if wanted is None else [t for t in dict.fromkeys(wanted) if t not in known]
    notes: list[str] = []
    min_isr = _min_isr(broker, names, notes)
    details: dict[tuple[str, int], PartitionDetail] = {}
    moving: dict[tuple[str, int], Reassignment] = {}
    if names:
        got = _with_own_client(
            broker,
            first_server(broker.config.bootstrap),
            lambda c, v: describe_topic_partitions(c, v, names),
        )
        details = got or {}  # type: ignore[assignment]
        controller = next((b for b in cluster.brokers if b.id == cluster.controller), None)
        if controller is not None and controller.host and controller.port:
            timeout_ms = int(broker.config.timeout * 1000)
            got = _with_own_client(
                broker,
                (controller.host, controller.port),
                lambda c, v: list_reassignments(c, v, timeout_ms),
            )
            moving = got or {}  # type: ignore[assignment]
    live = {b.id for b in cluster.brokers}
    out = []
    for name in names:
        for index, p in sorted(known[name].items()):
            detail = details.get((name, index))
            move = moving.get((name, index))
            leader = p.leader if p.leader >= 0 else None
            out.append(
                PartitionView(
                    topic=name,
                    partition=index,
                    leader=leader,
                    replicas=list(p.replicas),
                    isr=list(p.isrs),
                    leader_epoch=detail.leader_epoch if detail else None,
                    elr=detail.elr if detail else None,
                    last_known_elr=detail.last_known_elr if detail else None,
                    adding=list(move.adding) if move else [],
                    removing=list(move.removing) if move else [],
                    min_isr=min_isr.get(name),
                    live_leader=leader in live,
                )
            )
    return LiveTopics(out, missing, notes)


def _min_isr(broker: Broker, names: list[str], notes: list[str]) -> dict[str, int | None]:
    """DescribeConfigs: the topic's min.insync.replicas wherever it is set, else Kafka's default 1."""
    try:
        configs = broker.topic_configs(names, [MIN_ISR])
    except InputError as exc:
        if "DescribeConfigs" not in str(exc):
            raise
        notes.append(f"{exc}: min.insync.replicas unknown")
        return {}
    out: dict[str, int | None] = {}
    for name in names:
        value = configs.get(name, {}).get(MIN_ISR)
        out[name] = int(value[0]) if value and value[0].isdigit() else KAFKA_MIN_ISR_DEFAULT
    return out


def read_quorum(broker: Broker) -> Quorum:
    """DescribeQuorum, forwarded by the broker to the active controller."""
    got = _with_own_client(broker, first_server(broker.config.bootstrap), describe_quorum)
    if got is None:
        raise InputError(
            f"broker {broker.config.bootstrap} has no DescribeQuorum: not a KRaft cluster (ZooKeeper-based), "
            "or Kafka before 3.3"
        )
    return got  # type: ignore[return-value]


def replica_sizes(broker: Broker, cluster: ClusterView) -> dict[tuple[str, int], dict[int, int]]:
    """DescribeLogDirs asked of every live broker: each partition's size on each broker holding it."""
    sizes: dict[tuple[str, int], dict[int, int]] = {}
    for b in cluster.brokers:
        if not b.host or not b.port:
            continue
        got = _with_own_client(broker, (b.host, b.port), describe_log_dirs)
        if got is None:
            raise InputError(f"broker {b.host}:{b.port} has no flexible DescribeLogDirs (Kafka 2.4+)")
        for key, size in got.items():  # type: ignore[union-attr]
            sizes.setdefault(key, {})[b.id] = size
    return sizes
