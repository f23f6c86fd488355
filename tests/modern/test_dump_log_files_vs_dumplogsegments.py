"""`ktool dump-log` against DumpLogSegments of the same release on the files beside the segments a real
3.9 / 4.x broker wrote: a compacted topic after the cleaner ran (tombstones with their delete horizon),
`.index` and `.timeindex` files, producer `.snapshot` files (idempotent and transactional producers),
`__cluster_metadata-0`'s log and its `<end offset>-<epoch>.checkpoint` snapshots. Each file is dumped by
both from a copy (the broker keeps changing the originals), one run for all files, and compared line by
line, field by field.

Differences kept on purpose (docs/dump-log.md, "Differences from DumpLogSegments"): a producer snapshot
ends with ktool's `version: … crc: … entries: …` line; a KRaft control record keeps `controlType:` and
adds its decoded `payload:` (3.9 prints the type alone, 4.x the JSON alone); tagged fields at their
default are in ktool's JSON (Kafka's converters leave them out). DumpLogSegments' stderr notes
(non-consecutive offsets, index entries past the log's end) are not ktool's.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from tests.support.cli import run_ktool
from tests.support.dumplog import assert_same_dump, assert_same_metadata_dump
from tests.support.modern import copy_live_dir, create_topic, partition_dir, run_tool

ROLL = {"segment.ms": 100, "index.interval.bytes": 64}  # a segment per round, index entries in each


def _wait(condition, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.1)


def _dump_both(cluster, files: list[Path], *args: str) -> tuple[str, str]:
    assert files
    names = [str(f) for f in files]
    theirs = run_tool(cluster.release, "DumpLogSegments", [*args, "--files", ",".join(names)]).stdout
    result = run_ktool("dump-log", "--jobs", "1", *args, *names)
    assert result.exit_code == 0, result.output
    return result.stdout, theirs


def _rounds(cluster, topic: str, rounds: int, settings: dict, transactional: bool = False) -> None:
    """`rounds` flushes, each after segment.ms, so that each lands in a segment of its own."""
    from confluent_kafka import Producer

    conf = {"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, **settings}
    if transactional:
        conf["transactional.id"] = f"tx-{topic}"
    producer = Producer(conf)
    if transactional:
        producer.init_transactions(60)
        producer.begin_transaction()  # open across segment rolls: the snapshots hold its first offset
    for n in range(rounds):
        for i in range(8):
            value = None if (n + i) % 5 == 3 else f"value {n}.{i}".encode()
            producer.produce(topic, value, f"key {i % 4}".encode())
            assert producer.flush(30) == 0  # a batch each: index entries within the segment
        time.sleep(0.15)
    if transactional:
        producer.commit_transaction(60)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def cleaned(maintained_kafka, tmp_path_factory):
    """A compacted topic whose tombstones the cleaner has kept with their delete horizon, copied."""
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    config = {
        "cleanup.policy": "compact",
        "min.cleanable.dirty.ratio": 0.01,
        "delete.retention.ms": 86_400_000,
        "min.compaction.lag.ms": 0,
        **ROLL,
    }
    create_topic(maintained_kafka, topic, config=config)
    _rounds(maintained_kafka, topic, 5, {})
    live = partition_dir(maintained_kafka.brokers[0], topic)
    for _ in range(4):
        _wait(lambda: _cleaned_to_active(live), f"the cleaner on {topic}")
        if _stamped(live):
            break
        # A clean can keep the tombstones without stamping their batches yet (seen under load: the
        # whole log merged into one segment, no horizon): one more round makes it clean again.
        _rounds(maintained_kafka, topic, 1, {})
    else:
        raise AssertionError(f"{topic}: the cleaner kept no tombstone batch with a delete horizon")
    return maintained_kafka, copy_live_dir(live, tmp_path_factory.mktemp("cleaned") / live.name)


def _stamped(live: Path) -> bool:
    """A batch of the cleaned segments carries a delete horizon (what the comparison is about)."""
    sealed = [str(p) for p in sorted(live.glob("*.log"))[:-1]]
    result = run_ktool("dump-log", "--json", *sealed)
    batches = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return any(b.get("deleteHorizonMs") is not None for b in batches)


def _cleaned_to_active(live: Path) -> bool:
    """The cleaner checkpointed the partition up to its active segment (nothing left to clean)."""
    checkpoint = live.parent / "cleaner-offset-checkpoint"
    if not checkpoint.is_file():
        return False
    entries = dict(
        (f"{t}-{p}", int(o))
        for t, p, o in (line.split() for line in checkpoint.read_text().splitlines()[2:] if line.strip())
    )
    logs = sorted(live.glob("*.log"))
    return len(logs) > 1 and entries.get(live.name) == int(logs[-1].stem)


def test_compacted_segments_after_the_cleaner_equal_dumplogsegments(cleaned):
    cluster, copy = cleaned
    segments = sorted(copy.glob("*.log"))
    ours, theirs = _dump_both(cluster, segments, "--deep-iteration", "--print-data-log")
    assert assert_same_dump(ours, theirs) > 0
    assert "deleteHorizonMs: OptionalLong[" in theirs  # the cleaner marked the tombstones' batches
    assert " valueSize: -1 " in theirs  # and kept the tombstones until the horizon


@pytest.fixture(scope="module")
def rolled(maintained_kafka, tmp_path_factory):
    """A topic written in rounds, a segment each, by idempotent producers and a transaction open across
    three rolls; copied."""
    topic = f"rolled-{uuid.uuid4().hex[:8]}"
    create_topic(maintained_kafka, topic, config=ROLL)
    _rounds(maintained_kafka, topic, 3, {"enable.idempotence": True})
    _rounds(maintained_kafka, topic, 3, {}, transactional=True)
    _rounds(maintained_kafka, topic, 1, {"enable.idempotence": True})  # rolls past the commit marker
    live = partition_dir(maintained_kafka.brokers[0], topic)
    return maintained_kafka, copy_live_dir(live, tmp_path_factory.mktemp("rolled") / live.name)


def test_indexes_equal_dumplogsegments(rolled):
    """Kafka says `<file> is empty.` on stdout, ktool as a note on stderr."""
    cluster, copy = rolled
    sealed = sorted(copy.glob("*.log"))[:-1]  # an active segment's index is preallocated, unfinished
    files = [f for s in sealed for f in (s.with_suffix(".index"), s.with_suffix(".timeindex"))]
    ours, theirs = _dump_both(cluster, files)
    assert ours.splitlines() == [line for line in theirs.splitlines() if not line.endswith(" is empty.")]
    assert theirs.count("position: ") >= len(sealed) and theirs.count("timestamp: ") >= len(sealed)


def test_producer_snapshots_equal_dumplogsegments(rolled):
    cluster, copy = rolled
    snapshots = sorted(copy.glob("*.snapshot"))
    ours, theirs = _dump_both(cluster, snapshots)
    # ktool's one line more a file: the snapshot's version, CRC and entry count
    kept = [line for line in ours.splitlines() if not line.startswith("version: ")]
    assert kept == theirs.splitlines()
    assert len(ours.splitlines()) - len(kept) == len(snapshots) >= 6
    assert "currentTxnFirstOffset: OptionalLong[" in theirs  # a snapshot taken inside the transaction
    assert "currentTxnFirstOffset: OptionalLong.empty" in theirs


def test_cluster_metadata_log_and_snapshots_equal_dumplogsegments(maintained_kafka, tmp_path):
    topic = f"metadata-{uuid.uuid4().hex[:8]}"
    create_topic(maintained_kafka, topic, partitions=2, config={"retention.ms": 123_456})
    live = maintained_kafka.brokers[0].log_dir / "__cluster_metadata-0"

    def snapshot_with_topic() -> bool:  # the newest snapshot is taken after the topic's records
        logs = sorted(live.glob("*.log"))
        if not logs:
            return False
        text = run_ktool("dump-log", "--cluster-metadata-decoder", "--json", str(logs[-1])).stdout
        offsets = [r["offset"] for r in map(json.loads, text.splitlines()) if topic in json.dumps(r)]
        newest = max((int(p.name.split("-")[0]) for p in live.glob("*.checkpoint")), default=-1)
        return bool(offsets) and newest > max(offsets)

    _wait(snapshot_with_topic, "a KRaft snapshot holding the new topic")
    copy = copy_live_dir(live, tmp_path / live.name)
    checkpoints = sorted(copy.glob("*.checkpoint"))
    files = [*sorted(copy.glob("*.log")), checkpoints[0], checkpoints[-1]]
    ours, theirs = _dump_both(maintained_kafka, files, "--cluster-metadata-decoder")
    assert assert_same_metadata_dump(ours, theirs) > 0
    for kind in ("TOPIC_RECORD", "PARTITION_RECORD", "CONFIG_RECORD", "REGISTER_BROKER_RECORD"):
        assert ours.count(f'"type":"{kind}"') >= 2, kind  # in the log and in the newest snapshot
    assert "SNAPSHOT_HEADER_RECORD" in ours and "SNAPSHOT_FOOTER_RECORD" in ours
    assert '"unknown":true' not in ours


@pytest.mark.parametrize("kafka_release", ["4.4.0"], indirect=True)
def test_kraft_control_records_show_dumplogsegments_fields_without_a_decoder(maintained_kafka, tmp_path):
    """DumpLogSegments 4.4 prints a KRaft control record's fields with no decoder asked for
    (`LeaderChange: {…}`, `KRaftVersion {…}`, `KRaftVoters {…}`, `SnapshotHeader {…}`); ktool's payload
    holds every one of them (before: `controlType: LEADER_CHANGE(2)` alone)."""
    from tests.support.dumplog import _CONTROL_4X, _tagged_defaults, fields, lines, same_fields

    live = maintained_kafka.brokers[0].log_dir / "__cluster_metadata-0"
    copy = copy_live_dir(live, tmp_path / live.name)
    files = [*sorted(copy.glob("*.log")), sorted(copy.glob("*.checkpoint"))[-1]]
    schemas = _tagged_defaults()
    compared = set()
    for file in files:  # one at a time: each tool orders several files its own way
        theirs = run_tool(
            maintained_kafka.release, "DumpLogSegments", ["--deep-iteration", "--files", str(file)]
        )
        flags = ["--jobs", "1", "--deep-iteration", "--no-cluster-metadata-decoder"]
        result = run_ktool("dump-log", *flags, str(file))
        assert result.exit_code == 0, result.output
        mine = [x for x in lines(result.stdout) if x.startswith("| ") and " controlType: " in x]
        kafka = [(m, x) for x in lines(theirs.stdout) if x.startswith("| ") and (m := _CONTROL_4X.match(x))]
        assert len(mine) == len(kafka) > 0, file
        for ours_line, (control, line) in zip(mine, kafka, strict=True):
            assert dict(fields(ours_line))["offset"] == dict(fields(control["head"]))["offset"], line
            ours = json.loads(ours_line.split(" payload: ", 1)[1])
            same_fields(ours["data"], json.loads(control["json"]), schemas.get(ours["type"]), line)
            compared.add(control["name"])
    assert {"LeaderChange", "SnapshotHeader", "SnapshotFooter"} <= compared, compared
