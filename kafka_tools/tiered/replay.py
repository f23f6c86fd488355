"""`__remote_log_metadata` events replayed into each user partition's remote segments, with the state
transitions Kafka's `RemoteLogSegmentState` / `RemotePartitionDeleteState.isValidTransition` allow.

Like Kafka's `RemoteLogMetadataCache`, a segment leaves the replay when its delete finishes: memory
follows the live segments, not the records read (only counts are kept of the rest)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_tools.format.remote_log_metadata import (
    PARTITION_DELETE_STATES,
    SEGMENT_STATES,
    RemoteLogMetadataRecord,
)

COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = (SEGMENT_STATES[i] for i in range(4))
MARKED, DELETE_PARTITION_STARTED, DELETE_PARTITION_FINISHED = (PARTITION_DELETE_STATES[i] for i in range(3))

# RemoteLogSegmentState.isValidTransition: the states each may move to (besides itself, kept for retries)
SEGMENT_NEXT: dict[str, frozenset[str]] = {
    COPY_STARTED: frozenset({COPY_FINISHED, DELETE_STARTED}),
    COPY_FINISHED: frozenset({DELETE_STARTED}),
    DELETE_STARTED: frozenset({DELETE_FINISHED}),
    DELETE_FINISHED: frozenset(),
}
# RemotePartitionDeleteState.isValidTransition
PARTITION_NEXT: dict[str, frozenset[str]] = {
    MARKED: frozenset({DELETE_PARTITION_STARTED}),
    DELETE_PARTITION_STARTED: frozenset({DELETE_PARTITION_FINISHED}),
    DELETE_PARTITION_FINISHED: frozenset(),
}


@dataclass(frozen=True, slots=True)
class Where:
    """A record of `__remote_log_metadata`: its partition and offset."""

    partition: int
    offset: int

    def __str__(self) -> str:
        return f"__remote_log_metadata-{self.partition}@{self.offset}"


@dataclass(slots=True)
class RemoteSegment:
    """One remote segment as its events left it."""

    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    size: int
    leader_epochs: dict[int, int]  # epoch -> its first offset in the segment
    state: str
    started_ms: int  # COPY_SEGMENT_STARTED's event time
    state_ms: int  # the current state's event time
    metadata_partition: int  # the __remote_log_metadata partition of its events
    created_offset: int  # the COPY_SEGMENT_STARTED record's offset
    last_offset: int  # the offset of the record that set the current state

    @property
    def created(self) -> Where:
        return Where(self.metadata_partition, self.created_offset)

    @property
    def last(self) -> Where:
        return Where(self.metadata_partition, self.last_offset)


@dataclass(frozen=True, slots=True)
class ReplayIssue:
    """An event the transitions do not allow (the broker's cache refuses it too)."""

    kind: str  # illegal-transition | unknown-segment | duplicate-segment
    where: Where
    segment_id: str | None
    message: str


@dataclass(slots=True)
class PartitionReplay:
    """A user partition's remote state."""

    topic: str
    topic_id: str
    partition: int
    segments: dict[str, RemoteSegment] = field(default_factory=dict)  # every segment not deleted
    deleted_segments: int = 0  # segments whose delete finished (left the replay)
    delete_state: str | None = None
    delete_state_ms: int | None = None
    events: int = 0
    metadata_partitions: set[int] = field(default_factory=set)
    issues: list[ReplayIssue] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def _state(table: dict[int, str], state: int) -> str:
    return table.get(state) or f"UNKNOWN({state})"


class Replay:
    """Events applied in each metadata partition's offset order (one partition holds all the events of
    a user partition, so their order is the order the broker saw).

    `apply` runs once a record, a million times for a large topic: it makes no object for an event
    that only moves a segment on (a `Where` is built when a finding asks for one)."""

    def __init__(self) -> None:
        self.partitions: dict[tuple[str, int], PartitionReplay] = {}
        self.records = 0
        self.unknown_records = 0  # apiKeys or versions this ktool does not know (shown by dump-log)

    def _partition(self, topic_id: str, partition: int, topic: str, number: int) -> PartitionReplay:
        key = (topic_id, partition)
        part = self.partitions.get(key)
        if part is None:
            part = self.partitions[key] = PartitionReplay(topic, topic_id, partition)
        part.events += 1
        if number not in part.metadata_partitions:
            part.metadata_partitions.add(number)
        return part

    def apply(self, number: int, offset: int, record: RemoteLogMetadataRecord) -> None:
        """One record, at `offset` of `__remote_log_metadata-<number>`."""
        api_key = record.api_key
        if api_key == 1 and record.known:  # the common case: a segment's state moves on
            f = record.fields
            seg_id_field = f["remoteLogSegmentId"]
            tip = seg_id_field["topicIdPartition"]
            self.update(
                number,
                offset,
                tip["id"],
                tip["partition"],
                tip["name"],
                seg_id_field["id"],
                f["remoteLogSegmentState"],
                f["eventTimestampMs"],
                f["brokerId"],
            )
        elif api_key == 0 and record.known:
            self._add(number, offset, record.fields)
        else:
            self.records += 1
            if not record.known:
                self.unknown_records += 1
            elif api_key == 2:
                self._partition_delete(Where(number, offset), record.fields)
            else:  # snapshot records belong in remote_log_snapshot files, never in the topic
                self.unknown_records += 1

    def update(
        self,
        number: int,
        offset: int,
        topic_id: str,
        partition: int,
        topic: str,
        seg_id: str,
        state: int,
        event_ms: int,
        broker_id: int,
    ) -> None:
        """A RemoteLogSegmentMetadataUpdateRecord's fields (format/remote_events.py gives them flat, a
        million times for a large topic: it makes no object when a segment only moves on)."""
        self.records += 1
        part = self.partitions.get((topic_id, partition))
        if part is None or number not in part.metadata_partitions:
            part = self._partition(topic_id, partition, topic, number)
        else:  # _partition's work, inline: this is the loop of a million records
            part.events += 1
        seg = part.segments.get(seg_id)
        target = SEGMENT_STATES.get(state)
        if seg is None or target is None or (target != seg.state and target not in SEGMENT_NEXT[seg.state]):
            part.issues.append(self._refused(number, offset, seg_id, seg, state))
        elif target == DELETE_FINISHED:
            del part.segments[seg_id]
            part.deleted_segments += 1
        else:
            seg.state, seg.state_ms, seg.last_offset = target, event_ms, offset
            seg.broker_id = broker_id

    @staticmethod
    def _refused(number: int, offset: int, seg_id: str, seg: RemoteSegment | None, state: int) -> ReplayIssue:
        target = _state(SEGMENT_STATES, state)
        where = Where(number, offset)
        if seg is None:
            message = f"{target} for segment {seg_id}, which no live COPY_SEGMENT_STARTED created"
            return ReplayIssue("unknown-segment", where, seg_id, message)
        message = (
            f"segment {seg_id} offsets {seg.start_offset}-{seg.end_offset}: {seg.state} -> {target} "
            f"(set at {seg.last})"
        )
        return ReplayIssue("illegal-transition", where, seg_id, message)

    def _add(self, number: int, offset: int, f: dict) -> None:
        segment = f["remoteLogSegmentId"]
        tip = segment["topicIdPartition"]
        self.add(
            number,
            offset,
            tip["id"],
            tip["partition"],
            tip["name"],
            segment["id"],
            f["remoteLogSegmentState"],
            f["eventTimestampMs"],
            f["brokerId"],
            f["startOffset"],
            f["endOffset"],
            f["segmentSizeInBytes"],
            {e["leaderEpoch"]: e["offset"] for e in f["segmentLeaderEpochs"]},
        )

    def add(
        self,
        number: int,
        offset: int,
        topic_id: str,
        partition: int,
        topic: str,
        seg_id: str,
        state: int,
        event_ms: int,
        broker_id: int,
        start_offset: int,
        end_offset: int,
        size: int,
        leader_epochs: dict[int, int],
    ) -> None:
        """A RemoteLogSegmentMetadataRecord's fields (a copy starts; flat, as `update`'s)."""
        self.records += 1
        part = self._partition(topic_id, partition, topic, number)
        named = _state(SEGMENT_STATES, state)
        if named != COPY_STARTED:
            part.issues.append(
                ReplayIssue(
                    "illegal-transition",
                    Where(number, offset),
                    seg_id,
                    f"segment {seg_id} offsets {start_offset}-{end_offset} created in {named}, "
                    f"not {COPY_STARTED}",
                )
            )
            return
        if seg_id in part.segments:
            part.issues.append(
                ReplayIssue(
                    "duplicate-segment", Where(number, offset), seg_id, f"segment {seg_id} created again"
                )
            )
            return
        part.segments[seg_id] = RemoteSegment(
            seg_id,
            start_offset,
            end_offset,
            broker_id,
            size,
            leader_epochs,
            COPY_STARTED,
            event_ms,
            event_ms,
            number,
            offset,
            offset,
        )

    def _partition_delete(self, where: Where, f: dict) -> None:
        tip = f["topicIdPartition"]
        part = self._partition(tip["id"], tip["partition"], tip["name"], where.partition)
        target = _state(PARTITION_DELETE_STATES, f["remotePartitionDeleteState"])
        current = part.delete_state
        allowed = target == MARKED if current is None else target in PARTITION_NEXT.get(current, ())
        if target != current and not allowed:
            part.issues.append(
                ReplayIssue(
                    "illegal-transition", where, None, f"partition delete {current or 'none'} -> {target}"
                )
            )
            return
        part.delete_state, part.delete_state_ms = target, f["eventTimestampMs"]
