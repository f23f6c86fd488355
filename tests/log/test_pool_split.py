"""One large v2 segment's ranges walked by the worker pool (log/workers/pool.py): the same answer as one
walk and as the ranges on threads, errors and dead workers included, and workers only where their
results are small (no index targets)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafka_tools.format import accel
from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.checks.segment_checks import scan_segment
from kafka_tools.log.workers import parallel, pool
from tests.independent import FIXTURES
from tests.support import pool_calls

GENERATED = FIXTURES / "generated"
SEGMENTED = GENERATED / "v2" / "segmented-0" / "00000000000000000000.log"
has_c = accel.fast("scan_batches") is not None
needs_fork = pytest.mark.skipif(not pool.available(), reason="no worker can be spawned here")
_forks = pool_calls.spawned


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@needs_fork
@pytest.mark.parametrize("parts", [2, 3, 9])
def test_ranges_in_processes_report_what_one_walk_reports(parts: int, monkeypatch) -> None:
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    pids = _forks(monkeypatch)
    paths = sorted([*GENERATED.glob("v2/*/*.log"), *GENERATED.glob("corrupt/v2-*/*.log")])
    for path in paths:
        one = scan_segment(path, ValidateOptions())
        in_threads = scan_segment(path, ValidateOptions(split=parallel.splitter(parts)))
        in_processes = scan_segment(path, ValidateOptions(split=parallel.splitter(parts, processes=True)))
        assert in_processes == in_threads == one, path
    assert len(pids) >= parts - 1  # every segment that begins with a batch: parts - 1 walkers


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
def test_index_targets_keep_the_ranges_on_threads(monkeypatch) -> None:
    """A range's index targets can number a million (one per 4 KiB of log): they stay in the process
    that found them, so a split with targets walks on threads."""
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    pids = _forks(monkeypatch)
    data = SEGMENTED.read_bytes()
    starts, pos = [], 0
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
    wanted = set(starts[::3])
    one = scan_segment(SEGMENTED, ValidateOptions(), index_positions=wanted)
    split = scan_segment(SEGMENTED, ValidateOptions(split=parallel.splitter(3, True)), index_positions=wanted)
    assert split == one and one.entry_positions
    assert pids == []


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@needs_fork
def test_a_range_that_fails_in_a_walker_process_fails_the_split(monkeypatch) -> None:
    """A range that raises in a worker is run again by the caller, whose exception is raised once
    every range has ended, as on threads."""
    pids = _forks(monkeypatch)
    monkeypatch.setattr(parallel, "_range_run", pool_calls.later_ranges_fail)
    with pytest.raises(OSError, match="cannot read at"):
        parallel.split_prefix(SEGMENTED, 0, [], 3, processes=True)
    assert len(pids) == 2


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@needs_fork
def test_the_ranges_of_a_walker_that_died_are_walked_by_the_caller(monkeypatch) -> None:
    """A walker killed mid-way (the OOM killer, a signal) loses no range: the caller walks what it did
    not answer, and the answer is the one walk's."""
    pids = _forks(monkeypatch)
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    one = scan_segment(SEGMENTED, ValidateOptions())
    monkeypatch.setattr(parallel, "_range_run", pool_calls.range_run_dies_in_worker)
    assert scan_segment(SEGMENTED, ValidateOptions(split=parallel.splitter(3, processes=True))) == one
    assert pids and all(not os.path.exists(f"/proc/{pid}") for pid in pids)  # killed, and reaped


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@needs_fork
def test_a_split_without_processes_to_be_had_is_walked_by_the_caller(monkeypatch) -> None:
    def no_process(*args, **kwargs) -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    one = scan_segment(SEGMENTED, ValidateOptions())
    monkeypatch.setattr(pool.os, "posix_spawn", no_process)
    assert scan_segment(SEGMENTED, ValidateOptions(split=parallel.splitter(3, processes=True))) == one


@needs_fork
def test_workers_inherit_nothing_of_the_caller(tmp_path: Path) -> None:
    """A worker is spawned, not forked: none of the caller's descriptors (here a file it holds open),
    only its two pipes and /dev/null for stdin and stdout (stderr is the command's)."""
    with open(tmp_path / "held", "wb"):
        answers = pool.results(pool_calls.worker_fds, [(k,) for k in range(40)], 2)
    in_workers = [fds for fds in answers if fds == [0, 1, 2, pool.TASKS_FD, pool.ANSWERS_FD]]
    assert in_workers, answers  # at least one call ran in the worker, which has no other descriptor


@needs_fork
def test_pool_results_come_in_the_calls_order_from_every_process(monkeypatch) -> None:
    """Every call answered once, in order, by the caller and its walkers together."""
    pids = _forks(monkeypatch)
    calls = [(k,) for k in range(400)]
    answers = pool.results(pool_calls.square_and_pid, calls, 3)
    assert [a for a, _ in answers] == [k * k for k in range(400)]
    assert len(pids) == 2 and {who for _, who in answers} <= {os.getpid(), *pids}


@pytest.mark.skipif(not has_c, reason="ranges are walked by the C batch runs")
@needs_fork
def test_validate_of_one_large_segment_walks_its_ranges_in_processes(monkeypatch, tmp_path: Path) -> None:
    """`ktool validate --jobs 2 FILE` of one large v2 segment: its ranges in one worker and the
    caller, and the report --jobs 1 gives."""
    import json

    from click.testing import CliRunner

    from kafka_tools.cli.main import cli

    def run(*args: str) -> tuple[int, list[dict]]:
        argv = ["validate", "--json", *args, str(SEGMENTED)]
        result = CliRunner().invoke(cli, argv, catch_exceptions=False)
        return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]

    one = run("--jobs", "1")
    monkeypatch.setattr(parallel, "SMALL_INPUT", 0)
    monkeypatch.setattr(parallel, "SPLIT_MIN", 0)
    pids = _forks(monkeypatch)
    assert run("--jobs", "2") == one
    assert len(pids) == 1
    # A bar on the terminal: drawn by the caller, the workers spawned as before.
    assert run("--progress", "--jobs", "2") == one
    assert len(pids) == 2
