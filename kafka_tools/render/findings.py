"""`ktool validate` output: findings one a line, a summary table per partition, a verdict line; or JSON."""

from __future__ import annotations

import json
from typing import TextIO

from kafka_tools.validate import Finding, PartitionReport, Severity, Summary, Validation

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def finding_line(f: Finding) -> str:
    where = f.file
    if f.position is not None:
        where += f":{f.position}"
    offset = f" (offset {f.offset})" if f.offset is not None else ""
    extra = ""
    if f.expected is not None or f.actual is not None:
        extra = f" [expected {f.expected}, found {f.actual}]"
    repair = ""
    if f.severity == Severity.ERROR:
        repair = " (tail: truncate repairs)" if f.repairable else " (not repairable by truncate)"
    return f"{f.severity.value.upper()} {where}{offset}: {f.kind}: {f.message}{extra}{repair}"


def verdict(summary: Summary) -> str:
    if not summary.errors:
        return f"clean: {summary.segments} segments, {summary.entries} batches, {summary.bytes} bytes"
    if summary.all_repairable:
        return (
            f"corrupt: {summary.errors} errors, all in tails ({summary.tail_bytes} bytes) that "
            "`ktool truncate` repairs as the broker's recovery would"
        )
    return (
        f"corrupt: {summary.errors} errors, some in the middle of the data: `ktool truncate` would lose "
        "valid data and refuses without --force"
    )


def partition_status(rep: PartitionReport) -> tuple[str, int]:
    findings = rep.all_findings()
    errors = [f for f in findings if f.severity == Severity.ERROR]
    if not errors:
        return "clean", 0
    if all(f.repairable for f in errors):
        return "tail", len(errors)
    return "CORRUPT", len(errors)


class ValidateTextRenderer:
    def __init__(self, out: TextIO, colour: bool) -> None:
        from rich.console import Console

        self.console = Console(
            file=out,
            force_terminal=colour,
            no_color=not colour,
            highlight=False,
            soft_wrap=True,
            width=200 if not colour else None,
        )
        self.out = out
        self.colour = colour

    def render(self, result: Validation, summary: Summary) -> None:
        for f in result.all_findings():
            if self.colour:
                self.console.print(finding_line(f), style=_STYLE[f.severity], markup=False)
            else:
                self.out.write(finding_line(f) + "\n")
        if result.partitions:
            self._table(result.partitions)
        self.console.print(verdict(summary), style="bold" if self.colour else None, markup=False)

    def _table(self, partitions: list[PartitionReport]) -> None:
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD if self.colour else box.ASCII2, show_edge=False)
        for col in ("partition", "segments", "bytes", "batches", "log end", "tail bytes", "errors", "status"):
            table.add_column(col, justify="left" if col in ("partition", "status") else "right")
        for rep in partitions:
            status, errors = partition_status(rep)
            style = (
                {"clean": "green", "tail": "yellow", "CORRUPT": "bold red"}[status] if self.colour else None
            )
            table.add_row(
                rep.partition.name,
                str(len(rep.segments)),
                str(sum(s.size for s in rep.segments)),
                str(sum(s.entries for s in rep.segments)),
                "" if rep.log_end_offset is None else str(rep.log_end_offset),
                str(sum(s.tail_bytes for s in rep.segments)),
                str(errors),
                status,
                style=style,
            )
        self.console.print(table)


class ValidateJsonRenderer:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def emit(self, obj: dict) -> None:
        self.out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")

    def render(self, result: Validation, summary: Summary) -> None:
        for f in result.all_findings():
            self.emit(
                {
                    "type": "finding",
                    "file": f.file,
                    "severity": f.severity.value,
                    "kind": f.kind,
                    "position": f.position,
                    "offset": f.offset,
                    "message": f.message,
                    "expected": f.expected,
                    "actual": f.actual,
                    "repairable": f.repairable,
                }
            )
        for rep in result.partitions:
            status, errors = partition_status(rep)
            self.emit(
                {
                    "type": "partition",
                    "partition": rep.partition.name,
                    "path": str(rep.partition.path),
                    "segments": len(rep.segments),
                    "bytes": sum(s.size for s in rep.segments),
                    "batches": sum(s.entries for s in rep.segments),
                    "logEndOffset": rep.log_end_offset,
                    "tailBytes": sum(s.tail_bytes for s in rep.segments),
                    "errors": errors,
                    "status": status,
                }
            )
        self.emit(
            {
                "type": "summary",
                "partitions": summary.partitions,
                "segments": summary.segments,
                "bytes": summary.bytes,
                "batches": summary.entries,
                "records": summary.records,
                "errors": summary.errors,
                "warnings": summary.warnings,
                "infos": summary.infos,
                "tailBytes": summary.tail_bytes,
                "corrupt": summary.corrupt,
                "allRepairable": summary.all_repairable,
                "verdict": verdict(summary),
            }
        )
