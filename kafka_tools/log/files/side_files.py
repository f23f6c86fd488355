"""The files beside the segments (indexes, producer snapshots, checkpoints, meta.properties,
partition.metadata, quorum-state): read and checked once, for `ktool dump-log` (which prints their
entries) and `ktool validate` (which reports their problems). Kept apart from the dump's event
machinery so that validating a log dir's side files does not import it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_tools.errors import InputError, os_error
from kafka_tools.format.checksums import crc_finding
from kafka_tools.format.kinds import FileKind, base_offset_of
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.problems import Problem, ProblemKind
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.log.files.dirs import is_newest_live_segment

if TYPE_CHECKING:
    from kafka_tools.format import checkpoints, index

# The problems of a segment's last entry that a live broker may still be appending.
UNFINISHED = frozenset({ProblemKind.TRUNCATED_ENTRY, ProblemKind.TRUNCATED_HEADER})


def unknown_file_problem() -> Problem:
    return Problem(0, ProblemKind.NOT_A_SEGMENT, "unknown file type: not a file Kafka writes to a log dir")


def readable_size(p: Path) -> int:
    """The size of a regular file that can be opened, or an InputError naming why not."""
    try:
        size = p.stat().st_size
        if p.is_dir():
            raise InputError(
                f"{p}: is a directory (dump-log decodes files; `ktool validate` reads directories)"
            )
        if not p.is_file():
            raise InputError(f"{p}: not a regular file")
        with open(p, "rb"):
            pass
    except OSError as exc:
        if isinstance(exc, InputError):
            raise
        raise os_error(p, exc) from None
    return size


def checkpoint_problem(exc: checkpoints.CheckpointError) -> Problem:
    """A text file that does not parse: the line and why."""
    return Problem(0, ProblemKind.NOT_A_SEGMENT, f"line {exc.line}: {exc}")


def side_file_problems(path: str | os.PathLike, kind: FileKind | None = None) -> list[Problem]:
    """What is wrong in a side file, as `ktool dump-log` reports it (without its entries); `kind`:
    the file's, when the caller has decided it."""
    from kafka_tools.format.checkpoints import CheckpointError
    from kafka_tools.format.kinds import kind_of

    p = Path(path)
    size = readable_size(p)
    kind = kind_of(p) if kind is None else kind
    if kind == FileKind.UNKNOWN:
        return [unknown_file_problem()]
    try:
        return read_side_file(p, kind, size)[2]
    except CheckpointError as exc:
        return [checkpoint_problem(exc)]


def read_side_file(
    p: Path, kind: FileKind, size: int, index_sanity: bool = True
) -> tuple[list, dict, list[Problem]]:
    """The entries of a known file that is not a segment, its header fields, and its problems.
    Raises CheckpointError for a text file that does not parse."""
    from kafka_tools.format import checkpoints, index, snapshot

    base = base_offset_of(p) or 0
    problems: list[Problem] = []
    if kind == FileKind.OFFSET_INDEX:
        entries, tail = index.read_offset_index(p, base)
        problems += _index_tail_problems(size, tail, 8)
        problems += _index_order_problems(entries, lambda e: e.offset, 8, "offset")
        if index_sanity:
            problems += _index_against_log(p, entries)
        return entries, {"baseOffset": base, "zeroEntries": tail.zero_entries}, problems
    if kind == FileKind.TIME_INDEX:
        entries, tail = index.read_time_index(p, base)
        problems += _index_tail_problems(size, tail, 12)
        problems += _index_order_problems(entries, lambda e: e.timestamp, 12, "timestamp")
        return entries, {"baseOffset": base, "zeroEntries": tail.zero_entries}, problems
    if kind == FileKind.TXN_INDEX:
        entries, tail = index.read_txn_index(p)
        return entries, {}, _index_tail_problems(size, tail, 34)
    if kind == FileKind.PRODUCER_SNAPSHOT:
        snap = snapshot.read_snapshot(p)
        header = {"version": snap.version, "crc": snap.crc, "computedCrc": snap.computed_crc}
        if snap.problem:
            problems.append(Problem(0, ProblemKind.MALFORMED_ENTRY, snap.problem))
        elif not snap.is_valid:
            problems.append(Problem(2, ProblemKind.CRC_MISMATCH, crc_finding(snap.crc, snap.computed_crc)))
        return snap.entries, header, problems
    if kind == FileKind.OFFSET_CHECKPOINT:
        cp = checkpoints.read_offset_checkpoint(p)
        return cp.entries, {"version": cp.version}, []
    if kind == FileKind.LEADER_EPOCH_CHECKPOINT:
        cp = checkpoints.read_leader_epoch_checkpoint(p)
        return cp.entries, {"version": cp.version}, []
    if kind == FileKind.META_PROPERTIES:
        return list(checkpoints.read_properties(p).items()), {}, []
    if kind == FileKind.PARTITION_METADATA:
        return list(checkpoints.read_partition_metadata(p).items()), {}, []
    if kind == FileKind.QUORUM_STATE:
        return list(checkpoints.read_quorum_state(p).items()), {}, []
    if kind == FileKind.REMOTE_LOG_SNAPSHOT:
        return _remote_log_snapshot(p)
    raise ValueError(f"{p}: a {kind.value} file is a segment, not a side file")


def _index_tail_problems(size: int, tail: index.IndexTail, width: int) -> list[Problem]:
    from kafka_tools.format.index import gap_message

    problems = []
    if tail.gap.entries:
        where = tail.gap.first_slot * width
        problems.append(Problem(where, ProblemKind.ZERO_ENTRIES, gap_message(tail.gap, width)))
    if tail.trailing_bytes:
        message = f"file size {size} is not a multiple of the {width}-byte entry size"
        problems.append(Problem(size - tail.trailing_bytes, ProblemKind.MALFORMED_ENTRY, message))
    return problems


def _index_order_problems(entries: list, key: Callable, width: int, what: str) -> list[Problem]:
    for before, after in zip(entries, entries[1:], strict=False):
        if key(after) < key(before) or (what == "offset" and key(after) == key(before)):
            message = f"entry {after.slot}: {what} {key(after)} after {key(before)}"
            return [Problem(after.slot * width, ProblemKind.OFFSETS_NOT_INCREASING, message)]
    return []


def _index_against_log(p: Path, entries: list[index.OffsetIndexEntry]) -> list[Problem]:
    """Each entry must point at a batch whose last offset is the entry's (or, before KAFKA-7487, whose
    first message is) offset, as DumpLogSegments checks."""
    log = p.with_name(p.name.replace(".index", ".log"))
    if not log.is_file():
        return []
    positions = {e.position: e for e in entries}
    if not positions:
        return []
    problems: list[Problem] = []
    found: set[int] = set()
    in_flight = is_newest_live_segment(log)
    for item in iter_log_entries(log):
        if isinstance(item, Problem):
            if in_flight and item.kind in UNFINISHED:
                # entries for the batch being appended (0.9 writes the entry first): in flight
                entries = [e for e in entries if e.position < item.position]
            break
        e = positions.get(item.position)
        if e is None:
            continue
        found.add(item.position)
        ok = {item.last_offset}
        if isinstance(item, RecordBatch):
            ok.add(item.base_offset)
        elif isinstance(item, LegacyMessage) and item.is_compressed:
            try:
                ok.add(item.base_offset)
            except RecordDecodeError:
                pass
        if e.offset not in ok:
            message = (
                f"index entry {e.slot} says offset {e.offset} at position {e.position}, the log has "
                f"offset {item.last_offset} there"
            )
            problems.append(Problem(e.slot * 8, ProblemKind.MALFORMED_ENTRY, message, e.offset))
        if len(found) == len(positions):
            break
    for e in entries:
        if e.position not in found:
            message = (
                f"index entry {e.slot} points at position {e.position}, where no batch starts in {log.name}"
            )
            problems.append(Problem(e.slot * 8, ProblemKind.MALFORMED_ENTRY, message, e.offset))
    return problems


def _remote_log_snapshot(p: Path) -> tuple[list, dict, list[Problem]]:
    """A 3.6/3.7 `remote_log_snapshot`: its segments, its header, and where it stops making sense."""
    from kafka_tools.format.remote_log_snapshot import read_remote_log_snapshot

    snap = read_remote_log_snapshot(p)
    if snap is None:  # empty: Kafka creates the file before its first snapshot
        return [], {}, []
    header = {
        "version": snap.version,
        "metadataPartition": snap.metadata_partition,
        "metadataPartitionOffset": snap.metadata_partition_offset,
        "entries": snap.declared_entries,
    }
    problems = [
        Problem(
            sp.position,
            ProblemKind.METADATA_RECORD_UNDECODABLE if sp.undecodable else ProblemKind.MALFORMED_ENTRY,
            sp.message,
        )
        for sp in snap.problems
    ]
    return snap.segments, header, problems
