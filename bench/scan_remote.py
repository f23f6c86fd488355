"""`ktool scan --out --records` of URIs (hdfs://, s3a://… — here file://): segments read by Spark, the
road of workers that share no filesystem with the driver (`pipeline.remote.RemoteFiles`).

    python bench/scan_remote.py                       # local[2], the 256 MiB log dir of bench/scan.py
    python bench/scan_remote.py --master standalone   # a master and two one-core workers
    python bench/scan_remote.py --runs 2 --json

Two variants in the same Spark session, alternated, each writing the `batches`, `records`,
`segments` and `findings` tables (parquet) into a temporary directory:

* `Arrow (C)`: today's stages: Spark's `binaryFile` source into `mapInArrow`, the segment's bytes
  to Python as one Arrow buffer, the records table's batches built in C (record_columns.py);
* `pickled rows`: the stages as they were before (reproduced here, `old_stage`): `binaryFiles`, the
  segment's bytes pickled to Python, every row a Python tuple pickled back to the JVM
  (`createDataFrame` of an RDD), the records table's rows from `tasks.record_chunks`.

Timed: `run_scan` alone (Spark started and warmed up before, on the v2 fixtures). CPU seconds of
this process's tree (the JVM, the Python workers) and the rest of the machine's, and the peak RSS
of any one Python worker during the run (sampled every 50 ms): what an executor's Python holds.
Both variants must report the same batches and records.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/scan_remote.py`: make `bench` (and ktool) importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.decode import data_dir, format_table, log  # noqa: E402
from bench.scan import CpuProbe, _counts, _maybe_cluster, ensure_logdir, warm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WARM_UP = ROOT / "fixtures" / "generated" / "v2"
VARIANTS = ("Arrow (C)", "pickled rows")


def old_stage(self, columns, produce, records_to=None):
    """`RemoteFiles._stage` as it was: whole files from `binaryFiles`, rows pickled both ways (with
    `arrow_batches` False: the task functions give column lists, `tasks.record_chunks` for records)."""
    from kafka_tools.pipeline import tables

    specs, lookup, scanned = self.specs, self.lookup, self.scanned
    names = tables.names(columns)[3:]

    def rows(item):
        from kafka_tools.pipeline.remote import _normal, local_copy

        spec = specs.value[lookup.value[_normal(item[0])]]
        with local_copy([spec], [item[1]]) as (local,):
            for cols in produce(local, 0, None):
                for values in zip(*(cols[n] for n in names), strict=True):
                    yield (spec.file, spec.topic, spec.partition, *values)
        if scanned is not None:
            scanned.add(spec.size)

    rdd = self._files(list(range(len(self.plan.segments)))).flatMap(rows)
    return self.spark.createDataFrame(rdd, tables.spark_ddl(columns))


class WorkerRss:
    """The largest resident set of any Python process under this one (Spark's Python workers) while
    running, sampled every 50 ms (Linux /proc)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.05):
            parents, rss = {}, {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        head, rest = f.read().rsplit(")", 1)
                except OSError:
                    continue
                fields = rest.split()
                parents[int(entry)] = int(fields[1])
                if "python" in head.rpartition("(")[2]:
                    rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            for pid, size in rss.items():
                p = parents.get(pid, 0)
                while p > 1 and p != me:
                    p = parents.get(p, 0)
                if p == me and pid != me:
                    self.peak = max(self.peak, size)

    def __enter__(self) -> WorkerRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def bench(logdir: str, master: str, runs: int) -> dict:
    from kafka_tools.pipeline import ScanOptions
    from kafka_tools.pipeline.job import run_scan
    from kafka_tools.pipeline.remote import RemoteFiles, plan_remote
    from kafka_tools.pipeline.session import SparkSettings, java_command, start

    java_command()
    conf = {"spark.pyspark.python": sys.executable} if master.startswith("spark://") else {}
    handle = start(SparkSettings(master=master, conf=conf))  # full JIT, as the CLI starts it for URIs
    spark = handle.spark
    uris = [f"file://{Path(logdir).resolve()}"]
    new_stage = RemoteFiles._stage
    out: dict = {"master": master, "parallelism": spark.sparkContext.defaultParallelism}
    probe = CpuProbe()
    try:
        for stage in (new_stage, old_stage):  # warm-up: workers started, JVM paths compiled
            RemoteFiles._stage, RemoteFiles.arrow_batches = stage, stage is new_stage
            scratch = tempfile.mkdtemp(prefix="ktool-bench-remote-")
            try:
                run_scan(
                    spark, plan_remote(spark, [f"file://{WARM_UP}"]), ScanOptions(out=scratch, records=True)
                )
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        for _ in range(runs):
            for variant, stage in zip(VARIANTS, (new_stage, old_stage), strict=True):
                RemoteFiles._stage, RemoteFiles.arrow_batches = stage, stage is new_stage
                scratch = tempfile.mkdtemp(prefix="ktool-bench-remote-")
                try:
                    warm(logdir)
                    with WorkerRss() as rss:
                        probe.start()
                        result = run_scan(
                            spark, plan_remote(spark, uris), ScanOptions(out=scratch, records=True)
                        )
                        cpu = probe.stop()
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
                v = out.setdefault(variant, _counts(result) | {"runs": [], "tasks": result.tasks})
                v["runs"].append(cpu | {"worker_rss_mib": rss.peak / 2**20, "load": os.getloadavg()[0]})
                log(f"{variant}: {cpu['wall_s']:.1f} s, {cpu['ours_cpu_s']:.1f} CPU s")
    finally:
        RemoteFiles._stage, RemoteFiles.arrow_batches = new_stage, True
        spark.stop()
        if handle.log_path:
            Path(handle.log_path).unlink(missing_ok=True)
    counts = {(out[v]["batches"], out[v]["records"]) for v in VARIANTS}
    if len(counts) != 1:
        raise SystemExit(f"the variants disagree: {counts}")
    return out


def report(data: dict, meta: dict) -> list[str]:
    rows = []
    for variant in VARIANTS:
        v = data[variant]
        wall = statistics.median(r["wall_s"] for r in v["runs"])
        cpu = statistics.median(r["ours_cpu_s"] for r in v["runs"])
        others = statistics.median(r["others_cpu_s"] for r in v["runs"])
        rss = max(r["worker_rss_mib"] for r in v["runs"])
        load = max(r["load"] for r in v["runs"])
        rows.append(
            [
                variant,
                f"{wall:.1f}",
                f"{v['records'] / wall / 1e6:.3f}",
                f"{cpu:.1f}",
                f"{others:.1f}",
                f"{rss:.0f}",
                f"{load:.1f}",
            ]
        )
    head = ["variant", "time s", "M rec/s", "CPU s", "others' CPU s", "worker RSS MiB", "load"]
    new, old = (statistics.median(r["wall_s"] for r in data[v]["runs"]) for v in VARIANTS)
    lines = [
        f"scan --out --records of file:// URIs, {data['master']}: {meta['segments']} segments, "
        f"{meta['bytes'] / 1e6:.0f} MB, {meta['records']:,} records",
        *format_table(head, rows),
        f"Arrow (C) / pickled rows: {old / new:.2f}x",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--logdir", help="a log dir (default: bench/scan.py's 2 x 2 x 64 MiB, generated once)")
    p.add_argument("--master", default="local[2]", help="local[N] or `standalone` (default local[2])")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.logdir:
        logdir = a.logdir
        meta = {"segments": len(list(Path(logdir).rglob("*.log")))}
        meta["bytes"] = sum(f.stat().st_size for f in Path(logdir).rglob("*.log"))
    else:
        meta = ensure_logdir(2, 2, 64, "none", 16)
        logdir = meta["path"]
    log(f"data in {data_dir()}")
    with _maybe_cluster(a.master) as url:
        data = bench(logdir, url, a.runs)
    meta["records"] = data[VARIANTS[0]]["records"]
    meta["segments"] = data[VARIANTS[0]]["segments"]
    if a.json:
        print(json.dumps({"meta": meta, **data}))
    else:
        print("\n".join(report(data, meta)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
