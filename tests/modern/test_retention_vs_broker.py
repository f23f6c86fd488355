"""`ktool retention`'s preview, made before a real 3.9 / 4.x broker acts, against what the broker then
deletes (UnifiedLog.deleteOldSegments): by time (retention.ms), by size (retention.bytes, on the boundary
where the log would be exactly at the limit) and below the log start offset that DeleteRecords moved
(inside a segment).

The broker checks retention every second here (``maintained_kafka``); each topic starts without limits,
the preview is taken with the limit the test is about to set, then the topic's config is changed with the
Admin API and the broker deletes at its next check. The preview's deleted segments must be exactly the
ones the broker removed, and its new log start offset the broker's earliest offset (ListOffsets).
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path

from tests.support.cli import run_ktool
from tests.support.modern import create_topic, partition_dir

DAY_MS = 86_400_000


def _write(cluster, topic: str, ages: list[int]) -> None:
    """One segment per age (ms before the time of writing, each younger than the one before; the broker
    rolls when a record's timestamp is segment.ms past the segment's first): five records, a batch each."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    for age in ages:
        ts = int(time.time() * 1000) - age
        for i in range(5):
            producer.produce(topic, b"v" * 50, f"k{i}".encode(), timestamp=ts + i)
            assert producer.flush(30) == 0
        time.sleep(0.15)


def _topic(cluster, ages: list[int]) -> tuple[str, Path]:
    topic = f"retention-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, config={"segment.ms": 100, "file.delete.delay.ms": 0})
    _write(cluster, topic, ages)
    live = partition_dir(cluster.brokers[0], topic)
    assert len(_segments(live)) == len(ages)
    return topic, live


def _segments(directory: Path) -> list[int]:
    return sorted(int(p.stem) for p in directory.glob("*.log"))


def _preview(path: Path, *flags: str) -> tuple[list[int], list[int], int]:
    """(segments the preview deletes, segments it keeps, the new log start offset)."""
    result = run_ktool("retention", "--json", *flags, str(path))
    assert result.exit_code == 0, result.output
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    [partition] = [o for o in objects if o["type"] == "partition"]
    segments = [o for o in objects if o["type"] == "segment"]
    deleted = sorted(o["baseOffset"] for o in segments if o["action"] == "delete")
    kept = sorted(o["baseOffset"] for o in segments if o["action"] != "delete")
    return deleted, kept, partition["newLogStartOffset"]


def _alter(cluster, topic: str, name: str, value: object) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    entry = ConfigEntry(name, str(value), incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs(
        [ConfigResource("TOPIC", topic, incremental_configs=[entry])]
    ).values():
        future.result(30)


def _earliest(cluster, topic: str) -> int:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    return next(iter(futures.values())).result(30).offset


def _broker_deletes(cluster, topic: str, live: Path, before: list[int], timeout: float = 30) -> list[int]:
    """The segments the broker keeps once its retention check removed some (the check runs every second:
    one more second without change means it is done)."""
    deadline = time.monotonic() + timeout
    while _segments(live) == before:
        assert time.monotonic() < deadline, f"{topic}: the broker deleted nothing within {timeout}s"
        time.sleep(0.1)
    time.sleep(1.5)
    return _segments(live)


def test_time_retention_equals_the_brokers_deletions(maintained_kafka):
    topic, live = _topic(maintained_kafka, [2 * DAY_MS, 2 * DAY_MS - 1000, 2 * DAY_MS - 2000, 0, 0])
    before = _segments(live)
    deleted, kept, start = _preview(live, "--retention-ms", str(DAY_MS))
    assert deleted and kept  # the three old segments, not the new ones
    _alter(maintained_kafka, topic, "retention.ms", DAY_MS)
    assert _broker_deletes(maintained_kafka, topic, live, before) == kept
    assert sorted(set(before) - set(kept)) == deleted
    assert _earliest(maintained_kafka, topic) == start == kept[0]


def test_size_retention_equals_the_brokers_deletions_at_the_limit(maintained_kafka):
    topic, live = _topic(maintained_kafka, [0] * 5)
    before = _segments(live)
    sizes = [(live / f"{base:020d}.log").stat().st_size for base in before]
    limit = sum(sizes) - sizes[0] - sizes[1]  # without the two oldest, exactly at the limit
    deleted, kept, start = _preview(live, "--retention-bytes", str(limit))
    assert deleted and kept
    _alter(maintained_kafka, topic, "retention.bytes", limit)
    assert _broker_deletes(maintained_kafka, topic, live, before) == kept
    assert _earliest(maintained_kafka, topic) == start == kept[0]


def test_log_start_retention_after_delete_records_equals_the_brokers_deletions(maintained_kafka, tmp_path):
    """The preview reads the partition as it was before DeleteRecords with the log-start and high-watermark
    checkpoints the broker wrote after it: the state the broker's next retention check acts on."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic, live = _topic(maintained_kafka, [0] * 5)
    before = _segments(live)
    copy = tmp_path / "logdir" / live.name
    shutil.copytree(live, copy)
    # Inside the third segment: the two before it go, it stays. (Kafka checkpoints a log start only while
    # it is past the first segment's base offset, so not one the deletion makes equal to it.)
    start = before[2] + 2
    admin = AdminClient({"bootstrap.servers": maintained_kafka.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, start)]).values():
        future.result(30)
    checkpoint = live.parent / "log-start-offset-checkpoint"
    deadline = time.monotonic() + 30
    while f"{topic} 0 {start}" not in checkpoint.read_text():
        assert time.monotonic() < deadline, "the broker did not checkpoint the new log start offset"
        time.sleep(0.1)
    for name in ("log-start-offset-checkpoint", "replication-offset-checkpoint"):
        shutil.copy2(live.parent / name, copy.parent / name)
    deleted, kept, new_start = _preview(copy)
    assert deleted and kept and new_start == start
    assert _broker_deletes(maintained_kafka, topic, live, before) == kept
    assert _earliest(maintained_kafka, topic) == start
