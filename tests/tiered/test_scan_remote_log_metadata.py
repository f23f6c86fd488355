"""`ktool scan --cluster-metadata` decodes `__remote_log_metadata` into the `metadata` table, as it does
`__cluster_metadata`: one row per record with the type, version, state and fields dump-log's
`--remote-log-metadata-decoder` shows (a broker-written segment: tests/tiered/test_tiered_broker.py),
and an undecodable value is a row with its error at its byte, not a failed scan."""

from __future__ import annotations

from tests.support.tiered import (
    COPY_FINISHED,
    DELETE_FINISHED,
    DELETE_STARTED,
    MARKED,
    Metadata,
    kafka_uuid,
    write_metadata,
)
from tests.tiered.scan_rows import assert_rows_are_dump_logs, scan_metadata_rows


def test_every_remote_log_metadata_record_is_a_row_as_dump_log_shows_it(tmp_path):
    meta = Metadata("orders", kafka_uuid(9))
    a, b = kafka_uuid(10), kafka_uuid(11)
    meta.copied(a, 0, 99, 1_700_000_000_000, epochs={0: 0, 2: 50})
    meta.copied(b, 100, 199, 1_700_000_001_000)
    meta.update(a, DELETE_STARTED, 1_700_000_002_000)
    meta.update(a, DELETE_FINISHED, 1_700_000_003_000)
    meta.partition_delete(MARKED, 1_700_000_004_000)
    log_dir = tmp_path / "logs"
    write_metadata(log_dir, 3, meta.values)
    rows = scan_metadata_rows(log_dir, tmp_path / "out")
    assert assert_rows_are_dump_logs(rows, log_dir) == 7
    states = [r["state"] for r in sorted(rows, key=lambda r: r["offset"])]
    assert (
        states[:2] == ["COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED"]
        and states[-1] == "DELETE_PARTITION_MARKED"
    )
    assert {r["type_id"] for r in rows} == {0, 1, 2} and COPY_FINISHED


def test_an_undecodable_value_is_a_row_with_its_error(tmp_path):
    meta = Metadata("orders", kafka_uuid(9))
    meta.copied(kafka_uuid(10), 0, 99, 1_700_000_000_000)
    log_dir = tmp_path / "logs"
    write_metadata(log_dir, 0, [meta.values[0], meta.values[1][:-3], b"\x02\x00\x00"])
    rows = sorted(scan_metadata_rows(log_dir, tmp_path / "out"), key=lambda r: r["offset"])
    assert [r["error"] is None for r in rows] == [True, False, False]
    assert "frame version 2" in rows[2]["error"] and "(at byte 0)" in rows[2]["error"]
    assert rows[1]["record_type"] is None and rows[1]["fields"] is None
