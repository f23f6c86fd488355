"""One large v2 segment validated by one walker and split over N threads, in process: wall, CPU and
each thread's busy time, so that the split can be judged on a shared machine (where the wall-clock
ratio says little: other processes hold the cores).

    python bench/split.py                  # the bench's 1 GiB v2 segment, --jobs 1 against --jobs 2
    python bench/split.py --path FILE --jobs 3 --runs 7
    python bench/split.py --json
    python bench/split.py --ceiling        # and the host's ceiling: the ranges in independent processes
    python bench/split.py --forked         # the split's ranges on threads against forked processes
    python bench/split.py --large 4        # make (once) the bench's 4 GiB segment: 4 x the 1 GiB one
    python bench/split.py --large 4 --size-mib 128   # 4 x the 128 MiB one

Each `--jobs` value runs in a child process of its own (alternated, `--runs` each). A child walks the
segment with `validate_paths` as `ktool validate --jobs N FILE` does after start-up; the time each
thread spends inside range walks (its own CPU clock) and its voluntary context switches (a thread
that waits on a lock switches voluntarily; one preempted by other load does not) are summed by thread.
`critical` = the serial part (CPU outside the ranges) + the busiest thread: what the wall time would
be with a core a thread, a figure that holds on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as `python bench/split.py`
    sys.path.insert(0, str(ROOT))


def large_segment(src: dict, copies: int) -> dict:
    """One v2 segment of `copies` x the segment `src` (bench/decode.py's `segment()`, base offsets
    continuous from 0), each copy's base offsets moved past the one before: one file as large as
    issue 27's "one large segment" without generating GiBs of records. The batch CRC-32C does not
    cover the base offset, so every batch stays valid. Made once, in the bench data dir."""
    import mmap
    import struct

    from bench.decode import data_dir

    path = data_dir() / f"{Path(src['path']).stem}-x{copies}.log"
    if not path.exists() or path.stat().st_size != src["bytes"] * copies:
        part = path.with_suffix(".part")
        with open(src["path"], "rb") as f, open(part, "wb") as out:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            for k in range(copies):
                shift, at, chunk = k * src["records"], 0, bytearray()
                while at < len(m):
                    base, length = struct.unpack_from(">qi", m, at)
                    chunk += m[at : at + 12 + length]
                    struct.pack_into(">q", chunk, len(chunk) - 12 - length, base + shift)
                    at += 12 + length
                    if len(chunk) >= 64 * 1024 * 1024:
                        out.write(chunk)
                        chunk = bytearray()
                out.write(chunk)
            m.close()
        part.rename(path)
    return {"path": str(path), "bytes": src["bytes"] * copies, "records": src["records"] * copies}


def _median_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _switches() -> int:
    with open(f"/proc/self/task/{threading.get_native_id()}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))


def child(path: str, jobs: int) -> dict:
    """One validation of `path` on `jobs` cores, measured (runs in its own process), each range's times
    appended to a file, a line each. Since issue 51 the ranges' workers are spawned (log/workers/pool.py)
    and a call is sent by name: the timing closure below cannot be, so its ranges are all walked here
    (`"forked": false` in the output). Making it module-level in an importable module is owed."""
    import tempfile

    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.validate import validate_paths
    from kafka_tools.log.workers import parallel

    real = parallel._range_run
    log = tempfile.TemporaryFile("w+")  # O_APPEND: one write a line, whole, from any process

    def timed(*args):
        cpu, switches, t0 = time.thread_time(), _switches(), time.perf_counter()
        try:
            return real(*args)
        finally:
            line = f"{os.getpid()}.{threading.get_native_id()} {time.thread_time() - cpu} "
            log.write(line + f"{_switches() - switches} {t0} {time.perf_counter()}\n")
            log.flush()

    parallel._range_run = timed
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    summary = validate_paths([path], ValidateOptions(), None, jobs).summary()
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(
        getattr(c1, f) - getattr(c0, f) + getattr(k1, f) - getattr(k0, f) for f in ("ru_utime", "ru_stime")
    )
    busy: dict[str, list[float]] = {}  # walker (pid.thread) -> [CPU in ranges, ranges, switches]
    spans: list[float] = []  # when each range began and ended (perf_counter: CLOCK_MONOTONIC)
    log.seek(0)
    for line in log:
        who, range_cpu, switches, start, end = line.split()
        mine = busy.setdefault(who, [0.0, 0, 0])
        mine[0] += float(range_cpu)
        mine[1] += 1
        mine[2] += int(switches)
        spans += [float(start), float(end)]
    in_ranges = sum(b[0] for b in busy.values())
    return {
        "jobs": jobs,
        "wall_s": wall,
        "cpu_s": cpu,
        "walkers": len(busy),
        "forked": len({who.split(".")[0] for who in busy}) > 1,
        "thread_busy_s": sorted((b[0] for b in busy.values()), reverse=True),
        "ranges": sum(b[1] for b in busy.values()),
        "voluntary_switches": sum(b[2] for b in busy.values()),
        "critical_s": max(0.0, cpu - in_ranges) + max((b[0] for b in busy.values()), default=0.0),
        # the first range's start to the last one's end: what the CEILING times of its processes
        "ranges_wall_s": max(spans) - min(spans) if spans else None,
        "batches": summary.entries,
    }


def range_child(path: str, start: int, end: int, step: int) -> dict:
    """One range of `path` walked and checked as a thread of the split walks it (`parallel._range_run`),
    in a process of its own: started on the parent's word (stdin), after the imports, so that the
    ranges of a ceiling run overlap. Times are CLOCK_MONOTONIC, comparable across processes."""
    from kafka_tools.format.kinds import base_offset_of
    from kafka_tools.log.workers import parallel

    base = base_offset_of(Path(path)) or 0
    print("ready", flush=True)
    sys.stdin.readline()
    t0, c0 = time.monotonic(), time.thread_time()
    run = parallel._range_run(Path(path), start, end, base, base + parallel.INT32_MAX, [], step)
    t1, c1 = time.monotonic(), time.thread_time()
    return {"start": t0, "end": t1, "cpu_s": c1 - c0, "batches": run.count if run else 0}


def _shootdowns() -> int:
    """TLB shootdown interrupts received so far, all CPUs (/proc/interrupts; 0 where not listed)."""
    with open("/proc/interrupts") as f:
        line = next((x for x in f if x.lstrip().startswith("TLB:")), "TLB:")
    return sum(int(x) for x in line.split()[1:] if x.isdigit())


def dealt_child(path: str, parts: int, rounds: int) -> dict:
    """The split's own ranges (`range_cuts`, `_range_run`, its step) dealt in turn to `parts` threads of
    one process, or to `parts` processes forked from it after the same planning: the one difference is
    the shared memory map (page faults, madvise(MADV_DONTNEED)'s TLB shootdowns reaching the other
    core, the GIL). `rounds` walks, the modes alternated; wall and CPU of the ranges alone."""
    from kafka_tools.format.kinds import base_offset_of
    from kafka_tools.log.workers import parallel

    p = Path(path)
    base = base_offset_of(p) or 0
    bounds = [0, *parallel.range_cuts(p.stat().st_size, parts), p.stat().st_size]
    step = parallel.walker_step(parts)
    ranges = list(zip(bounds, bounds[1:], strict=False))

    def walk(mine: list[tuple[int, int]]) -> None:
        for a, b in mine:
            parallel._range_run(p, a, b, base, base + parallel.INT32_MAX, [], step)

    def once(forks: bool) -> tuple[float, float, int]:
        dealt: list[list[tuple[int, int]]] = [[] for _ in range(parts)]
        for a, b in sorted(ranges, key=lambda r: r[0] - r[1]):  # largest first, to the least loaded
            min(dealt, key=lambda mine: sum(y - x for x, y in mine)).append((a, b))
        t0, tlb0 = time.perf_counter(), _shootdowns()
        c0, k0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        if forks:
            pids = []
            for mine in dealt:
                pid = os.fork()
                if pid == 0:
                    walk(mine)
                    os._exit(0)
                pids.append(pid)
            for pid in pids:
                os.waitpid(pid, 0)
        else:
            threads = [threading.Thread(target=walk, args=(mine,)) for mine in dealt]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        wall, tlb = time.perf_counter() - t0, _shootdowns() - tlb0
        c1, k1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = sum(
            getattr(c1, f) - getattr(c0, f) + getattr(k1, f) - getattr(k0, f)
            for f in ("ru_utime", "ru_stime")
        )
        return wall, cpu, tlb

    walk(ranges)  # warm: page cache, the imports a walk makes
    got: dict[str, list[tuple[float, float, int]]] = {"threads": [], "forked": []}
    for r in range(rounds):
        for name in ("threads", "forked") if r % 2 == 0 else ("forked", "threads"):
            got[name].append(once(name == "forked"))
    return {
        name: {
            "wall_s": statistics.median(x[0] for x in runs),
            "cpu_s": statistics.median(x[1] for x in runs),
            "shootdowns": statistics.median(x[2] for x in runs),
        }
        for name, runs in got.items()
    }


def ceiling(path: str, parts: int) -> dict:
    """`parts` independent processes, each one range of the segment (cut where the split cuts it), run
    at once: the wall from the first start to the last end. What the host gives `parts` walkers that
    share nothing but the file and the memory bus; a split in threads cannot beat it."""
    from kafka_tools.format.batch_runs import split_points
    from kafka_tools.log.workers.parallel import walker_step

    size = Path(path).stat().st_size
    step = str(walker_step(parts))  # what each thread of the split steps by
    bounds = [0, *split_points(Path(path), parts), size]
    me = str(Path(__file__).resolve())
    procs = [
        subprocess.Popen(
            [sys.executable, me, "--range", path, str(a), str(b), step],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for a, b in zip(bounds, bounds[1:], strict=False)
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    done = [json.loads(p.communicate()[0]) for p in procs]
    return {
        "wall_s": max(d["end"] for d in done) - min(d["start"] for d in done),
        "cpu_s": sum(d["cpu_s"] for d in done),
        "batches": sum(d["batches"] for d in done),
        "ranges": len(done),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", help="a v2 segment [default: the bench's 1 GiB one, made if missing]")
    ap.add_argument("--jobs", type=int, default=2, help="the split's threads, against --jobs 1")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--ceiling",
        action="store_true",
        help="also the same segment as one range in one process against --jobs ranges in as many "
        "processes at once (the host's ceiling for the split)",
    )
    ap.add_argument(
        "--large", type=int, metavar="COPIES", help="make a segment of COPIES x the bench one; print it"
    )
    ap.add_argument("--size-mib", type=int, default=1024, help="the bench segment --large copies [1024]")
    ap.add_argument(
        "--forked",
        action="store_true",
        help="also the split's ranges dealt to --jobs threads against --jobs forked processes (the shared "
        "memory map's cost), --runs walks each, alternated, in one child",
    )
    ap.add_argument("--child", nargs=2, metavar=("PATH", "JOBS"), help=argparse.SUPPRESS)
    ap.add_argument("--dealt", nargs=2, metavar=("PATH", "JOBS"), help=argparse.SUPPRESS)
    ap.add_argument("--range", nargs=4, metavar=("PATH", "START", "END", "STEP"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child[0], int(a.child[1]))))
        return 0
    if a.dealt:
        print(json.dumps(dealt_child(a.dealt[0], int(a.dealt[1]), a.runs)))
        return 0
    if a.range:
        print(json.dumps(range_child(a.range[0], int(a.range[1]), int(a.range[2]), int(a.range[3]))))
        return 0
    if a.large:  # in a process of its own (run_all's children inherit its peak RSS otherwise)
        from bench.decode import segment

        print(json.dumps(large_segment(segment(a.size_mib, "none", 64), a.large)))
        return 0
    if a.path is None:
        from bench.decode import segment

        a.path = segment(1024, "none", 64)["path"]
    load_before = os.getloadavg()
    results: dict[int, list[dict]] = {1: [], a.jobs: []}
    ceilings: dict[int, list[dict]] = {1: [], a.jobs: []}
    for _ in range(a.runs):
        for jobs in results:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", a.path, str(jobs)]
            results[jobs].append(json.loads(subprocess.run(cmd, stdout=subprocess.PIPE, check=True).stdout))
            if a.ceiling:  # alternated with the split's runs: the same load on both
                ceilings[jobs].append(ceiling(a.path, jobs))
    out = {"path": a.path, "load_before": load_before, "load_after": os.getloadavg(), "by_jobs": {}}
    if a.forked:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--dealt",
            a.path,
            str(a.jobs),
            "--runs",
            str(a.runs),
        ]
        out["forked"] = json.loads(subprocess.run(cmd, stdout=subprocess.PIPE, check=True).stdout)
        out["load_after"] = os.getloadavg()
    if a.ceiling:
        walls = {n: statistics.median(r["wall_s"] for r in runs) for n, runs in ceilings.items()}
        out["ceiling"] = {
            "processes": a.jobs,
            "one_range_wall_s": walls[1],
            "ranges_wall_s": walls[a.jobs],
            "speedup": walls[1] / walls[a.jobs],
            "cpu_s": statistics.median(r["cpu_s"] for r in ceilings[a.jobs]),
        }
    for jobs, runs in results.items():
        least = min(runs, key=lambda r: r["cpu_s"])  # the run least disturbed by other load
        out["by_jobs"][jobs] = {
            "wall_s": statistics.median(r["wall_s"] for r in runs),
            "cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "critical_s": statistics.median(r["critical_s"] for r in runs),
            "ranges_wall_s": _median_of([r["ranges_wall_s"] for r in runs]),
            "least_cpu_run": least,
        }
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{a.path} ({a.runs} runs each, medians; "
        f"load {load_before[0]:.2f} before, {out['load_after'][0]:.2f} after)"
    )
    for jobs, m in out["by_jobs"].items():
        least = m["least_cpu_run"]
        busy = ", ".join(f"{b * 1000:.0f}" for b in least["thread_busy_s"]) or "-"
        print(
            f"  --jobs {jobs}: wall {m['wall_s'] * 1000:.0f} ms, CPU {m['cpu_s'] * 1000:.0f} ms, "
            f"critical path {m['critical_s'] * 1000:.0f} ms; least-CPU run: threads busy {busy} ms in "
            f"{least['ranges']} ranges, {least['voluntary_switches']} voluntary switches"
        )
    if a.ceiling:
        c = out["ceiling"]
        print(
            f"  ceiling: one range in one process {c['one_range_wall_s'] * 1000:.0f} ms, {a.jobs} ranges in "
            f"{a.jobs} processes at once {c['ranges_wall_s'] * 1000:.0f} ms: {c['speedup']:.2f}x"
        )
        alone = out["by_jobs"][a.jobs]["ranges_wall_s"]
        if alone is not None:
            print(f"  the split's ranges alone (first start to last end): {alone * 1000:.0f} ms")
    if a.forked:
        t, f = out["forked"]["threads"], out["forked"]["forked"]
        print(
            f"  the split's ranges dealt to {a.jobs} threads: wall {t['wall_s'] * 1000:.0f} ms, CPU "
            f"{t['cpu_s'] * 1000:.0f} ms, {t['shootdowns']:.0f} TLB shootdowns; to {a.jobs} forked "
            f"processes: wall {f['wall_s'] * 1000:.0f} ms, CPU {f['cpu_s'] * 1000:.0f} ms, "
            f"{f['shootdowns']:.0f}: threads / processes wall {t['wall_s'] / f['wall_s']:.2f}x"
        )
    one, split = out["by_jobs"][1], out["by_jobs"][a.jobs]
    print(
        f"  --jobs 1 / --jobs {a.jobs}: wall {one['wall_s'] / split['wall_s']:.2f}x, critical path "
        f"{one['critical_s'] / split['critical_s']:.2f}x, CPU {split['cpu_s'] / one['cpu_s']:.2f}x as much"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
