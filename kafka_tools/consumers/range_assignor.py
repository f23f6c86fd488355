"""The range assignor of a classic group's leader (`range`; kafka-clients RangeAssignor, librdkafka
rdkafka_range_assignor.c): per topic, the members subscribed to it in the leader's member order
(member_order.py: the only place the two libraries differ), partitions by number; member i takes
P / C partitions from `(P / C) * i + min(i, P % C)`, the first P % C members one more.

The broker's `range` for consumer groups (KIP-848; group-coordinator RangeAssignor, apache/kafka as of
October 2024) deals the same ranges member by member, members in kafka-clients' order: the same result.
It reads no racks (Kafka 4.4.0's bytecode never asks SubscribedTopicDescriber.racksForPartition).

Racks (KIP-881, kafka-clients 3.5+): when useRackAwareAssignment holds for some topic (rack_awareness.py),
kafka-clients first matches racks: topics with the same subscribers and the same partition count are
assigned together, partition by partition, each to the first subscriber (in member order) on one of every
such topic's replica racks with room left in each; a topic alone gives each subscriber in turn up to its
room of the partitions on its rack (a member without a rack takes any). Room is the topic's per-member
quota: P / C, one more while extra slots remain. The usual ranges then fill what is left. librdkafka's own
rack-aware range (2.3+) is not modelled: the plan refuses it when racks would decide.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kafka_tools.consumers.classic_member import ClassicMember, TopicPartition
from kafka_tools.consumers.member_order import JAVA, ordered
from kafka_tools.consumers.rack_awareness import ReplicaRacks, member_racks, use_rack_aware


def range_assign(
    members: list[ClassicMember],
    partitions: Mapping[str, int],
    implementation: str,
    replica_racks: ReplicaRacks | None = None,
) -> dict[str, list[TopicPartition]]:
    """Member id -> its partitions; topics without metadata (absent from `partitions`) get none.
    `replica_racks`: each partition's replica racks, for kafka-clients' rack-aware path."""
    in_order = ordered(members, implementation)
    if implementation == JAVA and replica_racks is not None and member_racks(members):
        topics = [
            _TopicState(t, partitions, in_order, replica_racks) for t in _subscribed(members, partitions)
        ]
        if any(t.needs_racks for t in topics):
            return _rack_aware(members, topics)
    assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    for topic in sorted({t for m in members for t in m.topics}):
        count = partitions.get(topic, 0)
        subscribed = [m for m in in_order if topic in m.topics]
        if not count or not subscribed:
            continue
        per_member, extra = divmod(count, len(subscribed))
        for i, member in enumerate(subscribed):
            start = per_member * i + min(i, extra)
            size = per_member + (1 if i < extra else 0)
            assignment[member.member_id] += [(topic, p) for p in range(start, start + size)]
    return assignment


def _subscribed(members: list[ClassicMember], partitions: Mapping[str, int]) -> list[str]:
    return sorted(t for t in {t for m in members for t in m.topics} if partitions.get(t, 0))


class _TopicState:
    """RangeAssignor.TopicAssignmentState: one topic's subscribers in member order, their racks, the
    partitions still unassigned and each subscriber's room."""

    def __init__(
        self, topic: str, partitions: Mapping[str, int], in_order: list[ClassicMember], racks: ReplicaRacks
    ) -> None:
        self.topic = topic
        subscribed = [m for m in in_order if topic in m.topics]
        self.consumers = {m.member_id: m.rack or None for m in subscribed}
        count = partitions[topic]
        self.unassigned = [(topic, p) for p in range(count)]
        self.assigned = dict.fromkeys(self.consumers, 0)
        self.per_member, self.extra = divmod(count, len(subscribed))
        consumer_racks = {r for r in self.consumers.values() if r}
        self.partition_racks: dict[TopicPartition, set[str]] = {}
        if consumer_racks:
            self.partition_racks = {tp: set(racks.get(tp, ())) for tp in self.unassigned}
        every = set().union(*self.partition_racks.values()) if self.partition_racks else set()
        self.needs_racks = use_rack_aware(consumer_racks, every, self.partition_racks)

    def racks_match(self, consumer: str, tp: TopicPartition) -> bool:
        rack = self.consumers[consumer]
        return rack is None or rack in self.partition_racks.get(tp, ())

    def room(self, consumer: str) -> int:
        return max(0, self.per_member + (1 if self.extra > 0 else 0) - self.assigned[consumer])

    def take(
        self, consumer: str, tps: list[TopicPartition], assignment: dict[str, list[TopicPartition]]
    ) -> None:
        assignment[consumer] += tps
        self.assigned[consumer] += len(tps)
        if self.assigned[consumer] > self.per_member:
            self.extra -= 1
        taken = set(tps)
        self.unassigned = [tp for tp in self.unassigned if tp not in taken]

    def assign_ranges(
        self, may: Callable[[str, TopicPartition], bool], assignment: dict[str, list[TopicPartition]]
    ) -> None:
        for consumer in self.consumers:
            if not self.unassigned:
                break
            tps = [tp for tp in self.unassigned if may(consumer, tp)][: self.room(consumer)]
            if tps:
                self.take(consumer, tps, assignment)


def _rack_aware(members: list[ClassicMember], topics: list[_TopicState]) -> dict[str, list[TopicPartition]]:
    """RangeAssignor.assignPartitions with rack matching, then the usual ranges over what is left.
    Topics are grouped by their subscribers (with racks) and, within, by partition count as Java's
    `partitionRacks.size()` (0 when no subscriber has a rack): groups share no topic, so their order
    does not change the result."""
    assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    groups: dict[tuple, list[_TopicState]] = {}
    for state in topics:
        key = (tuple(state.consumers.items()), len(state.partition_racks))
        groups.setdefault(key, []).append(state)
    for (_, count), states in groups.items():
        if len(states) > 1:
            _co_partitioned(states, count, assignment)
        elif states[0].needs_racks:
            states[0].assign_ranges(states[0].racks_match, assignment)
    for state in topics:
        state.assign_ranges(lambda c, tp: True, assignment)
    return assignment


def _co_partitioned(
    states: list[_TopicState], count: int, assignment: dict[str, list[TopicPartition]]
) -> None:
    """assignCoPartitionedWithRackMatching: partition p of every topic to the first subscriber whose rack
    matches p's replicas in each and who has room in each (run whether or not each topic needs racks)."""
    remaining = list(states[0].consumers)
    for p in range(count):
        consumer = next(
            (c for c in remaining if all(s.racks_match(c, (s.topic, p)) and s.room(c) > 0 for s in states)),
            None,
        )
        if consumer is None:
            continue
        for state in states:
            state.take(consumer, [(state.topic, p)], assignment)
        if not any(s.room(consumer) > 0 for s in states):
            remaining.remove(consumer)
            if not remaining:
                break
