"""One small cluster written twice as Kafka 3.9 writes it: its znodes (a ZooKeeper-mode cluster's)
and the KRaft metadata log the migration makes of them (ZkMigrationClient's records), in step."""

from __future__ import annotations

import json
from pathlib import Path

from tests.metadata.kraft_log import Entry, write_log_dir

ORDERS_ID = "b3JkZXJzb3JkZXJzb3JkZQ"
SALT = "c2FsdHNhbHQ="


def znodes() -> dict[str, dict]:
    """Path → JSON document, as a 3.9 ZooKeeper-mode cluster holds them."""
    return {  # fmt: skip
        "/brokers/topics/orders": {
            "version": 3,
            "topic_id": ORDERS_ID,
            "partitions": {"0": [1, 2], "1": [2, 1]},
            "adding_replicas": {},
            "removing_replicas": {},
        },
        "/brokers/topics/orders/partitions/0/state": {
            "controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 3, "isr": [1, 2],
        },
        "/brokers/topics/orders/partitions/1/state": {
            "controller_epoch": 1, "leader": 2, "version": 1, "leader_epoch": 0, "isr": [2, 1],
        },
        "/config/topics/orders": {"version": 1, "config": {"retention.ms": "3600000"}},
        "/config/brokers/<default>": {"version": 1, "config": {"log.cleaner.threads": "2"}},
        "/config/users/alice%40corp": {
            "version": 1,
            "config": {
                "producer_byte_rate": "1048576",
                "SCRAM-SHA-256": f"salt={SALT},stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=8192",
            },
        },
        "/config/clients/<default>": {"version": 1, "config": {"consumer_byte_rate": "2048"}},
        "/kafka-acl/Topic/orders": {
            "version": 1,
            "acls": [{"principal": "User:alice", "permissionType": "Allow", "operation": "Read",
                      "host": "*"}],
        },
        "/kafka-acl-extended/prefixed/Group/app-": {
            "version": 1,
            "acls": [{"principal": "User:bob", "permissionType": "Deny", "operation": "Describe",
                      "host": "10.0.0.1"}],
        },
        "/delegation_token/tokens/dG9rZW4tMQ": {
            "version": 3, "owner": "User%3Aalice%40corp", "tokenRequester": "User%3Aalice%40corp",
            "renewers": ["User%3Abob"], "issueTimestamp": 1700000000000, "maxTimestamp": 1700604800000,
            "expiryTimestamp": 1700086400000, "tokenId": "dG9rZW4tMQ",
        },
        "/latest_producer_id_block": {"version": 1, "broker": 1, "block_start": "2000", "block_end": "2999"},
        "/migration": {
            "version": 0, "kraft_metadata_offset": 14, "kraft_metadata_epoch": 1,
            "kraft_controller_id": 3000, "kraft_controller_epoch": 1,
        },
    }  # fmt: skip


def _partition(pid: int, replicas: list[int], isr: list[int], leader: int, epoch: int) -> Entry:
    fields = {
        "partitionId": pid, "topicId": ORDERS_ID, "replicas": replicas, "isr": isr,
        "removingReplicas": [], "addingReplicas": [], "leader": leader, "leaderEpoch": epoch,
        "partitionEpoch": 0,
    }  # fmt: skip
    return ("meta", "PartitionRecord", 0, fields)


def records() -> list[Entry]:
    """The KRaft log of the same cluster: offset 14 (the last) is the one /migration names."""
    return [
        ("meta", "ZkMigrationStateRecord", 0, {"zkMigrationState": 2}),  # PRE_MIGRATION
        ("meta", "TopicRecord", 0, {"name": "orders", "topicId": ORDERS_ID}),
        _partition(0, [1, 2], [1, 2], 1, 3),
        _partition(1, [2, 1], [2, 1], 2, 0),
        ("meta", "ConfigRecord", 0, {"resourceType": 2, "resourceName": "orders", "name": "retention.ms",
                                     "value": "3600000"}),
        ("meta", "ConfigRecord", 0, {"resourceType": 4, "resourceName": "", "name": "log.cleaner.threads",
                                     "value": "2"}),
        ("meta", "ClientQuotaRecord", 0, {"entity": [{"entityType": "user", "entityName": "alice@corp"}],
                                          "key": "producer_byte_rate", "value": 1048576.0, "remove": False}),
        ("meta", "ClientQuotaRecord", 0, {"entity": [{"entityType": "client-id", "entityName": None}],
                                          "key": "consumer_byte_rate", "value": 2048.0, "remove": False}),
        ("meta", "UserScramCredentialRecord", 0, {"name": "alice@corp", "mechanism": 1, "salt": b"saltsalt",
                                                  "storedKey": b"stored", "serverKey": b"server",
                                                  "iterations": 8192}),
        ("meta", "AccessControlEntryRecord", 0, {"id": "YWNsMWFjbDFhY2wxYWNsMQ", "resourceType": 2,
                                                 "resourceName": "orders", "patternType": 3,
                                                 "principal": "User:alice", "host": "*", "operation": 3,
                                                 "permissionType": 3}),
        ("meta", "AccessControlEntryRecord", 0, {"id": "YWNsMmFjbDJhY2wyYWNsMg", "resourceType": 3,
                                                 "resourceName": "app-", "patternType": 4,
                                                 "principal": "User:bob", "host": "10.0.0.1", "operation": 8,
                                                 "permissionType": 2}),
        ("meta", "DelegationTokenRecord", 0, {"owner": "User:alice@corp", "requester": "User:alice@corp",
                                              "renewers": ["User:bob"], "issueTimestamp": 1700000000000,
                                              "maxTimestamp": 1700604800000,
                                              "expirationTimestamp": 1700086400000, "tokenId": "dG9rZW4tMQ"}),
        ("meta", "ProducerIdsRecord", 0, {"brokerId": 1, "brokerEpoch": -1, "nextProducerId": 2000}),
        ("meta", "NoOpRecord", 0, {}),
        ("meta", "ZkMigrationStateRecord", 0, {"zkMigrationState": 1}),  # MIGRATION
    ]  # fmt: skip


def write_znodes(root, docs: dict[str, dict] | None = None) -> None:
    """Every znode of `znodes()` (or `docs`) under a ZkRoot (tests/conftest.py)."""
    for path, doc in sorted((docs if docs is not None else znodes()).items()):
        if root.zk.exists(path):
            root.zk.set(path, json.dumps(doc).encode())
        else:
            root.write(path, json.dumps(doc))


def write_kraft(tmp_path: Path, entries: list[Entry] | None = None) -> Path:
    return write_log_dir(tmp_path / "controller", records() if entries is None else entries)
