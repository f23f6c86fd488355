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

Why one module of this size: one state machine, GroupTracker (the story derived from each new view of a
group's znodes) and GroupWatch (the views and the lag it is fed), sharing the events, the options and
the verification against the plan; no other module uses them.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_tools.consumers.assignors import RANGE, Member, ThreadId, consumers_per_topic
from kafka_tools.consumers.lag_status import PartitionWindow, Sample
from kafka_tools.consumers.rebalance import plan_rebalance
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
from kafka_tools.zk.reader import BROKER_IDS, BROKER_TOPICS, CONSUMERS, CONTROLLER
from kafka_tools.zk.watch import CONNECTED, LOST, SUSPENDED, ZnodeMirror

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafka_tools.broker.client import Broker as KafkaClient

TP = tuple[str, int]
QUIET = 1.0  # seconds an all-owned group against the plan must stay unchanged to count as settled

EXIT_STABLE = 0
EXIT_TIMEOUT = 1


@dataclass(frozen=True)
class WatchEvent:
    """One thing that happened: `event` is a stable name, `group` None for cluster-wide events."""

    ts: float
    event: str
    group: str | None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class WatchOptions:
    groups: list[str] = field(default_factory=list)
    all_groups: bool = False
    grace: float = 30.0
    lag_interval: float | None = None  # None: no lag sampling
    until_stable: bool = False
    timeout: float | None = None
    once: bool = False
    strategy: str = RANGE


# --------------------------------------------------------------------------- one group


_GENERATED_ID = re.compile(r"(?P<host>.+)-\d{10,}-[0-9a-f]{8}")


def member_host(group: str, member_id: str) -> str | None:
    """The host in a generated consumer id (``group_host-<ms>-<uuid8>``); None for a set consumer.id."""
    rest = member_id[len(group) + 1 :] if member_id.startswith(group + "_") else member_id
    match = _GENERATED_ID.fullmatch(rest)
    return match["host"] if match else None


@functools.lru_cache(maxsize=65536)  # owner strings repeat on every view of a 1,000-partition group
def _consumer(owner: str) -> str | None:
    try:
        return ThreadId.parse(owner).consumer
    except ValueError:
        return None


def _tp(tp: TP, **extra: Any) -> dict[str, Any]:
    return {"topic": tp[0], "partition": tp[1], **extra}


@dataclass
class Verification:
    """Owners against the plan for the current members (VerifyConsumerRebalance, and the plan)."""

    planned: dict[TP, str]
    unowned: list[TP]
    not_member: list[TP]
    against_plan: list[TP]

    @property
    def ok(self) -> bool:
        return not (self.unowned or self.not_member or self.against_plan)

    def fields(self, owners: dict[TP, str]) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "partitions": len(self.planned),
            "unowned": [_tp(tp, expectedOwner=self.planned.get(tp)) for tp in self.unowned],
            "notMember": [
                _tp(tp, owner=owners[tp], expectedOwner=self.planned.get(tp)) for tp in self.not_member
            ],
            "againstPlan": [
                _tp(tp, owner=owners[tp], expectedOwner=self.planned.get(tp)) for tp in self.against_plan
            ],
        }


def verify(
    members: dict[str, ConsumerMember],
    owners: dict[TP, str],
    partitions: dict[str, list[int]],
    all_topics: list[str],
    strategy: str = RANGE,
) -> Verification:
    """Compare `owners` with the assignment Kafka's assignor computes for `members` (the same code as
    `groups rebalance-plan`)."""
    group = [Member(m.id, dict(m.subscription), m.pattern) for m in members.values()]
    subscribed = consumers_per_topic(group, all_topics) if group else {}
    in_play = {t: partitions[t] for t in subscribed if t in partitions}
    plan = plan_rebalance(group, in_play, owners, strategy=strategy, all_topics=all_topics)
    planned = {tp: str(thread) for tp, thread in plan.proposed.items() if thread is not None}
    live = set(members)
    unowned = [tp for tp in planned if tp not in owners]
    not_member = [tp for tp in sorted(owners) if _consumer(owners[tp]) not in live]
    against = [tp for tp in sorted(owners) if _consumer(owners[tp]) in live and owners[tp] != planned.get(tp)]
    return Verification(planned, unowned, not_member, against)


class GroupTracker:
    """One group's view and its rebalance state machine; `update` returns the events of a new view."""

    def __init__(self, name: str, grace: float, strategy: str = RANGE) -> None:
        self.name = name
        self.grace = grace
        self.strategy = strategy
        self.members: dict[str, ConsumerMember] | None = None
        self.owners: dict[TP, str] = {}
        self.verification: Verification | None = None
        self.rebalancing = False
        self.started = 0.0
        self.owners_at_start: dict[TP, str] = {}
        self.last_change = 0.0
        self.unsettled: dict[TP, float] = {}  # partitions not held by a live member, since
        self.stuck: set[TP] = set()
        self.lag: dict[TP, PartitionWindow] = {}

    @property
    def stable(self) -> bool:
        """Settled and owning what it consumes: a group with no members (a typo, or every consumer
        gone) or nothing to consume is never stable, so `--until-stable` cannot pass on it."""
        v = self.verification
        return not self.rebalancing and bool(self.members) and v is not None and v.ok and bool(v.planned)

    def next_deadline(self) -> float | None:
        """When `update` must run again even if nothing changes (grace, quiet period)."""
        times = [since + self.grace for tp, since in self.unsettled.items() if tp not in self.stuck]
        if self.rebalancing:
            times.append(self.last_change + QUIET)
        return min(times) if times else None

    def update(
        self,
        now: float,
        members: dict[str, ConsumerMember],
        owners: dict[TP, str],
        partitions: dict[str, list[int]],
        all_topics: list[str],
        topology_changed: bool = False,
    ) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        first = self.members is None
        old_members = self.members or {}
        joined = [m for m in sorted(members) if m not in old_members]
        left = [m for m in sorted(old_members) if m not in members]
        for m in joined:
            out.append(("member-joined", self._member_fields(members[m], initial=first)))
        for m in left:
            out.append(("member-left", {"member": m, "host": member_host(self.name, m)}))
        released = [tp for tp, o in self.owners.items() if owners.get(tp) != o]
        owners_changed = owners != self.owners
        old_owners = self.owners
        self.members, self.owners = dict(members), dict(owners)
        if owners_changed or first:
            self.last_change = now
        try:
            self.verification = verify(members, owners, partitions, all_topics, self.strategy)
        except KtoolError as exc:  # registrations Kafka's assignor would refuse too
            out.append(("plan-failed", {"message": str(exc)}))
            self.verification = None
            return out
        v = self.verification

        if first:
            if not v.ok:
                self._start(now, owners, "in progress when the watch started", out)
        elif not self.rebalancing and (joined or left or released or owners_changed or topology_changed):
            reason = (
                "member joined"
                if joined
                else "member left"
                if left
                else "partitions added"
                if topology_changed
                else "ownership released"
                if released
                else "ownership changed"
            )
            self._start(now, old_owners, reason, out)
        self._check_stuck(now, out)
        if self.rebalancing:
            held = all(_consumer(owners.get(tp, "")) in members for tp in v.planned)
            if v.ok or (held and not v.not_member and now - self.last_change >= QUIET):
                self._finish(now, out)
        return out

    def _member_fields(self, m: ConsumerMember, initial: bool) -> dict[str, Any]:
        fields = {
            "member": m.id,
            "host": member_host(self.name, m.id),
            "subscription": dict(m.subscription),
            "pattern": m.pattern,
            "registered": m.timestamp,
        }
        if initial:
            fields["initial"] = True
        return fields

    def _start(self, now: float, owners_before: dict[TP, str], reason: str, out: list) -> None:
        # The quiet period counts from the start: a join with the owners unchanged for long is not
        # "settled" at once (it finished with nothing moved, then started again when they moved).
        self.rebalancing, self.started, self.last_change = True, now, now
        self.owners_at_start = dict(owners_before)
        out.append(("rebalance-started", {"reason": reason, "members": sorted(self.members or {})}))

    def _finish(self, now: float, out: list) -> None:
        v = self.verification
        assert v is not None
        moved = sorted(
            tp
            for tp in set(self.owners_at_start) | set(self.owners)
            if self.owners_at_start.get(tp) != self.owners.get(tp)
        )
        for tp in moved:
            out.append(
                (
                    "owner-changed",
                    _tp(tp, **{"from": self.owners_at_start.get(tp), "to": self.owners.get(tp)}),
                )
            )
        out.append(
            (
                "rebalance-finished",
                {
                    "durationMs": round((now - self.started) * 1000),
                    "moved": len(moved),
                    "partitions": len(v.planned),
                    "members": sorted(self.members or {}),
                    "matchesPlan": v.ok,
                },
            )
        )
        out.append(("rebalance-verified", v.fields(self.owners)))
        self.rebalancing = False

    def _check_stuck(self, now: float, out: list) -> None:
        v = self.verification
        assert v is not None and self.members is not None
        for tp in v.planned:
            if _consumer(self.owners.get(tp, "")) in self.members:
                self.unsettled.pop(tp, None)
                if tp in self.stuck:
                    self.stuck.discard(tp)
                    out.append(("partition-recovered", _tp(tp, owner=self.owners[tp])))
            else:
                self.unsettled.setdefault(tp, now)
        for tp in [tp for tp in self.unsettled if tp not in v.planned]:
            del self.unsettled[tp]
            self.stuck.discard(tp)
        for tp, since in sorted(self.unsettled.items()):
            if tp not in self.stuck and now - since >= self.grace:
                self.stuck.add(tp)
                out.append(
                    (
                        "partition-stuck",
                        _tp(
                            tp,
                            owner=self.owners.get(tp),
                            expectedOwner=v.planned[tp],
                            unownedForMs=round((now - since) * 1000),
                        ),
                    )
                )

    def state_fields(self) -> dict[str, Any]:
        v = self.verification
        fields: dict[str, Any] = {
            "members": sorted(self.members or {}),
            "owned": len(self.owners),
            "rebalancing": self.rebalancing,
            "stable": self.stable,
            "stuck": [_tp(tp) for tp in sorted(self.stuck)],
        }
        if v is not None:
            fields.update({k: val for k, val in v.fields(self.owners).items() if k != "ok"})
            fields["verified"] = v.ok
        fields["owners"] = [_tp(tp, owner=o) for tp, o in sorted(self.owners.items())]
        return fields

    def sample_lag(self, now: float, rows: Iterable[Any]) -> list[tuple[str, dict[str, Any]]]:
        """Feed one round of offsets (PartitionRow-like: topic, partition, zk_offset, kafka_offset,
        log_end); the status changes."""
        out = []
        for row in rows:
            if not isinstance(row.partition, int) or row.log_end is None:
                continue
            stored = [o for o in (row.zk_offset, row.kafka_offset) if o is not None]
            offset = max(stored) if stored else None
            tp = (row.topic, row.partition)
            owned = _consumer(self.owners.get(tp, "")) in (self.members or {})
            sample = Sample(now, offset, row.log_end, owned)
            changed = self.lag.setdefault(tp, PartitionWindow()).add(sample)
            if changed is not None:
                old, new = changed
                out.append(
                    (
                        "lag-status",
                        _tp(tp, status=new, previous=old, offset=offset, logEnd=row.log_end, lag=sample.lag),
                    )
                )
        return out


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
        ids = self.mirror.track_children(f"{CONSUMERS}/{group}/ids", with_data=True)
        owners = self.mirror.track_children(f"{CONSUMERS}/{group}/owners")
        return ids or owners

    def _untrack_group(self, group: str) -> None:
        self.trackers.pop(group, None)
        base = f"{CONSUMERS}/{group}"
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
            base = f"{CONSUMERS}/{group}"
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
        path = f"{CONSUMERS}/{group}/ids"
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
        base = f"{CONSUMERS}/{group}/owners"
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

        for group, tracker in sorted(self.trackers.items()):
            try:
                desc = describe_group(self.zk, group, self.broker)
            except KtoolError as exc:
                if self.lag_problem.get(group) != str(exc):  # once, not every interval
                    self.lag_problem[group] = str(exc)
                    self._emit("lag-unavailable", group, {"message": str(exc)})
                continue
            self.lag_problem.pop(group, None)
            now = self.clock()
            for event, fields in tracker.sample_lag(now, desc.rows):
                self._emit(event, group, fields, now)

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
