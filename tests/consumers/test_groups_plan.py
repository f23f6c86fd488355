"""Rebalance plans: Kafka's proposed assignment against the owners found in ZooKeeper."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools.consumers.assignors import (
    WHITE_LIST,
    AssignmentError,
    Member,
    ThreadId,
)
from kafka_tools.consumers.rebalance import (
    Move,
    member_like,
    parse_consumer_spec,
    parse_partition_count,
    plan_rebalance,
)
from kafka_tools.errors import UsageError

C1 = "g_host-1463000000000-abcd1234"
C2 = "g_host-1463000000001-ef567890"


def test_adding_a_consumer_moves_the_upper_half_of_the_range():
    owners = {("t", p): f"{C1}-0" for p in range(4)}
    plan = plan_rebalance([Member(C1, {"t": 1})], {"t": 4}, owners, add=[f"{C2}:1"])
    assert plan.moves == [Move("t", 2, f"{C1}-0", f"{C2}-0"), Move("t", 3, f"{C1}-0", f"{C2}-0")]
    assert plan.unassigned == [] and plan.idle_threads == [] and plan.idle_consumers == []
    assert plan.members[-1] == Member(C2, {"t": 1})


def test_unowned_partitions_gaining_an_owner_count_as_moves_from_none():
    plan = plan_rebalance([Member(C1, {"t": 1})], {"t": 2}, {("t", 0): f"{C1}-0"})
    assert plan.moves == [Move("t", 1, None, f"{C1}-0")]
    assert plan.current == {("t", 0): f"{C1}-0", ("t", 1): None}


def test_removing_the_only_consumer_leaves_every_partition_unassigned():
    owners = {("t", 0): f"{C1}-0", ("t", 1): f"{C1}-0"}
    plan = plan_rebalance([Member(C1, {"t": 1})], {"t": 2}, owners, remove=[C1])
    assert plan.unassigned == [("t", 0), ("t", 1)]
    assert [m.to_owner for m in plan.moves] == [None, None]
    with pytest.raises(UsageError):
        plan_rebalance([Member(C1, {"t": 1})], {"t": 2}, owners, remove=["nobody"])


def test_more_threads_than_partitions_shows_idle_threads_and_consumers():
    members = [Member(f"c{i}", {"t": 1}) for i in range(4)] + [Member("m", {"t": 2})]
    plan = plan_rebalance(members, {"t": 3}, {})
    # threads in Kafka's order: c0-0 c1-0 c2-0 c3-0 m-0 m-1; three partitions go to the first three.
    assert [str(t) for t in plan.idle_threads] == ["c3-0", "m-0", "m-1"]
    assert plan.idle_consumers == ["c3", "m"]
    assert ("t", ThreadId("m", 1)) in plan.idle_streams


def test_idle_streams_are_per_topic_while_idle_threads_own_nothing_anywhere():
    plan = plan_rebalance([Member("c", {"a": 2, "b": 2})], {"a": 1, "b": 2}, {})
    assert plan.idle_threads == []
    assert plan.idle_streams == [("a", ThreadId("c", 1))]


def test_growing_a_topic_adds_partitions_and_reshuffles_the_range():
    owners = {("t", 0): "a-0", ("t", 1): "b-0"}
    members = [Member("a", {"t": 1}), Member("b", {"t": 1})]
    plan = plan_rebalance(members, {"t": 2}, owners, partition_counts={"t": 4})
    # a-0 takes 0,1 and b-0 takes 2,3: partition 1 moves, 2 and 3 are new.
    assert plan.moves == [Move("t", 1, "b-0", "a-0"), Move("t", 2, None, "b-0"), Move("t", 3, None, "b-0")]


def test_new_topic_from_partition_counts_is_seen_by_wildcard_subscribers():
    members = [Member("a", {"t.*": 1}, WHITE_LIST)]
    plan = plan_rebalance(members, {"t1": 1}, {}, partition_counts={"t2": 1})
    assert plan.proposed == {("t1", 0): ThreadId("a", 0), ("t2", 0): ThreadId("a", 0)}


def test_partitions_of_unsubscribed_topics_are_unassigned_and_stale_owners_released():
    plan = plan_rebalance([Member("a", {"t": 1})], {"t": 1, "u": 1}, {("u", 0): "old-0"})
    assert plan.unassigned == [("u", 0)]
    assert Move("u", 0, "old-0", None) in plan.moves


def test_round_robin_plan_refuses_mixed_subscriptions():
    members = [Member("a", {"x": 1, "y": 1}), Member("b", {"x": 1})]
    with pytest.raises(AssignmentError):
        plan_rebalance(members, {"x": 1, "y": 1}, {}, strategy="roundrobin")


def test_round_robin_plan_warns_about_hash_ties_across_topics():
    members = [Member("a", {"Aa": 1, "BB": 1}), Member("b", {"Aa": 1, "BB": 1})]
    plan = plan_rebalance(members, {"Aa": 1, "BB": 1}, {}, strategy="roundrobin")
    assert len(plan.warnings) == 1 and "[Aa,0], [BB,0]" in plan.warnings[0]


def test_added_consumer_copies_a_shared_wildcard_or_the_union_of_topics():
    wildcard = [Member("a", {"t.*": 2}, WHITE_LIST)]
    assert member_like("n", wildcard, ["t1"], streams=3) == Member("n", {"t.*": 3}, WHITE_LIST)
    mixed = [Member("a", {"x": 2}), Member("b", {"y": 1})]
    assert member_like("n", mixed, []) == Member("n", {"x": 1, "y": 1})
    with pytest.raises(UsageError):
        member_like("n", [], ["t"])


def test_option_values_parse():
    assert parse_consumer_spec("c1") == ("c1", 1)
    assert parse_consumer_spec("c1:3") == ("c1", 3)
    assert parse_partition_count("t=12") == ("t", 12)
    for bad in ("c1:0", ":2"):
        with pytest.raises(UsageError):
            parse_consumer_spec(bad)
    with pytest.raises(UsageError):
        parse_partition_count("t")


@st.composite
def groups_with_owners(draw):
    topics = draw(st.lists(st.sampled_from(["a", "b", "c", "t1"]), min_size=1, unique=True))
    ids = draw(st.lists(st.sampled_from(["c", "c-1", "d", "e10"]), min_size=1, unique=True))
    # one stream count per consumer across its topics, as round robin requires
    members = [Member(cid, dict.fromkeys(topics, draw(st.integers(1, 3)))) for cid in ids]
    partitions = {t: draw(st.integers(0, 8)) for t in topics}
    owner_strings = st.one_of(st.none(), st.sampled_from(["c-0", "c-1", "c-1-0", "d-0", "gone-0"]))
    owners = {(t, p): draw(owner_strings) for t in topics for p in range(partitions[t] + 1)}
    strategy = draw(st.sampled_from(["range", "roundrobin"]))
    return members, partitions, owners, strategy


@settings(max_examples=200)
@given(groups_with_owners())
def test_moves_are_exactly_the_partitions_whose_owner_string_changes(case):
    members, partitions, owners, strategy = case
    plan = plan_rebalance(members, partitions, owners, strategy=strategy)
    proposed = {tp: None if th is None else str(th) for tp, th in plan.proposed.items()}
    changed = {tp for tp in plan.current if plan.current[tp] != proposed[tp]}
    assert {(m.topic, m.partition) for m in plan.moves} == changed
    assert all(m.from_owner == plan.current[(m.topic, m.partition)] for m in plan.moves)
    every = {(t, p) for t, n in partitions.items() for p in range(n)}
    assert {tp for tp, th in plan.proposed.items() if th is not None} == every
    assert plan.unassigned == []
