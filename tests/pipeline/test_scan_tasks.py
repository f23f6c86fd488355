"""The work of `ktool scan`'s tasks, without Spark: split points, packing, the offsets replay."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_tools.format.problems import Problem
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.validate import validate_paths
from kafka_tools.pipeline import ScanOptions, plan_scan
from kafka_tools.pipeline.local import scan_in_process
from kafka_tools.pipeline.offsets_replay import OffsetsSegment, replay_offsets
from kafka_tools.pipeline.plan import pack
from kafka_tools.pipeline.tasks import batch_chunks, range_starts, record_chunks, split_ranges
from tests.independent import FIXTURES, REALWORLD

GENERATED = FIXTURES / "generated"
ALL = [GENERATED / d for d in ("v0", "v1", "v2", "kafka07", "corrupt")] + [FIXTURES / "kafka-0.9.0.1/logdir"]


def _entry_positions(path: str) -> list[int]:
    return [e.position for e in iter_log_entries(path) if not isinstance(e, Problem)]


def test_ranges_start_where_the_walk_finds_an_entry_and_decode_to_the_whole_file() -> None:
    plan = plan_scan([GENERATED / "v0", GENERATED / "v2", GENERATED / "corrupt"])
    split = 0
    for spec in plan.segments:
        starts = range_starts(spec, 1024)
        assert set(starts) <= set(_entry_positions(spec.path)) | {0}
        split += len(starts) > 1
        # The ranges decode to exactly the entries and records of a whole-file walk, damage included.
        whole = [p for cols in batch_chunks(spec) for p in cols["position"]]
        ranges = split_ranges(starts)
        assert [p for s, e in ranges for cols in batch_chunks(spec, s, e) for p in cols["position"]] == whole
        offsets = [o for cols in record_chunks(spec) for o in cols["offset"]]
        assert [o for s, e in ranges for cols in record_chunks(spec, s, e) for o in cols["offset"]] == offsets
    assert split >= 10


def test_ranges_are_cut_by_their_rule_and_a_file_too_small_to_cut_is_one_range() -> None:
    # A range starts at an entry at least `split` bytes after the previous start, with `split // 8`
    # bytes after it: a file below split * 9 / 8 is one range (answered without the hop).
    for spec in plan_scan([GENERATED / "v0", GENERATED / "v1", GENERATED / "v2"]).segments:
        positions = _entry_positions(spec.path)
        edge = spec.size * 8 // 9
        for split in {spec.size // 5, spec.size // 2, edge - 1, edge, edge + 1, spec.size - 1, spec.size}:
            if split < 1:
                continue
            expected = [0]
            for p in positions:
                if p - expected[-1] >= split and spec.size - p >= split // 8:
                    expected.append(p)
            assert range_starts(spec, split) == expected, (spec.file, split)
        # At the edge: an entry at `split` with exactly split // 8 bytes after it starts a range.
        for p in positions[1:]:
            assert range_starts(replace(spec, size=p + p // 8), p) == [0, p]
            assert range_starts(replace(spec, size=p + p // 8 - 1), p) == [0]


def test_a_hop_stops_before_damage() -> None:
    spec = plan_scan([GENERATED / "corrupt" / "v2-length-below-minimum-0"]).segments[0]
    assert range_starts(spec, 100) == [0, 920]  # the entry at 2081 has a bad size: no range starts there


def test_pack_makes_even_tasks_with_big_items_alone() -> None:
    tasks = pack([("a", 100), ("b", 3), ("c", 2), ("d", 90), ("e", 1)], 64)
    assert tasks[0] == ["a"] and tasks[1] == ["d"]
    assert sorted(x for t in tasks for x in t) == list("abcde")
    sixteen = pack([(i, 128) for i in range(16)], -(-16 * 128 // 6))
    assert len(sixteen) == 6 and sorted(map(len, sixteen)) == [2, 2, 3, 3, 3, 3]
    assert len(pack([(i, 0) for i in range(1000)], 64 << 20)) <= 8  # empty files: a few tasks
    assert pack([], 64) == []


def test_in_process_scan_finds_what_validate_finds() -> None:
    paths = ALL + ([REALWORLD] if REALWORLD.is_dir() else [])
    result = scan_in_process(plan_scan(paths), ScanOptions(split_bytes=2048))
    expected = validate_paths(paths, ValidateOptions())
    key = lambda f: (f.file, f.kind, f.position, f.severity, f.repairable)  # noqa: E731
    assert sorted(map(key, result.validation.all_findings())) == sorted(map(key, expected.all_findings()))
    assert result.summary == expected.summary()


# -- the __consumer_offsets replay -------------------------------------------------------------------


class ControlBatchBuilder(DefaultRecordBatchBuilder):
    def _get_attributes(self, include_compression_type=True):
        return super()._get_attributes(include_compression_type) | self.CONTROL_MASK


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def commit_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + _string(group) + _string(topic) + struct.pack(">i", partition)


def commit_value(offset: int, ts: int = 1_700_000_000_000) -> bytes:
    return struct.pack(">hq", 1, offset) + _string("") + struct.pack(">qq", ts, ts + 86_400_000)


def batch(
    base: int, records: list[tuple[bytes, bytes | None]], pid: int = -1, control: bool = False
) -> bytes:
    cls = ControlBatchBuilder if control else DefaultRecordBatchBuilder
    b = cls(
        magic=2,
        compression_type=0,
        is_transactional=pid >= 0,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=0 if pid >= 0 else -1,
        batch_size=1 << 20,
    )
    for delta, (key, value) in enumerate(records):
        b.append(delta, timestamp=1_700_000_000_000 + base, key=key, value=value, headers=[])
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base)
    return bytes(buf)


def marker(commit: bool) -> tuple[bytes, bytes]:
    return struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, 3)


def test_replay_loads_what_the_group_coordinator_would(tmp_path: Path) -> None:
    g = "orders-app"
    k = [commit_key(g, "orders", p) for p in range(5)]
    log = b"".join(
        [
            batch(0, [(k[0], commit_value(10)), (k[1], commit_value(20))]),
            batch(2, [(k[0], commit_value(11))]),  # replaces 10
            batch(3, [(k[1], None)]),  # tombstone: partition 1 has no offset any more
            batch(4, [(k[2], commit_value(30))], pid=7),  # transactional, committed below
            batch(5, [(k[3], commit_value(40))], pid=8),  # transactional, aborted below
            batch(6, [marker(True)], pid=7, control=True),
            batch(7, [marker(False)], pid=8, control=True),
            batch(8, [(k[4], commit_value(50))], pid=9),  # transactional, never completed
        ]
    )
    part = tmp_path / "__consumer_offsets-3"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(log)
    plan = plan_scan([part])
    cols = replay_offsets(3, [OffsetsSegment(plan.segments[0], len(log))])
    loaded = {
        (cols["partition"][i], cols["offset"][i], cols["log_offset"][i])
        for i, on in enumerate(cols["loaded"])
        if on
    }
    assert loaded == {(0, 11, 2), (2, 30, 4)}
    assert len(cols["file"]) == 7 and cols["tombstone"].count(True) == 1
    assert cols["transactional"] == [False, False, False, False, True, True, True]

    # What lies past the first invalid byte is not replayed: the broker's recovery drops it.
    cut = len(batch(0, [(k[0], commit_value(10)), (k[1], commit_value(20))]))
    cols = replay_offsets(3, [OffsetsSegment(plan.segments[0], cut)])
    assert {cols["offset"][i] for i, on in enumerate(cols["loaded"]) if on} == {10, 20}
    assert cols["recovered"].count(True) == 2

    result = scan_in_process(plan, ScanOptions(offsets_topic=True))
    assert [(c.group, c.partition, c.offset) for c in result.committed] == [(g, 0, 11), (g, 2, 30)]


def test_java_command_names_what_is_missing(monkeypatch, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from kafka_tools.errors import InputError
    from kafka_tools.pipeline.session import java_command

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nonexistent"))
    with pytest.raises(InputError, match="Java not found: JAVA_HOME=.* has no bin/java"):
        java_command()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError, match="Java not found"):
        java_command()


def test_check_master_refuses_what_spark_would_wait_on(monkeypatch) -> None:
    import socket

    from kafka_tools.errors import InputError, UsageError
    from kafka_tools.pipeline.session import check_master

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    with pytest.raises(InputError, match=f"Spark master spark://127.0.0.1:{port} unreachable"):
        check_master(f"spark://127.0.0.1:{port}", timeout=2)
    with pytest.raises(UsageError):
        check_master("mesos://somewhere")
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    with pytest.raises(InputError, match="HADOOP_CONF_DIR"):
        check_master("yarn")
    check_master("local[*]")
    check_master("local[2]")
    with pytest.raises(UsageError, match="at least one thread"):
        check_master("local[0]")


def test_the_zip_shipped_to_cluster_executors_decodes_without_the_c_extension(tmp_path: Path) -> None:
    import subprocess
    import sys

    pytest.importorskip("pyspark")
    from kafka_tools.pipeline.session import package_zip

    shipped = package_zip()
    try:
        # An executor has no ktool installed: drop an editable install's import hook (it would find
        # this checkout's built extension for a module the zip does not hold).
        code = (
            "import sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in f.__module__]\n"
            "import kafka_tools; from kafka_tools.format import record_reader as rr\n"
            "from kafka_tools.pipeline import plan_scan\n"
            "from kafka_tools.pipeline.tasks import batch_chunks\n"
            "spec = plan_scan([sys.argv[1]]).segments[0]\n"
            "records = sum(sum(c['records']) for c in batch_chunks(spec))\n"
            "print(kafka_tools.__file__, rr.HAS_SPEEDUPS, records)\n"
        )
        segment = GENERATED / "v2" / "zstd-0" / "00000000000000000000.log"
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": shipped}
        proc = subprocess.run(
            [sys.executable, "-c", code, str(segment)], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        where, speedups, records = proc.stdout.split()
        assert where.startswith(shipped) and speedups == "False" and int(records) == 21
    finally:
        Path(shipped).unlink()


def test_copies_of_an_offsets_partition_from_two_log_dirs_are_replayed_apart(tmp_path: Path) -> None:
    """Two brokers' replicas of `__consumer_offsets-0` are two logs: each replayed on its own (one
    history after the other would load the older copy's commits over the newer's)."""
    import shutil

    logdir = FIXTURES / "kafka-0.9.0.1/logdir"
    for broker in ("broker-1", "broker-2"):
        shutil.copytree(logdir / "__consumer_offsets-0", tmp_path / broker / "__consumer_offsets-0")
    one = scan_in_process(plan_scan([logdir / "__consumer_offsets-0"]), ScanOptions(offsets_topic=True))
    two = scan_in_process(plan_scan([tmp_path]), ScanOptions(offsets_topic=True))
    assert one.committed and len(two.committed) == 2 * len(one.committed)
    for broker in ("broker-1", "broker-2"):
        mine = [c for c in two.committed if f"/{broker}/" in c.file]
        assert [(c.group, c.topic, c.partition, c.offset, c.log_offset) for c in mine] == [
            (c.group, c.topic, c.partition, c.offset, c.log_offset) for c in one.committed
        ]
