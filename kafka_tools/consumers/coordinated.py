"""A group as its coordinator has it, as every view of a live group reads it (groups describe, the
coordinators' watch, rebalance plans, the live-member checks of migrate-offsets and groups delete):
the coordinator's answer (Broker.coordinated_group: ConsumerGroupDescribe or DescribeGroups on ktool's
own client) made a KafkaGroup, a classic member's assignment decoded from its ConsumerProtocol bytes here,
above broker/, which decodes no consumer protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_tools.broker.client import KafkaGroup, KafkaMember

if TYPE_CHECKING:
    from kafka_tools.broker.client import Broker
    from kafka_tools.broker.group_requests import CoordinatedGroup

# Kafka's spelling of a group's state (kafka-consumer-groups prints it) -> the code the views test
# (confluent-kafka's ConsumerGroupState names); Kafka before 1.1 says AwaitingSync for CompletingRebalance
STATE_CODES = {
    "PreparingRebalance": "PREPARING_REBALANCING",
    "CompletingRebalance": "COMPLETING_REBALANCING",
    "AwaitingSync": "COMPLETING_REBALANCING",
    "Stable": "STABLE",
    "Dead": "DEAD",
    "Empty": "EMPTY",
    "Assigning": "ASSIGNING",
    "Reconciling": "RECONCILING",
}


def group_view(described: CoordinatedGroup) -> KafkaGroup:
    """The coordinator's answer as the views read it: a consumer group (KIP-848) with its epochs and
    target assignments, a classic group with the protocol its members agreed on (the assignor) and what
    each was assigned; a group the coordinator does not know (or brokers without group coordinator,
    before 0.9) is `DEAD`, without members."""
    # the ConsumerProtocol decoder loads when a classic group is described, not with every groups command
    from kafka_tools.consumers.classic_member import assigned_partitions

    consumer, classic = described.consumer, described.classic
    if consumer is not None:
        members = [
            KafkaMember(
                m.member_id, m.client_id, m.host, list(m.assignment), m.instance_id, m.member_epoch,
                list(m.target_assignment),
            )
            for m in consumer.members
        ]  # fmt: skip
        return KafkaGroup(
            STATE_CODES.get(consumer.state, "UNKNOWN"), members, consumer.state, "consumer",
            consumer.assignor or None, described.coordinator, consumer.group_epoch, consumer.assignment_epoch,
        )  # fmt: skip
    if classic is None or classic.error:
        return KafkaGroup("DEAD", [], "Dead", "classic", None, described.coordinator)
    members = [
        KafkaMember(
            m.member_id, m.client_id, m.host, assigned_partitions(m.member_id, m.assignment), m.instance_id
        )
        for m in classic.members
    ]
    state, protocol = STATE_CODES.get(classic.state, "UNKNOWN"), classic.protocol or None
    return KafkaGroup(state, members, classic.state, "classic", protocol, described.coordinator)


def describe_coordinated(broker: Broker, group: str) -> KafkaGroup:
    """The group's state and members as its coordinator has them now."""
    return group_view(broker.coordinated_group(group))


def live_members(broker: Broker, group: str) -> list[str]:
    """Members of the group the coordinator has now (empty for a group with only stored offsets)."""
    return [f"{m.member_id} ({m.client_id}@{m.host})" for m in describe_coordinated(broker, group).members]
