"""The delete policy's generations and what a preview decides: `Rule` (which of Kafka's retention
rules a broker generation applies, and in which order; named by --broker-version or detected from the
partition's files) and the plan of each segment (`SegmentPlan`, `PartitionRetention`,
`RetentionReport`: what the renderers print). log/retention/preview.py walks the segments with them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kafka_tools.errors import UsageError
from kafka_tools.format.shared_methods import FrozenSharedMethods, SharedMethods
from kafka_tools.log.files.views import PartitionFiles
from kafka_tools.log.retention.config import SettingSources, TopicSettings
from kafka_tools.log.retention.segment_facts import magic_of


@dataclass(init=False, repr=False, eq=False)
class Rule(FrozenSharedMethods):
    """The delete policy of one broker generation."""

    name: str
    versions: str
    timestamps: bool  # largest record timestamp (else the file's mtime)
    high_watermark: bool  # never past the high watermark
    log_start_step: bool  # segments below the log start offset go too
    log_start_first: bool  # ... and that step runs before time and size

    def __init__(
        self,
        name: str,
        versions: str,
        timestamps: bool,
        high_watermark: bool,
        log_start_step: bool,
        log_start_first: bool,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "versions", versions)
        object.__setattr__(self, "timestamps", timestamps)
        object.__setattr__(self, "high_watermark", high_watermark)
        object.__setattr__(self, "log_start_step", log_start_step)
        object.__setattr__(self, "log_start_first", log_start_first)

    @property
    def basis(self) -> str:
        return "largest record timestamp" if self.timestamps else "segment file mtime"


RULES = {
    r.name: r
    for r in (
        Rule("mtime", "0.8-0.10.0", False, False, False, False),
        Rule("timestamp", "0.10.1-0.10.2", True, False, False, False),
        Rule("timestamp+log-start", "0.11.0.0", True, False, True, False),
        Rule("timestamp+high-watermark", "0.11.0.1-2.8", True, True, True, False),
        Rule("timestamp+high-watermark+log-start-first", "3.0+", True, True, True, True),
    )
}


def broker_version(text: str) -> tuple[int, ...]:
    """`--broker-version` as four numbers (`3.7` is (3, 7, 0, 0))."""
    if not re.fullmatch(r"\d+(\.\d+){0,3}", text.strip()):
        raise UsageError(f"--broker-version {text!r}: expected a version such as 0.9, 0.10.1 or 3.7")
    return (tuple(int(x) for x in text.strip().split(".")) + (0, 0, 0))[:4]


def rule_for_version(text: str) -> Rule:
    """The rule of a broker version (`0.9`, `0.10.1.1`, `2.8`, `3.7.0`)."""
    v = broker_version(text)
    if v < (0, 8, 0, 0):
        raise UsageError(f"--broker-version {text}: Kafka 0.7 logs are not previewed (no such policy here)")
    if v < (0, 10, 1, 0):
        return RULES["mtime"]
    if v < (0, 11, 0, 0):
        return RULES["timestamp"]
    if v < (0, 11, 0, 1):
        return RULES["timestamp+log-start"]
    if v < (3, 0, 0, 0):
        return RULES["timestamp+high-watermark"]
    return RULES["timestamp+high-watermark+log-start-first"]


def detect_rule(part: PartitionFiles) -> tuple[Rule, str]:
    """The generation that wrote the log, from its files: `.timeindex` files appeared in 0.10.1,
    magic 2 batches and `leader-epoch-checkpoint` in 0.11."""
    magic = None
    for seg in reversed(part.segments):
        magic = magic_of(seg.log)
        if magic is not None:
            break
    has_time_index = any(s.time_index is not None for s in part.segments)
    if magic == 2 or part.leader_epoch_checkpoint is not None:
        what = "magic 2 batches" if magic == 2 else "a leader-epoch-checkpoint"
        why = f"{what}: written by a 0.11+ broker (3.0+'s rule assumed; --broker-version names another)"
        return RULES["timestamp+high-watermark+log-start-first"], why
    if has_time_index:
        return RULES["timestamp"], f".timeindex files, message format magic {magic}: a 0.10.1-0.10.2 broker"
    shown = "none (empty log)" if magic is None else str(magic)
    return RULES["mtime"], f"no .timeindex files, message format magic {shown}: a 0.8-0.10.0 broker"


@dataclass(init=False, repr=False, eq=False)
class SegmentPlan(SharedMethods):
    base_offset: int
    file: str
    size: int
    mtime_ms: int
    active: bool
    largest_timestamp: int | None = None  # what the time rule compared (None: not looked at)
    timestamp_source: str | None = None  # timeindex, batches, mtime
    deleted_by: str | None = None  # time, size, log-start-offset
    reason: str = ""  # why it goes, or (for the first that stays) why it stays

    def __init__(
        self,
        base_offset: int,
        file: str,
        size: int,
        mtime_ms: int,
        active: bool,
        largest_timestamp: int | None = None,
        timestamp_source: str | None = None,
        deleted_by: str | None = None,
        reason: str = "",
    ) -> None:
        self.base_offset = base_offset
        self.file = file
        self.size = size
        self.mtime_ms = mtime_ms
        self.active = active
        self.largest_timestamp = largest_timestamp
        self.timestamp_source = timestamp_source
        self.deleted_by = deleted_by
        self.reason = reason


@dataclass(init=False, repr=False, eq=False)
class PartitionRetention(SharedMethods):
    partition: str
    path: str
    topic: str
    rule: Rule | None = None
    rule_why: str = ""
    settings: TopicSettings | None = None
    segments: list[SegmentPlan] = field(default_factory=list)
    log_start_before: int | None = None
    log_start_after: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    high_watermark_source: str = ""
    rolled: bool = False  # every segment goes: the broker rolls a new empty one first
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)  # states the broker's view cannot be had from
    unreadable: str | None = None
    compaction: object | None = None  # a CompactionPreview with --compaction

    def __init__(
        self,
        partition: str,
        path: str,
        topic: str,
        rule: Rule | None = None,
        rule_why: str = "",
        settings: TopicSettings | None = None,
        segments: list[SegmentPlan] | None = None,
        log_start_before: int | None = None,
        log_start_after: int | None = None,
        log_end_offset: int | None = None,
        high_watermark: int | None = None,
        high_watermark_source: str = "",
        rolled: bool = False,
        notes: list[str] | None = None,
        warnings: list[str] | None = None,
        inconsistent: list[str] | None = None,
        unreadable: str | None = None,
        compaction: object | None = None,
    ) -> None:
        self.partition = partition
        self.path = path
        self.topic = topic
        self.rule = rule
        self.rule_why = rule_why
        self.settings = settings
        self.segments = [] if segments is None else segments
        self.log_start_before = log_start_before
        self.log_start_after = log_start_after
        self.log_end_offset = log_end_offset
        self.high_watermark = high_watermark
        self.high_watermark_source = high_watermark_source
        self.rolled = rolled
        self.notes = [] if notes is None else notes
        self.warnings = [] if warnings is None else warnings
        self.inconsistent = [] if inconsistent is None else inconsistent
        self.unreadable = unreadable
        self.compaction = compaction

    @property
    def deleted(self) -> list[SegmentPlan]:
        return [s for s in self.segments if s.deleted_by]

    @property
    def bytes_freed(self) -> int:
        return sum(s.size for s in self.deleted)

    @property
    def records_freed(self) -> int:
        """Offsets below the new log start: the records freed (fewer in a compacted log)."""
        if self.log_start_before is None or self.log_start_after is None:
            return 0
        return max(0, self.log_start_after - self.log_start_before)


@dataclass(init=False, repr=False, eq=False)
class RetentionReport(SharedMethods):
    partitions: list[PartitionRetention]
    now_ms: int
    sources: SettingSources

    def __init__(self, partitions: list[PartitionRetention], now_ms: int, sources: SettingSources) -> None:
        self.partitions = partitions
        self.now_ms = now_ms
        self.sources = sources

    @property
    def unreadable(self) -> list[PartitionRetention]:
        return [p for p in self.partitions if p.unreadable]
