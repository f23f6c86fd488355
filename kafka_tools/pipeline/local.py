"""The scan's work in this one process, range after range, without Spark.

The same task functions the executors run, on the same byte ranges; no tables are written. It is the
benchmark's single-process baseline and a reference the tests hold the Spark job to.
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
from kafka_tools.pipeline.shipped import decoder_name
from kafka_tools.pipeline.tasks import batch_chunks, check_segment, replay_offsets


def scan_in_process(plan: ScanPlan, options: ScanOptions) -> ScanResult:
    t0 = time.perf_counter()
    ranges = plan.ranges(options.split_bytes)
    reports: list = [None] * len(plan.segments)
    totals: dict[str, SegmentTotals] = {}
    for i, start, end in ranges:
        spec = plan.segments[i]
        if start == 0:
            reports[i] = check_segment(spec)
        t = totals.setdefault(spec.file, SegmentTotals())
        for cols in batch_chunks(spec, start, end):
            t.add_columns(cols)
    tasks = len(ranges)
    committed = None
    if options.offsets_topic:
        committed = []
        for (_, number), segs in offsets_replay_segments(plan, reports).items():
            tasks += 1
            committed += committed_offsets(replay_offsets(number, segs))
        committed.sort(key=lambda c: (c.group, c.topic, c.partition, c.file))
    result = finish(plan, reports, totals, ranges, committed)
    result.master = "in-process"
    result.decoders = [decoder_name()]
    result.tasks = tasks
    result.seconds = time.perf_counter() - t0
    return result
