"""What the running brokers and KRaft controllers say before a migration, for `check --bootstrap-server`:
each broker's inter.broker.protocol.version and each controller's zookeeper.metadata.migration.enable,
asked of the node itself (DescribeConfigs answers only for the node asked: ConfigHelper), and the
controller quorum as DescribeQuorum gives it (KIP-919: a controller answers both on its own listener).

A ZooKeeper-mode broker's ApiVersions never carries its IBP (FinalizedFeatures leaves metadata.version
out in ZooKeeper mode): where DescribeConfigs is denied, the IBP is said unseen, with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kafka_tools.broker.client import Broker
from kafka_tools.broker.cluster_wire import NodeConfigs, Quorum, describe_node_configs, describe_quorum
from kafka_tools.broker.security import BrokerSecurity
from kafka_tools.broker.wire import Connection, WireError, api_versions
from kafka_tools.errors import InputError

IBP = "inter.broker.protocol.version"
MIGRATION_ENABLE = "zookeeper.metadata.migration.enable"
CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST = 31, 42


@dataclass(slots=True)
class NodeSetting:
    """One config of one node as it runs; `value` None with `unseen` saying why it could not be read."""

    node: int
    where: str
    value: str | None
    unseen: str | None = None


@dataclass(slots=True)
class QuorumSeen:
    """The controller quorum asked at `asked`: its DescribeQuorum (None: `unreachable` says why) and each
    voter's zookeeper.metadata.migration.enable."""

    asked: str
    quorum: Quorum | None
    unreachable: str | None = None
    flags: list[NodeSetting] = field(default_factory=list)


@contextmanager
def _connection(where: str, timeout: float, security: BrokerSecurity | None) -> Iterator[Connection]:
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"{where}: not a host:port address")
    conn = Connection(host, int(port), timeout, security)
    try:
        yield conn
    except WireError as exc:
        raise InputError(f"node {where}: an answer ktool cannot read ({exc})") from None
    finally:
        conn.close()


def _setting(got: NodeConfigs | None, key: str, node: int, where: str) -> NodeSetting:
    if got is None:
        return NodeSetting(node, where, None, "no DescribeConfigs v4 (Kafka before 2.8: cannot migrate)")
    if got.error == CLUSTER_AUTHORIZATION_FAILED:
        detail = f": {got.message}" if got.message else ""
        why = f"DescribeConfigs denied (CLUSTER_AUTHORIZATION_FAILED{detail})"
        return NodeSetting(node, where, None, why)
    if got.error:
        return NodeSetting(
            node, where, None, f"DescribeConfigs error {got.error}: {got.message or ''}".rstrip()
        )
    if key not in got.values:
        return NodeSetting(node, where, None, f"{key} not in its configuration (a release without it)")
    return NodeSetting(node, where, got.values[key])


def broker_ibps(broker: Broker) -> list[NodeSetting]:
    """Each live broker's inter.broker.protocol.version, asked of it on the listener DescribeCluster names."""
    from kafka_tools.cluster.live import describe_cluster

    out = []
    for b in describe_cluster(broker).brokers:
        where = f"{b.host}:{b.port}"
        try:
            with _connection(where, broker.config.timeout, broker.config.security) as conn:
                got = describe_node_configs(conn, api_versions(conn), b.id, [IBP])
        except InputError as exc:
            out.append(NodeSetting(b.id, where, None, str(exc)))
            continue
        out.append(_setting(got, IBP, b.id, where))
    return out


def controller_quorum(bootstrap: str, timeout: float, security: BrokerSecurity | None) -> QuorumSeen:
    """DescribeQuorum of the first controller of `bootstrap` that answers, then each voter's
    zookeeper.metadata.migration.enable asked at its endpoint (DescribeQuorum v2) or at each address
    given (the one that is that voter answers; the others say "Unexpected broker id")."""
    given = [a.strip() for a in bootstrap.split(",") if a.strip()]
    quorum, reasons = None, []
    for where in given:
        try:
            with _connection(where, timeout, security) as conn:
                quorum = describe_quorum(conn, api_versions(conn))
        except InputError as exc:
            reasons.append(str(exc))
            continue
        if quorum is not None:
            break
        reasons.append(f"node {where}: no DescribeQuorum (not a KRaft controller, or Kafka before 3.3)")
    if quorum is None:
        return QuorumSeen(bootstrap, None, "; ".join(reasons))
    seen = QuorumSeen(bootstrap, quorum)
    for voter in sorted(v.node for v in quorum.voters):
        endpoints = [e.split("://", 1)[-1] for e in quorum.endpoints.get(voter, [])]
        seen.flags.append(_voter_flag(voter, list(dict.fromkeys(endpoints + given)), timeout, security))
    return seen


def _voter_flag(
    voter: int, addresses: list[str], timeout: float, security: BrokerSecurity | None
) -> NodeSetting:
    reasons = []
    for where in addresses:
        try:
            with _connection(where, timeout, security) as conn:
                got = describe_node_configs(conn, api_versions(conn), voter, [MIGRATION_ENABLE])
        except InputError as exc:
            reasons.append(str(exc))
            continue
        if got is not None and got.error == INVALID_REQUEST:
            continue  # another controller: it answers for its own id only
        return _setting(got, MIGRATION_ENABLE, voter, where)
    why = (
        "; ".join(reasons)
        or "no controller address given is this voter (give each with --bootstrap-controller)"
    )
    return NodeSetting(voter, ",".join(addresses), None, why)
