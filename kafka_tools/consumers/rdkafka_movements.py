"""The partition movements librdkafka's sticky assignor records while it balances (PartitionMovements_t in
rdkafka_sticky_assignor.c), with their faults, because they decide which partition moves:

- a move is recorded as (first source, destination) under its topic and pair, in the order made;
- a partition to move from A to B that some partition moved from B to A before is swapped for the first
  such partition (looked up with A, the partition's current owner);
- a partition moved back to its first source loses its place under the pair but keeps its record;
- the swapped-in partition is handed around by a pointer into the pair's list, and the record's removal
  shifts that list under it: the partition after it moves instead (when there is none the list is freed
  under the pointer, and what follows is not defined);
- a record replaced is freed even where it keys its old pair's list: that pair looked up again reads
  freed memory.

An assertion failed or a null dereferenced aborts the leader (`LeaderFault`); freed memory read is not
predicted (`UndefinedAssignment`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_tools.consumers.assignors import AssignmentError
from kafka_tools.consumers.classic_member import TopicPartition


class LeaderFault(AssignmentError):
    """librdkafka's leader fails an assertion or dereferences a null in the assignor: it aborts."""


class UndefinedAssignment(AssignmentError):
    """librdkafka's leader reads memory it freed: what it assigns is not defined."""


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


@dataclass(eq=False)
class _Pair:
    """A ConsumerPair_t: its identity is the C object's (a map's key is the object itself)."""

    src: str
    dst: str


@dataclass
class _Entry:
    key: _Pair
    partitions: list[TopicPartition] = field(default_factory=list)
    dangling: bool = False  # its key was freed


class PartitionMovements:
    def __init__(self) -> None:
        self.records: dict[TopicPartition, _Pair] = {}
        self.by_topic: dict[str, dict[tuple[str, str], _Entry]] = {}

    def _entry(self, topic: str, pair: tuple[str, str]) -> _Entry | None:
        entry = self.by_topic.get(topic, {}).get(pair)
        if entry is not None and entry.dangling:
            raise UndefinedAssignment(
                f"librdkafka's leader looks up the movements {pair[0]} -> {pair[1]} of topic {topic} under a "
                "record it freed (rdkafka_sticky_assignor.c): what it assigns is not defined"
            )
        return entry

    def to_move(self, tp: TopicPartition, old: str, new: str) -> tuple[TopicPartition, bool]:
        """getTheActualPartitionToBeMoved: (the partition to move, whether it comes from a pair's list)."""
        if tp[0] not in self.by_topic:
            return tp, False
        record = self.records.get(tp)
        if record is not None and record.dst != old:
            raise LeaderFault(
                f"librdkafka's leader aborts: {_name(tp)} is recorded at {record.dst}, not at {old} "
                "(an assertion in getTheActualPartitionToBeMoved)"
            )
        reverse = self._entry(tp[0], (new, old))
        return (reverse.partitions[0], True) if reverse else (tp, False)

    def move(self, tp: TopicPartition, old: str, new: str, from_list: bool) -> TopicPartition:
        """PartitionMovements_movePartition; the partition the caller's pointer holds afterwards."""
        record = self.records.get(tp)
        if record is None:
            self._add(tp, _Pair(old, new))
            return tp
        topic_map = self.by_topic.get(tp[0])
        entry = self._entry(tp[0], (record.src, record.dst))
        if topic_map is None or entry is None:
            raise LeaderFault(
                f"librdkafka's leader aborts: {_name(tp)} moves again after moving back to {record.src} "
                "(its stale movement record has no list: a null or an assertion)"
            )
        pointer = tp
        if tp in entry.partitions:
            entry.partitions.remove(tp)
            if from_list and not entry.partitions:
                raise UndefinedAssignment(
                    f"librdkafka's leader moves {_name(tp)} back through a list it frees while using it "
                    "(rdkafka_sticky_assignor.c): what it assigns is not defined"
                )
            if from_list:
                pointer = entry.partitions[0]  # the list shifted under the pointer
        if not entry.partitions:
            del topic_map[(record.src, record.dst)]
        if not topic_map:
            del self.by_topic[tp[0]]
        if record.dst != old:
            raise LeaderFault(
                f"librdkafka's leader aborts: {_name(tp)} is recorded at {record.dst}, not at {old} "
                "(an assertion in PartitionMovements_movePartition)"
            )
        if record.src != new:
            self._add(pointer, _Pair(record.src, new))
        return pointer

    def _add(self, tp: TopicPartition, pair: _Pair) -> None:
        """PartitionMovements_addPartitionMovementRecord: the old record is freed first."""
        replaced = self.records.get(tp)
        self.records[tp] = pair
        topic_map = self.by_topic.setdefault(tp[0], {})
        for entry in topic_map.values():
            if entry.key is replaced:
                entry.dangling = True
        entry = self._entry(tp[0], (pair.src, pair.dst))
        if entry is None:
            entry = topic_map[(pair.src, pair.dst)] = _Entry(pair)
        entry.partitions.append(tp)
