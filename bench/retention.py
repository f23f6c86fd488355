"""`ktool retention` over a log dir of 10,000 segments (indexes present), next to a naive peer.

    python bench/retention.py                  # 100 partitions x 100 segments, 5 runs each
    python bench/retention.py --segments 2000 --partitions 20 --runs 3
    python bench/retention.py --check          # exit 1 when ktool takes 2 s or more (median)
    python bench/retention.py --json

The log dir (generated once under bench/.data/, or $KTOOL_BENCH_DIR) holds v2 segments written with
kafka-python's DefaultRecordBatchBuilder: 4 batches of 25 records a segment (~8 KiB), each with its
`.index` and `.timeindex` (its last entry is the segment's largest timestamp), timestamps one minute
apart per segment, so that the oldest `--expire` fraction of every partition (default half) is older
than the retention.ms given; `--expire 1` makes every segment expire (every `.timeindex` is read and
every partition rolls).

Measured, wall clock, interpreter start included (median of --runs, page cache warm):

* ktool: the installed console script, `ktool retention --now T --retention-ms MS LOGDIR` (text
  output to /dev/null) and the same with `--json`;
* naive peer: the same question answered the obvious way, by a Python child that decodes every segment
  with kafka-python (`MemoryRecords`) to find its largest timestamp and then applies the same
  oldest-first time rule. No other tool previews retention offline, so this is the reference.

Both must agree on the number of segments to delete.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MINUTE = 60_000
T0 = 1_700_000_000_000

NAIVE = r"""
import os, sys
from kafka.record import MemoryRecords
logdir, now, retention = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
deleted = 0
for part in sorted(os.listdir(logdir)):
    pdir = os.path.join(logdir, part)
    if not os.path.isdir(pdir):
        continue
    logs = sorted(f for f in os.listdir(pdir) if f.endswith(".log"))
    for name in logs:
        with open(os.path.join(pdir, name), "rb") as f:
            records = MemoryRecords(f.read())
        largest = -1
        while records.has_next():
            for r in records.next_batch():
                largest = max(largest, r.timestamp)
        if now - largest > retention:
            deleted += 1
        else:
            break
print(deleted)
"""


def data_dir() -> Path:
    return Path(os.environ.get("KTOOL_BENCH_DIR", ROOT / "bench" / ".data"))


def build(logdir: Path, partitions: int, segments: int) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    marker = logdir / ".complete"
    if marker.exists():
        return
    shutil.rmtree(logdir, ignore_errors=True)
    logdir.mkdir(parents=True)
    per_segment, batches = 100, 4
    for p in range(partitions):
        part = logdir / f"bench-{p}"
        part.mkdir()
        for s in range(segments):
            base = s * per_segment
            ts = T0 + s * MINUTE
            data = bytearray()
            index = bytearray()
            for b in range(batches):
                builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
                n = per_segment // batches
                for i in range(n):
                    builder.append(i, timestamp=ts, key=f"key-{i}".encode(), value=b"x" * 60, headers=[])
                buf = builder.build()
                struct.pack_into(">q", buf, 0, base + b * n)
                index += struct.pack(">ii", b * n + n - 1, len(data))
                data += buf
            name = f"{base:020d}"
            (part / f"{name}.log").write_bytes(data)
            (part / f"{name}.index").write_bytes(index)
            (part / f"{name}.timeindex").write_bytes(struct.pack(">qi", ts, per_segment - 1))
    marker.write_text("ok\n")


def timed(cmd: list[str], runs: int) -> tuple[float, list[float], str, float]:
    """(median wall s, the walls, stdout, median CPU s of the child: user + system)."""
    times, cpus, out = [], [], ""
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        out = proc.stdout
    return statistics.median(times), times, out, statistics.median(cpus)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--segments", type=int, default=100, help="segments per partition")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--naive-runs", type=int, default=1)
    ap.add_argument("--expire", type=float, default=0.5, help="the fraction of segments that expires")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true", help="exit 1 unless ktool's median is under 2 s")
    args = ap.parse_args()

    total = args.partitions * args.segments
    logdir = data_dir() / f"retention-{args.partitions}x{args.segments}"
    print(f"log dir: {logdir} ({total} segments)", file=sys.stderr)
    build(logdir, args.partitions, args.segments)
    now = T0 + args.segments * MINUTE
    # segment s has timestamp T0 + s minutes; `now` is one minute after the last: the oldest
    # --expire fraction of every partition is older than retention.ms
    expiring = round(args.segments * args.expire)
    retention_ms = (args.segments - expiring) * MINUTE + MINUTE // 2
    flag = ["--retention-ms", str(retention_ms)]
    ktool = shutil.which("ktool") or str(Path(sys.executable).parent / "ktool")
    base = [ktool, "retention", "--now", str(now), *flag, str(logdir)]
    for _ in range(1):  # warm the page cache
        subprocess.run(base, capture_output=True)
    k_text, k_text_all, _, k_text_cpu = timed(base, args.runs)
    k_json, k_json_all, out, k_json_cpu = timed([*base[:2], "--json", *base[2:]], args.runs)
    summary = json.loads(out.splitlines()[-1])
    naive, naive_all, naive_out, naive_cpu = timed(
        [sys.executable, "-c", NAIVE, str(logdir), str(now), str(retention_ms)], args.naive_runs
    )
    agree = int(naive_out.strip()) == summary["segmentsDeleted"]
    result = {
        "segments": total,
        "partitions": args.partitions,
        "segmentsDeleted": summary["segmentsDeleted"],
        "ktoolTextMedianS": round(k_text, 3),
        "ktoolJsonMedianS": round(k_json, 3),
        "ktoolRunsS": [round(t, 3) for t in k_text_all],
        "ktoolTextCpuS": round(k_text_cpu, 3),
        "ktoolJsonCpuS": round(k_json_cpu, 3),
        "naiveMedianS": round(naive, 3),
        "naiveCpuS": round(naive_cpu, 3),
        "naiveRunsS": [round(t, 3) for t in naive_all],
        "speedup": round(naive / k_text, 1),
        "cpuSpeedup": round(naive_cpu / k_text_cpu, 1),
        "perSegmentUs": round(k_text / total * 1e6, 1),
        "agree": agree,
        "cpus": len(os.sched_getaffinity(0)),
        "loadavg": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(result))
    else:
        runs = ", ".join(f"{t:.3f}" for t in k_text_all)
        print(
            f"{total} segments ({args.partitions} partitions), {summary['segmentsDeleted']} to delete\n"
            f"  ktool retention        {k_text:.3f} s median wall (runs {runs}), {k_text_cpu:.3f} s CPU, "
            f"{result['perSegmentUs']} us a segment\n"
            f"  ktool retention --json {k_json:.3f} s median wall, {k_json_cpu:.3f} s CPU\n"
            f"  naive (kafka-python)   {naive:.3f} s wall, {naive_cpu:.3f} s CPU "
            f"(ktool is {result['speedup']}x faster by wall, {result['cpuSpeedup']}x by CPU)\n"
            f"  same answer: {agree}; load average {result['loadavg']:.2f} on {result['cpus']} CPUs"
        )
    if not agree:
        return 1
    if args.check and k_text >= 2.0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
