"""The scan's work in this one process, range after range, without Spark.

The same task functions the executors run, on the same byte ranges; no tables are written. It is the
benchmark's single-process baseline and a reference the tests hold the Spark job to.
"""

from __future__ import annotations

import time

from kafka_tools.pipeline.offsets_replay import replay_offsets
from kafka_tools.pipeline.plan import ScanOptions, ScanPlan, offsets_replay_segments
from kafka_tools.pipeline.results import ScanResult, committed_offsets, finish
from kafka_tools.pipeline.shipped import decoder_name
from kafka_tools.pipeline.tasks import SegmentTotals, batch_chunks, check_segment


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


def answer_in_process(plan: ScanPlan, question, options: ScanOptions):
    """`job.run_questions` in this one process: the benchmark's baseline and the tests' reference."""
    from kafka_tools.pipeline import tables
    from kafka_tools.pipeline.questions import Answer, fold, match_chunks, match_order

    t0 = time.perf_counter()
    asked = plan.only_topics(question.topics)
    answer = Answer(question, segments=len(asked.segments), bytes=asked.bytes, master="in-process")
    answer.segments_skipped_by_topic = len(plan.segments) - len(asked.segments)
    items: list[tuple] = []
    names = tables.names(tables.MATCHES)
    rows = []
    ranges = asked.ranges(options.split_bytes)
    for i, start, end in ranges:
        spec = asked.segments[i]
        for cols in match_chunks(spec, start, end, question, sink=items.append):
            for values in zip(*(cols[n] for n in names[3:]), strict=True):
                rows.append(dict(zip(names, (spec.file, spec.topic, spec.partition, *values), strict=True)))
    fold(answer, items)
    answer.matches = sorted(rows, key=match_order)
    answer.tasks = len(ranges)
    answer.seconds = time.perf_counter() - t0
    return answer
