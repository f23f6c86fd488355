"""`remote_log_snapshot` files of Kafka 3.6/3.7 (RemoteLogMetadataSnapshotFile), built here by that
class's layout (an 18-byte header, then length-prefixed RemoteLogSegmentMetadataSnapshotRecord values
from the independent encoder): no 3.6/3.7 broker runs offline, and 3.9's jars no longer hold the class.
`dump-log` prints every segment with its header's metadata partition and offset, in text and JSON, and
a damaged file is a finding at its byte, exit 1, never a traceback."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from kafka_tools.format.remote_log_snapshot import parse_remote_log_snapshot
from tests.format.kraft_encoder import frame
from tests.support.cli import run_ktool
from tests.support.tiered import COPY_FINISHED, COPY_STARTED, SCHEMAS, kafka_uuid

SNAPSHOT = SCHEMAS["RemoteLogSegmentMetadataSnapshotRecord"]


def segment(seg_id: str, start: int, end: int, epochs: dict[int, int], state: int = COPY_FINISHED) -> bytes:
    # RemoteLogMetadataSnapshotFileTest.segmentSnapshot: maxTimestamp 1, broker 1, event time 100,
    # size 1024, custom metadata {'a'}
    data = {
        "segmentId": seg_id,
        "startOffset": start,
        "endOffset": end,
        "brokerId": 1,
        "maxTimestampMs": 1,
        "eventTimestampMs": 100,
        "segmentLeaderEpochs": [{"leaderEpoch": e, "offset": o} for e, o in epochs.items()],
        "segmentSizeInBytes": 1024,
        "customMetadata": b"a",
        "remoteLogSegmentState": state,
        "txnIndexEmpty": False,
    }
    return frame(SNAPSHOT, 0, data)


def snapshot_file(partition: int, offset: int, values: list[bytes], declared: int | None = None) -> bytes:
    count = len(values) if declared is None else declared
    out = struct.pack(">hiqi", 0, partition, offset, count)
    for value in values:
        out += struct.pack(">i", len(value)) + value
    return out


def write(tmp_path: Path, data: bytes) -> Path:
    part = tmp_path / "orders-0"
    part.mkdir(exist_ok=True)
    path = part / "remote_log_snapshot"
    path.write_bytes(data)
    return path


def test_kafkas_snapshot_file_test_vector_reads_back(tmp_path: Path) -> None:
    # RemoteLogMetadataSnapshotFileTest.testWriteSnapshot: partition 0, offset 99, two segments
    a, b = kafka_uuid(1), kafka_uuid(2)
    data = snapshot_file(0, 99, [segment(a, 0, 100, {1: 0}), segment(b, 101, 200, {2: 101})])
    snap = parse_remote_log_snapshot(data)
    assert (snap.version, snap.metadata_partition, snap.metadata_partition_offset) == (0, 0, 99)
    assert snap.problems == []
    assert [(s.segment_id, s.start_offset, s.end_offset, s.segment_leader_epochs) for s in snap.segments] == [
        (a, 0, 100, {1: 0}),
        (b, 101, 200, {2: 101}),
    ]
    first = snap.segments[0]
    assert (first.position, first.state, first.segment_size_in_bytes, first.custom_metadata) == (
        18,
        "COPY_SEGMENT_FINISHED",
        1024,
        "61",
    )
    assert parse_remote_log_snapshot(b"") is None  # testReadWhenSnapshotFileIsEmpty
    assert parse_remote_log_snapshot(snapshot_file(3, 7, [])).segments == []  # testWriteEmptySnapshot


def test_dump_log_prints_a_remote_log_snapshot_in_json_and_text(tmp_path: Path) -> None:
    a, b = kafka_uuid(1), kafka_uuid(2)
    path = write(
        tmp_path,
        snapshot_file(
            5, 1234, [segment(a, 0, 99, {0: 0}), segment(b, 100, 150, {0: 100, 3: 120}, COPY_STARTED)]
        ),
    )
    result = run_ktool("dump-log", "--json", str(path))
    assert result.exit_code == 0, result.output
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    (header,) = [o for o in objs if o["type"] == "file-header"]
    assert (header["metadataPartition"], header["metadataPartitionOffset"], header["entries"]) == (5, 1234, 2)
    segments = [o for o in objs if o["type"] == "remote-segment"]
    assert [(s["segmentId"], s["startOffset"], s["endOffset"], s["state"]) for s in segments] == [
        (a, 0, 99, "COPY_SEGMENT_FINISHED"),
        (b, 100, 150, "COPY_SEGMENT_STARTED"),
    ]
    assert segments[1]["segmentLeaderEpochs"] == {"0": 100, "3": 120}
    text = run_ktool("dump-log", str(path))
    assert text.exit_code == 0, text.output
    assert f"segmentId: {b} startOffset: 100 endOffset: 150 state: COPY_SEGMENT_STARTED" in text.stdout
    assert "segmentLeaderEpochs: {0=100,3=120}" in text.stdout
    assert "metadataPartition: 5 metadataPartitionOffset: 1234" in text.stdout


def test_a_damaged_snapshot_is_a_finding_at_its_byte(tmp_path: Path) -> None:
    good = segment(kafka_uuid(1), 0, 99, {0: 0})
    cases = {
        "truncated entry": (snapshot_file(0, 9, [good])[:-5], 18, "entry length"),
        "count": (snapshot_file(0, 9, [good], declared=3), 14, "declares 3 entries, the file holds 1"),
        "version": (struct.pack(">h", 1) + snapshot_file(0, 9, [good])[2:], 0, "version 1"),
        "short header": (b"\x00\x00\x00", 0, "shorter than the 18-byte header"),
        "an update record": (
            snapshot_file(
                0,
                9,
                [
                    good,
                    frame(
                        SCHEMAS["RemotePartitionDeleteMetadataRecord"],
                        0,
                        {
                            "topicIdPartition": {"name": "t", "id": kafka_uuid(3), "partition": 0},
                            "brokerId": 1,
                            "eventTimestampMs": 1,
                            "remotePartitionDeleteState": 0,
                        },
                    ),
                ],
            ),  # fmt: skip
            18 + 4 + len(good) + 4,
            "not a segment snapshot record",
        ),
    }
    for name, (data, position, message) in cases.items():
        path = write(tmp_path, data)
        result = run_ktool("dump-log", "--json", str(path))
        assert result.exit_code == 1, (name, result.output)
        assert "Traceback" not in result.output
        problems = [o for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "problem"]
        assert [(p["position"], message in p["message"]) for p in problems] == [(position, True)], (
            name,
            problems,
        )


def test_validate_takes_the_snapshot_for_a_partition_file_not_an_orphan(tmp_path: Path) -> None:
    path = write(tmp_path, snapshot_file(0, 9, [segment(kafka_uuid(1), 0, 99, {0: 0})]))
    result = run_ktool("validate", str(path.parent))
    assert result.exit_code == 0, result.output
    assert "orphan" not in result.output
