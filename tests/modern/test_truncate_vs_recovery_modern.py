"""`ktool truncate` against a real 4.x / 3.9 broker's log recovery, on record batches v2 that broker wrote.

One KRaft node (controller and broker) per release, four topics, one per kind of damage: ``cut`` (the
active segment ends in the middle of its last batch), ``garbage`` (100 random bytes appended), ``zeros``
(100 zero bytes appended), ``flip`` (one byte flipped in the middle of the last batch: its CRC fails).

Round 1: two idempotent producers (one of them compressing) write into all four at full speed until each
has rolled a segment (so a producer snapshot exists), and the broker is killed with SIGKILL mid-write.
Round 2, on 4.x only: once restarted the partitions are at a new leader epoch (4.x fences and unfences
the restarted broker; 3.9 keeps the epoch, so round 2 would add nothing there), a third idempotent
producer writes exactly one batch into each, and the broker is killed again.
After each kill the active segments are damaged, the partition dirs copied, and the broker restarted: it
recovers them (LogLoader / LogSegment.recover / UnifiedLog.rebuildProducerState). Then, per topic:

* ``ktool truncate --dry-run --json`` on a copy of the damaged dir plans the broker's cut: the bytes it
  keeps (byte for byte), the log end offset the broker logged at load, the leader epochs it keeps (in
  round 2 ``cut`` and ``flip`` lose the only batch of the newest epoch, so the broker truncates the
  leader-epoch-checkpoint), the snapshots it deletes;
* ``ktool truncate`` on another copy leaves the broker's rebuilt ``.index`` and ``.timeindex`` of that
  segment (entry for entry) and a partition whose producer state (ktool's replay from the
  kept snapshot, and from the log start) equals the snapshot the broker wrote at its log end after
  recovery, producer by producer; the snapshots both keep hold the same entries (the broker deletes and
  retakes those past the first segment it recovers: docs/validate.md says why ktool keeps them).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_tools.cli.main import cli
from kafka_tools.format.checkpoints import read_leader_epoch_checkpoint
from kafka_tools.format.snapshot import read_snapshot
from kafka_tools.log.files.dirs import read_partition
from kafka_tools.transactions.producers import replay_partition
from tests.support.modern import FAST_START, ModernCluster, Node, create_topic, partition_dir

DAMAGES = ("cut", "garbage", "zeros", "flip")
GARBAGE = random.Random(41).randbytes(100)
SEGMENT_BYTES = 1 << 20  # the smallest segment.bytes 4.x accepts
LOG_OVERHEAD = 12  # base offset, batch length


@dataclass(frozen=True)
class Case:
    """One damaged partition: its dir as damaged (before the broker saw it), as the broker recovered it
    (copied once the restarted broker answered), and the log end offset the broker logged at load."""

    damaged: Path
    recovered: Path
    log_end: int
    epoch_before: int  # the newest leader epoch in the damaged dir's checkpoint


def _batches(data: bytes) -> list[tuple[int, int, int]]:
    """(position, base offset, size with the 12-byte prefix) of each whole v2 batch, walked as Kafka's
    FileLogInputStream walks them (no CRC check: a damaged batch is still a frame)."""
    out, pos = [], 0
    while pos + LOG_OVERHEAD <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if length < 49 or pos + LOG_OVERHEAD + length > len(data):
            break
        out.append((pos, base, LOG_OVERHEAD + length))
        pos += LOG_OVERHEAD + length
    return out


def _damage(log: Path, kind: str) -> None:
    data = bytearray(log.read_bytes())
    batches = _batches(bytes(data))
    pos, _, size = batches[-1]
    del data[pos + size :]  # a batch the kill cut short (a cut of its own): the damage goes on a whole one
    if kind == "cut":
        del data[pos + size // 2 :]
    elif kind == "garbage":
        data += GARBAGE
    elif kind == "zeros":
        data += bytes(100)
    else:  # a byte of the last batch's records: its CRC (over attributes to the end) no longer matches
        data[pos + 61 + (size - 61) // 2] ^= 0xFF
    log.write_bytes(bytes(data))


def _active_log(part: Path) -> Path:
    return max(part.glob("*.log"))


def _index_entries(path: Path, size: int) -> list[bytes]:
    """An index's entries, without the zeros a broker preallocates after them."""
    data = path.read_bytes()
    entries = [data[i : i + size] for i in range(0, len(data) - len(data) % size, size)]
    while entries and entries[-1] == bytes(size):
        entries.pop()
    return entries


def _rolled(part: Path) -> bool:
    """A segment rolled (so a producer snapshot was taken) and whole batches written after it."""
    logs = sorted(part.glob("*.log"))
    return len(logs) >= 2 and len(_batches(logs[-1].read_bytes())) >= 4


def _epochs(part: Path) -> list[tuple[int, int]]:
    path = part / "leader-epoch-checkpoint"
    return [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(path).entries]


def _log_end_at_load(server_log: Path, part: Path) -> int:
    """The log end offset the broker logged when it last loaded ``part`` ("Completed load of Log")."""
    pattern = rf"Completed load of Log\(dir={re.escape(str(part))}, .*?logEndOffset=(\d+)\)"
    found = re.findall(pattern, server_log.read_text("utf-8", "replace"))
    assert found, f"the broker never logged loading {part}"
    return int(found[-1])


class _Writers:
    """Idempotent producers writing to every topic until stopped; stopping purges what they still hold,
    so nothing reaches the broker once it is restarted."""

    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._write, args=(bootstrap, topics, codec), daemon=True)
            for codec in ("none", "lz4")
        ]
        for t in self.threads:
            t.start()

    def _write(self, bootstrap: str, topics: list[str], codec: str) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "batch.size": 16384,  # the Java producer's default: many batches, indexed one by one
                "compression.type": codec,
                "log_level": 0,
            }
        )
        i = 0
        while not self.stop.is_set():
            try:
                producer.produce(topics[i % len(topics)], b"v" * 900, f"k{i % 97}".encode())
                i += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.purge()
        producer.flush(0)

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


def _one_batch_each(bootstrap: str, topics: list[str]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 50})
    for topic in topics:
        for i in range(5):
            producer.produce(topic, f"round 2 record {i}".encode(), b"round-2")
    assert producer.flush(60) == 0, "round 2's batches were not acknowledged"


def _leader_epochs_logged(server_log: Path, topic: str) -> list[int]:
    """The leader epoch of each time the broker took the leadership of ``topic``-0 (Partition.makeLeader)."""
    pattern = rf"Leader {re.escape(topic)}-0 with topic id \S+ starts at leader epoch (\d+)"
    return [int(n) for n in re.findall(pattern, server_log.read_text("utf-8", "replace"))]


def _wait_leading(node: Node, topics: list[str], taken_before: dict[str, int]) -> None:
    """Until the restarted broker leads every topic again, and, where it took a new leader epoch (4.x
    fences and unfences a restarted broker; 3.9 keeps the epoch), until the checkpoint names it: the
    recovered checkpoint is written asynchronously."""
    deadline = time.monotonic() + 60
    waiting = set(topics)
    while waiting:
        for topic in sorted(waiting):
            taken = _leader_epochs_logged(node.server_log, topic)[taken_before[topic] :]
            if taken and max(e for e, _ in _epochs(partition_dir(node, topic))) >= taken[-1]:
                waiting.discard(topic)
        assert time.monotonic() < deadline, f"not leading {sorted(waiting)} 60 s after the restart"
        time.sleep(0.1)


def _crash_and_recover(
    cluster: ModernCluster, topics: dict[str, str], root: Path, round_: int
) -> dict[str, Case]:
    node = cluster.brokers[0]
    parts = {kind: partition_dir(node, topic) for kind, topic in topics.items()}
    damaged = {}
    epochs_before = {}
    taken_before = {topic: len(_leader_epochs_logged(node.server_log, topic)) for topic in topics.values()}
    for kind, part in parts.items():
        _damage(_active_log(part), kind)
        damaged[kind] = root / f"round{round_}-damaged" / part.name
        shutil.copytree(part, damaged[kind])
        epochs_before[part] = max(e for e, _ in _epochs(part))
    cluster.start_node(node)
    _wait_leading(node, list(topics.values()), taken_before)
    cases = {}
    for kind, part in parts.items():
        recovered = root / f"round{round_}-recovered" / part.name
        shutil.copytree(part, recovered)
        cases[kind] = Case(
            damaged[kind], recovered, _log_end_at_load(node.server_log, part), epochs_before[part]
        )
    return cases


@pytest.fixture(scope="module")
def recovered(kafka_release, tmp_path_factory) -> dict[tuple[int, str], Case]:
    """Both rounds on one broker of ``kafka_release``: (round, damage) -> Case."""
    root = tmp_path_factory.mktemp(f"recovery-{kafka_release.version}")
    topics = {kind: f"recovery-{kind}" for kind in DAMAGES}
    cluster = ModernCluster(kafka_release, "combined", root / "cluster", jvm_options=FAST_START)
    cases: dict[tuple[int, str], Case] = {}
    with cluster:
        node = cluster.brokers[0]
        for topic in topics.values():
            create_topic(cluster, topic, config={"segment.bytes": SEGMENT_BYTES})
        # round 1: killed while the producers write, once every topic has rolled a segment
        writers = _Writers(cluster.bootstrap, list(topics.values()))
        try:
            deadline = time.monotonic() + 120
            while not all(_rolled(partition_dir(node, t)) for t in topics.values()):
                assert time.monotonic() < deadline, "the producers did not fill a segment in 120 s"
                time.sleep(0.05)
            cluster.stop_node(node, kill=True)
        finally:
            writers.join()
        for kind, case in _crash_and_recover(cluster, topics, root, 1).items():
            cases[1, kind] = case
        if kafka_release.major < 4:
            return cases  # 3.9 keeps the leader epoch over a restart: round 2 would prove nothing new
        # round 2: one batch per topic at the new leader epoch, then killed again
        _one_batch_each(cluster.bootstrap, list(topics.values()))
        cluster.stop_node(node, kill=True)
        for kind, case in _crash_and_recover(cluster, topics, root, 2).items():
            cases[2, kind] = case
    return cases


def _ktool(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _plan(case: Case, tmp_path: Path) -> dict:
    copy = tmp_path / "plan" / case.damaged.name
    shutil.copytree(case.damaged, copy)
    result = _ktool("truncate", "--dry-run", "--json", copy)
    assert result.exit_code == 0, result.output
    plans = [r for r in map(json.loads, result.stdout.splitlines()) if r["type"] == "plan"]
    assert len(plans) == 1, result.stdout
    return plans[0]


@pytest.mark.parametrize("damage", DAMAGES)
def test_truncate_plan_equals_the_broker_recovery(recovered, kafka_release, damage: str, tmp_path: Path):
    for (round_, kind), case in recovered.items():
        if kind == damage:
            _check_plan(case, kafka_release.major, damage, round_, tmp_path / f"round{round_}")


def _check_plan(case: Case, major: int, damage: str, round_: int, tmp_path: Path) -> None:
    plan = _plan(case, tmp_path)
    active = _active_log(case.damaged).name
    theirs = (case.recovered / active).read_bytes()
    damaged = (case.damaged / active).read_bytes()
    # the broker cut this segment (not vacuous: each kind of damage left bytes it removed)
    assert len(theirs) < len(damaged) and damaged.startswith(theirs)
    assert plan["repair"] == "truncate", plan
    cut = plan["truncate"]
    assert cut["file"].endswith(active) and cut["newSize"] == len(theirs)
    assert plan["deleteSegments"] == [] and plan["lostValidEntries"] == 0
    assert plan["newLogEndOffset"] == case.log_end

    # the leader epochs: ktool keeps what the broker kept; the broker then adds the epoch it leads in
    before = _epochs(case.damaged)
    change = plan["leaderEpochCheckpoint"]
    kept = before if change is None else before[: change["keepEntries"]]
    theirs_epochs = _epochs(case.recovered)
    assert theirs_epochs[: len(kept)] == kept
    assert all(
        epoch > case.epoch_before and start == case.log_end for epoch, start in theirs_epochs[len(kept) :]
    )
    # not vacuous on 4.x: round 2's only batch at the new epoch is lost, and its epoch with it
    if major >= 4 and round_ == 2 and damage in ("cut", "flip"):
        assert before[-1] == (case.epoch_before, case.log_end) and kept == before[:-1]
    else:
        assert kept == before

    # snapshots past the new log end are deleted (none here: the damage is in the last segment's tail)
    snapshots = {p.name for p in case.damaged.glob("*.snapshot")}
    assert plan["deleteSnapshots"] == []
    assert snapshots and all(int(n.split(".")[0]) <= case.log_end for n in snapshots)


@pytest.mark.parametrize("damage", DAMAGES)
def test_truncated_producer_state_equals_the_broker_snapshot(recovered, damage: str, tmp_path: Path):
    for (round_, kind), case in recovered.items():
        if kind == damage:
            _check_producer_state(case, tmp_path / f"round{round_}")


def _check_producer_state(case: Case, tmp_path: Path) -> None:
    copy = tmp_path / "logs" / case.damaged.name
    shutil.copytree(case.damaged, copy)
    result = _ktool("truncate", "--backup-dir", tmp_path / "backup", copy)
    assert result.exit_code == 0, result.output
    for log in case.recovered.glob("*.log"):
        assert (copy / log.name).read_bytes() == log.read_bytes(), log.name
    # the cut segment's indexes, rebuilt by both (an entry every 4096 bytes, index.interval.bytes)
    active = _active_log(copy)
    for suffix, size in ((".index", 8), (".timeindex", 12)):
        mine, theirs = (
            _index_entries(d / active.with_suffix(suffix).name, size) for d in (copy, case.recovered)
        )
        assert mine == theirs and mine, suffix

    ours = replay_partition(read_partition(copy))
    assert ours.log_end_offset == case.log_end
    at_end = read_snapshot(case.recovered / f"{case.log_end:020d}.snapshot")
    assert at_end.is_valid and at_end.entries
    theirs = {
        e.producer_id: (e.producer_epoch, e.last_sequence, e.last_offset, e.timestamp,
                        e.coordinator_epoch, e.current_txn_first_offset)
        for e in at_end.entries
    }  # fmt: skip
    mine = _state(ours)
    assert mine == theirs
    # the broker rebuilds the snapshots past the recovery point (it deletes them and takes new ones at the
    # recovered segments' bases and at its log end); those both keep hold the same producers
    common = {p.name for p in copy.glob("*.snapshot")} & {p.name for p in case.recovered.glob("*.snapshot")}
    assert common
    for name in common:
        assert read_snapshot(copy / name).entries == read_snapshot(case.recovered / name).entries, name
    assert _state(replay_partition(read_partition(copy), from_start=True)) == mine
    assert _epochs(copy) == _epochs(case.recovered)[: len(_epochs(copy))]


def _state(producers) -> dict[int, tuple]:
    return {
        s.producer_id: (s.producer_epoch, s.last_sequence, s.last_offset, s.last_timestamp,
                        s.coordinator_epoch, s.open.first_offset if s.open else -1)
        for s in producers.producers.values()
    }  # fmt: skip
