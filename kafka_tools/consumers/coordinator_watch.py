"""`groups watch --bootstrap-server`: groups Kafka coordinates (classic and KIP-848 consumer groups),
live, through their coordinators — the same story and events as the ZooKeeper watch.

Kafka's coordinators push nothing to a bystander, so this polls: every `interval` seconds (1 s by
default, a sleep between polls, never a busy loop) DescribeGroups / ConsumerGroupDescribe for each group
(consumers/coordinated.py: state, members, assignments, and for a consumer group the member epochs, target
assignments, group epoch and target assignment epoch), and the topics' partition counts from the
brokers' metadata. Each view is handed to the one story-teller, GroupTracker (group_tracker.py), in its
Kafka mode: owners are member ids, and the plan is the coordinator's own —

* a consumer group (KIP-848): each partition's planned owner is the member whose target assignment
  holds it; the group is settled when every member is at the target assignment epoch (the group epoch
  reached too) and owns exactly its target assignment;
* a classic group: the leader's assignment is the plan (ktool cannot know it before it is made): the
  group is settled when it is Stable and every partition of the topics its members are assigned is
  owned.

A group that does not exist (its coordinator says Dead) is watched until it appears; it is never stable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka_tools.consumers.coordinated import describe_coordinated
from kafka_tools.consumers.group_tracker import (
    EXIT_STABLE,
    EXIT_TIMEOUT,
    TP,
    GroupTracker,
    Verification,
    WatchEvent,
    WatchOptions,
    sample_lags,
)
from kafka_tools.zk.layout import ConsumerMember

if TYPE_CHECKING:
    from kafka_tools.broker.client import Broker, KafkaGroup

WATCHED_TYPES = ("classic", "consumer")  # share and streams groups have other protocols


def judge(group: KafkaGroup, partitions: dict[str, list[int]]) -> Verification:
    """A group's owners against its coordinator's plan (see the module's docstring)."""
    owners = {tp: m.member_id for m in group.members for tp in m.assignment}
    if group.type == "consumer":
        planned: dict[TP, str | None] = {
            tp: m.member_id for m in group.members for tp in (m.target_assignment or [])
        }
        pending = [
            f"member {m.member_id} at epoch {m.member_epoch}, target {group.assignment_epoch}"
            for m in group.members
            if m.member_epoch != group.assignment_epoch
        ]
        if group.group_epoch != group.assignment_epoch:
            pending.append(
                f"group epoch {group.group_epoch}, target assignment epoch {group.assignment_epoch}"
            )
        against = [tp for tp in sorted(owners) if planned.get(tp) != owners[tp]]
    else:
        topics = sorted({t for t, _ in owners})
        planned = {(t, p): owners.get((t, p)) for t in topics for p in partitions.get(t, [])}
        pending = [] if group.state_name == "Stable" else [f"group {group.state_name}"]
        against = []
    unowned = [tp for tp in sorted(planned) if tp not in owners]
    return Verification(planned, unowned, [], against, pending)


class CoordinatorWatch:
    """Polls the groups' coordinators and hands each view to a GroupTracker; events go to `emit`."""

    def __init__(
        self,
        broker: Broker,
        options: WatchOptions,
        emit: Callable[[WatchEvent], None],
        interval: float = 1.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.broker = broker
        self.options = options
        self.emit_event = emit
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self.trackers: dict[str, GroupTracker] = {}
        self.partitions: dict[str, list[int]] = {}
        self.lag_problem: dict[str, str] = {}
        for group in options.groups:
            self._tracker(group)

    def _emit(self, event: str, group: str | None, fields: dict[str, Any], now: float | None = None) -> None:
        self.emit_event(WatchEvent(self.clock() if now is None else now, event, group, fields))

    def _tracker(self, group: str) -> GroupTracker:
        if group not in self.trackers:
            self.trackers[group] = GroupTracker(group, self.options.grace, kafka=True)
        return self.trackers[group]

    def _follow_all(self) -> None:
        """--all: the classic and consumer groups the brokers list now; appearing and vanishing told."""
        present = {g.group for g in self.broker.listed_groups() if g.type in WATCHED_TYPES}
        for group in sorted(present - set(self.trackers)):
            self._tracker(group)
            self._emit("group-appeared", group, {})
        for group in sorted(set(self.trackers) - present):
            del self.trackers[group]
            self._emit("group-vanished", group, {})

    def _topology(self, now: float) -> bool:
        """Partition counts from the brokers' metadata; `partitions-added` for a topic that grew."""
        changed = False
        for topic, numbers in self.broker.topics().items():
            before = self.partitions.get(topic)
            if before is not None and len(numbers) > len(before):
                self._emit(
                    "partitions-added", None, {"topic": topic, "from": len(before), "to": len(numbers)}, now
                )
                changed = True
            self.partitions[topic] = numbers
        return changed

    def step(self) -> None:
        """One poll: every group described, its view turned into events."""
        if self.options.all_groups:
            self._follow_all()
        now = self.clock()
        topology = self._topology(now)
        all_topics = sorted(self.partitions)
        for group, tracker in list(self.trackers.items()):
            described = describe_coordinated(self.broker, group)
            tracker.hosts.update({m.member_id: m.host for m in described.members})
            members = {
                m.member_id: ConsumerMember(
                    m.member_id,
                    {t: 1 for t in sorted({t for t, _ in [*m.assignment, *(m.target_assignment or [])]})},
                    "static",
                )
                for m in described.members
            }
            owners = {tp: m.member_id for m in described.members for tp in m.assignment}
            epochs = (
                None if described.type != "consumer" else (described.group_epoch, described.assignment_epoch)
            )
            # A group its coordinator does not know (not there yet, or gone) is an empty view, as an
            # absent /consumers/G is on ZooKeeper: watched until it appears, never stable.
            verification = (
                judge(described, self.partitions) if described.known else Verification({}, [], [], [])
            )
            for event, fields in tracker.update(
                now, members, owners, self.partitions, all_topics, topology, verification, epochs
            ):
                self._emit(event, group, fields, now)

    def state_events(self) -> None:
        for group, tracker in sorted(self.trackers.items()):
            self._emit("group-state", group, tracker.state_fields())

    def sample_lag(self) -> None:
        from kafka_tools.consumers.groups import describe_kafka_group

        def describe(group: str):
            return describe_kafka_group(self.broker, group)

        sample_lags(self.trackers, describe, self.lag_problem, self._emit, self.clock)

    def run(self) -> int:
        """Poll until interrupted (KeyboardInterrupt propagates), or as --once/--until-stable say."""
        opts = self.options
        start = self.clock()
        self.step()
        if opts.once:
            self.state_events()
            return EXIT_STABLE
        lag_due = start if opts.lag_interval else None
        deadline = None if opts.timeout is None else start + opts.timeout
        next_poll = start + self.interval
        while True:
            now = self.clock()
            if opts.until_stable and self.trackers and all(t.stable for t in self.trackers.values()):
                self.state_events()
                return EXIT_STABLE
            if deadline is not None and now >= deadline:
                self._emit("timeout", None, {"afterMs": round((now - start) * 1000)})
                self.state_events()
                return EXIT_TIMEOUT
            if lag_due is not None and now >= lag_due:
                self.sample_lag()
                lag_due = now + (opts.lag_interval or 0)
            wake = [t for t in (deadline, lag_due, next_poll) if t is not None]
            wake += [d for d in (t.next_deadline() for t in self.trackers.values()) if d is not None]
            self.sleep(max(0.0, min(wake) - self.clock()))
            if self.clock() >= next_poll:
                self.step()
                next_poll = self.clock() + self.interval
            else:
                now = self.clock()
                for group, tracker in self.trackers.items():
                    for event, fields in tracker.tick(now):
                        self._emit(event, group, fields, now)
