"""A segment's validate report as one comparable tuple: what the C walks and the Python walk must
agree on (counts, offsets, cut points, timestamps, the positions asked for, and every finding)."""

from __future__ import annotations

from pathlib import Path

from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.checks.segment_checks import scan_segment


def segment_report(path: Path, wanted=(), deep: bool = False) -> tuple:
    r = scan_segment(path, ValidateOptions(deep=deep), index_positions=wanted)
    findings = [(f.kind, f.severity, f.position, f.offset, f.message, f.repairable) for f in r.findings]
    return (
        r.entries,
        r.records,
        r.first_offset,
        r.last_offset,
        r.next_offset,
        r.recovery_point,
        r.valid_after,
        r.max_timestamp,
        r.has_gaps,
        r.entry_positions,
        findings,
    )
