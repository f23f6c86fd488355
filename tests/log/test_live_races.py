"""What a running broker does to its files while ktool reads them, each race made to happen on purpose
(no timing): a file shortened between its stat and its read, index entries past the data, a segment
renamed `.deleted` between the listing and the read, a checkpoint written after the segments were
read, a FIFO named as a segment, a time before the log start, the records after the last
`.timeindex` entry, and repairs refused before anything is read."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from kafka_tools.format import segment as segment_format
from kafka_tools.log.checks.findings import IN_FLIGHT, Severity, ValidateOptions
from kafka_tools.log.checks.partition_checks import validate_partition
from kafka_tools.log.files import broker_lock, views
from kafka_tools.log.files.dirs import read_partition
from kafka_tools.log.reads import locate
from kafka_tools.log.retention.config import SettingSources
from kafka_tools.log.retention.preview import find_partitions, preview
from tests.log.test_read import T0, build_partition, read_json, shown
from tests.support.cli import run_ktool
from tests.support.locks import lock_held_elsewhere
from tests.support.script import run_script


def _log_dir(tmp_path: Path, magic: int = 2, codec: str = "none", **kw) -> tuple[Path, Path, list]:
    logs = tmp_path / "logs"
    part, written = build_partition(logs, magic, codec, **kw)
    (logs / ".lock").touch()  # a broker's log dir; whether it is held decides "live"
    return logs, part, written


def _half_written_tail(part: Path) -> tuple[Path, int]:
    """Make the newest segment look as a 0.9 broker leaves it mid-append: the `.index` entry for the
    next batch already written (it points at the log's end), the batch's first bytes only, and the
    preallocated zeros after the index entries. Returns (segment, its complete size)."""
    seg = sorted(part.glob("*.log"))[-1]
    complete = seg.stat().st_size
    batch = seg.read_bytes()[:200]  # the head of a batch: its length says more follows
    index = seg.with_suffix(".index")
    base = int(seg.stem)
    last = json_last_offset(seg)
    with open(index, "ab") as f:
        f.write(struct.pack(">ii", last + 1 - base, complete) + bytes(8 * 64))
    with open(seg, "ab") as f:
        f.write(struct.pack(">q", last + 1) + batch[8:120])
    return seg, complete


def json_last_offset(seg: Path) -> int:
    out = run_ktool("dump-log", "--json", str(seg)).stdout
    return max(o["lastOffset"] for o in map(json.loads, out.splitlines()) if o["type"] == "batch")


def _validate(*args: str) -> tuple[int, list[dict]]:
    result = run_ktool("validate", "--json", *args)
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


# -- in flight is not damage ----------------------------------------------------------------------------


def test_a_half_written_tail_and_an_index_entry_past_the_data_are_in_flight_on_a_live_broker(
    tmp_path,
) -> None:
    logs, part, written = _log_dir(tmp_path)
    seg, complete = _half_written_tail(part)
    with lock_held_elsewhere(logs / ".lock"):
        code, objs = _validate(str(logs))
        named, alone = _validate(str(seg))  # the segment named alone: the same verdict
    assert named == 0 and {o["kind"] for o in alone if o["type"] == "finding"} == {IN_FLIGHT}
    findings = [o for o in objs if o["type"] == "finding"]
    assert code == 0
    assert findings and {f["kind"] for f in findings} == {IN_FLIGHT}
    assert {f["severity"] for f in findings} == {"info"}
    assert {Path(f["file"]).name for f in findings} == {seg.name, seg.with_suffix(".index").name}
    summary = objs[-1]
    assert (
        summary["inFlight"] == len(findings) and summary["errors"] == 0 and "in flight" in summary["verdict"]
    )
    partition = next(o for o in objs if o["type"] == "partition")
    assert partition["logEndOffset"] == written[-1].offset + 1 and partition["tailBytes"] == 0


def test_the_same_tail_on_a_stopped_broker_is_damage_and_live_overrides_the_lock(tmp_path) -> None:
    logs, part, _ = _log_dir(tmp_path)
    _half_written_tail(part)
    code, objs = _validate(str(logs))  # nobody holds the lock: a crashed broker's leftovers
    kinds = {o["kind"] for o in objs if o["type"] == "finding"}
    assert code == 1 and "index-past-valid-data" in kinds and IN_FLIGHT not in kinds
    code, objs = _validate("--live", str(logs))  # a copy of a running broker's dir: the lock cannot tell
    assert code == 0 and {o["kind"] for o in objs if o["type"] == "finding"} == {IN_FLIGHT}
    assert run_ktool("validate", str(logs), env={"KTOOL_LIVENESS": "live"}).exit_code == 0  # scan's executors
    with lock_held_elsewhere(logs / ".lock"):
        code, _ = _validate("--offline", str(logs))  # and the other way round
    assert code == 1


def test_damage_in_a_rolled_segment_stays_an_error_on_a_live_broker(tmp_path) -> None:
    logs, part, _ = _log_dir(tmp_path)
    first = sorted(part.glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[100] ^= 0xFF  # inside the first batch: its CRC no longer matches
    first.write_bytes(bytes(data))
    with lock_held_elsewhere(logs / ".lock"):
        code, objs = _validate(str(logs))
    assert code == 1
    assert any(o.get("kind") == "crc-mismatch" and o["severity"] == "error" for o in objs)


def test_a_segment_that_grew_while_read_is_in_flight_without_the_lock(tmp_path, monkeypatch) -> None:
    """No lock to tell (a copy on a shared mount): the newest segment growing during the check says it."""
    logs, part, _ = _log_dir(tmp_path)
    seg, _ = _half_written_tail(part)
    real = segment_format.walk_entries

    def walk_then_grow(*args, **kwargs):
        yield from real(*args, **kwargs)
        with open(seg, "ab") as f:  # the broker appends while ktool reads
            f.write(b"\x00")

    monkeypatch.setattr("kafka_tools.log.checks.segment_checks.walk_entries", walk_then_grow)
    p = read_partition(part)
    assert not p.live
    report = validate_partition(p, ValidateOptions())
    assert {f.kind for f in report.all_findings()} == {IN_FLIGHT}


def test_a_checkpoint_is_read_before_the_segments_it_is_compared_with(tmp_path, monkeypatch) -> None:
    """The broker appends and then checkpoints while ktool reads: a checkpoint read after the segments
    would name offsets past what was read."""
    logs, part, written = _log_dir(tmp_path)
    end = written[-1].offset + 1
    checkpoint = logs / "recovery-point-offset-checkpoint"
    checkpoint.write_text(f"0\n1\nt 0 {end}\n")
    import kafka_tools.log.checks.partition_checks as checks

    real = checks.check_segment

    def check_then_broker_writes(seg, *args, **kwargs):
        report = real(seg, *args, **kwargs)
        checkpoint.write_text(f"0\n1\nt 0 {end + 1000}\n")  # after more appends ktool did not read
        return report

    monkeypatch.setattr(checks, "check_segment", check_then_broker_writes)
    code, objs = _validate("--jobs", "1", str(logs))
    assert code == 0 and [o for o in objs if o["type"] == "finding"] == []


def test_a_checkpoint_ahead_of_the_log_on_a_live_broker_is_in_flight(tmp_path) -> None:
    logs, _, written = _log_dir(tmp_path)
    (logs / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {written[-1].offset + 50}\n")
    code, objs = _validate(str(logs))
    assert [o["kind"] for o in objs if o["type"] == "finding"] == [
        "checkpoint-past-log-end"
    ]  # offline: a warning
    with lock_held_elsewhere(logs / ".lock"):
        code, objs = _validate(str(logs))
    assert code == 0 and [(o["kind"], o["severity"]) for o in objs if o["type"] == "finding"] == [
        (IN_FLIGHT, "info")
    ]


# -- files that move ------------------------------------------------------------------------------------


def test_a_segment_renamed_deleted_between_listing_and_reading_is_skipped_with_a_note(tmp_path) -> None:
    logs, part, _ = _log_dir(tmp_path)
    p = read_partition(part)  # listed
    first = p.segments[0]
    for f in (first.log, first.offset_index, first.time_index):
        f.rename(f.with_name(f.name + ".deleted"))  # retention, as the broker does it
    report = validate_partition(p, ValidateOptions())
    findings = report.all_findings()
    assert [(f.kind, f.severity, f.file) for f in findings] == [(IN_FLIGHT, Severity.INFO, str(first.log))]
    assert report.advice == "none"


def test_retention_lists_the_partition_again_when_a_segment_goes(tmp_path, monkeypatch) -> None:
    logs, part, _ = _log_dir(tmp_path)
    parts = find_partitions([str(logs)])
    first = Path(parts[0].segments[0].log)
    first.rename(first.with_name(first.name + ".deleted"))  # after the listing, before the stat
    report = preview(parts, SettingSources(), T0)
    assert not report.unreadable
    p = report.partitions[0]
    assert [s.base_offset for s in p.segments] == [
        int(Path(s).stem) for s in sorted(map(str, part.glob("*.log")))
    ]
    assert any("listed again" in n for n in p.notes)


def test_read_of_an_offset_in_a_segment_deleted_meanwhile_is_out_of_range_not_exit_3(
    tmp_path, monkeypatch
) -> None:
    logs, part, written = _log_dir(tmp_path)
    real = views.list_partition
    deleted = []

    def list_then_delete(path, live=None):
        listing = real(path, live)
        if not deleted:  # retention removes the oldest segment right after the listing, once
            first = sorted(Path(path).glob("*.log"))[0]
            first.rename(first.with_name(first.name + ".deleted"))
            deleted.append(first)
        return listing

    monkeypatch.setattr(views, "list_partition", list_then_delete)
    code, _, err = read_json(str(part), "--offset", "1")
    assert code == 1 and "out of range" in err and err.count("\n") == 1
    deleted.clear()
    deleted.append(None)  # the next listing deletes nothing: the time search meets the gap itself
    code, objs, err = read_json(str(part), "--timestamp", str(T0), "-n", "1")
    assert code == 0 and [o for o, _, _ in shown(objs)] == [24] and err == ""
    shutil.rmtree(part)
    logs, part, written = _log_dir(tmp_path / "again")
    deleted.clear()
    code, objs, err = read_json(str(part), "--timestamp", str(T0), "-n", "1")  # skipped, with a note
    assert code == 0 and [o for o, _, _ in shown(objs)] == [24]
    assert "removed since the partition was listed" in err and err.count("\n") == 1


def test_an_index_shortened_between_its_stat_and_its_read_gives_no_signal(tmp_path, monkeypatch) -> None:
    logs, part, written = _log_dir(tmp_path)
    seg = sorted(part.glob("*.log"))[-1]
    index = seg.with_suffix(".index")
    full = index.read_bytes() + bytes(8 * 1024)  # preallocated, as the active segment's
    index.write_bytes(full)
    real_fstat = os.fstat

    def fstat_then_trim(fd):
        st = real_fstat(fd)
        if st.st_size == len(full):
            os.truncate(index, len(full) - 8 * 1024 - 8)  # the broker trims it (and one entry more)
        return st  # ktool's stat still says the old size

    monkeypatch.setattr(locate.os, "fstat", fstat_then_trim)
    code, objs, err = read_json(str(part), "--offset", str(written[-1].offset))
    assert code == 0 and [o for o, _, _ in shown(objs)] == [written[-1].offset]


def test_a_live_log_dir_is_never_memory_mapped(tmp_path, monkeypatch) -> None:
    logs, part, _ = _log_dir(tmp_path)

    def no_mmap(*args, **kwargs):
        raise AssertionError("a file of a running broker's log dir was memory-mapped")

    monkeypatch.setattr(segment_format.mmap, "mmap", no_mmap)
    with lock_held_elsewhere(logs / ".lock"):
        code, _ = _validate(str(logs))
        assert code == 0
        code, objs, _ = read_json(str(part), "--latest")
        assert code == 0
    code, _ = _validate("--live", str(logs))
    assert code == 0
    broker_lock.set_mode(broker_lock.OFFLINE)
    try:
        with lock_held_elsewhere(logs / ".lock"):  # --offline does not make mapping safe
            assert not segment_format.safe_to_map(sorted(part.glob("*.log"))[0])
    finally:
        broker_lock.set_mode(None)


# -- at rest, as a new user would meet them -------------------------------------------------------------


def test_a_fifo_named_as_a_segment_is_one_line_exit_3_and_never_hangs(tmp_path) -> None:
    logs, part, written = _log_dir(tmp_path, segments=2)
    fifo = part / f"{written[-1].offset + 1:020d}.log"
    os.mkfifo(fifo)
    for args in (["offsets-at", str(logs)], ["read", str(part), "--latest"], ["validate", str(logs)]):
        try:
            result = run_script(*args, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"ktool {' '.join(args)} hangs on a FIFO")
        assert result.returncode == 3, (args, result.stderr)
        assert "Traceback" not in result.stderr and "not a regular file" in result.stderr
    result = run_script("read", str(part), "--offset", "20", "--json", timeout=60)
    assert result.returncode == 3 and result.stderr.count("\n") == 1 and str(fifo) in result.stderr
    assert json.loads(result.stdout.splitlines()[0])["type"] in ("batch", "record")  # its record came first


def test_a_time_before_the_log_start_answers_the_log_start(tmp_path) -> None:
    logs, part, written = _log_dir(tmp_path)
    (logs / "log-start-offset-checkpoint").write_text("0\n1\nt 0 8\n")
    result = run_ktool("offsets-at", "--time", "1", str(logs))
    assert (result.exit_code, result.stdout) == (0, "t:0:8\n")
    result = run_ktool("offsets-at", "--time", "earliest", str(logs))
    assert result.stdout == "t:0:8\n"
    code, objs, err = read_json(str(part), "--timestamp", "1", "-n", "1")
    assert code == 0 and [o for o, _, _ in shown(objs)] == [8], err


def test_records_after_the_last_time_index_entry_are_found(tmp_path) -> None:
    """A running broker's active segment: its `.timeindex` has no entry yet for its newest records."""
    logs, part, written = _log_dir(tmp_path)
    timeindex = sorted(part.glob("*.timeindex"))[-1]
    entries = timeindex.read_bytes()
    timeindex.write_bytes(entries[:12] + bytes(12 * 8))  # one entry, then the preallocated zeros
    for w in (written[-1], written[-5]):
        result = run_ktool("offsets-at", "--time", str(w.timestamp), str(logs))
        assert (result.exit_code, result.stdout) == (0, f"t:0:{w.offset}\n")
        code, objs, _ = read_json(str(part), "--timestamp", str(w.timestamp), "-n", "1")
        assert code == 0 and [o for o, _, _ in shown(objs)] == [w.offset]
    result = run_ktool("offsets-at", "--time", str(written[-1].timestamp + 1), str(logs))
    assert (result.exit_code, result.stdout) == (0, "t:0:\n")  # none at or after it


# -- repairs refuse first -------------------------------------------------------------------------------


def test_truncate_under_live_refuses_before_reading_anything(tmp_path, monkeypatch) -> None:
    logs, part, _ = _log_dir(tmp_path)
    import kafka_tools.log.repair.truncate_service as truncate_service

    def must_not_list(*args, **kwargs):
        raise AssertionError("listed a running broker's partitions")

    monkeypatch.setattr(truncate_service, "discover", must_not_list)
    monkeypatch.setattr(truncate_service, "partition_for", must_not_list)
    for args in (["--dry-run", str(logs)], [str(part)], ["--force", str(sorted(part.glob("*.log"))[0])]):
        result = run_ktool("truncate", "--live", "--backup-dir", str(tmp_path / "bk"), *args)
        assert result.exit_code == 3 and result.stderr.count("\n") == 1 and "--live" in result.stderr
    assert not (tmp_path / "bk").exists()
    shutil.rmtree(logs)


def test_dump_log_of_the_segment_being_written_stops_at_its_last_complete_batch(tmp_path) -> None:
    logs, part, written = _log_dir(tmp_path)
    seg, _ = _half_written_tail(part)
    with lock_held_elsewhere(logs / ".lock"):
        for f in (seg, seg.with_suffix(".index")):
            result = run_ktool("dump-log", str(f))
            assert (result.exit_code, result.stderr) == (0, ""), f
        older = sorted(part.glob("*.log"))[0]
        with open(older, "ab") as out:
            out.write(b"\x00\x00\x00")  # a rolled segment's damage is still damage
        assert run_ktool("dump-log", str(older)).exit_code == 1
    result = run_ktool("dump-log", str(seg))  # stopped: the same tail is what a crash left
    assert result.exit_code == 1 and "truncated-entry" in result.stderr


def test_retention_takes_a_high_watermark_past_the_log_end_as_in_flight_on_a_live_broker(tmp_path) -> None:
    logs, _, written = _log_dir(tmp_path)  # v2: the 3.0+ rule, which never deletes past the watermark
    (logs / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {written[-1].offset + 100}\n")
    args = ("retention", "--now", str(T0 + 10**9), "--retention-ms", "1000", str(logs))
    stopped = run_ktool(*args)
    assert stopped.exit_code == 1 and "past its log end" in stopped.stderr  # a stopped broker: inconsistent
    with lock_held_elsewhere(logs / ".lock"):
        live = run_ktool(*args)
    assert (live.exit_code, live.stderr) == (0, "")
    assert "in flight" in live.stdout


def test_a_segment_removed_after_the_one_before_it_was_read_leaves_no_gap(tmp_path, monkeypatch) -> None:
    """Retention removes the oldest segments while validate walks them: the one read first is held
    open, the next one is gone by the time it is opened; no offset gap is reported across it."""
    logs, part, _ = _log_dir(tmp_path)
    import kafka_tools.log.checks.partition_checks as checks

    real = checks.check_segment
    second = sorted(part.glob("*.log"))[1]

    def check_then_retention(seg, *args, **kwargs):
        report = real(seg, *args, **kwargs)
        if second.exists():
            second.rename(second.with_name(second.name + ".deleted"))
        return report

    monkeypatch.setattr(checks, "check_segment", check_then_retention)
    code, objs = _validate("--jobs", "1", str(part))
    findings = [(o["kind"], Path(o["file"]).name) for o in objs if o["type"] == "finding"]
    assert code == 0 and findings == [(IN_FLIGHT, second.name)]
