"""`ktool replicas diff` on two replicas of 2,000 segments that diverge near the end.

    python bench/replicas.py                 # 2,000 segments of ~1.1 MiB per replica (2.1 GiB each)
    python bench/replicas.py --quick         # 2,000 segments of ~70 KiB (140 MiB each), fewer runs
    python bench/replicas.py --full-compare  # also time --full (every batch compared), for the ratio
    python bench/replicas.py --json          # the result as JSON on stdout (progress on stderr)
    python bench/replicas.py --check         # exit 1 when a target of issue 28 is missed

Replica A: v2 batches (64 records each, built once by kafka-python's DefaultRecordBatchBuilder, written
again and again with base offset, leader epoch 0, timestamps and CRC-32C patched), an `.index` entry
per batch, a leader-epoch-checkpoint and the log dir's checkpoints. Replica B: the same segment files
(hard links) but the last, which holds A's first batches then, from a batch near its middle on,
different records in epoch 1 (an unclean election); replica C the same records in epoch 0 with no
epoch change in its checkpoint (a disk restored from elsewhere: only the bisection finds it). Both end
3 batches before A. What is timed, A against B and A against C: the wall time of the console
script (`ktool replicas diff A B --json`) minus `ktool --version` (start-up); the service alone in a
child process; its peak RSS (VmHWM). The answer must name the divergence where it was written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/replicas.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.decode import data_dir, format_table, log  # noqa: E402

LAYOUT_VERSION = 3
RECORDS_PER_BATCH = 64
SEGMENTS = 2000
T0 = 1_700_000_000_000
TARGET_AFTER_STARTUP_S = 1.0  # "well under a second after start-up"
TARGET_PEAK_RSS_MB = 100.0
_CRC_FROM = 21


def template_batch(tag: str) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 30)
    for i in range(RECORDS_PER_BATCH):
        value = json.dumps({"order": i, "writer": tag, "note": "x" * 90}).encode()
        b.append(i, timestamp=T0 + i, key=b"customer-%05d" % i, value=value, headers=[])
    return bytes(b.build())


def _segment(template: bytearray, offset: int, batches: int, epoch: int) -> tuple[bytes, bytes, int]:
    from crc32c import crc32c

    base, delta = offset, RECORDS_PER_BATCH - 1
    log_data, index = bytearray(), bytearray()
    for _ in range(batches):
        struct.pack_into(">q", template, 0, offset)
        struct.pack_into(">i", template, 12, epoch)
        struct.pack_into(">qq", template, 27, T0 + offset, T0 + offset + delta)
        struct.pack_into(">I", template, 17, crc32c(memoryview(template)[_CRC_FROM:]))
        index += struct.pack(">ii", offset + delta - base, len(log_data))
        log_data += template
        offset += RECORDS_PER_BATCH
    return bytes(log_data), bytes(index), offset


def _log_dir_files(log_dir: Path, broker: int, end: int, epochs: list[tuple[int, int]]) -> None:
    (log_dir / "meta.properties").write_text(f"version=0\nbroker.id={broker}\n")
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        (log_dir / name).write_text(f"0\n1\nbench 0 {end}\n")
    lines = "".join(f"{e} {s}\n" for e, s in epochs)
    (log_dir / "bench-0" / "leader-epoch-checkpoint").write_text(f"0\n{len(epochs)}\n{lines}")


def write_replicas(root: Path, batches_per_segment: int) -> dict:
    """Replicas A and B under `root` (cached when complete); where B starts to differ."""
    a_dir, b_dir, c_dir = root / "a", root / "b", root / "c"
    per_segment = batches_per_segment * RECORDS_PER_BATCH
    diverge = (SEGMENTS - 1) * per_segment + (batches_per_segment // 2) * RECORDS_PER_BATCH
    a_end = SEGMENTS * per_segment
    b_end = a_end - 3 * RECORDS_PER_BATCH  # B wrote fewer batches after the election
    info = {"segments": SEGMENTS, "divergence": diverge, "a_end": a_end, "b_end": b_end}
    stamp = root / ".complete"
    if stamp.exists() and stamp.read_text() == json.dumps([LAYOUT_VERSION, batches_per_segment, info]):
        return info
    shutil.rmtree(root, ignore_errors=True)
    (a_dir / "bench-0").mkdir(parents=True)
    (b_dir / "bench-0").mkdir(parents=True)
    (c_dir / "bench-0").mkdir(parents=True)
    template = bytearray(template_batch("a"))
    offset = 0
    for s in range(SEGMENTS):
        name = f"{offset:020d}"
        data, index, nxt = _segment(template, offset, batches_per_segment, 0)
        (a_dir / "bench-0" / f"{name}.log").write_bytes(data)
        (a_dir / "bench-0" / f"{name}.index").write_bytes(index)
        if s < SEGMENTS - 1:
            for suffix in (".log", ".index"):
                for other in (b_dir, c_dir):
                    os.link(a_dir / "bench-0" / f"{name}{suffix}", other / "bench-0" / f"{name}{suffix}")
        else:  # B's last segment: A's first half, then its own records in epoch 1; C's the same in epoch 0
            head, head_index, mid = _segment(template, offset, batches_per_segment // 2, 0)
            for other, epoch in ((b_dir, 1), (c_dir, 0)):
                own = bytearray(template_batch("b"))
                count = batches_per_segment - batches_per_segment // 2 - 3
                tail, tail_index, _ = _segment(own, mid, count, epoch)
                shift, rel = len(head), mid - offset  # the tail's entries, relative to the segment
                moved = b"".join(
                    struct.pack(">ii", r + rel, p + shift) for r, p in struct.iter_unpack(">ii", tail_index)
                )
                (other / "bench-0" / f"{name}.log").write_bytes(head + tail)
                (other / "bench-0" / f"{name}.index").write_bytes(head_index + moved)
        offset = nxt
    _log_dir_files(a_dir, 1, a_end, [(0, 0)])
    _log_dir_files(b_dir, 2, b_end, [(0, 0), (1, diverge)])
    _log_dir_files(c_dir, 3, b_end, [(0, 0)])  # a restored disk: other records, no epoch change
    stamp.write_text(json.dumps([LAYOUT_VERSION, batches_per_segment, info]))
    return info


_SERVICE = """
import json, sys, time
t = time.perf_counter()
from kafka_tools.log.replicas.diff import diff_replicas
imported = time.perf_counter() - t
times = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    report = diff_replicas([sys.argv[1], sys.argv[2]], full=sys.argv[4] == "full")
    times.append(time.perf_counter() - t)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
pair = report.pairs[0]
print(json.dumps({"median": sorted(times)[len(times) // 2], "imports": imported, "peak_rss_kb": hwm,
                  "first_difference": pair.first_difference, "entries_compared": pair.entries_compared,
                  "method": pair.method}))
"""


def service(a: Path, b: Path, runs: int, full: bool) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _SERVICE, str(a), str(b), str(runs), "full" if full else "search"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def wall(cmd: list[str], runs: int, ok_codes: tuple[int, ...] = (0,)) -> dict:
    first = subprocess.run(cmd, capture_output=True, text=True)
    if first.returncode not in ok_codes:
        raise SystemExit(f"{' '.join(cmd[:4])}…: exit {first.returncode}, {first.stderr.strip()[:300]}")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return {"median": statistics.median(times), "runs": runs, "stdout": first.stdout}


SHAPES = {
    "b": "unclean election (epoch 1 from the divergence)",
    "c": "restored disk (same epoch: bisection only)",
}


def measure(ktool: str, a: Path, other: Path, runs: int, startup: float, info: dict, full: bool) -> dict:
    diff = wall([ktool, "replicas", "diff", "--json", str(a), str(other)], runs, ok_codes=(1,))
    summary = json.loads(diff.pop("stdout").splitlines()[-1])
    row = {
        "replicas diff": diff,
        "after start-up": diff["median"] - startup,
        "service in-process": service(a, other, runs, full=False),
        "first difference found": summary["firstDifference"],
        "found where written": summary["firstDifference"] == info["divergence"],
    }
    if full:
        log("  the same with --full (every batch of the common range)")
        row["service --full"] = service(a, other, 1, full=True)
        row["full / search"] = row["service --full"]["median"] / row["service in-process"]["median"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="~70 KiB segments, fewer runs")
    ap.add_argument("--runs", type=int, default=None, help="timed runs (default 7, quick 3)")
    ap.add_argument("--full-compare", action="store_true", help="also time --full (every batch)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    runs = args.runs or (3 if args.quick else 7)
    batches = 8 if args.quick else 110
    ktool = shutil.which("ktool", path=os.path.dirname(sys.executable)) or shutil.which("ktool")
    if ktool is None:
        raise SystemExit("no `ktool` console script: pip install -e . first")
    root = data_dir() / f"replicas-{batches}"
    log(f"generating replicas of {SEGMENTS} segments (cached after the first run) …")
    info = write_replicas(root, batches)
    a = root / "a" / "bench-0"
    size = sum(p.stat().st_size for p in a.glob("*.log"))
    startup = wall([ktool, "--version"], runs)
    startup.pop("stdout")
    result: dict = {
        "ktool": ktool,
        "python": sys.version.split()[0],
        "segments": SEGMENTS,
        "bytes_per_replica": size,
        "divergence_written_at": info["divergence"],
        "ktool --version": startup,
        "shapes": {},
    }
    for key, shape in SHAPES.items():
        log(f"replicas of {size / 2**30:.2f} GiB each, {shape}: ktool replicas diff")
        row = measure(ktool, a, root / key / "bench-0", runs, startup["median"], info, args.full_compare)
        result["shapes"][shape] = row
    result["load"] = os.getloadavg()
    rows = result["shapes"].values()
    result["targets"] = {
        "finds the divergence where it was written": all(r["found where written"] for r in rows),
        "< 1 s after start-up": all(r["after start-up"] < TARGET_AFTER_STARTUP_S for r in rows),
        f"peak RSS < {TARGET_PEAK_RSS_MB:.0f} MB": all(
            r["service in-process"]["peak_rss_kb"] / 1024 < TARGET_PEAK_RSS_MB for r in rows
        ),
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        table = []
        for shape, r in result["shapes"].items():
            svc = r["service in-process"]
            table.append(
                [
                    shape,
                    f"{r['replicas diff']['median'] * 1000:.0f} ms",
                    f"{r['after start-up'] * 1000:.0f} ms",
                    f"{svc['median'] * 1000:.0f} ms",
                    f"{svc['method']}, {svc['entries_compared']}",
                    f"{svc['peak_rss_kb'] / 1024:.0f} MB",
                ]
            )
        print(f"{SEGMENTS:,} segments a replica, {size / 2**30:.2f} GiB each")
        cols = ["B", "diff (wall)", "after start-up", "service", "batches compared", "peak RSS"]
        for line in format_table(cols, table):
            print(line)
        print(f"ktool --version: {startup['median'] * 1000:.0f} ms")
        if args.full_compare:
            for shape, r in result["shapes"].items():
                full = r["service --full"]
                print(
                    f"--full, {shape}: {full['median']:.2f} s, {full['entries_compared']:,} batches "
                    f"compared ({r['full / search']:.0f}x)"
                )
        print(f"load average: {' '.join(f'{x:.2f}' for x in result['load'])}")
        for name, ok in result["targets"].items():
            print(f"{'ok  ' if ok else 'MISS'} {name}")
    return 1 if args.check and not all(result["targets"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
