"""CRC validation throughput: ktool next to kafka-python and aiokafka, in one run.

    python bench/validate.py                # 1 GiB uncompressed v2 segment, 5 runs each
    python bench/validate.py --quick        # 32 MiB, 2 runs: a smoke run
    python bench/validate.py --json         # machine-readable result on stdout (progress on stderr)
    python bench/validate.py --check        # exit 1 when ktool validates below 5 GB/s

Target: CRC validation of a large uncompressed v2 segment on a warm page cache at >= 5 GB/s. Every
implementation runs in its own child process pinned to one CPU, after reading the whole file once (warm
page cache). ktool is `log/checks/segment_checks.scan_segment` (every batch's CRC-32C and header, no record
decode); kafka-python and aiokafka read the file into bytes, then call `validate_crc()` on every batch of
`MemoryRecords` (read and loop timed separately, both reported); a plain-Python header walk with
`crc32c.crc32c` over an mmap and one `crc32c` call over the whole file are the reference ceilings.
`ktool validate --json FILE` is also timed once as a subprocess (includes Python start-up).
Segments, CPU pinning, peak-RSS reading and the table come from bench/decode.py. See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/validate.py`: make `bench` (and ktool) importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.decode import (  # noqa: E402
    MiB,
    fmt_ratio,
    format_table,
    log,
    peak_rss_kb,
    pick_cpu,
    pin_cpu,
    segment,
    warm_page_cache,
)

IMPLS = ("ktool", "ktool-pread", "walk-crc32c", "crc32c", "kafka-python", "aiokafka")
LABELS = {
    "ktool": "ktool scan_segment (mmap)",
    "ktool-pread": "ktool scan_segment (pread)",
    "walk-crc32c": "header walk + crc32c (ceiling)",
    "crc32c": "crc32c of the whole file",
    "kafka-python": "kafka-python",
    "aiokafka": "aiokafka",
}
PEERS = ("kafka-python", "aiokafka")
TARGET_GB_PER_S = 5.0
TARGET_JOBS_SPEEDUP = 1.7  # --jobs 2 against --jobs 1 on this 2-core box
GB = 1e9  # throughput in decimal GB/s, as in the issue

_LENGTH = struct.Struct(">i")
_CRC = struct.Struct(">I")
CRC_AT = 17  # the CRC field of a v2 batch; the CRC covers attributes (byte 21) to the end of the batch
CRC_FROM = 21
MIN_V2_ENTRY = 61  # 12 bytes offset + length, 49 bytes minimum batch


# ---------------------------------------------------------------------------------------------------
# Validators (run inside a child process); each returns (batches, bad CRCs, records or None)


def validate_ktool(path: str) -> tuple[int, int, int | None]:
    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.checks.segment_checks import scan_segment

    report = scan_segment(Path(path), ValidateOptions())
    if report.findings:
        f = report.findings[0]
        n = len(report.findings)
        raise RuntimeError(f"ktool: {n} finding(s), first: {f.kind} at byte {f.position}: {f.message}")
    return report.entries, 0, report.records


def validate_walk_crc32c(path: str) -> tuple[int, int, int | None]:
    """The loop the issue quotes: struct.unpack_from of each batch length, crc32c of the covered bytes."""
    from crc32c import crc32c

    length_at = _LENGTH.unpack_from
    crc_at = _CRC.unpack_from
    n = bad = 0
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = memoryview(mm)
        try:
            size = len(mm)
            pos = 0
            while pos + MIN_V2_ENTRY <= size:
                end = pos + 12 + length_at(mm, pos + 8)[0]
                if end > size:
                    break
                if crc32c(view[pos + CRC_FROM : end]) != crc_at(mm, pos + CRC_AT)[0]:
                    bad += 1
                n += 1
                pos = end
        finally:
            view.release()
    return n, bad, None


def crc32c_whole_file(path: str) -> tuple[int, int, int | None]:
    """One crc32c call over the mapped file: what CRC-32C alone costs, with no walk at all."""
    from crc32c import crc32c

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = memoryview(mm)
        try:
            crc32c(view)
        finally:
            view.release()
    return 0, 0, None


def crc32c_in_memory_gb_per_s(size: int = 64 * MiB, runs: int = 5) -> float:
    """CRC-32C alone: the best of `runs` crc32c calls over `size` bytes already in memory (no file)."""
    from crc32c import crc32c

    data = os.urandom(size)
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        crc32c(data)
        best = min(best, time.perf_counter() - t0)
    return size / best / GB


def validate_memory_records(memory_records_cls, data: bytes) -> tuple[int, int, int | None]:
    """Every batch's validate_crc(), no record iteration."""
    n = bad = 0
    r = memory_records_cls(data)
    while r.has_next():
        batch = r.next_batch()
        if not batch.validate_crc():
            bad += 1
        n += 1
    return n, bad, None


def child_main(impl: str, path: str, runs: int, cpu: int | None) -> dict:
    pin_cpu(cpu)
    warm_page_cache(path)
    read_times: list[float] = []
    validate_times: list[float] = []
    if impl in ("ktool", "ktool-pread"):
        from kafka_tools.format.segment import safe_to_map
        from kafka_tools.log.checks import segment_checks  # noqa: F401 - imported before timing, as crc32c below

        mapped = safe_to_map(path)
        if mapped != (impl == "ktool"):
            raise SystemExit(f"{impl}: safe_to_map() is {mapped}, expected {impl == 'ktool'}")
        detail = (
            f"log.checks.segment_checks.scan_segment, {'mmap' if mapped else 'pread (KTOOL_NO_MMAP=1)'}, "
            "light walk (header + CRC-32C, records not decoded)"
        )

        def run() -> tuple[int, int, int | None]:
            return validate_ktool(path)

    elif impl in ("walk-crc32c", "crc32c"):
        import crc32c

        if impl == "walk-crc32c":
            what = "struct.unpack_from + crc32c.crc32c per batch"
        else:
            what = "one crc32c.crc32c call"
        detail = (
            f"plain Python over an mmap, {what}; "
            f"crc32c {crc32c.__version__}, hardware_based={crc32c.hardware_based}"
        )

        def run() -> tuple[int, int, int | None]:
            return validate_walk_crc32c(path) if impl == "walk-crc32c" else crc32c_whole_file(path)

    else:
        if impl == "kafka-python":
            from kafka.record import MemoryRecords
            from kafka.record import util as kp_util

            crc_fn = getattr(kp_util, "_crc32c", None)
            crc_mod = getattr(crc_fn, "__module__", None) or "?"
            crc_note = f", CRC via {crc_mod}.{getattr(crc_fn, '__name__', '?')}"
        else:
            from aiokafka.record.memory_records import MemoryRecords

            crc_note = ""
        with open(path, "rb") as f:
            head = f.read(12)
            head += f.read(struct.unpack_from(">i", head, 8)[0])
        cls = type(MemoryRecords(head).next_batch())
        detail = f"{cls.__module__}.{cls.__qualname__}.validate_crc(){crc_note}"

        def run() -> tuple[int, int, int | None]:
            t0 = time.perf_counter()
            data = Path(path).read_bytes()  # they need the whole segment in memory, as one bytes object
            t1 = time.perf_counter()
            read_times.append(t1 - t0)
            out = validate_memory_records(MemoryRecords, data)
            validate_times.append(time.perf_counter() - t1)
            del data
            return out

    times = []
    cpu_times = []
    batches = bad = 0
    records = None
    for _ in range(runs):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        batches, bad, records = run()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    peak, maxrss = peak_rss_kb()
    if impl == "crc32c":  # after the peak RSS reading: the probe allocates its own buffer
        detail += f"; on bytes already in memory: {crc32c_in_memory_gb_per_s():.1f} GB/s"
    return {
        "impl": impl,
        "detail": detail,
        "times_s": times,  # per run, everything: read (peers) + validation
        "read_times_s": read_times,  # peers only: Path.read_bytes()
        "validate_times_s": validate_times or times,  # peers: the validate_crc() loop alone
        "cpu_times_s": cpu_times,
        "batches": batches,
        "bad_crcs": bad,
        "records": records,
        "peak_rss_kb": peak,
        "ru_maxrss_kb": maxrss,
        "cpu": cpu,
    }


# ---------------------------------------------------------------------------------------------------
# Parent: run children, summarise, print


def run_child(impl: str, seg: dict, runs: int, cpu: int | None) -> dict:
    env = dict(os.environ)
    env.pop("KTOOL_NO_MMAP", None)
    if impl == "ktool-pread":
        env["KTOOL_NO_MMAP"] = "1"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", impl, "--path", seg["path"]]
    cmd += ["--runs", str(runs)] + ([] if cpu is None else ["--cpu", str(cpu)])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} child failed ({proc.returncode}):\n{proc.stderr}")
    res = json.loads(proc.stdout)
    if impl != "crc32c":
        if res["batches"] != seg["batches"] or res["bad_crcs"]:
            raise SystemExit(
                f"{impl} checked {res['batches']} batches ({res['bad_crcs']} bad CRCs), "
                f"expected {seg['batches']} with none bad"
            )
        if res["records"] is not None and res["records"] != seg["records"]:
            raise SystemExit(f"{impl} counted {res['records']} records, expected {seg['records']}")
    median = statistics.median(res["times_s"])
    read = statistics.median(res["read_times_s"]) if res["read_times_s"] else None
    loop = statistics.median(res["validate_times_s"])
    res.update(
        label=LABELS[impl],
        runs=runs,
        median_s=median,
        median_read_s=read,
        median_validate_s=loop,
        gb_per_s=seg["bytes"] / median / GB,
        validate_gb_per_s=seg["bytes"] / loop / GB,
        peak_rss_mb=res["peak_rss_kb"] / 1024,
        ru_maxrss_mb=res["ru_maxrss_kb"] / 1024,
    )
    return res


def measure(seg: dict, impls: list[str], runs: int, cpu: int | None) -> list[dict]:
    results = []
    for impl in impls:
        log(f"  {LABELS[impl]}: {runs} run(s) ...")
        res = run_child(impl, seg, runs, cpu)
        extra = "" if res["median_read_s"] is None else f" (read {res['median_read_s']:.3f} s)"
        log(f"    median {res['median_s']:.3f} s{extra}, {res['gb_per_s']:.2f} GB/s")
        results.append(res)
    by = {r["impl"]: r for r in results}
    for r in results:
        for peer in PEERS:
            p = by.get(peer)
            # Headline ratio: everything each side needs (the peers' read included); also the loops alone.
            r[f"vs_{peer}"] = p["median_s"] / r["median_s"] if p else None
            r[f"vs_{peer}_validate_only"] = p["median_validate_s"] / r["median_validate_s"] if p else None
    return results


def ktool_command() -> list[str]:
    """The installed `ktool` script next to this interpreter (not a pyenv shim), else `python -m`."""
    exe = Path(sys.executable).parent / "ktool"
    if exe.is_file() and os.access(exe, os.X_OK):
        return [str(exe)]
    found = shutil.which("ktool")
    return [found] if found else [sys.executable, "-m", "kafka_tools"]


def timed_process(cmd: list[str], cpu: int | None) -> tuple[float, int, str, float]:
    """(wall s, exit code, stdout, peak RSS MB) of one pinned subprocess; RSS from wait4's ru_maxrss."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=lambda: pin_cpu(cpu)
    )
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.stdout:
        proc.stdout.close()
    return wall, proc.returncode, out, usage.ru_maxrss / 1024


def measure_cli(seg: dict, cpu: int | None) -> dict:
    """`ktool validate --json FILE` once: wall clock including interpreter start-up (`python -c pass`)."""
    cmd = ktool_command() + ["validate", "--json", seg["path"]]
    log(f"  CLI: {' '.join(cmd)} ...")
    startup, _, _, _ = timed_process([sys.executable, "-c", "pass"], cpu)
    wall, code, out, rss = timed_process(cmd, cpu)
    summary = next(
        (o for o in map(json.loads, filter(None, out.splitlines())) if o.get("type") == "summary"), None
    )
    if code != 0 or summary is None or summary.get("batches") != seg["batches"] or summary.get("errors"):
        raise SystemExit(
            f"`{' '.join(cmd)}` exited {code}, summary {summary}; expected {seg['batches']} batches"
        )
    log(f"    {wall:.3f} s (python -c pass: {startup:.3f} s)")
    return {
        "command": cmd,
        "wall_s": wall,
        "python_startup_s": startup,
        "gb_per_s": seg["bytes"] / wall / GB,
        "exit_code": code,
        "summary": summary,
        "ru_maxrss_mb": rss,
    }


def jobs_log_dir(src: str | os.PathLike, tag: str, partitions: int) -> Path:
    """A log dir of `partitions` partitions (`bench-0` …), each one segment: hard links to `src`, so
    every file is a full segment while the page cache holds one copy."""
    from bench.decode import data_dir

    root = data_dir() / f"jobs-{tag}-x{partitions}"  # not `-N`: that names a partition
    for i in range(partitions):
        d = root / f"bench-{i}"
        d.mkdir(parents=True, exist_ok=True)
        target = d / "00000000000000000000.log"
        if not target.exists():
            os.link(src, target)
    return root


def _summary_of(cmd: list[str], code: int, out: str, segments: int) -> dict:
    """The JSON summary of one `ktool validate --json` run, which must be clean and cover `segments`."""
    summary = next(
        (o for o in map(json.loads, filter(None, out.splitlines())) if o.get("type") == "summary"), None
    )
    if code != 0 or summary is None or summary.get("errors") or summary.get("segments") != segments:
        raise SystemExit(f"`{' '.join(cmd)}` exited {code}, summary {summary}")
    return summary


def ceiling_run(log_dir: Path, processes: int) -> tuple[float, float]:
    """(wall s, peak RSS MB): the log dir's partitions dealt out to `processes` independent
    `ktool validate --json --jobs 1 PARTITION…` processes started at once, from the first start to the
    last exit. What the host gives that many walkers sharing nothing but the page cache and the memory
    bus (no address space, no GIL): the ceiling for `--jobs N` on the same files."""
    parts = sorted({p.parent for p in log_dir.glob("*/*.log")})
    shares = [parts[k::processes] for k in range(processes)]
    cmds = [ktool_command() + ["validate", "--json", "--jobs", "1", *map(str, share)] for share in shares]
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for cmd in cmds
    ]
    ended = []
    for proc in procs:  # each prints a few lines only: no pipe fills while another is read
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        ended.append((out, usage.ru_maxrss / 1024))
    wall = time.perf_counter() - t0
    for cmd, proc, (out, _), share in zip(cmds, procs, ended, shares, strict=True):
        _summary_of(cmd, proc.returncode, out, sum(len(list(p.glob("*.log"))) for p in share))
    return wall, max(peak for _, peak in ended)


def crc_walk(files: list[Path], threads: int, step: int = 8 * MiB) -> float:
    """Wall seconds of CRC-32C alone (the C extension's, which releases the GIL; the `crc32c` package
    without it) over every byte of `files`, dealt out to `threads` threads of this process, each file
    mapped and its pages handed back every 16 MiB as ktool's walkers do: no header, no parse. What
    this host gives that many cores over the page cache: the log-dir CEILING a walk cannot beat."""
    import threading

    from kafka_tools.format.checksums import crc32c

    def walk(share: list[Path]) -> None:
        for path in share:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                view, released = memoryview(mm), 0
                try:
                    for at in range(0, len(mm), step):
                        crc32c(view[at : at + step])
                        if at - released >= 16 * MiB:
                            mm.madvise(mmap.MADV_DONTNEED, released, at - released)
                            released = at
                finally:
                    view.release()

    workers = [threading.Thread(target=walk, args=(files[k::threads],)) for k in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - t0


def log_dir_child(path: str, jobs: int) -> dict:
    """`validate_paths` of a log dir with `jobs` walkers, as `ktool validate --jobs J DIR` runs after
    start-up, in this (child) process: wall, CPU, and each walker's CPU inside segment walks. The
    critical path (CPU outside the walks + the busiest walker) is the wall a core a walker would give:
    a figure that holds when other load keeps the walkers from running at once. Walkers are threads
    of this process, or (log/workers/pooled_scans.py) this process and the pool's workers, whose CPU
    is read from RUSAGE_CHILDREN once they have ended and shared among them (each walks as many
    segments)."""
    import resource
    import threading

    from kafka_tools.log import validate
    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.workers import pool

    busy: dict[int, float] = {}
    parent = os.getpid()

    def timing(real):
        def timed(*args):
            cpu = time.thread_time()
            try:
                return real(*args)
            finally:
                if os.getpid() == parent:  # a worker's is read from RUSAGE_CHILDREN
                    me = threading.get_native_id()
                    busy[me] = busy.get(me, 0.0) + time.thread_time() - cpu

        return timed

    validate._call = timing(validate._call)
    pool._call = timing(pool._call)  # the calls this process takes (a worker's are sent by name)
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = validate.validate_paths([path], ValidateOptions(), None, jobs).summary()
    wall, c1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if summary.errors:
        raise SystemExit(f"{path}: {summary.errors} errors")
    cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
    kids = k1.ru_utime + k1.ru_stime - k0.ru_utime - k0.ru_stime
    walked = sum(busy.values())
    walkers = sorted(busy.values(), reverse=True)
    if kids > 0:
        walkers = sorted(walkers + [kids / (jobs - 1)] * (jobs - 1), reverse=True)
    return {
        "jobs": jobs,
        "wall_s": wall,
        "cpu_s": cpu + kids,
        "thread_busy_s": walkers,
        "critical_s": cpu if not walkers else max(0.0, cpu - walked) + max(walkers),
    }


def in_process_jobs(log_dir: Path, j: int) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child-log-dir",
        str(log_dir),
        "--child-jobs",
        str(j),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"log-dir child failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout)


def startup_log_dir(partitions: int) -> Path:
    """A log dir shaped like the bench's (`partitions` partitions, one segment each) of the 4 KiB v2
    fixture: what `ktool validate --jobs J` costs before and after the walk (start-up, discovery,
    the report), timed in the same run and taken off to read the walk's own speed-up."""
    from bench.decode import data_dir

    fixture = Path(__file__).resolve().parent.parent / "fixtures/generated/v2/none-0/00000000000000000000.log"
    small = data_dir() / "startup-4k.log"  # a copy: the links below stay on the data dir's file system
    if not small.exists():
        shutil.copyfile(fixture, small)
    return jobs_log_dir(small, "startup-4k", partitions)


def measure_jobs(log_dir: Path, runs: int, jobs: tuple[int, ...] = (1, 2)) -> dict:
    """`ktool validate --json --jobs J LOG_DIR` for each J, `runs` times (alternated with the CEILING:
    the partitions in J independent `--jobs 1` processes at once; the same command on a log dir of as
    many 4 KiB segments, whose fastest run is the start-up taken off in `after_startup`; and CRC-32C
    alone over the files on 1 and J threads in this process), median wall clock; every run must exit
    0 with no errors. `speedup` = median of --jobs 1 / median of the last; `ceiling_speedup` =
    median of --jobs 1 / median of the independent processes."""
    files = sorted(log_dir.glob("*/*.log"))
    total = sum(f.stat().st_size for f in files)
    warm_page_cache(files[0])
    small = startup_log_dir(len(files))
    walls: dict[int, list[float]] = {j: [] for j in jobs}
    starts: dict[int, list[float]] = {j: [] for j in jobs}
    rss: dict[int, float] = {j: 0.0 for j in jobs}
    ceilings: list[float] = []
    crcs: dict[int, list[float]] = {1: [], jobs[-1]: []}
    inproc: dict[int, list[dict]] = {j: [] for j in jobs}
    for _ in range(runs):
        for j in jobs:
            cmd = ktool_command() + ["validate", "--json", "--jobs", str(j), str(log_dir)]
            wall, code, out, peak = timed_process(cmd, None)
            _summary_of(cmd, code, out, len(files))
            walls[j].append(wall)
            rss[j] = max(rss[j], peak)
            cmd = ktool_command() + ["validate", "--json", "--jobs", str(j), str(small)]
            wall, code, out, _ = timed_process(cmd, None)
            _summary_of(cmd, code, out, len(files))
            starts[j].append(wall)
        ceilings.append(ceiling_run(log_dir, jobs[-1])[0])
        for t in crcs:
            crcs[t].append(crc_walk(files, t))
        for j in jobs:
            inproc[j].append(in_process_jobs(log_dir, j))
    med = {j: statistics.median(walls[j]) for j in jobs}
    ceiling = statistics.median(ceilings)
    # after start-up: the fastest run of each less the fastest run of the same command on 4 KiB segments
    after = {j: max(min(walls[j]) - min(starts[j]), 1e-3) for j in jobs}
    crc = {t: statistics.median(v) for t, v in crcs.items()}
    return {
        "ceiling": {
            "processes": jobs[-1],
            "median_s": ceiling,
            "gb_per_s": total / ceiling / GB,
            "speedup": med[jobs[0]] / ceiling,
        },
        "after_startup": {
            str(j): {"walk_s": after[j], "startup_s": min(starts[j]), "gb_per_s": total / after[j] / GB}
            for j in jobs
        },
        "after_startup_speedup": after[jobs[0]] / after[jobs[-1]],
        "in_process": {
            str(j): {k: statistics.median(r[k] for r in inproc[j]) for k in ("wall_s", "cpu_s", "critical_s")}
            for j in jobs
        },
        "crc_ceiling": {
            str(t): {"median_s": crc[t], "gb_per_s": total / crc[t] / GB, "min_s": min(crcs[t])} for t in crc
        },
        "log_dir": str(log_dir),
        "segments": len(files),
        "bytes": total,
        "command": " ".join(ktool_command() + ["validate", "--json", "--jobs", "J", str(log_dir)]),
        "runs": runs,
        "by_jobs": {
            str(j): {
                "median_s": med[j],
                "min_s": min(walls[j]),
                "max_s": max(walls[j]),
                "gb_per_s": total / med[j] / GB,
                "peak_rss_mb": rss[j],
            }
            for j in jobs
        },
        "speedup": med[jobs[0]] / med[jobs[-1]],
    }


def jobs_lines(res: dict) -> list[str]:
    lines = [
        f"validate of a log dir, {res['segments']} segments, {res['bytes'] / GB:.2f} GB, median of "
        f"{res['runs']} runs (CLI, not pinned): {res['command']}"
    ]
    for j, r in res["by_jobs"].items():
        lines.append(
            f"  --jobs {j}: {r['median_s']:.2f} s ({r['min_s']:.2f}-{r['max_s']:.2f}), "
            f"{r['gb_per_s']:.2f} GB/s, peak RSS {r['peak_rss_mb']:.0f} MB"
        )
    lines.append(f"  speedup --jobs {list(res['by_jobs'])[-1]} vs --jobs 1: {res['speedup']:.2f}x")
    c = res["ceiling"]
    lines.append(
        f"  CEILING, the partitions in {c['processes']} independent --jobs 1 processes at once: "
        f"{c['median_s']:.2f} s, {c['gb_per_s']:.2f} GB/s, {c['speedup']:.2f}x --jobs 1"
    )
    if "after_startup" in res:
        walks = ", ".join(
            f"--jobs {j} {a['walk_s']:.2f} s ({a['gb_per_s']:.2f} GB/s, start-up {a['startup_s']:.3f} s off)"
            for j, a in res["after_startup"].items()
        )
        lines.append(f"  after start-up (fastest runs): {walks}: {res['after_startup_speedup']:.2f}x")
        crc = ", ".join(
            f"{t} thread(s) {r['median_s']:.2f} s ({r['gb_per_s']:.2f} GB/s)"
            for t, r in res["crc_ceiling"].items()
        )
        lines.append(f"  CEILING, CRC-32C alone over the files in this process: {crc}")
        ip = res["in_process"]
        lines.append(
            "  in process (validate_paths, medians): "
            + ", ".join(
                f"--jobs {j} wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s, "
                f"critical path {r['critical_s']:.2f} s"
                for j, r in ip.items()
            )
        )
    return lines


def table(seg: dict, results: list[dict], runs: int) -> str:
    head = (
        f"CRC validation, uncompressed v2: {seg['bytes'] / MiB:.0f} MiB ({seg['bytes'] / GB:.2f} GB), "
        f"{seg['batches']:,} batches, {seg['records']:,} records; median of {runs} runs"
    )
    cols = [
        "implementation",
        "read s",
        "validate s",
        "total s",
        "GB/s",
        "min-max s",
        "peak RSS",
        "vs kafka-python",
        "vs aiokafka",
    ]

    def row(r: dict) -> list[str]:
        read = r["median_read_s"]
        return [
            r["label"],
            "-" if read is None else f"{read:.3f}",
            f"{r['median_validate_s']:.3f}",
            f"{r['median_s']:.3f}",
            f"{r['gb_per_s']:.2f}",
            f"{min(r['times_s']):.3f}-{max(r['times_s']):.3f}",
            f"{r['peak_rss_mb']:.0f} MB",
            fmt_ratio(r["vs_kafka-python"]),
            fmt_ratio(r["vs_aiokafka"]),
        ]

    out = [head] + format_table(cols, [row(r) for r in results])
    out += [f"  {r['label']}: {r['detail']}" for r in results]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mib", type=int, default=1024, help="segment size (default 1024)")
    p.add_argument("--runs", type=int, default=5, help="timed runs per implementation (default 5)")
    p.add_argument(
        "--block-mib",
        type=int,
        default=64,
        help="size of the block built record by record, then repeated (default 64, as decode.py)",
    )
    p.add_argument("--impl", action="append", choices=IMPLS, help="only these (repeatable; default all)")
    p.add_argument("--no-cli", action="store_true", help="skip timing `ktool validate --json FILE`")
    p.add_argument(
        "--jobs-segments",
        type=int,
        default=16,
        help="log dir of N links to the segment, validated with --jobs 1 and 2 (default 16; 0 skips)",
    )
    p.add_argument(
        "--v0-jobs-segments",
        type=int,
        default=0,
        help="also a log dir of N links to bench/legacy.py's 319 MB v0 segment (legacy-v0-600000-x4.log, "
        "when it has run), as legacy.py measures issue 27's v0 target (8; default 0 skips)",
    )
    p.add_argument("--quick", action="store_true", help="smoke run: 32 MiB, 2 runs")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument(
        "--check", action="store_true", help=f"exit 1 when ktool is below {TARGET_GB_PER_S:g} GB/s"
    )
    p.add_argument("--child", choices=IMPLS, help=argparse.SUPPRESS)
    p.add_argument("--child-log-dir", help=argparse.SUPPRESS)
    p.add_argument("--child-jobs", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    p.add_argument("--cpu", type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.child_log_dir:
        print(json.dumps(log_dir_child(a.child_log_dir, a.child_jobs)))
        return 0
    if a.child:
        print(json.dumps(child_main(a.child, a.path, a.runs, a.cpu)))
        return 0

    if a.quick:
        a.size_mib, a.runs = 32, 2
    impls = a.impl or list(IMPLS)
    cpu = pick_cpu()
    wall0 = time.perf_counter()

    seg = segment(a.size_mib, "none", a.block_mib)
    log(f"CRC validation ({seg['bytes'] / MiB:.0f} MiB, {seg['batches']:,} batches) on CPU {cpu}, warm cache")
    warm_page_cache(seg["path"])
    res = measure(seg, impls, a.runs, cpu)
    cli = None if a.no_cli else measure_cli(seg, cpu)
    jobs = None
    if a.jobs_segments:
        log(f"validate --jobs 1 and 2 of a log dir of {a.jobs_segments} segments ...")
        jobs = measure_jobs(jobs_log_dir(seg["path"], f"v2-{a.size_mib}", a.jobs_segments), a.runs)
    v0_jobs = None
    if a.v0_jobs_segments:
        from bench.decode import data_dir

        legacy = data_dir() / "legacy-v0-600000-x4.log"
        if legacy.exists():
            log(f"validate --jobs 1 and 2 of a log dir of {a.v0_jobs_segments} v0 segments ...")
            v0_dir = jobs_log_dir(legacy, "legacy-v0-600000-x4", a.v0_jobs_segments)  # legacy.py's
            v0_jobs = measure_jobs(v0_dir, a.runs)
        else:
            log(f"no v0 log dir: {legacy} is made by bench/legacy.py")

    checks = []
    ktool = next((r for r in res if r["impl"] == "ktool"), None)
    if ktool is not None:
        checks.append(
            (
                f"ktool >= {TARGET_GB_PER_S:g} GB/s (scan_segment, mmap, warm cache)",
                f"{ktool['gb_per_s']:.2f} GB/s",
                ktool["gb_per_s"] >= TARGET_GB_PER_S,
            )
        )
    if jobs is not None:
        checks.append(
            (
                f"validate --jobs 2 >= {TARGET_JOBS_SPEEDUP:g}x --jobs 1 (log dir of many segments)",
                f"{jobs['speedup']:.2f}x",
                jobs["speedup"] >= TARGET_JOBS_SPEEDUP,
            )
        )
    result = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_pinned": cpu,
        "page_cache": "warm (file read once before timing, in the parent and in every child)",
        "runs": a.runs,
        "segment": seg,
        "results": res,
        "cli": cli,
        "jobs": jobs,
        "v0_jobs": v0_jobs,
        "target_gb_per_s": TARGET_GB_PER_S,
        "checks": [{"target": t, "measured": m, "ok": ok} for t, m, ok in checks],
        "wall_s": round(time.perf_counter() - wall0, 1),
    }

    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"Python {result['python']} {result['machine']}, one core (CPU {cpu}), warm page cache "
            "(file read once before timing); GB = 1e9 bytes"
        )
        print()
        print(table(seg, res, a.runs))
        print()
        print("total = what each needs: kafka-python/aiokafka read the file into one bytes object (read s),")
        print("then validate_crc() every batch (validate s); ktool and the references map or pread the file.")
        print("vs X = X's total / this total (loops alone, without the read: vs_X_validate_only in --json).")
        if cli is not None:
            print()
            print(
                f"CLI, once: `ktool validate --json {Path(seg['path']).name}` {cli['wall_s']:.3f} s wall "
                f"= {cli['gb_per_s']:.2f} GB/s, incl. Python start-up (`python -c pass` alone: "
                f"{cli['python_startup_s']:.3f} s), peak RSS {cli['ru_maxrss_mb']:.0f} MB"
            )
        for j in (jobs, v0_jobs):
            if j is not None:
                print()
                print("\n".join(jobs_lines(j)))
        if checks:
            print()
            for t, m, ok in checks:
                print(f"[{'PASS' if ok else 'FAIL'}] {t}: {m}")
        print(f"\nwall time {result['wall_s']} s")
    return 1 if a.check and not all(ok for _, _, ok in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
