"""A question's `matches` as Arrow batches, its record filters applied to columns built in C.

The header hop stays first (questions.py): a range older than `--time-from` is stepped over from its
headers alone, and each entry whose header says it cannot match (another producer, too old, no
timestamps, a control batch) is neither decompressed nor decoded — `Gate.admit` asks
`Question.batch_may_match` of it. The other entries' records go into the C builder of the `records`
table (record_columns.record_batches), and the record filters run on its columns with pyarrow.compute
before any Python row exists: the time window, the keys (a set), the value's bytes (a substring of
the binary column, found by `contains`: no decoding). `--key-regex` keeps Python's `re` semantics
(RE2, pyarrow's engine, differs: backreferences, lookarounds, bytes that are not UTF-8): the pattern
runs once per distinct key of the rows the other filters left, its answer spread back over the rows
by their dictionary index. Only matched rows reach Python, as the answer's dicts; `value_preview` is
made in pyarrow (in Python only for values whose first 256 bytes are not valid UTF-8).

`questions.match_chunks`, a Record object per record and `Question.record_matches`, is the reference
this is tested equal to, row for row and count for count (tests/pipeline/test_question_columns.py).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from functools import cache

from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.segment import MessageRun
from kafka_tools.pipeline import record_columns, tables
from kafka_tools.pipeline.questions import PREVIEW, MatchCounts, Question, hopped, match_chunks, preview
from kafka_tools.pipeline.tasks import CHUNK_BYTES, CHUNK_ROWS, SegmentSpec


def match_batches(
    spec: SegmentSpec,
    start: int,
    end: int | None,
    question: Question,
    sink: Callable[[tuple], None] | None = None,
    max_rows: int = CHUNK_ROWS,
    max_bytes: int = CHUNK_BYTES,
) -> Iterator:
    """`match_chunks` as pyarrow RecordBatches of the `matches` schema (file, topic and partition on
    every row), none empty; `sink((file, start, counts))` once the range is done. Without the C
    builder, `match_chunks`' columns as Arrow."""
    if not record_columns.available():
        for cols in match_chunks(spec, start, end, question, sink):
            yield tables.arrow_batch(tables.MATCHES, cols, constants=spec.where)
        return
    counts = MatchCounts()
    skipped = hopped(spec, start, end, question)
    if skipped is not None:
        counts.batches = skipped
    else:
        gate = Gate(question, counts)
        for batch in record_columns.record_batches(spec, start, end, max_rows, max_bytes, admit=gate.admit):
            found = gate.matches(batch)
            if found is not None and found.num_rows:
                counts.matches += found.num_rows
                yield found
    if sink is not None:
        sink((spec.file, start, counts))


class Gate:
    """Which entries a question decodes (their headers), and which of their records it keeps (their
    columns). What it learns from the headers of a batch's entries — each v2 batch's producer id, the
    runs of plain messages — is used and forgotten batch by batch."""

    def __init__(self, question: Question, counts: MatchCounts) -> None:
        self.question = question
        self.counts = counts
        self.producers: dict[int, int] = {}  # v2 batch position -> producer id
        self.runs: list[tuple[int, int]] = []  # (position, messages) of the runs admitted
        self.timed = question.time_from is not None or question.time_to is not None
        # A plain message's own header admits it when its timestamp is at least this (a run is admitted
        # by its newest message: its older ones are sorted out by their rows).
        self.lowest = max(0, question.time_from) if question.time_from is not None else 0
        self.pattern = None if question.key_regex is None else question.key_regex.search
        self.keys = None
        self.needle = question.value_contains

    def admit(self, entry) -> bool:
        """`match_chunks`' test of an entry's header, counted as it counts."""
        counts = self.counts
        if type(entry) is RecordBatch:  # `batch_may_match` of a v2 header, inline: it runs per batch
            counts.batches += 1
            q = self.question
            if entry.is_control or (q.producer_id is not None and entry.producer_id != q.producer_id):
                return False
            if self.timed and (entry.max_timestamp < 0 or entry.max_timestamp < self.lowest):
                return False
            counts.decoded += 1
            self.producers[entry.position] = entry.producer_id
            return True
        if type(entry) is MessageRun:  # its plain messages, each an entry of its own there
            counts.batches += entry.count
            if not self.question.batch_may_match(entry):
                return False
            if self.timed:
                self.runs.append((entry.position, entry.count))  # decoded: counted from the rows
            else:
                counts.decoded += entry.count
            return True
        counts.batches += 1
        if not self.question.batch_may_match(entry) or getattr(entry, "is_control", False):
            return False
        counts.decoded += 1
        producer = getattr(entry, "producer_id", None)
        if producer is not None:
            self.producers[entry.position] = producer
        return True

    def matches(self, batch):
        """The `matches` rows of one `records` batch (whose entries were admitted since the last)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        q = self.question
        timestamps = batch.column("timestamp")
        mask = None

        def both(a, b):
            return b if a is None else pc.and_(a, b)

        if self.runs:
            in_run = self._run_rows(batch.column("batch_position"), batch.num_rows)
            header = pc.or_(pc.invert(in_run), pc.greater_equal(timestamps, self.lowest))
            self.counts.decoded += pc.sum(pc.and_(in_run, header)).as_py() or 0
            mask = header
            self.runs = []
        if q.time_from is not None:
            mask = both(mask, pc.greater_equal(timestamps, q.time_from))
        if q.time_to is not None:
            mask = both(mask, pc.less_equal(timestamps, q.time_to))
        if q.keys:
            if self.keys is None:
                self.keys = pa.array(list(q.keys), pa.binary())
            mask = both(mask, pc.is_in(batch.column("key"), value_set=self.keys))
        if self.needle is not None:
            mask = both(mask, contains(batch.column("value"), self.needle))
        if mask is not None:
            batch = batch.filter(mask)  # null (a null key or value): dropped
        if self.pattern is not None and batch.num_rows:
            keys = batch.column("key").dictionary_encode()
            found = [k is not None and self.pattern(k) is not None for k in keys.dictionary.to_pylist()]
            batch = batch.filter(pc.take(pa.array(found, pa.bool_()), keys.indices))
        producers, self.producers = self.producers, {}
        if not batch.num_rows:
            return None
        return self._rows(batch, producers)

    def _run_rows(self, positions, rows: int):
        """Which rows came from the runs admitted: each run's rows are `count` rows from the first with
        its position (rows are in file order)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        flags = bytearray(rows)
        at = 0
        for position, count in self.runs:
            first = pc.index(positions.slice(at), position).as_py()
            if first < 0:
                continue  # its messages could not be read: no rows
            first += at
            flags[first : first + count] = b"\x01" * count
            at = first + count
        return pc.not_equal(pa.Array.from_buffers(pa.uint8(), rows, [None, pa.py_buffer(flags)]), 0)

    def _rows(self, batch, producers: dict[int, int]):
        import pyarrow as pa
        import pyarrow.compute as pc

        positions, values = batch.column("batch_position"), batch.column("value")
        if producers:
            known = pa.array(list(producers), pa.int64())
            producer = pc.take(pa.array(list(producers.values()), pa.int64()), pc.index_in(positions, known))
        else:
            producer = pa.nulls(batch.num_rows, pa.int64())
        return pa.RecordBatch.from_arrays(
            [
                batch.column("file"),
                batch.column("topic"),
                batch.column("partition"),
                positions,
                batch.column("offset"),
                batch.column("timestamp"),
                batch.column("key"),
                pc.binary_length(values),
                previews(values),
                producer,
            ],
            schema=matches_schema(),
        )


def contains(values, needle: bytes):
    """Which values hold `needle` (`needle in value`; a null value: False). A needle few values hold is
    found by searching the column's data buffer with `bytes.find` and placing each hit in its row by
    the offsets: 2.4x faster than pyarrow's `match_substring`, which searches value by value, but a
    Python step a hit; once hits pass one row in 16, `match_substring` takes over (measured:
    bench/README.md, "Questions on the C Arrow path"). A hit across two values' bytes is no hit; after
    a hit the search goes on from the next value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    valid = pc.is_valid(values)
    if not needle:
        return valid
    rows = len(values)
    _, offsets, data = values.buffers()
    ends = memoryview(offsets).cast("i")[values.offset : values.offset + rows + 1]
    haystack = data.to_pybytes()[: ends[rows]] if data is not None else b""
    flags = bytearray(rows)
    find, width, budget = haystack.find, len(needle), 64 + rows // 16
    at = find(needle, ends[0])
    while at >= 0:
        budget -= 1
        if not budget:
            return pc.fill_null(pc.match_substring(values, pattern=needle), False)
        row = bisect_right(ends, at) - 1
        stop = ends[row + 1]
        if at + width <= stop:
            flags[row] = 1
            at = find(needle, stop)
        else:
            at = find(needle, at + 1)
    found = pa.Array.from_buffers(pa.uint8(), rows, [None, pa.py_buffer(flags)])
    return pc.and_(pc.not_equal(found, 0), valid)


def previews(values):
    """`questions.preview` of each value, in pyarrow: its first PREVIEW * 4 bytes as text, cut to
    PREVIEW characters and "…" when the value is longer. When those bytes are not all valid UTF-8
    (undecodable bytes, or a character cut at the byte limit) Python's escapes are needed: in Python,
    as `preview` makes them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    head = pc.binary_slice(values, 0, PREVIEW * 4)
    try:
        text = head.cast(pa.string())  # UTF-8 checked: raises on any invalid value
    except pa.ArrowInvalid:
        return pa.array([preview(v) for v in values.to_pylist()], pa.string())
    longer = pc.or_(
        pc.greater(pc.utf8_length(text), PREVIEW), pc.greater(pc.binary_length(values), PREVIEW * 4)
    )
    if not pc.any(longer).as_py():
        return text
    cut = pc.binary_join_element_wise(pc.utf8_slice_codeunits(text, 0, PREVIEW), "…", "")
    return pc.if_else(longer, cut, text)


@cache
def matches_schema():
    return tables.arrow_schema(tables.MATCHES)
