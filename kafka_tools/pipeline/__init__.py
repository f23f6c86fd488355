"""The PySpark job behind `ktool scan`: segments listed on the driver, decoded in the executors (or, for
a small input, in this process).

Modules, in the order data flows through them:

- `plan`: the driver's side without Spark: which segments, which tasks, and how the per-segment checks
  the executors send back become the same `Validation` that `ktool validate` builds;
- `tasks`: what one task does (check a segment, decode a byte range of it, replay an offsets
  partition), plain Python over local files, so the same code runs in an executor, in one process (the
  benchmark, the tests) or on a temporary copy of a file read from HDFS/S3; `range_task`: the main
  stage's task on a byte range, which may hand it to the C walk of `batch_columns`;
- `tables`: the columns of every table, once, as Arrow and as Spark types;
- `session`: starting Spark quietly and failing clearly (no Java, an unreachable master);
- `job`: the Spark job itself;
- `local` and `arrow_files`: the same scan in this one process, its tables written with pyarrow (what
  `ktool scan` runs without --master on a small input; the benchmark's baseline, the tests' reference).

Only `session`, `job` and `remote` import pyspark, and only when called: `ktool --help` and the
renderers never pay for it.
"""

from __future__ import annotations

from kafka_tools.pipeline.shipped import use_shipped_extension

use_shipped_extension()  # on an executor, before the decoder loads: the C extension the driver shipped

from kafka_tools.pipeline.plan import ScanOptions, ScanPlan, plan_scan  # noqa: E402
from kafka_tools.pipeline.results import (  # noqa: E402
    CommittedOffset,
    PartitionSummary,
    ScanResult,
    TableWritten,
)

__all__ = [
    "CommittedOffset",
    "PartitionSummary",
    "ScanOptions",
    "ScanPlan",
    "ScanResult",
    "TableWritten",
    "plan_scan",
]
