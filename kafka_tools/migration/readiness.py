"""What KIP-866 and Kafka 3.9's operations guide (and the migration's own code) make blocking or risky
before a ZooKeeper cluster is migrated to KRaft, each a Finding with the reason.

Read from ZooKeeper (`zk_state.py`, the brokers' registrations, `/controller`) and, when log dirs are
given, their meta.properties: the KRaft controllers must be formatted with ZooKeeper's cluster id."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_tools.log.checks.findings import Finding, Severity
from kafka_tools.migration.zk_state import DELETE_TOPICS, MIGRATION, PREFERRED_ELECTION, REASSIGN, ZkState
from kafka_tools.zk.layout import Broker
from kafka_tools.zk.reader import BROKER_IDS, BROKER_TOPICS, CLUSTER_ID, CONTROLLER

if TYPE_CHECKING:
    from kafka_tools.migration.live_nodes import NodeSetting, QuorumSeen

# KafkaConfig refuses zookeeper.metadata.migration.enable below IBP 3.4 (isMigrationSupported)
MIGRATION_MIN_IBP = (3, 4)

# /brokers/ids/N's format gained `features` (KIP-584) in 2.7: an older format is an older broker, and
# the migration needs every broker on a 3.x release that runs it (3.4+; 3.9 the last).
FEATURES_REGISTRATION = 5


@dataclass(slots=True)
class NodeClusterId:
    """A log dir's meta.properties cluster.id (None: it has none)."""

    path: str
    cluster_id: str | None


def readiness(
    state: ZkState,
    brokers: Iterable[Broker],
    controller: dict | None,
    nodes: Iterable[NodeClusterId] = (),
) -> list[Finding]:
    """Every blocking (error), risky (warning) or noteworthy (info) condition, in a stable order."""
    out: list[Finding] = []
    for topic in state.topics_pending_deletion:
        out.append(Finding(
            kind="topic-pending-deletion", severity=Severity.WARNING, file=f"{DELETE_TOPICS}/{topic}",
            message=f"topic {topic} is marked for deletion: the migration does not copy a topic pending "
            "deletion (ZkTopicMigrationClient), its logs stay on the brokers until they reconcile; let the "
            "deletion finish before migrating", repairable=False,
        ))  # fmt: skip
    for topic, partitions in sorted(state.reassigning.items()):
        out.append(Finding(
            kind="reassignment-in-flight", severity=Severity.ERROR, file=REASSIGN,
            message=f"a partition reassignment is in flight for {topic} (partitions "
            f"{','.join(map(str, sorted(partitions)))}): the migration copies replicas as ZooKeeper holds "
            "them mid-move; let it complete (kafka-reassign-partitions.sh --verify) before migrating",
            repairable=False,
        ))  # fmt: skip
    for name, topic in sorted(state.topics.items()):
        moving = sorted(
            p for p, part in topic.partitions.items() if part.adding_replicas or part.removing_replicas
        )
        if moving and name not in state.reassigning:
            out.append(Finding(
                kind="reassignment-in-flight", severity=Severity.ERROR, file=f"{BROKER_TOPICS}/{name}",
                message=f"partitions {','.join(map(str, moving))} of {name} have adding/removing replicas (a "
                "reassignment through the Admin API, KIP-455): let it complete before migrating",
                repairable=False,
            ))  # fmt: skip
    if state.preferred_election:
        out.append(Finding(
            kind="preferred-election-in-flight", severity=Severity.WARNING, file=PREFERRED_ELECTION,
            message="a preferred-leader election is in flight: the ZooKeeper controller has not finished "
            "it; wait until the znode is gone before migrating", repairable=False,
        ))  # fmt: skip
    for broker in sorted(brokers, key=lambda b: b.id):
        if broker.version is None or broker.version < FEATURES_REGISTRATION:
            out.append(Finding(
                kind="broker-too-old", severity=Severity.ERROR, file=f"{BROKER_IDS}/{broker.id}",
                message=f"broker {broker.id} registered in format v{broker.version} (Kafka before 2.7): "
                "every broker must run a release that can migrate (3.4 to 3.9) with the same "
                "inter.broker.protocol.version", repairable=False,
            ))  # fmt: skip
    out += _cluster_ids(state, nodes)
    out += _migration_begun(state, controller)
    return out


def _cluster_ids(state: ZkState, nodes: Iterable[NodeClusterId]) -> list[Finding]:
    out = []
    if state.cluster_id is None:
        out.append(Finding(
            kind="no-cluster-id", severity=Severity.ERROR, file=CLUSTER_ID, repairable=False,
            message="no cluster id in ZooKeeper: the KRaft controllers are formatted with it "
            "(kafka-storage.sh format --cluster-id)",
        ))  # fmt: skip
        return out
    for node in nodes:
        if node.cluster_id != state.cluster_id:
            out.append(Finding(
                kind="cluster-id-mismatch", severity=Severity.ERROR, file=node.path, repairable=False,
                message=f"meta.properties has cluster.id {node.cluster_id}, ZooKeeper {state.cluster_id}: "
                "the KRaft controllers must be formatted with ZooKeeper's cluster id, or the brokers "
                "refuse them", expected=state.cluster_id, actual=node.cluster_id,
            ))  # fmt: skip
    return out


def _migration_begun(state: ZkState, controller: dict | None) -> list[Finding]:
    out = []
    if state.migration is not None and state.migration.kraft_metadata_offset < 0:
        out.append(Finding(
            kind="migration-waiting", severity=Severity.INFO, file=MIGRATION, repairable=False,
            message="the KRaft controllers have created /migration but copied nothing yet (offset -1): "
            "they wait for every ZooKeeper-mode broker to restart with the migration flags",
        ))  # fmt: skip
    elif state.migration is not None:
        m = state.migration
        out.append(Finding(
            kind="migration-begun", severity=Severity.INFO, file=MIGRATION, repairable=False,
            message=f"a migration has begun: KRaft controller {m.kraft_controller_id} (epoch "
            f"{m.kraft_controller_epoch}) has written ZooKeeper up to metadata offset "
            f"{m.kraft_metadata_offset}; `ktool kraft-migration diff` compares the two",
        ))  # fmt: skip
    # ControllerZNode v2 writes kraftControllerEpoch always: -1 from a ZooKeeper-mode controller
    if controller is not None and controller.get("kraftControllerEpoch", -1) not in (-1, None):
        out.append(Finding(
            kind="kraft-controller-active", severity=Severity.INFO, file=CONTROLLER, repairable=False,
            message=f"/controller is held by KRaft controller {controller.get('brokerid')}: the cluster is "
            "in dual write",
        ))  # fmt: skip
    return out


def _ibp_release(ibp: str) -> tuple[int, ...]:
    """ "3.9-IV0" -> (3, 9); "0.10.2-IV0" -> (0, 10): the release part an IBP starts with."""
    head = ibp.split("-")[0].split(".")
    return tuple(int(p) for p in head[:2] if p.isdigit())


def broker_protocol_findings(ibps: Iterable[NodeSetting]) -> list[Finding]:
    """Each broker's inter.broker.protocol.version against the migration's minimum, and all alike."""
    out = []
    seen: dict[str, list[int]] = {}
    for b in sorted(ibps, key=lambda b: b.node):
        where = f"broker {b.node} ({b.where})"
        if b.value is None:
            out.append(Finding(
                kind="ibp-unseen", severity=Severity.WARNING, file=where, repairable=False,
                message=f"inter.broker.protocol.version cannot be seen: {b.unseen}; a ZooKeeper-mode "
                "broker's ApiVersions does not carry it, check its server.properties",
            ))  # fmt: skip
            continue
        seen.setdefault(b.value, []).append(b.node)
        if _ibp_release(b.value) < MIGRATION_MIN_IBP:
            out.append(Finding(
                kind="ibp-too-old", severity=Severity.ERROR, file=where, repairable=False,
                message=f"inter.broker.protocol.version {b.value}: Kafka refuses "
                "zookeeper.metadata.migration.enable below 3.4, and the 3.9 guide asks every broker on "
                "3.9's software and IBP before migrating (a roll to the new IBP first)",
                expected="3.4 or newer", actual=b.value,
            ))  # fmt: skip
    if len(seen) > 1:
        which = "; ".join(f"{v} on {','.join(map(str, nodes))}" for v, nodes in sorted(seen.items()))
        out.append(Finding(
            kind="ibp-mismatch", severity=Severity.ERROR, file="brokers", repairable=False,
            message=f"the brokers run different inter.broker.protocol.version ({which}): the metadata "
            "version cannot change while the migration runs (3.9 guide, Limitations); roll them all "
            "to one IBP first",
        ))  # fmt: skip
    return out


def quorum_findings(seen: QuorumSeen) -> list[Finding]:
    """The controller quorum reachable, and each voter running with zookeeper.metadata.migration.enable."""
    where = f"controllers {seen.asked}"
    if seen.quorum is None:
        return [Finding(
            kind="controller-quorum-unreachable", severity=Severity.ERROR, file=where, repairable=False,
            message=f"the controller quorum does not answer DescribeQuorum ({seen.unreachable}): the KRaft "
            "controllers must be running, formatted with ZooKeeper's cluster id, before the brokers are "
            "restarted with the migration flags",
        )]  # fmt: skip
    q = seen.quorum
    voters = ",".join(str(v.node) for v in sorted(q.voters, key=lambda v: v.node))
    enabled = ",".join(str(f.node) for f in seen.flags if (f.value or "").lower() == "true")
    out = [Finding(
        kind="controller-quorum", severity=Severity.INFO, file=where, repairable=False,
        message=f"the controller quorum answers: leader {q.leader}, epoch {q.leader_epoch}, voters {voters}"
        f"; zookeeper.metadata.migration.enable=true on {enabled or 'none'}",
    )]  # fmt: skip
    for flag in seen.flags:
        at = f"controller {flag.node} ({flag.where})"
        if flag.value is None:
            out.append(Finding(
                kind="migration-flag-unseen", severity=Severity.WARNING, file=at, repairable=False,
                message=f"zookeeper.metadata.migration.enable cannot be seen: {flag.unseen}",
            ))  # fmt: skip
        elif flag.value.lower() != "true":
            out.append(Finding(
                kind="migration-not-enabled", severity=Severity.ERROR, file=at, repairable=False,
                message=f"zookeeper.metadata.migration.enable is {flag.value}: every KRaft controller must "
                "run with it true (and zookeeper.connect) to load ZooKeeper's metadata and dual-write",
                expected="true", actual=flag.value,
            ))  # fmt: skip
    return out
