"""Tests for kafka_tools.format.internal_topics and kafka_tools.format.schema.

Real-world data: a Kafka 2.x broker log dir (see ../shared/realworld/README.md), read with kafka-python's
independent record-batch decoder; hand-built bytes (struct) for every schema version; and garbage.
"""

from __future__ import annotations

import base64
import json
import random
import struct
import uuid
from collections import defaultdict

import pytest

from kafka_tools.format.coordinator_records import CONSUMER_OFFSETS_RECORDS
from kafka_tools.format.internal_topics import (
    InternalRecord,
    decode_assignment,
    decode_consumer_offsets,
    decode_subscription,
    decode_transaction_state,
    to_jsonable,
)
from kafka_tools.format.schema import F, Schema, SchemaError, decode, decode_versioned
from tests.independent import REALWORLD

LOGDIR_2X = REALWORLD / "kafka-2.x-logdir"


# --------------------------------------------------------------------------------------------------
# Tiny independent encoders for hand-built test bytes
# --------------------------------------------------------------------------------------------------


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def s(v: str | None) -> bytes:
    """Classic string: int16 length (-1 = null)."""
    if v is None:
        return i16(-1)
    raw = v.encode()
    return i16(len(raw)) + raw


def cs(v: str | None) -> bytes:
    """Compact string: uvarint(length + 1), 0 = null."""
    if v is None:
        return uvarint(0)
    raw = v.encode()
    return uvarint(len(raw) + 1) + raw


def b(v: bytes | None) -> bytes:
    """Classic bytes: int32 length (-1 = null)."""
    if v is None:
        return i32(-1)
    return i32(len(v)) + v


def cb(v: bytes) -> bytes:
    return uvarint(len(v) + 1) + v


def arr(items: list[bytes]) -> bytes:
    return i32(len(items)) + b"".join(items)


def carr(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def tags(*fields: tuple[int, bytes]) -> bytes:
    """A tagged-field section."""
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(p)) + p for t, p in fields)


NO_TAGS = tags()


def offset_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return i16(version) + s(group) + s(topic) + i32(partition)


def group_key(group: str) -> bytes:
    return i16(2) + s(group)


def subscription_v1(topics: list[str], owned: list[tuple[str, list[int]]]) -> bytes:
    return (
        i16(1)
        + arr([s(t) for t in topics])
        + b(None)
        + arr([s(t) + arr([i32(p) for p in ps]) for t, ps in owned])
    )


def assignment_v0(parts: list[tuple[str, list[int]]], user_data: bytes | None = None) -> bytes:
    return i16(0) + arr([s(t) + arr([i32(p) for p in ps]) for t, ps in parts]) + b(user_data)


# --------------------------------------------------------------------------------------------------
# Real-world data (Kafka 2.x log dir)
# --------------------------------------------------------------------------------------------------


def _read_log(name: str) -> list[tuple[int, bytes | None, bytes | None]]:
    path = LOGDIR_2X / name / "00000000000000000000.log"
    if not path.is_file():
        pytest.skip(f"real-world data not available: {path}")
    kafka_record = pytest.importorskip("kafka.record")
    records = kafka_record.MemoryRecords(path.read_bytes())
    out = []
    while records.has_next():
        batch = records.next_batch()
        for rec in batch:
            out.append((rec.offset, rec.key, rec.value))
    return out


def _decoded(partition: int) -> list[tuple[int, InternalRecord]]:
    return [
        (off, decode_consumer_offsets(k, v)) for off, k, v in _read_log(f"__consumer_offsets-{partition}")
    ]


# partition -> (record count, group, number of offset commits, number of group metadata, tombstones)
REALWORLD_PARTITIONS = {
    12: (470, "my-second-application", 462, 8, 0),
    17: (3, "console-consumer-48266", 0, 3, 1),
    18: (499, "my-first-application", 483, 16, 0),
    32: (50, "my-firstd-application", 48, 2, 0),
    33: (3, "console-consumer-43384", 0, 3, 1),
}


@pytest.mark.parametrize("partition", sorted(REALWORLD_PARTITIONS))
def test_realworld_partition_decodes_without_errors(partition: int) -> None:
    count, group, n_commits, n_meta, n_tombstones = REALWORLD_PARTITIONS[partition]
    decoded = _decoded(partition)
    assert len(decoded) == count
    assert [r.error for _, r in decoded if r.error] == []
    assert {r.key["group"] for _, r in decoded} == {group}
    commits = [r for _, r in decoded if r.record_type == "offset_commit"]
    metas = [r for _, r in decoded if r.record_type == "group_metadata"]
    assert (len(commits), len(metas)) == (n_commits, n_meta)
    assert sum(r.is_tombstone for _, r in decoded) == n_tombstones
    # Kafka 2.x writes offset commit keys v1 / values v3 and group metadata keys v2 / values v3.
    assert {(r.key_version, r.value_version) for r in commits} <= {(1, 3)}
    assert {(r.key_version, r.value_version) for r in metas if not r.is_tombstone} == {(2, 3)}
    for r in commits:
        assert r.key["topic"] == "first_topic"
        assert r.key["partition"] in (0, 1, 2)
        assert set(r.value) == {"offset", "leaderEpoch", "metadata", "commitTimestamp"}
        assert r.value["metadata"] == ""
        assert r.value["leaderEpoch"] in (-1, 0)
        assert 1587570000000 < r.value["commitTimestamp"] < 1587600000000  # 2020-04-22
    # Every record is JSON-serialisable through to_jsonable.
    json.dumps([to_jsonable(r) for _, r in decoded])


@pytest.mark.parametrize("partition", sorted(REALWORLD_PARTITIONS))
def test_realworld_group_metadata(partition: int) -> None:
    group = REALWORLD_PARTITIONS[partition][1]
    metas = [r for _, r in _decoded(partition) if r.record_type == "group_metadata" and r.value]
    generations = [r.value["generation"] for r in metas]
    assert generations == list(range(1, len(metas) + 1))
    for r in metas:
        v = r.value
        assert v["protocolType"] == "consumer"
        assert v["currentStateTimestamp"] > 1587570000000
        if not v["members"]:  # group became Empty: no protocol, no leader
            assert v["protocol"] is None and v["leader"] is None
            continue
        assert v["protocol"] == "range"
        assert v["leader"] in {m["memberId"] for m in v["members"]}
        assigned: list[int] = []
        for m in v["members"]:
            assert m["memberId"].startswith(f"consumer-{group}-1-")
            assert m["clientId"] == f"consumer-{group}-1"
            assert m["clientHost"] == "/192.168.1.69"
            assert m["groupInstanceId"] is None
            assert (m["rebalanceTimeout"], m["sessionTimeout"]) == (300000, 10000)
            assert m["subscription"] == {
                "version": 1,
                "topics": ["first_topic"],
                "userData": None,
                "ownedPartitions": [],
            }
            assignment = m["assignment"]
            assert assignment["version"] == 1 and assignment["userData"] is None
            for tp in assignment["assignedPartitions"]:
                assert tp["topic"] == "first_topic"
                assigned.extend(tp["partitions"])
        assert sorted(assigned) == [0, 1, 2]  # the range assignor hands out all 3 partitions


def test_realworld_multi_member_rebalance() -> None:
    metas = [r.value for _, r in _decoded(18) if r.record_type == "group_metadata" and r.value]
    by_gen = {v["generation"]: v for v in metas}
    gen3 = by_gen[3]
    assert len(gen3["members"]) == 3
    assert sorted(m["assignment"]["assignedPartitions"][0]["partitions"] for m in gen3["members"]) == [
        [0],
        [1],
        [2],
    ]
    member_counts = [1, 2, 3, 2, 1, 0, 1, 0, 1, 2, 1, 0, 1, 0, 1, 0]
    assert [len(by_gen[g]["members"]) for g in range(1, 17)] == member_counts


def _first_topic_end_offsets() -> dict[int, int]:
    ends = {}
    for p in range(3):
        recs = _read_log(f"first_topic-{p}")
        ends[p] = recs[-1][0] + 1
    return ends


@pytest.mark.parametrize("partition", [12, 18, 32])
def test_realworld_offsets(partition: int) -> None:
    commits: dict[int, list[InternalRecord]] = defaultdict(list)
    for _, r in _decoded(partition):
        if r.record_type == "offset_commit":
            commits[r.key["partition"]].append(r)
    assert sorted(commits) == [0, 1, 2]
    # The groups ended fully caught up: last committed offset == log end offset of first_topic-N.
    ends = _first_topic_end_offsets()
    assert ends == {0: 11, 1: 12, 2: 18}
    assert {p: rs[-1].value["offset"] for p, rs in commits.items()} == ends
    for rs in commits.values():
        stamps = [r.value["commitTimestamp"] for r in rs]
        assert stamps == sorted(stamps)
        for prev, cur in zip(rs, rs[1:], strict=False):
            if cur.value["offset"] < prev.value["offset"]:
                # Only an admin reset (kafka-consumer-groups --reset-offsets, no leader epoch) goes back.
                assert partition == 18 and cur.value["leaderEpoch"] == -1


def test_realworld_offsets_reset_in_partition_18() -> None:
    p0 = [
        r.value["offset"]
        for _, r in _decoded(18)
        if r.record_type == "offset_commit" and r.key["partition"] == 0
    ]
    distinct = [o for i, o in enumerate(p0) if i == 0 or o != p0[i - 1]]
    assert distinct == [2, 3, 4, 5, 6, 7, 9, 11, 0, 11, 0, 2, 0, 11]


@pytest.mark.parametrize("partition", [17, 33])
def test_realworld_console_consumer_group_deleted(partition: int) -> None:
    decoded = _decoded(partition)
    last = decoded[-1][1]
    assert last.record_type == "group_metadata" and last.is_tombstone
    assert last.value is None and last.value_version is None and last.error is None
    assert last.key == {"group": REALWORLD_PARTITIONS[partition][1]}


# --------------------------------------------------------------------------------------------------
# Offset commit: hand-built values v0-v4
# --------------------------------------------------------------------------------------------------


def test_offset_commit_key_v0_and_v1() -> None:
    for version in (0, 1):
        rec = decode_consumer_offsets(offset_key("g1", "orders", 7, version), None)
        assert rec.error is None and rec.record_type == "offset_commit"
        assert rec.key_version == version
        assert rec.key == {"group": "g1", "topic": "orders", "partition": 7}
        assert rec.is_tombstone and rec.value is None


ZERO_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID


@pytest.mark.parametrize(
    ("version", "body", "expected"),
    [
        (0, i64(42) + s("meta") + i64(1000), {"offset": 42, "metadata": "meta", "commitTimestamp": 1000}),
        (
            1,
            i64(42) + s("") + i64(1000) + i64(2000),
            {"offset": 42, "metadata": "", "commitTimestamp": 1000, "expireTimestamp": 2000},
        ),
        (2, i64(43) + s("x") + i64(1001), {"offset": 43, "metadata": "x", "commitTimestamp": 1001}),
        (
            3,
            i64(44) + i32(5) + s("m") + i64(1002),
            {"offset": 44, "leaderEpoch": 5, "metadata": "m", "commitTimestamp": 1002},
        ),
        (
            4,
            i64(45) + i32(6) + cs("flex") + i64(1003) + tags((3, b"\x01\x02"), (9, b"")),
            {"offset": 45, "leaderEpoch": 6, "metadata": "flex", "commitTimestamp": 1003, "topicId": ZERO_ID},
        ),
        (  # as a Kafka 4.4.0 broker writes it: the topic's id in tag 0
            4,
            i64(1) + i32(-1) + cs("") + i64(1003) + tags((0, uuid.UUID(int=7).bytes)),
            {
                "offset": 1,
                "leaderEpoch": -1,
                "metadata": "",
                "commitTimestamp": 1003,
                "topicId": "AAAAAAAAAAAAAAAAAAAABw",
            },
        ),
    ],
)
def test_offset_commit_value_versions(version: int, body: bytes, expected: dict) -> None:
    rec = decode_consumer_offsets(offset_key("g", "t", 0), i16(version) + body)
    assert rec.error is None
    assert rec.value_version == version
    assert rec.value == expected


def test_offset_commit_value_v4_without_tags_section_is_truncated() -> None:
    body = i16(4) + i64(45) + i32(6) + cs("flex") + i64(1003)  # missing the tagged-field count
    rec = decode_consumer_offsets(offset_key("g", "t", 0), body)
    assert rec.value is None and "value:" in rec.error and "tagged field count" in rec.error
    assert rec.raw_value == body and rec.value_version == 4


def test_trailing_bytes_are_reported() -> None:
    rec = decode_consumer_offsets(offset_key("g", "t", 0), i16(0) + i64(1) + s("") + i64(2) + b"\xff\xfe\xfd")
    assert rec.value is None
    assert "3 unexpected trailing bytes" in rec.error
    rec = decode_consumer_offsets(offset_key("g", "t", 0) + b"\x00", None)
    assert rec.key is None and "1 unexpected trailing byte after" in rec.error


# --------------------------------------------------------------------------------------------------
# Group metadata: hand-built values v0-v4
# --------------------------------------------------------------------------------------------------

SUB = subscription_v1(["orders", "payments"], [("orders", [1])])
ASSIGN = assignment_v0([("orders", [0, 1]), ("payments", [3])], b"ud")


def _member(version: int, member_id: str, sub: bytes = SUB, assign: bytes = ASSIGN) -> bytes:
    out = s(member_id)
    if version >= 3:
        out += s("static-1")
    out += s("client-1") + s("/10.0.0.1")
    if version >= 1:
        out += i32(60000)
    out += i32(45000) + b(sub) + b(assign)
    return out


def _group_value(version: int, protocol_type: str = "consumer", members: list[bytes] | None = None) -> bytes:
    members = [_member(version, "m-1")] if members is None else members
    out = i16(version) + s(protocol_type) + i32(7) + s("range") + s("m-1")
    if version >= 2:
        out += i64(1700000000000)
    return out + arr(members)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_metadata_value_versions(version: int) -> None:
    rec = decode_consumer_offsets(group_key("grp"), _group_value(version))
    assert rec.error is None, rec.error
    assert rec.record_type == "group_metadata" and rec.key == {"group": "grp"}
    v = rec.value
    assert rec.value_version == version
    assert (v["protocolType"], v["generation"], v["protocol"], v["leader"]) == ("consumer", 7, "range", "m-1")
    assert ("currentStateTimestamp" in v) == (version >= 2)
    (m,) = v["members"]
    expected_keys = ["memberId", "clientId", "clientHost", "sessionTimeout", "subscription", "assignment"]
    if version >= 1:
        expected_keys.insert(3, "rebalanceTimeout")
    if version >= 3:
        expected_keys.insert(1, "groupInstanceId")
    assert list(m) == expected_keys
    assert m["memberId"] == "m-1" and m["sessionTimeout"] == 45000
    if version >= 3:
        assert m["groupInstanceId"] == "static-1"
    assert m["subscription"] == {
        "version": 1,
        "topics": ["orders", "payments"],
        "userData": None,
        "ownedPartitions": [{"topic": "orders", "partitions": [1]}],
    }
    assert m["assignment"] == {
        "version": 0,
        "assignedPartitions": [
            {"topic": "orders", "partitions": [0, 1]},
            {"topic": "payments", "partitions": [3]},
        ],
        "userData": b"ud",
    }
    assert to_jsonable(m["assignment"])["userData"] == "7564"


def test_group_metadata_value_v4_flexible() -> None:
    member = (
        cs("m-1")
        + cs(None)
        + cs("client-1")
        + cs("/10.0.0.1")
        + i32(60000)
        + i32(45000)
        + cb(SUB)
        + cb(b"")
        + tags((5, b"zz"))
    )
    value = i16(4) + cs("consumer") + i32(8) + cs(None) + cs(None) + i64(-1) + carr([member]) + NO_TAGS
    rec = decode_consumer_offsets(group_key("grp"), value)
    assert rec.error is None, rec.error
    assert rec.value["protocol"] is None and rec.value["leader"] is None
    (m,) = rec.value["members"]
    assert m["groupInstanceId"] is None
    assert m["subscription"]["topics"] == ["orders", "payments"]
    assert m["assignment"] == b""  # a member without an assignment yet keeps the empty bytes


def test_group_metadata_non_consumer_protocol_keeps_bytes() -> None:
    rec = decode_consumer_offsets(group_key("connect-cluster"), _group_value(3, protocol_type="connect"))
    assert rec.error is None
    (m,) = rec.value["members"]
    assert m["subscription"] == SUB and m["assignment"] == ASSIGN


def test_group_metadata_undecodable_blob_keeps_bytes() -> None:
    bad = i16(0) + i32(5)  # claims 5 topics, has none
    rec = decode_consumer_offsets(group_key("g"), _group_value(3, members=[_member(3, "m-1", sub=bad)]))
    assert rec.error is None
    (m,) = rec.value["members"]
    assert m["subscription"] == bad and "subscriptionError" in m
    assert isinstance(m["assignment"], dict)


def test_group_metadata_non_nullable_protocol_type_null() -> None:
    value = i16(0) + s(None) + i32(1) + s(None) + s(None) + arr([])
    rec = decode_consumer_offsets(group_key("g"), value)
    assert "non-nullable field protocolType" in rec.error


# --------------------------------------------------------------------------------------------------
# Consumer protocol blobs
# --------------------------------------------------------------------------------------------------


def test_subscription_versions() -> None:
    base = arr([s("a")]) + b(b"\x01")
    assert decode_subscription(i16(0) + base) == {"version": 0, "topics": ["a"], "userData": b"\x01"}
    owned = arr([s("a") + arr([i32(0), i32(2)])])
    assert decode_subscription(i16(2) + base + owned + i32(9)) == {
        "version": 2,
        "topics": ["a"],
        "userData": b"\x01",
        "ownedPartitions": [{"topic": "a", "partitions": [0, 2]}],
        "generationId": 9,
    }
    v3 = decode_subscription(i16(3) + base + owned + i32(9) + s("rack-a"))
    assert v3["rackId"] == "rack-a"
    # A newer version is read with the v3 layout and its extra tail is ignored (as Kafka does).
    v5 = decode_subscription(i16(5) + base + owned + i32(9) + s(None) + b"future")
    assert v5["version"] == 5 and v5["rackId"] is None
    with pytest.raises(SchemaError, match="trailing"):
        decode_subscription(i16(0) + base + b"x")
    with pytest.raises(SchemaError):
        decode_subscription(b"\x00")


def test_assignment_versions() -> None:
    for version in range(4):
        blob = i16(version) + arr([s("t") + arr([i32(4)])]) + b(None)
        assert decode_assignment(blob) == {
            "version": version,
            "assignedPartitions": [{"topic": "t", "partitions": [4]}],
            "userData": None,
        }


# --------------------------------------------------------------------------------------------------
# KIP-848 / KIP-932 records and unknown record types
# --------------------------------------------------------------------------------------------------


def _uuid_bytes(seed: int) -> tuple[bytes, str]:
    raw = uuid.UUID(int=seed).bytes
    return raw, base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_consumer_group_records() -> None:
    key = i16(3) + s("cg")
    rec = decode_consumer_offsets(key, i16(0) + i32(12) + tags((1, i64(1700000000000)), (4, b"?")))
    assert rec.error is None and rec.record_type == "consumer_group_metadata"
    assert rec.key == {"groupId": "cg"}
    assert rec.value == {"epoch": 12, "metadataHash": 0, "creationTimeMs": 1700000000000}

    key = i16(5) + s("cg") + s("member-a")
    classic = i8(1) + i32(45000) + carr([cs("range") + cb(SUB) + NO_TAGS]) + NO_TAGS
    value = (
        i16(0)
        + cs(None)
        + cs("rack-1")
        + cs("cli")
        + cs("/1.2.3.4")
        + carr([cs("orders")])
        + cs(None)
        + i32(300000)
        + cs("uniform")
        + tags((0, classic))
    )
    rec = decode_consumer_offsets(key, value)
    assert rec.error is None, rec.error
    assert rec.record_type == "consumer_group_member_metadata"
    assert rec.key == {"groupId": "cg", "memberId": "member-a"}
    assert rec.value["subscribedTopicNames"] == ["orders"]
    assert rec.value["serverAssignor"] == "uniform"
    assert rec.value["classicMemberMetadata"] == {
        "sessionTimeoutMs": 45000,
        "supportedProtocols": [{"name": "range", "metadata": SUB}],
    }

    # A tagged nullable struct says null in an unsigned varint 0: the bytes a Kafka 4.4.0 broker wrote
    # for a KIP-848 member (librdkafka's `group.protocol=consumer`), 36 bytes, tag 0 of size 1.
    value = (
        i16(0)
        + cs(None)
        + cs(None)
        + cs("rdkafka")
        + cs("/127.0.0.1")
        + carr([cs("g")])
        + cs("")
        + i32(300000)
        + cs(None)
        + tags((0, b"\x00"))
    )
    assert len(value) == 36
    rec = decode_consumer_offsets(key, value)
    assert rec.error is None, rec.error
    assert rec.value["classicMemberMetadata"] is None and rec.value["clientId"] == "rdkafka"

    raw, text = _uuid_bytes(0x1234)
    tp = raw + carr([i32(0), i32(1)])
    value = (
        i16(0) + i32(3) + i32(2) + i8(0) + carr([tp + tags((0, carr([i32(3), i32(3)])))]) + carr([]) + NO_TAGS
    )
    rec = decode_consumer_offsets(i16(8) + s("cg") + s("member-a"), value)
    assert rec.error is None, rec.error
    assert rec.value == {
        "memberEpoch": 3,
        "previousMemberEpoch": 2,
        "state": 0,
        "assignedPartitions": [{"topicId": text, "partitions": [0, 1], "assignmentEpochs": [3, 3]}],
        "partitionsPendingRevocation": [],
    }


def test_share_group_and_regex_records() -> None:
    rec = decode_consumer_offsets(i16(11) + s("sg"), i16(0) + i32(4) + i64(99) + NO_TAGS)
    assert (rec.record_type, rec.key, rec.value) == (
        "share_group_metadata",
        {"groupId": "sg"},
        {"epoch": 4, "metadataHash": 99},
    )
    rec = decode_consumer_offsets(
        i16(16) + s("cg") + s("orders-.*"), i16(0) + carr([cs("orders-eu")]) + i64(5) + i64(6) + NO_TAGS
    )
    assert rec.record_type == "consumer_group_regular_expression"
    assert rec.key == {"groupId": "cg", "regularExpression": "orders-.*"}
    assert rec.value == {"topics": ["orders-eu"], "version": 5, "timestamp": 6}


def test_all_table_entries_are_consistent() -> None:
    for key_version, kind in CONSUMER_OFFSETS_RECORDS.items():
        assert key_version in kind.key_schema.valid_versions
        # A tombstone with a well-formed key decodes for every known record type.
        key = i16(key_version) + b"".join(
            s("x") if f.type == "string" else i32(1) for f in kind.key_schema.fields
        )
        rec = decode_consumer_offsets(key, None)
        assert rec.error is None and rec.record_type == kind.record_type and rec.is_tombstone


@pytest.mark.parametrize("key_version", [99, 17, -1])
def test_unknown_key_version(key_version: int) -> None:
    key, value = i16(key_version) + b"\xde\xad", b"\x00\x00\xbe\xef"
    rec = decode_consumer_offsets(key, value)
    assert rec.record_type == "unknown" and rec.key_version == key_version
    assert rec.key is None and rec.value is None and rec.error
    assert (rec.raw_key, rec.raw_value) == (key, value)
    d = rec.to_dict()
    assert d["raw_key"] == key.hex() and d["raw_value"] == "0000beef" and d["key_version"] == key_version
    json.dumps(d)


# --------------------------------------------------------------------------------------------------
# __transaction_state
# --------------------------------------------------------------------------------------------------


def test_transaction_log_v0() -> None:
    value = (
        i16(0)
        + i64(1000)
        + i16(3)
        + i32(60000)
        + i8(1)
        + arr([s("orders") + arr([i32(0), i32(2)])])
        + i64(1700000000500)
        + i64(1700000000000)
    )
    rec = decode_transaction_state(i16(0) + s("txn-1"), value)
    assert rec.error is None and rec.record_type == "transaction_log" and rec.topic == "__transaction_state"
    assert rec.key == {"transactionalId": "txn-1"}
    assert rec.value == {
        "producerId": 1000,
        "producerEpoch": 3,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 1,
        "transactionStatusName": "Ongoing",
        "transactionPartitions": [{"topic": "orders", "partitionIds": [0, 2]}],
        "transactionLastUpdateTimestampMs": 1700000000500,
        "transactionStartTimestampMs": 1700000000000,
    }
    null_parts = i16(0) + i64(1) + i16(0) + i32(1) + i8(4) + i32(-1) + i64(2) + i64(-1)
    rec = decode_transaction_state(i16(0) + s("txn-2"), null_parts)
    assert rec.value["transactionPartitions"] is None
    assert rec.value["transactionStatusName"] == "CompleteCommit"


def test_transaction_log_v1_tagged_fields() -> None:
    prefix = (
        i16(1)
        + i64(2000)
        + i16(0)
        + i32(900000)
        + i8(7)
        + carr([cs("payments") + carr([i32(5)]) + NO_TAGS])
        + i64(11)
        + i64(10)
    )
    value = prefix + tags((0, i64(1999)), (2, i16(2)), (42, b"\x00\x01"))
    rec = decode_transaction_state(i16(0) + s("txn-v1"), value)
    assert rec.error is None, rec.error
    v = rec.value
    assert v["previousProducerId"] == 1999
    assert v["nextProducerId"] == -1  # absent tagged field -> schema default
    assert v["nextProducerEpoch"] == -1  # 4.x's tag 3, at its default too
    assert list(v)[:5] == [
        "producerId",
        "previousProducerId",
        "nextProducerId",
        "producerEpoch",
        "nextProducerEpoch",
    ]
    assert v["clientTransactionVersion"] == 2
    tv2 = decode_transaction_state(i16(0) + s("txn-v1"), prefix + tags((1, i64(2001)), (3, i16(1))))
    assert (tv2.value["nextProducerId"], tv2.value["nextProducerEpoch"]) == (2001, 1)
    assert v["transactionStatusName"] == "PrepareEpochFence"
    assert v["transactionPartitions"] == [{"topic": "payments", "partitionIds": [5]}]
    bad = prefix + tags((2, i64(2)))  # tag 2 is an int16 but carries 8 bytes
    assert "left 6 of 8 bytes unread" in decode_transaction_state(i16(0) + s("t"), bad).error
    assert (
        decode_transaction_state(
            i16(0) + s("t"), i16(0) + i64(1) + i16(0) + i32(1) + i8(9) + arr([]) + i64(0) + i64(0)
        ).value["transactionStatusName"]
        == "Unknown(9)"
    )


def test_transaction_state_unknown_key_version() -> None:
    rec = decode_transaction_state(i16(1) + s("x"), b"\x00")
    assert rec.record_type == "unknown" and rec.key_version == 1 and rec.error


# --------------------------------------------------------------------------------------------------
# Garbage: never raise, keep raw bytes, never allocate absurd sizes
# --------------------------------------------------------------------------------------------------

VALID_PAIRS = [
    (offset_key("g", "t", 1), i16(3) + i64(44) + i32(5) + s("m") + i64(1002)),
    (group_key("grp"), _group_value(3)),
    (offset_key("g", "t", 1), i16(4) + i64(45) + i32(6) + cs("flex") + i64(1003) + tags((3, b"\x01"))),
]


@pytest.mark.parametrize("pair", range(len(VALID_PAIRS)))
def test_every_truncation_sets_error(pair: int) -> None:
    key, value = VALID_PAIRS[pair]
    assert decode_consumer_offsets(key, value).error is None
    for n in range(len(value)):
        rec = decode_consumer_offsets(key, value[:n])
        assert rec.error and rec.value is None and rec.raw_value == value[:n]
    for n in range(len(key)):
        rec = decode_consumer_offsets(key[:n], value)
        assert rec.error and rec.key is None and rec.raw_key == key[:n]


def test_huge_lengths_are_rejected_before_allocating() -> None:
    huge = 2_000_000_000
    # compact string length in a flexible offset commit value
    rec = decode_consumer_offsets(
        offset_key("g", "t", 0), i16(4) + i64(1) + i32(0) + uvarint(huge + 1) + b"abc"
    )
    assert "metadata needs 2000000000 bytes" in rec.error
    # int32 bytes length of a member subscription
    member = s("m") + s("c") + s("h") + i32(1) + i32(1) + i32(huge) + b"xx"
    rec = decode_consumer_offsets(
        group_key("g"), i16(1) + s("consumer") + i32(1) + s("r") + s("m") + arr([member])
    )
    assert "subscription needs 2000000000 bytes" in rec.error
    # array count
    rec = decode_consumer_offsets(
        group_key("g"), i16(1) + s("consumer") + i32(1) + s("r") + s("m") + i32(huge)
    )
    assert "claims 2000000000 elements" in rec.error
    # tagged field size and count
    rec = decode_consumer_offsets(
        offset_key("g", "t", 0),
        i16(4) + i64(1) + i32(0) + cs("") + i64(0) + uvarint(1) + uvarint(0) + uvarint(huge),
    )
    assert "tagged field 0 needs 2000000000 bytes" in rec.error
    rec = decode_consumer_offsets(
        offset_key("g", "t", 0), i16(4) + i64(1) + i32(0) + cs("") + i64(0) + uvarint(huge)
    )
    assert "tagged field count" in rec.error
    # negative classic string length other than -1
    rec = decode_consumer_offsets(i16(1) + i16(-5) + b"abc", None)
    assert "invalid length -5" in rec.error


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"", b""),
        (None, None),
        (None, b"\x00\x01"),
        (b"\x00", None),
        (b"", None),
        (offset_key("g", "t", 0), b""),
    ],
)
def test_empty_and_missing_inputs(key: bytes | None, value: bytes | None) -> None:
    for decoder in (decode_consumer_offsets, decode_transaction_state):
        rec = decoder(key, value)
        assert rec.error
        assert (rec.raw_key, rec.raw_value) == (key, value)
        json.dumps(rec.to_dict())


def test_unsupported_value_version() -> None:
    rec = decode_consumer_offsets(offset_key("g", "t", 0), i16(5) + i64(1))
    assert rec.value_version == 5 and "version 5 is not supported" in rec.error


def test_random_garbage_never_raises() -> None:
    rng = random.Random(848)
    prefixes = [i16(k) for k in range(-1, 18)]
    for _ in range(3000):
        key = rng.choice(prefixes) + rng.randbytes(rng.randrange(0, 24))
        value = i16(rng.randrange(-1, 6)) + rng.randbytes(rng.randrange(0, 64))
        for decoder in (decode_consumer_offsets, decode_transaction_state):
            rec = decoder(key, value)
            assert rec.raw_key == key and rec.raw_value == value
            json.dumps(rec.to_dict())
    # Mutations of valid records.
    for key, value in VALID_PAIRS:
        for _ in range(500):
            mutated = bytearray(value)
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            rec = decode_consumer_offsets(key, bytes(mutated))
            assert rec.error is None or rec.value is None


# --------------------------------------------------------------------------------------------------
# Schema engine
# --------------------------------------------------------------------------------------------------


def test_schema_engine_basics() -> None:
    schema = Schema.make(
        "Test",
        "0-2",
        "2+",
        (
            F("Flag", "bool"),
            F("Ratio", "float64"),
            F("Port", "uint16"),
            F("Id", "uuid"),
            F("Opt", "struct", "1+", nullable="1+", fields=(F("A", "int16"),)),
            F("Extra", "int32", tagged="2+", tag=0, default=-7),
        ),
    )
    raw, text = _uuid_bytes(7)
    body = b"\x01" + struct.pack(">d", 0.5) + struct.pack(">H", 65535) + raw
    assert decode(schema, 0, body) == {"flag": True, "ratio": 0.5, "port": 65535, "id": text}
    assert decode(schema, 1, body + i8(-1))["opt"] is None
    assert decode(schema, 1, body + i8(1) + i16(3))["opt"] == {"a": 3}
    assert decode(schema, 2, body + i8(1) + i16(3) + NO_TAGS + NO_TAGS)["extra"] == -7
    assert decode(schema, 2, body + i8(-1) + tags((0, i32(8))))["extra"] == 8
    assert decode_versioned(schema, i16(0) + body) == (
        0,
        {"flag": True, "ratio": 0.5, "port": 65535, "id": text},
    )
    with pytest.raises(SchemaError, match="invalid boolean"):
        decode(schema, 0, b"\x02" + body[1:])
    with pytest.raises(SchemaError, match="version 3 is not supported"):
        decode(schema, 3, body)
    with pytest.raises(SchemaError, match="presence marker"):
        decode(schema, 1, body + i8(5) + i16(3))
    with pytest.raises(SchemaError, match="duplicate tagged field"):
        decode(schema, 2, body + i8(-1) + tags((0, i32(8)), (0, i32(8))))
    with pytest.raises(SchemaError, match="longer than 5 bytes"):
        decode(schema, 2, body + i8(-1) + b"\xff\xff\xff\xff\xff\x01")
    with pytest.raises(SchemaError, match="trailing"):
        decode(schema, 0, body + b"\x00")
    assert decode(schema, 0, body + b"\x00", allow_trailing=True)["flag"] is True


def test_schema_error_carries_position() -> None:
    schema = Schema.make("S", "0", "none", (F("A", "int32"), F("B", "string")))
    with pytest.raises(SchemaError) as exc:
        decode(schema, 0, i32(1) + i16(10) + b"abc")
    assert exc.value.position == 6
    assert isinstance(exc.value, ValueError)
    with pytest.raises(SchemaError, match="invalid UTF-8"):
        decode(schema, 0, i32(1) + i16(2) + b"\xff\xfe")


def test_to_jsonable() -> None:
    data = {"a": b"\x00\xff", "b": [b"\x01", {"c": (b"", 3)}], 4: None}
    assert to_jsonable(data) == {"a": "00ff", "b": ["01", {"c": ["", 3]}], "4": None}
