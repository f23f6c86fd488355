"""The modern-broker fixtures themselves: each kind starts, and a produce/consume round trip works on it."""

from __future__ import annotations

import uuid

import pytest

from tests.support.modern import create_topic


def round_trip(cluster, *, replication: int = 1) -> None:
    from confluent_kafka import Consumer, Producer

    topic = f"round-trip-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, partitions=2, replication=replication)
    sent = [(f"k{i}".encode(), f"value {i}".encode()) for i in range(50)]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    for key, value in sent:
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": topic,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got = []
    try:
        for _ in range(300):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.key(), msg.value()))
            if len(got) >= len(sent):
                break
    finally:
        consumer.close()
    assert sorted(got) == sorted(sent)
    # the broker wrote the partitions under its own log dir
    dirs = {p.name for node in cluster.brokers for p in node.log_dir.iterdir() if p.name.startswith(topic)}
    assert dirs == {f"{topic}-0", f"{topic}-1"}


def test_kraft_combined_round_trip(modern_kafka):
    assert (modern_kafka.brokers[0].log_dir / "meta.properties").is_file()
    round_trip(modern_kafka)


def test_kraft_one_controller_three_brokers_round_trip(kafka4_split):
    assert len(kafka4_split.brokers) == 3
    round_trip(kafka4_split, replication=3)


def test_kafka39_zookeeper_mode_round_trip(kafka39_zk):
    assert kafka39_zk.mode == "zookeeper"
    round_trip(kafka39_zk)


def test_a_failed_start_names_the_node_and_prints_its_log(kafka4_release, tmp_path):
    """A broker that cannot start (its port taken by someone else) fails at once with its own log, not
    after the whole start-up timeout, and leaves no process behind."""
    import socket
    import time

    from tests.support.modern import ModernCluster, ServerError

    cluster = ModernCluster(kafka4_release, "combined", tmp_path, startup_timeout=90)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", cluster.nodes[0].port))
        squatter.listen()
        began = time.monotonic()
        with pytest.raises(ServerError, match=r"node 1 exited with \d+:\n--- node 1 .*server.log\n"):
            cluster.start()
    assert time.monotonic() - began < 60
    assert all(node.proc is None for node in cluster.nodes)


def test_a_tool_prints_the_same_from_its_class_archive(kafka_release, tmp_path, monkeypatch) -> None:
    """run_tool's first run of a tool writes its class archive (AppCDS), the next ones load from it: the
    output is the same bytes, and no half-written archive is left beside it."""
    from tests.independent import FIXTURES
    from tests.support.modern import _class_archive, kafka_libs, run_tool

    libs = kafka_libs(kafka_release)  # the jars, not fetched again: linked into a cache of the test's own
    home = tmp_path / "cache" / libs.parent.name
    home.mkdir(parents=True)
    (home / "libs").symlink_to(libs)
    monkeypatch.setenv("KTOOL_CACHE", str(tmp_path / "cache"))
    segment = next((FIXTURES / "generated" / "v2").rglob("*.log"))
    args = ["--files", str(segment), "--print-data-log"]
    first = run_tool(kafka_release, "DumpLogSegments", args)
    archive = _class_archive(kafka_release, kafka_release.tools["DumpLogSegments"])
    assert archive.is_file() and [p.name for p in archive.parent.iterdir()] == [archive.name]
    second = run_tool(kafka_release, "DumpLogSegments", args)
    assert (second.stdout, second.stderr) == (first.stdout, first.stderr) and "baseOffset: 0" in first.stdout
