"""`ktool validate --jobs N`: the plan (threads, split) picked for given inputs, and the same
answer whichever plan runs. The plan is pinned here as work done, not as time: bench/validate.py
--check measures that it pays (log/workers/parallel.py says why)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_tools.cli.main import cli
from kafka_tools.format import accel
from kafka_tools.format.batch_runs import split_points
from kafka_tools.log.workers import parallel, pool
from kafka_tools.log.workers.parallel import SMALL_INPUT, SPLIT_MIN, JobsPlan, plan_jobs
from tests.independent import FIXTURES

GENERATED = FIXTURES / "generated"
MiB = 1024 * 1024
has_c = accel.fast("scan_batches") is not None


def test_one_core_or_a_small_input_is_one_mapped_walker() -> None:
    assert plan_jobs([SPLIT_MIN * 4], 1) == parallel.ONE_WALKER
    assert plan_jobs([MiB] * 8, 2) == parallel.ONE_WALKER
    assert plan_jobs([SMALL_INPUT - 1], 8) == parallel.ONE_WALKER
    assert plan_jobs([], 2) == parallel.ONE_WALKER


def test_several_segments_get_a_walker_a_core_no_more_than_segments() -> None:
    many = ([256 * MiB] * 16, [40 * MiB] * 3, [SPLIT_MIN] * 2, [SPLIT_MIN * 8, MiB, MiB], [20 * MiB] * 2)
    for sizes in many:
        assert plan_jobs(sizes, 2) == JobsPlan(2, False), sizes
    assert plan_jobs([40 * MiB] * 3, 8) == JobsPlan(3, False)


def test_several_walkers_map_in_small_steps(monkeypatch) -> None:
    """Each of several walkers maps its segment (pread's copy cost 1.2-1.7x the map's CPU) and hands
    its pages back every walker_step(2) bytes, so the peak RSS does not grow by 24 MiB a thread."""
    from kafka_tools.log.checks import segment_checks

    windows: list[tuple[bool, int | None]] = []
    real_window = segment_checks.SegmentWindow

    def window(*args, use_mmap: bool, release_step: int | None):
        windows.append((use_mmap, release_step))
        return real_window(*args, use_mmap=use_mmap, release_step=release_step)

    monkeypatch.setattr(segment_checks, "SegmentWindow", window)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(pool, "available", lambda: False)  # threads: the windows made in this process
    src = GENERATED / "v2"
    assert _validate(["--jobs", "2", str(src)])[0] == 0
    segments = len(list(src.glob("*-0/*.log")))
    assert windows == [(True, parallel.walker_step(2))] * segments
    windows.clear()
    _validate(["--jobs", "1", str(src)])
    assert windows == [(True, None)] * segments  # one walker: its own (larger) steps


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
def test_fewer_large_segments_than_cores_are_split() -> None:
    assert plan_jobs([1024 * MiB], 2) == JobsPlan(2, True)
    assert plan_jobs([SPLIT_MIN, 4 * MiB], 4) == JobsPlan(4, True)
    assert plan_jobs([SPLIT_MIN - 1], 2) == parallel.ONE_WALKER  # one unsplittable segment


def test_one_large_segment_that_cannot_be_split_is_one_mapped_walker() -> None:
    """A v0/v1 segment (or a v2 one below SPLIT_MIN) alone: a second thread would have nothing to do,
    and pread costs more than the map."""
    assert plan_jobs([SPLIT_MIN * 3], 2, [False]) == parallel.ONE_WALKER
    assert plan_jobs([SPLIT_MIN * 3, SPLIT_MIN], 4, [False, False]) == JobsPlan(2, False)
    assert plan_jobs([SPLIT_MIN * 3, SPLIT_MIN], 4, [False, True]) == JobsPlan(4, True)


def test_the_planner_reads_the_magic_of_large_segments(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    v2 = GENERATED / "v2" / "none-0" / "00000000000000000000.log"
    v0 = GENERATED / "v0" / "none-0" / "00000000000000000000.log"
    assert parallel.begins_with_v2(v2, v2.stat().st_size)
    assert not parallel.begins_with_v2(v0, v0.stat().st_size)


@pytest.mark.parametrize("size", [1, 100, 10_000, 1 << 30, (1 << 32) + 12_345])
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_range_cuts_cover_the_segment_in_ranges_that_shrink_towards_its_end(size: int, threads: int) -> None:
    """The ranges a split segment is cut into cover it once, in order, RANGES_A_THREAD a thread (fewer
    only when the file is tiny), each no larger than the one before; the last `threads` ranges, the
    ones a walker may wait for at the end, together hold about a sixteenth of the segment."""
    bounds = [0, *parallel.range_cuts(size, threads), size]
    lengths = [b - a for a, b in zip(bounds, bounds[1:], strict=False)]
    parts = parallel.RANGES_A_THREAD * threads
    assert all(n > 0 for n in lengths) and sum(lengths) == size
    assert len(lengths) == parts if size >= 4 * parts * parts else 1 <= len(lengths) <= parts
    assert all(b <= a + 1 for a, b in zip(lengths, lengths[1:], strict=False))
    if size >= 4 * parts * parts:
        assert sum(lengths[-threads:]) <= size // 16 + threads


def test_split_points_are_batch_boundaries() -> None:
    path = GENERATED / "v2" / "none-0" / "00000000000000000000.log"
    data = path.read_bytes()
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    points = split_points(path, 3)
    assert points and set(points) <= set(starts[1:])
    assert split_points(GENERATED / "v0" / "none-0" / "00000000000000000000.log", 2) == []  # v2 only


def _validate(args: list[str]) -> tuple[int, list[dict]]:
    result = CliRunner().invoke(cli, ["validate", "--json", *args], catch_exceptions=False)
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@pytest.mark.parametrize("tree", ["v2", "corrupt", "v0"])
def test_every_plan_gives_the_same_answer(tree: str, monkeypatch, tmp_path: Path) -> None:
    """Thresholds lowered so that the small fixtures are split into ranges (and into many): the
    findings, counts and summary equal those of one mapped walker."""
    src = GENERATED / tree
    one = _validate(["--jobs", "1", str(src)])
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    assert _validate(["--jobs", "2", str(src)]) == one  # threads
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    splits: list[int] = []
    real = parallel.split_prefix
    monkeypatch.setattr(
        parallel,
        "split_prefix",
        lambda *a: splits.append(1) or real(*a),  # count the splits made
    )
    partitions = sorted(src.glob("*-0"))
    assert partitions
    for jobs in ("2", "3", "7"):
        for path in partitions:  # one partition at a time: fewer segments than cores
            assert _validate(["--jobs", jobs, str(path)]) == _validate(["--jobs", "1", str(path)]), path
    if tree == "v2":
        assert splits
    copy = tmp_path / "one.log"
    shutil.copy(GENERATED / "v2" / "segmented-0" / "00000000000000000000.log", copy)
    assert _validate(["--jobs", "5", str(copy)]) == _validate(["--jobs", "1", str(copy)])


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@pytest.mark.parametrize("parts", [2, 3, 9])
def test_a_split_segment_reports_what_one_walk_reports(parts: int, monkeypatch) -> None:
    """Index targets (entry positions) found in every range, gaps and order checked at the seams."""
    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.checks.segment_checks import scan_segment

    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    paths = sorted([*GENERATED.glob("v2/*/*.log"), *GENERATED.glob("corrupt/v2-*/*.log")])
    assert len(paths) > 10
    for path in paths:
        data = path.read_bytes()
        starts, pos = [], 0
        while pos + 12 <= len(data):
            starts.append(pos)
            pos += 12 + max(1, int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True))
        wanted = set(starts[::2])
        one = scan_segment(path, ValidateOptions(), index_positions=wanted)
        for mapped in (True, False):
            options = ValidateOptions(mmap=mapped, split=parallel.splitter(parts))
            split = scan_segment(path, options, index_positions=wanted)
            assert split == one, path


def test_the_default_uses_only_the_cores_idle_at_start() -> None:
    """Without --jobs: a busy machine gets one mapped walker, never two walkers fighting for a core."""
    assert parallel.idle_cores(2, 0) == 2
    assert parallel.idle_cores(2, 1) == 1
    assert parallel.idle_cores(2, 5) == 1
    assert parallel.idle_cores(8, 3) == 5
    assert plan_jobs([1024 * MiB] * 4, parallel.idle_cores(2, 1)) == parallel.ONE_WALKER
    assert 1 <= parallel.default_jobs(2) <= 2


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
def test_a_batch_carried_in_a_record_value_is_not_taken_for_a_cut(tmp_path, monkeypatch) -> None:
    """A whole valid batch inside a record's value looks like a batch start to the cut search: the
    ranges then do not meet at the seam, the prefix stops there and the walk goes on from it."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafka_tools.format import batch_runs
    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.checks.segment_checks import scan_segment

    inner = (GENERATED / "v2" / "none-0" / "00000000000000000000.log").read_bytes()
    first = inner[: 12 + int.from_bytes(inner[8:12], "big")]
    data, offset = b"", 0
    for n in range(6):
        b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 30)
        for i in range(3):
            value = first if n == 3 else b"v" * 50
            b.append(i, timestamp=1_700_000_000_000 + offset + i, key=b"k", value=value, headers=[])
        batch = bytearray(b.build())
        batch[0:8] = offset.to_bytes(8, "big")
        data += bytes(batch)
        offset += 3
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    carried = data.index(first)
    with open(path, "rb") as f:
        assert batch_runs.batch_start_after(f.fileno(), carried - 5, len(data)) == carried
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    monkeypatch.setattr(parallel, "range_cuts", lambda size, threads: [carried - 5])
    prefix = parallel.split_prefix(path, 0, [], 2)
    assert prefix is not None and prefix.count == 4  # the batches up to the seam, not the carried one
    one = scan_segment(path, ValidateOptions())
    split = scan_segment(path, ValidateOptions(split=parallel.splitter(2)))
    assert split == one and one.entries == 6 and not one.findings


def _no_threads(monkeypatch) -> list[str]:
    """Make every way of starting parallel work fail the test, and /proc/loadavg unread: the calls
    attempted are listed."""
    import _thread
    import concurrent.futures
    import threading

    attempted: list[str] = []

    def refuse(what: str):
        def call(*args, **kwargs):
            attempted.append(what)
            raise AssertionError(f"{what} on a small input")

        return call

    monkeypatch.setattr(parallel, "others_running", refuse("read /proc/loadavg"))
    monkeypatch.setattr(parallel, "cpu_pressure", refuse("read /proc/pressure/cpu"))
    monkeypatch.setattr(threading.Thread, "start", refuse("thread start"))
    monkeypatch.setattr(_thread, "start_new_thread", refuse("thread start"))
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", refuse("pool"))
    monkeypatch.setattr(os, "fork", refuse("fork"))
    return attempted


def test_the_default_on_a_small_input_starts_nothing(monkeypatch) -> None:
    """`ktool validate` of a 4 KiB segment without --jobs does the work of `--jobs 1`: no load read,
    no thread, no pool; the answer is the same."""
    small = GENERATED / "v2" / "none-0" / "00000000000000000000.log"
    one = _validate(["--jobs", "1", str(small)])
    attempted = _no_threads(monkeypatch)
    monkeypatch.setattr("kafka_tools.cli.validate.usable_cores", lambda: 8)
    assert _validate([str(small)]) == one
    assert _validate([str(GENERATED / "v2")]) == _validate(["--jobs", "1", str(GENERATED / "v2")])
    assert attempted == []


def test_one_walker_is_settled_before_the_inputs_are_read(monkeypatch) -> None:
    """`--jobs 1` (or one usable core) plans without a stat or a read of any segment."""
    from kafka_tools.log.files.discover import discover

    found = discover([GENERATED / "v2"])
    monkeypatch.setattr(parallel, "segment_sizes", lambda paths: pytest.fail("sizes read for one walker"))
    assert parallel.plan_for(found, 1, 8) == parallel.ONE_WALKER
    assert parallel.plan_for(found, None, 1) == parallel.ONE_WALKER


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
def test_the_default_on_a_large_input_asks_the_idle_cores(monkeypatch) -> None:
    from kafka_tools.log.files.discover import discover

    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    found = discover([GENERATED / "v2" / "none-0" / "00000000000000000000.log"])
    monkeypatch.setattr(parallel, "cpu_pressure", lambda: 0.0)
    monkeypatch.setattr(parallel, "others_running", lambda: 0)
    assert parallel.plan_for(found, None, 2) == JobsPlan(2, True)
    monkeypatch.setattr(parallel, "others_running", lambda: 1)
    assert parallel.plan_for(found, None, 2) == parallel.ONE_WALKER
    # nothing else runnable at this instant, but tasks have been waiting for CPU: one walker
    monkeypatch.setattr(parallel, "others_running", lambda: 0)
    monkeypatch.setattr(parallel, "cpu_pressure", lambda: parallel.CPU_PRESSURE_BUSY + 1)
    assert parallel.plan_for(found, None, 2) == parallel.ONE_WALKER
    assert parallel.plan_for(found, 2, 2) == JobsPlan(2, True)  # --jobs 2 is taken as said


def test_cpu_pressure_is_read_as_linux_writes_it(tmp_path, monkeypatch) -> None:
    """/proc/pressure/cpu's `some avg10` (a percentage); 0 where the file is missing or unreadable."""
    psi = tmp_path / "cpu"
    monkeypatch.setattr(parallel, "CPU_PRESSURE", str(psi))
    psi.write_text("some avg10=46.59 avg60=47.06 avg300=52.27 total=20719975385\nfull avg10=0.00 total=0\n")
    assert parallel.cpu_pressure() == 46.59
    psi.write_text("")
    assert parallel.cpu_pressure() == 0.0
    psi.unlink()
    assert parallel.cpu_pressure() == 0.0


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@pytest.mark.parametrize("parts", [2, 3])
def test_a_split_maps_its_ranges_on_parts_minus_one_new_threads(parts: int, monkeypatch) -> None:
    """The calling thread walks ranges too, and `parts - 1` threads of their own (no pool) share the
    others; each range maps the file itself (pread's copy cost 1.7x the map's CPU)."""
    import _thread

    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.checks.segment_checks import scan_segment

    path = GENERATED / "v2" / "segmented-0" / "00000000000000000000.log"
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    started: list[int] = []
    real_start = _thread.start_new_thread
    monkeypatch.setattr(_thread, "start_new_thread", lambda f, args: started.append(1) or real_start(f, args))
    mapped: list[bool] = []
    steps: set[int] = set()
    real_window = parallel.SegmentWindow

    def window(*args, use_mmap: bool, release_step: int):
        mapped.append(use_mmap)
        steps.add(release_step)
        return real_window(*args, use_mmap=use_mmap, release_step=release_step)

    monkeypatch.setattr(parallel, "SegmentWindow", window)
    split = scan_segment(path, ValidateOptions(split=parallel.splitter(parts)))
    assert split == scan_segment(path, ValidateOptions())
    assert len(started) == parts - 1
    assert len(mapped) > parts and all(mapped)  # more ranges than threads, all mapped
    assert steps == {parallel.walker_step(parts)}


def test_walkers_hand_pages_back_in_steps_that_keep_the_rss_flat() -> None:
    """Together the walkers keep about WALKERS_RESIDENT mapped (the RSS stays far below 100 MB with
    any number of threads), and none steps by less than MIN_WALKER_STEP: at 2 MiB two threads'
    madvise calls cost 20 % more CPU than one walker (log/workers/parallel.py)."""
    assert parallel.JobsPlan(1, False).step is None  # one walker: its own, larger steps
    for threads in (2, 3, 4, 8, 64):
        step = parallel.JobsPlan(threads, False).step
        assert step == parallel.walker_step(threads) >= parallel.MIN_WALKER_STEP
        assert step * threads <= max(parallel.WALKERS_RESIDENT, threads * parallel.MIN_WALKER_STEP)
    assert parallel.walker_step(2) * 2 == parallel.WALKERS_RESIDENT


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
def test_a_range_that_fails_fails_the_split(monkeypatch) -> None:
    """An error in a range's thread reaches the caller (after every range has ended), as the
    sequential walk's own error would."""
    path = GENERATED / "v2" / "segmented-0" / "00000000000000000000.log"
    real = parallel._range_run

    def second_fails(p, start, *rest):
        if start:
            raise OSError(f"{p}: cannot read at {start}")
        return real(p, start, *rest)

    monkeypatch.setattr(parallel, "_range_run", second_fails)
    with pytest.raises(OSError, match="cannot read at"):
        parallel.split_prefix(path, 0, [], 3)


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
def test_a_split_without_threads_to_be_had_is_walked_by_the_caller(monkeypatch) -> None:
    """A process at its thread limit still gets its answer: the calling thread walks every range."""
    import _thread

    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.checks.segment_checks import scan_segment

    def no_thread(function, args):
        raise RuntimeError("can't start new thread")

    path = GENERATED / "v2" / "segmented-0" / "00000000000000000000.log"
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    one = scan_segment(path, ValidateOptions())
    monkeypatch.setattr(_thread, "start_new_thread", no_thread)
    assert scan_segment(path, ValidateOptions(split=parallel.splitter(3))) == one


def test_ahead_gives_every_result_in_order_and_the_asking_thread_walks_too(monkeypatch) -> None:
    """Several segments on `threads` threads: the results in the calls' order, the same as one by
    one; the asking thread runs calls while it waits (it is one of the walkers), and one helper
    fewer than threads is started."""
    import _thread
    import threading

    helpers_started: list[int] = []
    ran_on: list[int] = []
    gate = threading.Event()

    def work(k: int) -> int:
        ran_on.append(threading.get_ident())
        if k == 0:
            gate.wait(10)  # the first call is held by whoever took it until another call has ended
        else:
            gate.set()
        return k * k

    real = _thread.start_new_thread

    def start(f, args):
        helpers_started.append(1)
        return real(f, args)

    monkeypatch.setattr(_thread, "start_new_thread", start)
    pending = parallel.ahead(work, [(k,) for k in range(9)], 2)
    assert [p.result() for p in pending] == [k * k for k in range(9)]
    assert helpers_started == [1]
    assert threading.get_ident() in ran_on and len(set(ran_on)) == 2


def test_ahead_raises_a_calls_error_where_its_result_is_asked_and_cancels_the_rest() -> None:
    ran: list[int] = []

    def work(k: int) -> int:
        ran.append(k)
        if k == 1:
            raise OSError(f"cannot read segment {k}")
        return k

    pending = parallel.ahead(work, [(k,) for k in range(4)], 1)  # no helper: every call runs here
    assert pending[0].result() == 0
    with pytest.raises(OSError, match="cannot read segment 1"):
        pending[1].result()
    for p in pending[2:]:
        p.cancel()
    assert ran == [0, 1]  # cancelled before anyone took them: never run


def test_a_log_dir_on_two_threads_imports_no_pool(monkeypatch) -> None:
    """Several segments on several threads: the same answer as one walker, with no
    concurrent.futures (its import and logging's cost 5-15 ms, a tenth of a 1 GiB walk)."""
    import sys

    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    src = GENERATED / "v2"
    one = _validate(["--jobs", "1", str(src)])
    monkeypatch.delitem(sys.modules, "concurrent.futures", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_Refuse("concurrent.futures"), *sys.meta_path])
    assert _validate(["--jobs", "2", str(src)]) == one


class _Refuse:
    """An import hook that fails the import of one module."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, name, path=None, target=None):
        if name == self.name:
            raise AssertionError(f"{name} imported")
        return None


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
def test_segments_left_over_after_a_round_a_thread_are_split() -> None:
    """3 large v2 segments on 2 threads: the third is split, so that the thread done first helps with
    it; nothing is split when the segments go round evenly or the last one cannot be split."""
    big = SPLIT_MIN
    assert plan_jobs([big] * 3, 2) == JobsPlan(2, False, 1)
    assert plan_jobs([big] * 5, 3) == JobsPlan(3, False, 2)
    assert plan_jobs([big] * 4, 2) == JobsPlan(2, False)
    assert plan_jobs([big, big, MiB], 2) == JobsPlan(2, False)  # a small last segment: walked as it is
    assert plan_jobs([big] * 3, 2, [True, True, False]) == JobsPlan(2, False)  # v0/v1: cannot be split


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@pytest.mark.parametrize("jobs", ["3", "4"])
def test_a_log_dir_whose_last_segments_are_split_reports_what_one_walker_reports(jobs, monkeypatch) -> None:
    """On threads (no worker can be spawned here; in the pool: tests/log/test_pooled_scans.py)."""
    src = GENERATED / "v2"
    one = _validate(["--jobs", "1", str(src)])
    monkeypatch.setattr(pool, "available", lambda: False)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    split: list[Path] = []
    real = parallel.split_prefix
    monkeypatch.setattr(parallel, "split_prefix", lambda path, *a: split.append(path) or real(path, *a))
    assert _validate(["--jobs", jobs, str(src)]) == one
    segments = sorted(src.glob("*-0/*.log"))
    assert sorted(split) == segments[len(segments) - len(segments) % int(jobs) :]


def test_segments_walked_in_python_share_no_core() -> None:
    """Compressed v0/v1 message sets (and 0.7 files) are decoded in Python, holding the GIL: a log
    dir of them is one walker's work (two threads on four 17 MB v1 gzip segments: 1.1-1.5x the CPU,
    no sooner done); a mix gets a walker for the GIL-free ones and one for the rest."""
    big = 64 * MiB
    assert plan_jobs([big] * 4, 2, [False] * 4, [True] * 4) == parallel.ONE_WALKER
    assert plan_jobs([big] * 4, 4, [False] * 4, [True, False, True, False]) == JobsPlan(3, False)
    assert plan_jobs([big] * 4, 2, [False] * 4, [True, True, True, False]) == JobsPlan(2, False)
    # the GIL-free part alone is too small to share
    assert plan_jobs([big, big, MiB], 2, [False] * 3, [True, True, False]) == parallel.ONE_WALKER


def test_the_planner_reads_whether_a_segment_is_walked_in_python(monkeypatch) -> None:
    monkeypatch.setattr(parallel, "LOOKED_MIN", 0)

    def in_python(path: Path) -> bool:
        return parallel.walked_in_python(path, path.stat().st_size)

    for codec in ("gzip", "lz4", "snappy"):
        for magic in ("v0", "v1"):
            assert in_python(GENERATED / magic / f"{codec}-0" / "00000000000000000000.log"), (magic, codec)
        assert not in_python(GENERATED / "v2" / f"{codec}-0" / "00000000000000000000.log"), codec
    for magic in ("v0", "v1", "v2"):
        assert not in_python(GENERATED / magic / "none-0" / "00000000000000000000.log"), magic
    assert all(in_python(p) for p in GENERATED.glob("kafka07/**/*.kafka"))


def test_a_log_dir_walked_in_python_starts_no_thread(monkeypatch) -> None:
    """`--jobs 2` on compressed v1 segments where the walkers would be threads (one runs already, or
    no worker can be spawned here): one walker, no thread started, the same answer. (In the pool they
    are walked on every core: tests/log/test_pooled_scans.py.)"""
    src = GENERATED / "v1"
    one = _validate(["--jobs", "1", str(src)])
    monkeypatch.setattr(pool, "available", lambda: False)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(parallel, "LOOKED_MIN", 0)
    assert _validate(["--jobs", "2", str(src)]) == one  # v1 none-0 beside them: a walker each
    compressed = [p for p in sorted(src.glob("*-0")) if not p.name.startswith("none")]
    alone = {p: _validate(["--jobs", "1", str(p)]) for p in compressed}
    attempted = _no_threads(monkeypatch)
    assert all(_validate(["--jobs", "2", str(p)]) == alone[p] for p in compressed)
    assert _validate(["--jobs", "2", *map(str, compressed)])[0] == 0
    assert attempted == []


def test_every_walker_step_is_whole_pages() -> None:
    """madvise takes whole pages: 16 MiB shared by 3 walkers is not (`--jobs 3` failed with
    'Invalid argument' on a large segment)."""
    import mmap

    for threads in range(1, 65):
        assert parallel.walker_step(threads) % mmap.PAGESIZE == 0


def test_a_mapped_window_hands_back_whole_pages_whatever_its_step(tmp_path: Path) -> None:
    from kafka_tools.format.segment import SegmentWindow

    path = tmp_path / "zeros.log"
    path.write_bytes(bytes(14 * MiB))
    with open(path, "rb") as f:
        win = SegmentWindow(f, 14 * MiB, use_mmap=True, release_step=16 * MiB // 3)
        for position in range(0, 14 * MiB - 4096, 256 * 1024):
            win.ensure(position, 4096)
        assert win._released > 0 and win._released % 4096 == 0


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
def test_three_walkers_on_a_segment_longer_than_their_steps(tmp_path: Path, monkeypatch) -> None:
    """Ranges that hand pages back (each longer than walker_step(3), a step that is not a whole number
    of pages before rounding) report what one walker reports."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as out:
        for n in range(48):
            b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 30)
            b.append(0, timestamp=1_700_000_000_000 + n, key=b"k", value=bytes([n]) * MiB, headers=[])
            batch = bytearray(b.build())
            batch[0:8] = n.to_bytes(8, "big")
            out.write(batch)
    one = _validate(["--jobs", "1", str(path)])
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    assert one[0] == 0 and _validate(["--jobs", "3", str(path)]) == one


def test_dump_log_default_jobs_come_from_the_same_plan(monkeypatch, tmp_path: Path) -> None:
    """dump-log's default (issue 51: it was every usable core, slower than --jobs 1 under load): one
    process for a small input, a single file or a busy machine; the idle cores for a large input on an
    idle one; --jobs as given, at most one a file."""
    files = [tmp_path / f"{k:020d}.log" for k in range(3)]
    for f in files:
        f.write_bytes(b"\0" * 1024)
    names = [str(f) for f in files]
    monkeypatch.setattr(parallel, "cpu_pressure", lambda: 0.0)
    monkeypatch.setattr(parallel, "others_running", lambda: 0)
    assert parallel.jobs_for_files(names, None, 2) == 1  # 3 KB: small
    assert parallel.jobs_for_files(names, 5, 2) == 3  # as given, one a file at most
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    assert parallel.jobs_for_files(names, None, 2) == 2
    assert parallel.jobs_for_files(names[:1], None, 2) == 1  # one file: nothing to share
    monkeypatch.setattr(parallel, "cpu_pressure", lambda: 50.0)  # tasks waited for a CPU: busy
    assert parallel.jobs_for_files(names, None, 2) == 1
