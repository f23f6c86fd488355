"""The story of one `groups watch`, told from each new view of a group's znodes: members and brokers
joining and leaving, rebalances starting and finishing, the owners verified against the range
assignor's plan, stuck partitions, lag statuses (GroupTracker); the events it tells and the options
it reads. consumers/watch.py feeds it the views (GroupWatch)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_tools.consumers.assignors import RANGE, Member, ThreadId, consumers_per_topic
from kafka_tools.consumers.lag_status import PartitionWindow, Sample
from kafka_tools.consumers.rebalance import plan_rebalance
from kafka_tools.errors import KtoolError
from kafka_tools.zk.layout import (
    ConsumerMember,
)

if TYPE_CHECKING:
    pass

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
    """Owners against the plan for the current members (VerifyConsumerRebalance, and the plan). A group
    Kafka coordinates is judged by its coordinator's plan: `pending` says what it has not finished (a
    member behind the target assignment epoch, a classic group not Stable); empty on ZooKeeper."""

    planned: dict[TP, str | None]
    unowned: list[TP]
    not_member: list[TP]
    against_plan: list[TP]
    pending: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.unowned or self.not_member or self.against_plan or self.pending)

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
            **({"pending": self.pending} if self.pending else {}),
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


def sample_lags(
    trackers: dict[str, GroupTracker],
    describe: Callable[[str], Any],
    problems: dict[str, str],
    emit: Callable[..., None],
    clock: Callable[[], float],
) -> None:
    """Each watched group's lag sampled and told, for either watch (ZooKeeper's or the coordinators'):
    `describe(group)` gives its rows; a group that cannot be described says why once, not every
    interval (`problems` keeps what was said)."""
    for group, tracker in sorted(trackers.items()):
        try:
            desc = describe(group)
        except KtoolError as exc:
            if problems.get(group) != str(exc):
                problems[group] = str(exc)
                emit("lag-unavailable", group, {"message": str(exc)})
            continue
        problems.pop(group, None)
        now = clock()
        for event, fields in tracker.sample_lag(now, desc.rows):
            emit(event, group, fields, now)


class GroupTracker:
    """One group's view and its rebalance state machine; `update` returns the events of a new view.

    The same story for a ZooKeeper group (owners are threads `consumerId-N`, judged against the range
    assignor's plan, settled after QUIET when they differ) and for a group Kafka coordinates (`kafka`:
    owners are member ids, the coordinator's target assignment is the plan, nothing settles before it
    is reached; its epochs are told as they change)."""

    def __init__(self, name: str, grace: float, strategy: str = RANGE, kafka: bool = False) -> None:
        self.name = name
        self.grace = grace
        self.strategy = strategy
        self.kafka = kafka
        self.hosts: dict[str, str] = {}  # member id -> host, as the coordinator reports it (Kafka)
        self.epochs: tuple[int | None, int | None] | None = None  # group epoch, target assignment epoch
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

    def _member_of(self, owner: str | None) -> str | None:
        """The member an owner string names: a thread's consumer on ZooKeeper, the member id on Kafka."""
        if owner is None:
            return None
        return owner if self.kafka else _consumer(owner)

    def _host(self, member_id: str) -> str | None:
        return self.hosts.get(member_id) if self.kafka else member_host(self.name, member_id)

    def update(
        self,
        now: float,
        members: dict[str, ConsumerMember],
        owners: dict[TP, str],
        partitions: dict[str, list[int]],
        all_topics: list[str],
        topology_changed: bool = False,
        verification: Verification | None = None,
        epochs: tuple[int | None, int | None] | None = None,
    ) -> list[tuple[str, dict[str, Any]]]:
        """The events of a new view. `verification`: the view already judged (a group Kafka coordinates,
        by its coordinator's plan); else the range assignor's plan judges it. `epochs`: the group epoch
        and target assignment epoch (KIP-848), told when they change."""
        out: list[tuple[str, dict[str, Any]]] = []
        first = self.members is None
        old_members = self.members or {}
        joined = [m for m in sorted(members) if m not in old_members]
        left = [m for m in sorted(old_members) if m not in members]
        for m in joined:
            out.append(("member-joined", self._member_fields(members[m], initial=first)))
        for m in left:
            out.append(("member-left", {"member": m, "host": self._host(m)}))
        epoch_changed = self._epoch_events(epochs, first, out)
        released = [tp for tp, o in self.owners.items() if owners.get(tp) != o]
        owners_changed = owners != self.owners
        old_owners = self.owners
        self.members, self.owners = dict(members), dict(owners)
        if owners_changed or first:
            self.last_change = now
        try:
            self.verification = verification or verify(members, owners, partitions, all_topics, self.strategy)
        except KtoolError as exc:  # registrations Kafka's assignor would refuse too
            out.append(("plan-failed", {"message": str(exc)}))
            self.verification = None
            return out
        v = self.verification
        pending = bool(v.pending)

        if first:
            if not v.ok:
                self._start(now, owners, "in progress when the watch started", out)
        elif not self.rebalancing and (
            joined or left or released or owners_changed or topology_changed or epoch_changed or pending
        ):
            reasons = [
                (joined, "member joined"),
                (left, "member left"),
                (topology_changed, "partitions added"),
                (epoch_changed, "group epoch changed"),
                (released, "ownership released"),
                (owners_changed, "ownership changed"),
                (True, "assignment pending"),
            ]
            self._start(now, old_owners, next(reason for cause, reason in reasons if cause), out)
        self._check_stuck(now, out)
        if self.rebalancing:
            held = all(self._member_of(owners.get(tp)) in members for tp in v.planned)
            settled = not self.kafka and held and not v.not_member and now - self.last_change >= QUIET
            if v.ok or settled:
                self._finish(now, out)
        return out

    def tick(self, now: float) -> list[tuple[str, dict[str, Any]]]:
        """The last view judged again at `now`, between views: partitions stuck past the grace."""
        out: list[tuple[str, dict[str, Any]]] = []
        if self.members is not None and self.verification is not None:
            self._check_stuck(now, out)
        return out

    def _epoch_events(self, epochs: tuple[int | None, int | None] | None, first: bool, out: list) -> bool:
        """`group-epoch` and `assignment-epoch` events when the coordinator's epochs move; True when
        the group epoch moved (a rebalance begins: the target assignment is computed again)."""
        if epochs is None:
            return False
        before = self.epochs or (None, None)
        self.epochs = epochs
        moved = False
        for name, old, new in (
            ("group-epoch", before[0], epochs[0]),
            ("assignment-epoch", before[1], epochs[1]),
        ):
            if new != old and new is not None:
                fields: dict[str, Any] = {"from": old, "to": new}
                if first:
                    fields["initial"] = True
                out.append((name, fields))
                moved |= name == "group-epoch" and not first
        return moved

    def _member_fields(self, m: ConsumerMember, initial: bool) -> dict[str, Any]:
        fields = {
            "member": m.id,
            "host": self._host(m.id),
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
            if self._member_of(self.owners.get(tp)) in self.members:
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
            owned = self._member_of(self.owners.get(tp)) in (self.members or {})
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
