"""`kept_spans` (the audits' walk: runs of checked v2 batches in C, the rest by the Python walk) must
yield what `until_recovery_cut(iter_log_entries(path))` yields, batch by batch, on every real v2 and
corrupt segment and on random corruptions of them (flipped bits, bad CRCs, offsets moved, truncated
and zeroed tails), and must actually hand a clean segment's batches over as Spans."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafka_tools.format import accel
from kafka_tools.format.batch_spans import Span, kept_spans
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import RecordBatch, parse_batch_header
from kafka_tools.format.segment import iter_log_entries, until_recovery_cut
from tests.format.test_batch_runs import GENERATED, SEGMENTS, _mutated

pytestmark = pytest.mark.skipif(accel.fast("scan_batches") is None, reason="C extension not built")


def _flat(items) -> list[tuple]:
    """Each batch (a Span's too) as (position, base offset, crc, computed crc, records), each Problem
    and other entry as its position and words."""
    out: list[tuple] = []
    for item in items:
        if type(item) is Span:
            buf, i, end, shift = item
            while i < end:
                batch = parse_batch_header(buf, i, i + shift)
                out.append(_batch(batch))
                i += batch.entry_size
        elif isinstance(item, RecordBatch):
            out.append(_batch(item))
        elif isinstance(item, Problem):
            out.append(("problem", item.position, item.kind, item.message, item.offset))
        else:
            out.append(("entry", type(item).__name__, item.position))
    return out


def _batch(b: RecordBatch) -> tuple:
    try:
        records = [(r.offset, r.key, r.value) for r in b.iter_records()]
    except Exception as exc:  # noqa: BLE001 - the error's words are compared, not raised
        records = [repr(exc)]
    return ("batch", b.position, b.base_offset, b.crc, b.computed_crc, b.attributes, records)


def _same(path: Path) -> list[tuple]:
    expected = _flat(until_recovery_cut(iter_log_entries(path)))
    assert _flat(kept_spans(path)) == expected, path
    return expected


def test_every_v2_and_corrupt_segment_walks_the_same() -> None:
    assert len(SEGMENTS) > 10
    for path in SEGMENTS:
        _same(path)


@pytest.mark.parametrize("source", ["v2/none-0", "v2/segmented-0", "v2/transactions-0", "v2/mixed-magic-0"])
def test_corrupted_copies_walk_the_same(source: str, tmp_path: Path) -> None:
    originals = sorted((GENERATED / source).glob("*.log"))
    rnd = random.Random(source)
    for i in range(40):
        original = rnd.choice(originals)
        path = tmp_path / f"{i}.log"
        path.write_bytes(_mutated(original.read_bytes(), rnd))
        _same(path)


def test_a_clean_segment_comes_as_spans() -> None:
    path = sorted((GENERATED / "v2/none-0").glob("*.log"))[0]
    kinds: list[type] = []

    def seen(items):  # a Span's bytes are valid until the walk moves on: flattened as they come
        for item in items:
            kinds.append(type(item))
            yield item

    flat = _flat(seen(kept_spans(path)))
    assert kinds and set(kinds) == {Span}
    assert flat == _same(path) and len(flat) > 1
