"""How `ktool validate --jobs N` spreads segments over cores, decided from the inputs, and the split of
one large v2 segment at batch boundaries.

Measured on 2 cores (bench/validate.py, bench/split.py, bench/run_all.py --only jobs, bench/README.md):
a memory-mapped walk is the cheapest (pread's copy costs 1.2-1.7x its CPU), and threads each walking
a map of its own do not slow each other down as long as they hand their pages back in large enough
steps: every step is a madvise(MADV_DONTNEED), whose TLB shootdown interrupts the other threads'
cores. At 2 MiB a walker, two threads spent 16-28 % more CPU than one walker on a log dir of 6 GiB
and waited on each other (wall under load: 1.10-1.16 s in three rounds, 0.88-1.0 s at 4-16 MiB; in
the quietest round 1.12 s against 0.59 s); at walker_step() (16 MiB shared, 8 MiB each for two) a
split's CPU is one walker's + 1-3 % (was + 7-10 %) and its critical path 1.88x one walker's (was
1.76-1.80x in the same run, under load 3-4, where the threads seldom run at once; on an idle machine,
where they do, the quiet run gave 1.42x at 2 MiB), peak RSS 41-47 MB. The C walks, zlib and CRC-32C
release the GIL. So every walker maps (pread only where format/mapping.py refuses a map). The plan:

* one core, or a small input: one walker, as `--jobs 1`, settled before anything is read, started or
  imported; without `--jobs`, as many walkers as there are idle cores when a large input starts (a
  busy machine gets one walker: there a second thread made a log dir 0.88x as fast, under load 3-4;
  busy is also a machine whose tasks waited for CPU in the last 10 s, CPU_PRESSURE_BUSY);
* several segments: walked by the calling process and threads - 1 pool workers (log/workers/pooled_scans.py),
  each taking the next segment nobody has taken, the reports sent back as each is done (for the
  same reason as a split's ranges: on threads every madvise of one walker interrupts the other's
  core, and Python's mmap holds the GIL through it; a log dir of 6 x 1 GiB v2 on 2 cores, alternated
  with the threads' tree under chrt, 1.81x `--jobs 1` through the CLI less `python -c pass`, the
  threads 1.69x; 8 v0 segments 1.78x, threads 1.71x; CPU 1.40 s, threads 1.49; 3000 segments of
  166 KB, whose per-segment Python work fought over the GIL, 1.24x, threads 0.77x); where a thread
  off Linux (no worker can be spawned), `ahead`: threads - 1 helper threads and the
  thread that takes the reports in file order, which walks the next segment nobody has taken while
  it waits (no pool: concurrent.futures and logging cost 5-15 ms to import). The segments left over
  after a round a walker, when large v2 ones, are split into ranges the same walkers take (3 x 1 GiB
  on 2 threads: busiest thread 217-238 ms, not 278-317; in processes 1.76x `--jobs 1` less start-up,
  threads 1.61x); one with index targets is split on threads after the others;
* segments walked in Python (compressed v0/v1 message sets, 0.7 files: the wrapped messages are
  decoded holding the GIL) share no core on threads: on a log dir of four 17 MB v1 gzip segments two
  threads did 1.1-1.5x one walker's CPU (up to 32,000 voluntary switches) and were never sooner
  done, once 0.71x as fast; there such segments get one walker between them, the GIL-free ones a
  walker each. In the pool's processes (the default on Linux) each walker has its own GIL:
  the same log dir in 0.63-0.78 s on 2 processes against 1.29-1.40 s for one walker (chrt, three
  rounds), so the planner counts them as any other segment then;
* fewer large segments than cores: each large v2 segment split at batch boundaries into
  RANGES_A_THREAD ranges a core, whose ordinary batches (`BatchRun`) are checked by the calling
  process and one pool worker a core more (log/workers/pool.py: a thread's madvise flushes the other
  walkers' TLBs by interrupt and holds the GIL; 4 GiB after start-up 1.58x -> 1.77x), each taking
  the next range when done with one (on threads, by `ahead`, where a thread already runs or the
  ranges carry index targets); the rest of the segment is walked after them as usual (the findings
  are the same: a range's walk stops at the first batch that is not ordinary, and the sequential
  walk reports it); one segment that cannot be split (v0/v1, or below SPLIT_MIN) gets one walker,
  as `--jobs 1`.

What is the host's, not ktool's: independent processes (bench's CEILING rows: the same ranges or the
same partitions in 2 processes at once, no shared address space, no GIL) gain 1.68x on one 1 GiB
segment on an idle machine, not 2x (memory bandwidth, the vCPUs' shared core); through the CLI the
start-up (~0.15 s) is as long as the walk of 1 GiB on one core, so the split's gain is read after
start-up (bench/run_all.py); and under other load the default walks on one core.

Why one module of this size: the plan of the walkers and the split of one large segment are one decision
(the plan says which segments split and on how many walkers; the split's measured costs, above, set the
plan's thresholds), and most of its length is that measured reasoning; each helper is small and tested
through `plan_for` and `splitter`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kafka_tools.format.batch_runs import (
    BatchRun,
    batch_start_after,
    begins_with_batch,
    first_batch_offsets,
    scanner,
)
from kafka_tools.format.kinds import FileKind, kind_of
from kafka_tools.format.mapping import safe_to_map
from kafka_tools.format.segment import RunBounds, SegmentWindow, walk_entries
from kafka_tools.format.shared_methods import FrozenSharedMethods
from kafka_tools.log.files.broker_lock import is_live

T = TypeVar("T")

SMALL_INPUT = 32 * 1024 * 1024  # below this, threads cost more than they give: one walker
SPLIT_MIN = 128 * 1024 * 1024  # segments at least this large are split when cores would be idle
INT32_MAX = (1 << 31) - 1
# Several walkers (or a split's ranges) hand back their mapped pages in steps (walker_step): about
# WALKERS_RESIDENT together, never less than MIN_WALKER_STEP each, so that the peak RSS stays far below
# 100 MB whatever the number of threads. Each step is a madvise(MADV_DONTNEED) whose TLB shootdown
# reaches every core the process runs on: at 2 MiB two threads spent 16-28 % more CPU than one walker
# and waited on each other (voluntary switches x2-10; a log dir of 6 GiB 1.12 s against 0.59 s at
# 4-16 MiB in the same round); 8 MiB each costs about what 16 MiB does, at 43 MB peak RSS for two.
# Measured on 2 cores only: with many more threads the RSS bound (4 MiB each) may want processes.
WALKERS_RESIDENT = 16 * 1024 * 1024
MIN_WALKER_STEP = 4 * 1024 * 1024
# A split segment is cut into this many ranges a thread, taken in turn by whichever thread is free:
# a core that another task holds for a while then walks less of the segment, not half of it.
RANGES_A_THREAD = 4


@dataclass(init=False, repr=False, eq=False)
class JobsPlan(FrozenSharedMethods):
    """What validate runs: `threads` walkers; `split` whether large segments are cut into ranges,
    RANGES_A_THREAD a thread. Every walker maps the files it may map (format/mapping.py)."""

    threads: int
    split: bool
    # Several segments, not a multiple of the threads: the last `split_tail` (large v2 ones) are split
    # into ranges, so that the threads that finish first help with them instead of standing idle
    # (3 segments of 1 GiB on 2 threads: 1.5 segments' time, not 2).
    split_tail: int = 0

    def __init__(self, threads: int, split: bool, split_tail: int = 0) -> None:
        object.__setattr__(self, "threads", threads)
        object.__setattr__(self, "split", split)
        object.__setattr__(self, "split_tail", split_tail)

    @property
    def step(self) -> int | None:
        """Each walker's step (walker_step); None for one walker: its own, larger steps."""
        return walker_step(self.threads) if self.threads > 1 else None


def walker_step(threads: int) -> int:
    """The bytes each of `threads` walkers walks between handing its mapped pages back: whole MiB
    (madvise takes whole pages)."""
    step = WALKERS_RESIDENT // max(1, threads)
    return max(MIN_WALKER_STEP, step - step % (1 << 20))


def idle_cores(cores: int, others_running: int) -> int:
    """The walkers the default `--jobs` starts: the usable cores no other task is running on now. A
    second walker on a core another task holds buys no time (where the scheduler shares CPU between
    process groups, none at all) and costs its start, so it is never slower to leave it out."""
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


# Tasks waited for a CPU in more than this share (%) of the last 10 s: a busy machine, whatever is
# runnable at the instant the plan is made. Bursty load (other processes starting, building, sleeping
# on I/O) leaves cores idle for a moment and takes them back: at `some avg10` 20-60 % (three other
# benches on 2 cores) a default that split on an idle moment was 0.79x and 0.87x `--jobs 1` in two
# rounds of ten, where one walker is never slower. An otherwise idle machine stays near 0 (a split's
# own 2 threads on 2 cores wait for none).
CPU_PRESSURE_BUSY = 10.0
CPU_PRESSURE = "/proc/pressure/cpu"


def cpu_pressure() -> float:
    """The share (%) of the last 10 s in which some task waited for a CPU (/proc/pressure/cpu's `some
    avg10`, Linux's pressure stall information); 0 where unknown."""
    try:
        with open(CPU_PRESSURE) as f:
            some = f.readline().split()
        return float(some[1].partition("=")[2]) if some[0] == "some" else 0.0
    except (OSError, ValueError, IndexError):
        return 0.0


def default_jobs(cores: int) -> int:
    """`ktool validate` without `--jobs`: up to `cores` walkers, as many as are idle now; one on a
    machine whose tasks have been waiting for CPU (CPU_PRESSURE_BUSY)."""
    if cpu_pressure() > CPU_PRESSURE_BUSY:
        return 1
    return idle_cores(cores, others_running())


def plan_jobs(
    sizes: list[int], jobs: int, v2: list[bool] | None = None, in_python: list[bool] | None = None
) -> JobsPlan:
    """The plan for segments of these sizes (bytes) on `jobs` cores; `v2`: whether each begins with
    a v2 batch (only those can be split; None: all do); `in_python`: whether each is walked in
    Python, holding the GIL (compressed v0/v1 message sets, 0.7 files; None: none is). Those share no
    core: two threads on them did 1.1-1.5x one walker's CPU and finished no sooner."""
    in_python = [False] * len(sizes) if in_python is None else in_python
    shared = sum(size for size, py in zip(sizes, in_python, strict=True) if not py)
    if jobs <= 1 or not sizes or shared < SMALL_INPUT:
        return ONE_WALKER
    v2 = [True] * len(sizes) if v2 is None else v2
    splittable = any(size >= SPLIT_MIN and is_v2 for size, is_v2 in zip(sizes, v2, strict=True))
    if len(sizes) < jobs and splittable and scanner() is not None:
        return JobsPlan(jobs, True)
    walkers = min(jobs, in_python.count(False) + any(in_python))
    if walkers == 1:  # one segment that cannot be split: one mapped walker, as --jobs 1
        return ONE_WALKER
    tail = len(sizes) % walkers
    last = list(zip(sizes, v2, strict=True))[len(sizes) - tail :]
    if tail and scanner() is not None and all(size >= SPLIT_MIN and is_v2 for size, is_v2 in last):
        return JobsPlan(walkers, False, tail)
    return JobsPlan(walkers, False)


def segment_paths(found) -> list[Path]:
    """The segment files a validation of `found` (a Discovery) walks."""
    paths = [seg.log for part in found.all_partitions() for seg in part.segments]
    return paths + [p for p in found.files if found.kind(p) in (FileKind.LOG, FileKind.KAFKA07)]


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


LOOKED_MIN = 1024 * 1024  # smaller segments' first entries are not read: their walks are short


def walked_in_python(path: Path, size: int) -> bool:
    """Whether the walk of this segment runs in Python (holding the GIL) rather than in C, zlib and
    CRC-32C (which release it): a 0.7 `.kafka` file, or a v0/v1 segment whose first message is
    compressed (its wrapped messages are decoded in Python). Judged by the first entry; segments
    under LOOKED_MIN are not read."""
    if size < LOOKED_MIN:
        return False
    if kind_of(path) == FileKind.KAFKA07:
        return True
    try:
        with open(path, "rb") as f:
            head = os.pread(f.fileno(), 18, 0)
    except OSError:
        return False  # reported by the walk itself
    return len(head) == 18 and head[16] in (0, 1) and head[17] & 0x07 != 0


ONE_WALKER = JobsPlan(1, False)  # as `--jobs 1`: no thread, no pool


def jobs_for_files(files: tuple[str, ...] | list[str], jobs: int | None, cores: int) -> int:
    """How many processes `ktool dump-log` renders `files` on (a file a process, log/workers/pool.py):
    `jobs` (at most one a file), or by default one for a small input (SMALL_INPUT: a worker's start,
    0.1-0.6 s under load, costs more than it gives) or a busy machine (default_jobs: under load the
    forked default was 0.70-1.08 s where `--jobs 1` took 0.44-0.50 s, issue 51), else the idle cores.
    Sizes are read only when more than one process could be used."""
    if jobs is None:
        if cores <= 1 or len(files) < 2:
            return 1
        if sum(segment_sizes([Path(f) for f in files])) < SMALL_INPUT:
            return 1
        jobs = default_jobs(cores)
    return max(1, min(jobs, len(files)))


def plan_for(found, jobs: int | None, cores: int = 1) -> JobsPlan:
    """plan_jobs for the segments of `found` (a Discovery). `jobs` None is the default: up to `cores`
    walkers, as many as are idle now, which is asked (/proc/loadavg) only of an input large enough
    to use them: one walker is settled before anything else is read (a small input costs exactly
    what `--jobs 1` costs). Segments walked in Python share a core only on threads: where the walkers
    will be the pool's processes (log/workers/pooled_scans.py), each holds a GIL of its own."""
    if (cores if jobs is None else jobs) <= 1:
        return ONE_WALKER
    paths = segment_paths(found)
    sizes = segment_sizes(paths)
    if sum(sizes) < SMALL_INPUT:
        return ONE_WALKER
    if jobs is None:
        jobs = default_jobs(cores)
    if jobs <= 1:  # a busy machine: nothing more to read
        return ONE_WALKER
    pairs = list(zip(paths, sizes, strict=True))
    in_python = None if _walkers_are_processes() else [walked_in_python(*p) for p in pairs]
    return plan_jobs(sizes, jobs, [begins_with_v2(*p) for p in pairs], in_python)


def _walkers_are_processes() -> bool:
    """Whether several segments will be walked by the worker pool (log/workers/pooled_scans.py) rather
    than on threads. Imported here: only an input large enough for several walkers asks."""
    from kafka_tools.log.workers import pool

    return pool.available()


def splitter(parts: int, processes: bool = False):
    """`ValidateOptions.split`: a segment's first batches checked in `parts` ranges at once; only
    large v2 segments no running broker may be writing. `processes`: the ranges may be walked in
    the pool's workers (split_prefix says when)."""

    def split(path: Path, base: int, wanted: list[int]) -> BatchRun | None:
        return split_prefix(path, base, wanted, parts, processes) if may_split(path) else None

    return split


def may_split(path: Path) -> bool:
    """Whether a segment may be cut into ranges: at least SPLIT_MIN, and no running broker's (one
    that cannot be read is walked whole: the walk reports it as `--jobs 1` does)."""
    try:
        return path.stat().st_size >= SPLIT_MIN and not is_live(path.parent.parent)
    except OSError:
        return False


WAITING, TAKEN, CANCELLED = 0, 1, 2


class Ahead:
    """One call of `ahead`: run by a helper thread, or by the thread that asks for its result."""

    __slots__ = ("_args", "_done", "_error", "_runner", "_state", "_value")

    def __init__(self, runner: _Ahead, args: tuple) -> None:
        import _thread

        self._runner = runner
        self._args = args
        self._state = WAITING
        self._value = None
        self._error: Exception | None = None
        self._done = _thread.allocate_lock()  # held until the call has ended
        self._done.acquire()

    def result(self):
        """The call's value (its exception raised). While another thread runs it, the asking thread
        runs the next calls nobody has taken: it is one of the walkers, not a waiter."""
        runner = self._runner
        if runner.take(self, also_cancelled=True):
            runner.walk(self)
        while not self._done.acquire(blocking=False):
            other = runner.take_next()
            if other is None:
                self._done.acquire()
                break
            runner.walk(other)
        self._done.release()
        if self._error is not None:
            raise self._error
        return self._value

    def cancel(self) -> None:
        """Not run unless a thread has taken it already."""
        with self._runner.guard:
            if self._state == WAITING:
                self._state = CANCELLED


class _Ahead:
    def __init__(self, work: Callable, calls: list[tuple]) -> None:
        import _thread

        self.work = work
        self.guard = _thread.allocate_lock()
        self.items = [Ahead(self, args) for args in calls]
        self.next = 0  # no call before this one is waiting

    def take(self, item: Ahead, also_cancelled: bool = False) -> bool:
        with self.guard:
            if item._state == WAITING or (also_cancelled and item._state == CANCELLED):
                item._state = TAKEN
                return True
            return False

    def take_next(self) -> Ahead | None:
        with self.guard:
            items, k = self.items, self.next
            while k < len(items) and items[k]._state != WAITING:
                k += 1
            if k == len(items):
                self.next = k
                return None
            self.next = k + 1
            items[k]._state = TAKEN
            return items[k]

    def walk(self, item: Ahead) -> None:
        try:
            item._value = self.work(*item._args)
        except Exception as exc:  # raised by result() on the asking thread (Ctrl-C is at once)
            item._error = exc
        finally:
            item._args = ()
            item._done.release()

    def help(self) -> None:
        while (item := self.take_next()) is not None:
            self.walk(item)


def ahead(work: Callable[..., T], calls: list[tuple], threads: int) -> list[Ahead]:
    """`work(*args)` for each of `calls`, in that order, on `threads` threads: `threads - 1` helpers
    started now, and the thread that asks for the results (in `calls`' order: validate's reports),
    which runs the next call nobody has taken while the one it asks for runs elsewhere. No pool:
    concurrent.futures and logging cost 5-15 ms to import, and the pool's threads would leave the
    asking thread idle."""
    import _thread

    runner = _Ahead(work, calls)
    for _ in range(min(threads, len(calls)) - 1):
        try:
            _thread.start_new_thread(runner.help, ())
        except RuntimeError:  # no thread to be had (a limit): the asking thread runs the rest
            break
    return runner.items


def all_results(pending: list[Ahead]) -> list:
    """Every result, in order, once every call has ended; the first call's exception raised then (no
    range is still being walked when the caller carries on)."""
    results: list = []
    first: Exception | None = None
    for p in pending:
        try:
            results.append(p.result())
        except Exception as exc:  # Ctrl-C is at once
            results.append(None)
            first = first or exc
    if first is not None:
        raise first
    return results


# -- one segment in ranges ------------------------------------------------------------------------


def _range_run(
    path: Path, cut: int, end: int, lo: int, hi: int, wanted: list[int], step: int
) -> BatchRun | None:
    """The ordinary batches from the first batch start at or after `cut` (0: the file's start), in one
    run, none starting at or past `end`, up to the first other entry. The start is looked for here, on
    the range's own thread (a pread and a CRC-32C or two: on the caller it was the split's serial
    part). Each range maps the file itself (a mapping of its own, its pages handed back every `step`
    bytes): pread's copy cost 1.7x the map's CPU, which ate the second core's gain (bench/README.md,
    issue 27)."""
    runs = RunBounds(lo=lo, hi=hi, stops=wanted, batches=True, max_bytes=step)
    merged: BatchRun | None = None
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        start = batch_start_after(f.fileno(), cut, size) if cut else 0
        if start is None or start >= min(end, size):
            return None  # no batch starts in this range: the one before walks through it
        win = SegmentWindow(f, size, step, use_mmap=safe_to_map(path), release_step=step)
        walk = walk_entries(win, start, min(end, size), light=True, runs=runs)
        for item in walk:
            if type(item) is not BatchRun or (merged is not None and item.position != merged.end):
                break
            merged = item if merged is None else _joined(merged, item, seam_gap=item.has_gaps)
            runs.prev = item.last_offset
        walk.close()
    return merged


def range_cuts(size: int, threads: int) -> list[int]:
    """Where a segment of `size` bytes split over `threads` is cut: RANGES_A_THREAD x threads ranges,
    each smaller than the one before (sizes 2n-1, ..., 3, 1 in n-ths squared: the last `threads`
    together a sixteenth of the segment), taken in turn by whichever walker is free: the walker
    that ends first waits for the others' last range only, a small one. Even ranges left it up to
    an eighth of the segment's walk idle (4 GiB on 2 processes, ten alternated rounds with the
    machine held off: 1.66x one walker after start-up, shrinking ones 1.76x). The count stays:
    ranges that shrank by halves ("guided", twice as many) cost more in opens, maps and batch
    starts looked for than the shorter tail gave back (bench/README.md)."""
    parts = RANGES_A_THREAD * threads
    total = parts * parts  # the sum of 2k - 1 for k = 1..parts
    cuts, done = set(), 0
    for k in range(parts, 1, -1):
        done += 2 * k - 1
        cuts.add(size * done // total)
    return sorted(cuts - {0, size})


def walk_range(*args) -> BatchRun | None:
    """One range of a split (a call of range_calls): its ordinary batches as one run, or None."""
    return _range_run(*args)


def _pooled_runs(calls: list[tuple], parts: int) -> list | None:
    """The ranges' runs walked by this process and `parts - 1` workers of the pool (log/workers/pool.py),
    or None where no worker can be spawned. Imported here, not at start-up: a small input never splits."""
    from kafka_tools.log.workers import pool

    if not pool.available():
        return None
    return pool.results(_range_run, calls, parts, run_to_wire, run_from_wire)


def run_to_wire(run: BatchRun | None) -> tuple | None:
    return None if run is None else tuple(run)


def run_from_wire(fields: tuple | None) -> BatchRun | None:
    return None if fields is None else BatchRun(*fields)


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


def split_prefix(
    path: Path, base: int, wanted: list[int], parts: int, processes: bool = False
) -> BatchRun | None:
    """The ordinary batches of `path` from its start, checked on `parts` threads in ranges (range_cuts)
    taken in turn, as one BatchRun: what the sequential walk would have made of them; None when the
    file does not begin with one (joined_runs)."""
    if not begins_with_batch(path):
        return None
    calls = range_calls(path, base, wanted, parts)
    runs = _pooled_runs(calls, parts) if processes and not wanted else None
    if runs is None:
        runs = all_results(ahead(_range_run, calls, parts))
    return joined_runs(path, runs)


def range_calls(path: Path, base: int, wanted: list[int], parts: int) -> list[tuple]:
    """The arguments of `walk_range` for each range of `path` split over `parts` walkers."""
    size = path.stat().st_size
    bounds = [0, *range_cuts(size, parts), size]
    hi, step = base + INT32_MAX, walker_step(parts)
    return [(path, a, b, base, hi, wanted, step) for a, b in zip(bounds, bounds[1:], strict=False)]


def joined_runs(path: Path, runs: list[BatchRun | None]) -> BatchRun | None:
    """The ranges' runs (in file order) joined into the prefix the sequential walk would have made. A
    range begins at the first batch start its walker finds after its cut (format/batch_runs.py); the
    prefix ends where a range's walk stopped early or a seam does not join: the range before did not
    end where the next begins (a start found inside another batch's bytes, a batch carried in a
    record's value), or the offsets are out of order."""
    merged = runs[0]
    if merged is None:
        return None
    for run in runs[1:]:
        if run is None:
            continue  # no batch began in it (one larger than the range): the next must join on
        if merged.end != run.position:
            break
        first_base, first_last = first_batch_offsets(path, run.position)
        if first_last <= merged.last_offset:
            break  # out of order at the seam: the sequential walk reports it
        merged = _joined(merged, run, seam_gap=first_base > merged.last_offset + 1 or run.has_gaps)
    return merged
