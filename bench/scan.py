"""`ktool scan` throughput: one Python process, then Spark local[1] and local[2], on one log dir.

    python bench/scan.py                  # 2 GiB: 4 partitions x 4 segments of 128 MiB, 2 runs each
    python bench/scan.py --quick          # 256 MiB: a smoke run (~1 min, mostly Spark start-up)
    python bench/scan.py --records        # also write the `records` table (every record, parquet),
                                          # built in C and as main built it (`--out, main's records`),
                                          # and time the decode-to-Arrow kernel alone on one core
    python bench/scan.py --records --no-main-records --one-core   # without main's slow variant; the
                                          # single process also pinned to one core
    python bench/scan.py --json           # the result as JSON on stdout (progress on stderr)
    python bench/scan.py --check          # exit 1 when local[2] is below 1.7x local[1]
    python bench/scan.py --master local[2] --master standalone   # vs a two-worker standalone cluster
    python bench/scan.py --lookup 4       # questions (--key, a time window, --key-regex, --value-contains),
                                          # answered from C columns and as main did, 4 GiB, single
                                          # process + local[2], beside the unfiltered records table

What is timed is the scan's work on the same data in every mode: every segment checked as `ktool
validate` checks it, then every batch decompressed and every record decoded (what `ktool dump-log
--deep-iteration` does), per segment totals; the Spark modes also write the `segments`, `batches` and
`findings` tables (parquet, into a temporary directory), plus `records` with --records.

* single process: `kafka_tools.pipeline.local.scan_in_process`, the same task functions one after the
  other in one Python process, as `ktool scan` runs a small input without --master (`scan --out`: the
  same tables written with pyarrow); its peak RSS is printed under the table;
* validate, 1 process: `ktool validate LOGDIR` as the CLI runs it (`validate.validate_paths`, default
  options): the single-process peer the issue names. It checks every CRC and the structure but does
  not decode the records of uncompressed batches, so it does less work than the scan;
* 2 processes: the partitions in two halves, each scanned like the single process, both at once: the
  machine's own ceiling for two cores, without Spark;
* local[N]: `ktool scan --master local[N] --out TMP` as the CLI runs it (`pipeline.job.run_scan`), each
  master in its own child process. Spark's start-up (JVM, SparkContext, the first Python workers, and
  a warm-up scan of the small v2 fixtures, which imports ktool and pyarrow in the workers and lets
  the JVM compile the Arrow, aggregation and Parquet paths) is timed apart and excluded.

* --records: `scan --out` writes the records table too, and a third variant `--out, main's records`
  writes it the way main did (`tasks.record_chunks`, a Python object a field, then `pa.array`), so
  the C Arrow builder's gain is a same-run ratio; `kernel` rows time the records table's batches alone
  (`record_columns.record_batches`, every segment, one core, no parquet), new and old.

Every mode must report the same batches and records, equal to what the generator wrote. Throughput
is MB/s of segment bytes (decimal), median of the runs, page cache warm. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/scan.py`: make `bench` (and ktool) importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.decode import MiB, batch_spans, data_dir, format_table, log, segment, warm_page_cache  # noqa: E402

LOGDIR_VERSION = 1  # bump when the layout changes, so cached log dirs are rebuilt
TARGET_SPEEDUP = 1.7
TOPIC = "bench"
VARIANTS = ("scan", "scan --out")  # no tables (findings and totals only); the tables written
OLD_RECORDS = "--out, main's records"  # with --records: the records table built as main built it
WARM_UP = Path(__file__).resolve().parent.parent / "fixtures" / "generated" / "v2"
NO_MAIN_RECORDS = "KTOOL_BENCH_NO_MAIN_RECORDS"  # --no-main-records, for the children


# ---------------------------------------------------------------------------------------------------
# The log dir


def ensure_logdir(partitions: int, segments: int, segment_mib: int, codec: str, block_mib: int) -> dict:
    """A log dir of `partitions` x `segments` segments of about `segment_mib` MiB each, cached.

    The batches come from bench/decode.py's cached segment (built record by record with kafka-python),
    repeated with each batch's baseOffset patched so offsets run on across a partition's segments, and
    every file named after its base offset, as a broker names them.
    """
    name = f"scan-{codec}-{partitions}x{segments}x{segment_mib}MiB-b{block_mib}-g{LOGDIR_VERSION}"
    root = data_dir() / name
    meta_path = data_dir() / f"{name}.json"
    if meta_path.exists() and root.is_dir():
        meta = json.loads(meta_path.read_text())
        meta["path"] = str(root)
        return meta
    template = segment(min(segment_mib, 256), codec, block_mib)
    block = Path(template["path"]).read_bytes()
    spans = batch_spans(block)
    view = memoryview(block)
    log(f"generating {name} ({partitions * segments * segment_mib} MiB) ...")
    t0 = time.perf_counter()
    shutil.rmtree(root, ignore_errors=True)
    (root / "logdir").mkdir(parents=True)
    (root / "logdir" / "meta.properties").write_text("version=0\nbroker.id=0\n")
    total_bytes = total_records = total_batches = 0
    for p in range(partitions):
        part = root / "logdir" / f"{TOPIC}-{p}"
        part.mkdir()
        offset = 0
        for _ in range(segments):
            written = 0
            with open(part / f"{offset:020d}.log", "wb") as f:
                while written < segment_mib * MiB:
                    for start, end, count in spans:
                        f.write(struct.pack(">q", offset))
                        f.write(view[start + 8 : end])
                        written += end - start
                        offset += count
                        total_records += count
                        total_batches += 1
                        if written >= segment_mib * MiB:
                            break
            total_bytes += written
    meta = {
        "codec": codec,
        "partitions": partitions,
        "segments": partitions * segments,
        "bytes": total_bytes,
        "records": total_records,
        "batches": total_batches,
        "generated_s": round(time.perf_counter() - t0, 1),
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    meta["path"] = str(root)
    log(f"  {total_bytes / MiB:.0f} MiB, {total_records:,} records, {total_batches:,} batches")
    return meta


# ---------------------------------------------------------------------------------------------------
# Children: one mode each


def child_single(logdir: str, runs: int, split_mib: int, records: bool) -> dict:
    """In this process, as `ktool scan` runs a small input without --master: both variants, the tables
    written with pyarrow (`scan --out`); and the process's peak RSS (it is the executor's memory too)."""
    import resource

    from kafka_tools.pipeline import ScanOptions, plan_scan
    from kafka_tools.pipeline.local import scan_in_process

    out: dict = {"startup_s": None}
    probe = CpuProbe()
    for variant in variants(records):  # warm-up, as Spark's: imports (pyarrow, parquet), first calls
        scratch = tempfile.mkdtemp(prefix="ktool-bench-scan-")
        try:
            options = ScanOptions(out=scratch, overwrite=True, records=records)
            with main_records(variant == OLD_RECORDS):
                scan_in_process(plan_scan([WARM_UP]), options)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    for _ in range(runs):
        for variant in variants(records):
            scratch = tempfile.mkdtemp(prefix="ktool-bench-scan-")
            try:
                warm(logdir)
                options = ScanOptions(split_bytes=split_mib * MiB)
                if variant != "scan":
                    options.out, options.overwrite, options.records = scratch, True, records
                probe.start()
                t0 = time.perf_counter()
                with main_records(variant == OLD_RECORDS):
                    result = scan_in_process(plan_scan([logdir]), options)
                seconds = time.perf_counter() - t0
                cpu = probe.stop()
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            v = out.setdefault(variant, _counts(result) | {"times_s": [], "cpu": [], "tasks": result.tasks})
            v["times_s"].append(seconds)
            v["cpu"].append(cpu)
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def variants(records: bool) -> tuple[str, ...]:
    old = records and not os.environ.get(NO_MAIN_RECORDS)
    return VARIANTS + ((OLD_RECORDS,) if old else ())


@contextmanager
def main_records(old: bool):
    """With `old`, the records table built as main built it (the C builder turned off: `accel.without`
    in this process; the Spark job's tasks given `tasks.record_chunks`, pickled from here, and their
    rows written by Spark's writer)."""
    if not old:
        yield
        return
    from kafka_tools.format import accel

    job = sys.modules.get("kafka_tools.pipeline.job")  # imported by the Spark child only
    saved = accel.C
    accel.C = accel.without("record_columns")
    if job is not None:
        job.LocalFiles.arrow_batches = job.LocalFiles.tasks_write = False
    try:
        yield
    finally:
        accel.C = saved
        if job is not None:
            job.LocalFiles.arrow_batches = job.LocalFiles.tasks_write = True


def child_kernel(logdir: str, runs: int) -> dict:
    """The records table's Arrow batches alone, every segment whole, in this process (one core, CPU
    time): `record_columns.record_batches` with the C builder, then as main built them; and the peak
    RSS of the C runs (what an executor holds whatever the segment size: one batch at a time)."""
    import resource

    from kafka_tools.pipeline import plan_scan
    from kafka_tools.pipeline.record_columns import record_batches

    specs = plan_scan([logdir]).segments
    out: dict = {}
    builders = (("C Arrow builder", False), ("main: Python lists", True))
    for name, old in builders[: 1 if os.environ.get(NO_MAIN_RECORDS) else 2]:
        with main_records(old):  # warm-up: pyarrow imported, first calls made
            for spec in plan_scan([WARM_UP]).segments:
                list(record_batches(spec))
        times, rows = [], 0
        for _ in range(runs):
            warm(logdir)
            with main_records(old):
                t0 = time.process_time()
                rows = sum(b.num_rows for spec in specs for b in record_batches(spec))
                times.append(time.process_time() - t0)
        out[name] = {"times_s": times, "records": rows}
        if not old:
            out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def child_validate(logdir: str, runs: int) -> dict:
    """`ktool validate LOGDIR` as the CLI runs it (`validate.validate_paths`, default options: every
    CRC and the structure checked, compressed batches decompressed): the single-process peer."""
    from kafka_tools.log.checks.findings import ValidateOptions
    from kafka_tools.log.validate import validate_paths

    times, cpu, summary = [], [], None
    probe = CpuProbe()
    for _ in range(runs):
        warm(logdir)
        probe.start()
        t0 = time.perf_counter()
        summary = validate_paths([logdir], ValidateOptions()).summary()
        times.append(time.perf_counter() - t0)
        cpu.append(probe.stop())
    assert summary is not None
    counts = {
        "segments": summary.segments,
        "bytes": summary.bytes,
        "batches": summary.entries,
        "records": summary.records,
        "errors": summary.errors,
    }
    return {"scan": counts | {"times_s": times, "cpu": cpu, "tasks": 1}, "startup_s": None}


def _scan_part(args: tuple[list[str], int]) -> dict:
    from kafka_tools.pipeline import ScanOptions, plan_scan
    from kafka_tools.pipeline.local import scan_in_process

    paths, split_mib = args
    return _counts(scan_in_process(plan_scan(paths), ScanOptions(split_bytes=split_mib * MiB)))


def child_pair(logdir: str, runs: int, split_mib: int) -> dict:
    """The machine's own ceiling for two cores: the partitions in two halves, each scanned by a plain
    Python process (no Spark), both at once."""
    import multiprocessing

    parts = sorted(str(p) for p in Path(logdir).iterdir() if p.is_dir())
    halves = [(parts[0::2], split_mib), (parts[1::2], split_mib)]
    times, cpu, counts = [], [], {}
    probe = CpuProbe()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(abs, [0, 0])  # both workers started before the clock
        for _ in range(runs):
            warm(logdir)
            probe.start()
            t0 = time.perf_counter()
            results = pool.map(_scan_part, halves)
            times.append(time.perf_counter() - t0)
            cpu.append(probe.stop())
            counts = {k: sum(r[k] for r in results) for k in results[0]}
    return {"scan": counts | {"times_s": times, "cpu": cpu, "tasks": 2}, "startup_s": None}


def child_spark(logdir: str, runs: int, split_mib: int, master: str, records: bool, waves: int) -> dict:
    """Start Spark (timed), warm it up, then alternate the two variants `runs` times each."""
    from kafka_tools.pipeline import ScanOptions, plan_scan
    from kafka_tools.pipeline.job import run_scan
    from kafka_tools.pipeline.session import SparkSettings, java_command, start

    java_command()
    t0 = time.perf_counter()
    conf = {"spark.pyspark.python": sys.executable} if master.startswith("spark://") else {}
    handle = start(SparkSettings(master=master, conf=conf, light_jvm=True))  # as `ktool scan --out` starts it
    jvm_s = time.perf_counter() - t0
    parallelism = handle.spark.sparkContext.defaultParallelism
    # Warm-up: a scan of the small v2 fixtures starts the Python workers (which import ktool and
    # pyarrow) and lets the JVM load and compile the Arrow and Parquet code paths. One task a segment
    # (pack_bytes=1), so that every core's worker starts here: packed into one task, only one did, and
    # the first timed run under local[2] paid the second's start (~1 CPU s: bench/HISTORY.md, branch n1).
    scratch = tempfile.mkdtemp(prefix="ktool-bench-scan-")
    try:
        warm_up = ScanOptions(out=scratch, records=records, overwrite=True, pack_bytes=1)
        run_scan(handle.spark, plan_scan([WARM_UP]), warm_up)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    startup_s = time.perf_counter() - t0  # JVM + SparkContext + workers + the warm-up scan
    out: dict = {"startup_s": startup_s, "jvm_s": jvm_s, "parallelism": parallelism}
    probe = CpuProbe()
    try:
        for _ in range(runs):
            for variant in variants(records):
                scratch = tempfile.mkdtemp(prefix="ktool-bench-scan-")
                try:
                    warm(logdir)
                    probe.start()
                    t0 = time.perf_counter()
                    options = ScanOptions(split_bytes=split_mib * MiB, waves=waves)
                    if variant != "scan":
                        options.out, options.overwrite, options.records = scratch, True, records
                    with main_records(variant == OLD_RECORDS):
                        result = run_scan(handle.spark, plan_scan([logdir]), options)
                    seconds = time.perf_counter() - t0
                    cpu = probe.stop()
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
                v = out.setdefault(
                    variant, _counts(result) | {"times_s": [], "cpu": [], "tasks": result.tasks}
                )
                v["times_s"].append(seconds)
                v["cpu"].append(cpu)
    finally:
        handle.spark.stop()
        if handle.log_path:
            Path(handle.log_path).unlink(missing_ok=True)
    return out


def ensure_lookup_logdir(gib: int) -> dict:
    """A log dir of about `gib` GiB for the key lookup: 4 partitions x 10 segments, each segment one
    hour of timestamps (tests/support/logs.py: one uncompressed batch repeated, CRCs recomputed), cached."""
    from tests.support.logs import template_batch, write_log_dir

    batch = len(template_batch(50, 100))
    batches = max(1, gib * 1024 * MiB // (4 * 10 * batch))
    name = f"lookup-{gib}GiB-4x10-g1"
    root = data_dir() / name
    meta_path = data_dir() / f"{name}.json"
    if not (meta_path.exists() and root.is_dir()):
        log(f"generating {name} ...")
        shutil.rmtree(root, ignore_errors=True)
        gen = write_log_dir(root, partitions=4, segments=10, batches=batches, records=50, value_bytes=100)
        meta_path.write_text(
            json.dumps({"records": gen.records, "batches": batches, "segment_ms": gen.segment_ms})
        )
    meta = json.loads(meta_path.read_text())
    meta["path"] = str(root)
    meta["bytes"] = sum(f.stat().st_size for f in root.rglob("*.log"))
    return meta


QUESTIONS = ("key", "key + time window", "key regex", "value contains")
LOOKUP_VARIANTS = ("new: C columns", "old: Record objects")  # question_columns vs questions.match_chunks


@contextmanager
def old_questions(old: bool):
    """Questions answered as main answered them (`questions.match_chunks`: a Record object a record of
    every batch the header hop admits, tested in Python): the C builder reported absent in this process
    (in-process answers) and the Spark sources' tasks handed `match_chunks` (their Arrow batches off)."""
    if not old:
        yield
        return
    from kafka_tools.pipeline import record_columns
    from kafka_tools.pipeline.job import LocalFiles

    available, arrow = record_columns.available, LocalFiles.arrow_batches
    record_columns.available, LocalFiles.arrow_batches = (lambda: False), False
    try:
        yield
    finally:
        record_columns.available, LocalFiles.arrow_batches = available, arrow


def child_lookup(logdir: str, runs: int, master: str | None, segment_ms: int) -> dict:
    """`--key k7` over the whole log dir, with `--time-from` at the start of the last hour (one segment
    of ten per partition), `--key-regex '^k7$'` and `--value-contains value-7-` (the same records),
    each answered new (C columns) and old (Record objects), alternated `runs` times; in this process
    (master None) or on Spark. In this process also the unfiltered `records` table of the same data:
    its batches alone (the kernel) and written as parquet (what a user would otherwise run)."""
    from kafka_tools.pipeline import ScanOptions, plan_scan
    from kafka_tools.pipeline.questions import make_question
    from tests.support.logs import T0

    questions = {
        "key": make_question(keys=("k7",)),
        "key + time window": make_question(keys=("k7",), time_from=str(T0 + 9 * segment_ms)),
        "key regex": make_question(key_regex="^k7$"),
        "value contains": make_question(value_contains="value-7-"),
    }
    handle = None
    if master is not None:
        from kafka_tools.pipeline.job import run_questions
        from kafka_tools.pipeline.session import SparkSettings, java_command, start

        java_command()
        conf = {"spark.pyspark.python": sys.executable} if master.startswith("spark://") else {}
        handle = start(SparkSettings(master=master, conf=conf))
        for variant in LOOKUP_VARIANTS:  # warm-up
            with old_questions(variant.startswith("old")):
                run_questions(handle.spark, plan_scan([WARM_UP]), questions["key"], ScanOptions())

        def ask(plan, q):
            return run_questions(handle.spark, plan, q, ScanOptions(), limit=None)
    else:
        from kafka_tools.pipeline.local import answer_in_process

        def ask(plan, q):
            return answer_in_process(plan, q, ScanOptions())

    out: dict = {}
    probe = CpuProbe()
    try:
        for _ in range(runs):
            for name, q in questions.items():
                for variant in LOOKUP_VARIANTS:
                    warm(logdir)
                    with old_questions(variant.startswith("old")):
                        probe.start()
                        t0 = time.perf_counter()
                        answer = ask(plan_scan([logdir]), q)
                        seconds = time.perf_counter() - t0
                        cpu = probe.stop()
                    v = out.setdefault(f"{name}|{variant}", {"times_s": [], "cpu": []})
                    v["times_s"].append(seconds)
                    v["cpu"].append(cpu)
                    v.update(
                        matches=len(answer.matches),
                        segments=answer.segments,
                        segments_decoded=answer.segments_decoded,
                        batches_decoded=answer.batches_decoded,
                        batches=answer.batches,
                        tasks=answer.tasks,
                    )
            if master is None:
                for name, v in _records_table(logdir, probe).items():
                    out.setdefault(name, {"times_s": [], "cpu": []})
                    out[name]["times_s"].append(v["wall_s"])
                    out[name]["cpu"].append(v)
                    out[name]["rows"] = v["rows"]
    finally:
        if handle is not None:
            handle.spark.stop()
            if handle.log_path:
                Path(handle.log_path).unlink(missing_ok=True)
    return out


def _records_table(logdir: str, probe: CpuProbe) -> dict:
    """The unfiltered `records` table of the log dir in this process: its batches alone, then written
    as parquet (arrow_files.TableFile, as `ktool scan --records --out` writes it in-process)."""
    from kafka_tools.pipeline import plan_scan
    from kafka_tools.pipeline.arrow_files import TableFile
    from kafka_tools.pipeline.record_columns import record_batches

    specs = plan_scan([logdir]).segments
    out = {}
    warm(logdir)
    probe.start()
    rows = sum(b.num_rows for spec in specs for b in record_batches(spec))
    out["records table: batches only|unfiltered"] = {**probe.stop(), "rows": rows}
    with tempfile.TemporaryDirectory(prefix="ktool-bench-") as tmp:
        warm(logdir)
        probe.start()
        table = TableFile(tmp, "records", "parquet")
        for spec in specs:
            for batch in record_batches(spec):
                table.add(batch)
        table.close()
        out["records table: parquet|unfiltered"] = {**probe.stop(), "rows": rows}
    return out


def lookup_main(a) -> int:
    """The questions, new and old, with and without a time window that leaves out 90% of the segments;
    beside them the unfiltered records table of the same data."""
    wall0 = time.perf_counter()
    data = ensure_lookup_logdir(a.lookup)
    logdir = data["path"]
    modes = {"single process": None, **{m: m for m in (a.master or ["local[2]"])}}
    rows = []
    for label, master in modes.items():
        with _maybe_cluster(master) as url:
            log(f"questions, {label}: {a.runs} run(s) of each, {data['bytes'] / MiB:.0f} MiB ...")
            args = ["--child", "lookup", "--logdir", logdir, "--runs", str(a.runs)]
            args += ["--segment-ms", str(data["segment_ms"])] + (["--master", url] if url else [])
            res = run_child(args)
        for name in QUESTIONS:
            whole = res[f"key|{LOOKUP_VARIANTS[0]}"]["matches"]
            for variant in LOOKUP_VARIANTS:
                r = res[f"{name}|{variant}"]
                want = data["records"] // (500 if name == "key + time window" else 50)
                if r["matches"] != want or (name != "key + time window" and r["matches"] != whole):
                    raise SystemExit(f"{label}, {name}, {variant}: {r['matches']} matches, expected {want}")
            new, old = (res[f"{name}|{v}"] for v in LOOKUP_VARIANTS)
            for variant, r in zip(LOOKUP_VARIANTS, (new, old), strict=True):
                rows.append(
                    {
                        "mode": label,
                        "question": name,
                        "variant": variant,
                        **r,
                        "median_s": statistics.median(r["times_s"]),
                    }
                )
            rows[-2]["ratio"] = statistics.median(old["times_s"]) / statistics.median(new["times_s"])
        for name, r in res.items():
            if name.startswith("records table"):
                what, variant = name.split("|")
                rows.append(
                    {
                        "mode": label,
                        "question": what,
                        "variant": variant,
                        **r,
                        "median_s": statistics.median(r["times_s"]),
                    }
                )
    result = {
        "data": data,
        "rows": rows,
        "wall_s": round(time.perf_counter() - wall0, 1),
        "load": os.getloadavg(),
    }
    if a.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"ktool scan questions, {data['bytes'] / MiB:.0f} MiB in 40 segments (4 partitions x 10 hours), "
        f"{data['records']:,} records; {os.cpu_count()} CPUs; load {result['load'][0]:.1f} at the end"
    )
    cols = [
        "mode",
        "question",
        "answered by",
        "tasks",
        "median s",
        "our CPU s",
        "records/s",
        "batches decoded",
        "matches",
        "old/new",
        "others' cores",
    ]

    def cpu(r) -> float:
        return statistics.median(c["ours_cpu_s"] for c in r["cpu"])

    table = [
        [
            r["mode"],
            r["question"],
            r["variant"],
            str(r.get("tasks", "")),
            f"{r['median_s']:.2f}",
            f"{cpu(r):.2f}",
            f"{data['records'] / r['median_s'] / 1e6:.2f} M",
            f"{r['batches_decoded']}/{r['batches']}" if "batches" in r else "",
            str(r.get("matches", r.get("rows", ""))),
            f"{r['ratio']:.1f}x" if "ratio" in r else "",
            f"{statistics.median(c['others_cpu_s'] / c['wall_s'] for c in r['cpu']):.2f}",
        ]
        for r in rows
    ]
    print("\n".join(format_table(cols, table)))
    print(f"wall time {result['wall_s']} s")
    return 0


@contextmanager
def _maybe_cluster(master: str | None):
    """`standalone`: a master and two one-core workers started from the pyspark install (tests'
    StandaloneCluster), its spark:// URL; anything else as it is."""
    if master != "standalone":
        yield master
        return
    from tests.support.spark_cluster import StandaloneCluster

    log("starting a standalone cluster (a master, two workers of one core) ...")
    with StandaloneCluster(workers=2, cores=1) as cluster:
        yield cluster.url


def warm(logdir: str) -> None:
    """Read every segment right before a timed run: the page cache is warm for every mode alike (on a
    busy machine it does not stay warm through a Spark start-up)."""
    for f in sorted(Path(logdir).rglob("*.log")):
        warm_page_cache(f)


class CpuProbe:
    """CPU seconds used during a timed run by this process and its descendants (the JVM, the Python
    workers) and by everything else on the machine (Linux /proc; zeros elsewhere): on a shared box
    the others' share says how much of the machine the run really had."""

    def __init__(self) -> None:
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def _busy(self) -> float:
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except OSError:
            return 0.0
        return (sum(fields) - fields[3] - fields[4]) / self.hz  # all but idle and iowait

    def _ours(self) -> float:
        me, total = os.getpid(), 0.0
        parents: dict[int, int] = {}
        times: dict[int, float] = {}
        for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(rest[1])
            times[int(entry)] = (int(rest[11]) + int(rest[12])) / self.hz
        for pid, cpu in times.items():
            p = pid
            while p > 1 and p != me:
                p = parents.get(p, 0)
            if p == me:
                total += cpu
        return total

    def start(self) -> None:
        self.t0, self.busy0, self.ours0 = time.perf_counter(), self._busy(), self._ours()

    def stop(self) -> dict:
        wall = time.perf_counter() - self.t0
        ours = self._ours() - self.ours0
        others = max(0.0, self._busy() - self.busy0 - ours)
        return {"ours_cpu_s": ours, "others_cpu_s": others, "wall_s": wall}


def _counts(result) -> dict:
    return {
        "segments": result.summary.segments,
        "bytes": result.bytes,
        "batches": sum(p.batches for p in result.partitions),
        "records": sum(p.records for p in result.partitions),
        "errors": result.summary.errors,
    }


# ---------------------------------------------------------------------------------------------------
# Parent


def run_child(args: list[str]) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partitions", type=int, default=4, help="partitions in the log dir (default 4)")
    p.add_argument("--segments", type=int, default=4, help="segments per partition (default 4)")
    p.add_argument("--segment-mib", type=int, default=128, help="segment size (default 128)")
    p.add_argument(
        "--codec",
        choices=["none", "zstd", "lz4", "gzip", "snappy"],
        default="none",
        help="compression of the batches (default none)",
    )
    p.add_argument("--block-mib", type=int, default=64, help="block built record by record (default 64)")
    p.add_argument("--split-mib", type=int, default=128, help="ktool scan --split-size (default 128)")
    p.add_argument("--runs", type=int, default=3, help="timed runs per mode and variant (default 3)")
    p.add_argument("--waves", type=int, default=2, help="ScanOptions.waves: tasks per core (default 2)")
    p.add_argument("--records", action="store_true", help="`scan --out` also writes the records table")
    p.add_argument(
        "--no-peers", action="store_true", help="leave out the validate and 2-process rows (a shorter run)"
    )
    p.add_argument(
        "--no-main-records",
        action="store_true",
        help="with --records: leave out main's records variant and kernel (a shorter run)",
    )
    p.add_argument(
        "--one-core",
        action="store_true",
        help="also the single process pinned to one core (`single process, 1 core`)",
    )
    p.add_argument("--cpus", type=int, help=argparse.SUPPRESS)
    p.add_argument("--master", action="append", help="Spark masters (default: local[1] and local[2])")
    p.add_argument("--quick", action="store_true", help="smoke run: 2 x 2 segments of 64 MiB, 1 run")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--check", action="store_true", help=f"exit 1 when local[2] < {TARGET_SPEEDUP}x local[1]")
    p.add_argument(
        "--lookup",
        type=int,
        metavar="GIB",
        help="measure the key lookup instead: --key with and without a time window leaving out 90%% of "
        "the segments, on a generated log dir of GIB GiB",
    )
    p.add_argument(
        "--child", choices=["single", "validate", "pair", "spark", "lookup", "kernel"], help=argparse.SUPPRESS
    )
    p.add_argument("--segment-ms", type=int, help=argparse.SUPPRESS)
    p.add_argument("--logdir", help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.child == "single":
        if a.cpus:  # pinned: what one core does (the writer thread then shares it)
            os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: a.cpus])
        print(json.dumps(child_single(a.logdir, a.runs, a.split_mib, a.records)))
        return 0
    if a.child == "validate":
        print(json.dumps(child_validate(a.logdir, a.runs)))
        return 0
    if a.child == "kernel":
        print(json.dumps(child_kernel(a.logdir, a.runs)))
        return 0
    if a.child == "pair":
        print(json.dumps(child_pair(a.logdir, a.runs, a.split_mib)))
        return 0
    if a.child == "spark":
        print(json.dumps(child_spark(a.logdir, a.runs, a.split_mib, a.master[0], a.records, a.waves)))
        return 0

    if a.child == "lookup":
        print(json.dumps(child_lookup(a.logdir, a.runs, a.master[0] if a.master else None, a.segment_ms)))
        return 0
    if a.lookup:
        return lookup_main(a)

    if a.quick:
        a.partitions, a.segments, a.segment_mib, a.runs = 2, 2, 64, 1
    masters = a.master or ["local[1]", "local[2]"]
    wall0 = time.perf_counter()
    data = ensure_logdir(a.partitions, a.segments, a.segment_mib, a.codec, a.block_mib)
    logdir = str(Path(data["path"]) / "logdir")
    common = ["--logdir", logdir, "--runs", str(a.runs), "--split-mib", str(a.split_mib)]
    log(f"single process: {a.runs} run(s) over {data['bytes'] / MiB:.0f} MiB ...")
    records_arg = ["--records"] if a.records else []
    if a.no_main_records:
        os.environ[NO_MAIN_RECORDS] = "1"
    load = {"start": os.getloadavg()}
    kernel = None
    if a.records:
        log(f"records kernel: {a.runs} run(s), C builder and main's ...")
        kernel = run_child(["--child", "kernel", *common[:4]])
    children = {"single process": run_child(["--child", "single", *common, *records_arg])}
    if a.one_core:
        log("single process on one core ...")
        pinned = ["--child", "single", "--cpus", "1", *common, *records_arg]
        children["single process, 1 core"] = run_child(pinned)
    if not a.no_peers:
        log(f"ktool validate, single process: {a.runs} run(s) ...")
        children["validate, 1 process"] = run_child(["--child", "validate", *common[:4]])
        log("2 processes (no Spark: the machine's ceiling for two cores) ...")
        children["2 processes"] = run_child(["--child", "pair", *common])
    for master in masters:
        log(f"{master}: start-up, then {a.runs} run(s) of each variant ...")
        extra = (["--records"] if a.records else []) + ["--waves", str(a.waves)]
        with _maybe_cluster(master) as url:
            label = "standalone, 2 workers" if master == "standalone" else master
            children[label] = run_child(["--child", "spark", "--master", url, *common, *extra])

    load["end"] = os.getloadavg()
    rows: list[dict] = []
    for mode, child in children.items():
        for variant in variants(a.records):
            if variant not in child:
                continue
            res = child[variant]
            got = (res["batches"], res["records"], res["errors"])
            if got != (data["batches"], data["records"], 0):
                raise SystemExit(
                    f"{mode} {variant}: {got} (batches, records, errors), "
                    f"expected ({data['batches']}, {data['records']}, 0)"
                )
            median = statistics.median(res["times_s"])
            rows.append(
                {
                    "mode": mode,
                    "variant": variant,
                    "tasks": res["tasks"],
                    "startup_s": child["startup_s"],
                    "times_s": res["times_s"],
                    "cpu": res["cpu"],
                    "ours_cpu_s": statistics.median(c["ours_cpu_s"] for c in res["cpu"]),
                    "others_cores": statistics.median(c["others_cpu_s"] / c["wall_s"] for c in res["cpu"]),
                    "median_s": median,
                    "mb_per_s": data["bytes"] / median / 1e6,
                    "records_per_s": data["records"] / median,
                }
            )
    by = {(r["mode"], r["variant"]): r for r in rows}
    single = by[("single process", "scan")]["median_s"]
    speedups = {}
    for r in rows:
        base = by.get(("local[1]", r["variant"]))
        r["vs_local1"] = base["median_s"] / r["median_s"] if base else None
        r["vs_single"] = single / r["median_s"]
        peer = by.get(("validate, 1 process", "scan"))
        r["vs_validate"] = peer["median_s"] / r["median_s"] if peer else None
        if r["mode"] == "local[2]" and base:
            speedups[r["variant"]] = r["vs_local1"]
    ok = bool(speedups) and all(s >= TARGET_SPEEDUP for s in speedups.values())
    for r in rows:  # the C records builder against main's, same mode, same run
        old = by.get((r["mode"], OLD_RECORDS))
        same = old is not None and r["variant"] == "scan --out"
        r["vs_main_records"] = old["median_s"] / r["median_s"] if same else None
    kernels = {}
    if kernel is not None:
        for name, k in kernel.items():
            if name == "peak_rss_mib":
                continue
            if k["records"] != data["records"]:
                raise SystemExit(f"kernel {name}: {k['records']} records, expected {data['records']}")
            median = statistics.median(k["times_s"])
            kernels[name] = {"cpu_s": median, "records_per_s": data["records"] / median}
    result = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "data": data,
        "records_table": a.records,
        "split_mib": a.split_mib,
        "waves": a.waves,
        "modes": rows,
        "speedup_local2_vs_local1": speedups,
        "check": {"target": TARGET_SPEEDUP, "ok": ok},
        "wall_s": round(time.perf_counter() - wall0, 1),
        "single_peak_rss_mib": children["single process"]["peak_rss_mib"],
        "kernel": kernels,
        "kernel_peak_rss_mib": kernel["peak_rss_mib"] if kernel else None,
        "load_average": load,
    }
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        head = (
            f"ktool scan, {data['bytes'] / MiB:.0f} MiB in {data['segments']} segments ({data['partitions']} "
            f"partitions), {data['records']:,} records, {data['batches']:,} batches, codec {data['codec']}; "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()}"
        )
        cols = [
            "mode",
            "variant",
            "tasks",
            "start-up s",
            "median s",
            "min-max s",
            "MB/s",
            "M rec/s",
            "vs local[1]",
            "vs single",
            "vs validate",
            "vs main's records",
            "our CPU s",
            "others' cores",
        ]
        table = [
            [
                r["mode"],
                r["variant"],
                str(r["tasks"]),
                "-" if r["startup_s"] is None else f"{r['startup_s']:.1f}",
                f"{r['median_s']:.2f}",
                f"{min(r['times_s']):.2f}-{max(r['times_s']):.2f}",
                f"{r['mb_per_s']:.0f}",
                f"{r['records_per_s'] / 1e6:.2f}",
                "-" if r["vs_local1"] is None else f"{r['vs_local1']:.2f}x",
                f"{r['vs_single']:.2f}x",
                "-" if r["vs_validate"] is None else f"{r['vs_validate']:.2f}x",
                "-" if r["vs_main_records"] is None else f"{r['vs_main_records']:.2f}x",
                f"{r['ours_cpu_s']:.1f}",
                f"{r['others_cores']:.2f}",
            ]
            for r in rows
        ]
        print(head)
        print("\n".join(format_table(cols, table)))
        tables_written = "segments, batches, findings" + (", records" if a.records else "")
        print(
            f"`scan --out` writes the {tables_written} tables (parquet); start-up is excluded from the times."
        )
        for variant, s in speedups.items():
            verdict = "PASS" if s >= TARGET_SPEEDUP else "FAIL"
            print(f"[{verdict}] {variant}: local[2] >= {TARGET_SPEEDUP}x local[1]: {s:.2f}x")
        print(f"single process (pyarrow tables): peak RSS {result['single_peak_rss_mib']:.0f} MiB")
        if kernels and "main: Python lists" not in kernels:
            c = kernels["C Arrow builder"]
            print(
                f"records kernel, one core: C Arrow builder {c['records_per_s'] / 1e6:.2f} M rec/s "
                f"({c['cpu_s']:.2f} CPU s); peak RSS {result['kernel_peak_rss_mib']:.0f} MiB"
            )
        elif kernels:
            c, old = kernels["C Arrow builder"], kernels["main: Python lists"]
            print(
                f"records kernel, one core: C Arrow builder {c['records_per_s'] / 1e6:.2f} M rec/s "
                f"({c['cpu_s']:.2f} CPU s), main's {old['records_per_s'] / 1e6:.2f} M rec/s "
                f"({old['cpu_s']:.2f} CPU s): {old['cpu_s'] / c['cpu_s']:.2f}x; "
                f"peak RSS {result['kernel_peak_rss_mib']:.0f} MiB"
            )
        print("load average (1, 5, 15 min): start {}, end {}".format(*(load[k] for k in ("start", "end"))))
        print(f"wall time {result['wall_s']} s")
    return 1 if a.check and not result["check"]["ok"] else 0


if __name__ == "__main__":
    sys.exit(main())
