"""Questions a scan answers: which records have this key, this producer, a value holding these bytes,
a timestamp in this window — across every segment of a fleet's log dirs.

Plain Python, run by the tasks (no pyspark here). What can be decided without decoding is decided
first: a topic filter drops segments on the driver (`ScanPlan.only_topics`); a batch whose header says
it cannot match is stepped over without being decompressed or decoded — its max timestamp before
`--time-from`, another producer id than `--producer-id` (v2 headers carry both; a v1 message its
timestamp, which is the largest of its inner messages'; magic 0 and 0.7 have no timestamps and no
producer: they never match a time window or a producer). `--time-to` is checked record by record: a v2
record may be older than its batch's base timestamp, so no header bounds a batch's earliest record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_tools.errors import UsageError
from kafka_tools.format.entry_headers import FrameFault, iter_headers
from kafka_tools.log.reads.times import parse_time

PREVIEW = 64  # characters of a value shown


@dataclass(frozen=True)
class Question:
    keys: tuple[bytes, ...] = ()
    key_regex: re.Pattern | None = None  # over the key's bytes
    value_contains: bytes | None = None
    producer_id: int | None = None
    time_from: int | None = None  # ms, inclusive
    time_to: int | None = None  # ms, inclusive
    topics: tuple[str, ...] = ()

    @property
    def asked(self) -> bool:
        return bool(
            self.keys
            or self.key_regex is not None
            or self.value_contains is not None
            or self.producer_id is not None
            or self.time_from is not None
            or self.time_to is not None
        )

    def batch_may_match(self, entry) -> bool:
        """From the entry's header alone: can any of its records match?"""
        producer = getattr(entry, "producer_id", None)
        if self.producer_id is not None and producer != self.producer_id:
            return False
        if self.time_from is not None or self.time_to is not None:
            newest = getattr(entry, "max_timestamp", None)
            if newest is None:
                newest = getattr(entry, "timestamp", None)  # v1: the wrapper's is the largest
            if newest is None or newest < 0:
                return False  # no timestamps (magic 0, 0.7)
            if self.time_from is not None and newest < self.time_from:
                return False
        return True

    def record_matches(self, record) -> bool:
        if self.time_from is not None and record.timestamp < self.time_from:
            return False
        if self.time_to is not None and record.timestamp > self.time_to:
            return False
        key = record.key
        if self.keys and key not in self.keys:
            return False
        if self.key_regex is not None and (key is None or self.key_regex.search(key) is None):
            return False
        if self.value_contains is not None and (
            record.value is None or self.value_contains not in record.value
        ):
            return False
        return True


def make_question(
    keys: tuple[str, ...] = (),
    key_regex: str | None = None,
    value_contains: str | None = None,
    producer_id: int | None = None,
    time_from: str | None = None,
    time_to: str | None = None,
    topics: tuple[str, ...] = (),
) -> Question:
    pattern = None
    if key_regex is not None:
        try:
            pattern = re.compile(key_regex.encode())
        except re.error as exc:
            raise UsageError(f"--key-regex {key_regex!r}: {exc}") from None
    start = parse_time(time_from, "--time-from") if time_from is not None else None
    end = parse_time(time_to, "--time-to") if time_to is not None else None
    if start is not None and end is not None and start > end:
        raise UsageError(f"--time-from {time_from} is after --time-to {time_to}")
    return Question(
        keys=tuple(k.encode() for k in keys),
        key_regex=pattern,
        value_contains=value_contains.encode() if value_contains is not None else None,
        producer_id=producer_id,
        time_from=start,
        time_to=end,
        topics=tuple(topics),
    )


def preview(data: bytes | None, limit: int = PREVIEW) -> str | None:
    """Bytes as text a terminal can show: UTF-8 (undecodable bytes escaped), cut at `limit` chars."""
    if data is None:
        return None
    text = data[: limit * 4].decode("utf-8", "backslashreplace")
    return text if len(text) <= limit and len(data) <= limit * 4 else text[:limit] + "…"


@dataclass
class MatchCounts:
    """How much of a range the question made the task decode."""

    batches: int = 0
    decoded: int = 0  # batches whose records were decoded (the others: stepped over by their header)
    matches: int = 0


def match_chunks(spec, start: int, end: int | None, question: Question, sink=None) -> Iterator[dict]:
    """Column lists for the `matches` rows (without file/topic/partition) of the entries that start
    in [start, end) of a segment; `sink((file, start, counts))` once the range is done."""
    from kafka_tools.format.record_reader import RecordDecodeError
    from kafka_tools.pipeline.tasks import CHUNK_ROWS, iter_entries

    counts = MatchCounts()
    cols: dict[str, list] = _new()
    skipped = hopped(spec, start, end, question)
    if skipped is not None:
        counts.batches = skipped  # every batch older than the window: none decoded, none built
        if sink is not None:
            sink((spec.file, start, counts))
        return
    for entry in iter_entries(spec, start, end):
        counts.batches += 1
        if not question.batch_may_match(entry) or getattr(entry, "is_control", False):
            continue
        counts.decoded += 1
        try:
            records = entry.records()
        except RecordDecodeError:
            continue
        for r in records:
            if question.record_matches(r):
                cols["position"].append(entry.position)
                cols["offset"].append(r.offset)
                cols["timestamp"].append(r.timestamp)
                cols["key"].append(r.key)
                cols["value_size"].append(None if r.value is None else len(r.value))
                cols["value_preview"].append(preview(r.value))
                cols["producer_id"].append(getattr(entry, "producer_id", None))
        if len(cols["offset"]) >= CHUNK_ROWS:
            counts.matches += len(cols["offset"])
            yield cols
            cols = _new()
    if cols["offset"]:
        counts.matches += len(cols["offset"])
        yield cols
    if sink is not None:
        sink((spec.file, start, counts))


def hopped(spec, start: int, end: int | None, question: Question) -> int | None:
    """The entries of [start, end) when their headers alone show all of them older than `--time-from`
    (none to decode), else None."""
    if question.time_from is None or spec.kafka07:
        return None
    found = newest_timestamp(spec.path, start, end)
    if found is not None and found[1] < question.time_from:
        return found[0]
    return None


def newest_timestamp(path: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """(entries, newest timestamp) of the entries that start in [start, end), read from their headers
    alone (`iter_headers`: the decoder's framing and size checks); magic 0 entries have none (-1).
    None when anything is unusual (a size or magic the walk would question, a short file): the caller
    then walks the range entry by entry, damage and all."""
    entries, newest = 0, -1
    with open(path, "rb") as f:
        for header in iter_headers(f.fileno(), start, end):
            if type(header) is FrameFault:
                return None
            entries += 1
            if header.max_timestamp > newest:
                newest = header.max_timestamp
    return entries, newest


def _new() -> dict[str, list]:
    return {
        n: []
        for n in ("position", "offset", "timestamp", "key", "value_size", "value_preview", "producer_id")
    }


@dataclass
class Answer:
    """The records a question found, and what it cost."""

    question: Question
    matches: list[dict] = field(default_factory=list)  # sorted by topic, partition, offset
    segments: int = 0  # segments the question was asked of (after the topic filter)
    segments_skipped_by_topic: int = 0
    segments_decoded: int = 0  # segments with at least one batch decoded
    batches: int = 0
    batches_decoded: int = 0
    bytes: int = 0
    master: str = ""
    tasks: int = 0
    seconds: float = 0.0
    truncated: bool = False  # more matched than --limit


def match_order(row: dict) -> tuple:
    """Spark's `orderBy("topic", "partition", "offset", "file")`: nulls first."""
    return (
        row["topic"] is not None,
        row["topic"] or "",
        row["partition"] is not None,
        row["partition"] or 0,
        row["offset"],
        row["file"],
    )


def fold(answer: Answer, items: list[tuple]) -> None:
    """The per-range counts the tasks sent back (a range Spark ran twice counts once)."""
    seen: set = set()
    decoded_segments: set = set()
    for file, start, counts in items:
        if (file, start) in seen:
            continue
        seen.add((file, start))
        answer.batches += counts.batches
        answer.batches_decoded += counts.decoded
        if counts.decoded:
            decoded_segments.add(file)
    answer.segments_decoded = len(decoded_segments)
