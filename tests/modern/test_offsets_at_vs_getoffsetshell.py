"""`ktool offsets-at` on a real 3.9 / 4.x broker's own log dir equals GetOffsetShell (ListOffsets, asked of
that broker) of the same release: earliest, latest, max-timestamp, times before, inside and between
segments and after the last record, also after DeleteRecords moved the log start offset."""

from __future__ import annotations

import uuid

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import create_topic, partition_dir, run_tool_batch

T0 = 1_700_000_000_000
RECORDS = 600  # 8 KiB each, alternating between 2 partitions: 2-3 segments of 1 MiB a partition


def _theirs(cluster, topic: str, times: list[str]) -> list[list[str]]:
    """GetOffsetShell's lines for each time, its runs in one JVM (tests/support/modern.run_tool_batch)."""
    outs = run_tool_batch(
        cluster.release,
        "GetOffsetShell",
        [["--bootstrap-server", cluster.bootstrap, "--topic", topic, "--time", time] for time in times],
    )
    return [sorted(line for line in out.splitlines() if line.startswith(f"{topic}:")) for out in outs]


def _compare(cluster, topic: str, times: list[str]) -> None:
    """ktool's answer for each time equals GetOffsetShell's, both asked after the broker wrote the files."""
    theirs = _theirs(cluster, topic, times)
    for time, expected in zip(times, theirs, strict=True):
        assert _ours(cluster, topic, time) == expected, time


def _ours(cluster, topic: str, time: str) -> list[str]:
    """ktool's lines, less those of partitions without an offset at that time: ktool prints them with the
    offset left empty, as GetOffsetShell up to 0.10 did; 3.x and 4.x leave such partitions out."""
    result = run_ktool("offsets-at", "--time", time, str(cluster.brokers[0].log_dir))
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.startswith(f"{topic}:")]
    return sorted(line for line in lines if not line.endswith(":"))


@pytest.fixture
def segmented(modern_kafka) -> str:
    from confluent_kafka import Producer

    topic = f"times-{uuid.uuid4().hex[:8]}"
    # retention.ms -1: the timestamps are years old, and the broker's retention check (every 5 minutes)
    # would otherwise delete every segment in the middle of a test (seen in CI: log start = log end)
    create_topic(modern_kafka, topic, partitions=2, config={"segment.bytes": 1 << 20, "retention.ms": -1})
    producer = Producer({"bootstrap.servers": modern_kafka.bootstrap, "linger.ms": 20})
    for i in range(RECORDS):
        # partition 1's timestamps go back once: max-timestamp is then not the last record
        ts = T0 + i * 1000 if i != RECORDS // 2 else T0 + 10_000_000
        producer.produce(topic, b"x" * 8192, partition=i % 2, timestamp=ts)
    assert producer.flush(60) == 0
    segments = sorted(partition_dir(modern_kafka.brokers[0], topic, 0).glob("*.log"))
    assert len(segments) >= 2
    return topic


TIMES = [
    "earliest",
    "latest",
    "-3",
    str(T0 - 5000),
    str(T0),
    str(T0 + 77_500),
    str(T0 + 350_500),
    str(T0 + 599_000),
    str(T0 + 10_000_000),
    str(T0 + 20_000_000),
]


def test_offsets_at_equals_getoffsetshell(modern_kafka, segmented):
    _compare(modern_kafka, segmented, TIMES)


def test_after_delete_records_moved_the_log_start(modern_kafka, segmented):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": modern_kafka.bootstrap})
    futures = admin.delete_records([TopicPartition(segmented, 0, 70), TopicPartition(segmented, 1, 3)])
    for future in futures.values():
        future.result(timeout=30)
    # ktool reads the files, which say the new log start once the broker wrote them: its
    # log-start-offset-checkpoint (on its own schedule, and only for a log start past the first
    # segment's base), or the segments below it deleted (a segment may start exactly there)
    import time as clock

    wanted = [f"{segmented}:0:70", f"{segmented}:1:3"]
    deadline = clock.monotonic() + 90
    while _ours(modern_kafka, segmented, "earliest") != wanted:
        assert clock.monotonic() < deadline, "the broker's files never said the new log start offsets"
        clock.sleep(0.5)
    _compare(modern_kafka, segmented, ["earliest", "latest", str(T0), str(T0 + 100_000)])


def test_a_transactional_topic_equals_getoffsetshell_markers_included(modern_kafka):
    """Transaction markers are batches with timestamps of their own (the broker's clock when it wrote
    them): ListOffsets counts them, for max-timestamp (the marker of the last transaction when it is the
    newest) and for a time after a transaction's last record and at or before its marker (the marker's
    offset). Before: `txn:0:13` where GetOffsetShell said 14, and the record after the marker for such a
    time."""
    import json
    import time as clock

    from confluent_kafka import Producer

    topic = f"txn-times-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, topic, config={"retention.ms": -1})
    producer = Producer(
        {"bootstrap.servers": modern_kafka.bootstrap, "transactional.id": topic, "linger.ms": 0}
    )
    producer.init_transactions(60)
    for commit in (True, False, True):
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, b"v%d" % i, partition=0)
        assert producer.flush(30) == 0
        clock.sleep(0.05)  # the marker's timestamp comes after the records'
        (producer.commit_transaction if commit else producer.abort_transaction)(60)
    segment = sorted(partition_dir(modern_kafka.brokers[0], topic).glob("*.log"))[-1]
    deadline = clock.monotonic() + 60
    while True:  # the coordinator writes the markers after the commit or abort returns
        dumped = run_ktool("dump-log", "--json", str(segment))
        batches = [o for o in map(json.loads, dumped.stdout.splitlines()) if o["type"] == "batch"]
        markers = [b for b in batches if b["isControl"]]
        if len(markers) == 3:
            break
        assert clock.monotonic() < deadline, "the broker did not write the third marker"
        clock.sleep(0.2)
    times = ["-3"]
    for marker in markers:
        before = max(b["maxTimestamp"] for b in batches if b["lastOffset"] < marker["baseOffset"])
        assert before < marker["maxTimestamp"]
        times += [str(before + 1), str(marker["maxTimestamp"])]
    _compare(modern_kafka, topic, times)
