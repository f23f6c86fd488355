"""`ktool retention` and `--compaction` on logs built with kafka-python's record builders, on the
fixtures and on ../shared/realworld: the rules of each broker generation, the settings' sources, the
cleaner's arithmetic, bad input, and that nothing in a log dir is ever written."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from tests.independent import FIXTURES, REALWORLD, read_with_kafka_python
from tests.support.cli import run_ktool

HOUR = 3_600_000
DAY = 24 * HOUR
NOW = 1_800_000_000_000  # --now for every test: ages are exact


def v2_batch(
    base: int, records: list[tuple[int, bytes | None, bytes | None]], pid: int = -1, txn: bool = False
) -> bytes:
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=txn,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        batch_size=1 << 20,
    )
    for i, (ts, key, value) in enumerate(records):
        b.append(i, timestamp=ts, key=key, value=value, headers=[])
    buf = b.build()
    struct.pack_into(">q", buf, 0, base)  # the base offset is outside the CRC
    return bytes(buf)


def v0_message(offset: int, key: bytes | None, value: bytes | None) -> bytes:
    b = LegacyRecordBatchBuilder(magic=0, compression_type=0, batch_size=1 << 20)
    b.append(offset, timestamp=None, key=key, value=value)
    return bytes(b.build())


def write_segment(
    part: Path, base: int, data: bytes, *, max_ts: int | None = None, mtime_ms: int = NOW
) -> Path:
    part.mkdir(parents=True, exist_ok=True)
    log = part / f"{base:020d}.log"
    log.write_bytes(data)
    if max_ts is not None:
        (part / f"{base:020d}.timeindex").write_bytes(struct.pack(">qi", max_ts, 0) + bytes(24))  # zero tail
    for f in part.glob(f"{base:020d}.*"):
        os.utime(f, (mtime_ms / 1000, mtime_ms / 1000))
    return log


def checkpoint(logdir: Path, name: str, entries: dict[tuple[str, int], int]) -> None:
    lines = ["0", str(len(entries)), *(f"{t} {p} {o}" for (t, p), o in entries.items())]
    (logdir / name).write_text("\n".join(lines) + "\n")


def records(n: int, ts: int, key: str = "k") -> list[tuple[int, bytes, bytes]]:
    return [(ts, f"{key}{i}".encode(), b"v" * 50) for i in range(n)]


def v2_log(logdir: Path, topic: str, timestamps: list[int], mtime_ms: int = NOW, index: bool = True) -> Path:
    """A v2 partition: segment i holds 10 records with timestamp timestamps[i], offsets 10*i.."""
    part = logdir / f"{topic}-0"
    for i, ts in enumerate(timestamps):
        write_segment(
            part, 10 * i, v2_batch(10 * i, records(10, ts)), max_ts=ts if index else None, mtime_ms=mtime_ms
        )
    return part


def preview(*args: str) -> tuple[int, list[dict], str]:
    result = run_ktool("retention", "--json", "--now", str(NOW), *args)
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    return result.exit_code, lines, result.stderr


def part_of(lines: list[dict], name: str) -> dict:
    return next(o for o in lines if o["type"] == "partition" and o["dir"] == name)


def actions(lines: list[dict], name: str) -> list[tuple[int, str | None]]:
    return [(o["baseOffset"], o["deletedBy"]) for o in lines if o["type"] == "segment" and o["dir"] == name]


def tree(root: Path) -> dict[str, tuple[int, int, bytes]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------- delete rules by generation


def test_modern_logs_expire_by_the_last_timeindex_entry_not_the_mtime(tmp_path):
    # Files touched just now, records 10 and 5 days old, then fresh ones: a 0.10.1+ broker deletes the
    # two old segments; a 0.9 broker (mtime) would delete nothing.
    v2_log(tmp_path, "t", [NOW - 10 * DAY, NOW - 5 * DAY, NOW - HOUR, NOW])
    code, lines, _ = preview("--retention-hours", "48", str(tmp_path))
    assert code == 0
    p = part_of(lines, "t-0")
    assert p["rule"].startswith("timestamp") and p["ruleBasis"] == "largest record timestamp"
    assert actions(lines, "t-0") == [(0, "time"), (10, "time"), (20, None), (30, None)]
    seg = [o for o in lines if o["type"] == "segment"]
    assert seg[0]["largestTimestamp"] == NOW - 10 * DAY and seg[0]["timestampSource"] == "timeindex"
    assert (p["newLogStartOffset"], p["recordsFreed"], p["segmentsDeleted"]) == (20, 20, 2)
    assert p["bytesFreed"] == sum(o["size"] for o in seg[:2])

    code, lines, _ = preview("--retention-hours", "48", "--broker-version", "0.9.0.1", str(tmp_path))
    assert part_of(lines, "t-0")["rule"] == "mtime"
    assert actions(lines, "t-0") == [(0, None), (10, None), (20, None), (30, None)]


def test_without_a_timeindex_entry_the_batches_give_the_largest_timestamp(tmp_path):
    part = v2_log(tmp_path, "t", [NOW - 10 * DAY, NOW], index=False)
    (part / f"{0:020d}.timeindex").write_bytes(bytes(120))  # preallocated, no entry
    code, lines, _ = preview("--retention-hours", "1", str(tmp_path))
    assert code == 0
    seg = [o for o in lines if o["type"] == "segment"]
    assert (seg[0]["largestTimestamp"], seg[0]["timestampSource"]) == (NOW - 10 * DAY, "batches")
    assert actions(lines, "t-0") == [(0, "time"), (10, None)]


def test_old_logs_expire_by_mtime_and_the_active_segment_goes_too_after_a_roll(tmp_path):
    part = tmp_path / "old-0"
    for i in range(3):
        data = b"".join(v0_message(10 * i + j, b"k", b"v") for j in range(10))
        write_segment(part, 10 * i, data, mtime_ms=NOW - 3 * DAY + i)
    code, lines, _ = preview("--retention-hours", "24", str(tmp_path))
    p = part_of(lines, "old-0")
    assert p["rule"] == "mtime" and "magic 0" in p["ruleWhy"]
    assert actions(lines, "old-0") == [(0, "time"), (10, "time"), (20, "time")]
    assert p["rolled"] and p["newLogStartOffset"] == 30 == p["logEndOffset"]


def test_an_empty_active_segment_is_never_deleted(tmp_path):
    part = v2_log(tmp_path, "t", [NOW - 10 * DAY])
    write_segment(part, 10, b"", mtime_ms=NOW - 10 * DAY)
    code, lines, _ = preview("--retention-hours", "1", str(tmp_path))
    assert actions(lines, "t-0") == [(0, "time"), (10, None)]
    kept = [o for o in lines if o["type"] == "segment" and o["action"] == "keep"]
    assert "empty" in kept[0]["reason"]
    assert not part_of(lines, "t-0")["rolled"]


def test_size_rule_deletes_oldest_first_while_the_log_stays_at_or_above_the_limit(tmp_path):
    part = v2_log(tmp_path, "t", [NOW] * 5)
    size = (part / f"{0:020d}.log").stat().st_size
    code, lines, _ = preview("--retention-bytes", str(2 * size + 1), str(tmp_path))
    # 5 segments; over by 3*size-1: two segments go (2*size), a third would leave the log under the limit
    assert actions(lines, "t-0") == [(0, "size"), (10, "size"), (20, None), (30, None), (40, None)]
    code, lines, _ = preview("--retention-bytes", "-1", "--retention-ms", "-1", str(tmp_path))
    assert [a for _, a in actions(lines, "t-0")] == [None] * 5
    assert "retention.bytes -1: no size limit" in part_of(lines, "t-0")["notes"]


def test_never_past_the_high_watermark(tmp_path):
    v2_log(tmp_path, "t", [NOW - 10 * DAY] * 4)
    checkpoint(tmp_path, "replication-offset-checkpoint", {("t", 0): 25})
    code, lines, _ = preview("--retention-hours", "1", str(tmp_path))
    p = part_of(lines, "t-0")
    assert (p["highWatermark"], p["highWatermarkSource"]) == (25, "replication-offset-checkpoint")
    # segment 10..19 ends at 20 <= 25: goes; 20..29 holds 25: stays
    assert actions(lines, "t-0") == [(0, "time"), (10, "time"), (20, None), (30, None)]
    kept = [o for o in lines if o["type"] == "segment" and o["action"] == "keep"]
    assert "high watermark 25" in kept[0]["reason"]
    # a 0.10.1 broker had no such bound
    code, lines, _ = preview("--retention-hours", "1", "--broker-version", "0.10.1", str(tmp_path))
    assert [a for _, a in actions(lines, "t-0")] == ["time"] * 4


def test_compacted_topics_are_not_deleted_by_time_or_size_except_below_the_log_start(tmp_path):
    v2_log(tmp_path, "c", [NOW - 10 * DAY] * 3)
    props = tmp_path.parent / "server.properties"
    props.write_text("log.cleanup.policy=compact\nlog.retention.minutes=1\n")
    checkpoint(tmp_path, "log-start-offset-checkpoint", {("c", 0): 12})
    code, lines, _ = preview("--server-properties", str(props), str(tmp_path))
    p = part_of(lines, "c-0")
    assert p["settings"]["cleanupPolicy"] == {"value": "compact", "source": f"{props} (log.cleanup.policy)"}
    assert p["settings"]["retentionMs"] == {"value": 60_000, "source": f"{props} (log.retention.minutes)"}
    assert actions(lines, "c-0") == [(0, "log-start-offset"), (10, None), (20, None)]
    assert p["logStartOffset"] == 12
    code, lines, _ = preview("--server-properties", str(props), "--broker-version", "0.9", str(tmp_path))
    assert [a for _, a in actions(lines, "c-0")] == [None] * 3
    assert any("skips compacted" in n for n in part_of(lines, "c-0")["notes"])


def test_compact_delete_topics_are_both_deleted_and_cleaned(tmp_path):
    v2_log(tmp_path, "cd", [NOW - 10 * DAY, NOW, NOW])
    props = tmp_path.parent / "server.properties"
    props.write_text("log.cleanup.policy=compact,delete\nlog.retention.ms=3600000\n")
    code, lines, _ = preview("--compaction", "--server-properties", str(props), str(tmp_path))
    p = part_of(lines, "cd-0")
    assert actions(lines, "cd-0") == [(0, "time"), (10, None), (20, None)]
    assert p["compaction"] is not None and p["compaction"]["firstUncleanableOffset"] == 20


def test_flags_beat_server_properties_and_each_setting_names_its_source(tmp_path):
    v2_log(tmp_path, "t", [NOW])
    props = tmp_path.parent / "server.properties"
    props.write_text("log.retention.hours=10\nlog.retention.ms=5000\nlog.retention.bytes=999\n")
    code, lines, _ = preview("--server-properties", str(props), "--retention-bytes", "7", str(tmp_path))
    s = part_of(lines, "t-0")["settings"]
    assert s["retentionMs"] == {"value": 5000, "source": f"{props} (log.retention.ms)"}  # ms beats hours
    assert s["retentionBytes"] == {"value": 7, "source": "--retention-bytes"}
    assert s["cleanupPolicy"] == {"value": "delete", "source": "Kafka default"}


def test_topic_overrides_come_from_zookeeper(tmp_path, zk_root):
    v2_log(tmp_path, "t", [NOW - 3 * HOUR, NOW])
    zk_root.write("/config/topics/t", json.dumps({"version": 1, "config": {"retention.ms": "7200000"}}))
    code, lines, _ = preview("--zookeeper", zk_root.connect, "--retention-bytes", "-1", str(tmp_path))
    assert code == 0
    s = part_of(lines, "t-0")["settings"]
    assert s["retentionMs"] == {"value": 7_200_000, "source": "zookeeper /config/topics/t"}
    assert actions(lines, "t-0") == [(0, "time"), (10, None)]


# --------------------------------------------------------------------------- compaction


def test_compaction_counts_what_a_clean_drops(tmp_path):
    part = tmp_path / "c-0"
    seg0 = v2_batch(0, [(NOW, b"k1", b"a"), (NOW, b"k2", b"b"), (NOW, b"gone", None)])
    seg1 = v2_batch(3, [(NOW, b"k1", b"c"), (NOW, b"k4", b"x")])
    seg2 = v2_batch(5, [(NOW, b"k4", b"y"), (NOW, b"k1", None)])
    seg3 = v2_batch(7, [(NOW, b"k2", b"z")])  # active: never cleaned, never in the offset map
    write_segment(part, 0, seg0, mtime_ms=NOW - 10 * DAY)
    write_segment(part, 3, seg1, mtime_ms=NOW - 5 * DAY)
    write_segment(part, 5, seg2)
    write_segment(part, 7, seg3)
    props = tmp_path.parent / "server.properties"
    props.write_text("log.cleanup.policy=compact\nlog.cleaner.delete.retention.ms=86400000\n")
    checkpoint(tmp_path, "cleaner-offset-checkpoint", {("c", 0): 5})
    # before KIP-534 (3.1) a v2 tombstone's horizon was its segment's mtime, as for v0/v1
    args = ("--compaction", "--broker-version", "3.0", "--server-properties", str(props), str(tmp_path))
    code, lines, _ = preview(*args)
    c = part_of(lines, "c-0")["compaction"]
    sizes = [len(seg0), len(seg1), len(seg2), len(seg3)]
    assert (c["firstDirtyOffset"], c["firstDirtySource"]) == (5, "cleaner-offset-checkpoint")
    assert (c["cleanBytes"], c["dirtyBytes"]) == (sizes[0] + sizes[1], sizes[2])
    assert c["dirtyRatio"] == round(sizes[2] / sum(sizes[:3]), 6)
    assert c["wouldClean"] is (sizes[2] / sum(sizes[:3]) > 0.5)
    # dirty map: k4@5, k1@6 (tombstone). Dropped: k1@0, k1@3, k4@4 (superseded); the tombstone `gone`
    # lies in segment 0, last modified before the horizon (segment 3's mtime - 1 day): dropped too.
    assert (c["superseded"], c["tombstonesExpired"], c["tombstonesKept"]) == (3, 1, 1)
    assert c["recordsExamined"] == 7 and c["distinctKeys"] == 2


def _stamped(batch: bytes, horizon: int | None = None, control: bool = False) -> bytes:
    """A v2 batch with KIP-534's delete horizon (attribute bit 6, in baseTimestamp) or made a control
    batch (bit 5), its CRC-32C recomputed."""
    from kafka.record.util import calc_crc32c

    buf = bytearray(batch)
    attributes = (
        struct.unpack_from(">h", buf, 21)[0] | (0x40 if horizon is not None else 0) | (0x20 if control else 0)
    )
    struct.pack_into(">h", buf, 21, attributes)
    if horizon is not None:
        struct.pack_into(">q", buf, 27, horizon)
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


def _commit(base: int, pid: int, horizon: int) -> bytes:
    marker = [(NOW, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0))]  # COMMIT, coordinator epoch 0
    return _stamped(v2_batch(base, marker, pid=pid, txn=True), horizon, control=True)


def test_compaction_follows_each_v2_batchs_delete_horizon(tmp_path):
    """KIP-534 (Cleaner.shouldRetainRecord, CleanedTransactionMetadata): a tombstone goes once `--now`
    reaches its batch's horizon (an unstamped one stays: this clean stamps it); a marker goes past its
    horizon only when no batch of its transaction is left and it is not its producer's last batch."""
    part = tmp_path / "c-0"
    past, future = NOW - 1, NOW + DAY
    seg0 = _stamped(v2_batch(0, [(NOW, b"k1", b"a"), (NOW, b"k2", None)]), past)  # k2's tombstone goes
    seg0 += v2_batch(2, [(NOW, b"k3", None)])  # unstamped: stays
    seg0 += _stamped(v2_batch(3, [(NOW, b"k4", None)]), future)  # not yet: stays
    seg0 += v2_batch(4, [(NOW, b"k5", b"t")], pid=5, txn=True) + _commit(5, 5, past)  # its data is left
    seg0 += _commit(6, 6, past)  # nothing left, producer 6 wrote later: goes
    seg0 += _commit(7, 7, past)  # nothing left, but producer 7's last batch: stays
    write_segment(part, 0, seg0)
    write_segment(part, 8, v2_batch(8, [(NOW, b"k6", b"u")], pid=6, txn=True))  # active
    props = tmp_path.parent / "server.properties"
    props.write_text("log.cleanup.policy=compact\n")
    code, lines, _ = preview(
        "--compaction", "--server-properties", str(props), "--now", str(NOW), str(tmp_path)
    )
    c = part_of(lines, "c-0")["compaction"]
    assert (c["tombstonesExpired"], c["tombstonesKept"]) == (1, 2)
    assert (c["controlBatches"], c["markersExpired"]) == (3, 1)
    code, lines, _ = preview(
        "--compaction",
        "--broker-version",
        "3.0",
        "--server-properties",
        str(props),
        "--now",
        str(NOW),
        str(tmp_path),
    )
    c = part_of(lines, "c-0")["compaction"]  # before 3.1: no clean segment, no mtime horizon passed
    assert (c["tombstonesExpired"], c["tombstonesKept"], c["markersExpired"]) == (0, 3, 0)


def test_compaction_drops_aborted_transactions(tmp_path):
    part = tmp_path / "c-0"
    data = v2_batch(0, [(NOW, b"a", b"1"), (NOW, b"b", b"2")], pid=7, txn=True)
    data += v2_batch(2, [(NOW, b"c", b"3")])
    write_segment(part, 0, data)
    write_segment(part, 3, v2_batch(3, [(NOW, b"d", b"4")]))
    # .txnindex entry: version, producerId, firstOffset, lastOffset, lastStableOffset
    (part / f"{0:020d}.txnindex").write_bytes(struct.pack(">hqqqq", 0, 7, 0, 1, 2))
    code, lines, _ = preview("--compaction", str(tmp_path))
    assert part_of(lines, "c-0")["compaction"] is None  # a delete topic: no compaction preview
    props = tmp_path.parent / "server.properties"
    props.write_text("log.cleanup.policy=compact\n")
    code, lines, _ = preview("--compaction", "--server-properties", str(props), str(tmp_path))
    c = part_of(lines, "c-0")["compaction"]
    assert (c["aborted"], c["superseded"], c["recordsExamined"]) == (2, 0, 3)


def _frames(data: bytes) -> list[int]:
    """Entry start positions (offset int64, size int32, then size bytes): the framing of every generation."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        out.append(pos)
        pos += 12 + size
    return out


def _split_in_two(src: Path, dst: Path) -> tuple[int, list]:
    """Copy a one-segment partition as two segments split at its middle batch; (second base, batches)."""
    data = (src / f"{0:020d}.log").read_bytes()
    batches = read_with_kafka_python(src / f"{0:020d}.log")
    frames = _frames(data)
    cut = frames[len(frames) // 2]
    second_base = batches[len(frames) // 2].records[0].offset
    write_segment(dst, 0, data[:cut])
    write_segment(dst, second_base, data[cut:])
    return second_base, batches


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(FIXTURES / "kafka-0.9.0.1" / "logdir" / "__consumer_offsets-0", id="kafka-0.9.0.1"),
        pytest.param(REALWORLD / "kafka-2.x-logdir" / "__consumer_offsets-12", id="realworld-2.x"),
    ],
)
def test_consumer_offsets_preview_matches_an_independent_count(tmp_path, source):
    if not source.exists():
        pytest.skip(f"{source} is absent")
    dst = tmp_path / "__consumer_offsets-0"
    second, batches = _split_in_two(source, dst)
    code, lines, _ = preview("--compaction", str(tmp_path))
    assert code == 0
    p = part_of(lines, "__consumer_offsets-0")
    assert p["settings"]["cleanupPolicy"]["value"] == "compact" and p["segmentsDeleted"] == 0
    c = p["compaction"]
    # Independent: kafka-python's records of the cleanable (first) segment; a record goes when its key
    # has a later record in that segment (no cleaner checkpoint: all of it is dirty).
    cleanable = [r for b in batches for r in b.records if r.offset < second]
    last = {r.key: r.offset for r in cleanable}
    superseded = sum(1 for r in cleanable if last[r.key] > r.offset)
    assert c["recordsExamined"] == len(cleanable)
    assert c["superseded"] == superseded
    assert c["distinctKeys"] == len(last)
    assert c["firstUncleanableOffset"] == second and c["dirtyRatio"] == 1.0 and c["wouldClean"]


def test_only_an_active_segment_is_why_consumer_offsets_does_not_shrink():
    source = FIXTURES / "kafka-0.9.0.1" / "logdir" / "__consumer_offsets-0"
    code, lines, _ = preview("--compaction", str(source))
    c = part_of(lines, "__consumer_offsets-0")["compaction"]
    assert c["dirtyBytes"] == 0 and not c["wouldClean"]
    assert any("only the active segment" in n for n in c["notes"])


# --------------------------------------------------------------------------- read-only, bad input


def test_nothing_in_the_log_dir_is_written(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "kafka-0.9.0.1" / "logdir", logs)
    v2_log(logs, "t", [NOW - 10 * DAY, NOW])
    for p in logs.rglob("*"):  # every mtime a second back: a write in the same clock tick still shows
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns - 1_000_000_000))
    before = tree(logs)
    for extra in ((), ("--compaction",), ("--retention-bytes", "1")):
        result = run_ktool("retention", "--now", str(NOW), *extra, str(logs))
        assert result.exit_code == 0, result.output
        assert "would be deleted" in result.stdout
    assert tree(logs) == before


def test_a_corrupt_timeindex_is_a_warning_and_the_batches_are_read(tmp_path):
    part = v2_log(tmp_path, "t", [NOW - 10 * DAY, NOW])
    (part / f"{0:020d}.timeindex").write_bytes(b"\x01" * 13)
    code, lines, err = preview("--retention-hours", "1", str(tmp_path))
    assert code == 0 and "Traceback" not in err
    assert actions(lines, "t-0") == [(0, "time"), (10, None)]
    assert any("not a whole number" in w for w in part_of(lines, "t-0")["warnings"])


def test_odd_names_and_gaps_do_not_stop_the_preview(tmp_path):
    part = v2_log(tmp_path, "t", [NOW - 10 * DAY, NOW - 10 * DAY, NOW])
    (part / f"{10:020d}.log").unlink()  # a gap: 0..9, then 20..
    (part / f"{10:020d}.timeindex").unlink()
    (part / "notanumber.log").write_bytes(b"junk")
    code, lines, err = preview("--retention-hours", "1", str(tmp_path))
    assert code == 0 and "Traceback" not in err
    assert actions(lines, "t-0") == [(0, "time"), (20, None)]


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["/nonexistent/logs"], 3, "no such file or directory"),
        (
            ["--server-properties", "/nonexistent/server.properties", "{logs}"],
            3,
            "cannot read server.properties",
        ),
        (["--zookeeper", "127.0.0.1:1", "--zk-timeout", "2", "{logs}"], 3, "127.0.0.1:1"),
        (["--now", "yesterday", "{logs}"], 2, "--now"),
        (["--retention-ms", "1", "--retention-hours", "1", "{logs}"], 2, "not both"),
        (["--broker-version", "new", "{logs}"], 2, "--broker-version"),
        (["{logs}/t-0/00000000000000000000.log"], 3, "a file"),  # the wrong kind of path: exit 3
    ],
)
def test_bad_input_is_one_line_and_an_exit_code(tmp_path, args, code, message):
    logs = tmp_path / "logs"
    v2_log(logs, "t", [NOW])
    result = run_ktool("retention", *(a.format(logs=logs) for a in args))
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output


def test_an_unparseable_checkpoint_is_an_inconsistent_state(tmp_path):
    v2_log(tmp_path, "t", [NOW])
    (tmp_path / "replication-offset-checkpoint").write_text("0\n5\nt 0 x\n")
    code, lines, err = preview(str(tmp_path))
    assert code == 1
    assert "replication-offset-checkpoint" in err and len(err.strip().splitlines()) == 1
    assert part_of(lines, "t-0")["inconsistent"]


def test_an_unreadable_partition_is_exit_3_and_the_others_are_still_previewed(tmp_path):
    v2_log(tmp_path, "good", [NOW - 10 * DAY, NOW])
    bad = v2_log(tmp_path, "bad", [NOW])
    (bad / f"{10:020d}.log").symlink_to(tmp_path / "nowhere")
    result = run_ktool("retention", "--json", "--now", str(NOW), "--retention-hours", "1", str(tmp_path))
    assert result.exit_code == 3
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    assert actions(lines, "good-0") == [(0, "time"), (10, None)]
    assert "dangling symbolic link" in part_of(lines, "bad-0")["unreadableReason"]
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and "dangling symbolic link" in err[0]


def test_a_bad_value_in_server_properties_is_exit_3_naming_the_key(tmp_path):
    v2_log(tmp_path, "t", [NOW])
    props = tmp_path.parent / "server.properties"
    props.write_text("log.retention.hours=forever\n")
    result = run_ktool("retention", "--server-properties", str(props), str(tmp_path))
    assert result.exit_code == 3
    assert result.stderr.strip().splitlines() == [
        f"ktool: {props} (log.retention.hours): 'forever' is not a whole number"
    ]


def test_the_active_segment_counts_batches_written_after_its_last_timeindex_entry(tmp_path):
    # A broker that crashed (or still runs) may not have put the active segment's newest batch in its
    # .timeindex; recovery would: that batch is fresh, so the segment is not expired.
    part = tmp_path / "t-0"
    data = v2_batch(0, records(5, NOW - 10 * DAY)) + v2_batch(5, records(5, NOW - HOUR // 2))
    write_segment(part, 0, data, max_ts=NOW - 10 * DAY)
    (part / f"{0:020d}.index").write_bytes(struct.pack(">ii", 4, 0))
    code, lines, _ = preview("--retention-hours", "1", str(tmp_path))
    seg = next(o for o in lines if o["type"] == "segment")
    assert (seg["action"], seg["largestTimestamp"]) == ("keep", NOW - HOUR // 2)
    assert seg["timestampSource"] == "batches after the last .timeindex entry"


def test_a_disabled_cleaner_cleans_nothing_and_says_so(tmp_path):
    part = tmp_path / "c-0"
    write_segment(part, 0, v2_batch(0, [(NOW, b"k", b"1"), (NOW, b"k", b"2")]))
    write_segment(part, 2, v2_batch(2, [(NOW, b"k", b"3")]))
    props = tmp_path.parent / "server.properties"
    props.write_text("log.cleanup.policy=compact\nlog.cleaner.enable=false\n")
    code, lines, _ = preview("--compaction", "--server-properties", str(props), str(tmp_path))
    c = part_of(lines, "c-0")["compaction"]
    assert c["dirtyRatio"] == 1.0 and not c["wouldClean"] and c["superseded"] == 1
    assert any("log.cleaner.enable=false" in n for n in c["notes"])


def v1_message(offset: int, ts: int) -> bytes:
    b = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    b.append(offset, timestamp=ts, key=b"k", value=b"v")
    return bytes(b.build())


@pytest.mark.parametrize(
    "time_index, rule, expected",
    [
        (True, "timestamp", [(0, "time"), (1, None)]),  # 0.10.1-0.10.2: timestamps, a .timeindex
        (False, "mtime", [(0, None), (1, None)]),  # 0.10.0: magic 1, no .timeindex: still the mtime
    ],
)
def test_message_format_1_logs_get_the_rule_of_the_broker_that_wrote_them(
    tmp_path, time_index, rule, expected
):
    part = tmp_path / "v1-0"
    write_segment(part, 0, v1_message(0, NOW - 10 * DAY), max_ts=NOW - 10 * DAY if time_index else None)
    write_segment(part, 1, v1_message(1, NOW), max_ts=NOW if time_index else None)
    code, lines, _ = preview("--retention-hours", "1", str(tmp_path))
    p = part_of(lines, "v1-0")
    assert p["rule"] == rule and "magic 1" in p["ruleWhy"]
    assert p["highWatermark"] is None  # neither generation had the high-watermark bound
    assert actions(lines, "v1-0") == expected


def test_kraft_metadata_log_is_not_previewed_as_a_topic():
    source = REALWORLD / "kraft" / "kafka-3.x-combined" / "__cluster_metadata-0"
    if not source.exists():
        pytest.skip(f"{source} is absent")
    code, lines, _ = preview("--retention-ms", "1", str(source))
    p = part_of(lines, "__cluster_metadata-0")
    assert code == 0 and p["segmentsDeleted"] == 0
    assert any("KRaft's metadata log" in n for n in p["notes"])
