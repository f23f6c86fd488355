"""The story `groups watch --bootstrap-server` tells, from coordinator views made by hand (no server):
a KIP-848 group's rebalance finishes only when every member is at the target assignment epoch owning
its target — never after a quiet period while a member still reconciles, as the ZooKeeper watch's
guess would (its owners can sit unchanged for seconds while the coordinator waits on a revocation) —
and a classic group's only when it is Stable with every partition of its topics owned. Also: the
ConsumerGroupDescribe and ListGroups readers refuse an answer that lies about its sizes in one line."""

from __future__ import annotations

import struct

import pytest

from kafka_tools.broker.client import KafkaGroup, KafkaMember
from kafka_tools.broker.group_requests import _group, _list_groups
from kafka_tools.broker.wire import Reader, WireError, compact_string, uvarint
from kafka_tools.consumers.coordinator_watch import judge
from kafka_tools.consumers.group_tracker import QUIET, GroupTracker, Verification
from kafka_tools.zk.layout import ConsumerMember

T = "orders"
PARTS = {T: [0, 1, 2, 3]}


def _consumer_group(
    epochs: tuple[int, int], members: list[tuple[str, int, list[int], list[int]]]
) -> KafkaGroup:
    """members: (id, member epoch, owned partitions, target partitions)."""
    return KafkaGroup(
        "STABLE",
        [KafkaMember(m, "c", "/10.0.0.1", [(T, p) for p in own], None, e, [(T, p) for p in tgt])
         for m, e, own, tgt in members],
        "Stable", "consumer", "uniform", ("k", 9092, 1), *epochs,
    )  # fmt: skip


def _feed(tracker: GroupTracker, now: float, group: KafkaGroup) -> list[tuple[str, dict]]:
    members = {m.member_id: ConsumerMember(m.member_id, {T: 1}, "static") for m in group.members}
    owners = {tp: m.member_id for m in group.members for tp in m.assignment}
    epochs = (group.group_epoch, group.assignment_epoch)
    return tracker.update(now, members, owners, PARTS, [T], False, judge(group, PARTS), epochs)


def test_a_consumer_group_rebalance_finishes_at_the_target_not_after_a_quiet_period():
    tracker = GroupTracker("g", grace=60, kafka=True)
    settled = _consumer_group((2, 2), [("a", 2, [0, 1, 2, 3], [0, 1, 2, 3])])
    assert [e for e, _ in _feed(tracker, 0.0, settled)] == [
        "member-joined",
        "group-epoch",
        "assignment-epoch",
    ]
    assert tracker.stable
    # b joins: epoch 3, the target gives b 2 and 3; a still owns them while it revokes (for many seconds).
    joining = _consumer_group((3, 3), [("a", 2, [0, 1, 2, 3], [0, 1]), ("b", 3, [], [2, 3])])
    events = _feed(tracker, 1.0, joining)
    assert [e for e, _ in events] == ["member-joined", "group-epoch", "assignment-epoch", "rebalance-started"]
    for now in (2.0, 2.0 + 5 * QUIET, 30.0):
        assert _feed(tracker, now, joining) == [] and not tracker.stable
    revoked = _consumer_group((3, 3), [("a", 3, [0, 1], [0, 1]), ("b", 3, [], [2, 3])])
    assert _feed(tracker, 31.0, revoked) == [] and not tracker.stable
    done = _consumer_group((3, 3), [("a", 3, [0, 1], [0, 1]), ("b", 3, [2, 3], [2, 3])])
    events = dict(_feed(tracker, 32.0, done)[-2:])
    assert events["rebalance-finished"]["moved"] == 2 and events["rebalance-finished"]["matchesPlan"]
    assert tracker.stable


def test_a_classic_group_is_settled_when_stable_with_every_partition_owned():
    group = KafkaGroup("PREPARING_REBALANCING", [KafkaMember("a", "c", "/h", [(T, 0), (T, 1)])],
                       "PreparingRebalance", "classic", "cooperative-sticky")  # fmt: skip
    v = judge(group, PARTS)
    assert v.pending == ["group PreparingRebalance"] and v.unowned == [(T, 2), (T, 3)] and not v.ok
    group.state_name = "Stable"
    assert not judge(group, PARTS).ok  # partitions 2 and 3 owned by nobody
    group.members[0].assignment = [(T, p) for p in range(4)]
    assert judge(group, PARTS).ok


def test_an_unknown_group_watched_is_an_empty_view_never_stable():
    tracker = GroupTracker("g", grace=60, kafka=True)
    assert tracker.update(0.0, {}, {}, PARTS, [T], False, Verification({}, [], [], []), None) == []
    assert not tracker.stable


def _described(members: int) -> bytes:
    """One ConsumerGroupDescribe group whose member array claims `members` entries."""
    body = struct.pack(">h", 0) + uvarint(0) + compact_string("g") + compact_string("Stable")
    return body + struct.pack(">ii", 1, 1) + compact_string("uniform") + uvarint(members + 1)


@pytest.mark.parametrize("count", [2**31, 10_000])
def test_an_answer_claiming_more_members_than_its_bytes_is_refused(count):
    with pytest.raises(WireError):
        _group(Reader(_described(count)))


def test_a_list_groups_answer_cut_short_is_one_line(monkeypatch):
    class Conn:
        where = "k:9092"

        def ask(self, key, version, body, flexible=False):
            return struct.pack(">ih", 0, 0) + uvarint(5)  # four groups announced, none there

    with pytest.raises(WireError):
        _list_groups(Conn(), {16: (0, 5)})
