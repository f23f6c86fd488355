"""A segment's report as plain values and back: what crosses the pipe from a worker of the pool
(log/workers/pool.py), made plain in the worker so that no index target and no object of the walk
crosses with it. Measured on the 33 fixture segments' reports (17 findings): to_wire, marshal and
back 9-10 us a report, pickle and back 24-25 us (the pool pickles: its calls carry options and
segments, which marshal cannot; a large input's walk pays it, never a small one's start-up).

`entry_positions` does not cross: it holds the entries the segment's `.index` points at, which the
index checks have used up by the time the report is sent (they run beside the walk, in the walker),
and it can number a million (one per 4 KiB of log), as `ktool scan`'s tasks leave it behind too.
"""

from __future__ import annotations

from pathlib import Path

from kafka_tools.log.checks.findings import Finding, SegmentReport, Severity


def report_to_wire(report: SegmentReport) -> tuple:
    r = report
    findings = [
        (
            f.file,
            f.kind,
            f.severity.value,
            f.message,
            f.position,
            f.offset,
            f.expected,
            f.actual,
            f.repairable,
        )
        for f in r.findings
    ]
    return (
        str(r.path),
        r.base_offset,
        r.size,
        r.entries,
        r.records,
        r.first_offset,
        r.last_offset,
        r.next_offset,
        r.recovery_point,
        r.valid_after,
        r.max_timestamp,
        r.has_gaps,
        findings,
    )


def report_from_wire(fields: tuple) -> SegmentReport:
    *head, valid_after, max_timestamp, has_gaps, findings = fields
    path, *counts = head
    return SegmentReport(
        Path(path),
        *counts,
        valid_after=valid_after,
        max_timestamp=max_timestamp,
        has_gaps=has_gaps,
        findings=[_finding(*f) for f in findings],
    )


def _finding(
    file: str, kind: str, severity: str, message: str, position: int | None, offset: int | None,
    expected: object, actual: object, repairable: bool | None,
) -> Finding:  # fmt: skip
    return Finding(
        file=file,
        kind=kind,
        severity=Severity(severity),
        message=message,
        position=position,
        offset=offset,
        expected=expected,
        actual=actual,
        repairable=repairable,
    )
