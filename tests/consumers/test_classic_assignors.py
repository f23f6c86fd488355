"""The classic group's client-side assignors against worked examples from Kafka's own unit tests
(RangeAssignorTest, RoundRobinAssignorTest, AbstractStickyAssignorTest: facts re-typed as our cases),
and the bytes of JoinGroup metadata they read."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools.consumers.classic_member import ClassicMember, assigned_partitions, member_from_metadata
from kafka_tools.consumers.member_order import JAVA, LIBRDKAFKA
from kafka_tools.consumers.range_assignor import range_assign
from kafka_tools.consumers.roundrobin_assignor import roundrobin_assign
from kafka_tools.consumers.sticky_assignor import (
    COOPERATIVE_STICKY,
    STICKY,
    sticky_assign,
)
from kafka_tools.errors import InputError
from kafka_tools.format.java_hash import java_hashmap_order, java_string_hash


def m(member_id, *topics, owned=(), generation=1, instance=None):
    return ClassicMember(member_id, tuple(topics), instance, list(owned), generation)


def tp(topic, partition):
    return (topic, partition)


@pytest.mark.parametrize("implementation", [JAVA, LIBRDKAFKA])
def test_range_two_consumers_two_topics_six_partitions(implementation):
    members = [m("consumer1", "topic1", "topic2"), m("consumer2", "topic1", "topic2")]
    got = range_assign(members, {"topic1": 3, "topic2": 3}, implementation)
    assert got["consumer1"] == [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)]
    assert got["consumer2"] == [tp("topic1", 2), tp("topic2", 2)]


@pytest.mark.parametrize("assign", [range_assign, roundrobin_assign])
def test_mixed_topics(assign):
    # RangeAssignorTest and RoundRobinAssignorTest.testMultipleConsumersMixedTopics agree on this one.
    members = [m("consumer1", "topic1"), m("consumer2", "topic1", "topic2"), m("consumer3", "topic1")]
    got = assign(members, {"topic1": 3, "topic2": 2}, JAVA)
    assert got == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 2)],
    }


def test_roundrobin_static_members_sort_by_instance_id():
    members = [
        m("consumer-b", "topic1", "topic2", instance="instance1"),
        m("consumer-a", "topic1", "topic2", instance="instance2"),
    ]
    got = roundrobin_assign(members, {"topic1": 3, "topic2": 3}, JAVA)
    assert got["consumer-b"] == [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)]
    assert got["consumer-a"] == [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)]


def test_java_and_librdkafka_differ_when_only_one_member_is_static():
    # Java puts the static member first; librdkafka compares member ids unless both are static.
    members = [m("a-member", "t"), m("b-member", "t", instance="static-1")]
    assert range_assign(members, {"t": 3}, JAVA) == {"b-member": [("t", 0), ("t", 1)], "a-member": [("t", 2)]}
    assert range_assign(members, {"t": 3}, LIBRDKAFKA) == {
        "a-member": [("t", 0), ("t", 1)],
        "b-member": [("t", 2)],
    }


T12 = ("topic1", "topic2")


@pytest.mark.parametrize("strategy", [STICKY, COOPERATIVE_STICKY])
def test_sticky_consumer_owning_min_quota_expected_max_quota(strategy):
    members = [
        m("consumer1", *T12, owned=[tp("topic1", 0), tp("topic2", 1)]),
        m("consumer2", *T12, owned=[tp("topic1", 1), tp("topic2", 2)]),
    ]
    got = sticky_assign(_as(strategy, members), {"topic1": 2, "topic2": 3}, strategy)
    assert got.assignment["consumer1"] == [tp("topic1", 0), tp("topic2", 1), tp("topic2", 0)]
    assert got.assignment["consumer2"] == [tp("topic1", 1), tp("topic2", 2)]
    assert got.transferring == {}


def test_sticky_max_quota_owners_more_than_expected():
    members = [
        m("consumer1", *T12, owned=[tp("topic1", 0), tp("topic2", 0)]),
        m("consumer2", *T12, owned=[tp("topic1", 1), tp("topic2", 1)]),
        m("consumer3", *T12),
    ]
    got = sticky_assign(members, {"topic1": 2, "topic2": 2}, COOPERATIVE_STICKY)
    assert got.transferring == {tp("topic2", 0): "consumer3"}
    assert got.assignment == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 1)],
        "consumer3": [tp("topic2", 0)],
    }


def test_sticky_all_consumers_under_min_quota():
    members = [
        m("consumer1", *T12, owned=[tp("topic1", 0)]),
        m("consumer2", *T12, owned=[tp("topic1", 1)]),
        m("consumer3", *T12),
    ]
    got = sticky_assign(members, {"topic1": 2, "topic2": 3}, COOPERATIVE_STICKY)
    assert got.assignment == {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
        "consumer3": [tp("topic2", 0)],
    }
    assert got.transferring == {}


@pytest.mark.parametrize("stale", [9, None])
def test_sticky_owned_partitions_of_a_stale_or_missing_generation_lose(stale):
    owned = [tp("topic", 0), tp("topic", 2), tp("topic2", 1)]
    members = [
        m("consumer1", "topic", "topic2", owned=owned, generation=10),
        m("consumer2", "topic", "topic2", owned=owned, generation=stale),
    ]
    got = sticky_assign(members, {"topic": 3, "topic2": 3}, COOPERATIVE_STICKY)
    assert set(got.assignment["consumer1"]) == set(owned)
    assert set(got.assignment["consumer2"]) == {tp("topic", 1), tp("topic2", 0), tp("topic2", 2)}
    assert got.transferring == {}


def test_sticky_partition_claimed_twice_in_one_generation_goes_to_neither():
    members = [
        m("consumer1", "topic", owned=[tp("topic", 0), tp("topic", 1)]),
        m("consumer2", "topic", owned=[tp("topic", 0), tp("topic", 2)]),
        m("consumer3", "topic"),
    ]
    got = sticky_assign(members, {"topic": 3}, COOPERATIVE_STICKY)
    assert got.transferring == {tp("topic", 0): "consumer3"}
    assert got.assignment == {
        "consumer1": [tp("topic", 1)],
        "consumer2": [tp("topic", 2)],
        "consumer3": [tp("topic", 0)],
    }


def test_sticky_no_reassignment_on_current_members():
    topics = ("topic", "topic2", "topic3", "topic1")
    members = [
        m("consumer1", *topics, generation=None),
        m("consumer2", *topics, owned=[tp("topic", 0), tp("topic2", 0), tp("topic1", 0)], generation=9),
        m("consumer3", *topics, owned=[tp("topic3", 2), tp("topic2", 2), tp("topic1", 1)], generation=8),
        m("consumer4", *topics, owned=[tp("topic3", 1), tp("topic", 1), tp("topic", 2)], generation=7),
    ]
    got = sticky_assign(members, {"topic": 3, "topic1": 3, "topic2": 3, "topic3": 3}, COOPERATIVE_STICKY)
    assert set(got.assignment["consumer1"]) == {tp("topic1", 2), tp("topic2", 1), tp("topic3", 0)}
    assert got.transferring == {}


def test_sticky_with_different_subscriptions_takes_the_general_path():
    # AbstractStickyAssignorTest.testMultipleConsumersMixedTopicSubscriptions: topic2 (one consumer)
    # first, each partition to the least loaded member that can take it.
    members = [m("consumer1", "topic1"), m("consumer2", "topic1", "topic2"), m("consumer3", "topic1")]
    got = sticky_assign(members, {"topic1": 3, "topic2": 2}, COOPERATIVE_STICKY)
    assert got.assignment == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2)],
        "consumer2": [tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 1)],
    }


@pytest.mark.parametrize("generations", [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)])
def test_sticky_general_path_with_three_generations_claiming_one_partition(generations):
    # testSubscriptionNotEqualAndAssignSamePartitionWith3Generation: every partition once, 1-2 each.
    g1, g2, g3 = generations
    members = [
        m("consumer1", "topic", owned=[tp("topic", 0), tp("topic", 2)], generation=g1),
        m("consumer2", "topic", owned=[tp("topic", 1), tp("topic", 2), tp("topic", 3)], generation=g2),
        m("consumer3", "topic", owned=[tp("topic", 2), tp("topic", 4), tp("topic", 5)], generation=g3),
        m("consumer4", "topic1", owned=[tp("topic1", 0)], generation=2),
    ]
    got = sticky_assign(members, {"topic": 6, "topic1": 1}, COOPERATIVE_STICKY).assignment
    every = [tp for tps in got.values() for tp in tps]
    assert sorted(every) == sorted({*every}) and len(every) == 7
    assert all(1 <= len(tps) <= 2 for tps in got.values())


def test_java_hashmap_order_is_bucket_order():
    # "consumer1".."consumer3" hash to buckets 12, 11 and 10 of a 16-slot table (String.hashCode, spread):
    # why consumer2 keeps its max quota before consumer1 in test_sticky_max_quota_owners_more_than_expected.
    assert java_hashmap_order(["consumer1", "consumer2", "consumer3"], java_string_hash) == (
        ["consumer3", "consumer2", "consumer1"],
        False,
    )


def _as(strategy, members):
    """The eager StickyAssignor reads what a member owned from its user data, not its subscription."""
    if strategy != STICKY:
        return members
    for member in members:
        member.user_data = _user_data(member.owned, member.generation)
        member.owned, member.generation = [], None
    return members


def _str(text):
    return struct.pack(">h", len(text)) + text.encode()


def _partitions(tps):
    topics = sorted({t for t, _ in tps})
    out = struct.pack(">i", len(topics))
    for topic in topics:
        ps = [p for t, p in tps if t == topic]
        out += _str(topic) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
    return out


def _user_data(owned, generation):
    return _partitions(owned) + struct.pack(">i", generation)


def test_cooperative_generation_before_subscription_v2_comes_from_user_data():
    # A v1 subscription carries owned partitions but no generation: the user data's int32 counts.
    data = (
        struct.pack(">hi", 1, 1)
        + _str("t")
        + struct.pack(">i", 4)
        + struct.pack(">i", 5)
        + _partitions([("t", 0)])
    )
    member = member_from_metadata("m1", data)
    owned = [m("other", "t", owned=[("t", 0)], generation=4), member]
    assert sticky_assign(owned, {"t": 2}, COOPERATIVE_STICKY).assignment["m1"] == [("t", 0)]


def test_subscription_v2_decodes_owned_partitions_and_generation():
    data = (
        struct.pack(">hi", 2, 2) + _str("a") + _str("b") + struct.pack(">i", -1)
        + _partitions([("a", 0), ("b", 3)]) + struct.pack(">i", 7)
    )  # fmt: skip
    member = member_from_metadata("m1", data)
    assert (member.topics, member.owned, member.generation) == (("a", "b"), [("a", 0), ("b", 3)], 7)
    assert assigned_partitions("m1", struct.pack(">h", 0) + _partitions([("a", 1)]) + b"\0\0\0\0") == [
        ("a", 1)
    ]


def test_a_lying_length_is_one_line_not_an_allocation():
    data = struct.pack(">hi", 0, 2_000_000_000)
    with pytest.raises(InputError, match="member m1: its subscription does not decode .*2000000000 elements"):
        member_from_metadata("m1", data)


# --- the broker's uniform assignor (OptimizedUniformAssignmentBuilderTest, its fixed topic ids) ---------

T1_ID, T2_ID = "T1-A4s3VTwiI5CTbEp6POw", "T2-B4s3VTwiI5YHbPp6YUe"
IDS = {"topic1": T1_ID, "topic2": T2_ID}


def _uniform(targets):
    from kafka_tools.consumers.uniform_assignor import java_uuid_order, uniform_assign

    members = list(targets)  # the test's TreeMap: by member id
    subs = {m: ("topic1", "topic2") for m in members}
    order = java_uuid_order(IDS, ["topic1", "topic2"])
    return uniform_assign(members, subs, targets, {"topic1": 3, "topic2": 3}, order)


def test_uniform_gives_back_over_quota_partitions_of_an_unbalanced_assignment():
    got = _uniform({"A": [("topic1", [0, 1]), ("topic2", [0, 1])], "B": [("topic1", [2]), ("topic2", [2])]})
    assert got == {
        "A": [("topic1", 0), ("topic1", 1), ("topic2", 0)],
        "B": [("topic1", 2), ("topic2", 2), ("topic2", 1)],
    }


def test_uniform_member_added_takes_what_the_others_have_over_quota():
    got = _uniform(
        {"A": [("topic1", [0, 2]), ("topic2", [0])], "B": [("topic1", [1]), ("topic2", [1, 2])], "C": []}
    )
    assert {m: sorted(tps) for m, tps in got.items()} == {
        "A": [("topic1", 0), ("topic1", 2)],
        "B": [("topic1", 1), ("topic2", 1)],
        "C": [("topic2", 0), ("topic2", 2)],
    }


def test_uniform_member_removed_unheld_partitions_go_in_topic_id_hash_order():
    # topic2's id hashes to an earlier bucket than topic1's: A (first) takes topic2-2, B topic1-2.
    from kafka_tools.consumers.uniform_assignor import java_uuid_order

    assert java_uuid_order(IDS, ["topic1", "topic2"]) == ["topic2", "topic1"]
    got = _uniform({"A": [("topic1", [0]), ("topic2", [0])], "B": [("topic1", [1]), ("topic2", [1])]})
    assert sorted(got["A"]) == [("topic1", 0), ("topic2", 0), ("topic2", 2)]
    assert sorted(got["B"]) == [("topic1", 1), ("topic1", 2), ("topic2", 1)]


# --- properties both sticky builders promise (AbstractStickyAssignorTest.verifyValidityAndBalance) --------


@st.composite
def sticky_groups(draw):
    counts = draw(st.lists(st.integers(0, 6), min_size=1, max_size=3))
    partitions = {f"t{i}": n for i, n in enumerate(counts)}
    all_tps = [(t, p) for t, n in partitions.items() for p in range(n)]
    names = draw(st.lists(st.sampled_from([f"c{i}" for i in range(8)]), min_size=1, max_size=5, unique=True))
    owner = {tp: draw(st.sampled_from([None, *names])) for tp in all_tps}
    held = {n: [tp for tp in all_tps if owner[tp] == n] for n in names}
    return partitions, names, held


def _balanced_and_complete(assignment, partitions):
    sizes = [len(v) for v in assignment.values()]
    got = sorted(tp for v in assignment.values() for tp in v)
    assert got == sorted((t, p) for t, n in partitions.items() for p in range(n))
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=150, deadline=None)
@given(sticky_groups())
def test_sticky_assignment_is_complete_balanced_and_keeps_owners_within_quota(case):
    partitions, names, held = case
    members = [m(n, *partitions, owned=held[n]) for n in names]
    got = sticky_assign(members, partitions, COOPERATIVE_STICKY).assignment
    _balanced_and_complete(got, partitions)
    min_quota = sum(partitions.values()) // len(names)
    for n in names:  # every member keeps at least min(owned, minQuota) of what it owned
        assert len(set(got[n]) & set(held[n])) >= min(len(held[n]), min_quota)


@settings(max_examples=150, deadline=None)
@given(sticky_groups())
def test_uniform_assignment_is_complete_balanced_and_keeps_targets_within_quota(case):
    from kafka_tools.consumers.uniform_assignor import uniform_assign

    partitions, names, held = case
    targets = {
        n: [(t, [p for tt, p in held[n] if tt == t]) for t in partitions if any(tt == t for tt, _ in held[n])]
        for n in names
    }
    subs = {n: tuple(partitions) for n in names}
    got = uniform_assign(names, subs, targets, partitions, list(partitions))
    _balanced_and_complete(got, partitions)
    min_quota = sum(partitions.values()) // len(names)
    for n in names:
        assert len(set(got[n]) & set(held[n])) >= min(len(held[n]), min_quota)


@st.composite
def mixed_groups(draw):
    partitions = {f"t{i}": draw(st.integers(1, 5)) for i in range(draw(st.integers(1, 4)))}
    names = [f"c{i}" for i in range(draw(st.integers(2, 5)))]
    subs = {n: draw(st.lists(st.sampled_from(sorted(partitions)), min_size=1, unique=True)) for n in names}
    all_tps = [(t, p) for t, n in partitions.items() for p in range(n)]
    owner = {tp: draw(st.sampled_from([None, *names])) for tp in all_tps}
    held = {n: [tp for tp in all_tps if owner[tp] == n and tp[0] in subs[n]] for n in names}
    return partitions, subs, held


@settings(max_examples=150, deadline=None)
@given(mixed_groups())
def test_sticky_general_path_is_valid_and_balanced_as_kafka_checks_it(case):
    # AbstractStickyAssignorTest.verifyValidityAndBalance: each subscribed partition once, to a
    # subscriber; a member with 2+ more than another holds nothing the other subscribes to.
    partitions, subs, held = case
    members = [m(n, *subs[n], owned=held[n]) for n in subs]
    got = sticky_assign(members, partitions, COOPERATIVE_STICKY).assignment
    every = sorted(tp for tps in got.values() for tp in tps)
    wanted = sorted({(t, p) for ts in subs.values() for t in ts for p in range(partitions[t])})
    assert every == wanted
    for n, tps in got.items():
        assert all(t in subs[n] for t, _ in tps)
        for o, others in got.items():
            if len(tps) > len(others) + 1:
                assert not any(t in subs[o] for t, _ in tps), (n, o, got)


@settings(max_examples=150, deadline=None)
@given(mixed_groups())
def test_uniform_on_unequal_subscriptions_gives_each_partition_once_to_a_subscriber(case):
    # the broker's heterogeneous builder: every subscribed partition assigned once, to a subscriber
    from kafka_tools.consumers.uniform_heterogeneous import heterogeneous_assign

    partitions, subs, held = case
    ids = {t: (i + 1, -7 * i) for i, t in enumerate(partitions)}
    targets = {n: {t: [p for tt, p in held[n] if tt == t] for t, _ in held[n]} for n in subs}
    got = heterogeneous_assign(list(subs), subs, targets, partitions, ids)
    every = sorted(tp for tps in got.values() for tp in tps)
    assert every == sorted({(t, p) for ts in subs.values() for t in ts for p in range(partitions[t])})
    for n, tps in got.items():
        assert all(t in subs[n] for t, _ in tps)
