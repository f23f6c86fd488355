"""`ktool replicas diff` output: a table of the replicas and a line per comparison and truncation
(text), or JSON Lines (`replica`, `comparison`, `truncation`, `summary` objects)."""

from __future__ import annotations

from typing import TextIO

from kafka_tools.compact_json import dumps
from kafka_tools.errors import KtoolError
from kafka_tools.format.checkpoints import EpochEntry
from kafka_tools.format.plural import plural
from kafka_tools.log.replicas.diff import DivergentRange, PairDiff, RangeStats, ReplicasReport, Truncation
from kafka_tools.render.json_kinds import error_object
from kafka_tools.render.tables import TextTable, make_console


def _epochs_json(history: list[EpochEntry] | None) -> list[dict] | None:
    if history is None:
        return None
    return [{"epoch": e.epoch, "startOffset": e.start_offset} for e in history]


def _range_json(report: ReplicasReport, r: DivergentRange, a: int, b: int) -> dict:
    return {
        "startOffset": r.start,
        "endOffset": r.end,
        "offsets": r.end - r.start,
        "sides": [
            {"replica": report.replicas[i].label, "records": s.records, "bytes": s.bytes}
            for i, s in zip((a, b), r.sides, strict=True)
        ],
    }


def summary_of(report: ReplicasReport) -> dict:
    firsts = [p.first_difference for p in report.pairs if p.first_difference is not None]
    return {
        "type": "summary",
        "topic": report.topic,
        "partition": report.partition,
        "replicas": len(report.replicas),
        "status": report.status,
        "firstDifference": min(firsts) if firsts else None,
        "ranking": [report.replicas[i].label for i in report.ranking],
        "newEpoch": report.new_epoch,
        "entriesCompared": sum(p.entries_compared for p in report.pairs),
    }


def unreadable_objects(paths: list[str], exc: KtoolError) -> list[dict]:
    """A comparison that could not begin (a replica missing or damaged where it must be read): the
    error, as stderr says it, and a summary with status `unreadable`."""
    named = next((p for p in paths if p in str(exc)), paths[0])
    summary = {
        "type": "summary",
        "topic": None,
        "partition": None,
        "replicas": len(paths),
        "status": "unreadable",
        "firstDifference": None,
        "ranking": [],
        "newEpoch": None,
        "entriesCompared": 0,
    }
    return [error_object(named, exc), summary]


class ReplicasJsonRenderer:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def emit(self, obj: dict) -> None:
        self.out.write(dumps(obj) + "\n")

    def replicas(self, report: ReplicasReport) -> None:
        rank = {i: n + 1 for n, i in enumerate(report.ranking)}
        for i, r in enumerate(report.replicas):
            self.emit(
                {
                    "type": "replica",
                    "replica": r.label,
                    "path": r.path,
                    "brokerId": r.broker_id,
                    "logStartOffset": r.log_start,
                    "logEndOffset": r.log_end,
                    "highWatermark": r.high_watermark,
                    "recoveryPoint": r.recovery_point,
                    "leaderEpochs": _epochs_json(r.checkpoint_epochs),
                    "batchEpochs": _epochs_json(r.batch_epochs),
                    "lastEpoch": r.last_epoch,
                    "magic": r.magic,
                    "segments": r.segments,
                    "inFlight": r.in_flight,
                    "rank": rank[i],
                }
            )
        for p in report.pairs:
            self.emit(
                {
                    "type": "comparison",
                    "replicas": [report.replicas[p.a].label, report.replicas[p.b].label],
                    "status": p.status,
                    "method": p.method,
                    "commonStartOffset": p.common_start,
                    "commonEndOffset": p.common_end,
                    "firstDifference": p.first_difference,
                    "epochsPartAt": p.epochs_part_at,
                    "ranges": [_range_json(report, r, p.a, p.b) for r in p.ranges],
                    "entriesCompared": p.entries_compared,
                }
            )

    def truncation(self, report: ReplicasReport, t: Truncation) -> None:
        self.emit(
            {
                "type": "truncation",
                "leader": report.replicas[t.leader].label,
                "follower": report.replicas[t.follower].label,
                "rule": t.rule,
                "truncateTo": t.truncate_to,
                "startOverAt": t.start_over_at,
                "lostStartOffset": t.lost_start,
                "lostEndOffset": t.lost_end,
                "lostOffsets": t.lost_offsets,
                "lostRecords": t.lost.records,
                "lostBytes": t.lost.bytes,
                "steps": t.steps,
                "divergentAfter": [_range_json(report, r, *_sides(report, t)) for r in t.divergent_after],
            }
        )

    def summary(self, report: ReplicasReport) -> None:
        self.emit(summary_of(report))


def _sides(report: ReplicasReport, t: Truncation) -> tuple[int, int]:
    """The replica order of a pair's ranges (the lower index first)."""
    return min(t.leader, t.follower), max(t.leader, t.follower)


def _none(value: object) -> str:
    return "-" if value is None else str(value)


def _stats(label: str, s: RangeStats) -> str:
    records = "? records" if s.records is None else plural(s.records, "record")
    return f"{label}: {records}, {plural(s.bytes, 'byte')}"


def _offsets(start: int, end: int) -> str:
    return f"offset {start}" if end - start == 1 else f"offsets {start}..{end - 1}"


class ReplicasTextRenderer:
    def __init__(self, out: TextIO, colour: bool) -> None:
        self.out = out
        self.colour = colour
        self.console = make_console(out, colour)

    def _line(self, text: str, style: str | None = None) -> None:
        if self.colour:
            self.console.print(text, markup=False, highlight=False, style=style)
        else:
            self.out.write(text + "\n")

    def replicas(self, report: ReplicasReport) -> None:
        table = TextTable(
            [
                "rank",
                "replica",
                "log start",
                "log end",
                "high watermark",
                "recovery point",
                "last epoch",
                "epochs",
                "segments",
            ],  # fmt: skip
            self.colour,
            title=f"{report.topic}-{report.partition}: {plural(len(report.replicas), 'replica')}",
            right=(
                "rank",
                "log start",
                "log end",
                "high watermark",
                "recovery point",
                "last epoch",
                "segments",
            ),  # fmt: skip
            drop=("epochs", "recovery point", "segments"),
        )
        rank = {i: n + 1 for n, i in enumerate(report.ranking)}
        for i, r in enumerate(report.replicas):
            epochs = " ".join(f"{e.epoch}@{e.start_offset}" for e in r.epochs) or "-"
            table.add_row(
                str(rank[i]), r.label + (" (in flight)" if r.in_flight else ""), str(r.log_start),
                str(r.log_end), _none(r.high_watermark), _none(r.recovery_point), _none(r.last_epoch),
                epochs, str(r.segments),
            )  # fmt: skip
        self.console.print(table)
        for p in report.pairs:
            self._pair(report, p)

    def _pair(self, report: ReplicasReport, p: PairDiff) -> None:
        a, b = report.replicas[p.a].label, report.replicas[p.b].label
        how = f"[{p.method}, {plural(p.entries_compared, 'batch', 'batches')} read]"
        if p.status == "identical":
            self._line(f"{a} and {b}: identical, offsets {p.common_start}..{p.common_end - 1} {how}")
        elif p.status == "prefix" and p.common_end <= p.common_start:
            self._line(f"{a} and {b}: one of them holds no record (an empty replica) {how}")
        elif p.status == "prefix":
            self._line(
                f"{a} and {b}: the same records where both hold them (offsets {p.common_start}.."
                f"{p.common_end - 1}); the rest is on one side only (a lagging replica) {how}"
            )
        elif p.status == "no-overlap":
            self._line(f"{a} and {b}: no offset in common, nothing to compare")
        else:
            self._line(f"{a} and {b}: diverged at offset {p.first_difference} {how}", "bold red")
            if p.epochs_part_at is not None:
                ha, hb = (
                    " ".join(f"{e.epoch}@{e.start_offset}" for e in report.replicas[i].epochs)
                    for i in (p.a, p.b)
                )
                self._line(
                    f"  leader-epoch histories part at offset {p.epochs_part_at} ({a}: {ha}; {b}: {hb})"
                )
            for r in p.ranges:
                self._line(
                    f"  {_offsets(r.start, r.end)} differ ({_stats(a, r.sides[0])}; {_stats(b, r.sides[1])})"
                )

    def truncation(self, report: ReplicasReport, t: Truncation) -> None:
        lead, follow = report.replicas[t.leader].label, report.replicas[t.follower].label
        if t.start_over_at is not None:
            what = f"loses its whole log and starts over at {t.start_over_at}"
        else:
            what = f"truncates to {t.truncate_to}"
        if t.lost_offsets:
            what += f", losing {_offsets(t.lost_start, t.lost_end)} ({_stats('', t.lost)[2:]})"
        else:
            what += ", losing nothing"
        style = "yellow" if t.lost_offsets else None
        self._line(f"if {lead} leads: {follow} {what} [{t.rule}: {'; '.join(t.steps)}]", style)
        for r in t.divergent_after:
            a, b = (report.replicas[i].label for i in _sides(report, t))
            self._line(
                f"  {_offsets(r.start, r.end)} stay different after that, silently "
                f"({_stats(a, r.sides[0])}; {_stats(b, r.sides[1])})",
                "bold red",
            )

    def records_header(self, report: ReplicasReport, t: Truncation) -> None:
        lead, follow = report.replicas[t.leader].label, report.replicas[t.follower].label
        self._line(f"records {follow} would lose if {lead} leads ({_offsets(t.lost_start, t.lost_end)}):")

    def summary(self, report: ReplicasReport) -> None:
        first = report.replicas[report.ranking[0]]
        epoch = "-" if first.last_epoch is None else first.last_epoch
        self._line(
            f"KIP-966 would keep {first.label} (last epoch {epoch}, log end {first.log_end}); "
            f"status: {report.status}"
        )
