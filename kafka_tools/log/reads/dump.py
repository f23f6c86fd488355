"""The service behind `ktool dump-log`: turn any log-directory file into a stream of typed events.

Renderers (text or JSON Lines) print the events; this module decides what is in them and what counts
as a problem, so every output format says the same thing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from kafka_tools.format import accel
from kafka_tools.format.checksums import crc_finding
from kafka_tools.format.compression import Codec
from kafka_tools.format.kafka07 import Kafka07Message, iter_kafka07_entries
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of, partition_of
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.problems import Problem, ProblemKind
from kafka_tools.format.record_batch import ControlType, RecordBatch, control_record, records_until_damage
from kafka_tools.format.record_reader import Record, RecordDecodeError
from kafka_tools.format.segment import (
    MessageRun,
    RunBounds,
    breaks_recovery,
    iter_log_entries,
    looks_like_text,
)
from kafka_tools.log.files.dirs import is_newest_live_segment
from kafka_tools.log.files.side_files import (
    UNFINISHED,
    checkpoint_problem,
    read_side_file,
    readable_size,
    unknown_file_problem,
)
from kafka_tools.log.reads.dump_events import (
    DumpOptions,
    Entry,
    EntryEvent,
    Event,
    FileEnd,
    FileStart,
    ItemsEvent,
    MessageRunEvent,
    ProblemEvent,
)

# the renderer's maker of a v2 batch's lines: (path, batch, its records section decompressed or None)
LinesOf = Callable[[str, RecordBatch, bytes | None], bytes | None]


def dump_file(
    path: str | os.PathLike,
    options: DumpOptions,
    progress: Callable[[int], None] | None = None,
    *,
    record_lines: LinesOf | None = None,
) -> Iterator[Event]:
    """Events for one file, dispatched by its name as DumpLogSegments does, its content checked.
    `record_lines`: the renderer's maker of a v2 batch's lines from its bytes (path, batch, its records
    section decompressed or None); its non-control batches are then checked and counted, not decoded,
    and come with their lines (EntryEvent.lines). It comes from the caller's renderer: the options hold
    none of its functions."""
    p = Path(path)
    size = readable_size(p)
    kind = kind_of(p)
    name = str(path)
    yield FileStart(name, kind, base_offset_of(p), size)
    if kind in (FileKind.LOG, FileKind.KAFKA07, FileKind.METADATA_SNAPSHOT):
        yield from _dump_log(name, p, kind, size, options, progress, record_lines)
        return
    # The side files' readers: imported for them, not for the segments most dumps are of.
    from kafka_tools.format import checkpoints

    end = FileEnd(name, kind, size=size)
    try:
        if kind == FileKind.UNKNOWN:
            yield _problem_event(end, unknown_file_problem())
            return
        items, header, problems = read_side_file(p, kind, size, options.index_sanity)
        end.entries = len(items)
        yield ItemsEvent(name, kind, items, header)
        for problem in problems:
            yield _problem_event(end, problem)
    except checkpoints.CheckpointError as exc:
        yield _problem_event(end, checkpoint_problem(exc))
    finally:
        yield end


def _problem_event(end: FileEnd, problem: Problem) -> ProblemEvent:
    end.problems += 1
    return ProblemEvent(end.path, problem)


def _problem(
    end: FileEnd, position: int, kind: ProblemKind, message: str, offset: int | None = None
) -> ProblemEvent:
    return _problem_event(end, Problem(position, kind, message, offset))


def _decoded(mode: str, event: EntryEvent) -> list[dict]:
    # The internal topics' schemas (and KRaft's below) are imported by the dumps that decode them.
    from kafka_tools.log.reads.internal_records import decode_internal

    if isinstance(event.entry, RecordBatch):
        shown = event.records or []
    elif event.inner is not None:
        shown = event.inner
    else:
        shown = [event.entry]
    return [decode_internal(mode, getattr(r, "key", None), _value_of(r)) for r in shown]


def _value_of(r) -> bytes | None:
    return r.payload if isinstance(r, Kafka07Message) else r.value


def _decoded_metadata(event: EntryEvent, end: FileEnd) -> tuple[list[dict], list[Problem]]:
    """Each record of a KRaft batch decoded; an undecodable one is a problem (the others still shown)."""
    from kafka_tools.log.reads.internal_records import decode_cluster_metadata

    entry = event.entry
    assert isinstance(entry, RecordBatch)
    control = entry.is_control
    decoded: list[dict] = []
    problems: list[Problem] = []
    for r in event.records or []:
        obj, record, error = decode_cluster_metadata(r.key, r.value, control)
        decoded.append({"metadata": obj})
        if error is not None:
            what = "control record" if control else "metadata record"
            problems.append(
                Problem(
                    entry.position,
                    ProblemKind.METADATA_RECORD_UNDECODABLE,
                    f"{what} at offset {r.offset}: byte {error.position} of its value: {error.message}",
                    r.offset,
                )
            )
        elif record is not None and not record.known:
            end.unknown_records += 1
    return decoded, problems


def _kraft_control(entry, records: list[Record] | None) -> bool:
    """A control batch whose records are KRaft's own (not transaction markers, nor a type Kafka does not
    define, which stays `controlType: UNKNOWN(n)` as DumpLogSegments prints it)."""
    if not (isinstance(entry, RecordBatch) and entry.is_control and records):
        return False
    try:
        return all(control_record(r).type_id in _KRAFT_CONTROL for r in records)
    except RecordDecodeError:
        return False


_KRAFT_CONTROL = frozenset(ControlType) - {ControlType.ABORT, ControlType.COMMIT}


def _decoded_remote(event: EntryEvent) -> tuple[list[dict], list[Problem]]:
    """Each `__remote_log_metadata` record decoded; an undecodable one is a problem (the others shown)."""
    from kafka_tools.log.reads.internal_records import decode_remote_log_metadata

    entry = event.entry
    assert isinstance(entry, RecordBatch)
    decoded: list[dict] = []
    problems: list[Problem] = []
    for r in event.records or []:
        obj, error = decode_remote_log_metadata(r.value)
        decoded.append({"metadata": obj})
        if error is not None:
            problems.append(
                Problem(
                    entry.position,
                    ProblemKind.METADATA_RECORD_UNDECODABLE,
                    f"remote log metadata record at offset {r.offset}: byte {error.position} of its value: "
                    f"{error.message}",
                    r.offset,
                )
            )
    return decoded, problems


def _internal_mode(p: Path, options: DumpOptions, kind: FileKind | None = None) -> str | None:
    where = partition_of(p)
    topic = where[0] if where else None
    if options.cluster_metadata_decoder:  # asked for: before the other decoders' automatic choice
        return "metadata"
    if options.remote_log_metadata_decoder or (
        options.remote_log_metadata_decoder is None and topic == "__remote_log_metadata"
    ):
        return "remote"
    if (
        options.cluster_metadata_decoder is None
        and not (options.offsets_decoder or options.transaction_decoder)
        and (topic == "__cluster_metadata" or kind == FileKind.METADATA_SNAPSHOT)
    ):
        return "metadata"
    if options.offsets_decoder or (options.offsets_decoder is None and topic == "__consumer_offsets"):
        return "offsets"
    if options.transaction_decoder or (
        options.transaction_decoder is None and topic == "__transaction_state"
    ):
        return "transactions"
    return None


# How the batch a running broker is appending reads at the end of its newest segment.
def _dump_log(
    name: str,
    p: Path,
    kind: FileKind,
    size: int,
    options: DumpOptions,
    progress,
    record_lines: LinesOf | None = None,
) -> Iterator[Event]:
    end = FileEnd(name, kind, size=size)
    if size and looks_like_text(p):
        yield _problem(end, 0, ProblemKind.NOT_A_SEGMENT, "this is text, not a Kafka log segment")
        yield end
        return
    internal = _internal_mode(p, options, kind) if options.deep else None
    runs: RunBounds | None = None
    lines_of = None
    if kind == FileKind.KAFKA07:
        walk = iter_kafka07_entries(p, base_offset_of(p) or 0, end=options.max_bytes, progress=progress)
    else:
        plain = options.from_offset is None and options.to_offset is None and internal is None
        if options.message_runs and plain:
            runs = RunBounds(keep_data=True, max_bytes=1 << 20)  # a renderer's output stays small
        if plain and accel.fast("format_payload") is not None:
            lines_of = record_lines
        walk = iter_log_entries(p, end=options.max_bytes, progress=progress, runs=runs)
    last_offset: int | None = None
    recovery_point: int | None = None  # where the broker's recovery would cut: first bad CRC or frame
    in_flight = is_newest_live_segment(p)
    for item in walk:
        if type(item) is MessageRun:
            # Valid plain messages above `last_offset` (RunBounds.prev): nothing to report in them.
            end.entries += item.count
            end.records += item.count  # plain messages: one record each, --deep-iteration or not
            last_offset = runs.prev = item.last_offset
            yield MessageRunEvent(name, item.position, item.data, item.count)
            continue
        if isinstance(item, Problem):
            if in_flight and item.kind in UNFINISHED and recovery_point is None:
                break  # the batch a running broker is appending: not written yet, not damage
            end.problems += 1
            if breaks_recovery(item):
                if recovery_point is None:
                    recovery_point = item.position
                end.trailing_bytes = size - item.position
            if item.offset is not None and not _plausible_offset(item.offset, last_offset):
                item.offset = None  # read from garbage: naming it would mislead
            yield ProblemEvent(name, item)
            continue
        entry = item
        if not _in_range(entry, options):
            last_offset = entry.last_offset
            continue
        end.entries += 1
        event = EntryEvent(name, entry)
        problems = _entry_problems(entry, last_offset, kind)
        if recovery_point is None and breaks_recovery(entry):
            recovery_point = entry.position
        last_offset = entry.last_offset
        if runs is not None:
            runs.prev = last_offset  # a run's first message must lie above it, or it needs a problem
        if options.deep:
            damage: RecordDecodeError | None = None
            try:
                lines_batch = lines_of is not None and type(entry) is RecordBatch and not entry.is_control
                made = None
                if lines_batch:
                    made = made_lines(lines_of, name, entry)
                if made is not None:
                    event.lines, event.record_count = made
                elif isinstance(entry, RecordBatch):
                    # As DumpLogSegments iterates a batch: the records before a damaged one, then it.
                    shown, damage = records_until_damage(entry)
                    event.records = _filter_records(shown, options)
                elif runs is not None and entry.is_compressed and (found := entry.plain_inner_set()):
                    event.inner_set = found  # (no offset filter: runs are off with one)
                else:
                    if entry.is_compressed:
                        event.inner = [m for m in entry.inner_messages() if _offset_wanted(m.offset, options)]
                    event.records = _filter_records(entry.records(), options)
                if event.record_count is not None:
                    end.records += event.record_count
                else:
                    end.records += found[1] if event.inner_set else len(event.records)
                if internal == "metadata":
                    if isinstance(entry, RecordBatch):  # KRaft writes v2 batches only: v0/v1 stay as they are
                        event.decoded, found_problems = _decoded_metadata(event, end)
                        problems += found_problems
                elif internal == "remote":
                    if isinstance(entry, RecordBatch) and not entry.is_control:
                        event.decoded, found_problems = _decoded_remote(event)
                        problems += found_problems
                elif internal is not None:
                    event.decoded = _decoded(internal, event)
                if internal != "metadata" and _kraft_control(entry, event.records):
                    # KRaft's control records describe themselves: decoded whatever the decoder, as
                    # DumpLogSegments prints them (LeaderChange, SnapshotHeader, KRaftVersion, … fields).
                    event.decoded, found_problems = _decoded_metadata(event, end)
                    problems += found_problems
            except RecordDecodeError as exc:
                damage = exc
            if damage is not None:
                event.error = Problem(
                    damage.position, ProblemKind.RECORDS_UNDECODABLE, str(damage), entry.last_offset
                )
                if not any(p.kind == ProblemKind.UNKNOWN_CODEC for p in problems):
                    problems.append(event.error)
        elif isinstance(entry, RecordBatch):
            end.records += entry.count  # the batch header's record count: no record decoded
        elif getattr(entry, "is_compressed", False):
            end.records_counted = False  # a wrapper's inner messages are counted only by --deep
        else:
            end.records += 1
        yield event
        for problem in problems:
            end.problems += 1
            yield ProblemEvent(name, problem)
    limit = size if options.max_bytes is None else min(size, options.max_bytes)
    end.valid_bytes = limit if recovery_point is None else recovery_point
    yield end


def made_lines(lines_of: LinesOf, path: str, batch: RecordBatch) -> tuple[bytes, int] | None:
    """A batch's lines and record count: its records section (decompressed once when it is
    compressed) made into lines in C by `lines_of` (the renderer's), whose reader checks every record
    as `records()` would. None when one is damaged (they are then read one by one, the ones before it
    shown) or the renderer has no lines for it."""
    try:
        section = batch.records_section()
        lines = lines_of(path, batch, None if section is batch.payload else section)
    except RecordDecodeError:
        return None
    return None if lines is None else (lines, batch.records_count)


def _plausible_offset(offset: int, last_offset: int | None) -> bool:
    if offset < 0:
        return False
    return last_offset is None or last_offset < offset <= last_offset + (1 << 31)


def _entry_problems(entry: Entry, last_offset: int | None, kind: FileKind) -> list[Problem]:
    """What is wrong with one framed entry: its CRC, its codec, its place in the offset order."""
    problems: list[Problem] = []
    if not entry.is_valid:
        problems.append(
            Problem(
                entry.position,
                ProblemKind.CRC_MISMATCH,
                crc_finding(entry.crc, entry.computed_crc),
                entry.last_offset,
            )
        )
    if entry.codec not in _KNOWN_CODECS:
        problems.append(
            Problem(
                entry.position,
                ProblemKind.UNKNOWN_CODEC,
                f"unknown compression codec {entry.codec}",
                entry.last_offset,
            )
        )
    if last_offset is not None and entry.last_offset <= last_offset and kind != FileKind.KAFKA07:
        problems.append(
            Problem(
                entry.position,
                ProblemKind.OFFSETS_NOT_INCREASING,
                f"offset {entry.last_offset} follows {last_offset}",
                entry.last_offset,
            )
        )
    return problems


_KNOWN_CODECS = frozenset(int(c) for c in Codec)


def _offset_wanted(offset: int, options: DumpOptions) -> bool:
    if options.from_offset is not None and offset < options.from_offset:
        return False
    return options.to_offset is None or offset <= options.to_offset


def _in_range(entry: Entry, options: DumpOptions) -> bool:
    if options.from_offset is not None and entry.last_offset < options.from_offset:
        return False
    if options.to_offset is None:
        return True
    first = entry.base_offset if isinstance(entry, RecordBatch) else entry.last_offset
    if isinstance(entry, LegacyMessage) and entry.is_compressed:
        return True  # its first offset needs decompression: decide per record
    return first <= options.to_offset


def _filter_records(records: list[Record], options: DumpOptions) -> list[Record]:
    if options.from_offset is None and options.to_offset is None:
        return records
    return [r for r in records if _offset_wanted(r.offset, options)]
