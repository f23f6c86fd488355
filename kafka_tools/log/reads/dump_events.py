"""What the dump service hands its renderers: the options it was given and one event per thing it
read (a file's start and end, an entry with what deep iteration found, a run of plain messages, a
problem, the items of a non-log file). Everything is decoded; renderers only format."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafka_tools.format.kafka07 import Kafka07Message
from kafka_tools.format.kinds import FileKind
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.plural import plural
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import Record
from kafka_tools.format.shared_methods import SharedMethods

Entry = RecordBatch | LegacyMessage | Kafka07Message


@dataclass(init=False, slots=True, repr=False, eq=False)
class DumpOptions(SharedMethods):
    deep_iteration: bool = False
    print_data_log: bool = False
    offsets_decoder: bool | None = None  # None: on for files under __consumer_offsets-N
    transaction_decoder: bool | None = None  # None: on for files under __transaction_state-N
    # None: on for files under __cluster_metadata-N and for KRaft `.checkpoint` snapshots
    cluster_metadata_decoder: bool | None = None
    remote_log_metadata_decoder: bool | None = None  # None: on for files under __remote_log_metadata-N
    max_bytes: int | None = None
    skip_record_metadata: bool = False
    from_offset: int | None = None
    to_offset: int | None = None
    index_sanity: bool = True  # compare .index entries with the .log beside them
    message_runs: bool = False  # plain v0/v1 messages as MessageRunEvents (renderers that take them)

    def __init__(
        self,
        deep_iteration: bool = False,
        print_data_log: bool = False,
        offsets_decoder: bool | None = None,
        transaction_decoder: bool | None = None,
        cluster_metadata_decoder: bool | None = None,
        remote_log_metadata_decoder: bool | None = None,
        max_bytes: int | None = None,
        skip_record_metadata: bool = False,
        from_offset: int | None = None,
        to_offset: int | None = None,
        index_sanity: bool = True,
        message_runs: bool = False,
    ) -> None:
        self.deep_iteration = deep_iteration
        self.print_data_log = print_data_log
        self.offsets_decoder = offsets_decoder
        self.transaction_decoder = transaction_decoder
        self.cluster_metadata_decoder = cluster_metadata_decoder
        self.remote_log_metadata_decoder = remote_log_metadata_decoder
        self.max_bytes = max_bytes
        self.skip_record_metadata = skip_record_metadata
        self.from_offset = from_offset
        self.to_offset = to_offset
        self.index_sanity = index_sanity
        self.message_runs = message_runs

    @property
    def deep(self) -> bool:
        # As in Kafka's DumpLogSegments, printing the data implies iterating into the batches.
        return self.deep_iteration or self.print_data_log


@dataclass(init=False, slots=True, repr=False, eq=False)
class FileStart(SharedMethods):
    path: str
    kind: FileKind
    base_offset: int | None
    size: int

    def __init__(self, path: str, kind: FileKind, base_offset: int | None, size: int) -> None:
        self.path = path
        self.kind = kind
        self.base_offset = base_offset
        self.size = size


@dataclass(init=False, slots=True, repr=False, eq=False)
class EntryEvent(SharedMethods):
    """One batch (v2), message or wrapper (v0/v1) or 0.7 message, with what deep iteration found."""

    path: str
    entry: Entry
    records: list[Record] | None = None  # deep iteration: the records inside
    inner: list | None = None  # deep iteration over v0/v1/0.7 wrappers: the inner messages
    # or, for a v0/v1 wrapper the C walk read (with DumpOptions.message_runs): its decompressed inner
    # set, as LegacyMessage.plain_inner_set gives it; `entry.inner_messages()` reads it one by one
    inner_set: tuple[bytes, int, int, int | None] | None = None
    error: Problem | None = None  # the records could not be decoded
    # `__consumer_offsets` / `__transaction_state` (deep iteration): each record's key and value decoded
    # by their schemas, one per record shown — `records` of a batch, `inner` of a wrapper, else the entry;
    # `__cluster_metadata` and KRaft snapshots: each record's value as {"type", "version", "data"}
    decoded: list[dict] | None = None

    def with_decoded(self, shown: list) -> Iterator[tuple[Any, dict | None]]:
        """Each record or message shown, with what the dump service decoded for it (None: nothing)."""
        return zip(shown, self.decoded or [None] * len(shown), strict=True)

    # with dump_file's record_lines: the records of a non-control batch were checked (they decode)
    # and counted, not decoded (`records` is None), and their lines made from the bytes
    record_count: int | None = None
    lines: Any = None  # bytes, or a view of a helper's slot (valid until the walk moves on)

    def __init__(
        self,
        path: str,
        entry: Entry,
        records: list[Record] | None = None,
        inner: list | None = None,
        inner_set: tuple[bytes, int, int, int | None] | None = None,
        error: Problem | None = None,
        decoded: list[dict] | None = None,
        record_count: int | None = None,
        lines: Any = None,
    ) -> None:
        self.path = path
        self.entry = entry
        self.records = records
        self.inner = inner
        self.inner_set = inner_set
        self.error = error
        self.decoded = decoded
        self.record_count = record_count
        self.lines = lines


@dataclass(init=False, slots=True, repr=False, eq=False)
class MessageRunEvent(SharedMethods):
    """Consecutive plain (uncompressed) v0/v1 messages, each valid, in offset order, none with a
    problem: their bytes, for a renderer to print in one go (`format.message_set.parse_message` reads
    them one by one). Only with `DumpOptions.message_runs`, and only from the C walk."""

    path: str
    position: int  # file position of data[0]
    data: bytes
    count: int

    def __init__(self, path: str, position: int, data: bytes, count: int) -> None:
        self.path = path
        self.position = position
        self.data = data
        self.count = count


@dataclass(init=False, slots=True, repr=False, eq=False)
class ProblemEvent(SharedMethods):
    path: str
    problem: Problem

    def __init__(self, path: str, problem: Problem) -> None:
        self.path = path
        self.problem = problem


@dataclass(init=False, slots=True, repr=False, eq=False)
class ItemsEvent(SharedMethods):
    """The content of a non-log file: index entries, snapshot entries, checkpoint lines, properties."""

    path: str
    kind: FileKind
    items: list
    header: dict = field(default_factory=dict)

    def __init__(self, path: str, kind: FileKind, items: list, header: dict | None = None) -> None:
        self.path = path
        self.kind = kind
        self.items = items
        self.header = {} if header is None else header


@dataclass(init=False, slots=True, repr=False, eq=False)
class FileEnd(SharedMethods):
    path: str
    kind: FileKind
    entries: int = 0
    records: int = 0
    valid_bytes: int = 0  # log files: bytes before the first bad CRC or broken frame (what recovery keeps)
    trailing_bytes: int = 0  # log files: bytes after the last entry that could be framed
    size: int = 0
    problems: int = 0
    unknown_records: int = 0  # KRaft records of a type or version newer than the schemas (shown raw)
    records_counted: bool = True  # False: compressed v0/v1 wrappers not opened (no --deep-iteration)

    def __init__(
        self,
        path: str,
        kind: FileKind,
        entries: int = 0,
        records: int = 0,
        valid_bytes: int = 0,
        trailing_bytes: int = 0,
        size: int = 0,
        problems: int = 0,
        unknown_records: int = 0,
        records_counted: bool = True,
    ) -> None:
        self.path = path
        self.kind = kind
        self.entries = entries
        self.records = records
        self.valid_bytes = valid_bytes
        self.trailing_bytes = trailing_bytes
        self.size = size
        self.problems = problems
        self.unknown_records = unknown_records
        self.records_counted = records_counted

    def notes(self) -> list[str]:
        """What stderr says of the file at its end (not problems), alike as text and as `note` objects."""
        said = []
        if self.size == 0:
            said.append(f"{self.path}: empty file, nothing to dump")
        if self.unknown_records:
            said.append(
                f"{self.path}: {plural(self.unknown_records, 'KRaft record')} of a type or version "
                "newer than the schemas ktool knows, shown raw (not a problem)"
            )
        return said


Event = FileStart | EntryEvent | MessageRunEvent | ProblemEvent | ItemsEvent | FileEnd
