"""`ktool dump-log` against DumpLogSegments of the same release, on segments a real 3.9 / 4.x broker wrote:
every codec, keys and null keys, headers, idempotent, plain and transactional producers (commit and
abort markers). Both outputs are parsed and compared field by field, line by line. And a big segment
dumped twice by `--jobs 2` (the second copy by the worker pool, log/workers/pool.py) prints what
`--jobs 1` prints, and DumpLogSegments agrees.

Differences kept on purpose (docs/dump-log.md): ktool's header line is `Starting offset:` (Kafka up to
3.9; 4.x says `Log starting offset:`), and ktool adds `headers: [k:v,…]` after Kafka's `headerKeys`."""

from __future__ import annotations

import uuid

import pytest

from tests.support.cli import run_ktool
from tests.support.dumplog import assert_same_dump
from tests.support.modern import create_topic, partition_dir, run_tool
from tests.support.script import counted_run, run_script

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def produce(bootstrap: str, topic: str, settings: dict, n: int = 30) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **settings})
    for i in range(n):
        producer.produce(
            topic,
            None if i == 7 else f"value {i} ü \u2603".encode(),
            f"key {i}".encode() if i % 3 else None,
            headers=[("h", f"v{i}".encode()), ("empty", None)] if i % 2 else None,
            timestamp=1_700_000_000_000 + i * 1000,
        )
    assert producer.flush(30) == 0


def transactions(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}", "linger.ms": 5})
    producer.init_transactions(60)
    for commit in (True, False, True, False):
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, f"txn {i}".encode(), b"k")
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(60)


def dump_both(cluster, topic: str) -> tuple[str, str]:
    segment = partition_dir(cluster.brokers[0], topic) / "00000000000000000000.log"
    args = ["--deep-iteration", "--print-data-log"]
    theirs = run_tool(cluster.release, "DumpLogSegments", [*args, "--files", str(segment)]).stdout
    result = run_ktool("dump-log", *args, str(segment))
    assert result.exit_code == 0, result.output
    return result.stdout, theirs


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("producer", ["idempotent", "plain"])
def test_dump_log_equals_dumplogsegments(modern_kafka, codec, producer):
    topic = f"dump-{producer}-{codec}-{uuid.uuid4().hex[:6]}"
    create_topic(modern_kafka, topic)
    settings = {"compression.type": codec, "enable.idempotence": producer == "idempotent"}
    if producer == "plain":
        settings["acks"] = "1"
    produce(modern_kafka.bootstrap, topic, settings)
    ours, theirs = dump_both(modern_kafka, topic)
    assert assert_same_dump(ours, theirs) >= 31  # 30 records and at least one batch


def test_dump_log_equals_dumplogsegments_on_transactions(modern_kafka):
    topic = f"dump-txn-{uuid.uuid4().hex[:6]}"
    create_topic(modern_kafka, topic)
    transactions(modern_kafka.bootstrap, topic)
    ours, theirs = dump_both(modern_kafka, topic)
    assert assert_same_dump(ours, theirs) >= 4 * (4 + 1) + 4 * 2
    assert theirs.count("endTxnMarker: COMMIT") == 2 and theirs.count("endTxnMarker: ABORT") == 2


def test_the_worker_pool_on_a_big_segment_the_broker_wrote(modern_kafka):
    # About 6 MiB of lz4 batches from an idempotent, transactional producer (every fifth transaction
    # aborted), dumped twice with `--jobs 2`: the second copy rendered by the pool's worker.
    from confluent_kafka import Producer

    topic = f"dump-helpers-{uuid.uuid4().hex[:6]}"
    create_topic(modern_kafka, topic)
    producer = Producer(
        {
            "bootstrap.servers": modern_kafka.bootstrap,
            "transactional.id": f"tx-{topic}",
            "compression.type": "lz4",
            "linger.ms": 20,
        }
    )
    producer.init_transactions(60)
    for t in range(40):
        producer.begin_transaction()
        for i in range(1000):
            value = f"{t}-{i} {uuid.uuid4().hex} {uuid.uuid4().hex} {uuid.uuid4().hex}".encode()
            producer.produce(topic, value, f"k{i % 97}".encode(), headers=[("trace", uuid.uuid4().bytes)])
        producer.flush(60)
        (producer.abort_transaction if t % 5 == 4 else producer.commit_transaction)(60)
    segment = partition_dir(modern_kafka.brokers[0], topic) / "00000000000000000000.log"
    assert segment.stat().st_size >= 4 << 20
    args = ["dump-log", "--deep-iteration", "--print-data-log", str(segment)]
    one = run_script(*args, "--jobs", "1")
    assert (one.returncode, one.stderr) == (0, ""), one.stderr
    workers, two = counted_run(*args, str(segment), "--jobs", "2")
    assert workers == 1, two.stderr
    assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout * 2, one.stderr)
    theirs = run_tool(
        modern_kafka.release,
        "DumpLogSegments",
        ["--deep-iteration", "--print-data-log", "--files", str(segment)],
    )
    assert assert_same_dump(one.stdout, theirs.stdout) >= 40_000  # `two` is `one` twice (above)
