"""`ktool transactions` against real Kafka 4.4.0 and 3.9.2 brokers and their own TransactionsCommand
(`kafka-transactions.sh`) as the oracle: transactional producers committing and aborting leave no
finding, and list/describe/last stable offsets equal the broker's; a producer killed mid-transaction is
open, not hanging, until the coordinator aborts it; a real hanging transaction (the coordinator's
`__transaction_state` partition removed while the broker was down) is found offline on a copy as
find-hanging finds it live, and both report nothing once `kafka-transactions.sh abort` (the command
ktool printed) cleared it."""

from __future__ import annotations

import json
import shutil
import signal
import struct
import subprocess
import sys
import time
import uuid

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import ModernCluster, create_topic, run_tool

PRODUCER = """
import sys, time
from confluent_kafka import Producer
bootstrap, tid, topic, timeout = sys.argv[1:5]
config = {"bootstrap.servers": bootstrap, "transactional.id": tid}
p = Producer({**config, "transaction.timeout.ms": int(timeout)})
p.init_transactions(60)
p.begin_transaction()
for i in range(5):
    p.produce(topic, value=b"v%d" % i, partition=0)
p.flush(60)
print("ready", flush=True)
time.sleep(3600)
"""


def _tool(cluster, *args: str) -> list[dict[str, str]]:
    """TransactionsCommand's table as rows of {header: value} (values never hold spaces here)."""
    out = run_tool(
        cluster.release, "TransactionsCommand", ["--bootstrap-server", cluster.bootstrap, *args]
    ).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    if not lines:
        return []
    return [dict(zip(lines[0], row, strict=False)) for row in lines[1:]]


def _ktool_json(*args: str) -> tuple[int, list[dict]]:
    result = run_ktool("transactions", *args, "--json")  # the partition count from the KRaft metadata
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


def _wait(what: str, check, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.5)


def _read_committed_end(cluster, topic: str, partition: int) -> tuple[int, int]:
    """(last stable offset, high watermark) as a read_committed consumer's ListOffsets sees them."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "lso", "isolation.level": "read_committed"}
    )
    u = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "hw", "isolation.level": "read_uncommitted"}
    )
    try:
        tp = TopicPartition(topic, partition)
        return c.get_watermark_offsets(tp, timeout=10, cached=False)[1], u.get_watermark_offsets(
            tp, timeout=10, cached=False
        )[1]
    finally:
        c.close()
        u.close()


def test_committed_and_aborted_transactions_equal_kafka_transactions(modern_kafka) -> None:
    from confluent_kafka import Producer

    cluster = modern_kafka
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, partitions=3)
    ids = [f"{topic}-a", f"{topic}-b"]
    for n, tid in enumerate(ids):
        p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, "linger.ms": 5})
        p.init_transactions(60)
        for k, commit in enumerate([True, False, True][n:]):
            p.begin_transaction()
            for i in range(7 + k):
                p.produce(topic, value=b"x%d" % i, partition=(i + n) % 3)
            p.flush(30)
            (p.commit_transaction if commit else p.abort_transaction)(60)
    _wait("every marker written", lambda: all(
        lso == hw for lso, hw in (_read_committed_end(cluster, topic, n) for n in range(3))
    ))  # fmt: skip
    log_dir = cluster.brokers[0].log_dir
    parts = [str(log_dir / "__transaction_state-0"), *(str(log_dir / f"{topic}-{n}") for n in range(3))]

    def settled() -> bool:
        _, objs = _ktool_json("list", parts[0])
        return all(
            o["state"] in ("CompleteCommit", "CompleteAbort") for o in objs if o.get("transactionalId") in ids
        )

    _wait("the coordinator's Complete* records", settled)
    code, findings = _ktool_json("find-hanging", *parts)
    assert (code, findings[:-1]) == (0, []), findings
    _, listed = _ktool_json("list", parts[0])
    mine = {o["transactionalId"]: o for o in listed if o.get("transactionalId") in ids}
    assert set(mine) == set(ids)
    theirs = {row["TransactionalId"]: row for row in _tool(cluster, "list") if row["TransactionalId"] in ids}
    assert {t: (str(o["producerId"]), o["state"]) for t, o in mine.items()} == {
        t: (row["ProducerId"], row["TransactionState"]) for t, row in theirs.items()
    }
    for tid in ids:
        (row,) = _tool(cluster, "describe", "--transactional-id", tid)
        o = mine[tid]
        assert (str(o["producerId"]), str(o["producerEpoch"]), o["state"], str(o["timeoutMs"])) == (
            row["ProducerId"], row["ProducerEpoch"], row["TransactionState"], row["TransactionTimeoutMs"]
        )  # fmt: skip
    _, described = _ktool_json("describe", *parts)
    assert sum(o["type"] == "partition" for o in described) == 3
    for o in described:
        if o["type"] == "partition":
            lso, hw = _read_committed_end(cluster, o["topic"], o["partition"])
            assert (o["lastStableOffset"], o["logEndOffset"], o["openTransactions"]) == (lso, hw, [])


def _copy_if_there(source: str, target: str) -> None:
    try:
        shutil.copy2(source, target)
    except FileNotFoundError:
        pass


def test_list_as_another_user_reads_the_partition_count_from_what_it_can_read(maintained_kafka) -> None:
    """Kafka writes `__cluster_metadata-0/*.checkpoint` mode 0400: a user other than the broker's reads
    the image from the metadata log's segments instead, so the coordinator's one partition is known and
    no id is said to hash elsewhere (before: 50 partitions assumed, a wrong-partition line per id); the
    ids are those kafka-transactions lists. (The broker snapshots its metadata every second here.)"""
    import tempfile
    from pathlib import Path

    from confluent_kafka import Producer

    from kafka_tools.transactions.coordinator import partition_for
    from tests.support.as_user import run_ktool_as

    cluster = maintained_kafka
    topic = f"perm-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic)
    ids = [f"{topic}-app-{n}" for n in range(4)]
    assert any(partition_for(tid, 50) != 0 for tid in ids)  # a guess of 50 would misjudge them
    for tid in ids:
        p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, "linger.ms": 5})
        p.init_transactions(60)
        p.begin_transaction()
        p.produce(topic, value=b"x", partition=0)
        p.flush(30)
        p.commit_transaction(60)
    log_dir = cluster.brokers[0].log_dir

    def settled() -> bool:
        _, objs = _ktool_json("list", str(log_dir / "__transaction_state-0"))
        states = {o.get("transactionalId"): o.get("state") for o in objs}
        return all(states.get(tid) == "CompleteCommit" for tid in ids)

    _wait("the coordinator's CompleteCommit records", settled)
    snapshots = log_dir / "__cluster_metadata-0"
    _wait(
        "a metadata snapshot",
        lambda: any(not c.name.startswith("0" * 20) for c in snapshots.glob("*.checkpoint")),
    )
    root = Path(tempfile.mkdtemp(prefix="ktool-as-user-"))
    try:
        root.chmod(0o755)  # pytest's own temporary directories are root's alone
        copies = [root / name for name in ("warm", "copy")]
        for copy in copies:
            # the live broker renames and deletes files meanwhile (a checkpoint's .tmp or .part, a
            # deleted segment): one gone before it is copied is not in the copy
            ignore = shutil.ignore_patterns(".lock")
            shutil.copytree(log_dir, copy, ignore=ignore, copy_function=_copy_if_there)
        checkpoints = list((copies[1] / "__cluster_metadata-0").glob("*.checkpoint"))
        assert checkpoints and all(c.stat().st_mode & 0o777 == 0o400 for c in checkpoints)
        run = run_ktool_as("nobody", ["transactions", "list", "--json", str(copies[1])],
                           warm=["transactions", "list", "--json", str(copies[0])])  # fmt: skip
    finally:
        shutil.rmtree(root)
    assert run.exit_code == 0 and "hashes to partition" not in run.stderr, run.stderr
    listed = {
        o["transactionalId"]: o
        for o in map(json.loads, run.stdout.splitlines())
        if o["type"] == "transaction"
    }
    theirs = {row["TransactionalId"]: row for row in _tool(cluster, "list") if row["TransactionalId"] in ids}
    assert {t: (str(listed[t]["producerId"]), listed[t]["state"]) for t in ids} == {
        t: (row["ProducerId"], row["TransactionState"]) for t, row in theirs.items()
    }


@pytest.fixture(scope="module")
def _module_kafka(kafka_release, tmp_path_factory):
    props = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"}
    workdir = tmp_path_factory.mktemp(f"kafka{kafka_release.version}-transactions")
    with ModernCluster(kafka_release, "combined", workdir, properties=props) as cluster:
        yield cluster


@pytest.fixture
def own_kafka(_module_kafka):
    """A broker of this module's own (its tests stop it, remove its coordinator's partition, restart it;
    each names its own topics and transactional ids), running when a test starts."""
    _module_kafka.start_stopped()
    return _module_kafka


def _producer(cluster, tid: str, topic: str, timeout_ms: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, cluster.bootstrap, tid, topic, str(timeout_ms)],
        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return proc


def _copy(cluster, tmp_path, name: str):
    target = tmp_path / name
    shutil.copytree(cluster.brokers[0].log_dir, target, ignore=shutil.ignore_patterns(".lock"))
    return target


def test_a_killed_producer_is_open_until_the_coordinator_aborts_it(own_kafka, tmp_path) -> None:
    cluster = own_kafka
    create_topic(cluster, "killed")
    _producer(cluster, "killed-1", "killed", 4000)
    copy = _copy(cluster, tmp_path, "open")
    _, described = _ktool_json("describe", str(copy))
    (part,) = [o for o in described if o["type"] == "partition" and o["topic"] == "killed"]
    assert [t["firstOffset"] for t in part["openTransactions"]] == [0] and part["lastStableOffset"] == 0
    code, findings = _ktool_json("find-hanging", str(copy))
    assert (code, findings[:-1]) == (0, [])
    _wait("the coordinator's abort", lambda: _read_committed_end(cluster, "killed", 0)[0] > 0)
    _, described = _ktool_json("describe", str(_copy(cluster, tmp_path, "aborted")))
    (part,) = [o for o in described if o["type"] == "partition" and o["topic"] == "killed"]
    assert part["openTransactions"] == [] and part["lastStableOffset"] == part["logEndOffset"] == 6


def test_a_real_hanging_transaction_is_found_offline_as_find_hanging_finds_it(own_kafka, tmp_path) -> None:
    cluster = own_kafka
    create_topic(cluster, "pinned")
    _producer(cluster, "pinned-1", "pinned", 900_000)  # the coordinator would not abort it for 15 minutes
    node = cluster.brokers[0]
    cluster.stop_node(node)
    shutil.rmtree(node.log_dir / "__transaction_state-0")
    cluster.start_node(node)
    create_topic(cluster, "after-restart")  # the broker serves again
    live = _tool(cluster, "find-hanging", "--topic", "pinned", "--max-transaction-timeout", "0")
    assert len(live) == 1, live
    # Without --now: nothing was written after the transaction, but the broker ran on; the copy's clock
    # is the newest time its files hold (the KRaft metadata log, checkpoints), not the transaction's own.
    code, objs = _ktool_json(
        "find-hanging", "--max-transaction-timeout", "0", str(_copy(cluster, tmp_path, "quiet"))
    )
    assert code == 1 and [(f["topic"], str(f["firstOffset"])) for f in objs if f["type"] == "finding"] == [
        (row["Topic"], row["StartOffset"]) for row in live
    ]
    assert objs[-1]["clockSource"] != "the newest timestamp in the data", objs[-1]
    now = str(int(time.time() * 1000))
    offline = ("find-hanging", "--check-snapshots", "--max-transaction-timeout", "0", "--now", now)
    code, objs = _ktool_json(*offline, str(_copy(cluster, tmp_path, "hanging")))
    findings = [o for o in objs if o["type"] == "finding"]
    assert code == 1
    assert [(f["kind"], f["topic"], str(f["partition"]), str(f["producerId"]), str(f["firstOffset"]))
            for f in findings] == [
        ("hanging", row["Topic"], row["Partition"], row["ProducerId"], row["StartOffset"]) for row in live
    ]  # fmt: skip
    command = findings[0]["abortCommand"].split()
    assert command[:3] == ["kafka-transactions.sh", "--bootstrap-server", "BROKER:PORT"]
    run_tool(cluster.release, "TransactionsCommand", ["--bootstrap-server", cluster.bootstrap, *command[3:]])
    assert _tool(cluster, "find-hanging", "--topic", "pinned", "--max-transaction-timeout", "0") == []
    code, objs = _ktool_json(*offline, str(_copy(cluster, tmp_path, "aborted")))
    assert (code, objs[:-1]) == (0, [])


def test_snapshots_of_a_cleanly_stopped_broker_agree_with_their_log(own_kafka) -> None:
    """A marker with a new producer epoch clears the producer's batch history
    (ProducerStateEntry.maybeUpdateProducerEpoch): the snapshots then say last sequence -1, last offset
    -1. Kafka bumps the epoch when its coordinator aborts a timed-out transaction, and on 4.x at every
    commit of Java's producer (transaction version 2). Segments rolled between the transactions leave
    snapshots after each kind; a clean stop writes the last. `--check-snapshots` finds nothing (before:
    3 snapshot-disagrees on 4.4.0, 1 on 3.9.2)."""
    cluster = own_kafka
    topic = f"snap-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, config={"segment.ms": 100})
    perf = ["--topic", topic, "--num-records", "60", "--record-size", "20", "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={cluster.bootstrap}", "linger.ms=0",
            "--transactional-id", f"{topic}-java", "--transaction-duration-ms", "50"]  # fmt: skip
    run_tool(cluster.release, "ProducerPerformance", perf)
    time.sleep(0.2)
    _producer(cluster, f"{topic}-killed", topic, 1000)  # the coordinator aborts it with a new epoch
    _wait("the coordinator's abort", lambda: _read_committed_end(cluster, topic, 0)[0] > 0)
    time.sleep(0.2)
    run_tool(cluster.release, "ProducerPerformance", perf)  # rolls again: a snapshot after the abort
    node = cluster.brokers[0]
    cluster.stop_node(node)
    snapshots = sorted((node.log_dir / f"{topic}-0").glob("*.snapshot"))
    assert len(snapshots) >= 3, snapshots
    result = run_ktool("transactions", "find-hanging", "--check-snapshots", "--json", str(node.log_dir))
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert (result.exit_code, objs[:-1]) == (0, []), result.stdout


# --------------------------------------------------------------------------- broker files altered


def _batches(log) -> list[dict]:
    """Each v2 batch of a segment: position, size, base offset, attributes, producer id and epoch."""
    data = log.read_bytes()
    out, pos = [], 0
    while pos + 12 <= len(data):
        base, size = struct.unpack_from(">qi", data, pos)
        attrs = struct.unpack_from(">h", data, pos + 21)[0]
        pid, epoch = struct.unpack_from(">qh", data, pos + 43)
        out.append({"pos": pos, "end": pos + 12 + size, "base": base, "control": bool(attrs & 0x20),
                    "pid": pid, "epoch": epoch})  # fmt: skip
        pos += 12 + size
    return out


def _patch(log, pos: int, at: int, fmt: str, value: int, end: int) -> None:
    """Write `value` at `pos + at` and the batch's CRC-32C again (it covers attributes to the end)."""
    import crc32c

    data = bytearray(log.read_bytes())
    struct.pack_into(fmt, data, pos + at, value)
    struct.pack_into(">I", data, pos + 17, crc32c.crc32c(bytes(data[pos + 21 : end])))
    log.write_bytes(bytes(data))


def _two_transactions(cluster, tmp_path) -> tuple[str, object]:
    """A topic with two committed transactions of one producer, every marker and Complete* record
    written, and a copy of its partition and of the coordinator's."""
    from confluent_kafka import Producer

    topic = f"alter-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": topic, "linger.ms": 5})
    p.init_transactions(60)
    for n in (3, 4):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, value=b"a%d" % i, partition=0)
        p.flush(30)
        p.commit_transaction(60)
    _wait(
        "the markers",
        lambda: _read_committed_end(cluster, topic, 0)[0] == _read_committed_end(cluster, topic, 0)[1],
    )

    def complete() -> bool:
        _, objs = _ktool_json("list", str(cluster.brokers[0].log_dir / "__transaction_state-0"))
        return any(o.get("transactionalId") == topic and o["state"] == "CompleteCommit" for o in objs)

    _wait("the coordinator's CompleteCommit", complete)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "meta.properties").write_text((cluster.brokers[0].log_dir / "meta.properties").read_text())
    for name in (f"{topic}-0", "__transaction_state-0"):
        shutil.copytree(cluster.brokers[0].log_dir / name, copy / name)
    return topic, copy


def _value_at(raw: bytes, at: int) -> int:
    """Where a record's value starts, after its length (a varint) at `at`."""
    while raw[at] & 0x80:
        at += 1
    return at + 1


def _findings(copy, *args: str) -> list[tuple]:
    # the copy holds two partitions, not the KRaft metadata that says the coordinator has one
    _, objs = _ktool_json("find-hanging", "--transaction-partitions", "1", *args, str(copy))
    return [
        (o["kind"], o["partition"], o["producerId"], o["firstOffset"]) for o in objs if o["type"] == "finding"
    ]


def _segment(copy, name: str):
    (log,) = sorted((copy / name).glob("*.log"))
    return log


def test_broker_files_altered_at_known_points_give_each_finding(modern_kafka, tmp_path) -> None:
    topic, copy = _two_transactions(modern_kafka, tmp_path)
    assert _findings(copy, "--now", "2100-01-01") == []  # as the broker wrote them: nothing
    log = _segment(copy, f"{topic}-0")
    saved = log.read_bytes()
    batches = _batches(log)
    markers = [b for b in batches if b["control"]]
    data = [b for b in batches if not b["control"]]
    assert len(markers) == 2 and markers[-1] is batches[-1]
    pid = markers[0]["pid"]
    second = [b for b in data if b["base"] > markers[0]["base"]][0]

    # a zombie coordinator: the second COMMIT marker's coordinator epoch below the first's
    first_epoch = struct.unpack_from(">i", saved, markers[0]["end"] - 5)[0]
    _patch(
        log,
        markers[1]["pos"],
        markers[1]["end"] - 5 - markers[1]["pos"],
        ">i",
        first_epoch - 1,
        markers[1]["end"],
    )
    assert _findings(copy) == [("stale-coordinator-epoch", 0, pid, markers[1]["base"])]
    log.write_bytes(saved)

    # a fenced producer's write kept: the first batch's producer epoch above every later one
    _patch(log, data[0]["pos"], 51, ">h", data[0]["epoch"] + 5, data[0]["end"])
    kinds = _findings(copy)
    assert kinds and {k for k, *_ in kinds} == {"epoch-backwards"} and kinds[0][3] == markers[0]["base"]
    log.write_bytes(saved)

    # the coordinator's PrepareCommit before its CompleteCommit turned Ongoing: no transition it makes
    coordinator = _segment(copy, "__transaction_state-0")
    raw = coordinator.read_bytes()
    key = struct.pack(">hh", 0, len(topic)) + topic.encode()
    complete, prepare = raw.rindex(key), raw.rindex(key, 0, raw.rindex(key))
    holders = {
        at: next(b for b in _batches(coordinator) if b["pos"] < at < b["end"]) for at in (complete, prepare)
    }
    status_at = {at: _value_at(raw, at + len(key)) + 16 for at in (complete, prepare)}
    assert [raw[status_at[at]] for at in (prepare, complete)] == [2, 4]  # PrepareCommit, CompleteCommit
    b = holders[prepare]
    _patch(coordinator, b["pos"], status_at[prepare] - b["pos"], ">b", 1, b["end"])
    assert _findings(copy) == [("illegal-transition", 0, -1, holders[complete]["base"])]
    coordinator.write_bytes(raw)

    # the second COMMIT marker lost and the coordinator's CompleteCommit record too (its key and
    # producer id now another's): stuck in PrepareCommit, the partition without its marker
    log.write_bytes(saved[: markers[1]["pos"]])
    b = holders[complete]
    _patch(coordinator, b["pos"], complete + len(key) - 1 - b["pos"], ">b", ord("#"), b["end"])
    _patch(coordinator, b["pos"], status_at[complete] - 16 + 2 - b["pos"], ">q", 999_999, b["end"])  # its pid
    assert _findings(copy, "--now", "2100-01-01") == [("stuck-preparing", 0, pid, second["base"])]
    # before the timeout, find-hanging says nothing: the coordinator may still write the marker
    assert _findings(copy) == []


def test_a_flipped_bit_in_broker_written_files_is_damage_not_a_clean_bill(modern_kafka, tmp_path) -> None:
    """The attack of issue 49 on the broker's own files: the transactional bit of the second
    transaction's first batch cleared, its CRC left as it is. find-hanging reports it (crc-mismatch, the
    file and position), describe's log end is where truncate would cut; the same in the coordinator's
    partition for list."""
    topic, copy = _two_transactions(modern_kafka, tmp_path)
    log = _segment(copy, f"{topic}-0")
    batches = _batches(log)
    first_marker = next(b for b in batches if b["control"])
    second = next(b for b in batches if not b["control"] and b["base"] > first_marker["base"])
    data = bytearray(log.read_bytes())
    data[second["pos"] + 22] &= ~0x10  # the attributes' low byte: isTransactional cleared
    log.write_bytes(bytes(data))
    _, objs = _ktool_json("find-hanging", "--transaction-partitions", "1", str(copy))
    found = [(o["kind"], o["file"], o["position"], o["firstOffset"]) for o in objs if o["type"] == "finding"]
    assert found == [("crc-mismatch", str(log), second["pos"], second["base"])]
    code, objs = _ktool_json("describe", "--transaction-partitions", "1", str(copy))
    (described,) = [o for o in objs if o["type"] == "partition"]
    plan = run_ktool("truncate", "--dry-run", "--json", str(log.parent))
    (planned,) = [json.loads(x) for x in plan.stdout.splitlines() if '"type":"plan"' in x]
    assert code == 1 and described["logEndOffset"] == planned["newLogEndOffset"] == second["base"]
    coordinator = _segment(copy, "__transaction_state-0")
    last = _batches(coordinator)[-1]
    raw = bytearray(coordinator.read_bytes())
    raw[last["end"] - 1] ^= 0x01  # inside its records
    coordinator.write_bytes(bytes(raw))
    listed = run_ktool("transactions", "list", "--transaction-partitions", "1", str(copy))
    assert (
        listed.exit_code == 1 and f"{coordinator}: position {last['pos']}: batch at offset" in listed.stderr
    )
