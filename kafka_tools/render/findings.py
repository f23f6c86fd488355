"""`ktool validate` output: findings one a line, a summary table per partition, a verdict line; or JSON."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from kafka_tools.format.plural import plural
from kafka_tools.log.checks.findings import UNREADABLE, Finding, PartitionReport, Severity, Summary, status_of
from kafka_tools.log.checks.validate import Validation

if TYPE_CHECKING:
    from rich.console import Console

    from kafka_tools.render.tables import PlainConsole, TextTable

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
    if summary.unreadable:
        unread = "1 file" if summary.unreadable == 1 else f"{summary.unreadable} files"
        rest = _checked(summary) + _moving(summary)
        return f"incomplete: {unread} could not be read (exit 3); the rest: {rest}"
    return _checked(summary) + _moving(summary)


def _moving(summary: Summary) -> str:
    if not summary.in_flight:
        return ""
    moving = plural(summary.in_flight, "finding")
    return f"; {moving} in flight (a running broker's unfinished writes, not damage)"


def _checked(summary: Summary) -> str:
    if not summary.errors:
        return (
            f"clean: {plural(summary.segments, 'segment')}, {plural(summary.entries, 'batch', 'batches')}, "
            f"{plural(summary.bytes, 'byte')}"
        )
    if summary.all_repairable:
        return (
            f"corrupt: {plural(summary.errors, 'error')}, all in tails "
            f"({plural(summary.tail_bytes, 'byte')}) that "
            "`ktool truncate` repairs as the broker's recovery would"
        )
    if summary.refused:
        more = f"; {summary.needs_force} more need --force" if summary.needs_force else ""
        return (
            f"corrupt: {plural(summary.errors, 'error')}; `ktool truncate` cannot repair "
            f"{plural(summary.refused, 'partition')} (damage the broker's recovery keeps){more}"
        )
    return (
        f"corrupt: {plural(summary.errors, 'error')}, some in the middle of the data: `ktool truncate` "
        "would lose "
        "valid data and refuses without --force"
    )


def partition_status(rep: PartitionReport) -> tuple[str, int, int]:
    """Status, errors and unreadable files of a partition, counted as the summary counts them (an
    unreadable file is not an error of the data)."""
    findings = rep.all_findings()
    status, _ = status_of(findings)
    unreadable = sum(f.kind == UNREADABLE for f in findings)
    errors = sum(f.severity == Severity.ERROR and f.kind != UNREADABLE for f in findings)
    return status, errors, unreadable


def finding_object(f: Finding) -> dict:
    """A finding as a JSON Lines object (the same fields from `validate --json` and `scan --json`)."""
    return {"type": "finding", **f.fields()}


class FindingsText:
    """Findings one a line, tables and a verdict: rich on a terminal, plain ASCII when piped."""

    STATUS_STYLE = {"clean": "green", "tail": "yellow", "CORRUPT": "bold red", "unreadable": "bold red"}

    def __init__(self, out: TextIO, colour: bool) -> None:
        self.out = out
        self.colour = colour
        self._console: Console | PlainConsole | None = None

    @property
    def console(self) -> Console | PlainConsole:
        """Made on first use (a table or colour; plain lines are written directly): a segment file
        named alone draws no table and imports neither render/tables.py nor rich."""
        if self._console is None:
            from kafka_tools.render.tables import make_console

            self._console = make_console(self.out, self.colour)
        return self._console

    def findings(self, findings: Iterable[Finding]) -> None:
        for f in findings:
            if self.colour:
                self.console.print(finding_line(f), style=_STYLE[f.severity], markup=False)
            else:
                self.out.write(finding_line(f) + "\n")

    def table(self, columns: list[str], left: set[str]) -> TextTable:
        """Left-aligned names, right-aligned numbers; counts (all but errors, partitions and offsets),
        the rightmost first, are left out when the terminal is too narrow."""
        from kafka_tools.render.tables import TextTable

        right = [c for c in columns if c not in left]
        lesser = [c for c in reversed(right) if c not in ("errors", "partition", "offset")]
        return TextTable(columns, self.colour, right=right, drop=lesser)

    def status_style(self, status: str) -> str | None:
        return self.STATUS_STYLE[status] if self.colour else None

    def verdict(self, summary: Summary) -> None:
        if self.colour:
            self.console.print(verdict(summary), style="bold", markup=False)
        else:
            self.out.write(verdict(summary) + "\n")


class JsonLines:
    def __init__(self, out: TextIO) -> None:
        from kafka_tools.render.json_lines import dumps  # --json only: text output needs no json module

        self.out = out
        self._dumps = dumps

    def emit(self, obj: dict) -> None:
        self.out.write(self._dumps(obj) + "\n")


class ValidateTextRenderer(FindingsText):
    def render(self, result: Validation, summary: Summary) -> None:
        self.findings(result.all_findings())
        if result.partitions:
            self._table(result.partitions)
        self.verdict(summary)

    def _table(self, partitions: list[PartitionReport]) -> None:
        # Several log dirs (JBOD, or a tree of brokers) hold partitions of the same name: say whose.
        several = len({rep.partition.log_dir for rep in partitions}) > 1
        cols = ["partition", "segments", "bytes", "batches", "log end", "tail bytes", "errors", "status"]
        table = self.table((["log dir"] if several else []) + cols, {"log dir", "partition", "status"})
        for rep in partitions:
            status, errors, _ = partition_status(rep)
            table.add_row(
                *([str(rep.partition.log_dir)] if several else []),
                rep.partition.name,
                str(len(rep.segments)),
                str(sum(s.size for s in rep.segments)),
                str(sum(s.entries for s in rep.segments)),
                "" if rep.log_end_offset is None else str(rep.log_end_offset),
                str(sum(s.tail_bytes for s in rep.segments)),
                str(errors),
                status,
                style=self.status_style(status),
            )
        self.console.print(table)


class ValidateJsonRenderer(JsonLines):
    def render(self, result: Validation, summary: Summary, missing: Iterable[str] = ()) -> None:
        from kafka_tools.render.json_kinds import missing_object, partition_fields  # for --json only

        for path in missing:
            self.emit(missing_object(path))
        for f in result.all_findings():
            self.emit(finding_object(f))
        for rep in result.partitions:
            status, errors, unreadable = partition_status(rep)
            self.emit(
                {
                    "type": "partition",
                    **partition_fields(rep.partition.path),
                    "logDir": str(rep.partition.log_dir),
                    "segments": len(rep.segments),
                    "bytes": sum(s.size for s in rep.segments),
                    "batches": sum(s.entries for s in rep.segments),
                    "logEndOffset": rep.log_end_offset,
                    "tailBytes": sum(s.tail_bytes for s in rep.segments),
                    "errors": errors,
                    "unreadable": unreadable,
                    "status": status,
                    "repair": rep.advice,
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
                "inFlight": summary.in_flight,
                "tailBytes": summary.tail_bytes,
                "corrupt": summary.corrupt,
                "allRepairable": summary.all_repairable,
                "unreadable": summary.unreadable,
                "verdict": verdict(summary),
            }
        )
