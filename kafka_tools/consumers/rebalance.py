"""Rebalance plans: what Kafka's old consumer would assign, against who owns each partition now."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_tools.consumers.assignors import (
    RANGE,
    ROUND_ROBIN,
    Member,
    Partitions,
    ThreadId,
    TopicPartition,
    assign,
    consumers_per_topic,
    java_string_key,
    partition_ids,
    round_robin_ties,
    threads_for,
)
from kafka_tools.errors import UsageError


@dataclass(frozen=True)
class Move:
    """One partition whose owner thread changes (None: unowned)."""

    topic: str
    partition: int
    from_owner: str | None
    to_owner: str | None


@dataclass
class RebalancePlan:
    """Current owners vs the proposed assignment, for every partition in play.

    `current` holds owner strings as found in /consumers/<group>/owners/<topic>/<partition>; a partition
    moves when its proposed owner's string differs (gaining or losing an owner counts).
    `idle_threads` own nothing in any topic; `idle_streams` are (topic, thread) pairs that get nothing
    of a topic they subscribe to. A plan of a group Kafka coordinates (modern_plan.py) proposes member
    ids, has no threads, and says which `implementation` of the assignor it ran and the `reasons`.
    """

    current: dict[TopicPartition, str | None]
    proposed: dict[TopicPartition, ThreadId | str | None]
    moves: list[Move]
    unassigned: list[TopicPartition]
    idle_threads: list[ThreadId]
    idle_consumers: list[str]
    strategy: str = RANGE
    members: list[Member] = field(default_factory=list)
    idle_streams: list[tuple[str, ThreadId]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    implementation: str | None = None
    reasons: list[str] = field(default_factory=list)


def parse_consumer_spec(text: str) -> tuple[str, int]:
    """`ID[:streams]` (the `--add-consumer` value) -> (consumer id, streams), streams defaulting to 1."""
    consumer_id, sep, streams = text.rpartition(":")
    if not sep or not (streams.isascii() and streams.isdigit()):
        consumer_id, streams = text, "1"
    if not consumer_id or int(streams) < 1:
        raise UsageError(f"expected CONSUMER_ID[:STREAMS] with STREAMS >= 1, got {text!r}")
    return consumer_id, int(streams)


def parse_partition_count(text: str) -> tuple[str, int]:
    """`TOPIC=N` (the `--partitions` value) -> (topic, N)."""
    topic, sep, count = text.rpartition("=")
    if not sep or not topic or not (count.isascii() and count.isdigit()):
        raise UsageError(f"expected TOPIC=N, got {text!r}")
    return topic, int(count)


def member_like(
    consumer_id: str,
    members: Iterable[Member],
    all_topics: Iterable[str],
    streams: int = 1,
    exclude_internal_topics: bool = True,
) -> Member:
    """A new consumer subscribing to what the existing members subscribe to, with `streams` per topic.

    If they all share one wildcard, the new member registers that wildcard; otherwise it subscribes
    statically to the union of the topics they resolve to.
    """
    members = list(members)
    patterns = {(m.pattern, tuple(m.subscription)) for m in members}
    if len(patterns) == 1 and members[0].is_wildcard:
        (regex,) = members[0].subscription
        return Member(consumer_id, {regex: streams}, members[0].pattern)
    topics = {t for m in members for t in threads_for(m, all_topics, exclude_internal_topics)}
    if not topics:
        raise UsageError(f"cannot add consumer {consumer_id}: the group subscribes to no topic to copy")
    return Member(consumer_id, {t: streams for t in sorted(topics, key=java_string_key)})


def _tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    return java_string_key(tp[0]), tp[1]


def plan_rebalance(
    members: Iterable[Member],
    partitions: Partitions,
    current_owners: Mapping[TopicPartition, str | None] | None = None,
    strategy: str = RANGE,
    add: Iterable[Member | str] = (),
    remove: Iterable[str] = (),
    partition_counts: Mapping[str, int] | None = None,
    all_topics: Iterable[str] | None = None,
    exclude_internal_topics: bool = True,
) -> RebalancePlan:
    """What a rebalance of the group would do.

    `members` are the registered consumers, `partitions` topic -> count or ids, `current_owners` the
    owner strings of /consumers/<group>/owners. `remove` drops consumers by id; `add` joins Members, or
    "ID[:streams]" strings made with `member_like`; `partition_counts` replaces topics' partition counts
    (0..N-1). `all_topics` (default: the topics of `partitions`) is what wildcard subscriptions match.
    """
    members = list(members)
    partitions = dict(partitions)
    partitions.update(partition_counts or {})
    topics = list(dict.fromkeys([*(partitions if all_topics is None else all_topics), *partitions]))

    final = _apply_changes(members, add, remove, topics, exclude_internal_topics)
    proposed_threads = assign(strategy, final, partitions, topics, exclude_internal_topics)

    owners = {tp: owner or None for tp, owner in (current_owners or {}).items()}
    in_play = {(t, p) for t, spec in partitions.items() for p in partition_ids(spec)}
    keys = sorted(in_play | owners.keys(), key=_tp_key)
    current = {tp: owners.get(tp) for tp in keys}
    proposed = {tp: proposed_threads.get(tp) for tp in keys}
    moves = [
        Move(t, p, current[(t, p)], None if new is None else str(new))
        for (t, p), new in proposed.items()
        if current[(t, p)] != (None if new is None else str(new))
    ]

    per_topic = consumers_per_topic(final, topics, exclude_internal_topics)
    owning = set(proposed_threads.values())
    owning_streams = {(t, thread) for (t, _), thread in proposed_threads.items()}
    all_threads = {thread for threads in per_topic.values() for thread in threads}
    owning_consumers = {thread.consumer for thread in owning}
    return RebalancePlan(
        current=current,
        proposed=proposed,
        moves=moves,
        unassigned=[tp for tp in keys if tp in in_play and proposed[tp] is None],
        idle_threads=sorted(all_threads - owning),
        idle_consumers=sorted(
            (m.consumer_id for m in final if m.consumer_id not in owning_consumers), key=java_string_key
        ),
        strategy=strategy,
        members=final,
        idle_streams=[(t, th) for t, ths in per_topic.items() for th in ths if (t, th) not in owning_streams],
        warnings=_warnings(strategy, proposed_threads),
    )


def _apply_changes(
    members: list[Member],
    add: Iterable[Member | str],
    remove: Iterable[str],
    topics: list[str],
    exclude_internal_topics: bool,
) -> list[Member]:
    ids = {m.consumer_id for m in members}
    gone = set(remove)
    unknown = sorted(gone - ids)
    if unknown:
        raise UsageError(f"cannot remove {', '.join(unknown)}: not a consumer of the group")
    final = [m for m in members if m.consumer_id not in gone]
    for new in add:
        if isinstance(new, str):
            consumer_id, streams = parse_consumer_spec(new)
            new = member_like(consumer_id, members, topics, streams, exclude_internal_topics)
        if new.consumer_id in {m.consumer_id for m in final}:
            raise UsageError(f"cannot add {new.consumer_id}: already a consumer of the group")
        final.append(new)
    return final


def _warnings(strategy: str, proposed: Mapping[TopicPartition, ThreadId]) -> list[str]:
    if strategy != ROUND_ROBIN:
        return []
    return [
        "partitions " + ", ".join(f"[{t},{p}]" for t, p in group) + " share one hashCode: Kafka orders them "
        "by a Scala HashMap's iteration, so their owners may differ from this plan"
        for group in round_robin_ties(proposed)
    ]
