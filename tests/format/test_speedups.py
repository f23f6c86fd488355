"""The C record decoder must be indistinguishable from the pure-Python reference: same records on every
valid section, the same error (message and position) on every broken one, and no crash on any input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools.format import record_batch as rb
from kafka_tools.format.record_batch import RecordBatch, RecordDecodeError, decode_records_py
from kafka_tools.format.segment import iter_log_entries
from tests.format.test_decoder_vs_kafka_python import SEGMENTS
from tests.independent import REALWORLD

pytestmark = pytest.mark.skipif(not rb.HAS_SPEEDUPS, reason="C extension not built")


def _run(fn, data: bytes, count: int, log_append: int | None = None, base_sequence: int = -1):
    try:
        return ("ok", fn(data, count, 100, 1_700_000_000_000, log_append, base_sequence))
    except RecordDecodeError as exc:
        return ("error", str(exc), exc.position)


def _sections():
    for path in SEGMENTS:
        for entry in iter_log_entries(path):
            if isinstance(entry, RecordBatch) and not entry.is_compressed:
                yield entry


def test_c_and_python_agree_on_every_real_batch() -> None:
    checked = 0
    for batch in _sections():
        args = (
            batch.payload,
            batch.records_count,
            batch.base_offset,
            batch.base_timestamp,
            None,
            batch.base_sequence,
        )
        assert rb.decode_records(*args) == decode_records_py(*args)
        checked += 1
    assert checked > (100 if REALWORLD.is_dir() else 30)  # the fixtures alone hold 36 v2 batches


def test_c_and_python_agree_on_every_truncation_of_a_real_batch() -> None:
    batch = next(b for b in _sections() if b.records_count > 2)
    for cut in range(len(batch.payload)):
        data = batch.payload[:cut]
        assert _run(rb.decode_records, data, batch.records_count) == _run(
            decode_records_py, data, batch.records_count
        )


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=0, max_value=2**31 - 1), st.sampled_from([None, 5]))
def test_c_and_python_agree_on_garbage(data: bytes, count: int, log_append: int | None) -> None:
    assert _run(rb.decode_records, data, count, log_append, 7) == _run(
        decode_records_py, data, count, log_append, 7
    )
