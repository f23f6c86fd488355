"""The old (ZooKeeper-based) high-level consumer's partition assignment, as Kafka 0.8.2/0.9's code does it.

Facts taken from Kafka's Scala sources (core/src/main/scala/kafka/):
- consumer/PartitionAssignor.scala: RangeAssignor, RoundRobinAssignor; `partition.assignment.strategy`
  is "range" (default) or "roundrobin" (validated in consumer/ConsumerConfig.scala).
- consumer/TopicCount.scala: a thread id is `ConsumerThreadId(consumer, i)`, printed "consumer-i" for
  i in 0..streams-1, and *compared by that string* (`toString.compare`, i.e. Java `String.compareTo`);
  registrations with pattern "white_list"/"black_list" and a non-empty subscription are wildcards,
  anything else is static.
- consumer/TopicFilter.scala, common/Topic.scala: how a wildcard regex is cleaned up and matched, and
  the internal topic (`__consumer_offsets`) that wildcards skip when `exclude.internal.topics` is true.
- utils/ZkUtils.scala: getConsumersPerTopic sorts each topic's thread ids; getPartitionsForTopics sorts
  each topic's partition ids numerically.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_tools import bounded_json
from kafka_tools.errors import FindingsError, UsageError
from kafka_tools.format.java_hash import java_string_hash, java_string_key
from kafka_tools.format.plural import plural

STATIC = "static"
WHITE_LIST = "white_list"
BLACK_LIST = "black_list"

RANGE = "range"
ROUND_ROBIN = "roundrobin"
STRATEGIES = (RANGE, ROUND_ROBIN)

# common/Topic.scala: InternalTopics = Set(GroupCoordinator.GroupMetadataTopicName) (0.8.2: OffsetManager's).
INTERNAL_TOPICS = frozenset({"__consumer_offsets"})

TopicPartition = tuple[str, int]
Partitions = Mapping[str, "int | Iterable[int]"]


class AssignmentError(FindingsError):
    """The group's registrations make Kafka's assignor refuse (or fail) the rebalance."""


# --- Java semantics -------------------------------------------------------------------------------


_JAVA_TRIM = "".join(map(chr, range(0x21)))  # String.trim drops every char <= ' '


def wildcard_regex(raw: str) -> str:
    """The regex a whitelist/blacklist really uses (TopicFilter: trim, ',' -> '|', no spaces, no quotes)."""
    regex = raw.strip(_JAVA_TRIM).replace(",", "|").replace(" ", "")
    regex = re.sub(r"\A[\"']+", "", regex)
    return re.sub(r"[\"']+\Z", "", regex)


# --- members and their threads ----------------------------------------------------------------------


@functools.total_ordering
@dataclass(frozen=True)
class ThreadId:
    """One consumer stream, `ConsumerThreadId`; ordered as Kafka orders it: by its string "consumer-index"."""

    consumer: str
    index: int

    def __str__(self) -> str:
        return f"{self.consumer}-{self.index}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ThreadId):
            return NotImplemented
        return java_string_key(str(self)) < java_string_key(str(other))

    @classmethod
    def parse(cls, owner: str) -> ThreadId:
        """The thread id in an owner znode's data ("group_host-1463...-abcd1234-0")."""
        consumer, sep, index = owner.rpartition("-")
        if not sep or not consumer or not (index.isascii() and index.isdigit()):
            raise ValueError(f"not a consumer thread id: {owner!r}")
        return cls(consumer, int(index))


@dataclass
class Member:
    """A registered consumer (`/consumers/<group>/ids/<consumer_id>`).

    `subscription` maps topic -> streams for the "static" pattern; for "white_list"/"black_list" it holds
    one entry, regex -> streams, and the topics are resolved against the cluster's topics.
    """

    consumer_id: str
    subscription: dict[str, int]
    pattern: str = STATIC

    @property
    def is_wildcard(self) -> bool:
        # TopicCount.constructTopicCount: an empty map or any other pattern name means static.
        return bool(self.subscription) and self.pattern in (WHITE_LIST, BLACK_LIST)


def member_from_registration(consumer_id: str, data: str | bytes | Mapping) -> Member:
    """A Member from the JSON Kafka writes at `/consumers/<group>/ids/<consumer_id>`."""
    try:
        registration = bounded_json.loads(data) if isinstance(data, (str, bytes)) else data
        pattern = registration["pattern"]
        subscription = {str(k): int(v) for k, v in registration["subscription"].items()}
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise AssignmentError(f"consumer {consumer_id}: malformed registration ({exc})") from None
    return Member(consumer_id, subscription, str(pattern))


def _topic_filter(member: Member, exclude_internal_topics: bool):
    if len(member.subscription) != 1:
        raise AssignmentError(f"consumer {member.consumer_id}: a wildcard subscription has exactly one regex")
    (raw,) = member.subscription
    try:
        regex = re.compile(wildcard_regex(raw))
    except re.error as exc:
        raise AssignmentError(f"consumer {member.consumer_id}: {raw!r} is an invalid regex ({exc})") from None
    whitelist = member.pattern == WHITE_LIST

    def allowed(topic: str) -> bool:
        # Java's topic.matches(regex) is a full match; both lists skip internal topics when excluded.
        internal = exclude_internal_topics and topic in INTERNAL_TOPICS
        return (regex.fullmatch(topic) is not None) == whitelist and not internal

    return allowed


def threads_for(
    member: Member, all_topics: Iterable[str], exclude_internal_topics: bool = True
) -> dict[str, list[ThreadId]]:
    """Topic -> the member's thread ids `consumer-0..n-1` (TopicCount.getConsumerThreadIdsPerTopic).

    Static topics are taken as registered (even if absent from `all_topics`); wildcards are matched
    against `all_topics`, Kafka's children of /brokers/topics.
    """
    if member.is_wildcard:
        allowed = _topic_filter(member, exclude_internal_topics)
        (streams,) = member.subscription.values()
        counts = {topic: streams for topic in all_topics if allowed(topic)}
    else:
        counts = dict(member.subscription)
    threads = {}
    for topic in sorted(counts, key=java_string_key):
        streams = counts[topic]
        if streams < 1:  # makeConsumerThreadIdsPerTopic asserts nConsumers >= 1
            raise AssignmentError(
                f"consumer {member.consumer_id}: {plural(streams, 'stream')} for topic {topic}"
            )
        threads[topic] = [ThreadId(member.consumer_id, i) for i in range(streams)]
    return threads


def consumers_per_topic(
    members: Iterable[Member], all_topics: Iterable[str], exclude_internal_topics: bool = True
) -> dict[str, list[ThreadId]]:
    """Topic -> every thread id subscribed to it, in Kafka's order (ZkUtils.getConsumersPerTopic)."""
    all_topics = list(all_topics)
    per_topic: dict[str, list[ThreadId]] = {}
    seen: set[str] = set()
    for member in members:
        if member.consumer_id in seen:
            raise UsageError(f"consumer {member.consumer_id} is listed twice")
        seen.add(member.consumer_id)
        for topic, threads in threads_for(member, all_topics, exclude_internal_topics).items():
            per_topic.setdefault(topic, []).extend(threads)
    return {topic: sorted(per_topic[topic]) for topic in sorted(per_topic, key=java_string_key)}


def partition_ids(spec: int | Iterable[int]) -> list[int]:
    """A topic's partition ids in Kafka's order: a count n means 0..n-1; a list is sorted numerically."""
    if isinstance(spec, int):
        if spec < 0:
            raise UsageError(f"a partition count cannot be negative: {spec}")
        return list(range(spec))
    return sorted(set(spec))


# --- the assignors --------------------------------------------------------------------------------


def range_assign(
    members: Iterable[Member],
    partitions: Partitions,
    all_topics: Iterable[str] | None = None,
    exclude_internal_topics: bool = True,
) -> dict[TopicPartition, ThreadId]:
    """RangeAssignor: per topic, thread i of C (sorted) gets P/C partitions, the first P%C one more.

    Thread i takes the sorted partitions from index `(P/C)*i + min(i, P%C)`. `all_topics` (default: the
    topics of `partitions`) is what wildcards match; a subscribed topic missing from `partitions` has none.
    """
    topics = partitions.keys() if all_topics is None else all_topics
    assignment: dict[TopicPartition, ThreadId] = {}
    for topic, threads in consumers_per_topic(members, topics, exclude_internal_topics).items():
        parts = partition_ids(partitions.get(topic, 0))
        per_thread, extra = divmod(len(parts), len(threads))
        for position, thread in enumerate(threads):
            start = per_thread * position + min(position, extra)
            count = per_thread + (1 if position < extra else 0)
            for partition in parts[start : start + count]:
                assignment[(topic, partition)] = thread
    return assignment


def round_robin_hash(topic: str, partition: int) -> int:
    """The key RoundRobinAssignor sorts by: `TopicAndPartition.toString.hashCode`, of "[topic,partition]"."""
    return java_string_hash(f"[{topic},{partition}]")


def round_robin_order(topic_partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Topic-partitions in the order RoundRobinAssignor deals them: by signed hashCode, stable.

    Kafka's input order is a Scala HashMap's topic order, partitions ascending; equal hashCodes keep it.
    Within a topic that is reproduced exactly; across topics (see `round_robin_ties`) topics are taken
    in string order, which Kafka does not promise.
    """
    ordered = sorted(topic_partitions, key=lambda tp: (java_string_key(tp[0]), tp[1]))
    return sorted(ordered, key=lambda tp: round_robin_hash(*tp))


def round_robin_ties(topic_partitions: Iterable[TopicPartition]) -> list[list[TopicPartition]]:
    """Partitions of different topics sharing a hashCode: Kafka orders them by its HashMap's iteration."""
    by_hash: dict[int, list[TopicPartition]] = {}
    for tp in topic_partitions:
        by_hash.setdefault(round_robin_hash(*tp), []).append(tp)
    return [sorted(group) for group in by_hash.values() if len({topic for topic, _ in group}) > 1]


def round_robin_assign(
    members: Iterable[Member],
    partitions: Partitions,
    all_topics: Iterable[str] | None = None,
    exclude_internal_topics: bool = True,
) -> dict[TopicPartition, ThreadId]:
    """RoundRobinAssignor: all subscribed partitions, sorted by hashCode, dealt to the sorted threads in turn.

    Kafka requires every subscribed topic to have the same set of thread ids (same topics for every
    consumer, and one stream count per consumer across its topics); otherwise AssignmentError.
    Consumers subscribed to nothing take no part in that check.
    """
    topics = partitions.keys() if all_topics is None else all_topics
    per_topic = consumers_per_topic(members, topics, exclude_internal_topics)
    if not per_topic:
        return {}
    (head_topic, head_threads), *others = per_topic.items()
    for topic, threads in others:
        if set(threads) != set(head_threads):
            raise AssignmentError(
                "round-robin assignment needs every consumer to subscribe to the same topics with the same "
                f"stream count on each: topic {topic} has streams {_names(threads)}, "
                f"topic {head_topic} has {_names(head_threads)}"
            )
    topic_partitions = [(t, p) for t in per_topic for p in partition_ids(partitions.get(t, 0))]
    return {
        tp: head_threads[i % len(head_threads)] for i, tp in enumerate(round_robin_order(topic_partitions))
    }


def _names(threads: Iterable[ThreadId]) -> str:
    return "[" + ", ".join(str(t) for t in sorted(threads)) + "]"


def assign(
    strategy: str,
    members: Iterable[Member],
    partitions: Partitions,
    all_topics: Iterable[str] | None = None,
    exclude_internal_topics: bool = True,
) -> dict[TopicPartition, ThreadId]:
    """The assignment of `partition.assignment.strategy` ("range" or "roundrobin")."""
    if strategy == RANGE:
        return range_assign(members, partitions, all_topics, exclude_internal_topics)
    if strategy == ROUND_ROBIN:
        return round_robin_assign(members, partitions, all_topics, exclude_internal_topics)
    raise UsageError(f"unknown assignment strategy {strategy!r}; valid values are 'range' and 'roundrobin'")
