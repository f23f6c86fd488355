"""A log dir's segments walked by the worker pool (log/workers/pooled_scans.py): the answer `--jobs 1` gives,
in the same order, whether the segments are walked in processes or on threads, with damage, a segment
that cannot be read, a worker that dies, a running broker's dir and leftover segments split into
ranges; no thread started beside the workers. The checks a test puts in the workers' way are
module-level (tests/support/pool_calls.py): a spawned worker finds them by name."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_tools.cli.main import cli
from kafka_tools.format import accel
from kafka_tools.log import validate
from kafka_tools.log.checks import partition_checks
from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.checks.segment_checks import scan_segment
from kafka_tools.log.files.discover import discover
from kafka_tools.log.workers import parallel, pool
from kafka_tools.log.workers.report_wire import report_from_wire, report_to_wire
from tests.independent import FIXTURES
from tests.log.test_read import build_partition
from tests.support import pool_calls
from tests.support.locks import lock_held_elsewhere

GENERATED = FIXTURES / "generated"
has_c = accel.fast("scan_batches") is not None
needs_fork = pytest.mark.skipif(not pool.available(), reason="no worker can be spawned here")


def _validate(*args: str) -> tuple[int, list[dict]]:
    result = CliRunner().invoke(cli, ["validate", "--json", *args], catch_exceptions=False)
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


def _walkers(monkeypatch, tmp_path: Path, forked_walkers: bool = True) -> Path:
    """Every segment check writes `pid path` to a file, from whichever process ran it. With
    `forked_walkers`, the caller's first check and a worker's first check wait (up to 10 s) for each
    other, so that on these small fixtures (walked faster than a process starts) both walk one
    (pool_calls.check_segment_logged)."""
    log, took = tmp_path / "walked.txt", tmp_path / "took.txt"
    pool_calls.spawned(monkeypatch)
    pool_calls.started_at_once(monkeypatch)
    monkeypatch.setenv("KTOOL_TEST_WALKED", str(log))
    monkeypatch.setenv("KTOOL_TEST_TOOK", str(took) if forked_walkers else "")
    monkeypatch.setattr(pool_calls, "first", [])
    monkeypatch.setattr(partition_checks, "check_segment", pool_calls.check_segment_logged)
    return log


def _walked(log: Path) -> dict[str, int]:
    """Which process walked each segment (the last to report it)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return {path: int(pid) for pid, path in (line.split(" ", 1) for line in lines)}


def _no_thread_started(monkeypatch) -> None:
    import _thread

    def refuse(*args, **kwargs):
        raise AssertionError("a thread was started beside the workers")

    monkeypatch.setattr(_thread, "start_new_thread", refuse)
    monkeypatch.setattr(threading.Thread, "start", refuse)


@needs_fork
@pytest.mark.parametrize("tree", ["v0", "v2", "corrupt", "mixed"])
@pytest.mark.parametrize("jobs", ["2", "3"])
def test_segments_in_processes_report_what_threads_and_one_walker_report(
    tree: str, jobs: str, monkeypatch, tmp_path: Path
) -> None:
    """Findings, counts, order and exit code equal `--jobs 1`'s and the threads'; every segment walked
    once, by the caller or a worker, and no thread started."""
    paths = [GENERATED / "v0", GENERATED / "v2", GENERATED / "v1"] if tree == "mixed" else [GENERATED / tree]
    args = [str(p) for p in paths]
    one = _validate("--jobs", "1", *args)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(pool, "available", lambda: False)
    on_threads = _validate("--jobs", jobs, *args)
    monkeypatch.undo()

    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    walked = _walkers(monkeypatch, tmp_path)
    _no_thread_started(monkeypatch)
    assert _validate("--jobs", jobs, *args) == on_threads == one
    by = _walked(walked)
    segments = {str(p) for p in parallel.segment_paths(discover(paths))}
    assert set(by) == segments
    assert os.getpid() in by.values() and len(set(by.values())) > 1  # the caller and a worker


@needs_fork
def test_segments_walked_in_python_get_every_core_in_processes(monkeypatch, tmp_path: Path) -> None:
    """Compressed v1 message sets are decoded in Python, holding the GIL: on threads they share one
    walker (log/workers/parallel.py), in the pool's workers each has a GIL of its own and a core."""
    compressed = [str(p) for p in sorted((GENERATED / "v1").glob("*-0")) if not p.name.startswith("none")]
    one = _validate("--jobs", "1", *compressed)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(parallel, "LOOKED_MIN", 0)
    found = discover(compressed)
    assert parallel.plan_for(found, 2, 2) == parallel.JobsPlan(2, False)
    with monkeypatch.context() as m:
        m.setattr(pool, "available", lambda: False)
        assert parallel.plan_for(found, 2, 2) == parallel.ONE_WALKER  # on threads: one walker
    walked = _walkers(monkeypatch, tmp_path)
    _no_thread_started(monkeypatch)
    assert _validate("--jobs", "2", *compressed) == one
    assert len(set(_walked(walked).values())) == 2


@needs_fork
def test_a_report_crosses_the_pipe_whole(monkeypatch) -> None:
    """Every field a report's reader uses comes back as it left (the index targets, used up by the
    index checks in the walker, stay there)."""
    paths = sorted(GENERATED.glob("*/*-0/*.log"))
    assert len(paths) > 10
    for path in paths:
        report = scan_segment(path, ValidateOptions(), index_positions={0})
        back = report_from_wire(report_to_wire(report))
        report.entry_positions = {}
        assert back == report, path


@needs_fork
def test_a_segment_that_fails_in_a_walker_is_walked_again_here_and_reported_as_one_walker_does(
    monkeypatch, tmp_path: Path
) -> None:
    """A segment that cannot be read (here: the first segment the worker takes, whose every
    read then fails, in any process) is run again by the caller, whose error `validate` reports as
    `--jobs 1` does (exit 3, `unreadable-file`)."""
    src = GENERATED / "v2"
    parent = os.getpid()
    bad, tried = tmp_path / "bad.txt", tmp_path / "tried.txt"
    pool_calls.spawned(monkeypatch)
    pool_calls.started_at_once(monkeypatch)
    monkeypatch.setenv("KTOOL_TEST_BAD", str(bad))
    monkeypatch.setenv("KTOOL_TEST_TRIED", str(tried))
    # the workers' check and --jobs 1's
    monkeypatch.setattr(partition_checks, "check_segment", pool_calls.check_segment_unreadable)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    forked_result = _validate("--jobs", "2", str(src))
    pids = [int(line) for line in tried.read_text().split()]
    assert pids[0] != parent and pids[-1] == parent  # failed in the walker, then here
    one = _validate("--jobs", "1", str(src))
    assert one[0] == 3 and any(o.get("kind") == "unreadable-file" for o in one[1])
    assert forked_result == one


@needs_fork
def test_the_segments_of_a_walker_that_died_are_walked_by_the_caller(monkeypatch, tmp_path: Path) -> None:
    """A walker killed mid-way (the OOM killer, a signal): no answer lost, no zombie left."""
    src = GENERATED / "v2"
    one = _validate("--jobs", "1", str(src))
    died = tmp_path / "died.txt"
    pids = pool_calls.spawned(monkeypatch)
    pool_calls.started_at_once(monkeypatch)
    monkeypatch.setenv("KTOOL_TEST_DIED", str(died))
    monkeypatch.setattr(partition_checks, "check_segment", pool_calls.check_segment_dies_in_worker)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    assert _validate("--jobs", "3", str(src)) == one
    assert len(pids) == 2 and died.read_text()  # a segment lost with its walker, walked here
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already


@needs_fork
def test_a_thread_running_no_longer_keeps_the_segments_on_threads(monkeypatch, tmp_path: Path) -> None:
    """Spawned workers inherit no lock a thread may hold (a fork would): with another thread running
    the segments still go to the pool, and the answer is `--jobs 1`'s."""
    src = GENERATED / "v2"
    one = _validate("--jobs", "1", str(src))
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    walked = _walkers(monkeypatch, tmp_path)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert _validate("--jobs", "2", str(src)) == one
    finally:
        release.set()
        other.join()
    assert len(set(_walked(walked).values())) == 2


@needs_fork
def test_a_running_brokers_dir_settles_its_newest_segments_as_one_walker_does(
    monkeypatch, tmp_path: Path
) -> None:
    """The newest segment's half-written tail is in flight, not damage, whichever process read it."""
    from tests.log.test_live_races import _half_written_tail

    logs = tmp_path / "logs"
    part, _ = build_partition(logs, 2, "none", segments=4)
    (logs / ".lock").touch()
    _half_written_tail(part)
    with lock_held_elsewhere(logs / ".lock"):
        one = _validate("--jobs", "1", str(logs))
        monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
        walked = _walkers(monkeypatch, tmp_path)
        assert _validate("--jobs", "2", str(logs)) == one
    assert any(o.get("kind") == "in-flight" for o in one[1]) and one[0] == 0
    assert len(set(_walked(walked).values())) == 2


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@needs_fork
@pytest.mark.parametrize("jobs", ["3", "7"])  # 8 v2 and 10 corrupt v2 segments: 1-3 left over
@pytest.mark.parametrize("tree", ["v2", "corrupt"])
def test_leftover_segments_are_split_into_ranges_among_the_same_walkers(
    jobs: str, tree: str, monkeypatch, tmp_path: Path
) -> None:
    """The segments left after a round a walker (here without indexes, as named files) are cut into
    ranges the workers take beside the whole segments: no second fork, no thread; damaged
    segments among them report what one walk reports."""
    files = []
    pattern = "v2/*-0/00000000000000000000.log" if tree == "v2" else "corrupt/v2-*/00000000000000000000.log"
    for k, src in enumerate(sorted(GENERATED.glob(pattern))):
        files.append(tmp_path / f"{k:020d}.log")
        shutil.copy(src, files[-1])
    assert len(files) > 1
    args = [str(f) for f in files]
    one = _validate("--jobs", "1", *args)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    split: list[Path] = []
    real = parallel.range_calls
    monkeypatch.setattr(parallel, "range_calls", lambda path, *a: split.append(path) or real(path, *a))
    forks = pool_calls.spawned(monkeypatch)
    _no_thread_started(monkeypatch)
    assert _validate("--jobs", jobs, *args) == one
    assert split and split == files[len(files) - len(files) % int(jobs) :]
    assert len(forks) == int(jobs) - 1


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@needs_fork
def test_a_leftover_segment_with_indexes_is_split_on_threads_after_the_others(monkeypatch) -> None:
    """Its ranges would carry index targets (up to a million): they stay in this process, on threads
    started once the workers have ended."""
    src = GENERATED / "v2" / "segmented-0"
    one = _validate("--jobs", "1", str(src))
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    split: list[tuple[Path, bool]] = []
    real = parallel.split_prefix
    monkeypatch.setattr(
        parallel, "split_prefix", lambda path, *a: split.append((path, pool.available())) or real(path, *a)
    )
    assert _validate("--jobs", "2", str(src)) == one
    assert split == [(sorted(src.glob("*.log"))[-1], True)]


@needs_fork
def test_the_bar_advances_by_each_segment_as_its_report_arrives_after_the_spawn(monkeypatch) -> None:
    """A worker cannot draw the caller's bar: the caller asks for a segment's bar once the workers
    are spawned, and moves it to the segment's size when its report is in."""
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    src = GENERATED / "v2"
    forks = pool_calls.spawned(monkeypatch)
    reached: dict[Path, int] = {}

    def progress(path: Path):
        assert forks, "a bar asked for before the workers were spawned"
        reached[path] = 0
        return lambda position: reached.__setitem__(path, position)

    one = validate.validate_paths([src], ValidateOptions(), None, 1)
    forked_result = validate.validate_paths([src], ValidateOptions(), progress, 2)
    assert list(forked_result.all_findings()) == list(one.all_findings())
    assert forked_result.summary() == one.summary()
    sizes = {p: p.stat().st_size for p in parallel.segment_paths(discover([src]))}
    assert reached == sizes


@needs_fork
def test_a_terminal_bar_does_not_keep_the_segments_from_processes(monkeypatch, tmp_path: Path) -> None:
    """The bar's drawing thread does not keep the segments from the pool (render/progress.py)."""
    src = GENERATED / "v2"
    one = _validate("--jobs", "1", str(src))
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    walked = _walkers(monkeypatch, tmp_path)
    assert _validate("--progress", "--jobs", "2", str(src)) == one
    assert len(set(_walked(walked).values())) == 2


@needs_fork
def test_answers_come_in_as_each_call_ends_and_errors_are_answers() -> None:
    """pool.outcomes: (True, value) or (False, exception) for each call, in order, a worker's failed
    call run again here; `answered` told of each call once, in this process."""
    told: list[int] = []
    outcomes = pool.outcomes(pool_calls.square_or_raise, [(k,) for k in range(30)], 2, answered=told.append)
    assert sorted(told) == list(range(30))
    for k, (ok, value) in enumerate(outcomes):
        assert (ok, value if ok else str(value)) == ((False, f"call {k}") if k % 7 == 3 else (True, k * k))


@needs_fork
def test_thousands_of_calls_are_all_answered_once() -> None:
    """A log dir of thousands of segments: each call answered once, in order."""
    told: list[int] = []
    calls = [(k,) for k in range(6000)]
    outcomes = pool.outcomes(pool_calls.negated, calls, 2, answered=told.append)
    assert outcomes == [(True, -k) for k in range(len(calls))]
    assert sorted(told) == list(range(len(calls)))


@needs_fork
def test_ctrl_c_in_the_caller_stops_the_walkers_and_leaves_no_zombie(monkeypatch, tmp_path: Path) -> None:
    """Interrupted while it walks (Ctrl-C): the workers are killed and reaped, the interrupt goes on
    up to the CLI."""
    src = GENERATED / "v2"
    forks = pool_calls.spawned(monkeypatch)
    monkeypatch.setattr(partition_checks, "check_segment", pool_calls.check_segment_interrupted)
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    with pytest.raises(KeyboardInterrupt):
        validate.validate_paths([src], ValidateOptions(), None, 3)
    assert len(forks) == 2
    for pid in forks:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped
