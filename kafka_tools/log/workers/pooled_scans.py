"""A log dir's segments walked by the worker pool (log/workers/pool.py) instead of threads, where workers
can be spawned (Linux): `ktool validate --jobs N` of several segments.

Why: threads each walking a map of their own hand their pages back by madvise(MADV_DONTNEED) every
walker_step, and each such call flushes the TLB of every core the process runs on (an interrupt, in
a virtual machine an exit) while Python's mmap holds the GIL through it; separate processes share
neither the address space nor the GIL (issue 27, bench/README.md "A log dir's segments in forked
processes"). The calling process is one of the walkers. Reports come back as plain values
(log/workers/report_wire.py), each as soon as its segment is done, and the progress bar (which no worker
may draw) advances by a segment's bytes as its report arrives.

The segments left over after a round a walker (`split_tail`, large v2 ones) are split into ranges
taken from the same calls as the whole segments, so the walker done first helps with them (3 x 1 GiB
on 2 cores: 1.19x sooner than the third walked whole). One with a `.index` or `.timeindex` (its
ranges would carry index targets through the pipe, up to a million) is walked when its report is
asked for, after the others, its ranges on threads as log/workers/parallel.py's splitter walks them; one
that cannot be split (a running broker's, not beginning with a v2 batch) is one call among the
others. No worker starts workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kafka_tools.format.batch_runs import BatchRun, begins_with_batch
from kafka_tools.format.kinds import base_offset_of
from kafka_tools.log.checks.findings import SegmentReport, ValidateOptions
from kafka_tools.log.files.dirs import Segment
from kafka_tools.log.files.discover import Discovery
from kafka_tools.log.workers import parallel, pool
from kafka_tools.log.workers.report_wire import report_from_wire, report_to_wire


class Answer:
    """A segment's report as `ahead`'s calls give it (`result()`, `cancel()`): walked already (by a
    worker or here), or walked here when asked (`later`)."""

    __slots__ = ("_later", "_outcome")

    def __init__(self, outcome: tuple[bool, Any] | None = None, later: Callable[[], Any] | None = None):
        self._outcome = outcome
        self._later = later

    def result(self) -> SegmentReport:
        if self._later is not None:
            later, self._later = self._later, None
            return later()
        assert self._outcome is not None, "cancelled"
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    def cancel(self) -> None:
        self._later = None


def scan_in_pool(
    found: Discovery, options: ValidateOptions, progress, processes: int, split_tail: int = 0
) -> dict[Path, Answer] | None:
    """Every segment of `found` checked on `processes` processes (this one and `processes - 1` workers),
    the last `split_tail` in ranges (see the module's docstring); None where no worker can be spawned
    (not Linux): the caller walks them on threads."""
    from kafka_tools.log.checks.partition_checks import segment_calls

    if not pool.available():
        return None
    keys, checks = segment_calls(found, options)
    size = dict(zip(keys, parallel.segment_sizes(keys), strict=True))
    whole = len(checks) - split_tail
    calls: list[tuple] = [(*check, None) for check in checks[:whole]]
    owner: list[tuple[Path, int]] = [(key, size[key]) for key in keys[:whole]]  # each call's file, bytes
    walked = {key: k for k, key in enumerate(keys[:whole])}  # a segment walked whole: its call
    split: dict[Path, range] = {}  # a tail segment's range calls
    later: dict[Path, tuple] = {}  # a tail segment walked when its report is asked for
    for key, check in zip(keys[whole:], checks[whole:], strict=True):
        if _has_indexes(check[1]):
            later[key] = check
            continue
        if not _splits_in_processes(key):
            walked[key] = len(calls)
            calls.append((*check, None))
            owner.append((key, size[key]))
            continue
        ranges = parallel.range_calls(key, base_offset_of(key) or 0, [], processes)
        split[key] = range(len(calls), len(calls) + len(ranges))
        calls += [(parallel.walk_range, *r) for r in ranges]
        owner += [(key, r[2] - r[1]) for r in ranges]
    answered = _progress_by_call(owner, progress) if progress else None
    outcomes = pool.outcomes(_call, calls, processes, _to_wire, _from_wire, answered)
    scans: dict[Path, Answer] = {}
    for key, check in zip(keys, checks, strict=True):
        if key in split:
            runs = [outcomes[k] for k in split[key]]
            prefix = parallel.joined_runs(key, [v for _, v in runs]) if all(ok for ok, _ in runs) else None
            scans[key] = Answer(later=_walk_after(check, prefix))
        elif key in later:
            scans[key] = Answer(later=_walk_split_on_threads(check, processes, progress))
        else:
            scans[key] = Answer(outcomes[walked[key]])
    return scans


def _call(work: Callable[..., Any], *args: Any) -> Any:
    return work(*args)


def _to_wire(value: SegmentReport | BatchRun | None) -> tuple | None:
    if type(value) is SegmentReport:
        return ("segment", report_to_wire(value))
    return ("range", parallel.run_to_wire(value))


def _from_wire(wire: tuple) -> SegmentReport | BatchRun | None:
    what, fields = wire
    return report_from_wire(fields) if what == "segment" else parallel.run_from_wire(fields)


def _has_indexes(target: Segment | Path) -> bool:
    """A segment with a `.index` or `.timeindex` beside it: its ranges would carry index targets."""
    return isinstance(target, Segment) and (target.offset_index is not None or target.time_index is not None)


def _splits_in_processes(path: Path) -> bool:
    """Whether a leftover segment (without indexes) is cut into ranges for the workers: what
    log/workers/parallel.py's splitter would split, beginning with a v2 batch."""
    return parallel.may_split(path) and begins_with_batch(path)


def _walk_after(check: tuple, prefix: BatchRun | None) -> Callable[[], SegmentReport]:
    """The rest of a split segment, walked here after its ranges (`prefix`, None when they did not all
    answer: the whole segment is walked here then, and fails or reports as `--jobs 1`)."""
    fn, target, options = check
    with_prefix = replace(options, split=lambda path, base, wanted: prefix)
    return lambda: fn(target, with_prefix, None)


def _walk_split_on_threads(check: tuple, threads: int, progress) -> Callable[[], SegmentReport]:
    fn, target, options = check
    on_threads = replace(options, split=parallel.splitter(threads))
    return lambda: fn(target, on_threads, progress(_path(target)) if progress else None)


def _path(target: Segment | Path) -> Path:
    return target.log if isinstance(target, Segment) else target


def _progress_by_call(owner: list[tuple[Path, int]], progress) -> Callable[[int], None]:
    """`answered(k)` for pool.outcomes: the bar advanced by call k's bytes (a worker cannot draw it; a
    segment's bar is asked for when its first answer is in)."""
    ticks: dict[Path, Callable[[int], None]] = {}
    reached: dict[Path, int] = {}

    def answered(k: int) -> None:
        path, size = owner[k]
        if path not in ticks:
            ticks[path], reached[path] = progress(path), 0
        reached[path] += size
        if ticks[path] is not None:
            ticks[path](reached[path])

    return answered
