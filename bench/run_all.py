"""Every bench at once, briefly, and ONE table of ratios against references measured in the same run.

    python bench/run_all.py            # moderate sizes (~5 min on 2 cores after the data is generated)
    python bench/run_all.py --quick    # smoke sizes: every case runs, the figures are only indicative
    python bench/run_all.py --json     # the rows as JSON on stdout (progress on stderr)
    python bench/run_all.py --check    # exit 1 when a row misses its target
    python bench/run_all.py --only validate --only startup   # some groups only

Each bench runs as a child process with `--json` (bench/startup.py, validate.py, split.py, decode.py
once per codec, legacy.py) and a few `ktool validate` command lines are timed here (the default
`--jobs` against `--jobs 1`, alternated). A row is `ktool / reference` where the reference ran in
the same run: a ceiling (a plain Python header walk + crc32c), a peer (aiokafka, kafka-python, Kafka
0.9.0.1's DumpLogSegments when bench/legacy.py finds it), `--jobs 1`, or `python -c pass`. Peak RSS is every
ktool child's own (`wait4`'s ru_maxrss, or the bench's VmHWM). The load average before and after is
printed beside the table: on a shared machine, re-run on a quiet one before quoting a figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as `python bench/run_all.py`
    sys.path.insert(0, str(ROOT))

from bench.decode import format_table, log  # noqa: E402

GROUPS = ("startup", "validate", "jobs", "decode", "legacy", "tiered")
CODECS = ("gzip", "snappy", "lz4", "zstd")
RSS_LIMIT_MB = 100.0


@dataclass
class Row:
    group: str
    case: str
    ktool: str  # ktool's figure
    reference: str  # what it is compared with, and its figure
    ratio: float | None  # higher is better unless `lower_is_better` (startup: ms over python -c pass)
    target: float | None
    lower_is_better: bool = False
    peak_rss_mb: float | None = None

    @property
    def ok(self) -> bool | None:
        if self.target is None or self.ratio is None:
            ok = None
        else:
            ok = self.ratio <= self.target if self.lower_is_better else self.ratio >= self.target
        if self.peak_rss_mb is not None and self.peak_rss_mb >= RSS_LIMIT_MB:
            return False
        return ok


def bench_json(script: str, *args: str, python: Path | None = None) -> dict:
    """Run bench/`script` with `--json` (by `python`, default this interpreter); its result (progress
    goes to our stderr)."""
    cmd = [str(python or sys.executable), str(ROOT / "bench" / script), *args, "--json"]
    log(f"$ {' '.join(cmd[1:])}")
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{script} failed ({out.returncode})")
    return json.loads(out.stdout)


def ktool_cmd() -> list[str]:
    return [sys.executable, "-m", "kafka_tools"]


def timed(cmd: list[str]) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of one child."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def paired(variants: dict[str, list[str]], runs: int, warm: bool = True) -> dict[str, dict]:
    """Each command `runs` times, alternated (the order reversed every round), after one run each to
    warm up unless `warm` is False; median wall and CPU, peak RSS, exit codes, and every round's wall
    (`walls`, in round order: `round_ratio` pairs them)."""
    walls: dict[str, list[float]] = {k: [] for k in variants}
    cpus: dict[str, list[float]] = {k: [] for k in variants}
    rss: dict[str, float] = dict.fromkeys(variants, 0.0)
    codes: dict[str, set[int]] = {k: set() for k in variants}
    for cmd in variants.values() if warm else ():
        timed(cmd)  # warm: page cache, bytecode
    order = list(variants.items())
    for _ in range(runs):
        for name, cmd in order:
            wall, cpu, peak, code = timed(cmd)
            walls[name].append(wall)
            cpus[name].append(cpu)
            rss[name] = max(rss[name], peak)
            codes[name].add(code)
        order.reverse()  # who runs first each round takes turns: a burst of load touches each alike
    return {
        k: {
            "wall_s": statistics.median(walls[k]),
            "min_wall_s": min(walls[k]),
            "walls": walls[k],
            "cpu_s": statistics.median(cpus[k]),
            "peak_rss_mb": rss[k],
            "exit_codes": sorted(codes[k]),
        }
        for k in variants
    }


def round_ratio(one: dict, default: dict, startup: dict | None = None) -> float:
    """The median over rounds of `one`'s wall / `default`'s in the same round (`startup`'s wall of the
    same round taken off both when given). A round's runs are back to back, so a burst of other load
    or a slow drift touches both sides of its ratio alike; the median drops the rounds a burst split."""
    s = startup["walls"] if startup else [0.0] * len(one["walls"])
    return statistics.median(
        max(o - t, 1e-3) / max(d - t, 1e-3) for o, d, t in zip(one["walls"], default["walls"], s, strict=True)
    )


def rounds_for(walls: list[float], quick: bool, budget_s: float = 6.0) -> int:
    """Rounds of a paired row: short commands get more (their ratio is the noisiest), at least 5 (3
    quick) and at most 21, about `budget_s` of runs in all."""
    if quick:
        return 3
    return max(5, min(21, int(budget_s / max(sum(walls), 1e-3))))


# -- the groups -----------------------------------------------------------------------------------


def startup_rows(quick: bool) -> list[Row]:
    """Each command through `python -m kafka_tools`, then through the installed console script of a
    virtualenv that is not activated (as the developers' guide measures it), each against its own
    interpreter's `python -c pass` in the same run."""
    runs = ["--quick"] if quick else ["--runs", "9"]
    rows = _startup_table(bench_json("startup.py", *runs), "")
    venv = script_venv()
    if venv is not None:
        rows += _startup_table(
            bench_json("startup.py", *runs, "--script", python=venv / "bin" / "python"), "script "
        )
    return rows


def _startup_table(res: dict, how: str) -> list[Row]:
    base = next(r for r in res["rows"] if r["command"] == "python -c pass")
    return [
        Row(
            "startup",
            f"ktool {how}{r['command']} (small input): over python -c pass",
            f"{r['median_s'] * 1000:.0f} ms",
            f"python -c pass {base['median_s'] * 1000:.0f} ms",
            r["over_pass_s"] * 1000,
            100.0,
            lower_is_better=True,
        )
        for r in res["rows"]
        if r is not base
    ]


def _entry_module() -> str:
    """The module of pyproject's `ktool` console script (`[project.scripts]`)."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    return scripts["ktool"].partition(":")[0]


def script_venv() -> Path | None:
    """A virtualenv under the bench data dir (system site-packages, this tree installed editable without
    dependencies), made once per checkout; its bin/ktool is then run by absolute path, never activated.
    None (said on stderr) when it cannot be made, e.g. without pip's build requirements."""
    from bench.decode import data_dir

    # One per checkout: the editable install points at the tree that made it, and KTOOL_BENCH_DIR may be
    # shared by several checkouts.
    venv = data_dir() / f"script-venv-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]}"
    ktool = venv / "bin" / "ktool"
    # Made again when pyproject's entry point moved (the script imports its module by name).
    if ktool.is_file() and f"from {_entry_module()} import" in ktool.read_text():
        return venv
    log(f"making {venv} (once): python -m venv --system-site-packages, pip install -e . --no-deps")
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    if made.returncode == 0:
        made = subprocess.run([*pip, "-e", str(ROOT)], stdout=subprocess.DEVNULL)
    if made.returncode != 0 or not ktool.is_file():
        log(f"no console-script rows: could not install ktool into {venv}")
        return None
    return venv


def validate_rows(quick: bool) -> list[Row]:
    # --quick's 32 MiB is too small for the ceiling ratio (a fixed ~2 ms cost shows): 256 MiB at least
    args = ["--size-mib", "256", "--runs", "3"] if quick else ["--size-mib", "1024", "--runs", "3"]
    v0 = ["--v0-jobs-segments", "0" if quick else "8"]  # as bench/legacy.py measured issue 27's v0 1.7x
    res = bench_json("validate.py", *args, "--jobs-segments", "0" if quick else "6", *v0)
    by = {r["impl"]: r for r in res["results"]}
    k, ceiling = by["ktool"], by["walk-crc32c"]
    rows = [
        Row(
            "validate",
            f"validate v2 {res['segment']['bytes'] / 2**20:.0f} MiB, one core (mmap)",
            f"{k['gb_per_s']:.2f} GB/s",
            f"header walk + crc32c {ceiling['gb_per_s']:.2f} GB/s",
            k["gb_per_s"] / ceiling["gb_per_s"],
            1.0,
            peak_rss_mb=k["peak_rss_mb"],
        ),
        Row(
            "validate",
            "validate v2, one core (pread, a broker's live dir)",
            f"{by['ktool-pread']['gb_per_s']:.2f} GB/s",
            f"header walk + crc32c {ceiling['gb_per_s']:.2f} GB/s",
            by["ktool-pread"]["gb_per_s"] / ceiling["gb_per_s"],
            None,
            peak_rss_mb=by["ktool-pread"]["peak_rss_mb"],
        ),
    ]
    for peer in ("aiokafka", "kafka-python"):
        if peer in by:
            rows.append(
                Row(
                    "validate",
                    f"validate v2 vs {peer} (read + validate_crc)",
                    f"{k['median_s']:.3f} s",
                    f"{peer} {by[peer]['median_s']:.3f} s",
                    by[peer]["median_s"] / k["median_s"],
                    None,
                )
            )
    if res.get("jobs"):
        rows += log_dir_rows(res["jobs"])
    if res.get("v0_jobs"):
        rows += log_dir_rows(res["v0_jobs"], "v0", 1.7)
    return rows


def log_dir_rows(j: dict, fmt: str = "v2", target: float = 1.8) -> list[Row]:
    """`--jobs 2` on a log dir against `--jobs 1` (the whole command, and after the start-up both pay),
    against the issue's 9 GB/s (v2), and against the host's CEILINGs of the same run: the partitions
    in 2 independent `--jobs 1` processes at once, and CRC-32C alone over the files on 1 and 2
    threads (no parse, no start-up: what the memory gives two cores)."""
    two, one, c = j["by_jobs"]["2"], j["by_jobs"]["1"], j["ceiling"]
    what = f"log dir of {j['segments']} {fmt} segments"
    rows = [
        Row(
            "validate",
            f"validate --jobs 2, {what}",
            f"{two['median_s']:.2f} s",
            f"--jobs 1 {one['median_s']:.2f} s",
            j["speedup"],
            target,
            peak_rss_mb=max(v["peak_rss_mb"] for v in j["by_jobs"].values()),
        ),
    ]
    after = j.get("after_startup")
    if after:
        rows.append(
            Row(
                "validate",
                f"validate --jobs 2, {what}, after start-up (fastest runs)",
                f"{after['2']['walk_s']:.3f} s ({after['2']['gb_per_s']:.2f} GB/s)",
                f"--jobs 1 {after['1']['walk_s']:.3f} s (start-up {after['1']['startup_s']:.3f} s off)",
                j["after_startup_speedup"],
                target,
            )
        )
    ip = j.get("in_process")
    if ip:  # holds when other load keeps the two threads from running at once
        rows.append(
            Row(
                "validate",
                f"validate --jobs 2, {what}, in process: critical path",
                f"{ip['2']['critical_s']:.3f} s (CPU {ip['2']['cpu_s']:.2f}, wall {ip['2']['wall_s']:.2f})",
                f"--jobs 1 {ip['1']['critical_s']:.3f} s",
                ip["1"]["critical_s"] / ip["2"]["critical_s"],
                None,
            )
        )
    if fmt == "v2":
        rows.append(
            Row(
                "validate",
                f"validate --jobs 2, {what}: throughput (CLI, start-up included)",
                f"{two['gb_per_s']:.2f} GB/s",
                "issue 27: 9 GB/s",
                two["gb_per_s"] / 9.0,
                1.0,
            )
        )
    crc = j.get("crc_ceiling")
    if crc and after and fmt == "v2":
        rows += [
            Row(
                "validate",
                f"CEILING: CRC-32C alone over the {what}, 2 threads in one process (no parse, no start-up)",
                f"{crc['2']['median_s']:.2f} s ({crc['2']['gb_per_s']:.2f} GB/s)",
                f"1 thread {crc['1']['median_s']:.2f} s ({crc['1']['gb_per_s']:.2f} GB/s)",
                crc["1"]["median_s"] / crc["2"]["median_s"],
                None,
            ),
            Row(  # fastest runs of both: the after-start-up figure is the fastest run's
                "validate",
                f"validate --jobs 2, {what}, after start-up: GB/s / CRC-32C alone on 2 threads (fastest)",
                f"{after['2']['gb_per_s']:.2f} GB/s",
                f"CRC-32C alone {j['bytes'] / crc['2']['min_s'] / 1e9:.2f} GB/s",
                after["2"]["gb_per_s"] / (j["bytes"] / crc["2"]["min_s"] / 1e9),
                None,
            ),
        ]
    return rows + [
        Row(
            "validate",
            f"CEILING: {what}, the partitions in 2 independent --jobs 1 processes at once",
            f"{c['median_s']:.2f} s ({c['gb_per_s']:.2f} GB/s)",
            f"--jobs 1 {one['median_s']:.2f} s",
            c["speedup"],
            None,
        ),
        Row(
            "validate",
            f"validate --jobs 2, {what}: speed-up / the ceiling's",
            f"{j['speedup']:.2f}x",
            f"ceiling {c['speedup']:.2f}x",
            j["speedup"] / c["speedup"],
            None,
        ),
    ]


def head_segment(src: str, batches: int) -> Path:
    """The first `batches` batches of the v2 segment `src` as a segment of their own (made once, in the
    bench data dir): a small segment of the bench's own batches (3 of 64 KiB-built ones: ~160 KB)."""
    from bench.decode import data_dir

    # Only the batch headers and the head itself are read: the children of this process start with
    # its peak RSS as theirs (Linux carries it over exec), which the RSS column would show.
    end = 0
    with open(src, "rb") as f:
        for _ in range(batches):
            end += 12 + int.from_bytes(os.pread(f.fileno(), 12, end)[8:12], "big")
        path = data_dir() / f"v2-head-{end}.log"
        if not path.exists():
            path.write_bytes(os.pread(f.fileno(), end, 0))
    return path


def jobs_rows(quick: bool) -> list[Row]:
    """The default --jobs (all usable cores) against --jobs 1: never slower, whatever the input."""
    from bench.decode import data_dir, segment
    from bench.validate import jobs_log_dir

    big = segment(128 if quick else 1024, "none", 64)
    small = ROOT / "fixtures" / "generated" / "v2" / "none-0" / "00000000000000000000.log"
    # issue 27's "one large segment": 4 GiB (512 MiB quick), made of the one above
    large = bench_json("split.py", "--large", "4", "--size-mib", "128" if quick else "1024")
    large_what = f"one large v2 segment ({large['bytes'] / 2**20:.0f} MiB)"
    head, many = head_segment(big["path"], 3), 1000 if quick else 3000
    after_startup = (large_what, "one v2 segment")  # rows that also time the start-up (after_startup_row)
    inputs = {
        large_what: large["path"],
        "one v2 segment": big["path"],
        "log dir of 4 v2 segments": str(jobs_log_dir(big["path"], f"v2-{big['bytes']}", 4)),
        # one segment left over after a round a thread: split into ranges (log/workers/parallel.py)
        "log dir of 3 v2 segments": str(jobs_log_dir(big["path"], f"v2-{big['bytes']}", 3)),
        "one 4 KiB v2 segment": str(small),
        # many small segments: the per-segment Python work (open, report, partition checks) dominates;
        # on threads it fought over the GIL (0.77x --jobs 1 before issue 27's branch s1)
        f"log dir of {many} small v2 segments": str(jobs_log_dir(head, f"v2-{head.stat().st_size}", many)),
    }
    # v0 and v1 as bench/legacy.py made them (in the bench data dir, when it has run): one file and many
    legacy = data_dir() / "legacy-v0-600000-x4.log"
    if legacy.exists():
        inputs["one v0 segment"] = str(legacy)
        size = legacy.stat().st_size
        inputs["log dir of 4 v0 segments"] = str(jobs_log_dir(legacy, f"v0-{size}", 4))
    v1 = data_dir() / "legacy-v1-gzip-600000.log"  # 17 MB: four of them are threads' work
    if v1.exists():
        inputs["log dir of 4 v1 gzip segments"] = str(jobs_log_dir(v1, f"v1-gzip-{v1.stat().st_size}", 4))
    rows = []
    for what, path in inputs.items():
        variants = {
            "default": [*ktool_cmd(), "validate", "--json", path],
            "jobs1": [*ktool_cmd(), "validate", "--json", "--jobs", "1", path],
        }
        if what in after_startup:  # the start-up the same command pays on a 4 KiB segment, same rounds
            variants["startup"] = [*ktool_cmd(), "validate", "--json", str(small)]
        warm = [timed(cmd)[0] for cmd in variants.values()]  # page cache, bytecode; how long a round is
        res = paired(variants, rounds_for(warm, quick), warm=False)
        d, one = res["default"], res["jobs1"]
        if "startup" in res:
            rows.append(after_startup_row(what, d, one, res["startup"]))
        target = 0.95  # never slower, within noise
        rows.append(
            Row(
                "jobs",
                f"validate (default --jobs) {what}",
                f"{d['wall_s']:.3f} s (CPU {d['cpu_s']:.2f})",
                f"--jobs 1 {one['wall_s']:.3f} s (CPU {one['cpu_s']:.2f}), {len(d['walls'])} rounds",
                round_ratio(one, d),
                target,
                peak_rss_mb=max(d["peak_rss_mb"], one["peak_rss_mb"]),
            )
        )
    # The split itself, in process: the critical path (serial CPU + the busiest thread) holds on a
    # loaded machine, where the default falls back to one walker and the walls above say nothing.
    cores = max(2, len(os.sched_getaffinity(0)))
    res = bench_json(
        "split.py", "--path", big["path"], "--jobs", str(cores), "--runs", "3" if quick else "5", "--ceiling",
        "--forked",
    )  # fmt: skip
    one, split = res["by_jobs"]["1"], res["by_jobs"][str(cores)]
    busy = split["least_cpu_run"]["thread_busy_s"]
    rows.append(
        Row(
            "jobs",
            f"one v2 segment split over {cores} walkers, in process: critical path",
            f"{split['critical_s'] * 1000:.0f} ms (CPU {split['cpu_s']:.2f}, busy "
            + "/".join(f"{b * 1000:.0f}" for b in busy)
            + " ms)",
            f"--jobs 1 {one['critical_s'] * 1000:.0f} ms",
            one["critical_s"] / split["critical_s"],
            None,
        )
    )
    # The host's ceiling for that split, same run: the same ranges in independent processes at once (no
    # shared memory map, no GIL). The split's wall ratio is judged against it, not against the core count.
    c = res["ceiling"]
    in_process = one["wall_s"] / split["wall_s"]
    rows += [
        Row(
            "jobs",
            f"CEILING: one v2 segment as {cores} ranges in {cores} independent processes at once",
            f"{c['ranges_wall_s'] * 1000:.0f} ms (CPU {c['cpu_s']:.2f})",
            f"one range, one process {c['one_range_wall_s'] * 1000:.0f} ms",
            c["speedup"],
            None,
        ),
        Row(
            "jobs",
            f"one v2 segment split over {cores} walkers, in process: wall speed-up / the ceiling's",
            f"{in_process:.2f}x (--jobs 1 {one['wall_s'] * 1000:.0f}, split {split['wall_s'] * 1000:.0f} ms, "
            f"its ranges alone {(split.get('ranges_wall_s') or 0) * 1000:.0f})",
            f"ceiling {c['speedup']:.2f}x",
            in_process / c["speedup"],
            None,
        ),
    ]
    # What sharing one memory map costs the split: its own ranges dealt to threads, and to processes
    # forked after the same planning (page faults, madvise's TLB shootdowns, the GIL), same child.
    t, f = res["forked"]["threads"], res["forked"]["forked"]
    rows.append(
        Row(
            "jobs",
            f"one v2 segment's ranges on {cores} threads / on {cores} forked processes (wall)",
            f"{t['wall_s'] * 1000:.0f} ms (CPU {t['cpu_s']:.2f}, {t['shootdowns']:.0f} TLB shootdowns)",
            f"forked {f['wall_s'] * 1000:.0f} ms (CPU {f['cpu_s']:.2f}, {f['shootdowns']:.0f})",
            f["wall_s"] / t["wall_s"],
            None,
        )
    )
    return rows


def after_startup_row(what: str, default: dict, one: dict, startup: dict) -> Row:
    """The default `--jobs` against `--jobs 1` on a large segment with the start-up both pay taken off:
    the same command on a 4 KiB segment, timed in the same rounds (alternated with them), taken off
    each round's walls; the median of the rounds' ratios (round_ratio). Through the CLI the whole wall
    cannot show the cores' gain on 1 GiB: the start-up (~0.12 s) is as long as its walk on one core.
    On the 4 GiB segment the walk is 4x as long and the start-up's noise a quarter as large."""
    s = statistics.median(startup["walls"])
    after_d, after_one = max(default["wall_s"] - s, 1e-3), max(one["wall_s"] - s, 1e-3)
    return Row(
        "jobs",
        f"validate (default --jobs) {what}, after start-up (same rounds)",
        f"{after_d:.3f} s (CPU {max(default['cpu_s'] - startup['cpu_s'], 0):.2f})",
        f"--jobs 1 {after_one:.3f} s (start-up {s:.3f} s off), {len(one['walls'])} rounds",
        round_ratio(one, default, startup),
        1.6,
        peak_rss_mb=max(default["peak_rss_mb"], one["peak_rss_mb"]),
    )


def decode_rows(quick: bool) -> list[Row]:
    rows = []
    size = ["--size-mib", "16" if quick else "64", "--codec-size-mib", "8" if quick else "32"]
    # ktool and aiokafka alternate over 6 rounds of 3 timed runs (each child's untimed run first), 18
    # runs each a codec; kafka-python (no target, 10x slower) once, in the first round
    runs = ["--runs", "2" if quick else "3", "--rounds", "1" if quick else "6"]
    runs += ["--slow-runs", "1", "--slow-rounds", "1"]
    for n, codec in enumerate(CODECS):
        impls = ["--impl", "ktool", "--impl", "aiokafka", "--impl", "kafka-python"]
        once = [] if n == 0 else ["--skip-uncompressed"]  # "none" once, with the first codec
        res = bench_json("decode.py", *size, *runs, *impls, "--codec", codec, "--memory-mib", "0", *once)
        for m in res["measurements"]:
            by = {r["impl"]: r for r in m["results"]}
            k = by["ktool"]
            records = m["segment"]["records"]
            for peer, target in (("aiokafka", 1.3), ("kafka-python", None)):
                # the ratio of CPU-time medians: each child runs pinned to one CPU, and its CPU time is
                # its own work where the wall clock also holds other processes' turns on that CPU; the
                # wall-clock ratio and each round's pair (min-max) are shown beside it
                p = by[peer]
                rounds = k[f"vs_{peer}_rounds"]
                spread = f"; rounds {min(rounds):.2f}-{max(rounds):.2f}x" if rounds else ""
                rows.append(
                    Row(
                        "decode",
                        f"full decode v2 {m['segment']['codec']} vs {peer} (CPU time)",
                        f"{records / k['median_cpu_s'] / 1e6:.2f} M rec/s",
                        f"{peer} {records / p['median_cpu_s'] / 1e6:.2f} M rec/s; wall "
                        f"{k['vs_' + peer]:.2f}x{spread}",
                        k[f"vs_{peer}_cpu"],
                        target,
                        peak_rss_mb=k.get("peak_rss_mb"),
                    )
                )
    return rows


def legacy_rows(quick: bool, startup_s: float) -> list[Row]:
    args = ["--quick"] if quick else ["--runs", "3", "--memory-mib", "128"]
    res = bench_json("legacy.py", *args, "--jobs-segments", "0", "--dump-jobs-segments", "0")
    rows = []

    def row(task: str, impl: str) -> dict | None:
        return next((r for r in res["rows"] if r["task"] == task and r["impl"] == impl), None)

    dump = "dump --deep-iteration --print-data-log"
    kafka = row(dump, "Kafka 0.9.0.1 DumpLogSegments")
    for task in (dump, dump + " --json"):
        k = row(task, "ktool")
        if kafka and k:
            rows.append(
                Row(
                    "legacy",
                    f"{task} v0 vs Kafka 0.9 DumpLogSegments",
                    f"{k['median_s']:.2f} s",
                    f"DumpLogSegments {kafka['median_s']:.2f} s",
                    kafka["median_s"] / k["median_s"],
                    8.0,
                    peak_rss_mb=k["peak_rss_mb"],
                )
            )
    v = row("validate x4", "ktool")
    if v:
        after = max(v["median_s"] - startup_s, 1e-3)
        rows.append(
            Row(
                "legacy",
                f"validate v0 {v['bytes'] / 1e6:.0f} MB through the CLI, after start-up",
                f"{v['bytes'] / after / 1e9:.2f} GB/s",
                f"1 GB/s (start-up {startup_s * 1000:.0f} ms taken off)",
                v["bytes"] / after / 1e9,
                1.0,
                peak_rss_mb=v["peak_rss_mb"],
            )
        )
        kp = row("validate x4", "kafka-python")
        if kp:
            rows.append(
                Row(
                    "legacy",
                    "validate v0 x4 vs kafka-python",
                    f"{v['median_s']:.2f} s",
                    f"kafka-python {kp['median_s']:.2f} s",
                    kp["median_s"] / v["median_s"],
                    None,
                )
            )
    for m in res.get("memory", []):
        rows.append(
            Row(
                "legacy",
                f"peak RSS {m['task']} {m['format']}",
                f"{m['peak_rss_mb']:.0f} MB",
                f"{RSS_LIMIT_MB:.0f} MB",
                None,
                None,
                peak_rss_mb=m["peak_rss_mb"],
            )
        )
    return rows


def tiered_rows(quick: bool) -> list[Row]:
    """`tiered audit`'s decode + replay of `__remote_log_metadata` (bench/tiered.py): against the 3 s a
    million records of issue 44 (the ratio is 3 s over the time, scaled to a million), and against the
    floor walk of the same batches in the same run (the share of the time the decode and replay take)."""
    records = 100_000 if quick else 1_000_000
    res = bench_json("tiered.py", "--records", str(records), "--runs", "1" if quick else "3", "--no-pure")
    per_million = res["audit_s"] * 1_000_000 / res["records"]
    return [
        Row(
            "tiered",
            f"tiered audit of {res['records']:,} metadata records one a batch (a broker's framing), one core",
            f"{res['audit_s']:.2f} s",
            "3 s a million records",
            3.0 / per_million,
            1.0,
            peak_rss_mb=res["peak_rss_mib"] * 1.048576,
        ),
        Row(
            "tiered",
            "tiered audit vs the floor walk (CRCs, values read, nothing decoded)",
            f"{res['audit_s']:.2f} s",
            f"walk {res['walk_s']:.2f} s",
            res["walk_s"] / res["audit_s"],
            None,
        ),
    ]


def python_pass_s() -> float:
    return statistics.median(timed([sys.executable, "-c", "pass"])[0] for _ in range(5))


def cpu_pressure() -> float:
    """/proc/pressure/cpu's `some avg10` (%), as the default `--jobs` reads it (log/workers/parallel.py)."""
    from kafka_tools.log.workers.parallel import cpu_pressure

    return cpu_pressure()


def file_huge_pages_mb() -> float | None:
    """/proc/meminfo's FileHugePages (MB): how much of the page cache is in 2 MiB folios. A walk of
    the same file costs 5,400 page faults and 30 ms of system time in them, 61,000 and 450 ms in
    4 KiB pages (bench/HISTORY.md, branch r1): ratios of runs from different moments need it."""
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("FileHugePages:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--only", action="append", choices=GROUPS, help="run only these groups (repeatable)")
    a = ap.parse_args(argv)
    groups = a.only or list(GROUPS)
    load_before, psi_before = os.getloadavg(), cpu_pressure()
    t0 = time.perf_counter()
    rows: list[Row] = []
    if "startup" in groups:
        rows += startup_rows(a.quick)
    if "validate" in groups:
        rows += validate_rows(a.quick)
    if "jobs" in groups:
        rows += jobs_rows(a.quick)
    if "decode" in groups:
        rows += decode_rows(a.quick)
    if "legacy" in groups:
        rows += legacy_rows(a.quick, python_pass_s())
    if "tiered" in groups:
        rows += tiered_rows(a.quick)
    load_after, psi_after = os.getloadavg(), cpu_pressure()
    huge = file_huge_pages_mb()
    missed = [r for r in rows if r.ok is False]
    if a.json:
        out = {
            "quick": a.quick,
            "load_before": load_before,
            "load_after": load_after,
            "cpu_pressure_before": psi_before,  # /proc/pressure/cpu some avg10, %
            "cpu_pressure_after": psi_after,
            "file_huge_pages_mb_after": huge,  # the page cache in 2 MiB folios (/proc/meminfo)
            "wall_s": time.perf_counter() - t0,
            "rows": [{**asdict(r), "ok": r.ok} for r in rows],
        }
        print(json.dumps(out, indent=2))
    else:
        cols = ["group", "case", "ktool", "same-run reference", "ratio", "target", "RSS MB", "ok"]
        table = [
            [
                r.group,
                r.case,
                r.ktool,
                r.reference,
                "" if r.ratio is None else f"{r.ratio:.0f} ms" if r.group == "startup" else f"{r.ratio:.2f}x",
                "" if r.target is None else ("<= " if r.lower_is_better else ">= ") + f"{r.target:g}",
                "" if r.peak_rss_mb is None else f"{r.peak_rss_mb:.0f}",
                {True: "PASS", False: "MISS", None: "-"}[r.ok],
            ]
            for r in rows
        ]
        for line in format_table(cols, table):
            print(line)
        print(
            f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; CPU pressure (some avg10) "
            f"{psi_before:.0f} % before, {psi_after:.0f} % after (the default --jobs walks on one core above "
            f"10 %); page cache in 2 MiB folios after: {huge if huge is not None else -1:.0f} MB; "
            f"{os.cpu_count()} CPUs; {time.perf_counter() - t0:.0f} s"
        )
    return 1 if a.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
