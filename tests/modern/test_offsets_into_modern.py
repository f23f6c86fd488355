"""`offsets import --to kafka` and `migrate-offsets` commit into real 3.9 and 4.x brokers: what
`kafka-consumer-groups` (ConsumerGroupCommand of the same release) then reads back is what was written."""

from __future__ import annotations

import uuid

import pytest

from tests.modern.test_groups_modern import kafka_consumer_groups
from tests.support.cli import run_ktool
from tests.support.modern import create_topic

WANTED = {0: 3, 1: 10, 2: 0}


@pytest.fixture
def topic(modern_kafka) -> str:
    from confluent_kafka import Producer

    name = f"import-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, name, partitions=3)
    producer = Producer({"bootstrap.servers": modern_kafka.bootstrap})
    for i in range(30):
        producer.produce(name, b"m", partition=i % 3)
    assert producer.flush(30) == 0
    return name


def _read_back(cluster, group: str, topic: str) -> dict[int, int]:
    rows = kafka_consumer_groups(cluster, "--describe", "--group", group)
    return {int(r["PARTITION"]): int(r["CURRENT-OFFSET"]) for r in rows if r["TOPIC"] == topic}


def test_offsets_import_to_kafka(modern_kafka, topic, tmp_path):
    group = f"imported-{uuid.uuid4().hex[:8]}"
    offsets = tmp_path / "offsets.csv"
    offsets.write_text("".join(f"{group},{topic},{p},{o}\n" for p, o in WANTED.items()))
    result = run_ktool(
        "offsets",
        "import",
        "--to",
        "kafka",
        "--bootstrap-server",
        modern_kafka.bootstrap,
        "--all-groups",
        str(offsets),
    )
    assert result.exit_code == 0, result.output
    assert _read_back(modern_kafka, group, topic) == WANTED


@pytest.mark.parametrize("kafka_release", ["4.4.0"], indirect=True)
def test_migrate_offsets_from_an_old_zookeeper_into_kafka4(modern_kafka, topic, zk_root):
    """Offsets an old consumer kept in an old cluster's ZooKeeper (/consumers, a 0.9 broker registered),
    moved into a 4.x cluster, which has no ZooKeeper: --broker-version says what the target is."""
    group = f"migrated-{uuid.uuid4().hex[:8]}"
    zk_root.write(
        "/brokers/ids/0",
        '{"jmx_port":-1,"timestamp":"1","endpoints":["PLAINTEXT://old:9092"],'
        '"host":"old","version":2,"port":9092}',
    )
    zk_root.write(f"/brokers/topics/{topic}", '{"version":1,"partitions":{"0":[0],"1":[0],"2":[0]}}')
    for partition, offset in WANTED.items():
        zk_root.write(f"/consumers/{group}/offsets/{topic}/{partition}", str(offset))
    result = run_ktool(
        "migrate-offsets",
        "--zookeeper",
        zk_root.connect,
        "--bootstrap-server",
        modern_kafka.bootstrap,
        "--broker-version",
        modern_kafka.release.version,
        "--group",
        group,
    )
    assert result.exit_code == 0, result.output
    assert _read_back(modern_kafka, group, topic) == WANTED


def test_migrate_offsets_on_kafka39_in_zookeeper_mode(kafka39_zk):
    """A 3.9 cluster on ZooKeeper: the old consumer's offsets in its /consumers move into its brokers."""
    from confluent_kafka import Producer
    from kazoo.client import KazooClient

    topic, group = f"zkmode-{uuid.uuid4().hex[:8]}", f"migrated-{uuid.uuid4().hex[:8]}"
    create_topic(kafka39_zk, topic, partitions=3)
    producer = Producer({"bootstrap.servers": kafka39_zk.bootstrap})
    for i in range(30):
        producer.produce(topic, b"m", partition=i % 3)
    assert producer.flush(30) == 0
    zk = KazooClient(kafka39_zk.zookeeper)
    zk.start(timeout=10)
    try:
        for partition, offset in WANTED.items():
            zk.create(f"/consumers/{group}/offsets/{topic}/{partition}", str(offset).encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()
    result = run_ktool(
        "migrate-offsets",
        "--zookeeper",
        kafka39_zk.zookeeper,
        "--bootstrap-server",
        kafka39_zk.bootstrap,
        "--group",
        group,
    )
    assert result.exit_code == 0, result.output
    assert _read_back(kafka39_zk, group, topic) == WANTED
