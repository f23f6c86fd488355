"""`groups rebalance-plan --bootstrap-server`: a live group's next assignment as its own assignor computes
it (the leader's client library for a classic group, the broker for a consumer group), what-ifs, and
the plan's account of which assignor and implementation it used and why. The coordinator is faked at
the Broker's two questions (the members' JoinGroup bytes are real ConsumerProtocol bytes); the same
command against real consumers is the server-marked proof."""

from __future__ import annotations

import json
import struct

import pytest
from click.testing import CliRunner

from kafka_tools.broker.group_requests import ClassicGroup, ClassicGroupMember, CoordinatedGroup
from kafka_tools.cli.main import cli
from kafka_tools.consumers.assignors import AssignmentError
from kafka_tools.consumers.classic_member import ClassicMember
from kafka_tools.consumers.member_order import JAVA, LIBRDKAFKA
from kafka_tools.consumers.modern_plan import LiveGroup, leader_library, plan_live_group
from kafka_tools.consumers.rebalance import Move
from kafka_tools.errors import UsageError


def _str(text):
    return struct.pack(">h", len(text)) + text.encode()


def _partitions(tps):
    topics = sorted({t for t, _ in tps})
    out = struct.pack(">i", len(topics))
    for topic in topics:
        ps = [p for t, p in tps if t == topic]
        out += _str(topic) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
    return out


def subscription(topics, owned=(), generation=3):
    """ConsumerProtocolSubscription v2: topics, no user data, owned partitions, generation."""
    return (
        struct.pack(">hi", 2, len(topics)) + b"".join(_str(t) for t in topics) + struct.pack(">i", -1)
        + _partitions(owned) + struct.pack(">i", generation)
    )  # fmt: skip


def assignment(tps):
    return struct.pack(">h", 0) + _partitions(tps) + struct.pack(">i", -1)


@pytest.fixture
def coordinator(monkeypatch):
    """A classic group of two members, cooperative-sticky, on topic `orders` (6 partitions)."""
    owned = {"m-a": [("orders", p) for p in (0, 1, 2)], "m-b": [("orders", p) for p in (3, 4, 5)]}
    state = {
        "protocol": "cooperative-sticky",
        "client_id": "rdkafka",
        "members": {m: (subscription(["orders"], tps), assignment(tps)) for m, tps in owned.items()},
        "topics": {"orders": list(range(6))},
    }

    class FakeCoordinator:
        """The Broker's two questions a plan asks, answered from `state`."""

        def coordinated_group(self, group):
            if group != "billing":
                return CoordinatedGroup(("h", 9092, 1), classic=ClassicGroup(group, 0, "Dead"))
            members = [
                ClassicGroupMember(m, None, state["client_id"], "/h", sub, asg)
                for m, (sub, asg) in state["members"].items()
            ]
            return CoordinatedGroup(
                ("h", 9092, 1),
                classic=ClassicGroup(group, 0, "Stable", "consumer", state["protocol"], members),
            )

        def topics(self):
            return state["topics"]

        def replica_racks(self, topics):
            return state["racks"]

        def close(self):
            pass

    monkeypatch.setattr("kafka_tools.cli.groups.broker_from_options", lambda zk, **o: FakeCoordinator())
    return state


def run(*args):
    result = CliRunner().invoke(cli, ["groups", "rebalance-plan", "--bootstrap-server", "127.0.0.1:1", *args])
    return result


def test_a_member_joining_a_cooperative_group_takes_one_partition_from_each(coordinator):
    coordinator["client_id"] = "consumer-billing-1"  # kafka-clients' default: a Java leader
    result = run("billing", "--add-member", "m-c", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    moves = {
        (o["partition"], o["currentOwner"], o["proposedOwner"])
        for o in lines
        if o["type"] == "assignment" and o["moves"]
    }
    # 6 partitions, 3 members: quota 2; m-a keeps 0,1 and m-b keeps 3,4 (owned, sorted by partition).
    assert moves == {(2, "m-a", "m-c"), (5, "m-b", "m-c")}
    plan = next(o for o in lines if o["type"] == "plan")
    assert (plan["strategy"], plan["implementation"], plan["moves"]) == (
        "cooperative-sticky",
        "java",
        2,
    )
    assert plan["reasons"][0].startswith(
        "assignor: cooperative-sticky, the protocol the group's members agreed"
    )


def _moves(result):
    rows = [json.loads(line) for line in result.output.splitlines()]
    moved = {
        (o["partition"], o["currentOwner"], o["proposedOwner"])
        for o in rows
        if o["type"] == "assignment" and o["moves"]
    }
    return moved, next(o for o in rows if o["type"] == "plan")


def test_librdkafkas_cooperative_sticky_gives_a_newcomer_the_front_partitions_java_the_back(coordinator):
    # Every client id is librdkafka's default: its leader lists each member's partitions round-robin from
    # the fullest (m-b, then m-a), and the newcomer, least loaded, is given the first ones: 3, then 0.
    result = run("billing", "--add-member", "m-c", "--json")
    assert result.exit_code == 0, result.output
    moved, plan = _moves(result)
    assert moved == {(0, "m-a", "m-c"), (3, "m-b", "m-c")}
    assert (plan["strategy"], plan["implementation"]) == ("cooperative-sticky", "librdkafka")
    assert (
        "2 partitions change owner: revoked in this rebalance, assigned in the next one the revoking "
        "members start (2 rebalances in all)" in plan["warnings"]
    )
    java = run("billing", "--add-member", "m-c", "--json", "--implementation", "java")
    assert _moves(java)[0] == {(2, "m-a", "m-c"), (5, "m-b", "m-c")}


def test_librdkafka_has_no_eager_sticky_so_planning_it_is_refused_in_one_line(coordinator):
    coordinator["protocol"] = "sticky"
    refused = run("billing", "--implementation", "librdkafka")
    assert refused.exit_code == 1
    assert refused.output.strip().splitlines() == [
        "ktool: librdkafka has no eager sticky assignor (its consumers refuse "
        "partition.assignment.strategy=sticky): a group on sticky is led by another library; "
        "--implementation java plans kafka-clients'"
    ]


def test_a_member_sending_a_rack_is_refused_for_librdkafkas_cooperative_sticky():
    members = [
        ClassicMember("m-a", ("orders",), owned=[("orders", 0)], rack="eu-1"),
        ClassicMember("m-b", ("orders",), owned=[("orders", 1)]),
    ]
    group = LiveGroup("g", "classic", "cooperative-sticky", members, {}, {"orders": 2})
    with pytest.raises(AssignmentError, match="member m-a sends rack eu-1: librdkafka's cooperative-sticky"):
        plan_live_group(group, implementation=LIBRDKAFKA)


def test_range_what_if_growing_a_topic(coordinator):
    coordinator["protocol"] = "range"
    result = run("billing", "--partitions", "orders=8", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    owners = {o["partition"]: o["proposedOwner"] for o in rows if o["type"] == "assignment"}
    assert owners == {0: "m-a", 1: "m-a", 2: "m-a", 3: "m-a", 4: "m-b", 5: "m-b", 6: "m-b", 7: "m-b"}
    assert next(o for o in rows if o["type"] == "plan")["moves"] == 3  # 3 moves to m-a; 6, 7 are new


def test_a_group_the_coordinator_does_not_know_is_exit_3(coordinator):
    result = run("nobody")
    assert result.exit_code == 3
    assert result.output.strip() == "ktool: group nobody not found: its coordinator does not know it"


def test_removing_a_member_that_is_not_there_is_a_usage_error(coordinator):
    result = run("billing", "--remove-member", "m-z")
    assert result.exit_code == 2
    assert "cannot remove m-z: not a member of group billing" in result.output


def test_zookeeper_what_ifs_without_zookeeper_are_a_usage_error(coordinator):
    result = run("billing", "--add-consumer", "c1")
    assert result.exit_code == 2
    assert "--add-consumer and --remove-consumer are ZooKeeper's" in result.output


def live(kind, assignor, members, partitions):
    current = {tp: m.member_id for m in members for tp in m.owned}
    return LiveGroup("g", kind, assignor, members, current, partitions)


def test_consumer_group_range_is_the_brokers_and_uniform_keeps_targets_up_to_quota():
    members = [ClassicMember("b", ("t",), owned=[("t", 0)]), ClassicMember("a", ("t",), owned=[("t", 1)])]
    plan = plan_live_group(live("consumer", "range", members, {"t": 2}))
    assert plan.proposed == {("t", 0): "a", ("t", 1): "b"} and plan.implementation == "broker"
    assert len(plan.moves) == 2
    members.append(ClassicMember("c", ("t",)))
    group = live("consumer", "uniform", members, {"t": 2})
    group.targets = {"b": [("t", 0)], "a": [("t", 1)]}
    group.topic_ids = {"t": "T1-A4s3VTwiI5CTbEp6POw"}
    plan = plan_live_group(group, remove=["a"])
    # b keeps t-0 (its target, within quota 1); t-1, held by no one left, goes to c, the member under quota
    assert plan.proposed == {("t", 0): "b", ("t", 1): "c"} and plan.moves == [Move("t", 1, "a", "c")]
    assert plan.reasons[-1] == (
        "implementation: the broker's group coordinator, "
        "because a consumer group (KIP-848) is assigned by its coordinator"
    )
    divided = live(
        "consumer", "uniform", [ClassicMember("x", ("t",)), ClassicMember("y", ("u",))], {"t": 1, "u": 1}
    )
    divided.topic_ids = {"t": "T1-A4s3VTwiI5CTbEp6POw", "u": "T2-B4s3VTwiI5YHbPp6YUe"}
    # members subscribing to different topics: the broker's heterogeneous builder, each takes its own topic
    assert plan_live_group(divided).proposed == {("t", 0): "x", ("u", 0): "y"}


def test_a_client_library_for_a_consumer_group_is_a_usage_error():
    group = live("consumer", "range", [ClassicMember("a", ("t",))], {"t": 1})
    with pytest.raises(UsageError, match="group g is a consumer group, assigned by the broker"):
        plan_live_group(group, implementation="librdkafka")


def test_a_topic_cannot_shrink():
    members = [ClassicMember("a", ("t",))]
    with pytest.raises(UsageError, match="a topic cannot shrink"):
        plan_live_group(live("classic", "range", members, {"t": 4}), partition_counts={"t": 2})


def test_leader_library_from_client_ids():
    def mk(*ids):
        return [ClassicMember(f"m{i}", ("t",), client_id=c) for i, c in enumerate(ids)]

    assert leader_library(mk("rdkafka", "rdkafka"))[0] == LIBRDKAFKA
    assert leader_library(mk("consumer-g-1", "consumer-g-2"))[0] == JAVA
    impl, why = leader_library(mk("rdkafka", "consumer-g-1"))
    assert impl == JAVA and "kafka-clients assumed" in why


def test_a_stable_sticky_group_is_planned_from_what_its_members_hold_now(coordinator):
    # The JoinGroup metadata says m-a owned nothing (it joined fresh), but SyncGroup gave it 0-2: it
    # rejoins owning 0-2, so a member joining takes one partition from each, not m-a's whole share.
    coordinator["client_id"] = "consumer-billing-1"
    coordinator["members"]["m-a"] = (
        subscription(["orders"], []),
        assignment([("orders", p) for p in (0, 1, 2)]),
    )
    result = run("billing", "--add-member", "m-c", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    moved = {
        (o["partition"], o["currentOwner"], o["proposedOwner"])
        for o in rows
        if o["type"] == "assignment" and o["moves"]
    }
    assert moved == {(2, "m-a", "m-c"), (5, "m-b", "m-c")}
    plan = rows[-2]
    assert (
        "owners: what each member holds now, in the current generation (the group is stable)"
        in plan["reasons"]
    )


def test_an_unreachable_broker_is_one_line_and_exit_3():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = CliRunner().invoke(
        cli, ["groups", "rebalance-plan", "--bootstrap-server", f"127.0.0.1:{port}", "g"]
    )
    assert result.exit_code == 3
    assert (
        result.output.strip()
        == f"ktool: broker 127.0.0.1:{port}: connection refused (is a broker listening there?)"
    )


def test_a_stable_eager_sticky_group_moves_nothing_when_nothing_changes(coordinator):
    # kafka-clients' eager StickyAssignor: members revoke everything before joining, so the JoinGroup's
    # owned partitions are empty and what they held travels in user data. A stable group rejoins with what
    # SyncGroup gave it; the plan once read no user data there and dealt every partition afresh (6 moves
    # on a live group of two Java members).
    coordinator["protocol"] = "sticky"
    coordinator["client_id"] = "consumer-billing-1"
    coordinator["members"] = {
        "m-a": (subscription(["orders"], []), assignment([("orders", p) for p in (3, 4, 5)])),
        "m-b": (subscription(["orders"], []), assignment([("orders", p) for p in (0, 1, 2)])),
    }
    result = run("billing", "--json")
    assert result.exit_code == 0, result.output
    plan = [json.loads(line) for line in result.output.splitlines()][-2]
    assert plan["moves"] == 0, result.output


def racked_subscription(topics, rack, owned=(), generation=3):
    """ConsumerProtocolSubscription v3: v2 and the member's client.rack (KIP-881)."""
    return struct.pack(">h", 3) + subscription(topics, owned, generation)[2:] + _str(rack)


@pytest.fixture
def racked(coordinator):
    """The range group with m-a on rack r1, m-b on r2; orders 0-2 on r2's brokers, 3-5 on r1's."""
    coordinator["protocol"], coordinator["client_id"] = "range", "consumer-billing-1"
    owned = {"m-a": [("orders", p) for p in (0, 1, 2)], "m-b": [("orders", p) for p in (3, 4, 5)]}
    rack = {"m-a": "r1", "m-b": "r2"}
    coordinator["members"] = {
        m: (racked_subscription(["orders"], rack[m], tps), assignment(tps)) for m, tps in owned.items()
    }
    coordinator["racks"] = {("orders", p): frozenset({"r2" if p < 3 else "r1"}) for p in range(6)}
    return coordinator


def test_range_with_racks_gives_each_member_the_partitions_on_its_rack(racked):
    result = run("billing", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    owners = {o["partition"]: o["proposedOwner"] for o in rows if o["type"] == "assignment"}
    # rack-blind, m-a (first by member id) would keep 0-2; on racks it takes 3-5, the ones on r1
    assert owners == {0: "m-b", 1: "m-b", 2: "m-b", 3: "m-a", 4: "m-a", 5: "m-a"}
    plan = next(o for o in rows if o["type"] == "plan")
    assert (
        "racks: members send r1, r2; replicas are on r1, r2 (the brokers' broker.rack), as kafka-clients' "
        "rack-aware assignors match them (KIP-881)" in plan["reasons"]
    )
    assert plan["warnings"] == []


def test_racks_where_ktool_cannot_say_how_they_decide_are_refused_in_one_line(racked):
    librdkafka = run("billing", "--implementation", "librdkafka")
    assert librdkafka.exit_code == 1
    assert librdkafka.output.strip().splitlines() == [
        "ktool: the group's leader runs librdkafka's range assignor, whose rack-aware path (librdkafka 2.3+) "
        "ktool does not model, and members' racks (r1, r2) hold replicas"
    ]
    grown = run("billing", "--partitions", "orders=8")
    assert grown.exit_code == 1
    assert grown.output.strip().splitlines() == [
        "ktool: --partitions orders: members send racks (KIP-881), and a partition that does not exist yet "
        "has no replicas whose racks the assignor would match"
    ]


def test_roundrobin_reads_no_racks(racked):
    racked["protocol"] = "roundrobin"
    result = run("billing", "--json")
    assert result.exit_code == 0, result.output
    plan = [json.loads(line) for line in result.output.splitlines()][-2]
    assert "racks: the members' racks change nothing: the roundrobin assignor reads none" in plan["reasons"]


def test_members_with_racks_and_no_replica_racks_are_refused():
    from kafka_tools.consumers.assignors import AssignmentError

    group = live("classic", "range", [ClassicMember("a", ("t",), rack="r1")], {"t": 2})
    with pytest.raises(AssignmentError, match="members send racks .* replica racks are unknown"):
        plan_live_group(group, implementation="java")
