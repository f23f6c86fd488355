"""The service behind `ktool offsets-at`: each partition's offset at a time, offline, as Kafka's
GetOffsetShell asks a broker for it (`--time -2` earliest, `-1` latest, or a timestamp: the first record
whose timestamp is at or after it, ListOffsets' answer since 0.10.1). A partition of message format v0
has no timestamps: it is answered as the brokers before 0.10.1 answer (the newest segment last modified
at or before the time), with a note saying so."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.errors import InputError, KtoolError, os_error, path_error
from kafka_tools.format.shared_methods import FrozenSharedMethods
from kafka_tools.log.files.discover import is_log_dir, is_partition_dir, partition_dirs
from kafka_tools.log.files.views import PartitionLog, ReadNote, open_partition
from kafka_tools.log.reads.times import EARLIEST, LATEST, MAX_TIMESTAMP


@dataclass(init=False, slots=True, repr=False, eq=False)
class PartitionOffset(FrozenSharedMethods):
    log_dir: str
    topic: str
    partition: int
    offset: int | None  # None: no record at or after the time (GetOffsetShell prints nothing)
    error: str | None = None  # the partition could not be answered (one line, for stderr)
    exit_code: int = 0

    def __init__(
        self,
        log_dir: str,
        topic: str,
        partition: int,
        offset: int | None,
        error: str | None = None,
        exit_code: int = 0,
    ) -> None:
        object.__setattr__(self, "log_dir", log_dir)
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "partition", partition)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "error", error)
        object.__setattr__(self, "exit_code", exit_code)


def offsets_at(log_dir: str, time: int) -> Iterator[PartitionOffset | ReadNote]:
    """One PartitionOffset per partition directory of `log_dir` (topic, then partition number order),
    or of the one partition directory it names, and the ReadNotes (warnings) met on the way."""
    root = Path(log_dir)
    missing = path_error(root)
    if missing:
        raise InputError(missing)
    if is_partition_dir(root):
        found, log_dir = [root], str(root.parent)
    elif is_log_dir(root):
        found = partition_dirs(root)
    else:
        raise InputError(f"{log_dir}: not a Kafka log directory (no partition directories, no checkpoints)")
    parts = []
    for p in found:
        topic, _, number = p.name.rpartition("-")
        if number.isdigit():
            parts.append((topic, int(number), p))
    for topic, number, path in sorted(parts):
        try:
            part = open_partition(str(path))
            if time == EARLIEST:  # from the names and the checkpoint: no segment reader imported
                offset = part.log_start_offset
            elif time == LATEST:
                from kafka_tools.log.reads.locate import log_end_offset

                offset = log_end_offset(part)
            else:
                from kafka_tools.log.reads.read import NoTimestamps, largest_timestamp, offset_for_time

                if time == MAX_TIMESTAMP:
                    largest = yield from largest_timestamp(part)
                    offset = None if largest is None else (yield from offset_for_time(part, largest))
                else:
                    try:
                        offset = yield from offset_for_time(part, time)
                    except NoTimestamps:
                        offset = offset_by_segment_times(part, time)
                        yield ReadNote(
                            f"{part.path}: message format v0 has no timestamps: answered from the segments' "
                            "modification times, as brokers before 0.10.1 answer ListOffsets"
                        )
            for warning in part.warnings:
                yield ReadNote(warning)
            yield PartitionOffset(log_dir, topic, number, offset)
        except KtoolError as exc:
            yield PartitionOffset(log_dir, topic, number, None, str(exc), exc.exit_code)


def offset_by_segment_times(part: PartitionLog, time: int, now_ms: int | None = None) -> int | None:
    """What a broker before 0.10.1 answers for a time (KafkaApis.fetchOffsetsBefore, one offset): each
    segment stands for its base offset at its file's modification time, and a non-empty newest segment
    adds the log end offset at the present; the newest of these at or before `time`, None if none."""
    import os
    import time as clock

    from kafka_tools.log.reads.locate import log_end_offset

    def modified_ms(path) -> int:
        try:
            return os.stat(path).st_mtime_ns // 1_000_000
        except OSError as exc:
            raise os_error(path, exc) from None

    points = [(seg.base_offset, modified_ms(seg.log)) for seg in part.segments]
    if part.segments and os.path.getsize(part.segments[-1].log) > 0:
        points.append((log_end_offset(part), clock.time_ns() // 1_000_000 if now_ms is None else now_ms))
    for offset, at in reversed(points):
        if at <= time:
            return offset
    return None
