"""How `ktool validate --jobs N` spreads segments over cores, decided from the inputs, and the split of
one large v2 segment at batch boundaries.

Measured on 2 cores (bench/validate.py, bench/README.md): a memory-mapped walk is the fastest on one
core, but two threads of one process walking maps and releasing the pages behind them
(`madvise(MADV_DONTNEED)`) serialise on the process's memory map, so the parallel walk was slower than
one core. Threads that read with `pread` into their own buffers scale (the C walks, zlib and CRC-32C
release the GIL). Hence the plan:

* one core, or a small input: one walker, memory-mapped, as `--jobs 1`; without `--jobs`, as many
  walkers as there are idle cores when the command starts (a busy machine gets one mapped walker);
* several segments: threads (no more than segments), each reading with `pread`;
* fewer large segments than cores: each large v2 segment split at batch boundaries into one range a
  core, the ranges' ordinary batches (`BatchRun`) checked in threads, and the rest of the segment
  walked after them as usual (the findings are the same: a range's walk stops at the first batch that
  is not ordinary, and the sequential walk reports it); one segment that cannot be split (v0/v1,
  or below SPLIT_MIN) gets one mapped walker, as `--jobs 1`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_tools.broker_lock import is_live
from kafka_tools.format.batch_runs import (
    BatchRun,
    begins_with_batch,
    first_batch_offsets,
    scanner,
    split_points,
)
from kafka_tools.format.kinds import FileKind, kind_of
from kafka_tools.format.segment import RunBounds, SegmentWindow, walk_entries
from kafka_tools.log.segment_checks import PREAD_WINDOW

if TYPE_CHECKING:
    from concurrent.futures import Executor

SMALL_INPUT = 32 * 1024 * 1024  # below this, threads cost more than they give: one walker
SPLIT_MIN = 128 * 1024 * 1024  # segments at least this large are split when cores would be idle
INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class JobsPlan:
    """What validate runs: `threads` walkers; `mmap` whether they map the files (else pread);
    `split` whether large segments are cut into ranges, one a thread."""

    threads: int
    mmap: bool
    split: bool

    @property
    def reader(self) -> str:
        return "mmap" if self.mmap else "pread"


def idle_cores(cores: int, others_running: int) -> int:
    """The walkers the default `--jobs` starts: the usable cores no other task is running on now. A
    second walker on a core another task holds only adds the pread reader's extra CPU (and, where
    the scheduler shares CPU between process groups, buys no time at all), so it is never slower to
    leave it out."""
    return max(1, min(cores, cores - others_running))


def others_running() -> int:
    """Tasks runnable on this machine right now besides this one (/proc/loadavg's 4th field, which
    counts this process too; not the load average, which lags by a minute); 0 where unknown."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - 1)


def default_jobs(cores: int) -> int:
    """`ktool validate` without `--jobs`: up to `cores` walkers, as many as are idle now."""
    return idle_cores(cores, others_running())


def plan_jobs(sizes: list[int], jobs: int, v2: list[bool] | None = None) -> JobsPlan:
    """The plan for segments of these sizes (bytes) on `jobs` cores; `v2`: whether each begins with
    a v2 batch (only those can be split; None: all do)."""
    if jobs <= 1 or not sizes or sum(sizes) < SMALL_INPUT:
        return JobsPlan(1, True, False)
    v2 = [True] * len(sizes) if v2 is None else v2
    splittable = any(size >= SPLIT_MIN and is_v2 for size, is_v2 in zip(sizes, v2, strict=True))
    if len(sizes) < jobs and splittable and scanner() is not None:
        return JobsPlan(jobs, False, True)
    walkers = min(jobs, len(sizes))
    if walkers == 1:  # one segment that cannot be split: one mapped walker, as --jobs 1
        return JobsPlan(1, True, False)
    return JobsPlan(walkers, False, False)


def segment_paths(found) -> list[Path]:
    """The segment files a validation of `found` (a Discovery) walks."""
    paths = [seg.log for part in found.all_partitions() for seg in part.segments]
    return paths + [p for p in found.files if kind_of(p) in (FileKind.LOG, FileKind.KAFKA07)]


def segment_sizes(paths: list[Path]) -> list[int]:
    sizes = []
    for p in paths:
        try:
            sizes.append(p.stat().st_size)
        except OSError:
            sizes.append(0)  # reported unreadable by the walk itself
    return sizes


def begins_with_v2(path: Path, size: int) -> bool:
    """Whether a large segment's first entry is a v2 batch (magic at byte 16); small ones are not
    looked at (never split)."""
    if size < SPLIT_MIN:
        return False
    return begins_with_batch(path)


def plan_for(found, jobs: int) -> JobsPlan:
    """plan_jobs for the segments of `found` (a Discovery)."""
    paths = segment_paths(found)
    sizes = segment_sizes(paths)
    return plan_jobs(sizes, jobs, [begins_with_v2(p, s) for p, s in zip(paths, sizes, strict=True)])


def splitter(pool: Executor, parts: int):
    """`ValidateOptions.split`: a segment's first batches checked in `parts` ranges on `pool`; only
    large v2 segments no running broker may be writing."""

    def split(path: Path, base: int, wanted: list[int]) -> BatchRun | None:
        try:
            if path.stat().st_size < SPLIT_MIN or is_live(path.parent.parent):
                return None
        except OSError:
            return None
        return split_prefix(path, base, wanted, parts, pool)

    return split


# -- one segment in ranges ------------------------------------------------------------------------


def _range_run(path: Path, start: int, end: int, lo: int, hi: int, wanted: list[int]) -> BatchRun | None:
    """The ordinary batches from `start` on, in one run, up to `end` or the first other entry (pread)."""
    runs = RunBounds(lo=lo, hi=hi, stops=wanted, batches=True)
    merged: BatchRun | None = None
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        win = SegmentWindow(f, size, PREAD_WINDOW, use_mmap=False)
        walk = walk_entries(win, start, min(end, size), light=True, runs=runs)
        for item in walk:
            if type(item) is not BatchRun or (merged is not None and item.position != merged.end):
                break
            merged = item if merged is None else _joined(merged, item, seam_gap=item.has_gaps)
            runs.prev = item.last_offset
        walk.close()
    return merged


def _joined(a: BatchRun, b: BatchRun, seam_gap: bool) -> BatchRun:
    return BatchRun(
        a.position,
        b.end,
        a.count + b.count,
        a.records + b.records,
        a.first_offset,
        b.last_offset,
        max(a.max_timestamp, b.max_timestamp),
        a.has_gaps or seam_gap,
        a.hits + b.hits,
    )


def split_prefix(path: Path, base: int, wanted: list[int], parts: int, pool: Executor) -> BatchRun | None:
    """The ordinary batches of `path` from its start, checked in `parts` ranges on `pool`, as one
    BatchRun: what the sequential walk would have made of them; None when the file does not begin
    with one. The prefix ends where a range's walk stopped early or a seam breaks the order."""
    points = split_points(path, parts)
    if not points:
        return None
    bounds = [0, *points, path.stat().st_size]
    futures = [
        pool.submit(_range_run, path, a, b, base, base + INT32_MAX, wanted)
        for a, b in zip(bounds, bounds[1:], strict=False)
    ]
    runs = [f.result() for f in futures]
    merged = runs[0]
    if merged is None:
        return None
    for k, run in enumerate(runs[1:], start=1):
        if merged.end != bounds[k] or run is None or run.position != bounds[k]:
            break
        first_base, first_last = first_batch_offsets(path, run.position)
        if first_last <= merged.last_offset:
            break  # out of order at the seam: the sequential walk reports it
        merged = _joined(merged, run, seam_gap=first_base > merged.last_offset + 1 or run.has_gaps)
    return merged
