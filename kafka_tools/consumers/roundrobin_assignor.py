"""The round-robin assignor of a classic group's leader (`roundrobin`; kafka-clients RoundRobinAssignor,
librdkafka rdkafka_roundrobin_assignor.c): every subscribed topic by name, its partitions by number,
dealt in turn over the members in the leader's member order, skipping a member not subscribed to the
topic. Both libraries run this loop; they differ only in the member order (member_order.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_tools.consumers.classic_member import ClassicMember, TopicPartition
from kafka_tools.consumers.member_order import ordered


def roundrobin_assign(
    members: list[ClassicMember], partitions: Mapping[str, int], implementation: str
) -> dict[str, list[TopicPartition]]:
    """Member id -> its partitions."""
    assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    ring = ordered(members, implementation)
    turn = 0
    for topic in sorted({t for m in members for t in m.topics}):
        for partition in range(partitions.get(topic, 0)):
            while topic not in ring[turn % len(ring)].topics:
                turn += 1
            assignment[ring[turn % len(ring)].member_id].append((topic, partition))
            turn += 1
    return assignment
