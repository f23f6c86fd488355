"""`ktool topics`, `brokers` and `cluster-id --bootstrap-server` on a Kafka 0.9.0.1 broker, which has no
ApiVersions, DescribeCluster, DescribeConfigs or any request ktool's own client would ask: the view
falls back to the Metadata response (brokers, leader, replicas, ISR), says in one line what it cannot
know, and never shows a traceback."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import run_ktool

pytestmark = pytest.mark.server


def test_topics_and_brokers_of_a_0_9_broker_fall_back_to_metadata(kafka09_cluster) -> None:
    kafka09_cluster.broker.create_topic("old-orders", partitions=2)
    bootstrap = ("--bootstrap-server", kafka09_cluster.bootstrap)
    result = run_ktool("topics", "old-orders", "--json", *bootstrap)
    assert result.exit_code == 0, result.output
    parts = [json.loads(line) for line in result.stdout.splitlines()][:-1]
    assert [(p["partition"], p["leader"], p["replicas"], p["isr"]) for p in parts] == [
        (0, 0, [0], [0]),
        (1, 0, [0], [0]),
    ]
    assert all(p["elr"] is None and p["minIsr"] is None for p in parts)  # 0.9 cannot say
    note = result.stderr.strip().splitlines()
    assert len(note) == 1 and "DescribeConfigs" in note[0] and "Traceback" not in result.output
    brokers = run_ktool("brokers", "--json", *bootstrap)
    assert brokers.exit_code == 0, brokers.output
    objs = [json.loads(line) for line in brokers.stdout.splitlines()]
    assert [o["id"] for o in objs if o["type"] == "broker"] == [0]
    no_id = run_ktool("cluster-id", *bootstrap)  # Metadata carries a cluster id from 0.10.1 only
    assert no_id.exit_code == 3 and len(no_id.stderr.strip().splitlines()) == 1, no_id.output
