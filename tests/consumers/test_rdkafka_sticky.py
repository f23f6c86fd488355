"""librdkafka's cooperative-sticky (consumers/rdkafka_sticky.py) where it parts from kafka-clients (each
case worked by hand from rdkafka_sticky_assignor.c and rdkafka_cgrp.c); the random groups against real
librdkafka consumers are in test_rdkafka_sticky_vs_librdkafka.py."""

from __future__ import annotations

import pytest

from kafka_tools.consumers.classic_member import ClassicMember
from kafka_tools.consumers.rdkafka_sticky import cooperative_sticky_assign, requested_topics
from kafka_tools.consumers.sticky_assignor import COOPERATIVE_STICKY, sticky_assign
from kafka_tools.format.java_hash import scala_set_order


def test_an_owned_partition_nobody_is_assigned_is_handed_back_to_its_owner():
    # the topic `gone` has no metadata: the assignor leaves it out, the cooperative adjustment gives it back
    members = [
        ClassicMember("a", ("t",), owned=[("t", 0), ("gone", 0)], generation=4),
        ClassicMember("b", ("t",), owned=[("t", 1)], generation=4),
    ]
    settled = cooperative_sticky_assign(members, {"t": 2})
    assert {m: sorted(tps) for m, tps in settled.assignment.items()} == {
        "a": [("gone", 0), ("t", 0)],
        "b": [("t", 1)],
    }
    assert settled.rebalances == 1 and not settled.transferring
    assert ("gone", 0) not in sticky_assign(members, {"t": 2}, COOPERATIVE_STICKY).assignment["a"]  # Java


def test_a_tie_between_two_older_claims_voids_the_newest_claim_too():
    # (t, 0) claimed in generations 1, 1 and 3: librdkafka finds the duplicate 1 and voids every claim;
    # the partition goes to the least loaded member `a`, and `c`, its last claimant, revokes it first
    members = [
        ClassicMember("a", ("t",), owned=[("t", 0)], generation=1),
        ClassicMember("b", ("t",), owned=[("t", 0)], generation=1),
        ClassicMember("c", ("t",), owned=[("t", 0)], generation=3),
    ]
    settled = cooperative_sticky_assign(members, {"t": 3})
    assert settled.assignment == {"a": [("t", 0)], "b": [("t", 1)], "c": [("t", 2)]}
    assert settled.rebalances == 2 and settled.transferring == {("t", 0): "a"}


def test_unowned_partitions_are_dealt_newest_topic_first_when_subscriptions_are_alike():
    # rd_map iterates newest first: (y, 1), (y, 0), (x, 1), (x, 0) after `a`'s own round-robin entry
    members = [
        ClassicMember("a", ("x", "y"), owned=[("x", 0)], generation=2),
        ClassicMember("b", ("x", "y"), generation=2),
    ]
    settled = cooperative_sticky_assign(members, {"x": 2, "y": 2})
    assert settled.assignment == {"a": [("x", 0), ("y", 0)], "b": [("y", 1), ("x", 1)]}


def test_topics_are_requested_in_the_members_order_once_each():
    members = [ClassicMember("m2", ("b", "c")), ClassicMember("m1", ("a", "b", "none"))]
    assert requested_topics(members, {"a": 1, "b": 2, "c": 3}) == ["b", "c", "a"]


def test_librdkafka_consumers_refuse_the_eager_sticky_assignor():
    """Why the plan refuses librdkafka's `sticky`: the client registers none."""
    from confluent_kafka import Consumer, KafkaException

    with pytest.raises(KafkaException, match="Unsupported partition.assignment.strategy: sticky"):
        Consumer(
            {"group.id": "g", "partition.assignment.strategy": "sticky", "bootstrap.servers": "127.0.0.1:1"}
        )


def test_the_brokers_topic_order_keeps_4_as_asked_and_lays_more_out_by_hash():
    assert scala_set_order(["d", "b", "c", "a"]) == ["d", "b", "c", "a"]  # Set4 keeps insertion order
    many = ["orders", "billing", "clicks", "audit", "users", "events"]
    laid_out = scala_set_order(many)
    assert sorted(laid_out) == sorted(many) and laid_out != many
    assert scala_set_order(list(reversed(many))) == laid_out  # a hash trie: whatever order they came in
