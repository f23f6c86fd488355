"""format/remote_events.py: the C span walk of `__remote_log_metadata` (csrc/remote_events.c) gives the
pure-Python reference's events, on the framing a broker writes and on fuzzed spans; and `tiered audit`
replays one-record batches without a Python decode a record (issue 51: that per-batch Python work was
the audit's cost), with the report the Python walk gives."""

from __future__ import annotations

import random
import struct
import time

import pytest

from kafka_tools.format import accel
from kafka_tools.format.remote_events import span_events, span_events_py
from kafka_tools.tiered import audit as audit_module
from tests.format.kraft_encoder import batch
from tests.fuzz.seeds import _remote_seeds, _span_seeds
from tests.fuzz.targets import SPANS_HEAD, check_spans
from tests.support.sweep import rounds
from tests.support.tiered import (
    COPY_FINISHED,
    DELETE_FINISHED,
    DELETE_PARTITION_STARTED,
    DELETE_STARTED,
    MARKED,
    Metadata,
    kafka_uuid,
    write_metadata,
)

pytestmark = pytest.mark.skipif(accel.fast("remote_span_events") is None, reason="C extension not built")


def _events() -> list[bytes]:
    """A topic's segments copied, moved on, deleted, then the partition's delete, as a broker's RLMM
    writes them (a non-ASCII topic name, leader epochs, custom metadata absent and TxnIndexEmpty set)."""
    meta = Metadata("commandes-é", kafka_uuid(7))
    for i in range(6):
        seg = kafka_uuid(100 + i)
        meta.copied(seg, i * 10, i * 10 + 9, 1_700_000_000_000 + i, epochs={0: i * 10, 3: i * 10 + 5})
        if i < 3:
            meta.update(seg, DELETE_STARTED, 1_700_000_100_000 + i)
            meta.update(seg, DELETE_FINISHED, 1_700_000_100_001 + i)
    meta.update(kafka_uuid(999), COPY_FINISHED, 1_700_000_200_000)  # a segment no record created
    meta.partition_delete(MARKED, 1_700_000_300_000)
    meta.partition_delete(DELETE_PARTITION_STARTED, 1_700_000_300_001)
    return meta.values


def _span(values: list[bytes | None], per_batch: int = 1) -> bytes:
    out = []
    for i in range(0, len(values), per_batch):
        out.append(batch(i, [(None, v) for v in values[i : i + per_batch]]))
    return b"".join(out)


def _both(buf: bytes, limit: int = 4096):
    c = accel.C.remote_span_events(buf, 0, len(buf), limit)
    py = span_events_py(buf, 0, len(buf), limit)
    assert c == py
    return c


@pytest.mark.parametrize("per_batch", [1, 3])
def test_c_and_python_give_the_same_events_on_a_brokers_framing(per_batch):
    values = _events()
    events, at = _both(_span(values, per_batch))
    shapes = [len(e) for e in events]
    assert at == len(_span(values, per_batch)) and len(events) == len(values)
    assert shapes.count(12) == 6 and shapes.count(8) == 13 and shapes.count(2) == 2  # the deletes: decoded
    first = events[0]
    assert first[1:5] == (kafka_uuid(7), 0, "commandes-é", kafka_uuid(100))
    assert first[8:] == (0, 9, 100, {0: 0, 3: 5})


def test_null_undecodable_control_and_damaged_batches_are_handed_over():
    values = _events()
    damaged = bytearray(batch(3, [(None, values[1])]))
    damaged[61] = 0x7E  # the record's length: 63 bytes, past the end of the batch
    buf = (
        batch(0, [(None, None)])
        + batch(1, [(None, b"\x01\x01\x00\xff")])  # an update record cut short
        + batch(2, [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")], control=True)
        + bytes(damaged)
        + batch(4, [(None, values[1])])
    )
    events, at = _both(buf)
    start = len(buf) - len(batch(4, [(None, values[1])])) - len(damaged)
    assert events[:2] == [(0, None), (1, b"\x01\x01\x00\xff")]
    assert events[2] == (start, start + len(damaged), None)
    assert len(events) == 4 and len(events[3]) == 8 and at == len(buf)
    for limit in range(0, 6):  # where a call stops: the same, after the batch that reached the limit
        events, at = _both(buf, limit)
        assert len(events) in (limit, limit + 1) or at == len(buf)


def test_a_span_that_is_not_framed_is_refused_alike():
    buf = _span(_events()[:3])
    for cut in (len(buf) - 1, 70, 30):
        with pytest.raises(ValueError, match="is not framed"):
            accel.C.remote_span_events(buf[:cut], 0, cut, 10)
        check_spans(SPANS_HEAD.pack(10) + buf[:cut])


def test_fuzzed_spans_agree():
    """Seeded mutations of the seeds: flipped, cut and repeated bytes (the libFuzzer harness `spans`
    goes further under the sanitizers)."""
    seeds = sorted(_span_seeds(_remote_seeds()))
    rng = random.Random(51)
    for _ in range(rounds(400, 20_000)):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(1, len(data))
            kind = rng.randrange(3)
            if kind == 0:
                data[i] = rng.randrange(256)
            elif kind == 1:
                del data[i:]
            else:
                data[i:i] = data[i : i + rng.randint(1, 8)]
            if len(data) < 2:
                break
        check_spans(bytes(data))


def test_the_audit_replays_one_record_batches_without_a_python_decode_a_record(tmp_path, monkeypatch):
    """2,000 one-record batches: no value goes through the Python-level decode (on main every one did:
    a record object, a decoded record and its nested dicts a batch), and the report is the one of the
    pure-Python walk."""
    meta = Metadata("orders", kafka_uuid(7))
    t0 = 1_700_000_000_000
    for i in range(500):
        seg = kafka_uuid(1000 + i)
        meta.copied(seg, i * 100, i * 100 + 99, t0 + i, epochs={0: i * 100})
        if i >= 10:
            old = kafka_uuid(1000 + i - 10)
            meta.update(old, DELETE_STARTED, t0 + i)
            meta.update(old, DELETE_FINISHED, t0 + i)
    meta.update(kafka_uuid(5), COPY_FINISHED, t0 + 999)  # a segment no record created: a finding
    log_dir = tmp_path / "kafka-logs"
    from kafka_tools.format.remote_log_partitioner import metadata_partition

    write_metadata(log_dir, metadata_partition(meta.topic_id, 0), meta.values, per_batch=1)
    now = int(time.time() * 1000)
    decoded = []
    real = audit_module.decode_remote_log_metadata
    monkeypatch.setattr(audit_module, "decode_remote_log_metadata", lambda v: decoded.append(1) or real(v))
    fast = audit_module.audit([str(log_dir)], None, now, 900_000)
    assert fast.records == len(meta.values) == 1981 and decoded == []
    monkeypatch.setattr(accel, "C", None)  # every C path off: the Python walk, record by record
    slow = audit_module.audit([str(log_dir)], None, now, 900_000)
    assert len(decoded) == 1981
    assert _report(fast) == _report(slow)
    (part,) = fast.partitions
    assert len(part.replay.segments) == 10 and [f.kind for f in fast.all_findings()] == ["unknown-segment"]


def test_a_damaged_batch_inside_a_span_is_one_finding_as_the_python_walk_says_it(tmp_path, monkeypatch):
    """A batch whose checksum holds but whose record cannot be read, between ordinary ones: the span
    walk hands it back, and the audit reports it as the record-by-record walk does."""
    from kafka_tools.format.remote_log_metadata import REMOTE_LOG_METADATA
    from tests.format.kraft_encoder import recrc

    values = _events()
    batches = [bytearray(batch(i, [(None, v)])) for i, v in enumerate(values)]
    batches[4][61] = 0x7E  # the record's length: past the end of its batch
    batches[4] = bytearray(recrc(batches[4]))
    part = tmp_path / "kafka-logs" / f"{REMOTE_LOG_METADATA}-3"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"".join(bytes(b) for b in batches))
    fast = audit_module.audit([str(tmp_path / "kafka-logs")], None, 1_700_001_000_000, 900_000)
    monkeypatch.setattr(accel, "C", None)
    slow = audit_module.audit([str(tmp_path / "kafka-logs")], None, 1_700_001_000_000, 900_000)
    assert _report(fast) == _report(slow)
    assert [f.kind for f in fast.findings] == ["metadata-unreadable"]
    assert fast.records == len(values) - 1


def _report(report) -> tuple:
    parts = [
        (p.topic, p.partition, p.topic_id, p.replay, [repr(f) for f in p.findings]) for p in report.partitions
    ]
    return (parts, [repr(f) for f in report.findings], report.records, report.warnings)


def test_span_events_takes_the_reference_when_the_c_paths_are_off(monkeypatch):
    buf = _span(_events()[:5])
    expected = span_events(buf, 0, len(buf))
    monkeypatch.setattr(accel, "C", None)
    assert span_events(buf, 0, len(buf)) == expected
    assert struct.unpack_from(">q", buf)[0] == 0
