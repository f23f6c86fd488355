"""`ktool retention --bootstrap-server` reads a topic's settings from real 3.9 and 4.x brokers (KRaft: no
ZooKeeper holds them): the values `kafka-configs --describe` of the same release shows for a topic
created with retention.ms, retention.bytes and cleanup.policy set, each with the broker as its source;
a topic without overrides gets the broker's own log.retention.ms (these brokers keep records forever),
not Kafka's 7-day default."""

from __future__ import annotations

import json
import re
import uuid

from tests.support.cli import run_ktool
from tests.support.modern import create_topic, partition_dir, run_tool

SET = {"retention.ms": "3600000", "retention.bytes": "1048576", "cleanup.policy": "compact,delete"}


def _kafka_configs(cluster, topic: str) -> dict[str, str]:
    """The topic's overrides as the release's own kafka-configs --describe prints them."""
    args = ["--bootstrap-server", cluster.bootstrap, "--describe", "--entity-type", "topics"]
    out = run_tool(cluster.release, "ConfigCommand", [*args, "--entity-name", topic]).stdout
    return dict(re.findall(r"^\s+([\w.]+)=(\S*) sensitive=", out, re.M))


def _settings(cluster, topic: str) -> dict[str, dict]:
    path = partition_dir(cluster.brokers[0], topic)
    result = run_ktool("retention", str(path), "--json", "--bootstrap-server", cluster.bootstrap)
    assert result.exit_code == 0, result.output
    (part,) = [o for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "partition"]
    return part["settings"]


def test_retention_reads_the_topic_configs_kafka_configs_shows(modern_kafka) -> None:
    topic = f"ret-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, topic, config=SET)
    theirs = _kafka_configs(modern_kafka, topic)
    assert {k: theirs.get(k) for k in SET} == SET
    ours = _settings(modern_kafka, topic)
    got = {
        "retention.ms": str(ours["retentionMs"]["value"]),
        "retention.bytes": str(ours["retentionBytes"]["value"]),
        "cleanup.policy": ours["cleanupPolicy"]["value"],
    }
    assert got == {k: theirs[k] for k in SET}
    source = f"broker {modern_kafka.bootstrap}: topic {topic} config"
    assert {ours[k]["source"] for k in ("retentionMs", "retentionBytes", "cleanupPolicy")} == {source}


def test_a_topic_without_overrides_gets_the_brokers_own_setting(modern_kafka) -> None:
    topic = f"ret-plain-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, topic)
    ours = _settings(modern_kafka, topic)
    assert ours["retentionMs"] == {
        "value": -1,
        "source": f"broker {modern_kafka.bootstrap}: STATIC_BROKER_CONFIG",
    }
    assert ours["cleanupPolicy"]["source"] == "Kafka default"
