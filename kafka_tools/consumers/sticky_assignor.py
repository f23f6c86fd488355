"""The sticky assignors of a classic group's leader as kafka-clients runs them (StickyAssignor, eager;
CooperativeStickyAssignor), from AbstractStickyAssignor: the path Java takes when every member subscribes
to the same topics (ConstrainedAssignmentBuilder) and the general one (GeneralAssignmentBuilder: least
loaded first, then moves until balanced, undone when the balance score does not improve).

What each member owns, and in which generation, comes from its subscription: CooperativeStickyAssignor
reads the owned partitions and the generation id (or, before subscription v2, the generation in its user
data); StickyAssignor reads both from its user data (the eager protocol owns nothing while it rejoins).
A partition claimed by two members goes to the higher generation; by two of the same generation, to
neither (it is reassigned as new).

Racks (KIP-881): the path for equal subscriptions is modelled with them (an owned partition off the
member's rack is not kept; the unassigned partitions are dealt fewest rack-local members first, each
first to an unfilled member on one of its replica racks, then round-robin). Note that the ordering by
rack-local members happens whenever some member sends a rack, even when the rack-aware path is off.
The general path (unequal subscriptions) with racks: an owned partition off the member's rack is
revoked, unassigned partitions go first to the least loaded member on their racks, and balancing moves a
partition to a lighter member on its racks before any other lighter member.
librdkafka's cooperative-sticky (its own port of the older general algorithm, with its own maps'
orders) is rdkafka_sticky.py.
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
from kafka_tools.consumers.rack_awareness import ReplicaRacks, StickyRacks, sticky_rack_info
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
    if strategy == STICKY and member.user_data is None and member.owned:
        # a member the plan rejoins with what it holds now (modern_plan._as_rejoining): kafka-clients'
        # eager members send no owned partitions of their own (they revoke everything before joining)
        owned, generation = list(member.owned), member.generation
    elif strategy == STICKY:
        owned, generation = sticky_user_data(member)
    else:
        owned, generation = list(member.owned), cooperative_generation(member)
    return owned, NO_GENERATION if generation is None else generation


def _tp_java(tp: TopicPartition) -> tuple[bytes, int]:
    return java_string_key(tp[0]), tp[1]


def sticky_assign(
    members: list[ClassicMember],
    partitions: Mapping[str, int],
    strategy: str,
    replica_racks: ReplicaRacks | None = None,
) -> StickyResult:
    """kafka-clients' sticky or cooperative-sticky assignment of `members`; `replica_racks` each
    partition's replica racks (KIP-881), None when no member sends a rack."""
    if not members:
        return StickyResult({})
    topics = set(members[0].topics)
    subscribed = {t for m in members for t in m.topics}
    all_topics = {t: partitions[t] for t in sorted(subscribed) if partitions.get(t)}
    ids, collided = java_hashmap_order([m.member_id for m in members], java_string_hash)
    by_id = {m.member_id: m for m in members}
    owned, multiple = _owned_partitions(ids, by_id, all_topics, strategy)
    racks = sticky_rack_info(members, all_topics, replica_racks)
    if all(set(m.topics) == topics for m in members):
        builder = _Constrained(ids, all_topics, owned, multiple, racks)
        result = StickyResult(builder.build(), builder.transferring)
    else:
        prev = _previous_owners(ids, by_id, all_topics, strategy)
        assignment = _General({m: by_id[m] for m in ids}, all_topics, owned, prev, racks).build()
        result = StickyResult(assignment, _transferring(by_id, assignment, strategy))
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
    multiple: set[TopicPartition] = set()
    for member_id in ids:
        partitions, gen = member_data(by_id[member_id], strategy)
        mine = owned[member_id] = []
        for tp in partitions:
            if tp[0] not in all_topics:
                continue
            other = owner.get(tp)
            if other is None:
                mine.append(tp)
                owner[tp] = member_id
                continue
            # Java compares with the other's subscription generation; List.remove of an absent one is a no-op
            theirs = _subscription_generation(by_id[other])
            if gen == theirs:
                multiple.add(tp)
            elif gen > theirs:
                mine.append(tp)
            else:
                continue
            if tp in owned[other]:
                owned[other].remove(tp)
            owner[tp] = member_id
    return owned, multiple


def _subscription_generation(member: ClassicMember) -> int:
    """Subscription.generationId().orElse(DEFAULT_GENERATION): v2+ subscriptions carry it."""
    return member.generation if member.generation is not None and member.generation >= 0 else NO_GENERATION


def _transferring(
    by_id: dict[str, ClassicMember], assignment: dict[str, list[TopicPartition]], strategy: str
) -> dict[TopicPartition, str]:
    """CooperativeStickyAssignor.computePartitionsTransferringOwnership (the general path): partitions a
    member gains that another owned (as its subscription says) and gives up."""
    owned = {m: set(member_data(by_id[m], strategy)[0]) for m in assignment}
    added = {tp: m for m, tps in assignment.items() for tp in tps if tp not in owned[m]}
    revoked = {tp for m, tps in owned.items() for tp in tps if tp not in set(assignment[m])}
    return {tp: m for tp, m in added.items() if tp in revoked}


def _previous_owners(
    ids: list[str], by_id: dict[str, ClassicMember], all_topics: Mapping[str, int], strategy: str
) -> dict[TopicPartition, tuple[str, int]]:
    """GeneralAssignmentBuilder.prepopulateCurrentAssignments: what members of older generations held,
    the newest claim per partition (a member that keeps its partitions sticks to them when balancing)."""
    data = {m: member_data(by_id[m], strategy) for m in ids}
    newest = max((gen for _, gen in data.values()), default=NO_GENERATION)
    prev: dict[TopicPartition, tuple[str, int]] = {}
    for member_id in ids:
        partitions, gen = data[member_id]
        if gen >= newest and not (gen == NO_GENERATION and newest > NO_GENERATION):
            continue
        for tp in partitions:
            if tp not in prev or gen > prev[tp][1]:
                prev[tp] = (member_id, gen)
    return prev


class _General:
    """GeneralAssignmentBuilder: keep what each member owns and may still own (on its rack, with racks),
    give each unassigned partition to the least loaded member that can take it (on its racks first),
    then move partitions from members with two or more than another that could take them (back to
    their previous owner when that balances; a lighter member on its racks first), undone when the
    balance score does not improve."""

    def __init__(
        self,
        by_id: dict[str, ClassicMember],
        partitions: Mapping[str, int],
        owned: dict[str, list[TopicPartition]],
        prev: dict[TopicPartition, tuple[str, int]],
        racks: StickyRacks,
    ) -> None:
        self.partitions, self.prev, self.racks = partitions, prev, racks
        self.topics_of = {m: [t for t in by_id[m].topics if t in partitions] for m in by_id}
        self.consumers_of = {t: [m for m in by_id if t in self.topics_of[m]] for t in partitions}
        self.current = {m: list(owned.get(m, [])) for m in by_id}
        self.subscribed = {m: set(by_id[m].topics) for m in by_id}
        self.revocation_required = False
        self.moves: dict[TopicPartition, tuple[str, str]] = {}  # PartitionMovements: partition -> (src, dst)
        self.moves_by_pair: dict[tuple[str, str], list[TopicPartition]] = {}  # a HashSet's insertion order

    def _key(self, tp: TopicPartition) -> tuple[int, bytes, int]:
        return len(self.consumers_of[tp[0]]), java_string_key(tp[0]), tp[1]

    def _sorted_members(self) -> list[str]:
        return sorted(self.current, key=lambda m: (len(self.current[m]), java_string_key(m)))

    def build(self) -> dict[str, list[TopicPartition]]:
        all_sorted = sorted(
            ((t, p) for t in self.partitions for p in range(self.partitions[t])), key=self._key
        )
        assigned = []
        for member, tps in self.current.items():
            for tp in list(tps):
                if tp[0] not in self.subscribed[member] or self.racks.mismatch(member, tp):
                    tps.remove(tp)
                    self.revocation_required = True
                else:
                    assigned.append(tp)
        held = set(assigned)
        unassigned = [tp for tp in all_sorted if tp not in held]
        self._balance(all_sorted, unassigned)
        return self.current

    def _owner(self, tp: TopicPartition) -> str | None:
        return next((m for m, tps in self.current.items() if tp in tps), None)

    def _balance(self, all_sorted: list[TopicPartition], unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self._sorted_members()[-1]]
        to_assign = list(unassigned)
        if self.racks.consumer:  # first the least loaded member on one of the partition's racks
            for tp in list(to_assign):
                if self.consumers_of[tp[0]] and self._assign_least_loaded(tp, self.racks):
                    to_assign.remove(tp)
        for tp in to_assign:
            if self.consumers_of[tp[0]]:
                self._assign_least_loaded(tp, None)
        fixed_topics = {t for t, cs in self.consumers_of.items() if len(cs) < 2}
        all_sorted = [tp for tp in all_sorted if tp[0] not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed = {m: self.current.pop(m) for m in list(self.current) if not self._can_participate(m)}
        before = {m: list(tps) for m, tps in self.current.items()}
        if not self.revocation_required:
            self._perform(unassigned)
        performed = self._perform(all_sorted)
        if not initializing and performed and _score(self.current) >= _score(before):
            self.current = before
        self.current.update(fixed)

    def _assign_least_loaded(self, tp: TopicPartition, racks: StickyRacks | None) -> bool:
        """maybeAssignPartition: to the least loaded member that subscribes (on tp's racks, with racks)."""
        for member in self._sorted_members():
            if tp[0] in self.topics_of[member] and (racks is None or not racks.mismatch(member, tp)):
                self.current[member].append(tp)
                return True
        return False

    def _max_size(self, member: str) -> int:
        return sum(self.partitions[t] for t in self.topics_of[member])

    def _can_participate(self, member: str) -> bool:
        size, biggest = len(self.current[member]), self._max_size(member)
        if size < biggest:
            return True
        return any(len(self.consumers_of[t]) >= 2 for t, _ in self.current[member])

    def _is_balanced(self) -> bool:
        order = self._sorted_members()
        if len(self.current[order[0]]) >= len(self.current[order[-1]]) - 1:
            return True
        owner = {tp: m for m, tps in self.current.items() for tp in tps}
        for member in order:
            size = len(self.current[member])
            if size == self._max_size(member):
                continue
            for topic in self.topics_of[member]:
                for p in range(self.partitions[topic]):
                    other = owner.get((topic, p))
                    if other is not None and other != member and size + 1 < len(self.current[other]):
                        return False
        return True

    def _perform(self, reassignable: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in reassignable:
                if self._is_balanced():
                    break
                if len(self.consumers_of[tp[0]]) <= 1:
                    continue
                member = self._owner(tp)
                if member is None:
                    continue
                before = self.prev.get(tp)
                if before:
                    if before[0] not in self.current:
                        raise _java_npe(tp, before[0])
                    if len(self.current[member]) > len(self.current[before[0]]) + 1:
                        self._reassign(tp, member, before[0])
                        performed = modified = True
                        continue
                if self._move_to_lighter(tp, member, self.racks.mates(tp, member, self.consumers_of[tp[0]])):
                    performed = modified = True
                elif self._move_to_lighter(tp, member, self.consumers_of[tp[0]]):
                    performed = modified = True
        return performed

    def _move_to_lighter(self, tp: TopicPartition, member: str, others: list[str]) -> bool:
        """Move tp to the least loaded member that subscribes when one of `others` (the leader's HashMap
        order of members) has two or more fewer partitions than its owner."""
        for other in others:
            if other not in self.current:
                raise _java_npe(tp, other)
            if len(self.current[member]) > len(self.current[other]) + 1:
                target = next(m for m in self._sorted_members() if tp[0] in self.topics_of[m])
                self._reassign(tp, member, target)
                return True
        return False

    def _reassign(self, tp: TopicPartition, old: str, new: str) -> None:
        """PartitionMovements.getTheActualPartitionToBeMoved: undo an earlier move back the other way
        rather than move a second partition between the same two members."""
        topic = tp[0]
        source = self.moves[tp][0] if tp in self.moves else old
        reverse = self.moves_by_pair.get((new, source))
        if reverse and any(t[0] == topic for t in reverse):
            candidates = [t for t in reverse if t[0] == topic]
            tp = java_hashmap_order(candidates, _tp_hash)[0][0]
        owner = self._owner(tp)
        self.current[owner].remove(tp)
        self.current[new].append(tp)
        self._record(tp, owner, new)

    def _record(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            src, _ = self.moves.pop(tp)
            self.moves_by_pair[(src, old)].remove(tp)
            if not self.moves_by_pair[(src, old)]:
                del self.moves_by_pair[(src, old)]
            if src != new:
                self._add_move(tp, src, new)
        else:
            self._add_move(tp, old, new)

    def _add_move(self, tp: TopicPartition, src: str, dst: str) -> None:
        self.moves[tp] = (src, dst)
        self.moves_by_pair.setdefault((src, dst), []).append(tp)


def _java_npe(tp: TopicPartition, member: str) -> AssignmentError:
    """Where GeneralAssignmentBuilder.performReassignments looks up a member it set aside (it owns all it
    can, of topics nobody else takes) and throws NullPointerException: the leader's rebalance fails."""
    return AssignmentError(
        f"kafka-clients fails this rebalance (NullPointerException in the sticky assignor's balancing: "
        f"{tp[0]}-{tp[1]} looks up member {member}, which it set aside)"
    )


def _tp_hash(tp: TopicPartition) -> int:
    """TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode."""
    return (31 * (31 + tp[1]) + java_string_hash(tp[0])) & 0xFFFFFFFF


def _score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    sizes = [len(v) for v in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])


class _Constrained:
    """ConstrainedAssignmentBuilder: owned partitions kept up to the quotas (those on the member's rack
    when the rack-aware path is on), the rest dealt first to unfilled members on their racks, then
    round-robin over the members still under quota (sorted by member id)."""

    def __init__(
        self,
        ids: list[str],
        all_topics: Mapping[str, int],
        owned: dict[str, list[TopicPartition]],
        multiple: set[TopicPartition],
        racks: StickyRacks,
    ) -> None:
        self.ids, self.all_topics, self.owned, self.multiple = ids, all_topics, owned, multiple
        self.racks = racks
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
        if self.racks.local_members:  # a stable sort: fewest members on the partition's racks first
            unassigned.sort(key=lambda tp: self.racks.local_members.get(tp, 0))
        self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify()
        return self.assignment

    def _assign_owned(self) -> None:
        for member in self.ids:
            mismatched = [tp for tp in self.owned[member] if self.racks.mismatch(member, tp)]
            self.maybe_revoked.update((tp, member) for tp in mismatched)
            owned = [tp for tp in self.owned[member] if tp not in set(mismatched)]
            owned = sorted(owned, key=lambda tp: (tp[1], java_string_key(tp[0])))
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

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> None:
        """assignRackAwareRoundRobin: each partition to the next unfilled member on its racks (under
        minQuota first, round the list; else the first at minQuota); what it places leaves `unassigned`."""
        if not self.racks.consumer:
            return
        next_under = 0
        for tp in list(unassigned):
            member = None
            index = self.racks.next_member(tp, self.under, next_under)
            if index >= 0:
                member = self.under[index]
                count = len(self.assignment[member]) + 1
                if count >= self.min_quota:
                    self.under.remove(member)
                    if count < self.max_quota and self.current_over < self.expected_over:
                        self.exactly.append(member)
                else:
                    index += 1
                next_under = index % len(self.under) if self.under else 0
            elif self.exactly:
                first = self.racks.next_member(tp, self.exactly, 0)
                if first >= 0:
                    member = self.exactly[first]
                    if len(self.assignment[member]) + 1 == self.max_quota:
                        del self.exactly[first]
                        self.current_over += 1
                        if self.current_over == self.expected_over:
                            self.exactly.clear()
            if member is not None:
                self._assign_new(tp, member)
                unassigned.remove(tp)

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
