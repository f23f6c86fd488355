"""The range assignor of a classic group's leader (`range`; kafka-clients RangeAssignor, librdkafka
rdkafka_range_assignor.c): per topic, the members subscribed to it in the leader's member order
(member_order.py: the only place the two libraries differ), partitions by number; member i takes
P / C partitions from `(P / C) * i + min(i, P % C)`, the first P % C members one more.

The broker's `range` for consumer groups (KIP-848; group-coordinator RangeAssignor, apache/kafka as of
October 2024) deals the same ranges member by member, members in kafka-clients' order: the same result.

Rack-aware range (KIP-881) applies only when members and replicas both carry racks; ktool plans without
racks and says so when a member sends one.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_tools.consumers.classic_member import ClassicMember, TopicPartition
from kafka_tools.consumers.member_order import ordered


def range_assign(
    members: list[ClassicMember], partitions: Mapping[str, int], implementation: str
) -> dict[str, list[TopicPartition]]:
    """Member id -> its partitions; topics without metadata (absent from `partitions`) get none."""
    assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    in_order = ordered(members, implementation)
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
