"""`ktool scan` output: the findings, a table per topic-partition, the committed offsets, the tables
written and a verdict; or JSON Lines. Also the one progress bar Spark's stages are folded into."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

from kafka_tools.format.plural import plural
from kafka_tools.pipeline.plan import IN_PROCESS, IN_PROCESS_BYTES, MiB
from kafka_tools.pipeline.results import CommittedOffset, PartitionSummary, ScanResult
from kafka_tools.render.findings import FindingsText, JsonLines, finding_object, verdict
from kafka_tools.render.lines import wants_colour


def _time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _offsets(p: PartitionSummary) -> str:
    return "" if p.first_offset is None else f"{p.first_offset}..{p.last_offset}"


def timing_line(result: ScanResult) -> str:
    rate = result.bytes / result.seconds / 1e6 if result.seconds else 0.0
    line = (
        f"scanned {plural(result.bytes, 'byte')} in {result.seconds:.1f} s ({rate:.0f} MB/s), "
        f"{plural(result.tasks, 'task')} on {result.master}"
    )
    if result.master == IN_PROCESS:
        line = (
            f"scanned {plural(result.bytes, 'byte')} in {result.seconds:.1f} s ({rate:.0f} MB/s) "
            f"in this process, without Spark (input at most {IN_PROCESS_BYTES // MiB} MiB; "
            "--master local[*] for Spark)"
        )
    if result.decoders:
        line += f", records decoded by {' and '.join(result.decoders)}"
    if result.retried:
        line += f" ({result.retried} failed task attempts run again)"
    if result.startup_seconds:
        line += f"; Spark start-up {result.startup_seconds:.1f} s"
    return line


class ScanTextRenderer(FindingsText):
    def render(self, result: ScanResult) -> None:
        self.findings(result.validation.all_findings())
        if result.partitions:
            self._partitions(result.partitions)
        if result.committed is not None:
            self._committed(result.committed)
        for t in result.tables:
            rows = "" if t.rows is None else f"{plural(t.rows, 'row')}, "
            self.console.print(f"wrote {t.name}: {rows}{t.fmt}, {t.path}", markup=False)
        self.verdict(result.summary)
        self.console.print(timing_line(result), style="dim" if self.colour else None, markup=False)

    def _partitions(self, partitions: list[PartitionSummary]) -> None:
        cols = [
            "partition",
            "segments",
            "bytes",
            "batches",
            "records",
            "offsets",
            "log end",
            "codecs",
            "errors",
            "status",
        ]
        table = self.table(cols, {"partition", "codecs", "status"})
        names = [p.name for p in partitions]
        for p in partitions:
            table.add_row(
                p.name if names.count(p.name) == 1 else p.path,
                str(p.segments),
                str(p.bytes),
                str(p.batches),
                str(p.records),
                _offsets(p),
                "" if p.log_end_offset is None else str(p.log_end_offset),
                ",".join(p.codecs),
                str(p.errors),
                p.status,
                style=self.status_style(p.status),
            )
        self.console.print(table)

    def _committed(self, committed: list[CommittedOffset]) -> None:
        if not committed:
            self.console.print(
                "no committed offsets in the __consumer_offsets partitions scanned", markup=False
            )
            return
        cols = ["group", "topic", "partition", "offset", "committed at", "metadata"]
        keys = [(c.group, c.topic, c.partition) for c in committed]
        copies = len(set(keys)) < len(keys)  # one partition's copies from several log dirs: say which
        table = self.table(
            cols + ["read from"] * copies, {"group", "topic", "committed at", "metadata", "read from"}
        )
        for c in committed:
            row = [
                c.group,
                c.topic,
                str(c.partition),
                str(c.offset),
                _time(c.commit_timestamp),
                c.metadata or "",
            ]
            table.add_row(*row, *[c.file] * copies)
        self.console.print(table)


class ScanJsonRenderer(JsonLines):
    def render(self, result: ScanResult) -> None:
        for f in result.validation.all_findings():
            self.emit(finding_object(f))
        for p in result.partitions:
            self.emit(
                {
                    "type": "partition",
                    "topic": p.topic,
                    "partition": p.partition,
                    "dir": p.name,
                    "path": p.path,
                    "segments": p.segments,
                    "bytes": p.bytes,
                    "batches": p.batches,
                    "records": p.records,
                    "firstOffset": p.first_offset,
                    "lastOffset": p.last_offset,
                    "logEndOffset": p.log_end_offset,
                    "tailBytes": p.tail_bytes,
                    "codecs": p.codecs,
                    "errors": p.errors,
                    "warnings": p.warnings,
                    "status": p.status,
                }
            )
        for c in result.committed or ():
            self.emit(
                {
                    "type": "commit",
                    "group": c.group,
                    "topic": c.topic,
                    "partition": c.partition,
                    "offset": c.offset,
                    "metadata": c.metadata,
                    "commitTimestamp": c.commit_timestamp,
                    "expireTimestamp": c.expire_timestamp,
                    "leaderEpoch": c.leader_epoch,
                    "logPartition": c.log_partition,
                    "logOffset": c.log_offset,
                    "file": c.file,
                }
            )
        for t in result.tables:
            self.emit({"type": "table", "name": t.name, "path": t.path, "format": t.fmt, "rows": t.rows})
        s = result.summary
        self.emit(
            {
                "type": "summary",
                "master": result.master,
                "tasks": result.tasks,
                "retriedTasks": result.retried,
                "decoders": ["c" if "C" in d else "python" for d in result.decoders],
                "partitions": len(result.partitions),
                "segments": s.segments,
                "bytes": result.bytes,
                "batches": sum(p.batches for p in result.partitions),
                "records": sum(p.records for p in result.partitions),
                "committedOffsets": None if result.committed is None else len(result.committed),
                "errors": s.errors,
                "warnings": s.warnings,
                "infos": s.infos,
                "tailBytes": s.tail_bytes,
                "corrupt": s.corrupt,
                "allRepairable": s.all_repairable,
                "verdict": verdict(s),
                "startupSeconds": None
                if result.startup_seconds is None
                else round(result.startup_seconds, 3),
                "scanSeconds": round(result.seconds, 3),
                "bytesPerSecond": round(result.bytes / result.seconds) if result.seconds else None,
            }
        )


# -- progress on a terminal --------------------------------------------------------------------------


@contextmanager
def starting(master: str, enabled: bool) -> Iterator[None]:
    """A spinner while Spark starts (only on a terminal)."""
    if not enabled:
        yield
        return
    from rich.console import Console

    with Console(file=sys.stderr).status(f"starting Spark ({master})", spinner="dots"):
        yield


@contextmanager
def scan_progress(enabled: bool) -> Iterator[Callable[[int, int, int, int], None] | None]:
    """One bar for every stage of the scan: tasks done of tasks known so far, and the segment bytes
    the finished tasks covered."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.filesize import decimal
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("scanning"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("tasks"),
        TextColumn("{task.fields[data]}"),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as bar:
        task = bar.add_task("scan", total=None, data="")

        def update(done: int, total: int, nbytes: int = 0, bytes_total: int = 0) -> None:
            data = f"{decimal(nbytes)} of {decimal(bytes_total)}" if bytes_total else ""
            bar.update(task, completed=done, total=max(total, done) or None, data=data)

        yield update


# -- questions and --sql ------------------------------------------------------------------------------


def _key_text(key: bytes | None) -> str | None:
    from kafka_tools.pipeline.questions import preview

    return preview(key, 1 << 16)


def answer_objects(answer) -> Iterator[dict]:
    """JSON Lines of a question's answer: one `match` per record, then a `summary`."""
    for m in answer.matches:
        yield {
            "type": "match",
            "topic": m["topic"],
            "partition": m["partition"],
            "offset": m["offset"],
            "timestamp": m["timestamp"],
            "key": _key_text(m["key"]),
            "valueSize": m["value_size"],
            "valuePreview": m["value_preview"],
            "producerId": m["producer_id"],
            "file": m["file"],
            "position": m["position"],
        }
    yield {
        "type": "summary",
        "master": answer.master,
        "tasks": answer.tasks,
        "matches": len(answer.matches),
        "truncated": answer.truncated,
        "segments": answer.segments,
        "segmentsSkippedByTopic": answer.segments_skipped_by_topic,
        "segmentsDecoded": answer.segments_decoded,
        "batches": answer.batches,
        "batchesDecoded": answer.batches_decoded,
        "bytes": answer.bytes,
        "scanSeconds": round(answer.seconds, 3),
    }


def _where(tasks: int, master: str) -> str:
    if master == IN_PROCESS:
        return f"{plural(tasks, 'range')} in this process, without Spark"
    return f"{tasks} tasks on {master}"


def render_answer(answer, as_json: bool, colour: bool | None) -> None:
    if as_json:
        out = JsonLines(sys.stdout)
        for obj in answer_objects(answer):
            out.emit(obj)
        return
    text = FindingsText(sys.stdout, wants_colour(sys.stdout, colour))
    cols = ["topic", "partition", "offset", "timestamp", "key", "value", "file", "position"]
    table = text.table(cols, {"topic", "timestamp", "key", "value", "file"})
    for m in answer.matches:
        table.add_row(
            m["topic"] or "",
            "" if m["partition"] is None else str(m["partition"]),
            str(m["offset"]),
            _time(m["timestamp"]),
            _key_text(m["key"]) or "",
            m["value_preview"] or "",
            m["file"],
            str(m["position"]),
        )
    if answer.matches:
        text.console.print(table)
    more = f" (the first {len(answer.matches)}: --limit)" if answer.truncated else ""
    text.console.print(
        f"{len(answer.matches)} matching records{more}; {answer.segments_decoded} of {answer.segments} "
        f"segments and {answer.batches_decoded} of {answer.batches} batches decoded "
        f"(the others stepped over by their headers), {answer.segments_skipped_by_topic} segments of "
        f"other topics left out; {_where(answer.tasks, answer.master)} in {answer.seconds:.1f} s",
        markup=False,
    )


def _cell(value) -> object:
    if isinstance(value, (bytes, bytearray)):
        return _key_text(bytes(value))
    if isinstance(value, list):
        return [_cell(v) for v in value]
    if hasattr(value, "asDict"):
        return {k: _cell(v) for k, v in value.asDict().items()}
    return value


def render_rows(
    columns: list[str], rows: list[tuple], as_json: bool, colour: bool | None, errors: int = 0
) -> None:
    """The rows of a --sql query: a table, or one `row` object per row (its columns under `row`, so a
    column named `type` cannot clash; bytes as UTF-8 text) and a `summary` with the scan's errors (the
    findings table holds them)."""
    if as_json:
        out = JsonLines(sys.stdout)
        for row in rows:
            out.emit({"type": "row", "row": {c: _cell(v) for c, v in zip(columns, row, strict=True)}})
        out.emit({"type": "summary", "rows": len(rows), "columns": list(columns), "errors": errors})
        return
    text = FindingsText(sys.stdout, wants_colour(sys.stdout, colour))
    table = text.table(columns, set(columns))
    for row in rows:
        table.add_row(*("" if v is None else str(_cell(v)) for v in row))
    text.console.print(table)
    text.console.print(f"{len(rows)} rows", markup=False)
