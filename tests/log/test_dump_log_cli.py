"""`ktool dump-log` through Click's CliRunner, as a user or a script would run it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_tools.cli.main import cli
from tests.independent import FIXTURES, REALWORLD, needs_realworld

GENERATED = FIXTURES / "generated"
CORRUPT = GENERATED / "corrupt"
MANIFEST = json.loads((CORRUPT / "manifest.json").read_text())["files"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["dump-log", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_realworld_topic_dumps_every_record_with_kafkas_field_names() -> None:
    needs_realworld()
    path = REALWORLD / "kafka-2.x-logdir/first_topic-0/00000000000000000000.log"
    code, out, err = run("--print-data-log", str(path))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "Starting offset: 0"
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1")
    assert "position: 0 CreateTime: 1587576892921 size: 80 magic: 2 compresscodec: none" in lines[2]
    assert lines[2].endswith("isvalid: true")
    assert lines[3] == (
        "| offset: 0 CreateTime: 1587576892921 keySize: -1 valueSize: 12 sequence: -1 headerKeys: [] "
        "payload: just for fun"
    )
    assert sum(line.startswith("| offset:") for line in lines) == 11


def test_json_lines_carry_stable_fields_and_a_summary() -> None:
    needs_realworld()
    path = REALWORLD / "kafka-2.x-logdir/first_topic-2/00000000000000000000.log"
    code, out, _ = run("--json", "--deep-iteration", str(path))
    assert code == 0
    objs = json_lines(out)
    assert objs[0] == {
        "type": "file",
        "file": str(path),
        "kind": "log",
        "baseOffset": 0,
        "size": path.stat().st_size,
    }
    batches = [o for o in objs if o["type"] == "batch"]
    records = [o for o in objs if o["type"] == "record"]
    assert {
        "baseOffset",
        "lastOffset",
        "count",
        "position",
        "crc",
        "isValid",
        "compressCodec",
        "magic",
    } <= set(batches[0])
    assert [r["offset"] for r in records] == list(range(18))
    summary, last = objs[-2], objs[-1]
    assert summary["type"] == "file-summary" and summary["file"] == str(path)
    assert summary["records"] == 18 and summary["errors"] == 0
    assert summary["validBytes"] == path.stat().st_size
    assert last == {
        "type": "summary", "files": 1, "unreadable": 0, "entries": summary["entries"], "records": 18,
        "errors": 0, "unknownRecords": 0, "exitCode": 0,
    }  # fmt: skip


def test_consumer_offsets_are_decoded_automatically() -> None:
    needs_realworld()
    path = REALWORLD / "kafka-2.x-logdir/__consumer_offsets-12/00000000000000000000.log"
    code, out, _ = run("--json", "--print-data-log", str(path))
    assert code == 0
    records = [o for o in json_lines(out) if o["type"] == "record"]
    commits = [r for r in records if r["key"]["type"] == "offset_commit"]
    groups = [r for r in records if r["key"]["type"] == "group_metadata"]
    assert commits and groups
    assert commits[0]["key"]["data"] == {
        "group": "my-second-application",
        "topic": "first_topic",
        "partition": 0,
    }
    assert groups[0]["value"]["data"]["protocolType"] == "consumer"
    code, out, _ = run("--json", "--print-data-log", "--no-offsets-decoder", str(path))
    first = next(o for o in json_lines(out) if o["type"] == "record")
    assert isinstance(first["key"], str)


@pytest.mark.parametrize("name", sorted(n for n in MANIFEST if n.endswith((".log", ".kafka"))))
def test_corrupt_segment_keeps_the_good_part_and_names_the_position(name: str) -> None:
    spec = MANIFEST[name]
    path = CORRUPT / name
    code, out, err = run("--json", "--deep-iteration", str(path))
    objs = json_lines(out)
    problems = [o for o in objs if o["type"] == "problem"]
    if spec["kind"] == "empty-file":
        assert code == 0 and not problems
        assert objs[-2]["entries"] == 0 and objs[-2]["size"] == 0
        assert "empty file" in run(str(path))[2]
        return
    assert code == 1
    assert "Traceback" not in err
    first = problems[0]
    entries = [o for o in objs if o["type"] in ("batch", "message") and not o.get("inner")]
    good = [e for e in entries if e["position"] < spec["first_bad_position"]]
    if spec["kind"] not in ("bad-compressed-payload",):
        assert first["position"] == spec["first_bad_position"], first
    assert len(good) == spec["valid_entries"]
    assert [e.get("lastOffset", e.get("offset")) for e in good] == spec["valid_last_offsets"]
    if spec["resume_position"] is not None:
        assert any(e["position"] == spec["resume_position"] for e in entries), (
            "the walk stopped at the damage"
        )


def test_problems_go_to_stderr_as_one_line_each_with_the_position() -> None:
    path = CORRUPT / "v2-length-past-eof-0/00000000000000000000.log"
    code, out, err = run(str(path))
    assert code == 1
    assert err.splitlines() == [
        f"ktool: {path}: position 2081 (offset 12): truncated-entry: entry of 2147418124 bytes runs past "
        "the end of the file (1686 left)"
    ]
    assert (
        "baseOffset: 0 " in out and "Found 1686 invalid bytes at the end of 00000000000000000000.log" in out
    )


def test_missing_file_is_an_environment_error_in_one_line() -> None:
    code, out, err = run("/nonexistent/00000000000000000000.log")
    assert code == 3
    assert err.strip() == "ktool: /nonexistent/00000000000000000000.log: no such file or directory"


def test_good_files_are_dumped_even_when_another_is_missing() -> None:
    good = GENERATED / "v2/none-0/00000000000000000000.log"
    code, out, err = run(str(good), "/nonexistent.log")
    assert code == 3
    assert "baseOffset: 0" in out
    assert "no such file" in err


def test_a_directory_is_one_line_and_exit_3_as_the_readme_says() -> None:
    code, _, err = run(str(GENERATED))
    assert code == 3
    assert (
        err
        == f"ktool: {GENERATED}: is a directory (dump-log decodes files; `ktool validate` reads directories)"
        "\n"
    )


def test_text_file_named_log_is_called_what_it_is() -> None:
    path = CORRUPT / "wrong-file-0/00000000000000000000.log"
    code, out, err = run(str(path))
    assert code == 1
    assert "not-a-segment: this is text, not a Kafka log segment" in err


def test_kafka07_offsets_are_byte_positions_from_the_file_name() -> None:
    first = GENERATED / "kafka07/events-0/00000000000000000000.kafka"
    second = next(p for p in (GENERATED / "kafka07/events-0").glob("*.kafka") if p != first)
    base = int(second.name.split(".")[0])
    assert base == first.stat().st_size
    code, out, _ = run("--json", str(second))
    assert code == 0
    messages = [o for o in json_lines(out) if o["type"] == "message"]
    assert [m["offset"] - m["position"] for m in messages] == [base] * len(messages)
    assert messages[0]["offset"] == base


def test_value_decoders() -> None:
    path = GENERATED / "v2/none-0/00000000000000000000.log"
    _, out, _ = run(
        "--json", "--print-data-log", "--value-decoder", "json", "--key-decoder", "hex", str(path)
    )
    record = next(o for o in json_lines(out) if o["type"] == "record" and o["value"] is not None)
    assert isinstance(record["value"], dict)
    if record["key"] is not None:
        assert bytes.fromhex(record["key"])
    _, out, _ = run("--print-data-log", "--value-decoder", "none", "--key-decoder", "none", str(path))
    assert " payload: " not in out and " key: " not in out


def test_offset_range_filters_records() -> None:
    path = GENERATED / "v2/none-0/00000000000000000000.log"
    _, out, _ = run("--json", "--deep-iteration", "--from-offset", "5", "--to-offset", "9", str(path))
    assert [o["offset"] for o in json_lines(out) if o["type"] == "record"] == [5, 6, 7, 8, 9]


def test_control_batches_name_their_markers() -> None:
    path = GENERATED / "v2/transactions-0/00000000000000000000.log"
    code, out, _ = run("--deep-iteration", str(path))
    assert code == 0
    assert "endTxnMarker: COMMIT coordinatorEpoch:" in out
    assert "endTxnMarker: ABORT coordinatorEpoch:" in out
    assert "controlType: UNKNOWN(99)" in out


def test_index_files_agree_with_their_segments() -> None:
    indexes = sorted((GENERATED / "v2/segmented-0").glob("*.index"))
    assert len(indexes) > 1  # the fixture's several segments, not none
    for index in indexes:
        code, out, err = run(str(index))
        assert code == 0, err
        assert out.splitlines()[2].startswith("offset: ")


def test_index_that_points_nowhere_is_reported(tmp_path: Path) -> None:
    src = GENERATED / "v2/segmented-0"
    files = list(src.glob("00000000000000000000.*"))
    assert files
    for f in files:
        (tmp_path / f.name).write_bytes(f.read_bytes())
    index = tmp_path / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    data[4:8] = (int.from_bytes(data[4:8], "big") + 1).to_bytes(4, "big")  # first entry's position + 1
    index.write_bytes(bytes(data))
    code, _, err = run(str(index))
    assert code == 1
    assert "where no batch starts" in err


def test_bad_snapshot_crc_is_reported() -> None:
    code, _, err = run(str(next((CORRUPT / "snapshot-bad-crc-0").glob("*.snapshot"))))
    assert code == 1 and "crc-mismatch" in err


def test_module_entry_point_runs() -> None:
    import subprocess
    import sys

    env = dict(os.environ)
    result = subprocess.run(
        [sys.executable, "-m", "kafka_tools", "--version"], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0 and "ktool" in result.stdout


def test_bulk_record_lines_equal_the_per_record_lines() -> None:
    path = GENERATED / "v2/transactions-0/00000000000000000000.log"
    _, fast, _ = run("--deep-iteration", str(path))
    _, slow, _ = run("--print-data-log", "--key-decoder", "none", "--value-decoder", "none", str(path))
    strip = [line.split(" headers: ")[0] for line in slow.splitlines()]
    assert fast.splitlines() == strip
    assert sum(line.startswith("| offset:") for line in strip) == 17


def test_colour_on_a_terminal_and_plain_in_a_pipe() -> None:
    path = CORRUPT / "v2-flipped-record-byte-0/00000000000000000000.log"
    coloured = CliRunner().invoke(cli, ["--color", "always", "dump-log", str(path)])
    assert "\x1b[" in coloured.stdout
    assert "\x1b[" not in run(str(path))[1]


def test_transaction_state_partitions_are_decoded_automatically(tmp_path: Path) -> None:
    import struct

    from kafka.record.default_records import DefaultRecordBatchBuilder

    def s(text: str) -> bytes:
        return struct.pack(">h", len(text)) + text.encode()

    key = struct.pack(">h", 0) + s("payments-txn")
    # TransactionLogValue v0: producerId, producerEpoch, timeout, status, partitions, lastUpdate, start.
    value = (
        struct.pack(">hqhib", 0, 4242, 3, 60000, 2)
        + struct.pack(">i", 1)
        + s("payments")
        + struct.pack(">iii", 2, 0, 1)
        + struct.pack(">qq", 1700000000500, 1700000000000)
    )
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, timestamp=1700000000500, key=key, value=value, headers=[])
    builder.append(1, timestamp=1700000000600, key=key, value=None, headers=[])
    segment = tmp_path / "__transaction_state-7" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(bytes(builder.build()))
    code, out, err = run("--json", "--print-data-log", str(segment))
    assert code == 0, err
    records = [o for o in json_lines(out) if o["type"] == "record"]
    assert records[0]["key"] == {
        "type": "transaction_log",
        "version": 0,
        "data": {"transactionalId": "payments-txn"},
    }
    data = records[0]["value"]["data"]
    assert (data["producerId"], data["transactionStatusName"]) == (4242, "PrepareCommit")
    assert data["transactionPartitions"] == [{"topic": "payments", "partitionIds": [0, 1]}]
    assert records[1]["value"] is None


def test_max_bytes_stops_reading_early() -> None:
    path = GENERATED / "v2/none-0/00000000000000000000.log"
    _, full, _ = run("--json", str(path))
    batches = [o for o in json_lines(full) if o["type"] == "batch"]
    limit = batches[1]["position"] + batches[1]["size"]
    code, out, _ = run("--json", "--max-bytes", str(limit), str(path))
    assert code == 0
    assert [o for o in json_lines(out) if o["type"] == "batch"] == batches[:2]


def test_skip_record_metadata_prints_only_the_data() -> None:
    path = GENERATED / "v2/none-0/00000000000000000000.log"
    _, out, _ = run("--print-data-log", "--skip-record-metadata", str(path))
    records = [line for line in out.splitlines() if line.startswith("| ")]
    assert records and all(
        "offset:" not in line and "payload: " in line for line in records if "payload" in line
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_json_of_several_files_ends_in_one_summary_with_the_worst_outcome(tmp_path, jobs) -> None:
    """`dump-log --json MISSING BAD GOOD`: one stream whose last line is the only `summary`, carrying
    every file's counts and the exit code; the missing file is an `error` object in the stream too."""
    bad = CORRUPT / "v2-flipped-record-byte-0" / "00000000000000000000.log"
    good = GENERATED / "v2" / "gzip-0" / "00000000000000000000.log"
    missing = tmp_path / "gone.log"
    code, out, err = run("--json", "--jobs", jobs, str(missing), str(bad), str(good))
    objs = json_lines(out)
    assert code == 3
    assert [o["type"] for o in objs].count("summary") == 1 and objs[-1]["type"] == "summary"
    ends = {o["file"]: o for o in objs if o["type"] == "file-summary"}
    assert set(ends) == {str(bad), str(good)} and ends[str(bad)]["errors"] >= 1
    (error,) = [o for o in objs if o["type"] == "error"]
    assert error["file"] == str(missing) and error["exitCode"] == 3 and error["message"] in err
    assert objs[-1] == {
        "type": "summary", "files": 3, "unreadable": 1, "exitCode": 3,
        "entries": sum(e["entries"] for e in ends.values()), "records": ends[str(good)]["records"]
        + ends[str(bad)]["records"], "errors": sum(e["errors"] for e in ends.values()),
        "unknownRecords": 0,
    }  # fmt: skip
    code, out, _ = run("--json", "--jobs", jobs, str(bad), str(good))
    assert code == 1 and json_lines(out)[-1]["exitCode"] == 1 and json_lines(out)[-1]["errors"] >= 1


def test_kraft_control_records_show_their_fields_whatever_the_decoder(tmp_path) -> None:
    """DumpLogSegments prints a KRaft control record's fields always (`LeaderChange: {…}`,
    `KRaftVersion {…}`); ktool decodes them outside `__cluster_metadata` and with
    --no-cluster-metadata-decoder too, as `payload: {"type", "version", "data"}`."""
    from tests.metadata.kraft_log import log_bytes, story

    control = [e for e in story() if e[0] == "control"][:2]  # LeaderChangeMessage, KRaftVersionRecord
    log = tmp_path / "copied" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(log_bytes(control, per_batch=1))
    for flags in ([], ["--no-cluster-metadata-decoder"]):
        code, out, err = run("--deep-iteration", *flags, str(log))
        assert code == 0, err
        lines = [line for line in out.splitlines() if line.startswith("| offset:")]
        assert len(lines) == 2
        assert "controlType: LEADER_CHANGE(2) payload: " in lines[0]
        leader = json.loads(lines[0].split(" payload: ", 1)[1])
        assert (leader["type"], leader["data"]["leaderId"]) == ("LEADER_CHANGE_MESSAGE", 3000)
        version = json.loads(lines[1].split(" payload: ", 1)[1])
        assert (version["type"], version["data"]["kRaftVersion"]) == ("KRAFT_VERSION_RECORD", 1)
    objs = json_lines(run("--deep-iteration", "--json", str(log))[1])
    records = [o for o in objs if o["type"] == "record"]
    assert [r["value"]["type"] for r in records] == ["LEADER_CHANGE_MESSAGE", "KRAFT_VERSION_RECORD"]
