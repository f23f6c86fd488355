"""Racks in a classic group's assignment (KIP-881): a member sends its `client.rack` in its subscription
(ConsumerProtocolSubscription v3 `rack_id`), the leader reads each partition's replica racks from its
metadata (the brokers' `broker.rack`). kafka-clients' range and sticky assignors go rack-aware only when
AbstractPartitionAssignor.useRackAwareAssignment says so: some member has a rack, some replica is on one
of the members' racks, and not every partition has replicas on the same racks as all the others (when
every partition is on every rack, matching racks changes nothing and the rack-blind path runs).

The broker's own assignors for consumer groups read no racks (Kafka 4.4.0: uniform_assignor.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_tools.consumers.classic_member import ClassicMember, TopicPartition

# each partition's replica racks, as the leader's metadata gives them (a replica without a rack adds none)
ReplicaRacks = Mapping[TopicPartition, frozenset[str]]


def member_racks(members: Iterable[ClassicMember]) -> dict[str, str]:
    """Member id -> its rack; an empty rack id is no rack (kafka-clients filters it out)."""
    return {m.member_id: m.rack for m in members if m.rack}


def use_rack_aware(
    consumer_racks: set[str],
    partition_racks: set[str],
    racks_per_partition: Mapping[TopicPartition, set[str]],
) -> bool:
    """AbstractPartitionAssignor.useRackAwareAssignment over the partitions in question."""
    if not consumer_racks or not consumer_racks & partition_racks:
        return False
    return not all(racks == partition_racks for racks in racks_per_partition.values())


def sticky_uses_racks(
    members: Iterable[ClassicMember], partitions: Mapping[str, int], replica_racks: ReplicaRacks
) -> bool:
    """Whether AbstractStickyAssignor's RackInfo turns rack-aware: useRackAwareAssignment over every
    partition of the subscribed topics at once."""
    members = list(members)
    racks = set(member_racks(members).values())
    if not racks:
        return False
    subscribed = {t for m in members for t in m.topics}
    per_partition = {
        (t, p): set(replica_racks.get((t, p), ())) for t in subscribed for p in range(partitions.get(t, 0))
    }
    every = set().union(*per_partition.values()) if per_partition else set()
    return use_rack_aware(racks, every, per_partition)


@dataclass
class StickyRacks:
    """AbstractStickyAssignor.RackInfo: the members' and partitions' racks when the rack-aware path is
    on (empty otherwise), and how many members share a rack with each partition's replicas (counted
    whenever some member sends a rack)."""

    consumer: dict[str, str] = field(default_factory=dict)
    partition: dict[TopicPartition, frozenset[str]] = field(default_factory=dict)
    local_members: dict[TopicPartition, int] = field(default_factory=dict)

    def mismatch(self, member: str, tp: TopicPartition) -> bool:
        rack = self.consumer.get(member)
        return rack is not None and (tp not in self.partition or rack not in self.partition[tp])

    def mates(self, tp: TopicPartition, owner: str, members: list[str]) -> list[str]:
        """`members` on tp's racks when its owner is on one of them (the general path's balancing tries
        a lighter one of those first); none otherwise."""
        racks = self.partition.get(tp, frozenset())
        if self.consumer.get(owner) not in racks:
            return []
        return [m for m in members if self.consumer.get(m) in racks]

    def next_member(self, tp: TopicPartition, members: list[str], first: int) -> int:
        """RackInfo.nextRackConsumer: the index of the next member from `first` (round) on tp's racks."""
        racks = self.partition.get(tp)
        if not racks:
            return -1
        for i in range(len(members)):
            index = (first + i) % len(members)
            if self.consumer.get(members[index]) in racks:
                return index
        return -1


def sticky_rack_info(
    members: list[ClassicMember], all_topics: Mapping[str, int], replica_racks: ReplicaRacks | None
) -> StickyRacks:
    """The RackInfo of `members` over every partition of `all_topics` (the subscribed topics)."""
    racks = member_racks(members)
    if not racks or replica_racks is None:
        return StickyRacks()
    tps = [(t, p) for t in all_topics for p in range(all_topics[t])]
    by_rack: dict[str, int] = {}
    for rack in racks.values():
        by_rack[rack] = by_rack.get(rack, 0) + 1
    partition = {tp: frozenset(replica_racks.get(tp, ())) for tp in tps}
    local = {tp: sum(by_rack.get(r, 0) for r in partition[tp]) for tp in tps}
    if sticky_uses_racks(members, all_topics, replica_racks):
        return StickyRacks(racks, partition, local)
    return StickyRacks(local_members=local)
