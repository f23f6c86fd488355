"""The service behind `ktool groups list/describe`: ZooKeeper's view of a group (members, owners,
offsets) joined with the brokers' (offsets in `__consumer_offsets`, log start and end, hence lag)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_tools.broker.client import Broker, KafkaGroup, KafkaMember
from kafka_tools.consumers.coordinated import describe_coordinated
from kafka_tools.errors import InputError
from kafka_tools.format.plural import plural
from kafka_tools.zk.connection import ZnodeMissingError
from kafka_tools.zk.layout import ConsumerGroupZk, ConsumerMember, PartitionKey, Topic
from kafka_tools.zk.reader import list_groups as zk_list_groups
from kafka_tools.zk.reader import read_group, read_topics, zk_children

STORE_ZK = "zookeeper"
STORE_KAFKA = "kafka"
STORE_BOTH = "both"
STORE_NONE = "none"


@dataclass
class PartitionRow:
    topic: str
    partition: PartitionKey
    owner: str | None = None
    zk_offset: int | None = None
    kafka_offset: int | None = None
    log_start: int | None = None
    log_end: int | None = None
    lag: int | None = None
    note: str | None = None

    @property
    def committed(self) -> int | None:
        """The offset the group resumes from: ZooKeeper's for a ZooKeeper-storage group (as Kafka's own
        tools read it), else the one in Kafka."""
        return self.zk_offset if self.zk_offset is not None else self.kafka_offset


@dataclass
class GroupDescription:
    group: str
    layout: str | None
    storage: str
    members: list[ConsumerMember] = field(default_factory=list)
    rows: list[PartitionRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    coordinated: KafkaGroup | None = None  # the coordinator's view (state, epochs, members), through Kafka
    from_zookeeper: bool = False  # ZooKeeper was read for this group: its columns are shown

    @property
    def total_lag(self) -> int | None:
        lags = [r.lag for r in self.rows if r.lag is not None]
        return sum(lags) if lags else None

    def topic_lag(self) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for r in self.rows:
            if r.lag is not None:
                out[r.topic] = (out.get(r.topic) or 0) + r.lag
            else:
                out.setdefault(r.topic, None)
        return out

    @property
    def unowned(self) -> list[PartitionRow]:
        return [r for r in self.rows if r.owner is None]


def storage_of(has_zk: bool, has_kafka: bool) -> str:
    if has_zk and has_kafka:
        return STORE_BOTH
    return STORE_ZK if has_zk else STORE_KAFKA if has_kafka else STORE_NONE


class GroupNotFoundError(InputError):
    """No store ktool was given knows the group (exit 3, as a missing znode is): not ZooKeeper, whose
    `/consumers/G` is absent, nor Kafka, whose coordinator does not know it and which holds no offset
    of it. A group that only committed offsets exists: Kafka's tools describe it too."""


def describe_group(zk, group: str, broker: Broker | None = None) -> GroupDescription:
    """ZooKeeper's view joined with the brokers'; with no ZooKeeper (KRaft, or only --bootstrap-server
    given), or a group ZooKeeper does not have, the brokers' view alone. One rule for every store: a
    group none of them knows is GroupNotFoundError."""
    if zk is None:
        if broker is None:
            raise ValueError("describe_group needs ZooKeeper or a broker")
        return describe_kafka_group(broker, group)
    try:
        g: ConsumerGroupZk = read_group(zk, group)
    except ZnodeMissingError as exc:
        if broker is None:
            raise GroupNotFoundError(str(exc)) from None
        try:
            return describe_kafka_group(broker, group)
        except GroupNotFoundError as in_kafka:
            raise GroupNotFoundError(f"{exc}, nor {str(in_kafka).removeprefix(_no_group(group))}") from None
    topics = _group_topics(g)
    partitions = _partitions(read_topics(zk, topics) if topics else [], g)
    rows = {key: PartitionRow(*key) for key in partitions}
    for key, offset in g.offsets.items():
        rows.setdefault(key, PartitionRow(*key)).zk_offset = offset
    for key, owner in g.owners.items():
        rows.setdefault(key, PartitionRow(*key)).owner = owner
    desc = GroupDescription(group, g.layout, STORE_NONE, list(g.members), from_zookeeper=True)
    desc.rows = [rows[k] for k in sorted(rows, key=lambda k: (k[0], str(k[1]).zfill(12)))]
    if g.layout == "0.7":
        desc.notes.append(
            "Kafka 0.7 layout: offsets are byte positions in the partition's log, keyed brokerId-partition"
        )
    modern = [(r.topic, r.partition) for r in desc.rows if isinstance(r.partition, int)]
    if broker is not None and modern:
        for key, offset in broker.committed(group, modern).items():
            if key in rows:
                rows[key].kafka_offset = offset
        for key, (low, high) in broker.watermarks(modern).items():
            rows[key].log_start, rows[key].log_end = low, high
            _lag(rows[key])
    desc.storage = storage_of(bool(g.offsets), any(r.kafka_offset is not None for r in desc.rows))
    if not desc.members:
        desc.notes.append("no live members: no consumer of this group is registered in ZooKeeper")
    if desc.unowned and desc.members:
        desc.notes.append(f"{plural(len(desc.unowned), 'partition')} without an owner")
    differ = [
        r for r in desc.rows if None not in (r.zk_offset, r.kafka_offset) and r.zk_offset != r.kafka_offset
    ]
    if differ:
        desc.notes.append(f"{plural(len(differ), 'partition')} with different offsets in ZooKeeper and Kafka")
    return desc


def describe_kafka_group(broker: Broker, group: str) -> GroupDescription:
    """A group as the brokers know it: members and their assignments from its coordinator, offsets from
    `__consumer_offsets`, log start and end, lag. Without members, every topic's partitions are asked
    for (OffsetFetch for named partitions works on every broker version) and those with an offset kept."""
    described = describe_coordinated(broker, group)
    members = described.members
    catalog = broker.topics()
    owners = {tp: m.member_id for m in members for tp in m.assignment}
    assigned = {t for t, _ in owners}
    topics = sorted(assigned) if assigned else [t for t in catalog if t != "__consumer_offsets"]
    candidates = [(t, p) for t in topics for p in catalog.get(t, [])]
    committed = broker.committed(group, candidates) if candidates else {}
    keys = sorted(set(owners) | {k for k, v in committed.items() if v is not None})
    if not described.known and not keys:
        raise GroupNotFoundError(
            f"{_no_group(group)}in Kafka (broker {broker.config.bootstrap}): its coordinator does not know "
            "it and it has no committed offsets"
        )
    rows = {k: PartitionRow(*k, owner=owners.get(k), kafka_offset=committed.get(k)) for k in keys}
    for key, (low, high) in (broker.watermarks(keys) if keys else {}).items():
        rows[key].log_start, rows[key].log_end = low, high
        _lag(rows[key])
    desc = GroupDescription(group, None, STORE_NONE, [_kafka_member(m) for m in members])
    desc.coordinated = described
    desc.rows = [rows[k] for k in keys]
    desc.storage = storage_of(False, any(r.kafka_offset is not None for r in desc.rows))
    if not members:
        desc.notes.append("no live members: the group's coordinator has no consumer in it")
    if desc.unowned and members:
        desc.notes.append(f"{plural(len(desc.unowned), 'partition')} without an owner")
    if not keys:
        desc.notes.append("no offsets in Kafka for this group")
    return desc


def _no_group(group: str) -> str:
    return f"no consumer group {group!r} "


def _kafka_member(m: KafkaMember) -> ConsumerMember:
    per_topic: dict[str, int] = {}
    for topic, _ in m.assignment:
        per_topic[topic] = per_topic.get(topic, 0) + 1
    return ConsumerMember(f"{m.member_id} ({m.client_id}@{m.host})", per_topic, "kafka")


def _lag(row: PartitionRow) -> None:
    committed = row.committed
    if committed is None or row.log_end is None:
        return
    if committed > row.log_end:
        row.lag = 0
        row.note = (
            f"committed {committed} is past the log end {row.log_end}: the log was truncated or replaced"
        )
    elif row.log_start is not None and committed < row.log_start:
        row.lag = row.log_end - row.log_start
        row.note = (
            f"committed {committed} is below the log start {row.log_start}: the consumer will reset "
            "(auto.offset.reset); lag counted from the log start"
        )
    else:
        row.lag = row.log_end - committed


def _group_topics(g: ConsumerGroupZk) -> list[str]:
    static = {t for m in g.members if m.pattern == "static" for t in m.subscription}
    return sorted(static | set(g.topics()))


def _partitions(topics: list[Topic], g: ConsumerGroupZk) -> list[tuple[str, PartitionKey]]:
    out = [(t.name, p.partition) for t in topics for p in t.partitions]
    return out


@dataclass
class GroupSummary:
    group: str
    storage: str
    members: int | None  # live members in ZooKeeper (None: a Kafka-only group)
    protocol_type: str | None = None
    state: str | None = None  # as Kafka spells it (Stable, Empty, …); None: not a group Kafka lists
    type: str | None = None  # classic, consumer, share, streams; None: not a group Kafka lists


def list_all_groups(
    zk, broker: Broker | None = None, states: Iterable[str] = (), types: Iterable[str] = ()
) -> list[GroupSummary]:
    """Groups in ZooKeeper (`/consumers`) and, with a broker, the groups Kafka coordinates with their
    state and type (ListGroups); marks where each group's offsets live. `states` and `types` keep the
    groups Kafka lists in one of them (case as the user likes, as kafka-consumer-groups takes them)."""
    out: dict[str, GroupSummary] = {}
    for group in zk_list_groups(zk) if zk is not None else []:
        ids = zk_children(zk, f"/consumers/{group}/ids") or []
        has_zk = bool(zk_children(zk, f"/consumers/{group}/offsets"))
        out[group] = GroupSummary(group, STORE_ZK if has_zk else STORE_NONE, len(ids))
    if broker is not None:
        for listed in broker.listed_groups():
            summary = out.setdefault(listed.group, GroupSummary(listed.group, STORE_NONE, None))
            summary.protocol_type = listed.protocol_type or None
            summary.state, summary.type = listed.state, listed.type
        for summary in out.values():
            if summary.members is not None:
                g = read_group(zk, summary.group)
                topics = g.topics()
                keys = (
                    [(t.name, p.partition) for t in read_topics(zk, topics) for p in t.partitions]
                    if topics
                    else []
                )
                has_kafka = any(v is not None for v in broker.committed(summary.group, keys).values())
            else:
                has_kafka = True  # the coordinator knows the group: its offsets are in Kafka
            summary.storage = storage_of(summary.storage == STORE_ZK, has_kafka)
    wanted_states = {s.lower() for s in states}
    wanted_types = {t.lower() for t in types}
    return [
        out[k]
        for k in sorted(out)
        if (not wanted_states or (out[k].state or "").lower() in wanted_states)
        and (not wanted_types or (out[k].type or "").lower() in wanted_types)
    ]
