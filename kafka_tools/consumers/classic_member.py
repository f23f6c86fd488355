"""A classic group's member as the leader's assignor sees it, from the JoinGroup metadata DescribeGroups
returns (ConsumerProtocolSubscription: v0 topics and user data, v1 owned partitions, v2 generation id,
v3 rack; decoded by format/internal_topics.py), and the assignment it was given (SyncGroup)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_tools.errors import InputError
from kafka_tools.format.internal_topics import (
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
)
from kafka_tools.format.schema import SchemaError

TopicPartition = tuple[str, int]
NO_GENERATION = -1  # AbstractStickyAssignor.DEFAULT_GENERATION


@dataclass
class ClassicMember:
    """One member: its subscription, what it owns (owned partitions; the eager StickyAssignor keeps them
    in its user data instead) and in which generation (None: the subscription carries none)."""

    member_id: str
    topics: tuple[str, ...]
    instance_id: str | None = None
    owned: list[TopicPartition] = field(default_factory=list)
    generation: int | None = None
    rack: str | None = None
    client_id: str = ""
    user_data: bytes | None = None


def _flat(entries: list[dict]) -> list[TopicPartition]:
    return [(e["topic"], p) for e in entries for p in e["partitions"]]


def member_from_metadata(
    member_id: str, metadata: bytes, client_id: str = "", instance_id: str | None = None
) -> ClassicMember:
    """The member from its JoinGroup metadata; malformed bytes are one line naming the member."""
    try:
        sub = decode_subscription(metadata)
    except SchemaError as exc:
        raise InputError(f"member {member_id}: its subscription does not decode ({exc})") from None
    return ClassicMember(
        member_id,
        tuple(sub["topics"]),
        instance_id,
        _flat(sub.get("ownedPartitions") or []),
        sub.get("generationId"),
        sub.get("rackId"),
        client_id,
        sub.get("userData"),
    )


def assigned_partitions(member_id: str, data: bytes) -> list[TopicPartition]:
    """The partitions a member was given; empty bytes: none yet."""
    if not data:
        return []
    try:
        return sorted(_flat(decode_assignment(data)["assignedPartitions"]))
    except SchemaError as exc:
        raise InputError(f"member {member_id}: its assignment does not decode ({exc})") from None


def sticky_user_data(member: ClassicMember) -> tuple[list[TopicPartition], int | None]:
    """StickyAssignor's memberData: the previous assignment and its generation, from the user data."""
    if not member.user_data:
        return [], None
    try:
        data = decode_sticky_user_data(member.user_data)
    except SchemaError as exc:
        raise InputError(f"member {member.member_id}: its sticky user data does not decode ({exc})") from None
    return _flat(data["previousAssignment"]), data.get("generation")


def cooperative_generation(member: ClassicMember) -> int | None:
    """CooperativeStickyAssignor's generation: the subscription's (v2+), else its user data's."""
    if member.generation is not None and member.generation >= 0:
        return member.generation
    return None if member.user_data is None else decode_cooperative_user_data(member.user_data)
