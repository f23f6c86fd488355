"""A real broker with tiered storage: Kafka 4.4.0 and 3.9.2 in KRaft mode with Kafka's own
LocalTieredStorage (the `kafka-storage` test jar: 3.9.2's, and for 4.4.0, which Maven Central has none
of, 4.3.1's: tests/support/modern.local_tiered_storage) as its remote storage manager. A topic with
remote.storage.enable, small segments and 1 s local retention is written until
segments are copied and their local copies deleted; then, the broker stopped, `ktool tiered audit`
finds nothing, its replay names exactly the segments in the store's directory, dump-log decodes
`__remote_log_metadata` record for record as DumpLogSegments --remote-log-metadata-decoder does, and
`ktool scan --cluster-metadata`'s metadata table holds the same records."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.support.cli import run_ktool
from tests.tiered.scan_rows import assert_rows_are_dump_logs, scan_metadata_rows

STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"


def tiered_properties(store: Path) -> dict[str, object]:
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": STORAGE,
        "rsm.config.dir": str(store),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "remote.log.manager.task.interval.ms": "500",
        "log.retention.check.interval.ms": "500",
    }


def _store_logs(store: Path) -> list[Path]:
    return sorted((store / "kafka-tiered-storage").glob("orders-0-*/*.log"))


def _local_start(part: Path) -> int:
    bases = sorted(int(p.stem) for p in part.glob("*.log"))
    return bases[0] if bases else 0


@pytest.fixture
def tiered_kafka(kafka_release, tmp_path):
    from tests.conftest import _unavailable
    from tests.support.modern import FetchError, ModernCluster, local_tiered_storage

    try:
        plugins = local_tiered_storage(kafka_release)
    except FetchError as exc:
        _unavailable(str(exc))
    store = tmp_path / "store"
    store.mkdir()
    cluster = ModernCluster(
        kafka_release,
        "combined",
        tmp_path / "kafka",
        properties=tiered_properties(store),
        extra_classpath=plugins,
    )
    with cluster:  # started, stopped and reaped
        yield cluster, store


def test_a_tiered_topic_audits_clean_and_matches_the_store_and_dumplogsegments(tiered_kafka, tmp_path):
    from confluent_kafka import Producer

    from kafka_tools.tiered.audit import audit
    from kafka_tools.tiered.replay import COPY_FINISHED, COPY_STARTED
    from kafka_tools.tiered.store import read_store
    from tests.support.modern import create_topic, run_tool

    cluster, store = tiered_kafka
    # 4.x refuses segments under 1 MiB (KIP-1030): larger records there, fewer segments asked for
    segment, size, wanted = (8192, 126, 10) if cluster.release.major < 4 else (1 << 20, 8192, 4)
    create_topic(
        cluster,
        "orders",
        config={"remote.storage.enable": "true", "segment.bytes": segment, "local.retention.ms": 1000,
                "retention.ms": -1},
    )  # fmt: skip
    # batches smaller than a segment: the broker refuses a batch larger than segment.bytes
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5, "batch.size": segment // 4})
    for i in range(segment * (wanted + 1) // size + 1):
        producer.produce("orders", value=b"%06d" % i + b"x" * (size - 6))
        producer.poll(0)
    assert producer.flush(60) == 0
    del producer  # no client left retrying the stopped broker
    log_dir = cluster.brokers[0].log_dir
    part = log_dir / "orders-0"
    deadline, last, stable_since = time.monotonic() + 120, -1, time.monotonic()
    while time.monotonic() < deadline:  # until copies stop coming and local copies are gone
        copied = len(_store_logs(store))
        if copied != last:
            last, stable_since = copied, time.monotonic()
        elif copied >= wanted and _local_start(part) > 0 and time.monotonic() - stable_since > 4:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"{last} segments copied, local log starts at {_local_start(part)}")
    cluster.stop()

    result = run_ktool("tiered", "audit", str(log_dir), "--remote-dir", str(store), "--json")
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 0, result.output
    (summary,) = [o for o in objs if o["type"] == "summary"]
    assert summary["findings"] == 0 and summary["partitions"] == 1
    (partition,) = [o for o in objs if o["type"] == "partition"]
    # a copy the shutdown cut short may stay COPY_SEGMENT_STARTED (KAFKA-17062): seconds old, no finding
    # (and one may finish during the shutdown: the replay equals the store below, file for file)
    assert partition["copyFinished"] >= last and partition["copyStarted"] in (0, 1)
    assert partition["remoteStart"] == 0 and partition["remoteEnd"] + 1 >= partition["localStart"] > 0

    report = audit([str(log_dir)], None, int(time.time() * 1000), 900_000)
    (pa,) = report.partitions
    stored = read_store(store)[(pa.topic_id, 0)]
    segments = pa.replay.segments.values()
    replayed = {s.segment_id: (s.start_offset, s.size) for s in segments if s.state == COPY_FINISHED}
    cut_short = {s.segment_id: s for s in segments if s.state == COPY_STARTED}
    in_store = {sid: (seg.start_offset, seg.log_size) for sid, seg in stored.segments.items()}
    assert replayed == {sid: v for sid, v in in_store.items() if sid not in cut_short}
    if cut_short:  # reported as soon as it counts as stuck, with its offsets and the files it left
        (seg,) = cut_short.values()
        stuck = run_ktool("tiered", "audit", str(log_dir), "--remote-dir", str(store), "--stuck-after", "0",
                          "--json")  # fmt: skip
        assert stuck.exit_code == 1
        found = [o for o in map(json.loads, stuck.stdout.splitlines()) if o["type"] == "finding"]
        kinds = {"copy-not-finished"} | ({"leaked-files"} if seg.segment_id in in_store else set())
        assert {f["kind"] for f in found} == kinds
        assert {(f["segmentId"], f["startOffset"], f["endOffset"]) for f in found} == {
            (seg.segment_id, seg.start_offset, seg.end_offset)
        }

    # dump-log against DumpLogSegments --remote-log-metadata-decoder, record for record
    # (the broker put every event in the partition RemoteLogMetadataTopicPartitioner names: no finding)
    (number,) = pa.replay.metadata_partitions
    metadata_dir = log_dir / f"__remote_log_metadata-{number}"
    compared = 0
    for log in sorted(metadata_dir.glob("*.log")):
        ours = run_ktool("dump-log", "--deep-iteration", "--json", str(log))
        assert ours.exit_code == 0, ours.output
        records = [o for o in map(json.loads, ours.stdout.splitlines()) if o.get("type") == "record"]
        theirs = run_tool(
            cluster.release, "DumpLogSegments", ["--files", str(log), "--remote-log-metadata-decoder"]
        )
        lines = [ln for ln in theirs.stdout.splitlines() if "payload:" in ln]
        assert len(lines) == len(records) > 0
        for record, line in zip(records, lines, strict=True):
            assert int(re.search(r"offset: (\d+)", line).group(1)) == record["offset"]
            payload, data = line.split("payload: ", 1)[1], record["value"]["data"]
            assert f"state={record['value']['state']}" in payload
            assert f"eventTimestampMs={data['eventTimestampMs']}" in payload
            assert f"brokerId={data['brokerId']}" in payload
            seg_id = (data.get("remoteLogSegmentId") or {}).get("id")
            if seg_id is not None:
                assert f", id={seg_id}}}" in payload
            if payload.startswith("RemoteLogSegmentMetadata{"):
                assert f"startOffset={data['startOffset']}, endOffset={data['endOffset']}" in payload
                assert f"segmentSizeInBytes={data['segmentSizeInBytes']}" in payload
                epochs = ", ".join(f"{e['leaderEpoch']}={e['offset']}" for e in data["segmentLeaderEpochs"])
                assert f"segmentLeaderEpochs={{{epochs}}}" in payload
            compared += 1
    assert compared == summary["records"]
    # ktool scan's metadata table: the same records, row for row (scanned in process)
    rows = scan_metadata_rows(log_dir, tmp_path / "scan")
    assert assert_rows_are_dump_logs(rows, log_dir) == compared

    # the topic deleted: the broker deletes every remote segment (Kafka 3.9 writes no partition-delete
    # records: only a custom RLMM's remote partition remover would, RemoteLogMetadataManager's javadoc)
    from confluent_kafka.admin import AdminClient

    node = cluster.brokers[0]
    ready = "Found the highest copiedRemoteOffset"  # the copy task read the partition's remote state
    before = node.server_log.read_text().count(ready)
    cluster.start_node(node)
    # deleted before its RLMM cache is loaded, Kafka 3.9 refuses to delete the remote segments ("Remote
    # log metadata cache is not initialized") and leaves them all in the store: wait for the cache. And
    # deleted while a copy runs, the copy started after the deletion listed the remote segments stays
    # COPY_SEGMENT_STARTED: wait until none can run, every segment but the active one copied and gone
    # from the local log (a local segment goes only once copied; the active one is never copied, and
    # nothing is written now)
    deadline = time.monotonic() + 120
    while node.server_log.read_text().count(ready) == before or len(list(part.glob("*.log"))) > 1:
        assert time.monotonic() < deadline, (
            f"copies after the restart: local log {sorted(part.glob('*.log'))}"
        )
        time.sleep(0.2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # kept: its futures need it alive
    admin.delete_topics(["orders"])["orders"].result(60)
    deadline = time.monotonic() + 120
    while _store_logs(store) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _store_logs(store) == []
    cluster.stop()
    result = run_ktool("tiered", "audit", str(log_dir), "--remote-dir", str(store), "--json")
    assert result.exit_code == 0, result.output
    (partition,) = [o for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "partition"]
    assert (partition["copyFinished"], partition["copyStarted"]) == (0, 0), partition
    assert partition["deletedSegments"] >= last + len(cut_short)  # and what it copied after the restart
    assert partition["storedSegments"] in (None, 0) and partition["localStart"] is None
