"""`ktool dump-log` next to DumpLogSegments of the newest Kafka 4.x, in the same run, on one v2 log dir.

    python bench/dumplog_kafka.py                # 16 MiB a codec (none, gzip, snappy, lz4, zstd), 3 runs
    python bench/dumplog_kafka.py --size-mib 4 --runs 1
    python bench/dumplog_kafka.py --json         # the result as JSON on stdout (progress on stderr)
    python bench/dumplog_kafka.py --check        # exit 1 when ktool is not 10x faster in text and JSON

The log dir holds one partition a codec, each a segment of bench/decode.py's generator (kafka-python's
encoder: 100-500 records a batch, keys, a few null, 0-3 headers). Each tool runs as a user runs it (a
fresh process, start-up included) with `--deep-iteration --print-data-log` over every segment, its
output written to a file. Before any time is reported, the outputs are checked equal as tests/modern
does: ktool's text against DumpLogSegments' field by field, line by line (tests/support/dumplog.py),
and ktool's JSON record by record (offset, timestamp, key and value sizes, sequence, header keys, key,
payload). The jars come from tests/support/modern.py's cache (fetched with Maven the first time).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/dumplog_kafka.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.decode import CODECS, data_dir, ensure_segment, log  # noqa: E402
from tests.support.dumplog import assert_same_dump, fields  # noqa: E402
from tests.support.modern import KAFKA_4, _tool_logging, java_command  # noqa: E402

TARGET_SPEEDUP = 10.0
ARGS = ["--deep-iteration", "--print-data-log"]


def log_dir(size_mib: int) -> list[Path]:
    """One partition a codec, each holding one generated segment (a hard link, or a copy)."""
    root = data_dir() / f"dumplog-logdir-{size_mib}MiB"
    segments = []
    for codec in CODECS:
        seg = Path(ensure_segment(size_mib, codec, min(size_mib, 16))["path"])
        part = root / f"bench-{codec}-0"
        part.mkdir(parents=True, exist_ok=True)
        target = part / "00000000000000000000.log"
        if not target.exists() or target.stat().st_size != seg.stat().st_size:
            target.unlink(missing_ok=True)
            try:
                os.link(seg, target)
            except OSError:
                target.write_bytes(seg.read_bytes())
        segments.append(target)
    return segments


def timed(cmd: list[str], out: Path, runs: int) -> dict:
    """Median wall and CPU time (the child's user + system) of `cmd` writing its stdout to `out`; on a
    shared machine the wall clock also counts other processes' turns, the CPU time does not."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(out, "wb") as sink:
            start = time.perf_counter()
            proc = subprocess.run(cmd, stdout=sink, stderr=subprocess.PIPE)
            walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[:4])}…: exit {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return {
        "median": statistics.median(walls),
        "min": min(walls),
        "max": max(walls),
        "cpu": statistics.median(cpus),
        "runs": runs,
    }


def check_json(ours_json: Path, theirs_text: Path) -> int:
    """ktool's JSON records against DumpLogSegments' record lines; returns the records compared."""
    mapping = {
        "offset": "offset",
        "CreateTime": "timestamp",
        "keySize": "keySize",
        "valueSize": "valueSize",
        "sequence": "sequence",
    }
    n = 0
    with open(ours_json, encoding="utf-8") as ours, open(theirs_text, encoding="utf-8") as theirs:
        records = (json.loads(line) for line in ours if line.startswith('{"type":"record"'))
        for line in theirs:
            if not line.startswith("| "):
                continue
            want = dict(fields(line.rstrip("\n")))
            rec = next(records)
            for text_name, json_name in mapping.items():
                assert str(rec[json_name]) == want[text_name], (text_name, rec, line)
            assert "[" + ",".join(rec["headerKeys"]) + "]" == want["headerKeys"], (rec, line)
            assert rec["key"] == want.get("key") and rec["value"] == want.get("payload"), (rec, line)
            n += 1
        assert next(records, None) is None, "ktool --json has more records"
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mib", type=int, default=16, help="segment size a codec (default 16)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kafka-runs", type=int, default=1, help="DumpLogSegments runs (default 1)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)

    segments = log_dir(args.size_mib)
    out = data_dir()
    # As an installed ktool runs: from bytecode (pip writes it; under PYTHONDONTWRITEBYTECODE a run
    # from the work tree would compile every module again at each start).
    compileall.compile_dir(Path(__file__).resolve().parent.parent / "kafka_tools", quiet=1)
    files = [str(s) for s in segments]
    ktool = [sys.executable, "-m", "kafka_tools", "dump-log", *ARGS]
    kafka = java_command(
        KAFKA_4,
        KAFKA_4.tools["DumpLogSegments"],
        [*ARGS, "--files", ",".join(files)],
        heap="-Xmx1g",
        options=_tool_logging(KAFKA_4),
    )
    log(f"DumpLogSegments {KAFKA_4.version} on {len(files)} segments of {args.size_mib} MiB ...")
    theirs = timed(kafka, out / "dumplog-kafka.txt", args.kafka_runs)
    log("ktool dump-log (text, JSON) ...")
    text = timed([*ktool, *files], out / "dumplog-ktool.txt", args.runs)
    as_json = timed([*ktool, "--json", *files], out / "dumplog-ktool.jsonl", args.runs)
    lines = assert_same_dump((out / "dumplog-ktool.txt").read_text(), (out / "dumplog-kafka.txt").read_text())
    records = check_json(out / "dumplog-ktool.jsonl", out / "dumplog-kafka.txt")
    result = {
        "kafka": KAFKA_4.version,
        "segments": len(files),
        "bytes": sum(s.stat().st_size for s in segments),
        "records": records,
        "lines_compared": lines,
        "DumpLogSegments_s": theirs,
        "ktool_text_s": text,
        "ktool_json_s": as_json,
        "speedup_text": theirs["median"] / text["median"],
        "speedup_json": theirs["median"] / as_json["median"],
        "cpu_speedup_text": theirs["cpu"] / text["cpu"],
        "cpu_speedup_json": theirs["cpu"] / as_json["cpu"],
    }
    ok = min(result["speedup_text"], result["speedup_json"]) >= TARGET_SPEEDUP
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        mib = result["bytes"] / (1 << 20)
        print(
            f"log dir: {len(files)} segments ({', '.join(CODECS)}), {mib:.0f} MiB, {records:,} records; "
            f"outputs equal ({lines:,} lines field by field, {records:,} JSON records)"
        )
        print(f"DumpLogSegments {KAFKA_4.version}: {theirs['median']:.2f} s wall, {theirs['cpu']:.2f} s CPU")
        for name, key in (("text", "text"), ("JSON", "json")):
            run = result[f"ktool_{key}_s"]
            print(
                f"ktool dump-log {name}: {run['median']:.2f} s wall ({result[f'speedup_{key}']:.1f}x), "
                f"{run['cpu']:.2f} s CPU ({result[f'cpu_speedup_{key}']:.1f}x)"
            )
        print(f"{'ok  ' if ok else 'MISS'} >= {TARGET_SPEEDUP:g}x in text and JSON")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
