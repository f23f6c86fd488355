"""The service behind `ktool offsets-at`: each partition's offset at a time, offline, as Kafka's
GetOffsetShell asks a broker for it (`--time -2` earliest, `-1` latest, or a timestamp: the first record
whose timestamp is at or after it, ListOffsets' answer since 0.10.1)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.errors import InputError, KtoolError
from kafka_tools.format.shared_methods import FrozenSharedMethods
from kafka_tools.log.dirs import is_log_dir, partition_dirs
from kafka_tools.log.partition_log import ReadNote, open_partition
from kafka_tools.log.times import EARLIEST, LATEST, MAX_TIMESTAMP


@dataclass(init=False, frozen=True, slots=True, repr=False, eq=False)
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
    and the ReadNotes (warnings) met on the way."""
    root = Path(log_dir)
    if not root.exists():
        raise InputError(f"{log_dir}: no such directory")
    if not is_log_dir(root):
        raise InputError(f"{log_dir}: not a Kafka log directory (no partition directories, no checkpoints)")
    parts = []
    for p in partition_dirs(root):
        topic, _, number = p.name.rpartition("-")
        if number.isdigit():
            parts.append((topic, int(number), p))
    for topic, number, path in sorted(parts):
        try:
            part = open_partition(str(path))
            if time == EARLIEST:  # from the names and the checkpoint: no segment reader imported
                offset = part.log_start_offset
            elif time == LATEST:
                from kafka_tools.log.locate import log_end_offset

                offset = log_end_offset(part)
            else:
                from kafka_tools.log.read import largest_timestamp, offset_for_time

                if time == MAX_TIMESTAMP:
                    largest = yield from largest_timestamp(part)
                    offset = None if largest is None else (yield from offset_for_time(part, largest))
                else:
                    offset = yield from offset_for_time(part, time)
            for warning in part.warnings:
                yield ReadNote(warning)
            yield PartitionOffset(log_dir, topic, number, offset)
        except KtoolError as exc:
            yield PartitionOffset(log_dir, topic, number, None, str(exc), exc.exit_code)
