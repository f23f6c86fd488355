"""`replicas diff` against a real unclean election on three Kafka 4.x brokers, with leader epochs.

The session's KRaft cluster (one controller, brokers 1-3), a topic of replication factor 3 led by broker
1 (``unclean.leader.election.enable=true``, ``min.insync.replicas=1``):

1. ``shared`` records reach all three (acks=all);
2. broker 3 is stopped (the follower cut off); broker 1 leads on, ``only_1`` records reach 1 and 2;
3. broker 1 is stopped: broker 2 leads at a new epoch, ``only_2`` records reach it alone;
4. broker 2 is stopped; broker 3 is started and, the only replica left, is elected uncleanly: its new
   epoch starts at ``shared``; ``only_3`` records are written to it;
5. the three log dirs are copied and ``ktool replicas diff`` predicts, for broker 3 leading, where
   brokers 1 and 2 will truncate and which records they lose. Broker 2's last epoch is one broker 3
   never had: KIP-279's case (the leader answers with the epoch below and its end).
6. Brokers 1 and 2 are started, truncate as KIP-101/279 make them and catch up. The prediction must
   equal what each logged ("Truncating to offset N") and what its log then holds, record for record:
   the kept prefix is its own, everything above is broker 3's, and the records ktool said it loses are
   gone.

Also a healthy replicated topic: the three live replicas are identical or a prefix, exit 0.
Records are read back with kafka-python's decoder, not ktool's. Every broker is running again at the end.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.support.modern import HOST, ModernCluster, Node, create_topic, partition_dir

SHARED, ONLY_1, ONLY_2, ONLY_3 = 30, 12, 7, 20


def _values(part: Path) -> dict[int, bytes]:
    """offset -> value of every record in a partition's segments (kafka-python's decoder)."""
    from kafka.record import MemoryRecords

    out: dict[int, bytes] = {}
    for seg in sorted(part.glob("*.log")):
        records = MemoryRecords(seg.read_bytes())
        while (batch := records.next_batch()) is not None:
            for r in batch:
                out[r.offset] = r.value
    return out


def _wait(what: str, check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


def _partition(bootstrap: str, topic: str):
    """(leader, isr) as a live broker answers, or None while none answers."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 2000, "log_level": 0})
    try:
        meta = admin.list_topics(topic, timeout=3).topics[topic].partitions[0]
    except Exception:  # noqa: BLE001 - no broker answering yet
        return None
    return meta.leader, sorted(meta.isrs)


def _produce(node: Node, topic: str, values: list[bytes], acks: str = "1") -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": f"{HOST}:{node.port}", "acks": acks, "linger.ms": 0})
    for v in values:
        producer.produce(topic, v, partition=0)
        assert producer.flush(30) == 0, f"not acknowledged: {v!r}"


def _log_end(part: Path) -> int:
    return max(_values(part), default=-1) + 1


def _truncated_to(node: Node, topic: str, since: int) -> list[int]:
    """The offsets the broker logged truncating ``topic``-0 to, in its log from byte ``since`` on."""
    import re

    with open(node.server_log, "rb") as f:
        f.seek(since)
        text = f.read().decode("utf-8", "replace")
    pattern = rf"\[UnifiedLog partition={re.escape(topic)}-0, dir=[^\]]*\] Truncating to offset (\d+)"
    return [int(n) for n in re.findall(pattern, text)]


def _copy(node: Node, topic: str, dest: Path) -> Path:
    """A log dir holding the partition and what names the broker: meta.properties, the checkpoints."""
    dest.mkdir(parents=True)
    for name in ("meta.properties", "replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        if (node.log_dir / name).is_file():
            shutil.copy2(node.log_dir / name, dest / name)
    shutil.copytree(partition_dir(node, topic), dest / f"{topic}-0")
    return dest


def _diff(*args: object) -> tuple[int, list[dict]]:
    from tests.support.script import ktool_script, script_env

    proc = subprocess.run(
        [ktool_script(), "replicas", "diff", "--json", *map(str, args)],
        capture_output=True,
        text=True,
        env=script_env(),
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture
def split(kafka4_split: ModernCluster):
    """The session's 4.x cluster, every broker running again after the test whatever it stopped."""
    yield kafka4_split
    kafka4_split.start_stopped()


def test_prediction_equals_what_the_old_replicas_truncate_to(split: ModernCluster, tmp_path: Path):
    topic = f"unclean-{uuid.uuid4().hex[:8]}"
    b1, b2, b3 = (split.broker(i) for i in (1, 2, 3))
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": split.bootstrap})
    config = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2, 3]], config=config)])[topic].result(60)
    _wait("broker 1 leading, all in sync", lambda: _partition(split.bootstrap, topic) == (1, [1, 2, 3]))

    _produce(b1, topic, [f"shared-{i}".encode() for i in range(SHARED)], acks="all")
    _wait("three replicas", lambda: all(_log_end(partition_dir(n, topic)) == SHARED for n in (b1, b2, b3)))
    split.stop_node(b3)  # the follower cut off
    _wait("broker 3 out of the ISR", lambda: _partition(f"{HOST}:{b1.port}", topic) == (1, [1, 2]))
    _produce(b1, topic, [f"only-1-{i}".encode() for i in range(ONLY_1)], acks="all")
    _wait("broker 2 in step", lambda: _log_end(partition_dir(b2, topic)) == SHARED + ONLY_1)
    split.stop_node(b1)
    _wait("broker 2 leading", lambda: (_partition(f"{HOST}:{b2.port}", topic) or (0,))[0] == 2)
    _produce(b2, topic, [f"only-2-{i}".encode() for i in range(ONLY_2)])
    split.stop_node(b2)

    split.start_node(b3, wait=False)
    _wait("broker 3 elected uncleanly", lambda: (_partition(f"{HOST}:{b3.port}", topic) or (0,))[0] == 3, 120)
    _produce(b3, topic, [f"only-3-{i}".encode() for i in range(ONLY_3)])

    # ---- the prediction, on copies, before brokers 1 and 2 return
    copies = {n.node_id: _copy(n, topic, tmp_path / f"copy-{n.node_id}") for n in (b1, b2, b3)}
    code, lines = _diff("--records", "--partition", f"{topic}-0", *copies.values())
    assert code == 1, lines  # different records at offset SHARED
    replicas = {o["replica"]: o for o in lines if o["type"] == "replica"}
    assert set(replicas) == {"broker 1", "broker 2", "broker 3"}
    epochs = {r: [e["epoch"] for e in o["leaderEpochs"]] for r, o in replicas.items()}
    assert len(epochs["broker 2"]) == 2 and epochs["broker 2"][-1] not in epochs["broker 3"], (
        epochs
    )  # KIP-279
    pred = {o["follower"]: o for o in lines if o["type"] == "truncation" and o["leader"] == "broker 3"}
    assert set(pred) == {"broker 1", "broker 2"}
    assert all(p["rule"] == "leader-epoch" for p in pred.values())
    said_lost: dict[str, list[tuple[int, str]]] = {}  # --records: what each follower of broker 3 loses
    current = None
    for o in lines:
        if o["type"] == "truncation":
            current = said_lost.setdefault(o["follower"], []) if o["leader"] == "broker 3" else None
        elif o["type"] == "record" and current is not None:
            current.append((o["offset"], o["value"]))

    # ---- brokers 1 and 2 return as followers of broker 3 and catch up
    since = {n.node_id: n.server_log.stat().st_size for n in (b1, b2)}
    for node in (b1, b2):
        split.start_node(node, wait=False)
    end = SHARED + ONLY_3
    _wait(
        "brokers 1 and 2 caught up",
        lambda: all(_log_end(partition_dir(n, topic)) == end for n in (b1, b2)),
        120,
    )
    leader = _values(partition_dir(b3, topic))
    assert sorted(leader) == list(range(end))
    for node in (b1, b2):
        p = pred[f"broker {node.node_id}"]
        before = _values(copies[node.node_id] / f"{topic}-0")
        after = _values(partition_dir(node, topic))
        # what the broker did, in its own words
        assert _truncated_to(node, topic, since[node.node_id]) == [p["truncateTo"]]
        cut = p["lostStartOffset"]
        assert cut == p["truncateTo"] == SHARED  # everything past the shared records goes (KIP-101/279)
        assert (p["lostEndOffset"], p["lostOffsets"], p["lostRecords"]) == (
            max(before) + 1,
            max(before) + 1 - cut,
            max(before) + 1 - cut,
        )
        assert sorted(after) == list(range(end))
        assert all(after[o] == before[o] for o in range(cut))  # kept below the truncation point
        assert all(after[o] == leader[o] for o in range(cut, end))  # broker 3's above
        lost = [before[o] for o in range(cut, max(before) + 1)]
        assert not set(lost) & set(after.values())
        # the records ktool listed as lost are those, offset for offset
        assert said_lost[f"broker {node.node_id}"] == [
            (o, before[o].decode()) for o in range(cut, max(before) + 1)
        ]
        assert p["divergentAfter"] == []  # epochs leave no silent divergence


def test_healthy_replicated_topic_is_identical_or_a_prefix(kafka4_split: ModernCluster, tmp_path: Path):
    topic = f"healthy-{uuid.uuid4().hex[:8]}"
    create_topic(kafka4_split, topic, replication=3)
    b1 = kafka4_split.brokers[0]
    _produce(b1, topic, [f"r{i}".encode() for i in range(50)], acks="all")
    dirs = [_copy(n, topic, tmp_path / f"b{n.node_id}") for n in kafka4_split.brokers]
    code, lines = _diff("--partition", f"{topic}-0", *dirs)
    assert code == 0, lines
    comparisons = [o for o in lines if o["type"] == "comparison"]
    assert len(comparisons) == 3 and {c["status"] for c in comparisons} <= {"identical", "prefix"}
    assert all(o["lostOffsets"] == 0 for o in lines if o["type"] == "truncation")
