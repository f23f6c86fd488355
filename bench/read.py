"""`ktool read --offset` against `ktool dump-log --deep-iteration --from-offset` on the same partitions.

    python bench/read.py               # partitions of 20, 200 and 2,000 segments (~1.1 MiB each: 2.1 GiB)
    python bench/read.py --quick       # 20 and 200 segments only (~250 MiB), fewer runs
    python bench/read.py --json        # the result as JSON on stdout (progress on stderr)
    python bench/read.py --check       # exit 1 when a target of issue 17 is missed

Each partition holds real v2 batches (64 records of ~150 bytes, built once by kafka-python's
DefaultRecordBatchBuilder, then written again and again with the base offset, timestamps and CRC-32C
patched), one `.index` entry per batch (every batch is over index.interval.bytes, 4096) and a
`.timeindex`, as a broker writes them. What is timed is the wall time of one command through the
installed console script, interpreter start included: `ktool read DIR --offset N -n 1` for a record
near the end, and `ktool dump-log --deep-iteration --from-offset N` over every segment of the same
partition (its default `--jobs`: both cores). `python -c pass` and `ktool --version` are measured in
the same run (start-up costs the read cannot go below). Both commands must print the record at N.
Medians of the runs, page cache warm (a first, untimed run).
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

if __package__ in (None, ""):  # run as `python bench/read.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.decode import data_dir, format_table, log  # noqa: E402

LAYOUT_VERSION = 1  # bump when the generated partitions change, so cached ones are rebuilt
RECORDS_PER_BATCH = 64
BATCHES_PER_SEGMENT = 110  # ~1.1 MiB segments: 2,000 of them hold 2.1 GiB
T0 = 1_700_000_000_000
TARGET_WALL_S = 0.25
TARGET_SPEEDUP = 10.0
TARGET_FLATNESS = 1.3
_CRC_FROM = 21  # a v2 batch's CRC-32C covers everything from its attributes on


def template_batch() -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 30)
    for i in range(RECORDS_PER_BATCH):
        value = json.dumps({"order": i, "status": "created", "note": "x" * 90}).encode()
        b.append(i, timestamp=T0 + i, key=b"customer-%05d" % i, value=value, headers=[])
    return bytes(b.build())


def write_partition(path: Path, segments: int) -> int:
    """A partition dir of `segments` segments; returns its log end offset. Cached when complete."""
    from crc32c import crc32c

    end = segments * BATCHES_PER_SEGMENT * RECORDS_PER_BATCH
    stamp = path / ".complete"
    if stamp.exists() and stamp.read_text() == f"{LAYOUT_VERSION} {end}":
        return end
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    template = bytearray(template_batch())
    delta = RECORDS_PER_BATCH - 1
    offset = 0
    for _ in range(segments):
        base = offset
        log_data, index, timeindex = bytearray(), bytearray(), bytearray()
        for _ in range(BATCHES_PER_SEGMENT):
            struct.pack_into(">q", template, 0, offset)
            struct.pack_into(">qq", template, 27, T0 + offset, T0 + offset + delta)
            struct.pack_into(">I", template, 17, crc32c(memoryview(template)[_CRC_FROM:]))
            index += struct.pack(">ii", offset + delta - base, len(log_data))
            timeindex += struct.pack(">qi", T0 + offset + delta, offset + delta - base)
            log_data += template
            offset += RECORDS_PER_BATCH
        (path / f"{base:020d}.log").write_bytes(log_data)
        (path / f"{base:020d}.index").write_bytes(index)
        (path / f"{base:020d}.timeindex").write_bytes(timeindex)
    stamp.write_text(f"{LAYOUT_VERSION} {end}")
    return end


def wall(cmd: list[str], runs: int, must_print: str | None = None) -> dict:
    """Median wall time of `cmd` (seconds) over `runs` runs after one untimed run."""
    first = subprocess.run(cmd, capture_output=True, text=True)
    if first.returncode != 0 or (must_print is not None and must_print not in first.stdout):
        raise SystemExit(f"{' '.join(cmd[:6])}…: exit {first.returncode}, {first.stderr.strip()[:300]}")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "runs": runs}


# `ktool read` without the rest of the program: what the lead's lazy command group leaves of start-up
_READ_ALONE = "import sys; from kafka_tools.cli.read import read; read(sys.argv[1:], prog_name='ktool read')"
# the locate + decode work alone (imports done), timed inside one process
_SERVICE = """
import sys, time
from kafka_tools.log.reads.read import ReadStart, read_partition
times = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    items = list(read_partition(sys.argv[1], ReadStart("offset", int(sys.argv[2])), 1))
    times.append(time.perf_counter() - t)
assert items[-1].records[0].offset == int(sys.argv[2])
print(sorted(times)[len(times) // 2])
"""


def _service_time(part: Path, target: int, runs: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _SERVICE, str(part), str(target), str(runs)],
        capture_output=True,
        text=True,
        check=True,
    )
    return {"median": float(out.stdout), "runs": runs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20 and 200 segments, fewer runs")
    ap.add_argument("--runs", type=int, default=None, help="timed runs of `read` (default 9, quick 5)")
    ap.add_argument("--dump-runs", type=int, default=None, help="timed runs of dump-log (default 3, quick 1)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    runs = args.runs or (5 if args.quick else 9)
    dump_runs = args.dump_runs or (1 if args.quick else 3)
    counts = (20, 200) if args.quick else (20, 200, 2000)
    ktool = shutil.which("ktool", path=os.path.dirname(sys.executable)) or shutil.which("ktool")
    if ktool is None:
        raise SystemExit("no `ktool` console script: pip install -e . first")
    root = data_dir() / "read"
    result: dict = {"ktool": ktool, "python": sys.version.split()[0], "partitions": []}
    log("start-up: python -c pass, ktool --version")
    result["python -c pass"] = wall([sys.executable, "-c", "pass"], runs)
    result["ktool --version"] = wall([ktool, "--version"], runs)
    for n in counts:
        part = root / f"seg{n}" / "bench-0"
        log(f"{n} segments: generating (cached after the first run) …")
        end = write_partition(part, n)
        size = sum(p.stat().st_size for p in part.glob("*.log"))
        target = end - 100  # near the end: in the last segment
        log(f"{n} segments ({size / 2**30:.2f} GiB): ktool read --offset {target}")
        read = wall(
            [ktool, "read", str(part), "--offset", str(target), "-n", "1"], runs, f"offset: {target} "
        )
        alone = wall(
            [sys.executable, "-c", _READ_ALONE, str(part), "--offset", str(target), "-n", "1"],
            runs,
            f"offset: {target} ",
        )
        service = _service_time(part, target, runs)
        log(f"{n} segments: ktool dump-log --deep-iteration --from-offset {target}")
        segments = sorted(str(p) for p in part.glob("*.log"))
        dump = wall(
            [ktool, "dump-log", "--deep-iteration", "--from-offset", str(target), *segments],
            dump_runs,
            f"offset: {target} ",
        )
        result["partitions"].append(
            {
                "segments": n,
                "bytes": size,
                "offset": target,
                "read": read,
                "read command alone": alone,
                "read service in-process": service,
                "dump-log": dump,
                "speedup": dump["median"] / read["median"],
            }
        )
    parts = result["partitions"]
    result["flatness"] = parts[-1]["read"]["median"] / parts[0]["read"]["median"]
    largest = parts[-1]
    result["targets"] = {
        "read wall < 0.25 s (largest)": largest["read"]["median"] < TARGET_WALL_S,
        "read >= 10x dump-log (largest)": largest["speedup"] >= TARGET_SPEEDUP,
        "flatness <= 1.3": result["flatness"] <= TARGET_FLATNESS,
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        rows = [
            [
                f"{p['segments']:,} segments",
                f"{p['bytes'] / 2**30:.2f} GiB",
                f"{p['read']['median'] * 1000:.0f} ms",
                f"{p['read command alone']['median'] * 1000:.0f} ms",
                f"{p['read service in-process']['median'] * 1000:.1f} ms",
                f"{p['dump-log']['median'] * 1000:.0f} ms",
                f"{p['speedup']:.0f}x",
            ]
            for p in parts
        ]
        cols = [
            "partition",
            "size",
            "read --offset",
            "read alone",
            "read service",
            "dump-log --from-offset",
            "ratio",
        ]
        for line in format_table(cols, rows):
            print(line)
        print(f"python -c pass: {result['python -c pass']['median'] * 1000:.0f} ms")
        print(f"ktool --version: {result['ktool --version']['median'] * 1000:.0f} ms")
        print(
            f"flatness ({parts[-1]['segments']} / {parts[0]['segments']} segments): {result['flatness']:.2f}"
        )
        for name, ok in result["targets"].items():
            print(f"{'ok  ' if ok else 'MISS'} {name}")
    return 1 if args.check and not all(result["targets"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
