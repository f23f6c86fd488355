"""What a walk of a file reports when validity ends or one entry is wrong: the kinds (stable names in
JSON output), which of them end the walk, and the `Problem` itself, shared by every reader of format/."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kafka_tools.format.shared_methods import SharedMethods


class ProblemKind(str, Enum):
    """Why a walk stopped, or what is wrong with one entry. Stable names: they appear in JSON output."""

    TRUNCATED_HEADER = "truncated-header"  # fewer bytes left than a log header needs
    TRUNCATED_ENTRY = "truncated-entry"  # the size field points past the end of the file
    SIZE_BELOW_MINIMUM = "size-below-minimum"
    UNKNOWN_MAGIC = "unknown-magic"
    ZERO_TAIL = "zero-tail"  # the rest of the file is zeros (preallocated or grown before written)
    MALFORMED_ENTRY = "malformed-entry"  # the entry's frame is fine but its fields are not
    CRC_MISMATCH = "crc-mismatch"
    UNKNOWN_CODEC = "unknown-codec"
    RECORDS_UNDECODABLE = "records-undecodable"
    NOT_A_SEGMENT = "not-a-segment"
    OFFSETS_NOT_INCREASING = "offsets-not-increasing"
    METADATA_RECORD_UNDECODABLE = "metadata-record-undecodable"  # a KRaft record's value vs its schema
    ZERO_ENTRIES = "zero-entries"  # a side file's all-zero entries (a hole) before later entries


# Problems after which nothing more can be walked: the file's framing is lost from here on.
FATAL_KINDS = frozenset(
    {
        ProblemKind.TRUNCATED_HEADER,
        ProblemKind.TRUNCATED_ENTRY,
        ProblemKind.SIZE_BELOW_MINIMUM,
        ProblemKind.ZERO_TAIL,
        ProblemKind.NOT_A_SEGMENT,
    }
)


@dataclass(init=False, slots=True, repr=False, eq=False)
class Problem(SharedMethods):
    """What is wrong at a file position: its kind, the words, the entry's offset when known."""

    position: int
    kind: ProblemKind
    message: str
    offset: int | None = None
    # The broker's recovery accepts this entry all the same (its checksum matches: only a field the
    # checksum does not cover is wrong), so recovery does not cut here and truncation cannot repair it.
    kept_by_broker: bool = False

    def __init__(
        self,
        position: int,
        kind: ProblemKind,
        message: str,
        offset: int | None = None,
        kept_by_broker: bool = False,
    ) -> None:
        self.position = position
        self.kind = kind
        self.message = message
        self.offset = offset
        self.kept_by_broker = kept_by_broker

    @property
    def is_fatal(self) -> bool:
        return self.kind in FATAL_KINDS
