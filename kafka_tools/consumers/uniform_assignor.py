"""The broker's `uniform` assignor for consumer groups (KIP-848; group-coordinator UniformAssignor, the
first of `group.consumer.assignors` and so the default). When every member subscribes to the same topics
(the group's subscription type is HOMOGENEOUS) it runs UniformHomogeneousAssignmentBuilder, modelled here
(apache/kafka as of October 2024, checked against 4.4.0's bytecode); otherwise
UniformHeterogeneousAssignmentBuilder, modelled in uniform_heterogeneous.py.

Each member, in the group's member order, keeps what its target assignment holds of the subscribed
topics up to its quota (total / members, one more while extra slots remain; Kafka 4.4.0 gives an
unused extra slot back while more members remain than slots, so the extras go to the members that
already fill them: read from kafka-group-coordinator-4.4.0.jar's bytecode, newer than the October 2024
source); what is over quota is revoked; then the members under quota, in the same order, take the
partitions nobody holds (subscribed topics in their set's order, partitions by number) followed by the
revoked ones.

The orders are Java's: the members are a HashMap keyed by member id (TargetAssignmentBuilder), the
subscribed topics a HashSet of topic ids (Uuid.hashCode), a member's assignment a map keyed by topic id;
format/java_hash.py's `java_hashmap_order` reproduces them (partitions of a topic are taken by number:
a HashSet of small integers iterates so).

Racks: Kafka 4.4.0's uniform and range assignors read none (no class of group-coordinator's assignor
package asks SubscribedTopicDescriber.racksForPartition), so a member's rack changes nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka_tools.consumers.assignors import AssignmentError
from kafka_tools.consumers.classic_member import TopicPartition
from kafka_tools.consumers.uniform_heterogeneous import heterogeneous_assign
from kafka_tools.format.java_hash import java_hashmap_order, java_uuid_hash

UNIFORM = "uniform"

# A member's target assignment in its map's order: [(topic, [partitions…]), …].
TopicAssignment = Sequence[tuple[str, Sequence[int]]]


def java_uuid_order(topic_ids: Mapping[str, str | tuple[int, int]], topics: Sequence[str]) -> list[str]:
    """`topics` in the iteration order of the uniform assignor's subscribed topic ids: a HashSet copied
    from the first member's subscription (`new HashSet<>(subscribedTopicIds)`)."""
    return java_hashmap_order(list(topics), lambda t: java_uuid_hash(topic_ids[t]), copied=True)[0]


def uniform_assign(
    member_ids: Sequence[str],
    subscriptions: Mapping[str, Sequence[str]],
    targets: Mapping[str, TopicAssignment],
    partitions: Mapping[str, int],
    topic_order: Sequence[str],
    topic_ids: Mapping[str, str | tuple[int, int]] | None = None,
) -> dict[str, list[TopicPartition]]:
    """Member id -> its new target assignment. `member_ids` and `topic_order` (the subscribed topics)
    are in Java's iteration orders; `targets` each member's current target assignment in its map's order.
    Members subscribing to different topics take the heterogeneous path, which orders topics by id
    (`topic_ids`)."""
    if not member_ids:
        return {}
    topics = set(subscriptions[member_ids[0]])
    everyone = {t for m in member_ids for t in subscriptions[m]}
    missing = sorted(t for t in everyone if t not in partitions)
    if missing:
        raise AssignmentError(f"uniform: members subscribe to {', '.join(missing)}, which does not exist")
    if any(set(subscriptions[m]) != topics for m in member_ids):
        if topic_ids is None:
            raise AssignmentError("uniform: the members subscribe to different topics and no topic ids given")
        held = {m: {t: list(ps) for t, ps in targets.get(m, ())} for m in member_ids}
        return heterogeneous_assign(member_ids, subscriptions, held, partitions, topic_ids)
    held = {(t, p) for m in member_ids for t, ps in targets.get(m, ()) for p in ps}
    unassigned = [(t, p) for t in topic_order for p in range(partitions[t]) if (t, p) not in held]
    total = sum(partitions[t] for t in topics)
    min_quota, extra = divmod(total, len(member_ids))
    assignment: dict[str, list[TopicPartition]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(member_ids):
        extra_slot = extra > 0
        quota = min_quota + (1 if extra_slot else 0)
        kept: list[TopicPartition] = []
        for topic, parts in targets.get(member, ()):
            if topic not in topics:
                continue
            for partition in sorted(parts):
                if quota > 0:
                    kept.append((topic, partition))
                    quota -= 1
                else:
                    unassigned.append((topic, partition))
        # Kafka 4.4: a member still under quota gives its extra slot back while more members remain
        # (itself included) than extra slots, so the extras go to members that already hold them
        if quota > 0 and extra_slot and len(member_ids) - index > extra:
            quota -= 1
            extra_slot = False
        assignment[member] = kept
        if quota > 0:
            unfilled.append((member, quota))
        if extra_slot:
            extra -= 1
    at = 0
    for member, quota in unfilled:
        take = unassigned[at : at + quota]
        assignment[member] += take
        at += len(take)
    if at < len(unassigned):
        raise AssignmentError("uniform: partitions were left unassigned (the broker fails here too)")
    return assignment
