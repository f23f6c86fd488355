"""`ktool dump-log`'s `__consumer_offsets` and `__transaction_state` decoders against DumpLogSegments'
(`--offsets-decoder`, `--transaction-log-decoder`) of the same release, on the internal topics a real
3.9 / 4.x broker wrote: classic groups, KIP-848 groups (4.x), transactions committed and aborted.

The two print the same records in different JSON: Kafka names a key's type by its number and gives
versions as strings, a deleted value as `<DELETE>`; ktool names the type, gives the number as `version`
and a tombstone as null. Those are mapped; then every field Kafka prints must be in ktool's record with
the same value. ktool may print more: tagged fields at their default, which Kafka leaves out.
"""

from __future__ import annotations

import base64
import json
import time
import uuid

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import create_topic, partition_dir, run_tool

NOT_DECODED_BY_KTOOL: set[str] = set()
BLOBS = {"subscription", "assignment"}  # consumer-protocol bytes: ktool decodes them, Kafka prints them raw
TXN_STATES = [
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
]  # TransactionState's ids, as Kafka prints them by name


def _key_and_payload(line: str) -> tuple[str, str]:
    rest = line.split(" key: ", 1)[1]
    key, payload = rest.split(" payload: ", 1)
    return key, payload


def _records(text: str) -> list[tuple[str, str]]:
    return [
        _key_and_payload(line) for line in text.splitlines() if line.startswith("| ") and " key: " in line
    ]


def _same_record(ours: tuple[str, str], theirs: tuple[str, str], where: str) -> None:
    our_key, their_key = json.loads(ours[0]), json.loads(theirs[0])
    assert str(our_key["version"]) == their_key["type"], where
    assert our_key["data"] == their_key["data"], where
    if theirs[1] == "<DELETE>":
        assert ours[1] == "null", where
        return
    our_value, their_value = json.loads(ours[1]), json.loads(theirs[1])
    assert "error" not in our_value, f"{where}: {our_value.get('error')}"
    assert str(our_value["version"]) == their_value["version"], where
    _same_fields(our_value["data"], their_value["data"], where)


def _same_fields(ours: object, theirs: object, where: str) -> None:
    """Every field of Kafka's, in ktool's with the same value (see the module's docstring)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        for name, value in theirs.items():
            if name in NOT_DECODED_BY_KTOOL:
                continue
            mine = ours.get(name)
            if name in BLOBS and isinstance(mine, dict) and not isinstance(value, dict):
                continue
            if name == "transactionStatus" and isinstance(mine, int):
                mine = TXN_STATES[mine]
            _same_fields(mine, value, f"{where}.{name}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _same_fields(a, b, f"{where}[{i}]")
    elif where.endswith(".userData") and isinstance(ours, str) and isinstance(theirs, str):
        # the same bytes: ktool writes bytes in hex (to_jsonable), Kafka's JsonConverter in base64
        assert bytes.fromhex(ours) == base64.b64decode(theirs), where
    else:
        assert ours == theirs, where


def _compare(cluster, topic: str, flag: str) -> int:
    segment = partition_dir(cluster.brokers[0], topic) / "00000000000000000000.log"
    theirs = run_tool(
        cluster.release, "DumpLogSegments", ["--deep-iteration", flag, "--files", str(segment)]
    ).stdout
    result = run_ktool("dump-log", "--deep-iteration", "--print-data-log", flag, str(segment))
    assert result.exit_code == 0, result.output
    ours, ref = _records(result.stdout), _records(theirs)
    assert len(ours) == len(ref) > 0, theirs[-2000:]
    for n, (a, b) in enumerate(zip(ours, ref, strict=True)):
        _same_record(a, b, f"{topic} record {n}")
    return len(ref)


def _group(cluster, topic: str, protocol: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"{protocol}-{uuid.uuid4().hex[:8]}",
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment()
    consumer.commit(offsets=[TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 2)], asynchronous=False)
    consumer.close()


@pytest.fixture(scope="module")
def internal_topics(modern_kafka):
    """Transactions (commit, abort) and groups of each protocol the release has, written once."""
    from confluent_kafka import Producer

    topic = f"internal-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, topic, partitions=2)
    producer = Producer({"bootstrap.servers": modern_kafka.bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(60)
    for commit in (True, False, True):
        producer.begin_transaction()
        producer.produce(topic, b"a", partition=0)
        producer.produce(topic, b"b", partition=1)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(60)
    for protocol in ["classic"] + (["consumer"] if modern_kafka.release.major >= 4 else []):
        _group(modern_kafka, topic, protocol)
    return modern_kafka


def test_consumer_offsets_decoder_equals_dumplogsegments(internal_topics):
    assert _compare(internal_topics, "__consumer_offsets", "--offsets-decoder") >= 3


@pytest.mark.parametrize("kafka_release", ["4.4.0"], indirect=True)
def test_transaction_log_decoder_equals_dumplogsegments(internal_topics):
    """4.x only: 3.9's DumpLogSegments prints the transaction log in a text form of its own, not JSON.
    Java's 4.x producer commits with transaction version 2 (clientTransactionVersion 2); every value
    of version 1 shows every tagged field of 4.4's schema, NextProducerEpoch (tag 3) included, at its
    default where Kafka leaves it out (before: left out by ktool too)."""
    topic = f"tv2-{uuid.uuid4().hex[:8]}"
    create_topic(internal_topics, topic)
    perf = ["--topic", topic, "--num-records", "20", "--record-size", "10", "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={internal_topics.bootstrap}",
            "--transactional-id", topic, "--transaction-duration-ms", "50"]  # fmt: skip
    run_tool(internal_topics.release, "ProducerPerformance", perf)
    # init, then per transaction: ongoing, prepare, complete
    assert _compare(internal_topics, "__transaction_state", "--transaction-log-decoder") >= 1 + 3 * 3
    segment = partition_dir(internal_topics.brokers[0], "__transaction_state") / "00000000000000000000.log"
    dumped = run_ktool("dump-log", "--deep-iteration", "--print-data-log", "--json", str(segment)).stdout
    values = [o["value"] for o in map(json.loads, dumped.splitlines()) if o.get("value")]
    tagged = {"previousProducerId", "nextProducerId", "nextProducerEpoch", "clientTransactionVersion"}
    v1 = [v["data"] for v in values if v.get("version") == 1]
    assert v1 and all(tagged <= set(data) for data in v1)
    assert any(data["clientTransactionVersion"] == 2 for data in v1)
