"""Rebalance plans for the groups Kafka coordinates (issue 52): the next assignment as the group's own
assignor will compute it, from the live group (members, subscriptions, what each owns now) and what-ifs
(a member joins or leaves, a topic grows), against who owns each partition now.

Classic groups are assigned by their leader, a client: `range`, `roundrobin`, `sticky`,
`cooperative-sticky` as kafka-clients runs them, `range`, `roundrobin`, `cooperative-sticky` as librdkafka
does (it has no eager `sticky`), the protocol the members agreed on (DescribeGroups). Consumer groups
(KIP-848) are assigned by the broker (`group.consumer.assignors`, ConsumerGroupDescribe names the one in
use). The plan says which assignor and implementation it ran, and why; what ktool does not model is
refused in one line (exit 1), never guessed.

Racks (KIP-881): when a classic group's members send `client.rack`, the partitions' replica racks are read
from the brokers (Metadata's replicas, DescribeCluster's `broker.rack`) and kafka-clients' range and
sticky assignors are run with them (rack_awareness.py); a consumer group's members' racks change nothing
(the broker's assignors read none in Kafka 4.4.0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_tools.consumers.assignors import AssignmentError
from kafka_tools.consumers.classic_member import ClassicMember, TopicPartition, assigned_partitions
from kafka_tools.consumers.classic_member import member_from_metadata as _member
from kafka_tools.consumers.coordinated import group_view
from kafka_tools.consumers.groups import GroupNotFoundError
from kafka_tools.consumers.member_order import BROKER, DESCRIBED, JAVA, LIBRDKAFKA
from kafka_tools.consumers.rack_awareness import ReplicaRacks
from kafka_tools.consumers.range_assignor import range_assign
from kafka_tools.consumers.rdkafka_sticky import cooperative_sticky_assign, refuse_racks
from kafka_tools.consumers.rebalance import Move, RebalancePlan
from kafka_tools.consumers.roundrobin_assignor import roundrobin_assign
from kafka_tools.consumers.sticky_assignor import COOPERATIVE_STICKY, STICKY, sticky_assign
from kafka_tools.consumers.uniform_assignor import UNIFORM, java_uuid_order, uniform_assign
from kafka_tools.errors import InputError, UsageError
from kafka_tools.format.java_hash import java_hashmap_order, java_string_hash, java_string_key
from kafka_tools.format.plural import plural

if TYPE_CHECKING:
    from kafka_tools.broker.client import KafkaGroup
    from kafka_tools.broker.group_requests import ClassicGroup

CLASSIC = "classic"
CONSUMER = "consumer"
CLASSIC_ASSIGNORS = ("range", "roundrobin", STICKY, COOPERATIVE_STICKY)
BROKER_ASSIGNORS = ("uniform", "range")


@dataclass
class LiveGroup:
    """A group as its coordinator has it now: type, the assignor in use, members and what they own."""

    group: str
    type: str
    assignor: str
    members: list[ClassicMember]
    current: dict[TopicPartition, str]
    partitions: dict[str, int]
    targets: dict[str, list[TopicPartition]] = field(default_factory=dict)  # a consumer group's
    state: str = "STABLE"
    topic_ids: dict[str, str | tuple[int, int]] = field(default_factory=dict)
    # each partition's replica racks, read when a classic group's members send racks (KIP-881)
    replica_racks: dict[TopicPartition, frozenset[str]] | None = None


def read_live_group(broker, group: str) -> LiveGroup:
    """The group from its coordinator (DescribeGroups with each member's metadata for a classic group,
    ConsumerGroupDescribe for a consumer group) and the partition counts of the topics it subscribes to."""
    coordinated = broker.coordinated_group(group)
    view = group_view(coordinated)
    if not view.known:
        raise GroupNotFoundError(f"group {group} not found: its coordinator does not know it")
    targets: dict[str, list[TopicPartition]] = {}
    if view.type == CONSUMER:
        assignor, members, current, targets = _consumer_group(broker, group)
    else:
        assignor, members, current = _classic_group(coordinated.classic, view)
    topics = broker.topics()
    wanted = {t for m in members for t in m.topics} | {t for t, _ in current}
    partitions = {t: len(topics[t]) for t in sorted(wanted) if t in topics}
    live = LiveGroup(group, view.type or CLASSIC, assignor, members, current, partitions, targets, view.state)
    if assignor == UNIFORM:
        live.topic_ids = dict(broker.topic_ids(partitions))
    if live.type == CLASSIC and assignor != "roundrobin" and any(m.rack for m in members):
        live.replica_racks = broker.replica_racks(partitions)  # roundrobin reads no racks
    return live


def _classic_group(
    classic: ClassicGroup | None, view: KafkaGroup
) -> tuple[str, list[ClassicMember], dict[TopicPartition, str]]:
    """The protocol the members agreed on, each member's subscription (its JoinGroup metadata) and what
    each owns now (its SyncGroup assignment), as DescribeGroups returned them."""
    if classic is None:
        return "", [], {}
    members, current = [], {}
    for m in classic.members:
        members.append(_member(m.member_id, m.metadata, m.client_id, m.instance_id))
        current.update((tp, m.member_id) for tp in assigned_partitions(m.member_id, m.assignment))
    return classic.protocol, members, current


def _consumer_group(broker, group: str) -> tuple[str, list[ClassicMember], dict[TopicPartition, str], dict]:
    from kafka_tools.broker.group_requests import consumer_group_describe
    from kafka_tools.broker.probe import first_server

    if broker.config.secured:
        raise InputError(
            f"group {group}: a consumer group's subscriptions come from ConsumerGroupDescribe, which ktool "
            "sends in plaintext only; this cluster is reached over TLS or SASL"
        )
    described = consumer_group_describe(first_server(broker.config.bootstrap), group, broker.config.timeout)
    if described is None or described.error:
        raise GroupNotFoundError(f"group {group} not found: ConsumerGroupDescribe does not know it")
    members, current, targets = [], {}, {}
    for m in described.members:
        members.append(ClassicMember(m.member_id, m.subscribed_topics, m.instance_id, list(m.assignment)))
        members[-1].client_id = m.client_id
        current.update((tp, m.member_id) for tp in m.assignment)
        targets[m.member_id] = list(m.target_assignment)
    return described.assignor, members, current, targets


def leader_library(members: Iterable[ClassicMember]) -> tuple[str, str]:
    """(implementation, why) of the classic group's leader, from the members' client ids: the leader is
    one of them and DescribeGroups does not say which; every default id names its library."""
    ids = {m.client_id for m in members}
    java = {i for i in ids if i.startswith("consumer-")}  # kafka-clients: consumer-<group>-<n>
    rdkafka = {i for i in ids if i == "rdkafka"}  # librdkafka's default client.id
    if ids and ids == rdkafka:
        return LIBRDKAFKA, "every member's client id is librdkafka's default 'rdkafka'"
    if ids and ids == java:
        return JAVA, "every member's client id is kafka-clients' default 'consumer-<group>-<n>'"
    return JAVA, (
        "the members' client ids do not all name one library (the leader could be any member): "
        "kafka-clients assumed; --implementation librdkafka plans the other"
    )


def plan_live_group(
    live: LiveGroup,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    partition_counts: Mapping[str, int] | None = None,
    strategy: str | None = None,
    implementation: str | None = None,
) -> RebalancePlan:
    """The plan: the group after the what-ifs, assigned as its assignor will assign it."""
    partitions = dict(live.partitions)
    for topic, count in (partition_counts or {}).items():
        if count < partitions.get(topic, 0):
            raise UsageError(
                f"--partitions {topic}={count}: a topic cannot shrink (it has {partitions[topic]})"
            )
        partitions[topic] = count
    members = _apply(live, list(add), list(remove))
    assignor, reasons = _assignor(live, strategy)
    impl, why = _implementation(live, implementation)
    reasons.append(f"implementation: {DESCRIBED[impl]}, because {why}")
    warnings: list[str] = []
    racks = _racks(live, members, partitions, assignor, impl, reasons, warnings)
    if assignor == UNIFORM:
        proposed = _uniform(live, members, partitions, warnings)
    else:
        rejoining = _as_rejoining(live, members, assignor, reasons)
        proposed = _assign(assignor, impl, rejoining, partitions, warnings, racks=racks)
    return _plan(live, members, partitions, proposed, assignor, impl, reasons, warnings)


def _apply(live: LiveGroup, add: list[str], remove: list[str]) -> list[ClassicMember]:
    ids = {m.member_id for m in live.members}
    unknown = sorted(set(remove) - ids)
    if unknown:
        raise UsageError(f"cannot remove {', '.join(unknown)}: not a member of group {live.group}")
    members = [m for m in live.members if m.member_id not in set(remove)]
    topics = tuple(sorted({t for m in live.members for t in m.topics}, key=java_string_key))
    for member_id in add:
        if member_id in {m.member_id for m in members}:
            raise UsageError(f"cannot add {member_id}: already a member of group {live.group}")
        if not topics:
            raise UsageError(f"cannot add {member_id}: group {live.group} subscribes to no topic to copy")
        members.append(ClassicMember(member_id, topics))
    if not members:
        raise AssignmentError(f"group {live.group} would have no member: nothing to assign")
    return members


def _assignor(live: LiveGroup, strategy: str | None) -> tuple[str, list[str]]:
    known = CLASSIC_ASSIGNORS if live.type == CLASSIC else BROKER_ASSIGNORS
    if strategy:
        if strategy not in known:
            raise UsageError(f"--strategy {strategy}: a {live.type} group's assignors are {', '.join(known)}")
        return strategy, [f"assignor: {strategy}, as --strategy says"]
    if live.type == CLASSIC:
        why = "the protocol the group's members agreed on (DescribeGroups)"
    else:
        why = "the broker's assignor for the group (ConsumerGroupDescribe, group.consumer.assignors)"
    if live.assignor not in known:
        raise AssignmentError(
            f"group {live.group} uses assignor {live.assignor or '(none yet)'}: "
            f"ktool plans {', '.join(known)}"
        )
    return live.assignor, [f"assignor: {live.assignor}, {why}"]


def _implementation(live: LiveGroup, override: str | None) -> tuple[str, str]:
    """The leader is one of today's members (a member added by a what-if joins a group that has one)."""
    if live.type == CONSUMER:
        if override:
            raise UsageError(
                f"--implementation {override}: group {live.group} is a consumer group, assigned by the broker"
            )
        return BROKER, "a consumer group (KIP-848) is assigned by its coordinator"
    if override:
        return override, "--implementation says so"
    return leader_library(live.members)


def _racks(
    live: LiveGroup,
    members: list[ClassicMember],
    partitions: dict[str, int],
    assignor: str,
    impl: str,
    reasons: list[str],
    warnings: list[str],
) -> ReplicaRacks | None:
    """The replica racks the assignor reads, None when racks change nothing; refused where they would
    decide and ktool cannot say how."""
    racked = sorted({m.rack for m in members if m.rack})
    if not racked:
        return None
    if live.type == CONSUMER or assignor == "roundrobin":
        owner = "the broker's" if live.type == CONSUMER else "the"
        reasons.append(f"racks: the members' racks change nothing: {owner} {assignor} assignor reads none")
        return None
    if impl == LIBRDKAFKA and assignor == COOPERATIVE_STICKY:
        refuse_racks(members)  # whatever the replicas' racks: its rack-aware path is not modelled
    if live.replica_racks is None:
        raise AssignmentError(
            f"group {live.group}: members send racks (KIP-881) and the partitions' replica racks are unknown"
        )
    subscribed = {t for m in members for t in m.topics}
    grown = sorted(t for t in subscribed if partitions.get(t, 0) > live.partitions.get(t, 0))
    if grown:
        raise AssignmentError(
            f"--partitions {', '.join(grown)}: members send racks (KIP-881), and a partition that does not "
            "exist yet has no replicas whose racks the assignor would match"
        )
    replica = {r for tp, rs in live.replica_racks.items() if tp[0] in subscribed for r in rs}
    if impl == LIBRDKAFKA and assignor == "range" and replica & set(racked):
        raise AssignmentError(
            "the group's leader runs librdkafka's range assignor, whose rack-aware path (librdkafka 2.3+) "
            f"ktool does not model, and members' racks ({', '.join(racked)}) hold replicas"
        )
    reasons.append(
        f"racks: members send {', '.join(racked)}; replicas are on {', '.join(sorted(replica)) or 'no rack'} "
        "(the brokers' broker.rack), as kafka-clients' rack-aware assignors match them (KIP-881)"
    )
    warnings += [
        f"member {m.member_id} is added without a rack: the others' racks are matched, not its own"
        for m in members
        if not m.rack and m.member_id not in {x.member_id for x in live.members}
    ]
    return live.replica_racks


def _as_rejoining(
    live: LiveGroup, members: list[ClassicMember], assignor: str, reasons: list[str]
) -> list[ClassicMember]:
    """What the sticky assignors will read at the next rebalance. In a stable group every member rejoins
    owning what it was given (SyncGroup) in the one current generation: that, not its last JoinGroup
    metadata (older by a rebalance when a cooperative group finished in two), is what it owns then. A
    group mid-rebalance is planned from the metadata its members joined with."""
    if assignor not in (STICKY, COOPERATIVE_STICKY):
        return members
    if live.state != "STABLE":
        reasons.append(f"owners: the members' JoinGroup metadata (the group is {live.state.lower()})")
        return members
    reasons.append("owners: what each member holds now, in the current generation (the group is stable)")
    held: dict[str, list[TopicPartition]] = {}
    for tp, member_id in sorted(live.current.items()):
        held.setdefault(member_id, []).append(tp)
    return [
        ClassicMember(m.member_id, m.topics, m.instance_id, held.get(m.member_id, []), 0, m.rack, m.client_id)
        for m in members
    ]


def _assign(
    assignor: str,
    impl: str,
    members: list[ClassicMember],
    partitions: dict[str, int],
    warnings: list[str],
    reading: str = "",
    racks: ReplicaRacks | None = None,
) -> dict[str, list[TopicPartition]]:
    if assignor == "range":
        return range_assign(members, partitions, impl, racks)
    if assignor == "roundrobin":
        return roundrobin_assign(members, partitions, impl)
    if assignor in (STICKY, COOPERATIVE_STICKY) and impl == JAVA:
        result = sticky_assign(members, partitions, reading or assignor, racks)
        warnings += result.warnings
        if assignor == COOPERATIVE_STICKY and result.transferring:
            warnings.append(
                f"{plural(len(result.transferring), 'partition')} change owner: revoked in this rebalance, "
                "assigned in the next one the revoking members start"
            )
        return result.assignment
    if assignor == COOPERATIVE_STICKY:
        settled = cooperative_sticky_assign(members, partitions)
        if settled.transferring:
            warnings.append(
                f"{plural(len(settled.transferring), 'partition')} change owner: revoked in this rebalance, "
                "assigned in the next one the revoking members start "
                f"({plural(settled.rebalances, 'rebalance')} in all)"
            )
        return settled.assignment
    # rdkafka_assignor.c registers range, roundrobin and cooperative-sticky: the client refuses `sticky`
    raise AssignmentError(
        "librdkafka has no eager sticky assignor (its consumers refuse "
        "partition.assignment.strategy=sticky): a group on sticky is led by another library; "
        "--implementation java plans kafka-clients'"
    )


def _uniform(
    live: LiveGroup, members: list[ClassicMember], partitions: dict[str, int], warnings: list[str]
) -> dict[str, list[TopicPartition]]:
    """The broker's uniform assignor over each member's target assignment (a member added by a what-if
    has none), in the orders of the broker's HashMaps. A member's topics are taken in the order the broker
    lists them: its map's own order, which ktool cannot recompute (the assignor sizes the maps it writes
    to their entries, and a map replayed from its record has 16 buckets)."""
    topics = sorted({t for m in members for t in m.topics})
    unknown = [t for t in topics if t in partitions and t not in live.topic_ids]
    if unknown:
        raise InputError(
            f"group {live.group}: no topic id for {', '.join(unknown)} (DescribeTopicPartitions)"
        )
    ids = [m.member_id for m in members]
    order, collided = java_hashmap_order(ids, java_string_hash)
    if collided:
        warnings.append(
            "two members share a bucket of the broker's HashMap: their order is the order they joined, "
            "which ktool does not see; the owners of partitions at the quota edge may differ"
        )
    targets = {}
    for m in members:
        by_topic: dict[str, list[int]] = {}  # topics in the order ConsumerGroupDescribe lists them
        for t, p in live.targets.get(m.member_id, []):
            by_topic.setdefault(t, []).append(p)
        targets[m.member_id] = list(by_topic.items())
    subscribed = [t for t in topics if t in partitions]
    return uniform_assign(
        order,
        {m.member_id: m.topics for m in members},
        targets,
        partitions,
        java_uuid_order(live.topic_ids, subscribed),
        live.topic_ids,
    )


def _plan(
    live: LiveGroup,
    members: list[ClassicMember],
    partitions: dict[str, int],
    proposed: dict[str, list[TopicPartition]],
    assignor: str,
    impl: str,
    reasons: list[str],
    warnings: list[str],
) -> RebalancePlan:
    owner = {tp: member_id for member_id, tps in proposed.items() for tp in tps}
    in_play = {(t, p) for t, n in partitions.items() for p in range(n)}
    keys = sorted(in_play | live.current.keys(), key=lambda tp: (java_string_key(tp[0]), tp[1]))
    current = {tp: live.current.get(tp) for tp in keys}
    new = {tp: owner.get(tp) for tp in keys}
    moves = [Move(t, p, current[(t, p)], new[(t, p)]) for (t, p) in keys if current[(t, p)] != new[(t, p)]]
    subscribed = {t for m in members for t in m.topics}
    return RebalancePlan(
        current=current,
        proposed=new,
        moves=moves,
        unassigned=[tp for tp in keys if tp in in_play and tp[0] in subscribed and new[tp] is None],
        idle_threads=[],
        idle_consumers=sorted(
            (m.member_id for m in members if not proposed.get(m.member_id)), key=java_string_key
        ),
        strategy=assignor,
        warnings=warnings,
        implementation=impl,
        reasons=reasons,
    )
