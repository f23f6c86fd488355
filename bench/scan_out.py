"""In-process `ktool scan --out --records` on one core: CPU seconds per codec, this tree against another.

    python bench/scan_out.py                        # 2 segments of the scan bench's 2 GiB log dir
    python bench/scan_out.py --old /work/main       # and the same in a child run on another tree, alternated
    python bench/scan_out.py --segments 4 --runs 5 --codec snappy --codec none
    python bench/scan_out.py --old /work/main --cores 2 --codec snappy   # wall time on two cores

Each child pins itself to one core (`--cores 2`: two, where the records table is written by two
lanes side by side; read the wall time then), imports ktool from its tree, scans once to warm up
(imports, page cache), then runs `pipeline.local.scan_in_process` with `--records` `--runs` times; the
figures are the smallest CPU and wall times of the process (its threads included), so a shared
machine's noise adds less. Records per CPU second is the issue's "in-process >= 1.2 M rec/s on one
core". The log dir is bench/scan.py's (`KTOOL_BENCH_DIR`, `scan-none-4x4x128MiB-b64-g1`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, os, shutil, sys, tempfile, time
paths, codec, runs, cores = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
from kafka_tools.pipeline.plan import ScanOptions, plan_scan
from kafka_tools.pipeline.local import scan_in_process
scratch = tempfile.mkdtemp(prefix="ktool-bench-scan-out-")
try:
    scan_in_process(plan_scan(paths[:1]), ScanOptions(out=scratch + "/warm", records=True, compression=codec))
    cpu, wall = [], []
    for run in range(runs):
        c0, t0 = time.process_time(), time.perf_counter()
        options = ScanOptions(out=f"{scratch}/{run}", records=True, compression=codec)
        result = scan_in_process(plan_scan(paths), options)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
        shutil.rmtree(f"{scratch}/{run}")
finally:
    shutil.rmtree(scratch, ignore_errors=True)
rows = next(t.rows for t in result.tables if t.name == "records")
print(json.dumps({"cpu": cpu, "wall": wall, "records": rows}))
"""


def segments(logdir: Path, count: int) -> list[str]:
    found = sorted(p for p in logdir.glob("*/*.log"))
    if len(found) < count:
        sys.exit(f"{logdir}: {len(found)} segments, {count} asked; run bench/scan.py once to build it")
    return [str(p) for p in found[:count]]


def child(tree: Path, paths: list[str], codec: str, runs: int, cores: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(paths), codec, str(runs), str(cores)],
        env=env, capture_output=True, text=True, check=True, cwd=str(tree),
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    here = Path(__file__).resolve().parent.parent
    data = Path(os.environ.get("KTOOL_BENCH_DIR") or here / "bench" / ".data")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--logdir", type=Path, default=data / "scan-none-4x4x128MiB-b64-g1" / "logdir")
    p.add_argument("--segments", type=int, default=2, help="segments of 128 MiB (default 2)")
    p.add_argument("--runs", type=int, default=3, help="scans per child (default 3)")
    p.add_argument(
        "--rounds", type=int, default=2, help="children per tree and codec, alternated (default 2)"
    )
    p.add_argument("--codec", action="append", help="--compression values (default snappy and none)")
    p.add_argument(
        "--cores", type=int, default=1, help="cores each child may use (default 1; 2: the lanes' wall time)"
    )
    p.add_argument("--old", type=Path, help="another tree (e.g. main's) run the same way, alternated")
    args = p.parse_args()
    paths = segments(args.logdir, args.segments)
    trees = {"new": here} | ({"old": args.old} if args.old else {})
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    best: dict[tuple[str, str], float] = {}
    best_wall: dict[tuple[str, str], float] = {}
    rows = 0
    for _ in range(args.rounds):
        for codec in args.codec or ["snappy", "none"]:
            for name, tree in trees.items():
                got = child(tree, paths, codec, args.runs, args.cores)
                rows = got["records"]
                key = (codec, name)
                best[key] = min([best.get(key, float("inf")), *got["cpu"]])
                best_wall[key] = min([best_wall.get(key, float("inf")), *got["wall"]])
                cpu, wall = (" ".join(f"{c:.2f}" for c in got[k]) for k in ("cpu", "wall"))
                print(f"{codec:7s} {name}: CPU s {cpu}; wall s {wall}", file=sys.stderr)
    print(f"in-process scan --out --records, {args.cores} core(s): {len(paths)} segments, {rows:,} records")
    print(f"{'codec':8s} {'tree':4s} {'min CPU s':>9s} {'M rec/CPU s':>11s} {'vs old':>7s}", end="")
    print(f" {'min wall s':>10s} {'M rec/s':>7s} {'vs old':>7s}")
    for (codec, name), cpu in best.items():
        ratio = f"{best[(codec, 'old')] / cpu:.2f}x" if (codec, "old") in best else "-"
        print(f"{codec:8s} {name:4s} {cpu:9.2f} {rows / cpu / 1e6:11.2f} {ratio:>7s}", end="")
        wall = best_wall[(codec, name)]
        ratio = f"{best_wall[(codec, 'old')] / wall:.2f}x" if (codec, "old") in best_wall else "-"
        print(f" {wall:10.2f} {rows / wall / 1e6:7.2f} {ratio:>7s}")
    print(f"load average start {load0}, end {os.getloadavg()}; wall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    if __package__ in (None, ""):
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
