"""librdkafka's cooperative-sticky assignor as a classic group's librdkafka leader runs it
(rdkafka_sticky_assignor.c, a port of kafka-clients' older general sticky algorithm, and the cooperative
adjustment of rdkafka_cgrp.c), librdkafka 2.x without racks.

librdkafka registers no eager `sticky` (its client refuses `partition.assignment.strategy=sticky`): a
group on `sticky` is led by another library. Its cooperative-sticky reads each member's owned partitions
and generation from the subscription (v1 and v2 fields; the user data is never read) and always takes
the general path: its "fresh assignment" test asks whether the map it filled with every member is empty.

The orders that decide ties, from the source:
- members: the JoinGroup response's order (the coordinator's, which DescribeGroups lists too); it decides
  only which claim of a partition claimed twice wins a map (the last member's);
- topics: the Metadata response's order to the leader's request, which lists each member's topics in turn
  (a librdkafka member sends its own sorted by name); the broker answers in the order of a Scala Set of
  them (format/java_hash.scala_set_order: up to 4 as asked, more by hash);
- rd_map iterates newest key first (rd_map_insert puts each new key at the head of its list): the
  partitions nobody owns are added to the sorted list of identical subscriptions last topic first,
  highest partition first;
- consumers sort by (assigned count, member id bytes); partitions, when subscriptions differ, by
  (potential consumers, topic bytes, partition); a partition's generations by number, where a tie
  anywhere in the list voids every claim;
- isBalanced fails when a member with fewer partitions than another could take one of its partitions
  (count < count, not count + 1 < count as kafka-clients has it since);
- partition movements are recorded as librdkafka records them, faults included (rdkafka_movements.py):
  which partition a reverse movement moves, and where the leader aborts or reads freed memory;
- the cooperative adjustment gives a partition to its new owner only when nobody owned it, keeps what an
  owner is assigned again, hands back what an owner claims and nobody is assigned (kafka-clients revokes
  it), and withholds the rest: its owners revoke it and every member rejoins, owning what it was given.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from kafka_tools.consumers.assignors import AssignmentError
from kafka_tools.consumers.classic_member import ClassicMember, TopicPartition
from kafka_tools.consumers.rdkafka_movements import LeaderFault, PartitionMovements
from kafka_tools.format.java_hash import scala_set_order

MAX_ROUNDS = 10  # a cooperative group settles in two; more is a loop ktool reports rather than follows


@dataclass
class RdkafkaStickyResult:
    """The assignment once the group settles, the partitions that change owner on the way (revoked in
    the first rebalance, assigned in the next one) and the rebalances it takes."""

    assignment: dict[str, list[TopicPartition]]
    transferring: dict[TopicPartition, str] = field(default_factory=dict)
    rebalances: int = 1


def _tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    return tp[0].encode(), tp[1]


def refuse_racks(members: list[ClassicMember]) -> None:
    """librdkafka's rack-aware path (KIP-881) runs when a member sends a rack that some replica's broker
    shares; ktool does not model it, so a member sending a rack is refused in one line."""
    racked = [m for m in members if m.rack]
    if racked:
        raise AssignmentError(
            f"member {racked[0].member_id} sends rack {racked[0].rack}: librdkafka's cooperative-sticky "
            "assigns by rack (KIP-881) when a broker shares it, which ktool does not predict"
        )


def requested_topics(members: list[ClassicMember], partitions: Mapping[str, int]) -> list[str]:
    """The eligible topics in the Metadata response's order: the leader asks for each member's topics in
    turn, once each; the broker answers in its Scala Set's order; those with partitions take part."""
    asked = [t for member in members for t in member.topics if not t.startswith("^")]
    return [t for t in scala_set_order(asked) if partitions.get(t, 0) > 0]


def cooperative_sticky_assign(
    members: list[ClassicMember], partitions: Mapping[str, int]
) -> RdkafkaStickyResult:
    """The group settled: rebalances until nothing is withheld, each member owning what it was given."""
    first = {m.member_id: set(m.owned) for m in members}
    for count, (_, _, adjusted, withheld) in enumerate(rebalances(members, partitions), 1):
        if not withheld:
            return RdkafkaStickyResult(adjusted, _transferred(first, adjusted), count)
    raise AssignmentError(
        f"librdkafka's cooperative-sticky does not settle in {MAX_ROUNDS} rebalances for this group"
    )


def rebalances(
    members: list[ClassicMember], partitions: Mapping[str, int]
) -> Iterator[tuple[list[ClassicMember], dict[str, list[TopicPartition]], dict, dict]]:
    """Each rebalance until nothing is withheld (at most MAX_ROUNDS): (what the leader reads, what its
    assignor returns, what each member is given, the partitions withheld -> their new owner)."""
    refuse_racks(members)
    current = members
    for _ in range(MAX_ROUNDS):
        target = _Round(current, partitions).assign()
        adjusted, withheld = _adjust(current, target)
        yield current, target, adjusted, withheld
        if not withheld:
            return
        generation = max((_generation(m) for m in current), default=-1) + 1
        current = [replace(m, owned=adjusted[m.member_id], generation=generation) for m in current]


def _transferred(
    first: dict[str, set[TopicPartition]], settled: dict[str, list[TopicPartition]]
) -> dict[TopicPartition, str]:
    """Partitions one member owned and another holds once settled: revoked first, then assigned."""
    owner = {tp: m for m, tps in first.items() for tp in tps}
    return {tp: m for m, tps in settled.items() for tp in tps if owner.get(tp, m) != m}


def _generation(member: ClassicMember) -> int:
    """rkgm_generation: the subscription's generation (v2+), else -1."""
    return member.generation if member.generation is not None else -1


def _adjust(
    members: list[ClassicMember], target: dict[str, list[TopicPartition]]
) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]:
    """rd_kafka_cooperative_protocol_adjust_assignment: (each member's assignment, partitions withheld
    -> their new owner). A partition claimed twice maps to the last member that claims it."""
    assigned = {tp: m.member_id for m in members for tp in target.get(m.member_id, [])}
    owned = {tp: m.member_id for m in members for tp in m.owned}
    result: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    withheld: dict[TopicPartition, str] = {}
    for tp, member_id in assigned.items():
        owner = owned.get(tp)
        if owner is None or owner == member_id:
            result[member_id].append(tp)
        else:
            withheld[tp] = member_id
    for tp, owner in owned.items():
        if tp not in assigned:
            result[owner].append(tp)
    return result, withheld


class _Round:
    """rd_kafka_sticky_assignor_assign_cb for one JoinGroup round, without racks."""

    def __init__(self, members: list[ClassicMember], partitions: Mapping[str, int]) -> None:
        self.ids = [m.member_id for m in members]
        self.subscribed = {m.member_id: set(m.topics) for m in members}
        self.current: dict[str, list[TopicPartition]] = {m: [] for m in self.ids}
        self.owner_of: dict[TopicPartition, str] = {}  # currentPartitionConsumer
        self.prev: dict[TopicPartition, str] = {}  # prevAssignment: the next-newest claim
        self.potential: dict[str, list[TopicPartition]] = {m: [] for m in self.ids}
        self.consumers: dict[TopicPartition, list[str]] = {}  # insertion order kept: rd_map's reversed
        self.movements = PartitionMovements()
        self._prepopulate(members)
        for topic in requested_topics(members, partitions):
            for m in members:
                if topic in m.topics:
                    for p in range(partitions[topic]):
                        self.potential[m.member_id].append((topic, p))
                        self.consumers.setdefault((topic, p), []).append(m.member_id)

    def _prepopulate(self, members: list[ClassicMember]) -> None:
        claims: dict[TopicPartition, list[tuple[str, int]]] = {}
        for m in members:
            for tp in m.owned:
                claims.setdefault(tp, []).append((m.member_id, _generation(m)))
                self.owner_of[tp] = m.member_id  # the last claimant, whatever its generation
        for tp, claimed in claims.items():
            generations = sorted(g for _, g in claimed)
            if len(set(generations)) < len(generations):
                self.owner_of.pop(tp, None)  # a tie anywhere voids every claim
                continue
            claimed.sort(key=lambda c: c[1])
            self.current[claimed[-1][0]].append(tp)
            if len(claimed) >= 2:
                self.prev[tp] = claimed[-2][0]

    def _sorted(self) -> list[str]:
        return sorted(self.current, key=lambda m: (len(self.current[m]), m.encode()))

    def assign(self) -> dict[str, list[TopicPartition]]:
        ordered = self._sort_partitions()
        unassigned = list(ordered)
        revocation = False
        for member, tps in self.current.items():
            for tp in list(tps):
                if tp not in self.consumers:
                    tps.remove(tp)
                    self.owner_of.pop(tp, None)
                elif tp[0] not in self.subscribed[member]:
                    tps.remove(tp)  # its currentPartitionConsumer stays until the partition is assigned
                    revocation = True
                elif tp in unassigned:
                    unassigned.remove(tp)
        self._balance(ordered, unassigned, revocation)
        return self.current

    def _identical(self) -> bool:
        """areSubscriptionsIdentical: every partition's consumer list equal (in order), every member's
        potential partitions equal as sets."""
        lists = list(self.consumers.values())
        sets = [set(v) for v in self.potential.values()]
        return all(x == lists[0] for x in lists) and all(s == sets[0] for s in sets)

    def _sort_partitions(self) -> list[TopicPartition]:
        if not self._identical():
            return sorted(self.consumers, key=lambda tp: (len(self.consumers[tp]), *_tp_key(tp)))
        held = {}
        for member, tps in self.current.items():
            tps.sort(key=_tp_key)
            valid = [tp for tp in tps if tp in self.consumers]
            if valid:
                held[member] = valid
        by_count = sorted(held, key=lambda m: (len(held[m]), m.encode()))
        ordered: list[TopicPartition] = []
        while by_count:
            remaining = held[by_count[-1]]
            moved_before = [tp for tp in remaining if tp in self.prev]
            if moved_before:
                remaining.remove(moved_before[0])
                ordered.append(moved_before[0])
            elif remaining:
                ordered.append(remaining.pop(0))
            else:
                by_count.pop()
                continue
            by_count.sort(key=lambda m: (len(held[m]), m.encode()))
        was_empty = not ordered
        placed = set(ordered)
        ordered += [tp for tp in reversed(self.consumers) if tp not in placed]  # rd_map: newest first
        return sorted(ordered, key=_tp_key) if was_empty else ordered

    def _balance(
        self, ordered: list[TopicPartition], unassigned: list[TopicPartition], revocation: bool
    ) -> None:
        initializing = not self.current[self._sorted()[-1]]
        for tp in unassigned:  # maybeAssign: the least loaded member that may take it
            member = next((m for m in self._sorted() if tp in self.potential[m]), None)
            if member is not None:
                self.current[member].append(tp)
                self.owner_of[tp] = member
        ordered = [tp for tp in ordered if len(self.consumers[tp]) >= 2]
        unassigned = [tp for tp in unassigned if len(self.consumers[tp]) >= 2]
        fixed = {m: self.current.pop(m) for m in self._sorted() if not self._can_participate(m)}
        before = {m: list(tps) for m, tps in self.current.items()}
        owners_before = dict(self.owner_of)
        if not revocation and unassigned:
            self._perform(unassigned)
        performed = self._perform(ordered)
        if not initializing and performed and _score(self.current) >= _score(before):
            self.current, self.owner_of = before, owners_before
        self.current.update(fixed)

    def _can_participate(self, member: str) -> bool:
        mine = self.current[member]
        if len(mine) < len(self.potential[member]):
            return True
        return any(len(self.consumers.get(tp, ())) >= 2 for tp in mine)

    def _count(self, member: str, tp: TopicPartition) -> int:
        if member not in self.current:
            raise LeaderFault(
                f"librdkafka's leader crashes in the cooperative-sticky assignor: {tp[0]}-{tp[1]} looks up "
                f"member {member}, which it set aside (a null dereference)"
            )
        return len(self.current[member])

    def _balanced(self) -> bool:
        order = self._sorted()
        if not order:
            raise LeaderFault("librdkafka's leader crashes: every member was set aside before balancing")
        if len(self.current[order[0]]) >= len(self.current[order[-1]]) - 1:
            return True
        owner = {tp: m for m, tps in self.current.items() for tp in tps}
        for member in order:
            mine = self.current[member]
            if len(mine) == len(self.potential[member]):
                continue
            for tp in self.potential[member]:
                if tp in mine:
                    continue
                if tp not in owner:
                    raise LeaderFault(f"librdkafka's leader crashes: {tp[0]}-{tp[1]} has no owner to compare")
                if len(mine) < len(self.current[owner[tp]]):
                    return False
        return True

    def _perform(self, reassignable: list[TopicPartition]) -> bool:
        performed, modified = False, True
        while modified:
            modified = False
            for tp in reassignable:
                if self._balanced():
                    break
                consumer = self.owner_of.get(tp)
                if consumer is None:
                    raise LeaderFault(f"librdkafka's leader asserts: {tp[0]}-{tp[1]} has no current consumer")
                size = self._count(consumer, tp)
                previous = self.prev.get(tp)
                if previous is not None and size > self._count(previous, tp) + 1:
                    self._reassign_to(tp, previous)
                    performed = modified = True
                    continue
                for other in self.consumers[tp]:
                    if other != consumer and size > self._count(other, tp) + 1:
                        target = next((m for m in self._sorted() if tp in self.potential[m]), None)
                        if target is None:
                            raise LeaderFault(f"librdkafka's leader asserts: no member for {tp[0]}-{tp[1]}")
                        self._reassign_to(tp, target)
                        performed = modified = True
                        break
        return performed

    def _reassign_to(self, tp: TopicPartition, new: str) -> None:
        """reassignPartitionToConsumer and processPartitionMovement: the partition the movements hand
        back moves (rdkafka_movements.py), from the member its current consumer map names."""
        moved, from_list = self.movements.to_move(tp, self.owner_of[tp], new)
        source = self.owner_of.get(moved)
        if source is None:
            raise LeaderFault(f"librdkafka's leader crashes: {moved[0]}-{moved[1]} has no current consumer")
        self._count(new, moved)
        self._count(source, moved)
        moved = self.movements.move(moved, source, new, from_list)
        self.current[new].append(moved)
        if moved in self.current[source]:
            self.current[source].remove(moved)
        self.owner_of[moved] = new


def _score(assignment: Mapping[str, list[TopicPartition]]) -> int:
    sizes = [len(v) for v in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])
