"""`ktool retention` output: a block per partition (text) or JSON Lines (`partition`, `segment`,
`summary` objects)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TextIO

from kafka_tools.errors import KtoolError
from kafka_tools.format.plural import plural
from kafka_tools.log.retention.config import TopicSettings
from kafka_tools.log.retention.plan import PartitionRetention, RetentionReport
from kafka_tools.render.tables import make_console


def _iso(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _setting_lines(s: TopicSettings, compaction: bool) -> list[str]:
    def v(x: object) -> str:
        return ",".join(sorted(x)) if isinstance(x, frozenset) else str(x)

    pairs = [
        ("cleanup.policy", s.cleanup_policy),
        ("retention.ms", s.retention_ms),
        ("retention.bytes", s.retention_bytes),
    ]
    if compaction:
        pairs += [
            ("min.cleanable.dirty.ratio", s.min_cleanable_ratio),
            ("delete.retention.ms", s.delete_retention_ms),
        ]
    return [f"  {name} {v(setting.value)}  (from {setting.source})" for name, setting in pairs]


def summary_of(report: RetentionReport) -> dict[str, object]:
    parts = [p for p in report.partitions if not p.unreadable]
    return {
        "type": "summary",
        "now": report.now_ms,
        "partitions": len(report.partitions),
        "partitionsWithDeletes": sum(1 for p in parts if p.deleted),
        "segmentsDeleted": sum(len(p.deleted) for p in parts),
        "bytesFreed": sum(p.bytes_freed for p in parts),
        "recordsFreed": sum(p.records_freed for p in parts),
        "unreadable": len(report.unreadable),
        "inconsistent": sum(1 for p in parts if p.inconsistent),
    }


class RetentionTextRenderer:
    def __init__(self, out: TextIO, colour: bool, all_segments: bool = False) -> None:
        self.out = out
        self.colour = colour
        self.all_segments = all_segments
        self.console = make_console(out, colour)

    def render(self, report: RetentionReport) -> None:
        self._line(f"now: {_iso(report.now_ms)} ({report.now_ms})")
        for part in report.partitions:
            self._partition(part)
        s = summary_of(report)
        self._line(
            f"total: {plural(s['segmentsDeleted'], 'segment')}, {plural(s['bytesFreed'], 'byte')}, "
            f"{plural(s['recordsFreed'], 'record')} would be deleted in {s['partitionsWithDeletes']} of "
            f"{plural(s['partitions'], 'partition')} "
            "(a preview: nothing was changed)"
        )

    def _line(self, text: str) -> None:
        if self.colour:
            self.console.print(text, markup=False, highlight=False)
        else:
            self.out.write(text + "\n")

    def _partition(self, p: PartitionRetention) -> None:
        self._line("")
        if p.unreadable:
            self._line(f"{p.partition} ({p.path}): unreadable: {p.unreadable}")
            return
        rule = p.rule
        self._line(f"{p.partition} ({p.path})")
        if rule is not None:
            self._line(f"  rule: {rule.name} (Kafka {rule.versions}, by {rule.basis}): {p.rule_why}")
        if p.settings is not None:
            for line in _setting_lines(p.settings, p.compaction is not None):
                self._line(line)
        if p.high_watermark is not None:
            self._line(f"  high watermark {p.high_watermark}  (from {p.high_watermark_source})")
        for note in p.notes:
            self._line(f"  note: {note}")
        if p.segments:
            self._table(p)
        deleted = p.deleted
        kept = [s for s in p.segments if not s.deleted_by]
        if deleted:
            rolled = "; every segment goes: the broker rolls a new empty segment first" if p.rolled else ""
            self._line(
                f"  delete {plural(len(deleted), 'segment')}, {plural(p.bytes_freed, 'byte')}, "
                f"{plural(p.records_freed, 'record')}; "
                f"log start offset {p.log_start_before} -> {p.log_start_after}{rolled}"
            )
        else:
            self._line(f"  nothing to delete; log start offset stays {p.log_start_before}")
        if p.rolled:
            self._line(f"  stays: a new empty segment at offset {p.log_end_offset} (the log end offset)")
        elif p.segments:
            self._line(
                f"  stays: {plural(len(kept), 'segment')}, {plural(sum(s.size for s in kept), 'byte')}, "
                "offsets "
                f"{p.log_start_after}..{(p.log_end_offset or 0) - 1} (log end offset {p.log_end_offset})"
            )
        if p.compaction is not None:
            self._compaction(p.compaction)
        for w in p.inconsistent:
            self._line(f"  INCONSISTENT: {w}")
        for w in p.warnings:
            self._line(f"  warning: {w}")

    def _table(self, p: PartitionRetention) -> None:
        """One line per segment (a table's measuring costs a quarter second per partition)."""
        hidden = 0
        first_kept_seen = False
        width = max(len(str(s.base_offset)) for s in p.segments)
        for s in p.segments:
            show = self.all_segments or s.deleted_by or not first_kept_seen
            if not s.deleted_by:
                first_kept_seen = True
            if not show:
                hidden += 1
                continue
            action = f"delete ({s.deleted_by})" if s.deleted_by else "keep"
            if s.active:
                action += ", active"
            ts = ""
            if s.largest_timestamp is not None and s.timestamp_source != "mtime":
                ts = f", largest timestamp {_iso(s.largest_timestamp)} ({s.timestamp_source})"
            self._line(
                f"  {s.base_offset:>{width}}  {action}: {s.size} bytes, mtime {_iso(s.mtime_ms)}{ts}"
                + (f"; {s.reason}" if s.reason else "")
            )
        if hidden:
            self._line(f"  … and {hidden} later segments that stay (--all-segments lists them)")

    def _compaction(self, c) -> None:
        verdict = "would be cleaned" if c.would_clean else "would not be cleaned"
        self._line(
            f"  compaction: dirty ratio {c.dirty_ratio:.3f} (dirty {c.dirty_bytes} / clean {c.clean_bytes} + "
            f"dirty bytes) vs min.cleanable.dirty.ratio {c.min_ratio}: {verdict}"
        )
        self._line(
            f"    first dirty offset {c.first_dirty_offset} (from {c.first_dirty_source}); "
            f"first uncleanable offset {c.first_uncleanable_offset} (the active segment)"
        )
        self._line(
            f"    a clean drops {c.dropped} of {plural(c.records_examined, 'record')}: {c.superseded} "
            "superseded by a "
            f"later record of their key, {c.tombstones_expired} tombstones past delete.retention.ms, "
            f"{c.aborted} aborted; {c.tombstones_kept} tombstones kept; {c.keys} distinct keys"
        )
        self._line(f"    size of the cleanable segments {c.bytes_before} -> about {c.bytes_after} bytes")
        for note in c.notes:
            self._line(f"    note: {note}")


class RetentionJsonRenderer:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def _emit(self, obj: dict[str, object]) -> None:
        from kafka_tools.render.json_lines import dumps  # the JSON encoder for --json only

        self.out.write(dumps(obj) + "\n")

    def render(self, report: RetentionReport, bad_paths: list[tuple[str, KtoolError]] | None = None) -> None:
        """`bad_paths`: paths not read (missing, a file), said in the stream and counted unreadable."""
        from kafka_tools.render.json_kinds import error_object  # for --json only, as the encoder

        for path, exc in bad_paths or []:
            self._emit(error_object(path, exc))
        for p in report.partitions:
            self._partition(p)
        summary = summary_of(report)
        summary["unreadable"] = len(report.unreadable) + len(bad_paths or [])
        self._emit(summary)

    def _partition(self, p: PartitionRetention) -> None:
        from kafka_tools.render.json_kinds import partition_fields

        kept = [s for s in p.segments if not s.deleted_by]
        obj: dict[str, object] = {
            "type": "partition",
            **partition_fields(p.path, p.partition),
            "unreadableReason": p.unreadable,
            "rule": p.rule.name if p.rule else None,
            "ruleVersions": p.rule.versions if p.rule else None,
            "ruleBasis": p.rule.basis if p.rule else None,
            "ruleWhy": p.rule_why,
            "settings": p.settings.as_dict() if p.settings else None,
            "logStartOffset": p.log_start_before,
            "newLogStartOffset": p.log_start_after,
            "logEndOffset": p.log_end_offset,
            "highWatermark": p.high_watermark,
            "highWatermarkSource": p.high_watermark_source or None,
            "segments": len(p.segments),
            "segmentsDeleted": len(p.deleted),
            "bytesFreed": p.bytes_freed,
            "recordsFreed": p.records_freed,
            "segmentsKept": len(kept),
            "bytesKept": sum(s.size for s in kept),
            "rolled": p.rolled,
            "notes": p.notes,
            "warnings": p.warnings,
            "inconsistent": p.inconsistent,
            "compaction": p.compaction.as_dict() if p.compaction is not None else None,
        }
        self._emit(obj)
        for s in p.segments:
            self._emit(
                {
                    "type": "segment",
                    **partition_fields(p.path, p.partition),
                    "baseOffset": s.base_offset,
                    "file": s.file,
                    "size": s.size,
                    "mtimeMs": s.mtime_ms,
                    "active": s.active,
                    "largestTimestamp": s.largest_timestamp,
                    "timestampSource": s.timestamp_source,
                    "action": "delete" if s.deleted_by else "keep",
                    "deletedBy": s.deleted_by,
                    "reason": s.reason,
                }
            )
