"""The sticky assignors of a classic group's leader as kafka-clients runs them (StickyAssignor, eager;
CooperativeStickyAssignor), from AbstractStickyAssignor: the path Java takes when every member subscribes
to the same topics (ConstrainedAssignmentBuilder).

What each member owns, and in which generation, comes from its subscription: CooperativeStickyAssignor
reads the owned partitions and the generation id (or, before subscription v2, the generation in its user
data); StickyAssignor reads both from its user data (the eager protocol owns nothing while it rejoins).
A partition claimed by two members goes to the higher generation; by two of the same generation, to
neither (it is reassigned as new).

Not modelled, refused with one line (AssignmentError): members subscribing to different topics (Java's
GeneralAssignmentBuilder, a balancing search), and librdkafka's sticky assignor (its own port).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_tools.consumers.assignors import AssignmentError
from kafka_tools.consumers.classic_member import (
    NO_GENERATION,
    ClassicMember,
    TopicPartition,
    cooperative_generation,
    sticky_user_data,
)
from kafka_tools.format.java_hash import java_hashmap_order, java_string_hash, java_string_key

STICKY = "sticky"
COOPERATIVE_STICKY = "cooperative-sticky"


@dataclass
class StickyResult:
    """The assignment, the partitions that change owner (a cooperative group revokes them in one
    rebalance and assigns them in the next), and the caveats of the prediction."""

    assignment: dict[str, list[TopicPartition]]
    transferring: dict[TopicPartition, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def member_data(member: ClassicMember, strategy: str) -> tuple[list[TopicPartition], int]:
    """(owned partitions, generation) as the assignor's memberData reads them."""
    if strategy == STICKY:
        owned, generation = sticky_user_data(member)
    else:
        owned, generation = list(member.owned), cooperative_generation(member)
    return owned, NO_GENERATION if generation is None else generation


def _tp_java(tp: TopicPartition) -> tuple[bytes, int]:
    return java_string_key(tp[0]), tp[1]


def sticky_assign(members: list[ClassicMember], partitions: Mapping[str, int], strategy: str) -> StickyResult:
    """kafka-clients' sticky or cooperative-sticky assignment of `members` (equal subscriptions)."""
    if not members:
        return StickyResult({})
    topics = set(members[0].topics)
    if any(set(m.topics) != topics for m in members):
        raise AssignmentError(
            f"{strategy}: the members subscribe to different topics; ktool models only the path Java's "
            "sticky assignors take when every member subscribes to the same topics"
        )
    all_topics = {t: partitions[t] for t in topics if partitions.get(t)}
    ids, collided = java_hashmap_order([m.member_id for m in members], java_string_hash)
    by_id = {m.member_id: m for m in members}
    owned, multiple = _owned_partitions(ids, by_id, all_topics, strategy)
    builder = _Constrained(ids, all_topics, owned, multiple)
    result = StickyResult(builder.build(), builder.transferring)
    if collided:
        result.warnings.append(
            "two members share a bucket of Java's HashMap: the leader's order among them is the order they "
            "joined, which ktool does not see; the owners of partitions at the quota edge may differ"
        )
    return result


def _owned_partitions(
    ids: list[str], by_id: dict[str, ClassicMember], all_topics: Mapping[str, int], strategy: str
) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition]]:
    """AbstractStickyAssignor.allSubscriptionsEqual: each member's valid owned partitions."""
    owned: dict[str, list[TopicPartition]] = {}
    owner: dict[TopicPartition, str] = {}
    generation: dict[str, int] = {}
    multiple: set[TopicPartition] = set()
    for member_id in ids:
        partitions, gen = member_data(by_id[member_id], strategy)
        generation[member_id] = gen
        mine = owned[member_id] = []
        for tp in partitions:
            if tp[0] not in all_topics:
                continue
            other = owner.get(tp)
            if other is None:
                mine.append(tp)
                owner[tp] = member_id
            elif gen == generation[other]:
                multiple.add(tp)
                owned[other].remove(tp)
                owner[tp] = member_id
            elif gen > generation[other]:
                mine.append(tp)
                owned[other].remove(tp)
                owner[tp] = member_id
    return owned, multiple


class _Constrained:
    """ConstrainedAssignmentBuilder without racks: owned partitions kept up to the quotas, the rest
    dealt round-robin over the members still under quota (sorted by member id)."""

    def __init__(
        self,
        ids: list[str],
        all_topics: Mapping[str, int],
        owned: dict[str, list[TopicPartition]],
        multiple: set[TopicPartition],
    ) -> None:
        self.ids, self.all_topics, self.owned, self.multiple = ids, all_topics, owned, multiple
        total = sum(all_topics.values())
        self.min_quota, extra = divmod(total, len(ids))
        self.max_quota = self.min_quota + (1 if extra else 0)
        self.expected_over = extra
        self.current_over = 0
        self.assignment: dict[str, list[TopicPartition]] = {m: [] for m in ids}
        self.assigned: list[TopicPartition] = []
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under: list[str] = []
        self.exactly: list[str] = []
        self.transferring: dict[TopicPartition, str] = {}

    def build(self) -> dict[str, list[TopicPartition]]:
        self._assign_owned()
        assigned = set(self.assigned)
        unassigned = [
            (t, p)
            for t in sorted(self.all_topics, key=java_string_key)
            for p in range(self.all_topics[t])
            if (t, p) not in assigned
        ]
        self.under.sort(key=java_string_key)
        self.exactly.sort(key=java_string_key)
        self._assign_round_robin(unassigned)
        self._verify()
        return self.assignment

    def _assign_owned(self) -> None:
        for member in self.ids:
            owned = sorted(self.owned[member], key=lambda tp: (tp[1], java_string_key(tp[0])))
            owned = [tp for tp in owned if tp not in self.multiple]
            mine = self.assignment[member]
            if len(owned) < self.min_quota:
                mine += owned
                self.assigned += owned
                self.under.append(member)
            elif len(owned) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exactly.clear()
                mine += owned[: self.max_quota]
                self.assigned += owned[: self.max_quota]
                self.maybe_revoked.update((tp, member) for tp in owned[self.max_quota :])
            else:
                mine += owned[: self.min_quota]
                self.assigned += owned[: self.min_quota]
                self.maybe_revoked.update((tp, member) for tp in owned[self.min_quota :])
                if self.current_over < self.expected_over:
                    self.exactly.append(member)

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        at = 0  # a Java iterator over `under`: `at` is the next element, remove() drops the one before
        for tp in unassigned:
            if at < len(self.under):
                member = self.under[at]
                at += 1
            elif not self.under and not self.exactly:
                raise AssignmentError("sticky assignment: no more unfilled members (Java throws here too)")
            elif not self.under:
                member = self.exactly.pop(0)
            else:
                at = 1
                member = self.under[0]
            count = self._assign_new(tp, member)
            if count == self.min_quota:
                del self.under[at - 1]
                at -= 1
                self.exactly.append(member)
            elif count == self.max_quota:
                self.current_over += 1

    def _assign_new(self, tp: TopicPartition, member: str) -> int:
        self.assignment[member].append(tp)
        previous = self.maybe_revoked.get(tp)
        if (previous is not None and previous != member) or tp in self.multiple:
            self.transferring[tp] = member
        return len(self.assignment[member])

    def _verify(self) -> None:
        if self.under and self.current_over != self.expected_over:
            raise AssignmentError("sticky assignment: members left under quota (Java throws here too)")
        for member in self.under:
            if len(self.assignment[member]) != self.min_quota:
                raise AssignmentError(f"sticky assignment: member {member} under quota (Java throws too)")
