"""`ktool validate` on a running 3.9 / 4.x broker's log dir while idempotent and transactional producers
write at full speed into short segments (retention and compaction running): no finding but in-flight
ones, no traceback, no signal; the same as `tests/log/test_live_broker.py` shows for 0.9. And
`dump-log --deep-iteration --jobs 2` (the worker pool) on the same files under the same load. Both write
the same batches on 3.9 and 4.x: CI runs them on 4.x, `tests/run.sh --exhaustive` on 3.9 as well."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.support.modern import create_topic
from tests.support.script import counted_run


def _writers(bootstrap: str, topics: list[str], stop: threading.Event) -> list[threading.Thread]:
    from confluent_kafka import Producer

    def idempotent() -> None:
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 2,
                "compression.type": "lz4",
            }
        )
        i = 0
        while not stop.is_set():
            producer.produce(topics[i % 2], b"v" * 200, f"k{i % 50}".encode())
            producer.poll(0)
            i += 1
            if i % 500 == 0:
                producer.flush(10)
        producer.flush(30)

    def transactional() -> None:
        producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:6]}"}
        )
        producer.init_transactions(60)
        n = 0
        while not stop.is_set():
            producer.begin_transaction()
            for i in range(50):
                producer.produce(topics[0], b"t" * 100, f"t{i}".encode())
            producer.flush(30)
            (producer.commit_transaction if n % 3 else producer.abort_transaction)(60)
            n += 1

    return [threading.Thread(target=f, daemon=True) for f in (idempotent, transactional)]


def _live_topics(cluster) -> list[str]:
    """A compacted and a deleted topic of two partitions each, in short segments."""
    suffix = uuid.uuid4().hex[:8]
    topics = [f"live-compact-{suffix}", f"live-delete-{suffix}"]
    short = {
        "segment.bytes": 1 << 20,
        "segment.ms": 2000,
        "min.cleanable.dirty.ratio": 0.01,
        "delete.retention.ms": 100,
        "min.compaction.lag.ms": 0,
    }
    create_topic(cluster, topics[0], partitions=2, config={**short, "cleanup.policy": "compact"})
    create_topic(cluster, topics[1], partitions=2, config={**short, "retention.ms": 4000})
    return topics


@pytest.mark.kafka4_in_ci  # 20 s of producers at full speed: what is proved is ktool's reading of a live log
def test_validate_under_load_has_no_false_alarm(modern_kafka):
    topics = _live_topics(modern_kafka)
    stop = threading.Event()
    threads = _writers(modern_kafka.bootstrap, topics, stop)
    for t in threads:
        t.start()
    log_dir = str(modern_kafka.brokers[0].log_dir)
    runs, deadline = 0, time.monotonic() + 20
    try:
        while runs < 3 or time.monotonic() < deadline:  # 3 runs at least, however slow the machine
            proc = subprocess.run(
                [sys.executable, "-m", "kafka_tools", "validate", "--json", log_dir],
                capture_output=True,
                text=True,
                timeout=120,
            )
            runs += 1
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
            assert "Traceback" not in proc.stderr
            findings = [json.loads(line) for line in proc.stdout.splitlines() if '"finding"' in line]
            alarms = [f for f in findings if f.get("severity") not in ("info", "warning")]
            assert alarms == [], alarms[:3]
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=90)
    segments = list((modern_kafka.brokers[0].log_dir / f"{topics[0]}-0").glob("*.log"))
    assert len(segments) >= 2, "the segments did not roll: the load was too light to mean anything"


def _largest_segment(log_dir, topics) -> int:
    """The size of the largest segment of `topics` now (one the broker deleted meanwhile counts 0)."""
    sizes = [0]
    for f in (f for topic in topics for f in log_dir.glob(f"{topic}-*/*.log")):
        try:
            sizes.append(f.stat().st_size)
        except FileNotFoundError:
            pass
    return max(sizes)


@pytest.mark.kafka4_in_ci
def test_dump_log_with_the_worker_pool_under_load(modern_kafka):
    # Every segment of the four partitions at once, with `--jobs 2` (the pool's worker renders files
    # from the last one back while ktool renders from the first), while the broker appends, rolls,
    # cleans and deletes. A segment deleted since it was listed is a missing file (exit 3, said in
    # one line), a segment just rolled may still be empty (a note); nothing else may be said, and
    # nothing may break. Runs for 20 s of load (the old batch-helper test waited for 4 MiB segments:
    # 7 minutes of CI).
    topics = _live_topics(modern_kafka)
    stop = threading.Event()
    threads = _writers(modern_kafka.bootstrap, topics, stop)
    for t in threads:
        t.start()
    log_dir = modern_kafka.brokers[0].log_dir
    runs, with_workers, gone = 0, 0, 0
    try:
        deadline = time.monotonic() + 20
        while runs < 3 or time.monotonic() < deadline:
            files = sorted(str(f) for topic in topics for f in log_dir.glob(f"{topic}-*/*.log"))
            workers, proc = counted_run(
                "dump-log", "--deep-iteration", "--print-data-log", "--jobs", "2", *files
            )
            runs += 1
            with_workers += workers > 0
            assert proc.returncode in (0, 3), proc.stderr[-3000:]
            assert "Traceback" not in proc.stderr
            said = [line for line in proc.stderr.splitlines() if line]
            missing = [line for line in said if "no such file" in line]
            empty = [line for line in said if line.endswith(": empty file, nothing to dump")]
            assert len(missing) + len(empty) == len(said), said[:3]
            # Each file dumped or said gone, none left out; a segment deleted between its header and
            # its read is both (its `Dumping` line, then its one line on stderr).
            dumped = {
                line[len("Dumping ") :] for line in proc.stdout.splitlines() if line.startswith("Dumping ")
            }
            said_gone = {f for f in files if any(f"{f}: " in line for line in missing)}
            assert len(said_gone) == len(missing), missing
            assert dumped | said_gone == set(files), sorted(set(files) - dumped - said_gone)[:3]
            gone += len(missing)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=90)
    print(f"{runs} runs under load, {with_workers} with a worker, {gone} segments gone mid-dump")
    assert with_workers == runs, f"{runs} runs, {with_workers} with a worker: the pool was not used"
