"""`ktool truncate` output: each event of the run (log/repair/truncate_service.py) as text on stdout and one
line on stderr, or as a JSON Lines object of the shapes render/kinds_logs.py documents (TRUNCATE_KINDS)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from kafka_tools.format.plural import plural
from kafka_tools.log.checks.recovery import RecoveryPlan
from kafka_tools.log.repair.truncate_service import (
    Applied,
    Interrupted,
    Planned,
    Refused,
    Resumed,
    Summary,
    Undone,
    UndoSummary,
    Unreadable,
)
from kafka_tools.render.json_kinds import partition_fields


def plan_lines(plan: RecoveryPlan) -> list[str]:
    part = plan.partition
    if plan.unrepairable:
        f = plan.unrepairable[0]
        where = f"{f.file}:{f.position}" if f.position is not None else f.file
        more = f" (and {len(plan.unrepairable) - 1} more)" if len(plan.unrepairable) > 1 else ""
        return [
            f"{part.name}: cannot repair: {where}: {f.kind}: {f.message}{more}; the broker's recovery "
            "keeps this damage, so truncating would not repair it"
        ]
    if plan.is_noop:
        return [f"{part.name}: nothing to do (every segment is valid)"]
    lines = [f"{part.name}: the broker's recovery would:"]
    if plan.cut is not None:
        c = plan.cut
        lines.append(
            f"  truncate {c.segment.log} from {c.size} to {plural(c.keep_bytes, 'byte')} (cut {c.cut_bytes}):"
            f" {c.reason}"
        )
        if c.valid_after:
            lines.append(
                f"    losing {plural(len(c.valid_after), 'valid entry', 'valid entries')} after the damage "
                "(first at position "
                f"{c.valid_after[0]}): corruption in the middle, not a tail"
            )
    for seg in plan.deleted_segments:
        lines.append(f"  delete segment {seg.log.name} and its indexes (after the cut)")
    for seg, why in plan.rebuild_indexes:
        lines.append(
            f"  rebuild the indexes of {seg.log.name} (every {plural(plan.index_interval, 'byte')}): {why}"
        )
    for path, why in plan.deleted_snapshots:
        lines.append(f"  delete producer snapshot {path.name}: {why}")
    if plan.epoch_checkpoint_keep is not None:
        lines.append(
            f"  drop leader epochs past the new log end from {plan.partition.leader_epoch_checkpoint}"
        )
    if plan.new_log_end is not None:
        lines.append(f"  new log end offset: {plan.new_log_end}")
    return lines


def plan_json(plan: RecoveryPlan) -> dict:
    c = plan.cut
    return {
        "type": "plan",
        **partition_fields(plan.partition.path),
        "noop": plan.is_noop,
        "repair": plan.advice,
        "unrepairable": [f.fields() for f in plan.unrepairable],
        "truncate": None
        if c is None
        else {
            "file": str(c.segment.log),
            "size": c.size,
            "newSize": c.keep_bytes,
            "cutBytes": c.cut_bytes,
            "reason": c.reason,
            "validEntriesLost": len(c.valid_after),
        },
        "deleteSegments": [str(s.log) for s in plan.deleted_segments],
        "rebuildIndexes": [{"segment": str(s.log), "reason": why} for s, why in plan.rebuild_indexes],
        "deleteSnapshots": [str(p) for p, _ in plan.deleted_snapshots],
        "leaderEpochCheckpoint": None
        if plan.epoch_checkpoint_keep is None
        else {"file": str(plan.partition.leader_epoch_checkpoint), "keepEntries": plan.epoch_checkpoint_keep},
        "lostValidEntries": plan.lost_entries,
        "newLogEndOffset": plan.new_log_end,
        "indexIntervalBytes": plan.index_interval,
    }


def summary_json(s: Summary) -> dict:
    return {
        "type": "summary",
        "partitions": s.partitions,
        "applied": s.applied,
        "refused": s.refused,
        "unreadable": s.unreadable,
        "dryRun": s.dry_run,
    }


class TruncateRenderer:
    """Prints a run's events as they come: data on `out` (text, or JSON Lines with `as_json`), one line
    per refusal or problem through `say` (stderr)."""

    def __init__(self, out: TextIO, as_json: bool, say: Callable[[str], None]) -> None:
        self.out = out
        self.as_json = as_json
        self.say = say

    def _write(self, obj: dict, text: str | None) -> None:
        if self.as_json:
            from kafka_tools.render.json_lines import emit  # the one JSON Lines writer, for --json only

            emit(self.out, obj)
        elif text is not None:
            self.out.write(text + "\n")

    def event(self, e: object) -> None:
        if isinstance(e, Planned):
            self._write(plan_json(e.plan), "\n".join(plan_lines(e.plan)))
        elif isinstance(e, Refused):
            self.say(f"ktool: {e.reason}")
            self._write({"type": "refused", **partition_fields(e.path), "reason": e.reason}, None)
        elif isinstance(e, Unreadable):
            self.say(f"ktool: {e.line}")
            if self.as_json:
                self._write({"type": "unreadable", **partition_fields(e.path), "reason": e.reason}, None)
        elif isinstance(e, Applied):
            name = e.plan.partition.name
            text = (
                f"{name}: done; backup and manifest in {e.backup} (undo: ktool truncate --undo {e.manifest})"
            )
            obj = {
                "type": "applied",
                **partition_fields(e.plan.partition.path),
                "backup": str(e.backup),
                "manifest": str(e.manifest),
            }
            self._write(obj, text)
        elif isinstance(e, Resumed):
            text = (
                f"{e.partition.name}: finished the interrupted repair {e.manifest} "
                f"(undo: ktool truncate --undo {e.manifest})"
            )
            obj = {"type": "resumed", **partition_fields(e.partition.path), "manifest": str(e.manifest)}
            self._write(obj, text)
        elif isinstance(e, Interrupted):
            self.say(
                f"ktool: {e.partition.name}: the repair in {e.manifest} was interrupted; ktool truncate "
                f"without --dry-run finishes it first (or: ktool truncate --undo {e.manifest})"
            )
        elif isinstance(e, Summary):
            if e.dry_run and not self.as_json and e.targets:
                self.out.write("dry run: nothing changed\n")
            self._write(summary_json(e), None)
        elif isinstance(e, Undone):
            self._write({"type": "undo", "action": e.action}, e.action)
        elif isinstance(e, UndoSummary):
            self._write({"type": "summary", "undoActions": e.actions}, None)
        else:  # pragma: no cover - a new event needs its output here
            raise TypeError(f"no output for {type(e).__name__}")
