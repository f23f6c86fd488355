"""`groups watch`: ZooKeeper-based consumer groups live, as events: members, brokers, rebalances, lag.

The old high-level consumer coordinates only through ZooKeeper: it registers
``/consumers/G/ids/<id>``, watches the group's ids and ``/brokers/ids``, and on any change every member
releases its ``/consumers/G/owners/T/P`` nodes and claims the ones Kafka's range (or round-robin)
assignor gives it. This service watches the same znodes (``zk.watch.ZnodeMirror``: kazoo recipes,
never a polling loop) and derives the story from each new view of them:

* member joined/left, broker joined/left, controller moved, topic partitions added;
* a rebalance starts with a membership change, a partition count change, or the first ownership
  released while the group was settled; it finishes when every subscribed partition is owned by the
  thread the range assignor (``consumers.rebalance.plan_rebalance``) gives it, or, when the owners
  differ from that plan, once every subscribed partition is owned by a member and nothing changed for
  ``QUIET`` seconds; then one ``owner-changed`` per partition that moved (owner before → after) and a
  verification of the owners against the plan (unowned, owned by a thread that is not a member, owned
  against the plan), as Kafka's VerifyConsumerRebalance does;
* a partition not owned by a live member for longer than ``grace`` is stuck, with its planned owner;
* every ``lag_interval`` seconds (with a broker for the log end offsets), each partition's status in
  Burrow's terms (``consumers.lag_status``); a change of status is an event;
* connection loss and session expiry are events; after the reconnect every path is read again and
  what changed meanwhile is reported like any change.

The story is told by GroupTracker (consumers/group_tracker.py) from each view this module's GroupWatch
hands it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka_tools.consumers.assignors import Member, consumers_per_topic
from kafka_tools.consumers.group_tracker import (
    EXIT_STABLE,
    EXIT_TIMEOUT,
    TP,
    GroupTracker,
    WatchEvent,
    WatchOptions,
    sample_lags,
)
from kafka_tools.errors import KtoolError
from kafka_tools.zk.layout import (
    Broker,
    ConsumerMember,
    MalformedZnodeError,
    parse_broker,
    parse_consumer_registration,
    parse_controller,
    parse_owner,
    parse_topic_assignment,
)
from kafka_tools.zk.names import check_group_name, group_path
from kafka_tools.zk.reader import BROKER_IDS, BROKER_TOPICS, CONSUMERS, CONTROLLER
from kafka_tools.zk.watch import CONNECTED, LOST, SUSPENDED, ZnodeMirror

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafka_tools.broker.client import Broker as KafkaClient


# --------------------------------------------------------------------------- the watch


class GroupWatch:
    """Watches groups and the cluster through one ZnodeMirror and hands events to `emit`."""

    def __init__(
        self,
        zk: KazooClient,
        options: WatchOptions,
        emit: Callable[[WatchEvent], None],
        broker: KafkaClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.zk = zk
        self.options = options
        self.emit_event = emit
        self.broker = broker
        self.clock = clock
        self.mirror = ZnodeMirror(zk)
        self.trackers: dict[str, GroupTracker] = {}
        self.brokers: dict[int, Broker] | None = None
        self.controller: int | None = None
        self.controller_seen = False
        self.partitions: dict[str, list[int]] = {}
        self.malformed: set[str] = set()
        self.owner_topics: dict[str, set[str]] = {}  # group -> topics under its /owners being tracked
        self.lag_problem: dict[str, str] = {}  # group -> why its offsets could not be read last time
        for group in options.groups:
            check_group_name(group)  # before any watch is set

    # ------------------------------------------------------------------ events

    def _emit(self, event: str, group: str | None, fields: dict[str, Any], now: float | None = None) -> None:
        self.emit_event(WatchEvent(self.clock() if now is None else now, event, group, fields))

    def _parse(self, parse: Callable[..., Any], *args: Any) -> Any:
        try:
            return parse(*args)
        except MalformedZnodeError as exc:
            path = args[-1]
            if path not in self.malformed:
                self.malformed.add(path)
                self._emit("malformed-znode", None, {"path": path, "message": str(exc)})
            return None

    # ------------------------------------------------------------------ what is tracked

    def _track_group(self, group: str) -> bool:
        """Track the group's ids and owners (again, if arming failed while the connection was down)."""
        if group not in self.trackers:
            self.trackers[group] = GroupTracker(group, self.options.grace, self.options.strategy)
        ids = self.mirror.track_children(group_path(group, "ids"), with_data=True)
        owners = self.mirror.track_children(group_path(group, "owners"))
        return ids or owners

    def _untrack_group(self, group: str) -> None:
        self.trackers.pop(group, None)
        base = group_path(group)
        self.mirror.untrack(f"{base}/ids")
        self.mirror.untrack(f"{base}/owners")
        for topic in self.owner_topics.pop(group, set()):
            self.mirror.untrack(f"{base}/owners/{topic}")

    def _owner_topics_tracked(self, group: str) -> set[str]:
        return self.owner_topics.get(group, set())

    def _track_more(self) -> bool:
        """Track what the current view asks for: groups (--all), owners/T of each group, and
        /brokers/topics/T of every topic a member subscribes to. True when something was added."""
        added = False
        if self.options.all_groups:
            present = set(self.mirror.children(CONSUMERS))
            for group in sorted(present - set(self.trackers)):
                self._track_group(group)
                self._emit("group-appeared", group, {})
                added = True
            for group in sorted(set(self.trackers) - present):
                self._untrack_group(group)
                self._emit("group-vanished", group, {})
        owner_topics = self.owner_topics
        all_topics = sorted(self.mirror.children(BROKER_TOPICS))
        wanted_topics: set[str] = set()
        for group in self.trackers:
            added |= self._track_group(group)
            base = group_path(group)
            topics = set(self.mirror.children(f"{base}/owners"))
            for topic in topics:
                added |= self.mirror.track_children(f"{base}/owners/{topic}", with_data=True)
            owner_topics[group] = topics | owner_topics.get(group, set())
            members = self._members(group)
            group_members = [Member(m.id, dict(m.subscription), m.pattern) for m in members.values()]
            try:
                wanted_topics |= set(consumers_per_topic(group_members, all_topics))
            except KtoolError:
                pass
            wanted_topics |= topics
        for topic in sorted(wanted_topics & set(all_topics)):
            if self.mirror.track_data(f"{BROKER_TOPICS}/{topic}"):
                self.partitions.setdefault(topic, [])
                added = True
        return added

    # ------------------------------------------------------------------ views

    def _members(self, group: str) -> dict[str, ConsumerMember]:
        path = group_path(group, "ids")
        members = {}
        for name, data in self.mirror.children(path).items():
            if data is None:
                continue
            member = self._parse(parse_consumer_registration, name, data, f"{path}/{name}")
            if member is not None:
                members[name] = member
        return members

    def _owners(self, group: str) -> dict[TP, str]:
        owners: dict[TP, str] = {}
        base = group_path(group, "owners")
        for topic in self._owner_topics_tracked(group):
            for name, data in self.mirror.children(f"{base}/{topic}").items():
                if data is None or not name.isdigit():  # 0.7's broker-partition keys are not watched
                    continue
                owner = self._parse(parse_owner, data, f"{base}/{topic}/{name}")
                if owner is not None:
                    owners[(topic, int(name))] = owner
        return owners

    def _cluster_step(self, now: float, initial: bool) -> bool:
        """Brokers, controller, partition counts: events; True when a partition count changed."""
        brokers: dict[int, Broker] = {}
        for name, data in self.mirror.children(BROKER_IDS).items():
            if name.isdigit() and data is not None:
                broker = self._parse(parse_broker, int(name), data, f"{BROKER_IDS}/{name}")
                if broker is not None:
                    brokers[broker.id] = broker
        old = self.brokers or {}
        for bid in sorted(set(brokers) - set(old)):
            b = brokers[bid]
            fields: dict[str, Any] = {"broker": bid, "host": b.host, "port": b.port}
            if initial:
                fields["initial"] = True
            self._emit("broker-joined", None, fields, now)
        for bid in sorted(set(old) - set(brokers)):
            self._emit(
                "broker-left", None, {"broker": bid, "host": old[bid].host, "port": old[bid].port}, now
            )
        self.brokers = brokers

        data = self.mirror.data(CONTROLLER)
        ctrl = None if data is None else self._parse(parse_controller, data, CONTROLLER)
        ctrl_id = None if ctrl is None else ctrl.broker_id
        if ctrl_id != self.controller or not self.controller_seen:
            fields = {"from": self.controller, "to": ctrl_id}
            if initial:
                fields["initial"] = True
            self._emit("controller-moved", None, fields, now)
            self.controller, self.controller_seen = ctrl_id, True

        changed = False
        for topic, before in list(self.partitions.items()):
            path = f"{BROKER_TOPICS}/{topic}"
            data = self.mirror.data(path)
            parsed = None if data is None else self._parse(parse_topic_assignment, data, path)
            now_ids = [] if parsed is None else sorted(parsed[1])
            if now_ids != before:
                if before and len(now_ids) > len(before):
                    self._emit(
                        "partitions-added",
                        None,
                        {"topic": topic, "from": len(before), "to": len(now_ids)},
                        now,
                    )
                    changed = True
                self.partitions[topic] = now_ids
        return changed

    def step(self, initial: bool = False) -> None:
        """Read what the watches marked, then turn the new view into events.

        The view is the one `_track_more` last saw whole: a refresh after it could bring in a member
        whose topics are not tracked yet, and a subscribed topic of unknown size plans no partitions
        (a rebalance "finished" at once, with nothing moved)."""
        while True:
            self.mirror.refresh()
            if not self._track_more():
                break
        _, connection = self.mirror.take_changes()
        now = self.clock()
        for change in connection:
            name = {
                SUSPENDED: "connection-suspended",
                LOST: "session-expired",
                CONNECTED: "connection-restored",
            }
            self._emit(name[change.state], None, {}, change.at)
        topology = self._cluster_step(now, initial)
        all_topics = sorted(self.mirror.children(BROKER_TOPICS))
        for group, tracker in list(self.trackers.items()):
            members, owners = self._members(group), self._owners(group)
            for event, fields in tracker.update(now, members, owners, self.partitions, all_topics, topology):
                self._emit(event, group, fields, now)

    def state_events(self) -> None:
        for group, tracker in sorted(self.trackers.items()):
            self._emit("group-state", group, tracker.state_fields())

    # ------------------------------------------------------------------ lag

    def sample_lag(self) -> None:
        from kafka_tools.consumers.groups import describe_group

        def describe(group: str):
            return describe_group(self.zk, group, self.broker)

        sample_lags(self.trackers, describe, self.lag_problem, self._emit, self.clock)

    # ------------------------------------------------------------------ the loop

    def run(self) -> int:
        """Watch until interrupted (KeyboardInterrupt propagates), or as --once/--until-stable say."""
        opts = self.options
        if opts.all_groups:
            self.mirror.track_children(CONSUMERS)
        self.mirror.track_children(BROKER_IDS, with_data=True)
        self.mirror.track_children(BROKER_TOPICS)
        self.mirror.track_data(CONTROLLER)
        for group in opts.groups:
            self._track_group(group)
        start = self.clock()
        self.step(initial=True)
        if opts.once:
            self.state_events()
            return EXIT_STABLE
        lag_due = start if opts.lag_interval and self.broker is not None else None
        deadline = None if opts.timeout is None else start + opts.timeout
        while True:
            now = self.clock()
            if opts.until_stable and all(t.stable for t in self.trackers.values()):
                self.state_events()
                return EXIT_STABLE
            if deadline is not None and now >= deadline:
                self._emit("timeout", None, {"afterMs": round((now - start) * 1000)})
                self.state_events()
                return EXIT_TIMEOUT
            if lag_due is not None and now >= lag_due:
                self.sample_lag()
                lag_due = now + (opts.lag_interval or 0)
            wake = [t for t in (deadline, lag_due) if t is not None]
            wake += [d for d in (t.next_deadline() for t in self.trackers.values()) if d is not None]
            timeout = max(0.0, min(wake) - self.clock()) if wake else None
            # At most a second at a time, so that Ctrl-C is seen at once on every platform.
            self.mirror.wait(1.0 if timeout is None else min(timeout, 1.0))
            self.step()
