"""Decoder throughput and memory: ktool next to kafka-python and aiokafka, in one run.

    python bench/decode.py                # 256 MiB segment, 5 runs each, + 1 GiB memory check
    python bench/decode.py --quick        # 32 MiB, 2 runs: a smoke run
    python bench/decode.py --json         # machine-readable result on stdout (progress on stderr)

Every measurement runs in its own child process pinned to one CPU (no parallelism), so its peak RSS is
its own and `KTOOL_PURE_PYTHON=1` can be set before ktool is imported. "Full decode" means: walk every
batch, check its CRC, decompress it, decode every record and touch offset, timestamp, key, value and
headers. The loop around the decoders is the same for all three libraries. Each child decodes once
untimed first (the pure-Python decoders excepted), then `--runs` timed runs; the ratios are given on
wall-clock and on CPU-time medians. See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import resource
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

MiB = 1024 * 1024
GENERATOR_VERSION = 1  # bump when the generated data changes, so cached files are rebuilt
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
IMPLS = ("ktool", "ktool-pure", "kafka-python", "aiokafka")
LABELS = {
    "ktool": "ktool (C extension)",
    "ktool-pure": "ktool (pure Python)",
    "kafka-python": "kafka-python",
    "aiokafka": "aiokafka",
}
SLOW_IMPLS = {"ktool-pure", "kafka-python"}
TARGET_RECORDS_PER_S = 1.5e6
TARGET_PEAK_RSS_MB = 150.0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------
# Segment generation


def data_dir() -> Path:
    d = Path(os.environ.get("KTOOL_BENCH_DIR") or Path(__file__).resolve().parent / ".data")
    d.mkdir(parents=True, exist_ok=True)
    ignore = d / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# benchmark segments: never commit\n*\n")
    return d


def build_block(target: int, codec: str, seed: int) -> tuple[bytes, int]:
    """Batches built with kafka-python's DefaultRecordBatchBuilder (v2), base offsets continuous from 0.

    Returns (bytes, record count). Records: 10-20 byte keys (a few null), ~100-byte JSON-ish values,
    0-3 headers, 100-500 records per batch, timestamps increasing by a few ms.
    """
    from kafka.record.default_records import DefaultRecordBatchBuilder

    rng = random.Random(seed)
    events = ["click", "view", "purchase", "login", "logout", "scroll", "search", "add_to_cart"]
    countries = ["DE", "FR", "US", "GB", "JP", "BR", "IN", "NL", "SE", "ES"]
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    sources = [b"web", b"ios", b"android", b"backend"]
    out = bytearray()
    offset = 0
    ts = 1_700_000_000_000
    while len(out) < target:
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=CODECS[codec],
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 30,
        )
        for delta in range(rng.randint(100, 500)):
            ts += rng.randint(0, 5)
            user = rng.randrange(10_000_000)
            key = None if rng.random() < 0.03 else f"user-{user:0{rng.randint(5, 15)}d}".encode()
            pad = "".join(rng.choices(alphabet, k=rng.randint(8, 28)))
            value = (
                f'{{"user":{user},"event":"{rng.choice(events)}","country":"{rng.choice(countries)}",'
                f'"amount":{rng.randint(0, 99999) / 100},"ts":{ts},"s":"{pad}"}}'
            ).encode()
            n_headers = rng.choice((0, 1, 1, 2, 3))
            headers = [("trace-id", rng.randbytes(16)), ("source", rng.choice(sources)), ("retry", None)]
            builder.append(delta, ts, key, value, headers[:n_headers])
        batch = builder.build()
        struct.pack_into(">q", batch, 0, offset)
        offset += struct.unpack_from(">i", batch, 23)[0] + 1  # lastOffsetDelta
        out += batch
    return bytes(out), offset


def batch_spans(block: bytes) -> list[tuple[int, int, int]]:
    """(start, end, record count) of each batch in a block."""
    spans = []
    pos = 0
    while pos < len(block):
        length = struct.unpack_from(">i", block, pos + 8)[0]
        end = pos + 12 + length
        spans.append((pos, end, struct.unpack_from(">i", block, pos + 23)[0] + 1))
        pos = end
    return spans


def ensure_segment(size_mib: int, codec: str, block_mib: int, seed: int = 1) -> dict:
    """Path and facts of a cached segment of at least `size_mib` MiB, generating it if needed.

    A block of min(size, block_mib) is built record by record, then repeated batch by batch with the
    baseOffset (int64 at byte 0, outside the CRC) patched so offsets stay continuous.
    """
    d = data_dir()
    block_mib = min(block_mib, size_mib)
    name = f"v2-{codec}-{size_mib}MiB-b{block_mib}-s{seed}-g{GENERATOR_VERSION}"
    path, meta_path = d / f"{name}.log", d / f"{name}.json"
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("bytes") == path.stat().st_size:
            meta["path"] = str(path)
            meta["generated_s"] = 0.0
            return meta
    log(f"generating {path.name} ...")
    t0 = time.perf_counter()
    block, _ = build_block(block_mib * MiB, codec, seed)
    spans = batch_spans(block)
    target = size_mib * MiB
    view = memoryview(block)
    written = records = batches = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        while written < target:
            for start, end, count in spans:
                f.write(struct.pack(">q", records))
                f.write(view[start + 8 : end])
                written += end - start
                records += count
                batches += 1
                if written >= target:
                    break
    os.replace(tmp, path)
    meta = {
        "codec": codec,
        "bytes": written,
        "records": records,
        "batches": batches,
        "block_bytes": len(block),
        "seed": seed,
        "generator_version": GENERATOR_VERSION,
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    meta["path"] = str(path)
    meta["generated_s"] = round(time.perf_counter() - t0, 1)
    log(f"  {written / MiB:.0f} MiB, {records:,} records, {batches:,} batches in {meta['generated_s']} s")
    return meta


# ---------------------------------------------------------------------------------------------------
# Decoders (run inside a child process)


def peak_rss_kb() -> tuple[int, int]:
    """(peak RSS of this process image, ru_maxrss), both in KiB.

    On Linux ru_maxrss survives execve: a child started by subprocess inherits its parent's high-water
    mark (the vfork/fork-time image). VmHWM in /proc/self/status belongs to the exec'd image alone, so
    it is the figure reported; ru_maxrss is kept next to it (the parent stays small so both agree).
    """
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]), maxrss
    except OSError:
        pass
    return maxrss, maxrss


def decode_ktool(path: str) -> tuple[int, int]:
    from kafka_tools.format.problems import Problem
    from kafka_tools.format.segment import iter_log_entries

    n = 0
    last = -1
    for entry in iter_log_entries(path):
        if isinstance(entry, Problem):
            raise RuntimeError(f"ktool: {entry.kind.value} at byte {entry.position}: {entry.message}")
        if not entry.is_valid:
            raise RuntimeError(f"ktool: CRC mismatch at byte {entry.position}")
        for rec in entry.iter_records():
            _ = (rec.offset, rec.timestamp, rec.key, rec.value, rec.headers)
            n += 1
        last = rec.offset
    return n, last


def decode_memory_records(memory_records_cls, data: bytes) -> tuple[int, int]:
    n = 0
    last = -1
    r = memory_records_cls(data)
    while r.has_next():
        batch = r.next_batch()
        if not batch.validate_crc():
            raise RuntimeError(f"CRC mismatch in the batch at offset {batch.base_offset}")
        for rec in batch:
            _ = (rec.offset, rec.timestamp, rec.key, rec.value, rec.headers)
            n += 1
        last = rec.offset
    return n, last


def pin_cpu(cpu: int | None) -> None:
    """Pin this process to one CPU (no-op when `cpu` is None or the platform cannot)."""
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def warm_page_cache(path: str | os.PathLike) -> None:
    """Read the whole file once so that timed runs find it in the page cache."""
    with open(path, "rb") as f:
        while f.read(8 * MiB):
            pass


def child_main(impl: str, path: str, runs: int, cpu: int | None, warmup: bool = False) -> dict:
    pin_cpu(cpu)
    detail: str
    warm_page_cache(path)
    if impl in ("ktool", "ktool-pure"):
        from kafka_tools.format import record_reader

        want = impl == "ktool"
        if record_reader.HAS_SPEEDUPS != want:
            raise SystemExit(f"{impl}: HAS_SPEEDUPS is {record_reader.HAS_SPEEDUPS}, expected {want}")
        detail = "kafka_tools.format._speedups (C)" if want else "kafka_tools.format.record_reader (Python)"
        rss_before = peak_rss_kb()[0]

        def run() -> tuple[int, int]:
            return decode_ktool(path)

    else:
        if impl == "kafka-python":
            from kafka.record import MemoryRecords
        else:
            from aiokafka.record.memory_records import MemoryRecords
        rss_before = peak_rss_kb()[0]
        data = Path(path).read_bytes()  # the peers decode from bytes: the whole segment in memory
        probe = MemoryRecords(data[: 12 + struct.unpack_from(">i", data, 8)[0]]).next_batch()
        cls = type(probe)
        detail = f"{cls.__module__}.{cls.__qualname__}"

        def run() -> tuple[int, int]:
            return decode_memory_records(MemoryRecords, data)

    times = []
    cpu_times = []
    records = last = 0
    if warmup:  # one untimed run: the codec modules each library imports on first use, caches, allocator
        run()
    for _ in range(runs):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        records, last = run()
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    peak, maxrss = peak_rss_kb()
    return {
        "impl": impl,
        "detail": detail,
        "times_s": times,
        "cpu_times_s": cpu_times,
        "records": records,
        "last_offset": last,
        "rss_before_decode_kb": rss_before,
        "peak_rss_kb": peak,
        "ru_maxrss_kb": maxrss,
        "cpu": cpu,
    }


# ---------------------------------------------------------------------------------------------------
# Parent: run children, summarise, print


def pick_cpu() -> int | None:
    if not hasattr(os, "sched_getaffinity"):
        return None
    return max(os.sched_getaffinity(0))


def segment(size_mib: int, codec: str, block_mib: int) -> dict:
    """ensure_segment() in a child, so building the block never inflates this process's RSS."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--generate", str(size_mib), "--codec", codec]
    proc = subprocess.run(cmd + ["--block-mib", str(block_mib)], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"generating a {size_mib} MiB {codec} segment failed ({proc.returncode})")
    return json.loads(proc.stdout)


def run_child(impl: str, seg: dict, runs: int, cpu: int | None) -> dict:
    """One child process: `runs` timed decodes of the segment, checked against its record count."""
    env = dict(os.environ)
    env.pop("KTOOL_PURE_PYTHON", None)
    if impl == "ktool-pure":
        env["KTOOL_PURE_PYTHON"] = "1"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", impl, "--path", seg["path"]]
    cmd += ["--runs", str(runs)] + ([] if cpu is None else ["--cpu", str(cpu)])
    cmd += [] if impl in SLOW_IMPLS else ["--warmup"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} child failed ({proc.returncode}):\n{proc.stderr}")
    res = json.loads(proc.stdout)
    if res["records"] != seg["records"] or res["last_offset"] != seg["records"] - 1:
        raise SystemExit(
            f"{impl} decoded {res['records']} records up to offset {res['last_offset']}, "
            f"expected {seg['records']} up to {seg['records'] - 1}"
        )
    return res


def summarise(impl: str, seg: dict, children: list[dict]) -> dict:
    """One implementation's children folded: every timed run counts, the peak RSS is the largest."""
    res = dict(children[-1])
    res["times_s"] = [t for c in children for t in c["times_s"]]
    res["cpu_times_s"] = [t for c in children for t in c["cpu_times_s"]]
    for key in ("peak_rss_kb", "ru_maxrss_kb", "rss_before_decode_kb"):
        res[key] = max(c[key] for c in children)
    median = statistics.median(res["times_s"])
    res.update(
        label=LABELS[impl],
        runs=len(res["times_s"]),
        rounds=len(children),
        median_s=median,
        median_cpu_s=statistics.median(res["cpu_times_s"]),
        round_median_cpu_s=[statistics.median(c["cpu_times_s"]) for c in children],
        records_per_s=seg["records"] / median,
        mb_per_s=seg["bytes"] / median / 1e6,
        peak_rss_mb=res["peak_rss_kb"] / 1024,
        rss_before_decode_mb=res["rss_before_decode_kb"] / 1024,
        ru_maxrss_mb=res["ru_maxrss_kb"] / 1024,
    )
    return res


def measure(
    seg: dict,
    impls: list[str],
    runs: int,
    slow_runs: int,
    cpu: int | None,
    rounds: int = 1,
    slow_rounds: int | None = None,
) -> list[dict]:
    """Each implementation's children, alternated over `rounds` (the order reversed every other
    round), so a drift of the host's speed during the run reaches every implementation alike; the
    pure-Python decoders (no target, 10x slower) take part in the first `slow_rounds` only."""
    children: dict[str, list[dict]] = {impl: [] for impl in impls}
    for r in range(rounds):
        for impl in impls if r % 2 == 0 else impls[::-1]:
            if impl in SLOW_IMPLS and slow_rounds is not None and r >= max(slow_rounds, 1):
                continue
            n = slow_runs if impl in SLOW_IMPLS else runs
            log(f"  {LABELS[impl]}: {n} run(s), round {r + 1} of {rounds} ...")
            children[impl].append(run_child(impl, seg, n, cpu))
    results = []
    for impl in impls:
        res = summarise(impl, seg, children[impl])
        log(f"  {LABELS[impl]}: median {res['median_s']:.2f} s, {res['records_per_s'] / 1e6:.2f} M records/s")
        results.append(res)
    by = {r["impl"]: r for r in results}
    for r in results:
        for peer in ("kafka-python", "aiokafka"):
            p = by.get(peer)
            # wall medians; CPU-time medians (each child runs on one pinned CPU: its CPU time is its
            # work, where the wall clock also counts other processes' turns on that CPU); and the
            # CPU-time ratio of each round's two children, run one after the other (min-max: how steady)
            r[f"vs_{peer}"] = p["median_s"] / r["median_s"] if p else None
            r[f"vs_{peer}_cpu"] = p["median_cpu_s"] / r["median_cpu_s"] if p else None
            paired = p is not None and len(p["round_median_cpu_s"]) == len(r["round_median_cpu_s"])
            r[f"vs_{peer}_rounds"] = (
                [a / b for a, b in zip(p["round_median_cpu_s"], r["round_median_cpu_s"], strict=True)]
                if paired
                else None
            )
    return results


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def table(title: str, seg: dict, results: list[dict]) -> str:
    head = (
        f"{title}: {seg['bytes'] / MiB:.0f} MiB, {seg['records']:,} records, {seg['batches']:,} batches, "
        f"codec {seg['codec']}"
    )
    cols = [
        "implementation",
        "runs",
        "median s",
        "M rec/s",
        "MB/s",
        "min-max s",
        "peak RSS",
        "vs kafka-python",
        "vs aiokafka",
        "CPU vs aiokafka",
    ]
    rows = [
        [
            r["label"],
            str(r["runs"]),
            f"{r['median_s']:.2f}",
            f"{r['records_per_s'] / 1e6:.2f}",
            f"{r['mb_per_s']:.0f}",
            f"{min(r['times_s']):.2f}-{max(r['times_s']):.2f}",
            f"{r['peak_rss_mb']:.0f} MB",
            fmt_ratio(r["vs_kafka-python"]),
            fmt_ratio(r["vs_aiokafka"]),
            fmt_ratio(r["vs_aiokafka_cpu"]),
        ]
        for r in results
    ]
    out = [head] + format_table(cols, rows)
    out += [f"  {r['label']}: {r['detail']}" for r in results]
    return "\n".join(out)


def format_table(cols: list[str], rows: list[list[str]]) -> list[str]:
    """Column heads, a rule and the rows; the first column left-aligned, the others right-aligned."""
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]

    def line(cells: list[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs)

    return [line(cols), line(["-" * w for w in widths])] + [line(row) for row in rows]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mib", type=int, default=256, help="throughput segment size (default 256)")
    p.add_argument("--runs", type=int, default=5, help="timed runs per implementation (default 5)")
    p.add_argument(
        "--rounds", type=int, default=1, help="children per implementation, alternated (default 1)"
    )
    p.add_argument("--slow-runs", type=int, help="runs for the pure-Python decoders (default: --runs)")
    p.add_argument(
        "--slow-rounds", type=int, help="rounds the pure-Python decoders take part in (default: --rounds)"
    )
    p.add_argument(
        "--skip-uncompressed",
        action="store_true",
        help="measure the --codec segment only (no uncompressed segment, no records/s check)",
    )
    p.add_argument(
        "--memory-mib",
        type=int,
        default=1024,
        help="segment size for ktool's peak-memory check, 0 to skip (default 1024)",
    )
    p.add_argument(
        "--codec",
        choices=["zstd", "lz4", "gzip", "snappy", "none", "off"],
        default="zstd",
        help="also measure a compressed segment with this codec (default zstd, off: skip)",
    )
    p.add_argument("--codec-size-mib", type=int, default=64, help="compressed segment size (default 64)")
    p.add_argument(
        "--block-mib",
        type=int,
        default=64,
        help="size of the block built record by record, then repeated (default 64)",
    )
    p.add_argument("--impl", action="append", choices=IMPLS, help="only these (repeatable; default all)")
    p.add_argument("--quick", action="store_true", help="smoke run: 32 MiB, 2 runs, 128 MiB memory check")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    p.add_argument("--child", choices=IMPLS, help=argparse.SUPPRESS)
    p.add_argument("--generate", type=int, metavar="MIB", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    p.add_argument("--cpu", type=int, help=argparse.SUPPRESS)
    p.add_argument("--warmup", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.child:
        print(json.dumps(child_main(a.child, a.path, a.runs, a.cpu, a.warmup)))
        return 0
    if a.generate:
        print(json.dumps(ensure_segment(a.generate, a.codec, a.block_mib)))
        return 0

    if a.quick:
        a.size_mib, a.runs, a.slow_runs = 32, 2, 2
        a.codec_size_mib = min(a.codec_size_mib, 16)
        a.memory_mib = min(a.memory_mib, 128)
    slow_runs = a.slow_runs or a.runs
    impls = a.impl or list(IMPLS)
    cpu = pick_cpu()
    wall0 = time.perf_counter()
    from kafka_tools.format import record_reader

    result: dict = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_pinned": cpu,
        "ktool_has_speedups": record_reader.HAS_SPEEDUPS,
        "runs": a.runs,
        "slow_runs": slow_runs,
        "measurements": [],
    }
    sections = []

    res: list[dict] = []
    if not (a.skip_uncompressed and a.codec not in ("off", "none")):
        seg = segment(a.size_mib, "none", a.block_mib)
        size = f"{seg['bytes'] / MiB:.0f} MiB, {seg['records']:,} records"
        log(f"throughput, uncompressed ({size}) on CPU {cpu}")
        res = measure(seg, impls, a.runs, slow_runs, cpu, a.rounds, a.slow_rounds)
        result["measurements"].append({"segment": seg, "results": res})
        sections.append(table("Full decode, uncompressed", seg, res))

    if a.codec not in ("off", "none"):
        cseg = segment(a.codec_size_mib, a.codec, a.block_mib)
        log(f"throughput, {a.codec} ({cseg['bytes'] / MiB:.0f} MiB, {cseg['records']:,} records)")
        cres = measure(cseg, impls, a.runs, slow_runs, cpu, a.rounds, a.slow_rounds)
        result["measurements"].append({"segment": cseg, "results": cres})
        sections.append(table(f"Full decode, {a.codec}", cseg, cres))

    checks = []
    ktool_c = next((r for r in res if r["impl"] == "ktool"), None)
    if ktool_c is not None:
        ok = ktool_c["records_per_s"] >= TARGET_RECORDS_PER_S
        checks.append(
            (
                f"ktool C decode >= {TARGET_RECORDS_PER_S / 1e6:.1f} M records/s (uncompressed)",
                f"{ktool_c['records_per_s'] / 1e6:.2f} M/s",
                ok,
            )
        )
    if a.memory_mib:
        mseg = segment(a.memory_mib, "none", a.block_mib)
        log(f"peak memory, ktool full decode of {mseg['bytes'] / MiB:.0f} MiB ...")
        mem = run_child("ktool", mseg, 1, cpu)
        result["memory"] = {"segment": mseg, "result": mem}
        ok = mem["peak_rss_mb"] < TARGET_PEAK_RSS_MB
        checks.append(
            (
                f"ktool peak RSS on {mseg['bytes'] / MiB:.0f} MiB < {TARGET_PEAK_RSS_MB:.0f} MB",
                f"{mem['peak_rss_mb']:.0f} MB (before decode {mem['rss_before_decode_mb']:.0f} MB, "
                f"{mem['records_per_s'] / 1e6:.2f} M rec/s)",
                ok,
            )
        )
    result["checks"] = [{"target": t, "measured": m, "ok": ok} for t, m, ok in checks]
    result["wall_s"] = round(time.perf_counter() - wall0, 1)

    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"Python {result['python']} {result['machine']}, one core (CPU {cpu}); median of "
            f"{a.runs} runs ({slow_runs} for pure-Python decoders) x {a.rounds} round(s), after one untimed "
            "run in each child (not the pure-Python ones); every run: CRC check + decode + touch "
            "offset/timestamp/key/value/headers of every record; 'vs': wall-clock medians, 'CPU vs': "
            "CPU-time medians"
        )
        for s in sections:
            print()
            print(s)
        print()
        print("ktool streams the file (memory-mapped, releasing the pages behind its walk); kafka-python and")
        print("aiokafka decode from the segment read into one bytes object, so their peak RSS grows with it.")
        if checks:
            print()
            for t, m, ok in checks:
                print(f"[{'PASS' if ok else 'FAIL'}] {t}: {m}")
        print(f"\nwall time {result['wall_s']} s")
    return 1 if a.check and not all(ok for _, _, ok in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
