"""`ktool offsets-at`: each partition's offset at a time from a log dir's files, as GetOffsetShell asks a
broker: checked on written partitions and against a real Kafka 0.9.0.1 broker's GetOffsetShell on the
log dir that broker wrote (and `read` against its SimpleConsumerShell)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.independent import FIXTURES
from tests.log.test_read import T0, build_partition, tree_state
from tests.support.cli import run_ktool

BROKER_PROPERTIES = {"log.retention.check.interval.ms": "1000", "log.segment.delete.delay.ms": "0"}


def test_offsets_at_earliest_latest_and_time(tmp_path) -> None:
    build_partition(tmp_path / "a", 2, "gzip", topic="orders")  # offsets 0..71, ts T0 + 10*offset
    build_partition(tmp_path / "a", 1, "none", topic="events", first_offset=500)
    (tmp_path / "a" / "log-start-offset-checkpoint").write_text("0\n1\norders 0 12\n")
    logdir = str(tmp_path / "a")
    assert run_ktool("offsets-at", logdir).stdout == "events:0:572\norders:0:72\n"
    assert run_ktool("offsets-at", "--time", "-2", logdir).stdout == "events:0:500\norders:0:12\n"
    assert run_ktool("offsets-at", "--time", str(T0 + 5005), logdir).stdout == "events:0:501\norders:0:\n"
    result = run_ktool("offsets-at", "--json", "--time", str(T0 + 301), logdir)
    offset = {"type": "offset", "logDir": logdir, "partition": 0, "time": T0 + 301, "error": None}
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {**offset, "topic": "events", "offset": 500},
        {**offset, "topic": "orders", "offset": 31},
        {"type": "summary", "partitions": 2, "failed": 0, "unreadable": 0},
    ]


def test_a_transaction_marker_is_a_batch_listoffsets_counts(tmp_path) -> None:
    """The marker's timestamp is the broker's when it wrote it: a time after the transaction's records
    and at or before the marker is answered with the marker's offset, and max-timestamp is the marker's
    when it is the newest (UnifiedLog.fetchOffsetByTimestamp; FileRecords.searchForTimestamp skips no
    batch)."""
    from tests.transactions.files import COMMIT, Log

    log = Log()
    log.txn(7, 0, 0, n=4, ts=T0)
    log.end(7, 0, COMMIT, 0, ts=T0 + 100)  # offset 4
    log.append(2, ts=T0 + 50)  # offsets 5, 6: older than the marker
    log.write(tmp_path / "logs", "txn-0")
    logdir = str(tmp_path / "logs")
    assert run_ktool("offsets-at", "--time", str(T0 + 60), logdir).stdout == "txn:0:4\n"
    assert run_ktool("offsets-at", "--time", "max-timestamp", logdir).stdout == "txn:0:4\n"
    assert run_ktool("offsets-at", "--time", str(T0 + 10), logdir).stdout == "txn:0:4\n"
    assert run_ktool("offsets-at", "--time", str(T0), logdir).stdout == "txn:0:0\n"


def test_offsets_at_v0_time_is_answered_from_segment_times_with_a_note(tmp_path) -> None:
    """Message format v0 has no timestamps: the answer brokers before 0.10.1 give (the newest segment
    last modified at or before the time), and one note saying so."""
    build_partition(tmp_path, 0, "none", topic="old")  # offsets 0..71: 3 segments of 24
    build_partition(tmp_path, 2, "none", topic="new")
    segments = sorted((tmp_path / "old-0").glob("*.log"))
    assert [int(p.stem) for p in segments] == [0, 24, 48]
    for n, seg in enumerate(segments):
        os.utime(seg, ns=(0, (T0 + 1000 * n) * 1_000_000))
    expected = {T0 - 1: "", T0: "0", T0 + 999: "0", T0 + 1000: "24", T0 + 5000: "48"}
    for when, offset in expected.items():
        result = run_ktool("offsets-at", "--time", str(when), str(tmp_path))
        assert result.exit_code == 0, result.stderr
        assert result.stdout.splitlines()[1] == f"old:0:{offset}"
        assert result.stderr.count("\n") == 1 and "answered from the segments' modification times" in (
            result.stderr
        )


def test_offsets_at_takes_a_partition_directory(tmp_path) -> None:
    build_partition(tmp_path, 2, "gzip", topic="orders")
    build_partition(tmp_path, 2, "none", topic="events")
    result = run_ktool("offsets-at", str(tmp_path / "orders-0"))
    assert (result.exit_code, result.stdout) == (0, "orders:0:72\n"), result.stderr


def test_offsets_at_bad_input_is_one_line(tmp_path) -> None:
    result = run_ktool("offsets-at", str(tmp_path / "missing"))
    assert result.exit_code == 3 and result.stderr.count("\n") == 1
    result = run_ktool("offsets-at", "--time", "yesterday", str(FIXTURES / "generated" / "v2"))
    assert result.exit_code == 2


def test_offsets_at_never_writes(tmp_path) -> None:
    build_partition(tmp_path, 1, "snappy", topic="x")
    before = tree_state(tmp_path)
    for when in ("earliest", "latest", str(T0 + 50)):
        assert run_ktool("offsets-at", "--time", when, str(tmp_path)).exit_code == 0
    assert tree_state(tmp_path) == before


def test_offsets_at_the_09_fixture_log_dir() -> None:
    result = run_ktool("offsets-at", str(FIXTURES / "kafka-0.9.0.1" / "logdir"))
    sent = json.loads((FIXTURES / "kafka-0.9.0.1" / "messages.json").read_text())["topics"]
    lines = dict(line.rsplit(":", 1) for line in result.stdout.splitlines())
    for topic, messages in sent.items():
        if f"{topic}:0" in lines:
            assert int(lines[f"{topic}:0"]) == messages[-1]["offset"] + 1


# -- against a real Kafka 0.9.0.1 broker ------------------------------------------------------------


@pytest.fixture(scope="module")
def broker_log(kafka09_cluster):
    """Topics written by the real broker: `kept` (2 partitions, several segments) and `trimmed` (small
    retention: its oldest segments are deleted by the broker, so its earliest offset is above 0)."""
    broker = kafka09_cluster.broker
    broker.create_topic("kept", partitions=2, config={"segment.bytes": 2048})
    broker.create_topic("trimmed", config={"segment.bytes": 1024, "retention.bytes": 2048})
    broker.produce("kept", [f"kept message {i:04d}" for i in range(300)], sync=True)
    broker.produce("trimmed", [f"trimmed message {i:04d}" for i in range(120)], sync=True)  # many sets
    latest = _get_offset_shell(broker, "kept", -1)
    assert sum(int(line.rsplit(":", 1)[1]) for line in latest) == 300, latest
    # The broker's retention check (every second here) drops trimmed's first segment: the log start
    # moves up before its file is renamed to .deleted, so once the file is gone GetOffsetShell agrees.
    first = Path(broker.log_dir) / "trimmed-0" / f"{0:020d}.log"
    deadline = time.monotonic() + 120
    while first.exists():
        assert time.monotonic() < deadline, f"the broker kept {first} for 120 s"
        time.sleep(0.1)
    return broker


def _get_offset_shell(broker, topic: str, when: int) -> set[str]:
    out = broker.run_tool(
        "kafka.tools.GetOffsetShell", "--broker-list", broker.bootstrap, "--topic", topic, "--time", str(when)
    )
    return {line.strip() for line in out.splitlines() if line.startswith(f"{topic}:")}


@pytest.mark.parametrize("when", [-1, -2])
def test_offsets_at_agrees_with_the_brokers_get_offset_shell(broker_log, when) -> None:
    theirs = _get_offset_shell(broker_log, "kept", when) | _get_offset_shell(broker_log, "trimmed", when)
    if when == -2:
        assert "trimmed:0:0" not in theirs  # the broker deleted segments: a log start above 0
    result = run_ktool("offsets-at", "--time", str(when), str(broker_log.log_dir))
    assert result.exit_code == 0, result.stderr
    ours = {line for line in result.stdout.splitlines() if line.split(":")[0] in ("kept", "trimmed")}
    assert ours == theirs and len(ours) == 3


def test_read_agrees_with_the_brokers_simple_consumer_shell(broker_log) -> None:
    compared = 0
    for partition in (0, 1):
        for offset in (0, 37, 120):
            part = Path(broker_log.log_dir) / f"kept-{partition}"
            result = run_ktool("read", "--json", str(part), "--offset", str(offset), "-n", "5")
            if result.exit_code == 1:  # the partition holds fewer messages: the broker agrees
                assert "out of range" in result.stderr
                continue
            assert result.stderr == ""  # the live broker's preallocated (zeroed) indexes are no warning
            ours = [json.loads(line)["value"] for line in result.stdout.splitlines()[:-1]]  # then the summary
            out = broker_log.run_tool(
                "kafka.tools.SimpleConsumerShell",
                "--broker-list",
                broker_log.bootstrap,
                "--topic",
                "kept",
                "--partition",
                str(partition),
                "--offset",
                str(offset),
                "--max-messages",
                "5",
                "--no-wait-at-logend",
            )
            theirs = [line for line in out.splitlines() if line.startswith("kept message")]
            assert ours == theirs and len(ours) == 5
            compared += 1
    assert compared >= 4


def test_offsets_at_a_time_on_v0_data_agrees_with_the_brokers_get_offset_shell(broker_log) -> None:
    """0.9 writes message format v0: GetOffsetShell answers a time from the segments' modification
    times, and so does ktool on the files, at each segment's time, just before it and before all."""
    part = Path(broker_log.log_dir) / "kept-0"
    times = sorted({os.stat(p).st_mtime_ns // 1_000_000 for p in part.glob("*.log")})
    assert len(times) >= 2, "the broker rolled no segment"
    compared = 0
    for when in sorted({times[0] - 1, *times, *(t - 1 for t in times[1:])}):
        theirs = _get_offset_shell(broker_log, "kept", when)
        result = run_ktool("offsets-at", "--time", str(when), str(broker_log.log_dir))
        assert result.exit_code == 0, result.stderr
        ours = {line for line in result.stdout.splitlines() if line.startswith("kept:")}
        assert ours == theirs, when
        compared += 1
    assert compared >= 3
