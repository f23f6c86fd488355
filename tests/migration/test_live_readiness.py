"""What `check --bootstrap-server/--bootstrap-controller` concludes from what the nodes answered: the IBPs
against the migration's minimum and each other, the quorum and each voter's migration flag."""

from __future__ import annotations

from kafka_tools.broker.cluster_wire import Quorum, ReplicaState
from kafka_tools.migration.live_nodes import NodeSetting, QuorumSeen
from kafka_tools.migration.readiness import broker_protocol_findings, quorum_findings


def _kinds(findings):
    return [(f.severity.value, f.kind, f.file) for f in findings]


def test_brokers_on_one_ibp_of_3_4_or_newer_are_ready():
    ibps = [NodeSetting(1, "h:1", "3.9-IV0"), NodeSetting(2, "h:2", "3.9-IV0")]
    assert broker_protocol_findings(ibps) == []


def test_an_ibp_below_3_4_and_two_ibps_are_each_reported():
    ibps = [NodeSetting(2, "h:2", "3.9"), NodeSetting(1, "h:1", "3.3-IV3"), NodeSetting(3, "h:3", "3.9")]
    got = broker_protocol_findings(ibps)
    assert _kinds(got) == [("error", "ibp-too-old", "broker 1 (h:1)"), ("error", "ibp-mismatch", "brokers")]
    assert "(3.3-IV3 on 1; 3.9 on 2,3)" in got[1].message


def test_an_ibp_that_cannot_be_seen_is_risky_with_the_reason():
    why = "DescribeConfigs denied (CLUSTER_AUTHORIZATION_FAILED)"
    got = broker_protocol_findings([NodeSetting(1, "h:1", None, why)])
    assert _kinds(got) == [("warning", "ibp-unseen", "broker 1 (h:1)")]
    assert why in got[0].message


def _quorum(*voters: int) -> Quorum:
    return Quorum(voters[0], 4, 100, [ReplicaState(v, None, 100, 0, 0) for v in voters], [])


def test_a_voter_without_the_migration_flag_blocks_and_one_unseen_is_risky():
    seen = QuorumSeen(
        "c:1",
        _quorum(3000, 3001, 3002),
        flags=[
            NodeSetting(3000, "c:1", "true"),
            NodeSetting(3001, "c:2", "false"),
            NodeSetting(3002, "c:3", None, "node c:3: cannot connect (connection refused)"),
        ],
    )
    got = quorum_findings(seen)
    assert _kinds(got) == [
        ("info", "controller-quorum", "controllers c:1"),
        ("error", "migration-not-enabled", "controller 3001 (c:2)"),
        ("warning", "migration-flag-unseen", "controller 3002 (c:3)"),
    ]
    assert got[0].message.endswith("voters 3000,3001,3002; zookeeper.metadata.migration.enable=true on 3000")


def test_an_unreachable_quorum_blocks():
    got = quorum_findings(QuorumSeen("c:1", None, "node c:1: cannot connect (connection refused)"))
    assert _kinds(got) == [("error", "controller-quorum-unreachable", "controllers c:1")]
    assert "(node c:1: cannot connect (connection refused))" in got[0].message
