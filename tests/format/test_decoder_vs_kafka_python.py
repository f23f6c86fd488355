"""ktool's decoder must agree with kafka-python's, record for record, on every valid segment we have:
the real-world broker data in ../shared/realworld and the fixtures written by independent encoders."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.segment import iter_log_entries
from tests.independent import FIXTURES, REALWORLD, RefBatch, RefRecord, read_with_kafka_python


def _segments() -> list[Path]:
    found = sorted(REALWORLD.glob("kafka-2.x-logdir/*/*.log"))
    found += sorted(p for p in (FIXTURES / "generated").glob("**/*.log") if "corrupt" not in p.parts)
    found += sorted((FIXTURES / "kafka-0.9.0.1").glob("logdir/*/*.log"))
    return [p for p in found if p.stat().st_size > 0]


def read_with_ktool(path: Path) -> list[RefBatch]:
    batches = []
    for entry in iter_log_entries(path):
        assert not isinstance(entry, Problem), f"{path}: {entry}"
        records = tuple(RefRecord(r.offset, r.timestamp, r.key, r.value, r.headers) for r in entry.records())
        stored_offset = entry.base_offset if isinstance(entry, RecordBatch) else entry.offset
        assert isinstance(entry, RecordBatch | LegacyMessage)
        batches.append(RefBatch(entry.magic, stored_offset, entry.is_valid, records))
    return batches


SEGMENTS = _segments()


@pytest.mark.parametrize("path", SEGMENTS, ids=lambda p: "/".join(p.parts[-3:]))
def test_every_record_equals_kafka_python(path: Path) -> None:
    ours = read_with_ktool(path)
    theirs = read_with_kafka_python(path)
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine.magic == ref.magic
        assert mine.base_offset == ref.base_offset
        assert mine.crc_valid and ref.crc_valid
        assert mine.records == ref.records


def test_realworld_data_is_present_or_skipped() -> None:
    if not REALWORLD.is_dir():
        pytest.skip("../shared/realworld is absent")
    counts = {
        p.parent.name: sum(len(b.records) for b in read_with_ktool(p))
        for p in SEGMENTS
        if REALWORLD in p.parents
    }
    # The counts the data's README states.
    assert counts["__consumer_offsets-12"] == 470
    assert counts["__consumer_offsets-18"] == 499
    assert (counts["first_topic-0"], counts["first_topic-1"], counts["first_topic-2"]) == (11, 12, 18)
    assert counts["new_topic-0"] == 2


@pytest.mark.parametrize("wrapper_offset", [0, 2, 3, 4, 1000])
def test_a_v1_wrapper_offset_below_its_last_relative_one_reads_as_kafka_reads_it(
    wrapper_offset: int, tmp_path: Path
) -> None:
    """Kafka's deep iterator applies a v1 wrapper's base (its offset minus the last relative inner
    offset) only when it is not negative; a damaged wrapper offset then leaves the inner offsets as
    stored. ktool must hand out the offsets a consumer would see."""
    source = FIXTURES / "generated" / "v1" / "gzip-0" / "00000000000000000000.log"
    data = bytearray(source.read_bytes())
    data[0:8] = wrapper_offset.to_bytes(8, "big")  # the first wrapper's offset, outside its CRC
    damaged = tmp_path / "00000000000000000000.log"
    damaged.write_bytes(bytes(data))
    ours, theirs = read_with_ktool(damaged), read_with_kafka_python(damaged)
    assert [r.offset for r in ours[0].records] == [r.offset for r in theirs[0].records]
    assert ours == theirs
