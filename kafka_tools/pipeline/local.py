"""The scan's work in this one process, task after task, without Spark.

The same task functions the executors run, in the same order of phases; no tables are written. It is
the benchmark's single-process baseline and a reference the tests hold the Spark job to.
"""

from __future__ import annotations

import time

from kafka_tools.pipeline.plan import (
    ScanOptions,
    ScanPlan,
    ScanResult,
    SegmentTotals,
    committed_offsets,
    finish,
    offsets_replay_segments,
)
from kafka_tools.pipeline.tasks import batch_chunks, check_segment, replay_offsets, split_ranges


def scan_in_process(plan: ScanPlan, options: ScanOptions) -> ScanResult:
    t0 = time.perf_counter()
    checks = [check_segment(spec, options.split_bytes) for spec in plan.segments]
    totals: dict[str, SegmentTotals] = {}
    tasks = len(checks)
    for spec, check in zip(plan.segments, checks, strict=True):
        t = totals.setdefault(spec.file, SegmentTotals())
        for start, end in split_ranges(check.split_starts):
            tasks += 1
            for cols in batch_chunks(spec, start, end):
                t.add_columns(cols)
    committed = None
    if options.offsets_topic:
        committed = []
        for number, segs in offsets_replay_segments(plan, checks).items():
            tasks += 1
            committed += committed_offsets(replay_offsets(number, segs))
        committed.sort(key=lambda c: (c.group, c.topic, c.partition))
    result = finish(plan, checks, totals, committed)
    result.master = "in-process"
    result.tasks = tasks
    result.seconds = time.perf_counter() - t0
    return result
