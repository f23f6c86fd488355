"""Where `ktool scan --out --records` spends its CPU, table by table, in one process.

    KTOOL_BENCH_DIR=… python bench/scan_tables.py LOGDIR [LOGDIR …]   # e.g. bench/.data/lookup-1GiB-4x10-g1

One in-process scan (`local.scan_in_process`, parquet, `--records`, `--offsets-topic`) per log dir, its
steps timed in CPU seconds of this process: the checks (`tasks.check_segment`), the `batches` rows
(`tasks.batch_chunks`: each entry's row as Python values, its records counted in C) and their Arrow
arrays from those lists (`tables.arrow_batch`), the `records` batches built in C
(`record_columns.record_batches`), every table's parquet writing (`arrow_files.TableFile.add`), and
the small tables written from rows (`segments`, `findings`: `arrow_files.write_rows`). Which tables
are still built from Python lists, and whether that matters: their share of the whole.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def measure(logdir: str) -> dict:
    from kafka_tools.pipeline import ScanOptions, local, plan_scan, tables
    from kafka_tools.pipeline.arrow_files import TableFile

    spent: dict[str, float] = defaultdict(float)
    rows: dict[str, int] = defaultdict(int)

    def timed(name, fn):
        def call(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.process_time() - t0

        return call

    def timed_iter(name, fn):
        def call(*args, **kwargs):
            it = iter(fn(*args, **kwargs))
            while True:
                t0 = time.process_time()
                try:
                    item = next(it)
                except StopIteration:
                    spent[name] += time.process_time() - t0
                    return
                spent[name] += time.process_time() - t0
                yield item

        return call

    names = {id(tables.BATCHES): "batches", id(tables.OFFSETS): "offsets", id(tables.METADATA): "metadata"}
    arrow_batch = tables.arrow_batch

    def arrow(columns, data, constants=None):
        t0 = time.process_time()
        batch = arrow_batch(columns, data, constants)
        name = names.get(id(columns), "other")
        spent[f"{name}: Arrow arrays from lists"] += time.process_time() - t0
        rows[name] += batch.num_rows
        return batch

    add = TableFile.add

    def add_timed(self, batch):
        t0 = time.process_time()
        add(self, batch)
        spent[f"{self.name}: parquet written"] += time.process_time() - t0

    patches = [
        (local, "check_segment", timed("checks (validate's)", local.check_segment)),
        (local, "batch_chunks", timed_iter("batches: rows as Python lists", local.batch_chunks)),
        (local, "record_batches", timed_iter("records: Arrow batches built in C", local.record_batches)),
        (local, "write_rows", timed("segments + findings: from rows, written", local.write_rows)),
        (tables, "arrow_batch", arrow),
        (TableFile, "add", add_timed),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, fn in patches:
        setattr(owner, name, fn)
    try:
        plan = plan_scan([logdir])
        with tempfile.TemporaryDirectory(prefix="ktool-bench-") as tmp:
            t0 = time.process_time()
            result = local.scan_in_process(
                plan, ScanOptions(out=str(Path(tmp) / "t"), records=True, offsets_topic=True)
            )
            total = time.process_time() - t0
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)
    written = {t.name: t.rows for t in result.tables}
    return {
        "logdir": logdir,
        "bytes": plan.bytes,
        "cpu_s": total,
        "steps": dict(spent),
        "rows": written,
        "load": os.getloadavg(),
    }


def main(argv: list[str]) -> int:
    for logdir in argv:
        r = measure(logdir)
        print(
            f"{r['logdir']}: {r['bytes'] / 1e6:.0f} MB, scan --out --records {r['cpu_s']:.2f} CPU s "
            f"(load {r['load'][0]:.1f}); rows: {r['rows']}"
        )
        for name, s in sorted(r["steps"].items(), key=lambda kv: -kv[1]):
            print(f"  {name:50} {s:7.2f} s  {100 * s / r['cpu_s']:5.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
