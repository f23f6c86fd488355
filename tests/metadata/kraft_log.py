"""KRaft log dirs built in the tests: a `__cluster_metadata-0` log (and snapshots) written with the
schema-driven encoder of tests/format/kraft_encoder.py (independent of ktool's decoder), a story of
records whose image the tests know, meta.properties, quorum-state and partition directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.format.kraft_encoder import batch, control_key, encode_body, frame, load_schemas, snapshot_bytes

SCHEMAS = load_schemas()
ORDERS = "b3JkZXJzb3JkZXJzb3JkZQ"  # 22 chars of base64url: a Kafka Uuid.toString
DOOMED = "ZG9vbWVkZG9vbWVkZG9vbQ"
OLD = "b2xkb2xkb2xkb2xkb2xkbw"
DIR1 = "ZGlyZWN0b3J5MWRpcmVjdA"
DIR2 = "ZGlyZWN0b3J5MmRpcmVjdA"
NULL_ARRAYS = {"isr": None, "replicas": None, "removingReplicas": None, "addingReplicas": None}

Entry = tuple[str, str, int, dict]  # ("meta" | "control", record type, version, fields)


def broker(bid: int, epoch: int, log_dir: str) -> Entry:
    return (
        "meta",
        "RegisterBrokerRecord",
        3,
        {
            "brokerId": bid,
            "isMigratingZkBroker": False,
            "incarnationId": f"aW5jYXJuYXRpb24taW5j{bid}Q"[:22],
            "brokerEpoch": epoch,
            "endPoints": [{"name": "PLAINTEXT", "host": f"kafka{bid}", "port": 9092, "securityProtocol": 0}],
            "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}],
            "rack": f"rack{bid}",
            "fenced": True,
            "inControlledShutdown": False,
            "logDirs": [log_dir],
        },
    )


def partition(tid: str, pid: int, replicas: list[int], dirs: list[str]) -> Entry:
    return (
        "meta",
        "PartitionRecord",
        1,
        {
            "partitionId": pid,
            "topicId": tid,
            "replicas": replicas,
            "isr": replicas,
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": replicas[0],
            "leaderEpoch": 0,
            "partitionEpoch": 0,
            "directories": dirs,
        },
    )


def change(tid: str, pid: int, **fields: Any) -> Entry:
    return ("meta", "PartitionChangeRecord", 0, {"partitionId": pid, "topicId": tid, **fields})


def config(name: str, value: str | None, resource: str = "orders", rtype: int = 2) -> Entry:
    return (
        "meta",
        "ConfigRecord",
        0,
        {"resourceType": rtype, "resourceName": resource, "name": name, "value": value},
    )


def story() -> list[Entry]:
    """Offset by offset (each entry takes one offset): a cluster's life the tests know the end of."""
    return [
        (
            "control",
            "LeaderChangeMessage",
            0,
            {"version": 0, "leaderId": 3000, "voters": [], "grantingVoters": []},
        ),  # 0
        ("meta", "FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 21}),  # 1
        broker(1, 10, DIR1),  # 2
        broker(2, 11, DIR2),  # 3
        ("meta", "UnfenceBrokerRecord", 0, {"id": 1, "epoch": 10}),  # 4
        ("meta", "UnfenceBrokerRecord", 0, {"id": 2, "epoch": 11}),  # 5
        ("meta", "TopicRecord", 0, {"name": "orders", "topicId": ORDERS}),  # 6
        partition(ORDERS, 0, [1, 2], [DIR1, DIR2]),  # 7
        partition(ORDERS, 1, [2, 1], [DIR2, DIR1]),  # 8
        config("retention.ms", "1000"),  # 9
        ("meta", "BeginTransactionRecord", 0, {"name": "create doomed"}),  # 10
        ("meta", "TopicRecord", 0, {"name": "doomed", "topicId": DOOMED}),  # 11
        partition(DOOMED, 0, [1], [DIR1]),  # 12
        ("meta", "AbortTransactionRecord", 0, {"reason": "failover"}),  # 13
        ("meta", "TopicRecord", 0, {"name": "old", "topicId": OLD}),  # 14
        partition(OLD, 0, [1], [DIR1]),  # 15
        (
            "meta",
            "UserScramCredentialRecord",
            0,
            {
                "name": "alice",
                "mechanism": 2,
                "salt": b"SALT",
                "storedKey": b"STORED",
                "serverKey": b"SERVER",
                "iterations": 8192,
            },
        ),  # 16
        ("meta", "ProducerIdsRecord", 0, {"brokerId": 1, "brokerEpoch": 10, "nextProducerId": 5000}),  # 17
        # --- a snapshot at 18 holds everything above ---
        change(ORDERS, 0, isr=[1]),  # 18: ISR shrinks
        change(ORDERS, 0, leader=2, isr=[2]),  # 19: leader 1 -> 2
        ("meta", "RemoveTopicRecord", 0, {"topicId": OLD}),  # 20
        config("retention.ms", None),  # 21
        config("compression.type", "zstd"),  # 22
        (
            "meta",
            "AccessControlEntryRecord",
            0,
            {
                "id": "YWNsYWNsYWNsYWNsYWNsYQ",
                "resourceType": 2,
                "resourceName": "orders",
                "patternType": 3,
                "principal": "User:alice",
                "host": "*",
                "operation": 3,
                "permissionType": 3,
            },
        ),  # 23
        (
            "meta",
            "ClientQuotaRecord",
            0,
            {
                "entity": [{"entityType": "user", "entityName": "alice"}],
                "key": "producer_byte_rate",
                "value": 1024.0,
                "remove": False,
            },
        ),  # 24
        (
            "meta",
            "DelegationTokenRecord",
            0,
            {
                "owner": "User:alice",
                "requester": "User:alice",
                "renewers": ["User:bob"],
                "issueTimestamp": 1,
                "maxTimestamp": 3,
                "expirationTimestamp": 2,
                "tokenId": "token1",
            },
        ),  # 25
        (
            "meta",
            "RegisterControllerRecord",
            0,
            {
                "controllerId": 3000,
                "incarnationId": "Y29udHJvbGxlcmNvbnRyBA",
                "zkMigrationReady": False,
                "endPoints": [{"name": "CONTROLLER", "host": "c", "port": 9093, "securityProtocol": 0}],
                "features": [],
            },
        ),  # 26
        ("control", "KRaftVersionRecord", 0, {"version": 0, "kRaftVersion": 1}),  # 27
        (
            "control",
            "VotersRecord",
            0,
            {
                "version": 0,
                "voters": [
                    {
                        "voterId": 3000,
                        "voterDirectoryId": "dm90ZXJ2b3RlcnZvdGVydg",
                        "endpoints": [{"name": "CONTROLLER", "host": "c", "port": 9093}],
                        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
                    }
                ],
            },
        ),  # 28
        ("meta", "FenceBrokerRecord", 0, {"id": 2, "epoch": 11}),  # 29
        (
            "meta",
            "BrokerRegistrationChangeRecord",
            1,
            {"brokerId": 1, "brokerEpoch": 10, "inControlledShutdown": 1},
        ),  # 30
        ("meta", "NoOpRecord", 0, {}),  # 31
    ]


SNAPSHOT_AT = 18


def encode(entry: Entry) -> tuple[bytes | None, bytes]:
    kind, name, version, fields = entry
    schema = SCHEMAS[name]
    if kind == "control":
        return control_key(schema), encode_body(schema, version, fields)
    return None, frame(schema, version, fields)


def log_bytes(
    entries: list[Entry], base: int = 0, per_batch: int = 3, values: dict[int, bytes] | None = None
) -> bytes:
    """Batches of up to `per_batch` records of one kind (control or not); `values` replaces the
    value of a record by offset (corrupt variants)."""
    out, i = b"", 0
    while i < len(entries):
        kind = entries[i][0]
        j = i
        while j < len(entries) and j - i < per_batch and entries[j][0] == kind:
            j += 1
        records = []
        for k in range(i, j):
            key, value = encode(entries[k])
            records.append((key, (values or {}).get(base + k, value)))
        out += batch(base + i, records, control=kind == "control")
        i = j
    return out


def write_log_dir(
    root: Path,
    entries: list[Entry] | None = None,
    *,
    log_from: int = 0,
    snapshot_at: int | None = None,
    snapshot_footer: bool = True,
    node_id: int = 1,
    directory_id: str = DIR1,
    quorum_version: int = 1,
    values: dict[int, bytes] | None = None,
) -> Path:
    """A KRaft log dir: the log's entries from `log_from` on, an optional snapshot of the entries below
    `snapshot_at` (the metadata records actually applied there: transaction markers and aborted
    records left out, as a snapshot holds an image), meta.properties and quorum-state."""
    entries = story() if entries is None else entries
    part = root / "__cluster_metadata-0"
    part.mkdir(parents=True, exist_ok=True)
    (part / f"{log_from:020d}.log").write_bytes(log_bytes(entries[log_from:], log_from, values=values))
    if snapshot_at is not None:
        kept = [encode(e)[1] for e in _applied(entries[:snapshot_at]) if e[0] == "meta"]
        data = snapshot_bytes(SCHEMAS, kept, footer=snapshot_footer)
        (part / f"{snapshot_at:020d}-{1:010d}.checkpoint").write_bytes(data)
    (root / "meta.properties").write_text(
        f"#\nnode.id={node_id}\ndirectory.id={directory_id}\nversion=1\ncluster.id=Y2x1c3Rlci1pZC1jbHVzdA\n"
    )
    state: dict[str, Any] = {
        "leaderId": 3000,
        "leaderEpoch": 1,
        "votedId": -1,
        "data_version": quorum_version,
    }
    if quorum_version == 0:
        state["currentVoters"] = [{"voterId": 3000}]
    (part / "quorum-state").write_text(json.dumps(state))
    return root


def _applied(entries: list[Entry]) -> list[Entry]:
    out, held = [], None
    for e in entries:
        if e[1] == "BeginTransactionRecord":
            held = []
        elif e[1] in ("EndTransactionRecord", "AbortTransactionRecord"):
            out += held if e[1] == "EndTransactionRecord" else []
            held = None
        elif held is not None:
            held.append(e)
        else:
            out.append(e)
    return out


def partition_dir(root: Path, name: str, topic_id: str | None) -> Path:
    d = root / name
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    if topic_id:
        (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    return d
