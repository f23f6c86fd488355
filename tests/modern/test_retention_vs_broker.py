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
from tests.support.modern import copy_live_dir, create_topic, partition_dir

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
    # The preview reads the high watermark from replication-offset-checkpoint, which the broker writes
    # every few seconds: a segment above the checkpointed one is kept (KAFKA-5634), rightly, until then.
    checkpoint, line = live.parent / "replication-offset-checkpoint", f"{topic} 0 {5 * len(ages)}\n"
    deadline = time.monotonic() + 30
    while line not in checkpoint.read_text():
        assert time.monotonic() < deadline, "the broker did not checkpoint the high watermark"
        time.sleep(0.1)
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
    copy_live_dir(live, copy)
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


def test_offline_preview_reads_the_kraft_topic_config_and_equals_the_brokers_deletions(
    maintained_kafka, tmp_path
):
    """retention.bytes set with the Admin API (as kafka-configs does) lives in the KRaft metadata log, not
    in ZooKeeper: the preview of a copy of the log dir, with no flag and no broker asked, reads it from the
    copied `__cluster_metadata-0` and deletes what the broker then deletes; a topic created compacted
    shows as compact. The partitions are copied before the change (the broker acts on it within a
    second), the metadata log after it."""
    node = maintained_kafka.brokers[0]
    topic, live = _topic(maintained_kafka, [0] * 5)
    compacted = f"compacted-{uuid.uuid4().hex[:8]}"
    create_topic(maintained_kafka, compacted, config={"cleanup.policy": "compact"})
    before = _segments(live)
    sizes = [(live / f"{base:020d}.log").stat().st_size for base in before]
    limit = sum(sizes) - sizes[0] - sizes[1]  # without the two oldest, exactly at the limit
    logdir = tmp_path / "logdir"
    copy = copy_live_dir(live, logdir / live.name)
    copy_live_dir(partition_dir(node, compacted), logdir / f"{compacted}-0")
    for name in ("meta.properties", "log-start-offset-checkpoint", "replication-offset-checkpoint"):
        shutil.copy2(node.log_dir / name, logdir / name)
    _alter(maintained_kafka, topic, "retention.bytes", limit)
    copy_live_dir(node.log_dir / "__cluster_metadata-0", logdir / "__cluster_metadata-0")

    result = run_ktool("retention", "--json", "--server-properties", str(node.config), str(logdir))
    assert result.exit_code == 0, result.output
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    settings = {o["dir"]: o["settings"] for o in objects if o["type"] == "partition"}
    assert settings[copy.name]["retentionBytes"] == {"value": limit, "source": "KRaft topic config"}
    assert settings[copy.name]["retentionMs"] == {
        "value": -1,
        "source": f"{node.config} (log.retention.ms)",
    }
    assert settings[f"{compacted}-0"]["cleanupPolicy"] == {"value": "compact", "source": "KRaft topic config"}
    segments = [o for o in objects if o["type"] == "segment" and o["dir"] == copy.name]
    deleted = sorted(o["baseOffset"] for o in segments if o["action"] == "delete")
    kept = sorted(o["baseOffset"] for o in segments if o["action"] != "delete")
    assert deleted == before[:2]
    assert _broker_deletes(maintained_kafka, topic, live, before) == kept
    assert _earliest(maintained_kafka, topic) == kept[0]


# --------------------------------------------------------------------------- compaction
# delete.retention.ms: the second clean waits this long after the first; and the time the test has to copy
# a clean's result before the broker may run a clean for the horizon alone (checked, not assumed)
HORIZON_MS = 6000


def _records(directory: Path) -> list[dict]:
    """Every record of the sealed segments (the cleaner never touches the active one), as dump-log's JSON."""
    segments = sorted(directory.glob("*.log"))[:-1]
    result = run_ktool("dump-log", "--json", "--deep-iteration", *map(str, segments))
    assert result.exit_code == 0, result.output
    return [o for o in map(json.loads, result.stdout.splitlines()) if o.get("type") in ("record", "batch")]


def _kept(objects: list[dict]) -> tuple[int, int, int]:
    """(data records with a value, tombstones, transaction markers)."""
    records = [o for o in objects if o["type"] == "record"]
    markers = sum("control" in o for o in records)
    tombstones = sum(o["valueSize"] < 0 and "control" not in o for o in records)
    return len(records) - markers - tombstones, tombstones, markers


def _cleaned_to(live: Path, offset: int) -> bool:
    checkpoint = live.parent / "cleaner-offset-checkpoint"
    return checkpoint.is_file() and f"{live.name.rsplit('-', 1)[0]} 0 {offset}\n" in checkpoint.read_text()


def _preview_compaction(copy: Path, now: int) -> dict:
    props = copy.parent / "server.properties"
    props.write_text(f"log.cleanup.policy=compact\nlog.cleaner.delete.retention.ms={HORIZON_MS}\n")
    flags = ["--compaction", "--now", str(now), "--server-properties", str(props)]
    result = run_ktool("retention", "--json", *flags, str(copy))
    assert result.exit_code == 0, result.output
    [partition] = [o for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "partition"]
    return partition["compaction"]


def test_compaction_preview_equals_the_cleans_past_delete_retention(maintained_kafka, tmp_path):
    """The first clean drops superseded and aborted records and stamps the delete horizon of the batches
    with tombstones (and of markers whose transaction it found empty); each later clean, which the
    broker runs for a passed horizon alone (nothing is dirty), drops what is past it. The preview made
    on a copy after each clean, as of the horizon it stamped, equals what the next clean keeps: records,
    tombstones and transaction markers (a marker goes one clean after its transaction's records: the
    clean that finds them gone stamps it; the producer's last one stays).

    What moves under the test is held still, not raced: the cleaner is held (min.compaction.lag.ms)
    while the first rounds are written, so one clean stamps every horizon (cleans between the writes
    would stamp the tombstones early, and a later one could expire them before any preview); after each
    clean the partition is copied at once, before its earliest horizon (checked), so the sealed segments
    the preview reads are the clean's, not those of a clean the horizon alone starts while the next
    segments are rolled."""
    from confluent_kafka import Producer

    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    config = {
        "cleanup.policy": "compact",
        "segment.ms": 100,
        "min.cleanable.dirty.ratio": 0.01,
        "min.compaction.lag.ms": HOLD_MS,
        "delete.retention.ms": HORIZON_MS,
        "file.delete.delay.ms": 0,
    }
    create_topic(maintained_kafka, topic, config=config)
    plain = Producer({"bootstrap.servers": maintained_kafka.bootstrap, "linger.ms": 0})
    txn = Producer({"bootstrap.servers": maintained_kafka.bootstrap, "transactional.id": f"tx-{topic}"})
    txn.init_transactions(60)

    def rounds(*writes) -> None:
        for write in writes:
            write()
            assert plain.flush(30) == 0
            time.sleep(0.15)  # past segment.ms: the next write rolls a segment

    def transaction(key: bytes, commit: bool) -> None:
        txn.begin_transaction()
        txn.produce(topic, b"t", key)
        assert txn.flush(30) == 0  # written before the abort, which would drop it unsent
        (txn.commit_transaction if commit else txn.abort_transaction)(60)

    rounds(
        lambda: [plain.produce(topic, b"v", f"k{i}".encode()) for i in range(4)],
        lambda: [plain.produce(topic, None, k) for k in (b"k0", b"k1")],  # tombstones
        lambda: transaction(b"k2", True),  # its record superseded below: its marker can go
        lambda: transaction(b"k8", False),  # aborted
        lambda: transaction(b"k9", True),  # the producer's last batch: its marker stays
        lambda: [plain.produce(topic, b"w", k) for k in (b"k2", b"k3")],
        lambda: plain.produce(topic, b"x", b"k7"),  # the active segment
    )
    live = partition_dir(maintained_kafka.brokers[0], topic)
    _alter(maintained_kafka, topic, "min.compaction.lag.ms", 0)
    cleaned = _wait_cleaned_and_copy(live, tmp_path / "cleaned-1")
    expired = []
    for clean in (2, 3):
        # Hold the cleaner (min.compaction.lag.ms), roll a segment for it to find dirty, let the horizon
        # the last clean stamped pass, preview the copy (the clean's segments, then those rolled), then
        # let the cleaner go.
        _alter(maintained_kafka, topic, "min.compaction.lag.ms", HOLD_MS)
        rounds(
            lambda n=clean: plain.produce(topic, b"y", f"n{n}".encode()),
            lambda: plain.produce(topic, b"z", b"k7"),
        )
        copy = _with_rolled_segments(cleaned, live, tmp_path / f"clean-{clean}" / live.name)
        before = _records(copy)
        horizon = max(o["deleteHorizonMs"] or 0 for o in before if o["type"] == "batch")
        time.sleep(max(0.0, horizon / 1000 - time.time()) + 0.1)
        c = _preview_compaction(copy, int(time.time() * 1000))
        expired.append((c["tombstonesExpired"], c["markersExpired"]))
        markers = _kept(before)[2]
        predicted = (
            c["recordsExamined"]
            - c["superseded"]
            - c["aborted"]
            - c["tombstonesExpired"]
            - c["tombstonesKept"],
            c["tombstonesKept"],
            markers - c["markersExpired"],
        )
        _alter(maintained_kafka, topic, "min.compaction.lag.ms", 0)
        cleaned = _wait_cleaned_and_copy(live, tmp_path / f"cleaned-{clean}")
        assert _kept(_records(cleaned)) == predicted, f"clean {clean}: {c}"
    # There was something to prove: both tombstones went in the second clean (the first stamped them),
    # the markers of the two emptied transactions in the third (the second found them empty).
    assert expired == [(2, 0), (0, 2)], expired


HOLD_MS = 3_600_000  # min.compaction.lag.ms that holds the cleaner: no record is an hour old


def _wait_cleaned_and_copy(live: Path, target: Path) -> Path:
    """A copy of the partition as the clean that just ended left it, with the cleaner's checkpoint. Taken
    at once, and checked to be older than every horizon that clean stamped: the broker runs a clean for
    a passed horizon alone, and one run before the copy would leave the preview nothing to expire."""
    _wait_cleaned(live)
    copy = copy_live_dir(live, target / live.name)
    shutil.copy2(live.parent / "cleaner-offset-checkpoint", target)  # where the dirty part starts
    copied_at = time.time() * 1000
    horizons = [o["deleteHorizonMs"] for o in _records(copy) if o["type"] == "batch" and o["deleteHorizonMs"]]
    assert not horizons or copied_at < min(horizons), (
        f"{live.name}: copied {copied_at - min(horizons):.0f} ms past the horizon {min(horizons)}: a clean "
        "for the horizon alone may have run first"
    )
    return copy


def _with_rolled_segments(cleaned: Path, live: Path, target: Path) -> Path:
    """The cleaned copy's segments, then the live partition's from the segment that was active at the
    clean (rolled since; the cleaner held, nothing of them cleaned) and everything beside the segments."""
    active = max(int(p.stem) for p in cleaned.glob("*.log"))
    copy_live_dir(live, target)
    for path in target.iterdir():
        if path.stem.isdigit() and int(path.stem) < active:
            path.unlink()
    for path in cleaned.iterdir():
        if path.stem.isdigit() and int(path.stem) < active:
            shutil.copy2(path, target / path.name)
    shutil.copy2(cleaned.parent / "cleaner-offset-checkpoint", target.parent)
    return target


def _wait_cleaned(live: Path) -> None:
    """Until the cleaner has checkpointed the partition up to its active segment."""
    active = max(int(p.stem) for p in live.glob("*.log"))
    deadline = time.monotonic() + 30
    while not _cleaned_to(live, active):
        assert time.monotonic() < deadline, f"{live.name}: not cleaned up to {active}"
        time.sleep(0.1)
