"""`replicas diff` against a real unclean election on two Kafka 0.9.0.1 brokers.

Broker 1 leads `orders-0` (replication factor 2, unclean.leader.election.enable=true), broker 2
follows. Produce (acks=1) until both hold the records; stop broker 2; produce more to broker 1;
SIGKILL broker 1; start broker 2, which is elected uncleanly; produce more to it. Then, before
broker 1 comes back, `ktool replicas diff` on copies of both log dirs predicts what broker 1 will
truncate and which offsets will stay different. Broker 1 is started, catches up, and its real log is
compared with the prediction, record by record and byte for byte; `replicas diff` on the live dirs
then reports the divergence Kafka 0.9 leaves behind.

The expected truncation point is also worked out here from 0.9's code, independently of ktool:
ReplicaManager.makeFollowers truncates to the checkpointed high watermark (never above the log end),
and ReplicaFetcherThread.handleOffsetOutOfRange to the leader's log end when that is lower.
Records are read back with kafka-python's MemoryRecords, not with ktool's decoder.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.server]

TOPIC = "orders"


def _values(log_path: Path) -> dict[int, bytes]:
    """offset -> value of every message in a partition's segments (kafka-python's decoder)."""
    from kafka.record import MemoryRecords

    out: dict[int, bytes] = {}
    for seg in sorted(log_path.glob("*.log")):
        records = MemoryRecords(seg.read_bytes())
        while True:
            batch = records.next_batch()
            if batch is None:
                break
            for r in batch:
                out[r.offset] = r.value
    return out


def _segment_bytes(log_path: Path) -> bytes:
    segs = sorted(log_path.glob("*.log"))
    assert len(segs) == 1, segs  # one segment each (the default segment.bytes is 1 GiB)
    return segs[0].read_bytes()


def _checkpoint(log_dir: Path, name: str) -> int | None:
    path = log_dir / name
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        topic, partition, offset = line.split()
        if topic == TOPIC and partition == "0":
            return int(offset)
    return None


def _log_end(part: Path) -> int:
    from kafka_tools.log.files.views import open_partition
    from kafka_tools.log.reads.locate import log_end_offset

    return log_end_offset(open_partition(str(part)))


def _wait(what: str, check, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _state(zk) -> dict:
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = zk.get(f"/brokers/topics/{TOPIC}/partitions/0/state")
    except NoNodeError:
        return {}
    return json.loads(data)


def _produce(bootstrap: str, values: list[bytes]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks=1, api_version=(0, 9), linger_ms=0, retries=5, max_block_ms=60000
    )
    try:
        for v in values:
            producer.send(TOPIC, v, partition=0).get(timeout=60)
    finally:
        producer.close(timeout=10)


def _diff(*args: str) -> tuple[int, list[dict]]:
    from tests.support.script import ktool_script, script_env

    proc = subprocess.run(
        [ktool_script(), "replicas", "diff", "--json", *args],
        capture_output=True,
        text=True,
        env=script_env(),
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def _values_for(rng: random.Random, who: str, first: int, count: int) -> list[bytes]:
    return [f"{who}-{first + i}-".encode() + b"x" * rng.randint(5, 300) for i in range(count)]


# (seed, kill timing, records: shared, only the old leader's, only the new leader's)
CASES = [
    pytest.param(11, "checkpointed", (30, 25, 10), id="new-leader-shorter-checkpointed"),
    pytest.param(12, "checkpointed", (20, 8, 30), id="new-leader-longer-checkpointed"),
    pytest.param(13, "at-once", (25, 40, 15), id="killed-at-once"),
]


@pytest.mark.parametrize(("seed", "timing", "counts"), CASES)
def test_prediction_matches_what_kafka_09_did(zookeeper_server, kafka09_home, tmp_path, seed, timing, counts):
    try:
        from kazoo.client import KazooClient
    except ImportError:
        pytest.skip("kazoo is not installed")
    from tests.support.servers import KafkaBroker, kafka_topics, wait_znode_gone

    rng = random.Random(seed)
    shared, only_old, only_new = counts
    connect = f"{zookeeper_server.connect_string}/replicas-{uuid.uuid4().hex[:8]}"
    props = {
        "auto.create.topics.enable": "false",
        "unclean.leader.election.enable": "true",
        "auto.leader.rebalance.enable": "false",
        "replica.high.watermark.checkpoint.interval.ms": "1000",
    }
    old = KafkaBroker(connect, 1, properties=props, workdir=tmp_path / "b1")
    new = KafkaBroker(connect, 2, properties=props, workdir=tmp_path / "b2")
    zk = KazooClient(connect)
    try:
        old.start()
        new.start()
        zk.start(timeout=10)
        kafka_topics(connect, "--create", "--topic", TOPIC, "--replica-assignment", "1:2")
        _wait(
            "broker 1 to lead with both in sync",
            lambda: _state(zk).get("isr") == [1, 2] and _state(zk)["leader"] == 1,
        )
        old_part, new_part = old.log_dir / f"{TOPIC}-0", new.log_dir / f"{TOPIC}-0"

        _produce(old.bootstrap, _values_for(rng, "both", 0, shared))
        _wait("the follower to copy the first records", lambda: _log_end(new_part) == shared)
        new.stop(clean=True, cleanup=False)
        _wait("broker 2 out of the ISR", lambda: _state(zk).get("isr") == [1])
        _produce(old.bootstrap, _values_for(rng, "old", shared, only_old))
        if timing == "checkpointed":
            _wait(
                "broker 1's high watermark checkpoint",
                lambda: _checkpoint(old.log_dir, "replication-offset-checkpoint") == shared + only_old,
            )
        old.stop(clean=False, cleanup=False)  # SIGKILL
        wait_znode_gone(zk, "/brokers/ids/1")
        new.start()
        _wait("broker 2 elected uncleanly", lambda: _state(zk).get("leader") == 2)
        _produce(new.bootstrap, _values_for(rng, "new", shared, only_new))
        _wait("broker 2's records", lambda: _log_end(new_part) == shared + only_new)

        # ---- the prediction, on copies, before broker 1 returns
        copy_old, copy_new = tmp_path / "copy-1", tmp_path / "copy-2"
        shutil.copytree(old.log_dir, copy_old)
        shutil.copytree(new.log_dir, copy_new)
        code, lines = _diff(str(copy_old), str(copy_new))
        assert code == 1  # they hold different records at `shared`
        comparison = next(o for o in lines if o["type"] == "comparison")
        assert comparison["firstDifference"] == shared
        pred = next(o for o in lines if o["type"] == "truncation" and o["leader"] == "broker 2")
        assert pred["follower"] == "broker 1" and pred["rule"] == "high-watermark"
        # 0.9's rule, worked out here: to the checkpointed high watermark, then the leader's end
        hw = min(_checkpoint(copy_old, "replication-offset-checkpoint") or 0, shared + only_old)
        expected = min(hw, shared + only_new)
        assert pred["truncateTo"] == expected
        assert (pred["lostStartOffset"], pred["lostEndOffset"]) == (expected, shared + only_old)
        silent = [(r["startOffset"], r["endOffset"]) for r in pred["divergentAfter"]]
        assert silent == ([(shared, expected)] if expected > shared else [])

        # ---- broker 1 returns as a follower and catches up
        old.start()
        _wait("broker 1 back in the ISR", lambda: sorted(_state(zk).get("isr", [])) == [1, 2])
        _wait("equal log ends", lambda: _log_end(old_part) == _log_end(new_part) == shared + only_new)

        before = _values(copy_old / f"{TOPIC}-0")
        after, leader = _values(old_part), _values(new_part)
        cut = pred["lostStartOffset"]
        assert sorted(after) == list(range(shared + only_new))
        assert all(after[o] == before[o] for o in range(cut))  # kept below the truncation point
        assert all(after[o] == leader[o] for o in range(cut, shared + only_new))  # copied from 2 above
        lost = [before[o] for o in range(cut, shared + only_old)]
        assert len(lost) == pred["lostRecords"] == pred["lostOffsets"]
        assert not set(lost) & set(after.values())  # gone from broker 1
        # byte for byte: the kept prefix, then broker 2's message sets from the cut on
        old_bytes, after_bytes = _segment_bytes(copy_old / f"{TOPIC}-0"), _segment_bytes(old_part)
        new_bytes = _segment_bytes(new_part)
        kept = len(old_bytes) - pred["lostBytes"]
        assert after_bytes[:kept] == old_bytes[:kept]
        copied = len(after_bytes) - kept
        assert after_bytes[kept:] == new_bytes[len(new_bytes) - copied :]
        for r in pred["divergentAfter"]:
            old_side, new_side = r["sides"]
            offsets = range(r["startOffset"], r["endOffset"])
            assert old_side["records"] == new_side["records"] == len(offsets)
            assert all(after[o] != leader[o] for o in offsets)  # the divergence Kafka left

        # ---- on the live dirs (both brokers running): the silent divergence, nothing to truncate
        code, lines = _diff(str(old.log_dir), str(new.log_dir))
        live = next(o for o in lines if o["type"] == "comparison")
        assert [(r["startOffset"], r["endOffset"]) for r in live["ranges"]] == silent
        assert code == (1 if silent else 0)
        if silent and silent[-1][1] < shared + only_new:
            assert live["method"] == "full-compare"  # the ends agree: only a full compare finds it
        replicas = [o for o in lines if o["type"] == "replica"]
        assert {r["logEndOffset"] for r in replicas} == {shared + only_new}
        assert all(r["inFlight"] for r in replicas)
    finally:
        for b in (old, new):
            b.stop(clean=False, cleanup=False)
        zk.stop()
        zk.close()
