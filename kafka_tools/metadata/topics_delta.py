"""TopicsDelta's replay: topics created and removed, partitions registered and changed
(PartitionRegistration.merge), the eligible leader replicas cleared."""

from __future__ import annotations

from copy import copy

from kafka_tools.format.plural import plural
from kafka_tools.metadata.delta_base import Delta
from kafka_tools.metadata.image import (
    MIGRATING_DIRECTORY,
    NO_LEADER_CHANGE,
    PartitionState,
    Topic,
)


def _ints(value: list | None) -> list[int]:
    return list(value) if value else []


class TopicsDelta(Delta):
    """TopicRecord … ClearElrRecord: the topics and their partitions."""

    # -- topics and partitions -------------------------------------------------------------------

    def _topic(self, offset: int, f: dict) -> None:
        tid, name = f["topicId"], f["name"]
        self.image.topics[tid] = Topic(name, tid)
        if self._wants(offset):
            self._event(offset, "topic-created", name, f"created (id {tid})", topic=name, topicId=tid)

    def _remove_topic(self, offset: int, f: dict) -> None:
        tid = f["topicId"]
        topic = self.image.topics.pop(tid, None)
        if topic is None:
            self._inconsistent(offset, "RemoveTopicRecord", f"topic id {tid} is not in the image")
            return
        # ConfigurationsDelta.replay(RemoveTopicRecord): the topic's configs go with it.
        self.image.configs.pop((2, topic.name), None)
        if self._wants(offset):
            n = len(topic.partitions)
            self._event(
                offset,
                "topic-deleted",
                topic.name,
                f"deleted ({plural(n, 'partition')})",
                topic=topic.name,
                topicId=tid,
            )

    def _clear_elr(self, offset: int, f: dict) -> None:
        """TopicsDelta.replay(ClearElrRecord): an empty name clears every topic's ELR (4.x)."""
        name = f.get("topicName") or ""
        topics = [t for t in self.image.topics.values() if not name or t.name == name]
        if name and not topics:
            self._inconsistent(offset, "ClearElrRecord", f"topic {name} is not in the image")
        for topic in topics:
            for partition in topic.partitions.values():
                partition.elr, partition.last_known_elr = [], []

    def _topic_of(self, offset: int, record_type: str, tid: str) -> Topic | None:
        topic = self.image.topics.get(tid)
        if topic is None:
            self._inconsistent(offset, record_type, f"topic id {tid} is not in the image")
        return topic

    def _partition(self, offset: int, f: dict) -> None:
        topic = self._topic_of(offset, "PartitionRecord", f["topicId"])
        if topic is None:
            return
        replicas = _ints(f.get("replicas"))
        directories = list(f.get("directories") or ())
        if len(directories) != len(replicas):
            directories = [MIGRATING_DIRECTORY] * len(replicas)  # defaultToMigrating
        part = PartitionState(
            partition_id=f.get("partitionId", -1),
            replicas=replicas,
            isr=_ints(f.get("isr")),
            removing_replicas=_ints(f.get("removingReplicas")),
            adding_replicas=_ints(f.get("addingReplicas")),
            leader=f.get("leader", -1),
            leader_epoch=f.get("leaderEpoch", -1),
            partition_epoch=f.get("partitionEpoch", -1),
            leader_recovery_state=f.get("leaderRecoveryState", 0),
            directories=directories,
            elr=_ints(f.get("eligibleLeaderReplicas")),
            last_known_elr=_ints(f.get("lastKnownElr")),
        )
        old = topic.partitions.get(part.partition_id)
        topic.partitions[part.partition_id] = part
        if self._wants(offset):
            subject = f"{topic.name}-{part.partition_id}"
            if old is None:
                self._event(
                    offset,
                    "partition-created",
                    subject,
                    f"replicas {part.replicas}, leader {part.leader}",
                    topic=topic.name,
                    partition=part.partition_id,
                    replicas=part.replicas,
                    leader=part.leader,
                )
            else:
                self._partition_events(offset, topic.name, old, part)

    def _partition_change(self, offset: int, f: dict) -> None:
        topic = self.image.topics.get(f["topicId"])
        if topic is None:
            self._topic_of(offset, "PartitionChangeRecord", f["topicId"])  # says so
            return
        pid = f["partitionId"]
        old = topic.partitions.get(pid)
        if old is None:
            self._inconsistent(
                offset, "PartitionChangeRecord", f"partition {topic.name}-{pid} is not in the image"
            )
            return
        since = self.events_from
        if since is not None and offset >= since:
            new = merge_partition_change(old, f)
            topic.partitions[pid] = new
            self._partition_events(offset, topic.name, old, new)
        else:
            apply_partition_change(old, f)

    def _partition_events(self, offset: int, topic: str, old: PartitionState, new: PartitionState) -> None:
        subject = f"{topic}-{new.partition_id}"
        base = {"topic": topic, "partition": new.partition_id}
        if old.leader != new.leader or old.leader_epoch != new.leader_epoch:
            self._event(
                offset,
                "leader-changed",
                subject,
                f"leader {old.leader} -> {new.leader} (epoch {new.leader_epoch})",
                **base,
                oldLeader=old.leader,
                leader=new.leader,
                leaderEpoch=new.leader_epoch,
            )
        if old.isr != new.isr:
            gone = [r for r in old.isr if r not in new.isr]
            added = [r for r in new.isr if r not in old.isr]
            kind = (
                "isr-shrunk"
                if gone and not added
                else "isr-expanded"
                if added and not gone
                else "isr-changed"
            )
            self._event(
                offset, kind, subject, f"isr {old.isr} -> {new.isr}", **base, oldIsr=old.isr, isr=new.isr
            )
        if old.replicas != new.replicas or old.adding_replicas != new.adding_replicas:
            self._event(
                offset,
                "replicas-changed",
                subject,
                f"replicas {old.replicas} -> {new.replicas}"
                + (f" (adding {new.adding_replicas})" if new.adding_replicas else "")
                + (f" (removing {new.removing_replicas})" if new.removing_replicas else ""),
                **base,
                oldReplicas=old.replicas,
                replicas=new.replicas,
                addingReplicas=new.adding_replicas,
                removingReplicas=new.removing_replicas,
            )
        if old.elr != new.elr or old.last_known_elr != new.last_known_elr:
            self._event(
                offset,
                "elr-changed",
                subject,
                f"elr {old.elr} -> {new.elr}, last known elr {new.last_known_elr}",
                **base,
                elr=new.elr,
                lastKnownElr=new.last_known_elr,
            )


def merge_partition_change(old: PartitionState, f: dict) -> PartitionState:
    """PartitionRegistration.merge, as a new PartitionState (see apply_partition_change)."""
    new = copy(old)
    apply_partition_change(new, f)
    return new


def apply_partition_change(p: PartitionState, f: dict) -> None:
    """PartitionRegistration.merge, in place: an absent (null) field keeps its value; a leader other
    than NO_LEADER_CHANGE (-2) replaces the leader and bumps the leader epoch; every change bumps the
    partition epoch; leaderRecoveryState -1 means no change; directories that no longer match the
    replicas become MIGRATING (defaultToMigrating)."""
    get = f.get
    replicas = get("replicas")
    if replicas is not None:
        p.replicas = list(replicas)
    directories = get("directories")
    if directories is not None:
        p.directories = list(directories)
    if len(p.directories) != len(p.replicas):
        p.directories = [MIGRATING_DIRECTORY] * len(p.replicas)
    leader = get("leader", NO_LEADER_CHANGE)
    if leader != NO_LEADER_CHANGE:
        p.leader = leader
        p.leader_epoch += 1
    p.partition_epoch += 1
    isr = get("isr")
    if isr is not None:
        p.isr = list(isr)
    removing = get("removingReplicas")
    if removing is not None:
        p.removing_replicas = list(removing)
    adding = get("addingReplicas")
    if adding is not None:
        p.adding_replicas = list(adding)
    recovery = get("leaderRecoveryState", -1)
    if recovery != -1:
        p.leader_recovery_state = recovery
    elr = get("eligibleLeaderReplicas")
    if elr is not None:
        p.elr = list(elr)
    last_known = get("lastKnownElr")
    if last_known is not None:
        p.last_known_elr = list(last_known)
