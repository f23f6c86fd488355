"""`migration/`: ZooKeeper's znodes read as the migration reads them, compared with the KRaft image."""

from __future__ import annotations

import json

from kafka_tools.metadata.load import load_image
from kafka_tools.migration.compare import compare
from kafka_tools.migration.zk_state import read_zk_state
from tests.migration.cluster_states import records, write_kraft, write_znodes


def _compare(zk_root, tmp_path, entries=None):
    write_kraft(tmp_path, entries)
    return compare(read_zk_state(zk_root.zk), load_image(tmp_path / "controller").image)


def test_a_cluster_in_step_has_no_difference(zk_root, tmp_path):
    write_znodes(zk_root)
    result = _compare(zk_root, tmp_path)
    assert result.differences == []
    assert result.migration_state == "MIGRATION"
    assert result.compared == {
        "topic": 1, "partition": 2, "config": 2, "quota": 2, "scram": 1, "acl": 2, "delegation-token": 1,
        "producer-ids": 1,
        "migration": 1,
    }  # fmt: skip


def _zk_set(zk_root, path, change):
    doc = json.loads(zk_root.zk.get(path)[0])
    change(doc)
    zk_root.zk.set(path, json.dumps(doc).encode())


def test_a_znode_changed_behind_the_controller_is_named_with_both_values(zk_root, tmp_path):
    write_znodes(zk_root)
    _zk_set(zk_root, "/config/topics/orders", lambda d: d["config"].update({"retention.ms": "60000"}))
    _zk_set(zk_root, "/brokers/topics/orders/partitions/0/state", lambda d: d.update(isr=[1]))
    _zk_set(zk_root, "/kafka-acl/Topic/orders", lambda d: d["acls"][0].update(operation="Write"))
    got = [(d.kind, d.subject, d.field, d.side, d.zookeeper, d.kraft, d.repaired) for d in
           _compare(zk_root, tmp_path).differences]  # fmt: skip
    assert got == [
        ("partition", "orders-0", "isr", "both", [1], [1, 2], True),
        ("config", "topic orders", "retention.ms", "both", "60000", "3600000", True),
        ("acl", "allow User:alice write on topic:literal:orders from *", None, "zookeeper", None, None, True),
        ("acl", "allow User:alice read on topic:literal:orders from *", None, "kraft", None, None, True),
    ]


def test_a_record_missing_from_the_log_copy_is_what_zookeeper_alone_holds(zk_root, tmp_path):
    write_znodes(zk_root)
    entries = [e for e in records() if e[1] != "UserScramCredentialRecord"]
    got = [(d.kind, d.subject, d.side) for d in _compare(zk_root, tmp_path, entries).differences]
    # one record fewer: the log now ends at 13 while /migration says ZooKeeper reflects offset 14
    assert got == [
        ("scram", "alice@corp SCRAM-SHA-256", "zookeeper"),
        ("migration", "/migration", "zookeeper"),
    ]


def test_a_sensitive_config_is_compared_by_presence_and_never_printed(zk_root, tmp_path):
    write_znodes(zk_root)
    secret = "s3cr3t-encoded"
    _zk_set(zk_root, "/config/brokers/<default>",
            lambda d: d["config"].update({"listener.name.sasl.ssl.keystore.password": secret}))  # fmt: skip
    [diff] = _compare(zk_root, tmp_path).differences
    assert (diff.kind, diff.subject, diff.field, diff.side) == (
        "config", "broker <default>", "listener.name.sasl.ssl.keystore.password", "zookeeper",
    )  # fmt: skip
    assert secret not in repr(diff)


def test_a_topic_pending_deletion_is_not_expected_in_kraft(zk_root, tmp_path):
    docs = {
        "/brokers/topics/doomed": {
            "version": 3,
            "topic_id": "ZG9vbWVkZG9vbWVkZG9vbQ",
            "partitions": {"0": [1]},
        }
    }
    write_znodes(zk_root)
    write_znodes(zk_root, docs)
    zk_root.write("/admin/delete_topics/doomed")
    result = _compare(zk_root, tmp_path)
    assert result.differences == []
    assert result.skipped == ["topic doomed (pending deletion)"]


def test_a_delegation_token_is_compared_field_by_field_and_by_presence(zk_root, tmp_path):
    from tests.migration.cluster_states import znodes

    state = znodes()
    token = state["/delegation_token/tokens/dG9rZW4tMQ"]
    token["expiryTimestamp"] = 1700172800000  # renewed in ZooKeeper behind the controller
    state["/delegation_token/tokens/b3RoZXI"] = {**token, "tokenId": "b3RoZXI"}
    write_znodes(zk_root, state)
    result = _compare(zk_root, tmp_path)
    assert [(d.kind, d.subject, d.field, d.side, d.zookeeper, d.kraft) for d in result.differences] == [
        ("delegation-token", "b3RoZXI", None, "zookeeper", None, None),
        ("delegation-token", "dG9rZW4tMQ", "expiration_timestamp", "both", 1700172800000, 1700086400000),
    ]
    assert result.compared["delegation-token"] == 2
