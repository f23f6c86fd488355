"""`ktool tiered audit` on log dirs and stores built as a broker and LocalTieredStorage leave them:
a healthy partition gives no finding, then each finding kind from one altered event or file."""

from __future__ import annotations

import json
import time

import pytest

from kafka_tools.format.remote_log_partitioner import metadata_partition
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.render.contract import problems
from tests.support.cli import run_ktool
from tests.support.tiered import (
    COPY_FINISHED,
    COPY_STARTED,
    DELETE_FINISHED,
    DELETE_PARTITION_FINISHED,
    DELETE_PARTITION_STARTED,
    DELETE_STARTED,
    MARKED,
    Metadata,
    kafka_uuid,
    write_local,
    write_metadata,
    write_store,
)

HOUR = 3_600_000


@pytest.fixture
def now() -> int:
    return int(time.time() * 1000)


class Cluster:
    """A broker's log dir with orders-0 tiered: remote 0-29 in three segments, local 30-39."""

    def __init__(self, tmp_path, now: int) -> None:
        self.log_dir = tmp_path / "kafka-logs"
        self.store = tmp_path / "store"
        self.topic_id = kafka_uuid(7)
        self.meta = Metadata("orders", self.topic_id)
        self.now = now
        self.ids = [kafka_uuid(100 + i) for i in range(3)]
        self.sizes = {}
        for i, seg in enumerate(self.ids):
            self.meta.copied(seg, i * 10, i * 10 + 9, now - 3 * HOUR + i, size=1000 + i)
            self.sizes[seg] = (i * 10, 1000 + i)
        self.local_start = 30
        self.epochs = [(0, 0)]
        self.number = metadata_partition(self.topic_id, 0)

    def write(self):
        write_metadata(self.log_dir, self.number, self.meta.values)
        write_local(self.log_dir, self.topic_id, self.local_start, 40, self.epochs)
        write_store(self.store, "orders", 0, self.topic_id, self.sizes)

    def audit(self, *extra: str):
        self.write()
        result = run_ktool(
            "tiered", "audit", str(self.log_dir), "--remote-dir", str(self.store), "--json", *extra
        )
        lines = result.stdout.splitlines()
        assert problems("tiered audit", lines) == [], lines
        objs = [json.loads(line) for line in lines]
        return result, objs

    def findings(self, *extra: str) -> list[dict]:
        result, objs = self.audit(*extra)
        found = [o for o in objs if o["type"] == "finding"]
        assert result.exit_code == (1 if found else 0), result.output
        return found


@pytest.fixture
def cluster(tmp_path, now) -> Cluster:
    return Cluster(tmp_path, now)


def test_a_healthy_partition_has_no_finding(cluster):
    result, objs = cluster.audit()
    assert result.exit_code == 0, result.output
    (part,) = [o for o in objs if o["type"] == "partition"]
    assert (part["copyFinished"], part["remoteStart"], part["remoteEnd"], part["localStart"]) == (
        3,
        0,
        29,
        30,
    )
    assert part["storedSegments"] == 3 and part["remoteBytes"] == 3003
    assert objs[-1] == {
        "type": "summary", "partitions": 1, "metadataPartitions": 1, "records": 6, "findings": 0, "errors": 0,
    }  # fmt: skip
    text = run_ktool("tiered", "audit", str(cluster.log_dir), "--remote-dir", str(cluster.store))
    assert text.exit_code == 0 and "orders-0" in text.stdout and "0 findings" in text.stdout


def test_a_copy_stopped_half_way_is_reported_with_its_offsets_and_leaked_files(cluster):
    stuck = kafka_uuid(200)
    cluster.meta.add(stuck, 30, 39, cluster.now - 2 * HOUR)
    cluster.sizes[stuck] = (30, 500)
    found = cluster.findings()
    assert {f["kind"] for f in found} == {"copy-not-finished", "leaked-files"}
    for f in found:
        assert (f["segmentId"], f["startOffset"], f["endOffset"]) == (stuck, 30, 39)
    assert "2 h ago" in found[0]["message"]


def test_a_copy_in_progress_is_not_a_finding(cluster):
    young = kafka_uuid(201)
    cluster.meta.add(young, 30, 39, cluster.now - 5_000)
    cluster.sizes[young] = (30, 500)
    assert cluster.findings() == []
    assert [f["kind"] for f in cluster.findings("--stuck-after", "1")] == [
        "copy-not-finished",
        "leaked-files",
    ]


def test_a_delete_not_finished_is_reported(cluster):
    cluster.meta.update(cluster.ids[0], DELETE_STARTED, cluster.now - HOUR)
    (f,) = cluster.findings()
    assert (f["kind"], f["segmentId"], f["startOffset"]) == ("delete-not-finished", cluster.ids[0], 0)


def test_illegal_transitions_are_reported_at_their_record(cluster):
    cluster.meta.update(cluster.ids[1], COPY_STARTED, cluster.now - HOUR)  # FINISHED -> STARTED
    found = cluster.findings()
    assert [f["kind"] for f in found] == ["illegal-transition"]
    assert found[0]["where"] == f"__remote_log_metadata-{cluster.number}@6"
    assert "COPY_SEGMENT_FINISHED -> COPY_SEGMENT_STARTED" in found[0]["message"]


def test_an_event_for_a_deleted_segment_is_reported(cluster):
    seg = cluster.ids[0]
    cluster.meta.update(seg, DELETE_STARTED, cluster.now - HOUR)
    cluster.meta.update(seg, DELETE_FINISHED, cluster.now - HOUR)
    cluster.meta.update(seg, COPY_FINISHED, cluster.now - HOUR)
    del cluster.sizes[seg]
    found = cluster.findings()
    assert [f["kind"] for f in found] == ["unknown-segment"]
    assert found[0]["segmentId"] == seg


def test_gaps_and_overlaps_between_remote_segments(cluster):
    cluster.meta.copied(kafka_uuid(300), 25, 34, cluster.now - HOUR)  # overlaps 20-29
    found = cluster.findings()
    assert [f["kind"] for f in found] == ["overlap", "missing-in-store"]
    assert (found[0]["startOffset"], found[0]["endOffset"]) == (25, 34)


def test_a_gap_between_remote_and_local_is_reported(cluster):
    cluster.local_start = 35
    (f,) = cluster.findings()
    assert f["kind"] == "gap-to-local" and "offsets 30-34" in f["message"]


def test_a_gap_between_remote_segments_is_reported(cluster):
    cluster.meta.update(cluster.ids[1], DELETE_STARTED, cluster.now - 1000)
    cluster.meta.update(cluster.ids[1], DELETE_FINISHED, cluster.now - 1000)
    del cluster.sizes[cluster.ids[1]]
    (f,) = cluster.findings()
    assert f["kind"] == "gap" and "offsets 10-19" in f["message"]


def test_a_segment_outside_the_epoch_lineage_is_reported(cluster):
    cluster.epochs = [(0, 0), (2, 20)]  # epoch 1 never led; segment 20-29 says it was written in epoch 1
    cluster.meta.values.clear()
    for i, seg in enumerate(cluster.ids):
        cluster.meta.copied(
            seg, i * 10, i * 10 + 9, cluster.now - HOUR, size=1000 + i, epochs={i % 2: i * 10}
        )
    found = cluster.findings()
    assert [f["kind"] for f in found] == ["epoch-lineage", "epoch-lineage"]
    assert [f["startOffset"] for f in found] == [10, 20]


def test_store_differences(cluster):
    cluster.sizes[cluster.ids[0]] = (0, 999)  # size differs
    del cluster.sizes[cluster.ids[1]]  # missing
    stray = kafka_uuid(400)
    cluster.sizes[stray] = (50, 10)  # no segment names it
    found = cluster.findings()
    kinds = {f["kind"]: f for f in found}
    assert set(kinds) == {"size-mismatch", "missing-in-store", "unreferenced-files"}
    assert kinds["size-mismatch"]["segmentId"] == cluster.ids[0]
    assert kinds["missing-in-store"]["segmentId"] == cluster.ids[1]
    assert stray in kinds["unreferenced-files"]["message"]


def test_partition_delete_followed_to_finished_with_the_store_empty(cluster):
    for seg in cluster.ids:
        cluster.meta.update(seg, DELETE_STARTED, cluster.now - 10)
        cluster.meta.update(seg, DELETE_FINISHED, cluster.now - 9)
    for state in (MARKED, DELETE_PARTITION_STARTED, DELETE_PARTITION_FINISHED):
        cluster.meta.partition_delete(state, cluster.now - 5)
    cluster.sizes.clear()
    result, objs = cluster.audit()
    assert result.exit_code == 0, result.output
    (part,) = [o for o in objs if o["type"] == "partition"]
    assert (part["deleteState"], part["deletedSegments"], part["copyFinished"]) == (
        "DELETE_PARTITION_FINISHED", 3, 0,
    )  # fmt: skip


def test_partition_delete_stuck_or_out_of_order(cluster):
    cluster.meta.partition_delete(DELETE_PARTITION_STARTED, cluster.now - HOUR)  # never MARKED
    cluster.meta.partition_delete(MARKED, cluster.now - HOUR)
    found = cluster.findings()
    assert [f["kind"] for f in found] == ["illegal-transition", "partition-delete-not-finished"]
    assert "none -> DELETE_PARTITION_STARTED" in found[0]["message"]


def test_events_in_the_wrong_metadata_partition(cluster):
    cluster.number = (cluster.number + 1) % 50
    (f,) = cluster.findings("--metadata-partitions", "50")
    assert f["kind"] == "wrong-metadata-partition"


def test_no_partition_is_judged_by_a_guessed_metadata_partition_count(cluster):
    """Log dirs without a KRaft metadata log do not say remote.log.metadata.topic.num.partitions (50 is
    only its default): one line says so and no event is judged to be in the wrong metadata partition."""
    cluster.number = (cluster.number + 1) % 50
    result, objs = cluster.audit()
    assert [o for o in objs if o["type"] == "finding"] == [] and result.exit_code == 0, result.output
    (line,) = [line for line in result.stderr.splitlines() if "__remote_log_metadata partitions" in line]
    assert line == (
        "ktool: the number of __remote_log_metadata partitions cannot be read from the log dirs (no KRaft "
        f"metadata log among them, as on a ZooKeeper broker); 1 present, the highest "
        f"__remote_log_metadata-{cluster.number}: which metadata partition a partition's events belong in "
        "is not checked (--metadata-partitions N does)"
    )


def test_an_undecodable_metadata_record_is_one_finding(cluster):
    cluster.meta.values.append(cluster.meta.values[0] + b"\x09")
    found = cluster.findings()
    assert [f["kind"] for f in found] == ["metadata-undecodable"]
    assert found[0]["where"] == f"__remote_log_metadata-{cluster.number}@6"
    assert "garbage" in found[0]["message"]


def test_a_missing_log_dir_or_store_is_exit_3(tmp_path, cluster):
    cluster.write()
    result = run_ktool("tiered", "audit", str(tmp_path / "nope"))
    assert result.exit_code == 3 and "nope: no such file or directory" in result.stderr
    result = run_ktool("tiered", "audit", str(cluster.log_dir), "--remote-dir", str(tmp_path / "nostore"))
    assert result.exit_code == 3 and "nostore" in result.stderr and "Traceback" not in result.output


def test_a_store_partition_whose_metadata_is_elsewhere_is_not_judged(cluster, tmp_path):
    other = kafka_uuid(500)
    write_store(cluster.store, "payments", 0, other, {kafka_uuid(501): (0, 10)})
    if metadata_partition(other, 0) == cluster.number:
        pytest.skip("same metadata partition by chance")
    assert cluster.findings("--metadata-partitions", "50") == []
    result = run_ktool(
        "tiered",
        "audit",
        str(cluster.log_dir),
        "--remote-dir",
        str(cluster.store),
        "--metadata-partitions",
        "50",
    )
    assert "payments-0-" in result.stderr and "not in the log dirs given" in result.stderr


def test_a_metadata_batch_failing_its_crc_is_a_finding_naming_file_position_and_offset(tmp_path):
    """A damaged `__remote_log_metadata` segment: its bad batch named with its file, position and base
    offset (crc-mismatch, as validate calls it), not replayed."""
    import shutil

    from tests.independent import FIXTURES

    part = tmp_path / "__remote_log_metadata-0"
    part.mkdir()
    damaged = FIXTURES / "generated" / "corrupt" / "v2-flipped-record-byte-0" / "00000000000000000000.log"
    shutil.copy(damaged, part / damaged.name)
    (bad,) = [e for e in iter_log_entries(part / damaged.name) if not e.is_valid]
    result = run_ktool("tiered", "audit", "--json", str(tmp_path))
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    crc = [o for o in objs if o.get("kind") == "crc-mismatch"]
    assert result.exit_code == 1
    assert [(o["where"], o["position"], o["offset"]) for o in crc] == [
        (str(part / damaged.name), bad.position, bad.base_offset)
    ]
    assert "batch at offset 5: stored crc" in crc[0]["message"]
    assert "nothing from here on is replayed" in crc[0]["message"]
    text = run_ktool("tiered", "audit", str(tmp_path))
    assert text.exit_code == 1 and f"byte {bad.position}: batch at offset 5" in text.output


@pytest.mark.parametrize(("where", "at"), [("header", 35), ("records", -1)])
def test_the_replay_stops_at_a_damaged_metadata_batch_as_the_brokers_recovery(cluster, tmp_path, where, at):
    """Three segments copied, their events two to a batch: the second batch damaged, the third
    (segment 2's events) comes after the cut and is not replayed either, so nothing is judged on it."""
    part = write_metadata(cluster.log_dir, cluster.number, cluster.meta.values, per_batch=2)
    log = part / "00000000000000000000.log"
    (second,) = [e for e in iter_log_entries(log) if e.base_offset == 2]
    data = bytearray(log.read_bytes())
    data[second.position + (second.size - 1 if at < 0 else at)] ^= 0x01
    log.write_bytes(bytes(data))
    result = run_ktool("tiered", "audit", "--json", str(cluster.log_dir))
    assert result.exit_code == 1, (where, result.output)
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    findings = [o for o in objs if o["type"] == "finding"]
    assert [(o["kind"], o["where"], o["position"], o["offset"]) for o in findings] == [
        ("crc-mismatch", str(log), second.position, 2)
    ]  # no gap 10-19 judged from the events after the damage
    (orders,) = [o for o in objs if o["type"] == "partition"]
    assert (orders["copyFinished"], orders["remoteEnd"]) == (1, 9)
    assert objs[-1]["records"] == 2 and objs[-1]["errors"] == 1


def test_partition_directories_kafka_renamed_are_said_once_not_read(cluster):
    """A deleted topic's `topic-N.<uuid>-delete` (kept file.delete.delay.ms), a `-stray` and a `-future`
    directory are Kafka's, not unknown directories: one line says them, by state."""
    cluster.write()
    for name in ("gone-0.0123456789abcdef0123456789abcdef-delete",
                 "gone-1.0123456789abcdef0123456789abcdee-delete",
                 "old-0.3e5c1d2f0a9b4c7d8e6f5a4b3c2d1e0f-stray",
                 "orders-0.5e5c1d2f0a9b4c7d8e6f5a4b3c2d1e0f-future"):  # fmt: skip
        (cluster.log_dir / name).mkdir()
        (cluster.log_dir / name / "00000000000000000000.log").write_bytes(b"")
    result, objs = cluster.audit("--metadata-partitions", "50")
    assert [o for o in objs if o["type"] == "finding"] == [] and result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "warning: 4 partition directories Kafka renamed, not read: 2 awaiting deletion (-delete), "
        "1 being moved in from another log dir (-future), 1 set aside as stray (-stray)"
    ]


def test_a_metadata_segment_that_cannot_be_read_is_said_as_validate_says_it(tmp_path, cluster):
    """`__remote_log_metadata-N` is listed through log/files (the one partition model): a dangling link
    named as a segment is one line in validate's words, exit 3, not a FIFO's words or a traceback."""
    cluster.write()
    part = cluster.log_dir / f"__remote_log_metadata-{cluster.number}"
    (part / "00000000000000000100.log").symlink_to(tmp_path / "gone.log")
    result = run_ktool("tiered", "audit", str(cluster.log_dir))
    assert result.exit_code == 3, result.output
    line = f"{part / '00000000000000000100.log'}: a dangling symbolic link (a segment of {part.name} cannot"
    assert line in result.stderr and "Traceback" not in result.stderr
