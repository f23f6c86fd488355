"""Message sets (magic 0/1, Kafka 0.8-0.10): ktool next to its pure-Python self, kafka-python and Kafka
0.9.0.1's own DumpLogSegments, side by side in one run, with peak RSS.

    python bench/legacy.py              # 600,000-message v0 segment, 3 runs each, gzip, 1 GiB memory
    python bench/legacy.py --quick      # 60,000 messages, 1 run, 128 MiB memory check: a smoke run
    python bench/legacy.py --json       # the result as JSON on stdout (progress on stderr)
    python bench/legacy.py --check      # exit 1 when a target is missed

Every command runs as a child process (the CLI as users run it: `python -m kafka_tools …`, stdout to
/dev/null), one after the other, on a warm page cache; wall clock median of the runs, peak RSS from
the child's rusage (`wait4`). Kafka's DumpLogSegments runs through `kafka-run-class.sh` of the same
Kafka 0.9.0.1 install the tests use (tests/support/servers.py `kafka_home()`), JVM start-up included,
as ktool's Python start-up is. See bench/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as `python bench/legacy.py`: make `bench` (and ktool) importable
    sys.path.insert(0, str(ROOT))

from bench.decode import MiB, data_dir, format_table, log, warm_page_cache  # noqa: E402

MESSAGES = 600_000
TARGET_DUMP_VS_KAFKA = 2.0  # ktool at least 2x faster than DumpLogSegments
TARGET_VALIDATE_GB_S = 1.0
TARGET_COMPRESSED_VS_DECOMPRESSION = 1.5
TARGET_RSS_MB = 100.0
TARGET_V2_RECORDS_PER_S = 1e6
_HEAD = struct.Struct(">qi")


# ---------------------------------------------------------------------------------------------------
# Segments, written with kafka-python's legacy builder (as the fixtures are)


def _builder(magic: int, codec: int, wrapper_offset: int = 0, wrapper_timestamp: int = 0):
    sys.path.insert(0, str(ROOT / "fixtures"))
    from make_fixtures import BrokerLegacyBuilder  # kafka-python's builder, wrapper fields as a broker

    return BrokerLegacyBuilder(
        magic, codec, wrapper_offset=wrapper_offset, wrapper_timestamp=wrapper_timestamp
    )


def _value(i: int) -> bytes:
    # ~100 bytes of JSON-like text, different in every message
    return (
        (
            f'{{"id":{i},"user":"user-{i % 9973:05d}","event":"page-view","path":"/p/{i % 613}"'
            + ',"ms":'
            + f"{(i * 7919) % 100000:06d}}}"
        )
        .ljust(100, " ")
        .encode()
    )


def write_plain(path: Path, messages: int, magic: int) -> None:
    """`messages` uncompressed messages, offsets 0.., keys `k<i>`, ~100-byte values."""
    ts = 1_700_000_000_000
    with open(path, "wb") as f:
        for start in range(0, messages, 5_000):  # 5,000 messages fit the builder's 1 MiB
            b = _builder(magic, 0)
            for i in range(start, min(messages, start + 5_000)):
                if b.append(i, ts + i if magic else None, f"k{i}".encode(), _value(i)) is None:
                    raise RuntimeError("the builder is full")
            f.write(b.build())


def write_compressed(path: Path, messages: int, magic: int, codec: int, per_wrapper: int = 100) -> None:
    """Wrappers of `per_wrapper` messages each (v1: relative inner offsets, as a 0.10 broker stores)."""
    ts = 1_700_000_000_000
    with open(path, "wb") as f:
        for start in range(0, messages, per_wrapper):
            n = min(per_wrapper, messages - start)
            last = start + n - 1
            b = _builder(magic, codec, wrapper_offset=last, wrapper_timestamp=ts + last if magic else 0)
            for k in range(n):
                i = start + k
                if (
                    b.append(k if magic else i, ts + i if magic else None, f"k{i}".encode(), _value(i))
                    is None
                ):
                    raise RuntimeError("the builder is full")
            f.write(b.build())


def repeat_to(src: Path, dst: Path, size: int) -> int:
    """Copies of `src`'s entries until `size` bytes, each entry's offset (not covered by the CRC)
    moved on so offsets keep increasing; v1 wrappers' inner offsets are relative, so they stay right.
    Returns the number of entries."""
    data = src.read_bytes()
    spans = []
    pos = 0
    while pos < len(data):
        off, n = _HEAD.unpack_from(data, pos)
        spans.append((pos, 12 + n, off))
        pos += 12 + n
    step = spans[-1][2] + 1
    out = bytearray()
    entries = 0
    with open(dst, "wb") as f:
        rep = 0
        while True:
            for at, n, off in spans:
                if entries and f.tell() + len(out) + n > size:
                    f.write(out)
                    return entries
                out += data[at : at + n]
                struct.pack_into(">q", out, len(out) - n, off + rep * step)
                entries += 1
            f.write(out)
            out.clear()
            rep += 1


def ensure(name: str, make) -> Path:
    path = data_dir() / name
    if not path.exists():
        log(f"generating {path.name} …")
        tmp = path.with_suffix(".tmp")
        make(tmp)
        tmp.rename(path)
    return path


def in_partition(path: Path, tag: str) -> Path:
    """A copy of the segment inside its own partition directory (as `00000000000000000000.log`), the
    name Kafka's tools and ktool's dispatch expect."""
    d = data_dir() / f"{tag}-0"
    d.mkdir(exist_ok=True)
    target = d / "00000000000000000000.log"
    if not target.exists():
        os.link(path, target)
    return target


# ---------------------------------------------------------------------------------------------------
# Running things


def run_timed(cmd: list[str], env: dict | None = None, stdin=None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MB, exit code) of a child, its stdout to /dev/null."""
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        proc.stderr.close()
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, proc.returncode


def ktool_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafka_tools", *args]


def env_for(impl: str) -> dict:
    env = dict(os.environ)
    env.pop("KTOOL_PURE_PYTHON", None)
    if impl == "ktool-pure":
        env["KTOOL_PURE_PYTHON"] = "1"
    env["PYTHONPATH"] = str(ROOT)
    return env


def kafka_dump_cmd(path: Path, deep: bool = True) -> tuple[list[str], dict]:
    sys.path.insert(0, str(ROOT))
    from tests.support.servers import kafka_env, kafka_home

    home = kafka_home()
    cmd = [str(home / "bin" / "kafka-run-class.sh"), "kafka.tools.DumpLogSegments", "--files", str(path)]
    if deep:
        cmd += ["--deep-iteration", "--print-data-log"]
    return cmd, kafka_env(heap="-Xmx1G")


def median_of(runs: int, cmd: list[str], env: dict) -> dict:
    walls, rss = [], []
    for _ in range(runs):
        w, r, _ = run_timed(cmd, env)
        walls.append(w)
        rss.append(r)
    return {
        "median_s": statistics.median(walls),
        "min_s": min(walls),
        "max_s": max(walls),
        "peak_rss_mb": max(rss),
    }


# kafka-python: what a script on its legacy decoder does for the same job (in a child process)

KAFKA_PYTHON_VALIDATE = """
import sys
from kafka.record import MemoryRecords
data = open(sys.argv[1], 'rb').read()
r = MemoryRecords(data); n = 0
while r.has_next():
    b = r.next_batch()            # one top-level message (or wrapper)
    if not b.validate_crc():
        raise SystemExit('bad crc')
    for m in b:                   # a wrapper's inner messages, decompressed
        n += 1
print(n)
"""

KAFKA_PYTHON_DUMP = """
import sys
from kafka.record import MemoryRecords
data = open(sys.argv[1], 'rb').read()
r = MemoryRecords(data); out = sys.stdout.write
while r.has_next():
    b = r.next_batch()
    valid = str(b.validate_crc()).lower()
    for m in b:
        v = m.value
        out(f'offset: {m.offset} isvalid: {valid} payloadsize: {len(v)} magic: {m.magic} '
            f'crc: {m.checksum} keysize: {len(m.key)} key: {m.key.decode(errors="replace")} '
            f'payload: {v.decode(errors="replace")}\\n')
"""


def decompression_alone(path: Path) -> float:
    """Seconds to decompress every wrapper's value of a gzip segment, nothing else (the floor)."""
    data = path.read_bytes()
    values = []
    pos = 0
    while pos < len(data):
        off, n = _HEAD.unpack_from(data, pos)
        magic = data[pos + 16]
        at = pos + 18 + (8 if magic else 0)
        (klen,) = struct.unpack_from(">i", data, at)
        at += 4 + max(klen, 0)
        (vlen,) = struct.unpack_from(">i", data, at)
        values.append(data[at + 4 : at + 4 + vlen])
        pos += 12 + n
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        for v in values:
            zlib.decompress(v, 47)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best


def child_main(what: str, path: str) -> None:
    """In-process timings, in a fresh child: `validate` (scan_segment, the service behind `ktool
    validate`, best of 3 on a warm cache) and `decompress` (every wrapper's value gunzipped, nothing else)."""
    if what in ("memory-files", "memory"):
        size_mib, plain, gz = json.loads(path)
        files = memory_files(size_mib, Path(plain), Path(gz))
        print(json.dumps(memory_check(files) if what == "memory" else {}))
        return
    warm_page_cache(path)
    if what == "decompress":
        print(json.dumps({"seconds": decompression_alone(Path(path))}))
        return
    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.checks.segment_checks import scan_segment

    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        report = scan_segment(Path(path), ValidateOptions())
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    if report.findings:
        raise SystemExit(f"{path}: {report.findings[0].kind}: {report.findings[0].message}")
    print(json.dumps({"seconds": best, "entries": report.entries, "records": report.records}))


def child(what: str, path: Path, impl: str = "ktool") -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", what, str(path)]
    proc = subprocess.run(cmd, env=env_for(impl), capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{what} child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def machine_load() -> float:
    return os.getloadavg()[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=MESSAGES)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--memory-mib", type=int, default=1024, help="size of the memory-check segments (0: skip)"
    )
    ap.add_argument(
        "--jobs-segments", type=int, default=8, help="log dir of N v0 x4 segments, --jobs 1 vs 2 (0: skip)"
    )
    ap.add_argument(
        "--dump-jobs-segments",
        type=int,
        default=8,
        help="dump-log --deep-iteration --print-data-log of N v0 segments, --jobs 1 vs 2 (0: skip)",
    )
    ap.add_argument("--no-kafka", action="store_true", help="skip Kafka 0.9.0.1's DumpLogSegments")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("WHAT", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child_main(*a.child)
        return 0
    if a.quick:
        a.messages, a.runs, a.memory_mib = 60_000, 1, 128
    n = a.messages
    t_start = time.perf_counter()
    load_before = machine_load()
    plain = in_partition(ensure(f"legacy-v0-{n}.log", lambda t: write_plain(t, n, 0)), f"legacy-v0-{n}")
    plain4 = in_partition(
        ensure(f"legacy-v0-{n}-x4.log", lambda t: repeat_to(plain, t, 4 * plain.stat().st_size)),
        f"legacy-v0-{n}-x4",
    )
    gz = in_partition(
        ensure(f"legacy-v1-gzip-{n}.log", lambda t: write_compressed(t, n, 1, 1)), f"legacy-v1-gzip-{n}"
    )
    for p in (plain, plain4, gz):
        warm_page_cache(p)
    rows: list[dict] = []

    def add(task: str, impl: str, path: Path, cmd: list[str], env: dict, records: int) -> dict:
        log(f"{task}: {impl} …")
        res = median_of(a.runs, cmd, env)
        res.update(task=task, impl=impl, file=path.name, bytes=path.stat().st_size, records=records)
        res["mb_per_s"] = res["bytes"] / res["median_s"] / 1e6
        res["records_per_s"] = records / res["median_s"]
        rows.append(res)
        return res

    dump_args = ["dump-log", "--deep-iteration", "--print-data-log"]
    py = [sys.executable, "-c"]
    for impl in ("ktool", "ktool-pure"):
        add(
            "dump --deep-iteration --print-data-log",
            impl,
            plain,
            ktool_cmd(*dump_args, str(plain)),
            env_for(impl),
            n,
        )
    add(
        "dump --deep-iteration --print-data-log",
        "kafka-python",
        plain,
        py + [KAFKA_PYTHON_DUMP, str(plain)],
        env_for("x"),
        n,
    )
    if not a.no_kafka:
        cmd, env = kafka_dump_cmd(plain)
        add("dump --deep-iteration --print-data-log", "Kafka 0.9.0.1 DumpLogSegments", plain, cmd, env, n)
    for impl in ("ktool", "ktool-pure"):
        add(
            "dump --deep-iteration --print-data-log --json",
            impl,
            plain,
            ktool_cmd(*dump_args, "--json", str(plain)),
            env_for(impl),
            n,
        )
    for impl in ("ktool", "ktool-pure"):
        add("validate", impl, plain, ktool_cmd("validate", str(plain)), env_for(impl), n)
    add("validate", "kafka-python", plain, py + [KAFKA_PYTHON_VALIDATE, str(plain)], env_for("x"), n)
    for impl in ("ktool", "ktool-pure"):
        add("validate x4", impl, plain4, ktool_cmd("validate", str(plain4)), env_for(impl), 4 * n)
    add("validate x4", "kafka-python", plain4, py + [KAFKA_PYTHON_VALIDATE, str(plain4)], env_for("x"), 4 * n)
    for impl in ("ktool", "ktool-pure"):
        add("validate v1 gzip", impl, gz, ktool_cmd("validate", str(gz)), env_for(impl), n)
    add("validate v1 gzip", "kafka-python", gz, py + [KAFKA_PYTHON_VALIDATE, str(gz)], env_for("x"), n)

    log("in-process validate and decompression …")
    inproc = {
        "v0": child("validate", plain4),
        "v0-pure": child("validate", plain4, "ktool-pure"),
        "gzip": child("validate", gz),
        "gzip-pure": child("validate", gz, "ktool-pure"),
        "decompress": child("decompress", gz),
    }
    inproc["v0"]["gb_per_s"] = plain4.stat().st_size / inproc["v0"]["seconds"] / 1e9
    inproc["v0-pure"]["gb_per_s"] = plain4.stat().st_size / inproc["v0-pure"]["seconds"] / 1e9
    inproc["gzip_vs_decompression"] = inproc["gzip"]["seconds"] / inproc["decompress"]["seconds"]

    jobs = None
    if a.jobs_segments:
        from bench.validate import jobs_log_dir, measure_jobs

        log(f"validate --jobs 1 and 2 of a log dir of {a.jobs_segments} v0 segments …")
        jobs = measure_jobs(jobs_log_dir(plain4, f"legacy-v0-{n}-x4", a.jobs_segments), a.runs)

    dump_jobs_result = None
    if a.dump_jobs_segments:
        from bench.validate import jobs_log_dir

        log(f"dump-log --jobs 1 and 2 of {a.dump_jobs_segments} v0 segments …")
        d = jobs_log_dir(plain, f"legacy-v0-{n}", a.dump_jobs_segments)
        dump_jobs_result = dump_jobs(sorted(d.glob("*/*.log")), a.runs, n * a.dump_jobs_segments)

    memory = []
    if a.memory_mib:
        # Generated in one child, measured from another: a process's peak RSS (ru_maxrss) is
        # inherited through fork and execve, so the parent of the measured commands must stay small.
        spec = json.dumps([a.memory_mib, str(plain), str(gz)])
        child("memory-files", spec)
        memory = child("memory", spec)

    v2 = v2_dump(a.runs, a.quick)
    result = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": machine_load(),
        "wall_s": time.perf_counter() - t_start,
        "rows": rows,
        "in_process": inproc,
        "memory": memory,
        "v2_dump": v2,
        "jobs": jobs,
        "dump_jobs": dump_jobs_result,
    }
    result["checks"] = checks(result, a.no_kafka)
    print(report(result), file=sys.stderr if a.json else sys.stdout)
    if a.json:
        print(json.dumps(result, indent=2))
    if a.check and not all(c["ok"] for c in result["checks"]):
        return 1
    return 0


def memory_files(size_mib: int, plain: Path, gz: Path) -> dict[str, Path]:
    """A segment of `size_mib` of each generation: v0, v1 gzip wrappers, v2 (bench/decode.py's)."""
    from bench.decode import segment as v2_segment

    size = size_mib * MiB
    files = {
        "v0": in_partition(
            ensure(f"legacy-v0-{size_mib}MiB.log", lambda t: repeat_to(plain, t, size)), f"mem-v0-{size_mib}"
        ),
        "v1 gzip": in_partition(
            ensure(f"legacy-v1-gzip-{size_mib}MiB.log", lambda t: repeat_to(gz, t, size)),
            f"mem-v1gz-{size_mib}",
        ),
        "v2": in_partition(
            Path(v2_segment(size_mib, "none", min(64, size_mib))["path"]), f"mem-v2-{size_mib}"
        ),
    }
    return files


def memory_check(files: dict[str, Path]) -> list[dict]:
    """Peak RSS of validate, dump-log (to /dev/null) and truncate --dry-run on each segment."""
    out = []
    for fmt, path in files.items():
        warm_page_cache(path)
        backup = data_dir() / "truncate-backups"
        for task, args in (
            ("validate", ["validate", str(path)]),
            (
                "dump-log --deep-iteration --print-data-log",
                ["dump-log", "--deep-iteration", "--print-data-log", str(path)],
            ),
            ("truncate --dry-run", ["truncate", "--dry-run", "--backup-dir", str(backup), str(path.parent)]),
        ):
            log(f"memory: {task} on {fmt} …")
            wall, rss, _ = run_timed(ktool_cmd(*args), env_for("ktool"))
            out.append(
                {
                    "format": fmt,
                    "task": task,
                    "bytes": path.stat().st_size,
                    "seconds": wall,
                    "peak_rss_mb": rss,
                }
            )
    return out


def v2_dump(runs: int, quick: bool) -> list[dict]:
    """Records/s of `dump-log --deep-iteration` of an uncompressed v2 segment to /dev/null."""
    from bench.decode import segment as v2_segment

    seg = v2_segment(64 if quick else 256, "none", 64)
    path = in_partition(Path(seg["path"]), f"v2-{seg['bytes']}")
    warm_page_cache(path)
    out = []
    for args in (
        ["--deep-iteration"],
        ["--deep-iteration", "--print-data-log"],
        ["--deep-iteration", "--json"],
        ["--deep-iteration", "--print-data-log", "--json"],
    ):
        log(f"v2 dump-log {' '.join(args)} …")
        res = median_of(runs, ktool_cmd("dump-log", *args, str(path)), env_for("ktool"))
        res.update(args=" ".join(args), records=seg["records"], bytes=seg["bytes"])
        res["records_per_s"] = seg["records"] / res["median_s"]
        out.append(res)
    return out


def dump_jobs(files: list[Path], runs: int, records: int) -> dict:
    """`ktool dump-log --deep-iteration --print-data-log --jobs J FILE…` for J = 1 and 2 (alternated),
    stdout to /dev/null, median wall clock; once before timing, both outputs must be byte-identical."""
    args = ["dump-log", "--deep-iteration", "--print-data-log"]
    digests = {}
    for j in (1, 2):  # hashed as it streams: the output is GBs
        cmd = ktool_cmd(*args, "--jobs", str(j), *map(str, files))
        proc = subprocess.Popen(cmd, env=env_for("ktool"), stdout=subprocess.PIPE)
        digest, size = hashlib.sha256(), 0
        while chunk := proc.stdout.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
        if proc.wait():
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
        digests[j] = (digest.hexdigest(), size)
    if digests[1] != digests[2]:
        raise SystemExit(f"dump-log --jobs 2 printed other bytes than --jobs 1: {digests}")
    walls: dict[int, list[float]] = {1: [], 2: []}
    rss: dict[int, float] = {1: 0.0, 2: 0.0}
    for _ in range(runs):
        for j in (1, 2):
            w, r, _ = run_timed(ktool_cmd(*args, "--jobs", str(j), *map(str, files)), env_for("ktool"))
            walls[j].append(w)
            rss[j] = max(rss[j], r)
    med = {j: statistics.median(walls[j]) for j in walls}
    return {
        "segments": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "records": records,
        "output_bytes": digests[1][1],
        "identical": True,
        "command": " ".join(["ktool", *args, "--jobs", "J", "FILE…"]),
        "by_jobs": {
            str(j): {
                "median_s": med[j],
                "min_s": min(walls[j]),
                "max_s": max(walls[j]),
                "peak_rss_mb": rss[j],
            }
            for j in walls
        },
        "speedup": med[1] / med[2],
    }


def _row(rows: list[dict], task: str, impl: str) -> dict | None:
    return next((r for r in rows if r["task"] == task and r["impl"] == impl), None)


def checks(result: dict, no_kafka: bool) -> list[dict]:
    rows = result["rows"]
    out = []
    if not no_kafka:
        kafka = _row(rows, "dump --deep-iteration --print-data-log", "Kafka 0.9.0.1 DumpLogSegments")
        for task in (
            "dump --deep-iteration --print-data-log",
            "dump --deep-iteration --print-data-log --json",
        ):
            ratio = kafka["median_s"] / _row(rows, task, "ktool")["median_s"]
            out.append(
                {
                    "what": f"{task}: ktool vs DumpLogSegments",
                    "value": f"{ratio:.2f}x",
                    "target": f">= {TARGET_DUMP_VS_KAFKA}x",
                    "ok": ratio >= TARGET_DUMP_VS_KAFKA,
                }
            )
    gbs = result["in_process"]["v0"]["gb_per_s"]
    out.append(
        {
            "what": "validate v0 uncompressed, in process",
            "value": f"{gbs:.2f} GB/s",
            "target": f">= {TARGET_VALIDATE_GB_S} GB/s",
            "ok": gbs >= TARGET_VALIDATE_GB_S,
        }
    )
    ratio = result["in_process"]["gzip_vs_decompression"]
    out.append(
        {
            "what": "validate v1 gzip vs decompression alone",
            "value": f"{ratio:.2f}x",
            "target": f"<= {TARGET_COMPRESSED_VS_DECOMPRESSION}x",
            "ok": ratio <= TARGET_COMPRESSED_VS_DECOMPRESSION,
        }
    )
    for m in result["memory"]:
        out.append(
            {
                "what": f"peak RSS {m['task']} {m['format']} {m['bytes'] / MiB:.0f} MiB",
                "value": f"{m['peak_rss_mb']:.0f} MB",
                "target": f"< {TARGET_RSS_MB:.0f} MB",
                "ok": m["peak_rss_mb"] < TARGET_RSS_MB,
            }
        )
    if result.get("jobs"):
        sp = result["jobs"]["speedup"]
        out.append(
            {
                "what": f"validate --jobs 2 vs --jobs 1, log dir of {result['jobs']['segments']} v0 segments",
                "value": f"{sp:.2f}x",
                "target": ">= 1.7x",
                "ok": sp >= 1.7,
            }
        )
    if result.get("dump_jobs"):
        sp = result["dump_jobs"]["speedup"]
        out.append(
            {
                "what": f"dump-log --jobs 2 vs --jobs 1, {result['dump_jobs']['segments']} v0 segments",
                "value": f"{sp:.2f}x",
                "target": ">= 1.7x",
                "ok": sp >= 1.7,
            }
        )
    for v in result["v2_dump"]:
        out.append(
            {
                "what": f"v2 dump-log {v['args']} to /dev/null",
                "value": f"{v['records_per_s'] / 1e6:.2f} M records/s",
                "target": ">= 1 M records/s",
                "ok": v["records_per_s"] >= TARGET_V2_RECORDS_PER_S,
            }
        )
    return out


def report(result: dict) -> str:
    lines = [
        f"Python {result['python']}, {result['cpus']} CPUs, load average {result['load_before']:.2f} before, "
        f"{result['load_after']:.2f} after, {result['wall_s']:.0f} s wall",
        "",
    ]
    cols = ["task", "implementation", "median s", "min-max s", "peak RSS MB", "MB/s", "k msg/s", "vs ktool"]
    body = []
    for r in result["rows"]:
        k = _row(result["rows"], r["task"], "ktool")
        body.append(
            [
                r["task"],
                r["impl"],
                f"{r['median_s']:.2f}",
                f"{r['min_s']:.2f}-{r['max_s']:.2f}",
                f"{r['peak_rss_mb']:.0f}",
                f"{r['mb_per_s']:.0f}",
                f"{r['records_per_s'] / 1e3:.0f}",
                f"{r['median_s'] / k['median_s']:.2f}x slower" if r is not k else "",
            ]
        )
    lines += format_table(cols, body)
    ip = result["in_process"]
    lines += [
        "",
        "in process (scan_segment, best of 3, no start-up):",
        f"  validate v0 x4 {ip['v0']['seconds']:.3f} s = {ip['v0']['gb_per_s']:.2f} GB/s "
        f"(pure Python {ip['v0-pure']['seconds']:.2f} s = {ip['v0-pure']['gb_per_s']:.3f} GB/s)",
        f"  validate v1 gzip {ip['gzip']['seconds']:.3f} s (pure Python {ip['gzip-pure']['seconds']:.2f} s); "
        f"gunzip of every wrapper alone {ip['decompress']['seconds']:.3f} s: "
        f"{ip['gzip_vs_decompression']:.2f}x",
    ]
    if result["memory"]:
        lines += ["", "memory (CLI, stdout to /dev/null):"]
        lines += format_table(
            ["format", "task", "MiB", "s", "peak RSS MB"],
            [
                [
                    m["format"],
                    m["task"],
                    f"{m['bytes'] / MiB:.0f}",
                    f"{m['seconds']:.1f}",
                    f"{m['peak_rss_mb']:.0f}",
                ]
                for m in result["memory"]
            ],
        )
    lines += ["", "v2 dump-log to /dev/null:"]
    lines += [
        f"  {v['args']}: {v['median_s']:.2f} s, {v['records_per_s'] / 1e6:.2f} M records/s "
        f"({v['records']:,} records)"
        for v in result["v2_dump"]
    ]
    if result.get("jobs"):
        from bench.validate import jobs_lines

        lines += ["", *jobs_lines(result["jobs"])]
    if result.get("dump_jobs"):
        dj = result["dump_jobs"]
        mb = dj["bytes"] / 1e6
        lines += ["", f"{dj['command']}: {dj['segments']} segments, {mb:.0f} MB, output identical"]
        for j, r in dj["by_jobs"].items():
            lines.append(
                f"  --jobs {j}: {r['median_s']:.2f} s (min-max {r['min_s']:.2f}-{r['max_s']:.2f}), "
                f"{dj['records'] / r['median_s'] / 1e6:.2f} M msg/s, peak RSS {r['peak_rss_mb']:.0f} MB"
            )
        lines.append(f"  speed-up {dj['speedup']:.2f}x")
    lines += ["", "checks:"] + [
        f"  [{'PASS' if c['ok'] else 'MISS'}] {c['what']}: {c['value']} (target {c['target']})"
        for c in result["checks"]
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
