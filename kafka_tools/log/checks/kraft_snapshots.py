"""Checks of a KRaft snapshot (`<end offset>-<epoch>.checkpoint` under `__cluster_metadata-N`, and
`bootstrap.checkpoint`): what `dump-log` finds in it (CRCs, framing, every record decoded by its
schema), then the snapshot's own shape as Kafka's RecordsSnapshotWriter makes it: a SnapshotHeader
record first, a SnapshotFooter record last (a snapshot without one was cut while being written:
Kafka writes the footer last and renames the file from `.checkpoint.part` only after it), every
batch stamped with the snapshot's epoch, and the name's end offset (exclusive: the snapshot holds the
log's records below it) consistent with the log beside it."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.log.checks.findings import Finding, Severity
from kafka_tools.log.reads.dump import dump_file
from kafka_tools.log.reads.dump_events import DumpOptions, EntryEvent, ProblemEvent

SNAPSHOT_NAME = re.compile(r"^(?P<end>\d{20})-(?P<epoch>\d{10})\.checkpoint$")
_HEADER, _FOOTER = "SNAPSHOT_HEADER_RECORD", "SNAPSHOT_FOOTER_RECORD"  # as the dump names them


def snapshot_id(path: Path) -> tuple[int, int] | None:
    """(end offset, epoch) from a snapshot's file name; None for bootstrap.checkpoint and others."""
    m = SNAPSHOT_NAME.match(path.name)
    return (int(m["end"]), int(m["epoch"])) if m else None


def check_metadata_snapshot(path: Path) -> list[Finding]:
    """Every finding of one KRaft snapshot file, as errors."""
    name = str(path)
    findings: list[Finding] = []
    records: list[tuple[int, int, str]] = []  # (batch position, offset, type name) in file order
    epochs: set[int] = set()
    first_batch_position: int | None = None
    for event in dump_file(path, DumpOptions(deep_iteration=True, cluster_metadata_decoder=True)):
        if isinstance(event, ProblemEvent):
            p = event.problem
            findings.append(
                Finding(
                    file=name,
                    kind=p.kind.value,
                    severity=Severity.ERROR,
                    message=p.message,
                    position=p.position,
                    offset=p.offset,
                    repairable=False,
                )
            )
        elif isinstance(event, EntryEvent) and isinstance(event.entry, RecordBatch):
            batch = event.entry
            if first_batch_position is None:
                first_batch_position = batch.position
            epochs.add(batch.partition_leader_epoch)
            for record, decoded in event.with_decoded(event.records or []):
                shown = (decoded or {}).get("metadata", {})
                records.append((batch.position, record.offset, shown.get("type", "")))
    if any(f.position is not None and f.kind in _FRAMING for f in findings):
        return findings  # the file's end is lost: its last record says nothing of a footer
    if not records:
        findings.append(
            Finding(
                file=name,
                kind="snapshot-empty",
                severity=Severity.ERROR,
                message="no record: not even a SnapshotHeader",
                position=0,
            )
        )
        return findings
    position, offset, first = records[0]
    if first != _HEADER:
        findings.append(
            Finding(
                file=name,
                kind="snapshot-header-missing",
                severity=Severity.ERROR,
                message=f"the first record (offset {offset}) is a {first or 'record that does not decode'}, "
                "not a SnapshotHeaderRecord",
                position=position,
                offset=offset,
            )
        )
    position, offset, last = records[-1]
    if last != _FOOTER:
        findings.append(
            Finding(
                file=name,
                kind="snapshot-footer-missing",
                severity=Severity.ERROR,
                message=f"the last record (offset {offset}) is a "
                f"{last or 'record that does not decode'}, not a "
                "SnapshotFooterRecord: the snapshot was cut while being written",
                position=position,
                offset=offset,
            )
        )
    for position, offset, type_name in records[1:-1]:
        if type_name in (_HEADER, _FOOTER):
            findings.append(
                Finding(
                    file=name,
                    kind="snapshot-control-misplaced",
                    severity=Severity.ERROR,
                    message=f"a {type_name} at offset {offset}, inside the snapshot",
                    position=position,
                    offset=offset,
                )
            )
    findings += _id_findings(path, epochs, first_batch_position or 0)
    return findings


_FRAMING = {"truncated-header", "truncated-entry", "size-below-minimum", "zero-tail", "unknown-magic"}


def _id_findings(path: Path, epochs: set[int], position: int) -> list[Finding]:
    """The name's epoch against the batches' epochs, and the name's end offset against the log: the
    record at `end offset - 1`, when the log still holds it, was written in the snapshot's epoch."""
    sid = snapshot_id(path)
    if sid is None:
        return []
    end, epoch = sid
    out = []
    others = sorted(epochs - {epoch})
    if others:
        out.append(
            Finding(
                file=str(path),
                kind="snapshot-epoch-mismatch",
                severity=Severity.ERROR,
                message=f"the name says epoch {epoch}, batches carry partition leader epoch {others[0]}",
                position=position,
                expected=epoch,
                actual=others[0],
            )
        )
    if end == 0:
        return out
    found = _log_epoch_at(path.parent, end - 1)
    if found is not None and found[1] != epoch:
        log, log_epoch = found
        out.append(
            Finding(
                file=str(path),
                kind="snapshot-epoch-mismatch",
                severity=Severity.ERROR,
                message=f"the name says end offset {end} in epoch {epoch}, but {log.name} holds offset "
                f"{end - 1} "
                f"in epoch {log_epoch}",
                expected=epoch,
                actual=log_epoch,
            )
        )
    return out


def _log_epoch_at(directory: Path, offset: int) -> tuple[Path, int] | None:
    """(segment, partition leader epoch) of the batch holding `offset` in the partition's log, if any."""
    segments = sorted(directory.glob("*.log"))
    candidates = [s for s in segments if s.stem.isdigit() and int(s.stem) <= offset]
    if not candidates:
        return None
    seg = candidates[-1]
    for item in iter_log_entries(seg):
        if isinstance(item, Problem):
            return None
        if isinstance(item, RecordBatch) and item.base_offset <= offset <= item.last_offset:
            return seg, item.partition_leader_epoch
        if item.last_offset >= offset:
            return None
    return None
