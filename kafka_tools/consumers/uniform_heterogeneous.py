"""The broker's `uniform` assignor when its members subscribe to different topics (KIP-848; Kafka 4.4.0
group-coordinator UniformHeterogeneousAssignmentBuilder, the path UniformAssignor takes for a group whose
subscription type is HETEROGENEOUS: some topic has fewer subscribers than the group has members).

Members are numbered in the order the broker's member map iterates (a HashMap keyed by member id); every
tie below is broken by that number. The steps:

1. each member keeps what its target assignment holds of the topics it still subscribes to;
2. the partitions nobody holds are dealt, topic by topic (most partitions per subscriber first, then
   fewer subscribers, then topic id as `Uuid.compareTo` orders it), each to the least loaded subscriber of
   the topic (fewest partitions in all, then lowest number), in turns that fill one load level before the
   next;
3. then, for up to 16 rounds over the topics with two subscribers or more (same order), a topic whose
   subscribers differ by more than one partition gives the most loaded ones' last partitions (grouped by
   owner number, then partition) to the least loaded ones, until the topic's subscribers differ by one or
   less; the rounds stop after a whole round moved nothing.

Only the member order and the topic ids decide: a member's own maps are read as sets, so the order
ConsumerGroupDescribe lists its target assignment does not matter here. Kafka 4.4.0's builder reads no
racks (its bytecode never asks SubscribedTopicDescriber.racksForPartition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from kafka_tools.consumers.classic_member import TopicPartition
from kafka_tools.format.java_hash import java_uuid_key

MAX_ITERATION_COUNT = 16  # UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT
UNOWNED = -1


class _Balancer:
    """MemberAssignmentBalancer: over one topic's subscribers sorted by load, a least loaded range that
    grows rightwards a level at a time and a most loaded range that grows leftwards."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes  # the builder's own array: it changes under the balancer as partitions move
        self.members: list[int] = []
        self.least_end = self.least_count = self.next_least = 0
        self.most_start = self.most_end = self.most_count = self.next_most = 0

    def initialize(self, members: Sequence[int]) -> int:
        self.members = sorted(members, key=lambda m: (self.sizes[m], m))
        n = len(self.members)
        self.least_end, self.least_count, self.next_least = 0, self.sizes[self.members[0]] - 1, 0
        self.most_start = self.most_end = n
        self.most_count = self.sizes[self.members[-1]] + 1
        self.next_most = n - 1
        return self.sizes[self.members[-1]] - self.sizes[self.members[0]]

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while (
                self.least_end < len(self.members)
                and self.sizes[self.members[self.least_end]] == self.least_count
            ):
                self.least_end += 1
            self.next_least = 0
        member = self.members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # the range emptied by exclusions: reset the level so that it grows below
                self.most_count = self.sizes[self.members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and self.sizes[self.members[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return UNOWNED
        member = self.members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        at, end = self.next_most + 1, self.most_end - 1
        self.members[at], self.members[end] = self.members[end], self.members[at]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Builder:
    def __init__(
        self,
        member_ids: Sequence[str],
        subscriptions: Mapping[str, Sequence[str]],
        partitions: Mapping[str, int],
        topic_ids: Mapping[str, str | tuple[int, int]],
    ) -> None:
        self.member_ids = list(member_ids)
        self.partitions = partitions
        self.topic_ids = topic_ids
        self.subscribers: dict[str, list[int]] = {}
        for index, member in enumerate(self.member_ids):
            for topic in dict.fromkeys(subscriptions[member]):
                self.subscribers.setdefault(topic, []).append(index)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {t: [UNOWNED] * partitions[t] for t in self.subscribers}

    def topic_key(self, topic: str) -> tuple[Fraction, int, tuple[int, int]]:
        """The topic comparator: partitions per subscriber descending, subscribers ascending, topic id."""
        count = len(self.subscribers[topic])
        return -Fraction(self.partitions[topic], count), count, java_uuid_key(self.topic_ids[topic])

    def keep_targets(self, targets: Mapping[str, Mapping[str, Sequence[int]]]) -> None:
        """maybeRevokePartitions: a member keeps its target's topics it still subscribes to."""
        for index, member in enumerate(self.member_ids):
            for topic, held in targets.get(member, {}).items():
                if topic not in self.owners or index not in self.subscribers[topic]:
                    continue
                self.sizes[index] += len(held)
                for partition in held:
                    self.owners[topic][partition] = index

    def assign(self, topic: str, partition: int, member: int) -> None:
        old = self.owners[topic][partition]
        if old != UNOWNED:
            self.sizes[old] -= 1
        self.owners[topic][partition] = member
        self.sizes[member] += 1

    def assign_remaining(self) -> None:
        unassigned = {
            t: [p for p, owner in enumerate(owners) if owner == UNOWNED] for t, owners in self.owners.items()
        }
        balancer = _Balancer(self.sizes)
        for topic in sorted((t for t, ps in unassigned.items() if ps), key=self.topic_key):
            balancer.initialize(self.subscribers[topic])
            for partition in unassigned[topic]:
                self.assign(topic, partition, balancer.next_least_loaded())

    def balance(self) -> None:
        topics = sorted((t for t, s in self.subscribers.items() if len(s) >= 2), key=self.topic_key)
        if not topics:
            return
        balancer = _Balancer(self.sizes)
        last = -1  # the index of the last topic that moved a partition: a whole round without a move ends
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic in enumerate(topics):
                if index == last:
                    return
                if self.balance_topic(topic, balancer) > 0 or last == -1:
                    last = index

    def balance_topic(self, topic: str, balancer: _Balancer) -> int:
        if balancer.initialize(self.subscribers[topic]) <= 1:
            return 0
        owners = self.owners[topic]
        ordered = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}  # exclusive
        for i, partition in enumerate(ordered):
            start.setdefault(owners[partition], i)
            end[owners[partition]] = i + 1
        moved = 0
        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded()
                if most == UNOWNED:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == UNOWNED:
                break
            end[most] -= 1
            partition = ordered[end[most]]
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.assign(topic, partition, least)
            moved += 1
        return moved


def heterogeneous_assign(
    member_ids: Sequence[str],
    subscriptions: Mapping[str, Sequence[str]],
    targets: Mapping[str, Mapping[str, Sequence[int]]],
    partitions: Mapping[str, int],
    topic_ids: Mapping[str, str | tuple[int, int]],
) -> dict[str, list[TopicPartition]]:
    """Member id -> its new target assignment (topics by name, partitions by number). `member_ids` in
    the broker's member map order; `targets` each member's current target assignment; every subscribed
    topic exists in `partitions` and has an id in `topic_ids`."""
    builder = _Builder(member_ids, subscriptions, partitions, topic_ids)
    builder.keep_targets(targets)
    builder.assign_remaining()
    builder.balance()
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in member_ids}
    for topic in sorted(builder.owners):
        for partition, owner in enumerate(builder.owners[topic]):
            if owner != UNOWNED:
                assignment[builder.member_ids[owner]].append((topic, partition))
    return assignment
