"""The order in which a classic group's leader walks its members: the tie-break where Java's
kafka-clients and librdkafka differ.

- kafka-clients (AbstractPartitionAssignor.MemberInfo.compareTo): two static members (group.instance.id)
  by instance id, a static member before a dynamic one, two dynamic members by member id; Java's
  String.compareTo (UTF-16 code units).
- the broker (group-coordinator's RangeAssignor.sortMemberIds, KIP-848 consumer groups): as kafka-clients.
- librdkafka (rdkafka_assignor.c, rd_kafka_group_member_cmp): by instance id only when both members have
  one, otherwise by member id, whatever the other has; byte order (memcmp, then length).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from kafka_tools.consumers.classic_member import ClassicMember
from kafka_tools.format.java_hash import java_string_key

JAVA = "java"
LIBRDKAFKA = "librdkafka"
BROKER = "broker"
IMPLEMENTATIONS = (JAVA, LIBRDKAFKA)
DESCRIBED = {
    JAVA: "kafka-clients (Java)",
    LIBRDKAFKA: "librdkafka (confluent-kafka, kcat, …)",
    BROKER: "the broker's group coordinator",
}


def _java_key(member: ClassicMember) -> tuple[int, bytes]:
    if member.instance_id is not None:
        return 0, java_string_key(member.instance_id)
    return 1, java_string_key(member.member_id)


def _librdkafka_cmp(a: ClassicMember, b: ClassicMember) -> int:
    if a.instance_id is not None and b.instance_id is not None:
        x, y = a.instance_id.encode(), b.instance_id.encode()
    else:
        x, y = a.member_id.encode(), b.member_id.encode()
    return (x > y) - (x < y)


def ordered(members: Iterable[ClassicMember], implementation: str) -> list[ClassicMember]:
    """The members in the order the leader's client library sorts them."""
    if implementation in (JAVA, BROKER):
        return sorted(members, key=_java_key)
    return sorted(members, key=functools.cmp_to_key(_librdkafka_cmp))
