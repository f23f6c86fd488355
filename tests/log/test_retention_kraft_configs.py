"""`ktool retention` offline on a KRaft log dir: the settings set with kafka-configs live in the metadata
log beside the partitions (`__cluster_metadata-0`), not in ZooKeeper: each topic's overrides, the dynamic
cluster-wide and per-node broker configs over server.properties, each value named by its source."""

from __future__ import annotations

import os
import shutil

from tests.log.test_retention import DAY, HOUR, NOW, actions, part_of, preview, v2_log
from tests.metadata.kraft_log import config, partition, write_log_dir

ORDERS = "b3JkZXJzb3JkZXJzb3JkZQ"
LEDGER = "bGVkZ2VybGVkZ2VybGVkZw"
PLAIN = "cGxhaW5wbGFpbnBsYWlucA"
DIR1 = "ZGlyZWN0b3J5MWRpcmVjdA"


def _story() -> list:
    return [
        ("meta", "FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 21}),
        ("meta", "TopicRecord", 0, {"name": "orders", "topicId": ORDERS}),
        partition(ORDERS, 0, [1], [DIR1]),
        ("meta", "TopicRecord", 0, {"name": "ledger", "topicId": LEDGER}),
        partition(LEDGER, 0, [1], [DIR1]),
        ("meta", "TopicRecord", 0, {"name": "plain", "topicId": PLAIN}),
        partition(PLAIN, 0, [1], [DIR1]),
        config("retention.ms", str(2 * HOUR), "orders"),
        config("retention.bytes", "2000000", "orders"),
        config("cleanup.policy", "compact", "ledger"),
        config("log.retention.hours", "30", "", rtype=4),  # kafka-configs --entity-default brokers
        config("log.retention.bytes", "12345", "1", rtype=4),  # broker 1's own
        config("log.retention.bytes", "999", "2", rtype=4),  # another node's
    ]


def _log_dir(tmp_path):
    root = write_log_dir(tmp_path / "data", _story())
    for topic in ("orders", "ledger", "plain"):
        v2_log(root, topic, [NOW - 3 * HOUR, NOW])
    return root


def test_topic_configs_come_from_the_kraft_metadata_log_beside_the_partition(tmp_path):
    root = _log_dir(tmp_path)
    code, lines, err = preview(str(root / "orders-0"), str(root / "ledger-0"))
    assert code == 0, err
    s = part_of(lines, "orders-0")["settings"]
    assert s["retentionMs"] == {"value": 2 * HOUR, "source": "KRaft topic config"}
    assert s["retentionBytes"] == {"value": 2_000_000, "source": "KRaft topic config"}
    assert actions(lines, "orders-0") == [(0, "time"), (10, None)]
    ledger = part_of(lines, "ledger-0")["settings"]
    assert ledger["cleanupPolicy"] == {"value": "compact", "source": "KRaft topic config"}
    assert actions(lines, "ledger-0") == [(0, None), (10, None)]  # compacted: nothing goes by time


def test_dynamic_broker_configs_beat_server_properties_and_the_nodes_own_beat_the_clusters(tmp_path):
    root = _log_dir(tmp_path)
    props = tmp_path / "server.properties"
    props.write_text("log.retention.hours=1\nlog.retention.bytes=5\nlog.cleanup.policy=delete\n")
    code, lines, err = preview("--server-properties", str(props), str(root / "plain-0"))
    assert code == 0, err
    s = part_of(lines, "plain-0")["settings"]
    assert s["retentionMs"] == {
        "value": 30 * HOUR,
        "source": "KRaft cluster-default broker config (log.retention.hours)",
    }
    assert s["retentionBytes"] == {"value": 12345, "source": "KRaft broker 1 config (log.retention.bytes)"}
    assert s["cleanupPolicy"] == {"value": "delete", "source": f"{props} (log.cleanup.policy)"}
    assert actions(lines, "plain-0") == [(0, None), (10, None)]  # 3 hours old, kept for 30


def test_the_metadata_log_of_another_log_dir_is_named_with_metadata_log_dir(tmp_path):
    root = _log_dir(tmp_path)
    other = tmp_path / "data2"
    other.mkdir()
    shutil.copy2(root / "meta.properties", other)
    shutil.move(root / "orders-0", other / "orders-0")
    code, lines, err = preview(str(other / "orders-0"))
    assert code == 3
    assert err.count("\n") == 1 and "without the metadata log" in err and "--metadata-log-dir" in err
    code, lines, err = preview("--metadata-log-dir", str(root), str(other / "orders-0"))
    assert code == 0, err
    assert part_of(lines, "orders-0")["settings"]["retentionMs"]["source"] == "KRaft topic config"


def test_an_unreadable_metadata_log_is_exit_3_in_one_line(tmp_path):
    root = _log_dir(tmp_path)
    seg = root / "__cluster_metadata-0" / "00000000000000000000.log"
    os.rename(seg, seg.with_suffix(".gone"))
    os.mkfifo(root / "__cluster_metadata-0" / f"{0:020d}-{1:010d}.checkpoint")
    code, lines, err = preview(str(root / "orders-0"))
    assert code == 3 and err.count("\n") == 1 and "topic configs not read" in err, err
    assert part_of(lines, "orders-0")["settings"]["retentionMs"]["source"] == "Kafka default"


def test_a_log_dir_of_no_kraft_node_still_previews_kafkas_defaults(tmp_path):
    v2_log(tmp_path, "t", [NOW - 8 * DAY, NOW])
    code, lines, err = preview(str(tmp_path))
    assert code == 0 and err == ""
    assert part_of(lines, "t-0")["settings"]["retentionMs"]["source"] == "Kafka default"
