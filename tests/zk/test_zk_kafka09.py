"""The ZooKeeper commands on what a real Kafka 0.9.0.1 broker and its old (ZooKeeper) consumer wrote."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from kafka_tools.zk.connection import ZkConfig, open_zk
from kafka_tools.zk.reader import read_group
from tests.support.servers import KafkaBroker, console_consume

BROKER_ID = 7
TOPIC = "orders"
PARTITIONS = 3
GROUP = "ktool-old-consumer"
MESSAGES = 6


@pytest.fixture(scope="module")
def kafka09(zookeeper_server):
    """A 0.9.0.1 broker in its own chroot, topic `orders` (3 partitions), and a group that consumed it
    with the old ZooKeeper consumer, which commits its offsets to ZooKeeper when it exits."""
    connect = f"{zookeeper_server.connect_string}/ktool-zk-kafka09-{uuid.uuid4().hex[:8]}"
    started = int(time.time() * 1000)
    with KafkaBroker(connect, BROKER_ID, properties={"auto.create.topics.enable": "false"}) as broker:
        broker.create_topic(TOPIC, partitions=PARTITIONS)
        broker.produce(TOPIC, [f"m{i}" for i in range(MESSAGES)], acks=1)
        consumed = console_consume(
            TOPIC, zookeeper=connect, group=GROUP, max_messages=MESSAGES, timeout_ms=20000, home=broker.home
        )
        assert len(consumed.stdout.splitlines()) == MESSAGES, consumed.stderr
        yield broker, connect, started


def test_brokers_json_parses_the_registration_of_a_real_0_9_broker(kafka09, zk_cli) -> None:
    broker, connect, started = kafka09
    result = zk_cli("brokers", "--json", "--zookeeper", connect)
    assert result.exit_code == 0, result.stderr
    reg, cluster, summary = (json.loads(line) for line in result.stdout.splitlines())
    assert summary == {"type": "summary", "brokers": 1}
    assert {k: reg[k] for k in ("type", "id", "host", "port", "endpoints", "version", "layout")} == {
        "type": "broker",
        "id": BROKER_ID,
        "host": "127.0.0.1",
        "port": broker.port,
        "endpoints": [f"PLAINTEXT://127.0.0.1:{broker.port}"],
        "version": 2,
        "layout": "0.8+",
    }
    assert reg["kafkaVersionHint"] == "0.9.x"
    assert started - 60_000 <= reg["timestamp"] <= int(time.time() * 1000)
    assert cluster["controller"] == BROKER_ID and cluster["clusterId"] is None
    assert cluster["librdkafka"] == {"api.version.request": "false", "broker.version.fallback": "0.9.0.1"}


def test_topics_and_cluster_id_of_a_real_0_9_cluster(kafka09, zk_cli) -> None:
    _, connect, _ = kafka09
    result = zk_cli("topics", TOPIC, "--json", "--zookeeper", connect)
    assert result.exit_code == 0, result.stderr
    *parts, summary = [json.loads(line) for line in result.stdout.splitlines()]
    assert summary == {"type": "summary", "topics": 1, "partitions": PARTITIONS, "missing": 0}
    assert [(p["partition"], p["leader"], p["replicas"], p["isr"]) for p in parts] == [
        (p, BROKER_ID, [BROKER_ID], [BROKER_ID]) for p in range(PARTITIONS)
    ]
    assert not any(p["underReplicated"] or p["offline"] for p in parts)
    result = zk_cli("cluster-id", "--zookeeper", connect)
    assert result.exit_code == 3
    assert "clusters before 0.10.1 have no id" in result.stderr


def test_read_group_reads_offsets_the_old_consumer_committed(kafka09) -> None:
    _, connect, _ = kafka09
    with open_zk(ZkConfig.parse(connect)) as zk:
        group = read_group(zk, GROUP)
    assert group.layout == "0.8+"
    assert sorted(group.offsets) == [(TOPIC, p) for p in range(PARTITIONS)]
    assert sum(group.offsets.values()) == MESSAGES  # offsets are "next to read": their sum is what was read
    assert group.members == [] and group.owners == {}  # the consumer exited: ephemeral znodes are gone
