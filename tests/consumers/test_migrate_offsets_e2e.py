"""`ktool migrate-offsets` end to end, against the session's real ZooKeeper 3.8 and one real Kafka 0.9.0.1
broker (``kafka09_cluster``, tests/conftest.py).

The offsets come from real clients and go to real clients:

* ZooKeeper offsets are committed by Kafka 0.9's old high-level consumer
  (``kafka-console-consumer.sh --zookeeper … --whitelist`` with a fixed ``group.id``,
  ``offsets.storage=zookeeper``), stopped by ``--max-messages`` part-way through the log. With
  ``fetch.message.max.bytes`` of a few messages, its one stream takes turns between the partitions, and
  the values are padded differently per partition, so the offsets it commits are mid-log and different
  per partition. What it printed is the ground truth: the offset committed for a partition is the
  number of messages of that partition it printed.
* After the migration a Kafka-storage consumer (confluent-kafka, the same ``group.id``,
  ``enable.auto.commit=false``, ``auto.offset.reset=earliest``) subscribes and reads to the end: it must
  read exactly the messages after the ZooKeeper offsets, per partition (had it resumed from the
  beginning, the re-read messages would show). The rollback goes the other way and a real old consumer
  resumes where the Kafka consumer had committed.
* Rollback, undo, dry run, dual commit, the refusals (a live group, a rewind, an offset outside the
  log, Kafka 0.7 byte positions), the commit metadata, a second run that has nothing to do, and a
  broker SIGKILLed between two groups' commits (journal "interrupted", then the same command finishes
  the job once the broker is back).

Every value is ``<topic>-<partition>-<n>|<padding>`` and the n-th message of a partition has offset n.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from kafka_tools.render.contract import problems as contract_problems
from tests.support.cli import run_ktool
from tests.support.servers import (
    OldConsumer,
    console_consume,
    kafka_commit,
    kafka_committed,
    key_for_partition,
    librdkafka_config,
    rdkafka_logger,
    zk_group_offsets,
)

# Old segments of the `expiring` topic are deleted within a second of expiring (log start > 0).
BROKER_PROPERTIES = {"log.retention.check.interval.ms": "1000"}

ORDERS, PAYMENTS = "orders", "payments"
TOPICS = (ORDERS, PAYMENTS)
WHITELIST = "orders|payments"
COUNTS = {ORDERS: [20, 35, 12, 28], PAYMENTS: [9, 16]}  # messages per partition
PADDING = {ORDERS: [0, 25, 50, 75], PAYMENTS: [10, 60]}  # bytes of padding per value
ALL = frozenset((t, p) for t, counts in COUNTS.items() for p in range(len(counts)))
# A few messages per fetched chunk: the old consumer's single stream alternates between partitions.
OLD_CONSUMER = {"fetch.message.max.bytes": 200}
META = "migrated-by-e2e-test"

TP = tuple[str, int]


# --------------------------------------------------------------------------- data


class Data:
    """The module's cluster and every message produced to it."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.produced: dict[TP, list[str]] = {tp: [] for tp in ALL}

    @property
    def connect(self) -> str:
        return self.cluster.connect

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def zk(self):
        return self.cluster.zk

    def produce(self, counts: dict[str, list[int]]) -> None:
        for topic, per_partition in counts.items():
            lines = []
            for partition, n in enumerate(per_partition):
                key = key_for_partition(partition, len(COUNTS[topic]))
                values = self.produced[(topic, partition)]
                for _ in range(n):
                    value = f"{topic}-{partition}-{len(values)}|" + "x" * PADDING[topic][partition]
                    values.append(value)
                    lines.append(f"{key}:{value}")
            self.cluster.broker.produce(topic, lines, key_separator=":", acks=1)

    def ends(self) -> dict[TP, int]:
        return {tp: len(v) for tp, v in self.produced.items()}

    def after(self, offsets: dict[TP, int]) -> set[tuple[str, int, int, str]]:
        """Every message at or after `offsets` (from 0 where a partition has none): (t, p, offset, value)."""
        return {
            (t, p, o, self.produced[(t, p)][o])
            for (t, p) in ALL
            for o in range(offsets.get((t, p), 0), len(self.produced[(t, p)]))
        }


@pytest.fixture(scope="module")
def data(kafka09_cluster) -> Data:
    for topic, counts in COUNTS.items():
        kafka09_cluster.broker.create_topic(topic, partitions=len(counts))
    d = Data(kafka09_cluster)
    d.produce(COUNTS)
    return d


def parse_value(value: str) -> tuple[TP, int]:
    topic, partition, n = value.split("|", 1)[0].rsplit("-", 2)
    return (topic, int(partition)), int(n)


# --------------------------------------------------------------------------- real consumers


def old_consume(
    data: Data, group: str, *, max_messages: int | None, from_beginning: bool = True
) -> list[str]:
    """Kafka 0.9's old console consumer (ZooKeeper offsets) in the foreground: it stops after
    `max_messages` (or 4 s without a message), commits its offsets to ZooKeeper as it shuts down, and
    returns the values it printed, in order."""
    res = console_consume(
        zookeeper=data.connect,
        whitelist=WHITELIST,
        group=group,
        consumer_properties=OLD_CONSUMER,
        from_beginning=from_beginning,
        max_messages=max_messages,
        timeout_ms=4000,
        home=data.cluster.broker.home,
    )
    values = [line for line in res.stdout.splitlines() if line.strip()]
    if max_messages is not None:
        assert len(values) == max_messages, res.stderr[-2000:]
    return values


def printed_per_partition(values: list[str]) -> dict[TP, list[int]]:
    out: dict[TP, list[int]] = {}
    for v in values:
        tp, n = parse_value(v)
        out.setdefault(tp, []).append(n)
    return out


def zk_from_old_consumer(data: Data, group: str, max_messages: int) -> dict[TP, int]:
    """Let a real old consumer read `max_messages` from the beginning and commit; check that ZooKeeper
    holds exactly what it printed (per partition, n messages from offset 0 on: offset n), that every
    partition has an offset, and that they are mid-log and different; return them."""
    printed = printed_per_partition(old_consume(data, group, max_messages=max_messages))
    for tp, ns in printed.items():
        assert ns == list(range(len(ns))), f"{tp}: the old consumer printed {ns}"
    zk = zk_group_offsets(data.zk, group)
    assert set(zk) == ALL, zk
    assert zk == {tp: len(printed.get(tp, [])) for tp in ALL}, f"ZooKeeper {zk}, printed {printed}"
    ends = data.ends()
    assert sum(0 < zk[tp] < ends[tp] for tp in ALL) >= 3, (zk, ends)
    assert len(set(zk.values())) >= 3, zk
    return zk


def kafka_read(
    data: Data,
    group: str,
    expected: int,
    *,
    stop_after: int | None = None,
    commit: bool = False,
    timeout: float = 60.0,
    quiet: float = 2.0,
) -> list[tuple[str, int, int, str]]:
    """A Kafka-storage consumer (confluent-kafka) of `group` subscribes to both topics and reads:
    until it has `expected` messages and then `quiet` seconds more without one (so re-reads would
    show), or `stop_after` messages. `commit`: commit what it consumed (synchronously, as a member of
    the group) before leaving. Returns (topic, partition, offset, value) in the order read."""
    from confluent_kafka import Consumer

    conf = librdkafka_config(
        data.bootstrap,
        {
            "group.id": group,
            "client.id": f"{group}-kafka-consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,  # 0.9's group.max.session.timeout.ms is 30 s (librdkafka: 45 s)
        },
    )
    consumer = Consumer(conf, logger=rdkafka_logger())
    got: list[tuple[str, int, int, str]] = []
    try:
        consumer.subscribe(list(TOPICS))
        deadline = time.monotonic() + timeout
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            now = time.monotonic()
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append((msg.topic(), msg.partition(), msg.offset(), msg.value().decode()))
                quiet_since = now
                if stop_after is not None and len(got) >= stop_after:
                    break
                continue
            if not consumer.assignment():
                continue
            quiet_since = quiet_since or now
            if stop_after is None and len(got) >= expected and now - quiet_since >= quiet:
                break
        if commit:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


class LiveKafkaMember:
    """A confluent-kafka consumer that has joined `group` (the coordinator lists it as a member)."""

    def __init__(self, data: Data, group: str) -> None:
        from confluent_kafka import Consumer

        self.client_id = f"{group}-live"
        conf = librdkafka_config(
            data.bootstrap,
            {
                "group.id": group,
                "client.id": self.client_id,
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
                "session.timeout.ms": 10000,
            },
        )
        self.consumer = Consumer(conf, logger=rdkafka_logger())
        self.consumer.subscribe(list(TOPICS))
        deadline = time.monotonic() + 30
        while not self.consumer.assignment():
            assert time.monotonic() < deadline, "the Kafka consumer got no assignment"
            self.consumer.poll(0.2)

    def commit(self, offsets: dict[TP, int]) -> None:
        from confluent_kafka import TopicPartition

        self.consumer.commit(
            offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
        )

    def close(self) -> None:
        self.consumer.close()


# --------------------------------------------------------------------------- ktool


class Run:
    """One `ktool migrate-offsets … --json` run: exit code, rows by (group, topic, partition), stderr."""

    def __init__(
        self, result: Result | None = None, *, code: int = 0, stdout: str = "", stderr: str = ""
    ) -> None:
        if result is not None:
            code, stdout, stderr = result.exit_code, result.stdout, result.stderr
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
        if stdout.strip().startswith("{"):  # the --json contract (kafka_tools/render/contract.py)
            assert contract_problems("migrate-offsets", stdout.splitlines()) == [], stdout
        if self.lines:  # every --json stream ends with its summary
            assert self.lines[-1]["type"] == "summary", stdout
            self.summary, self.lines = self.lines[-1], self.lines[:-1]
        assert all(o["type"] == "partition" for o in self.lines), stdout
        self.rows = {(o["group"], o["topic"], o["partition"]): o for o in self.lines}

    def of(self, group: str) -> dict[TP, dict]:
        return {(t, p): row for (g, t, p), row in self.rows.items() if g == group}

    def statuses(self, group: str) -> dict[TP, str]:
        return {tp: row["status"] for tp, row in self.of(group).items()}

    @property
    def journal(self) -> Path | None:
        m = re.search(r"journal of every offset before the change: (\S+)", self.stderr)
        return Path(m[1]) if m else None

    def __repr__(self) -> str:
        return f"exit {self.code}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def migrate(data: Data, journal_dir: Path, *args: str) -> Run:
    return Run(
        run_ktool(
            "migrate-offsets",
            "--zookeeper",
            data.connect,
            "--bootstrap-server",
            data.bootstrap,
            "--journal-dir",
            str(journal_dir),
            "--json",
            *args,
        )
    )


def committed(data: Data, group: str, tps=ALL) -> dict[TP, int | None]:
    return {tp: off for tp, (off, _) in kafka_committed(data.bootstrap, group, sorted(tps)).items()}


def committed_metadata(data: Data, group: str, tps=ALL) -> dict[TP, str | None]:
    return {tp: meta for tp, (_, meta) in kafka_committed(data.bootstrap, group, sorted(tps)).items()}


def zk_snapshot(data: Data, group: str) -> dict[str, tuple[bytes, int]]:
    """Every znode under /consumers/<group>/offsets: (data, mzxid) -- any write changes the mzxid."""
    out = {}
    base = f"/consumers/{group}/offsets"
    for topic in data.zk.get_children(base):
        for child in data.zk.get_children(f"{base}/{topic}"):
            value, stat = data.zk.get(f"{base}/{topic}/{child}")
            out[f"{topic}/{child}"] = (value, stat.mzxid)
    return out


def wait_for(what: str, probe: Callable[[], object], timeout: float = 60.0, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except Exception as exc:  # e.g. a restarted broker still loading its offsets
            value, last = None, exc
        else:
            last = None
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what} (last error: {last})")
        time.sleep(interval)


# --------------------------------------------------------------------------- the tests


def test_old_consumer_offsets_migrate_and_a_kafka_consumer_resumes_exactly_there(data, tmp_path) -> None:
    group = "resume"
    zk = zk_from_old_consumer(data, group, max_messages=45)
    ends = data.ends()

    run = migrate(data, tmp_path, "--group", group, "--metadata", META)
    assert run.code == 0, run
    assert run.statuses(group) == dict.fromkeys(ALL, "verified"), run
    for tp, row in run.of(group).items():
        assert (row["zookeeperOffset"], row["kafkaOffset"], row["offset"]) == (zk[tp], None, zk[tp])
        assert (row["zookeeperAfter"], row["kafkaAfter"]) == (zk[tp], zk[tp])
        assert (row["logStartOffset"], row["logEndOffset"]) == (0, ends[tp])
    assert "ktool: 6 verified" in run.stderr

    # The journal: every offset in both stores before the change, and the run's outcome.
    assert run.journal is not None and run.journal.parent == tmp_path, run.stderr
    journal = json.loads(run.journal.read_text())
    assert journal["state"] == "applied"
    assert journal["options"]["metadata"] == META
    [jgroup] = journal["groups"]
    assert jgroup["group"] == group and jgroup["refused"] is None and jgroup["live"] == []
    before = {(m["topic"], m["partition"]): (m["zookeeper"], m["kafka"]) for m in jgroup["partitions"]}
    assert before == {tp: (zk[tp], None) for tp in ALL}

    # Both stores, as real clients read them; the commit metadata is what --metadata said.
    assert zk_group_offsets(data.zk, group) == zk
    assert kafka_committed(data.bootstrap, group, sorted(ALL)) == {tp: (zk[tp], META) for tp in ALL}

    # A second run has nothing to write, and writes no journal.
    again = migrate(data, tmp_path, "--group", group, "--metadata", META)
    assert again.code == 0, again
    assert "nothing to write" in again.stderr and again.journal is None
    assert again.statuses(group) == dict.fromkeys(ALL, "unchanged")
    assert [p.name for p in tmp_path.iterdir()] == [run.journal.name]

    # The Kafka-storage consumer of the same group resumes exactly at the migrated offsets.
    expected = data.after(zk)
    got = kafka_read(data, group, expected=len(expected))
    assert len(got) == len(set(got)), f"messages read twice: {[m for m, n in Counter(got).items() if n > 1]}"
    got_set = set(got)
    assert not got_set - expected, f"re-read or unexpected: {sorted(got_set - expected)[:10]}"
    assert not expected - got_set, f"skipped: {sorted(expected - got_set)[:10]}"
    first = {}
    for t, p, o, _ in got:
        first.setdefault((t, p), o)
    assert first == {tp: zk[tp] for tp in ALL if zk[tp] < ends[tp]}


def test_dry_run_writes_nothing(data, tmp_path) -> None:
    group = "dry-run"
    zk = zk_from_old_consumer(data, group, max_messages=30)
    snapshot = zk_snapshot(data, group)
    journals = tmp_path / "journals"

    run = migrate(data, journals, "--group", group, "--dry-run")
    assert run.code == 0, run
    assert run.statuses(group) == dict.fromkeys(ALL, "write")
    assert {tp: row["offset"] for tp, row in run.of(group).items()} == zk
    assert all(row["zookeeperAfter"] is None and row["kafkaAfter"] is None for row in run.of(group).values())
    assert run.journal is None and not journals.exists()
    assert zk_snapshot(data, group) == snapshot  # not even rewritten with the same value
    assert committed(data, group) == dict.fromkeys(ALL)

    text = run_ktool(
        "migrate-offsets", "--zookeeper", data.connect, "--bootstrap-server", data.bootstrap,
        "--journal-dir", str(journals), "--group", group, "--dry-run",
    )  # fmt: skip
    assert text.exit_code == 0 and "dry run" in text.stdout and text.stdout.count(" write ") == len(ALL)
    assert zk_snapshot(data, group) == snapshot and committed(data, group) == dict.fromkeys(ALL)

    # A journal that cannot be written is one line and exit 3, before any offset is written.
    unwritable = run_ktool(
        "migrate-offsets", "--zookeeper", data.connect, "--bootstrap-server", data.bootstrap,
        "--journal-dir", "/proc/nope", "--group", group,
    )  # fmt: skip
    assert unwritable.exit_code == 3 and unwritable.stdout == ""
    assert unwritable.stderr.splitlines() == [
        "ktool: /proc/nope: cannot create the journal directory: no such file or directory"
    ]
    assert zk_snapshot(data, group) == snapshot and committed(data, group) == dict.fromkeys(ALL)


def test_rollback_to_zookeeper_and_an_old_consumer_resumes_where_kafka_was(data, tmp_path) -> None:
    group = "rollback"
    zk = zk_from_old_consumer(data, group, max_messages=30)
    assert migrate(data, tmp_path, "--group", group).code == 0

    # The Kafka-storage consumer reads a little further and commits (as a member of the group).
    read = kafka_read(data, group, expected=0, stop_after=12, commit=True)
    assert {(t, p, o) for t, p, o, _ in read} <= {(t, p, o) for t, p, o, _ in data.after(zk)}
    kafka = committed(data, group)
    advanced = {tp for tp in ALL if kafka[tp] != zk[tp]}
    assert advanced and all(kafka[tp] > zk[tp] for tp in advanced), (zk, kafka)

    run = migrate(data, tmp_path, "--group", group, "--from", "kafka", "--to", "zookeeper")
    assert run.code == 0, run
    assert run.statuses(group) == {tp: "verified" if tp in advanced else "unchanged" for tp in ALL}
    assert zk_group_offsets(data.zk, group) == kafka
    assert committed(data, group) == kafka  # the source is left alone

    # A real old consumer of the group (no --from-beginning) resumes exactly there.
    printed = old_consume(data, group, max_messages=None, from_beginning=False)
    assert len(printed) == len(set(printed))
    got = {(*tp, n, v) for v in printed for tp, n in [parse_value(v)]}
    assert got == data.after(kafka)
    assert zk_group_offsets(data.zk, group) == data.ends()


def seed_mixed(data: Data, group: str) -> tuple[dict[TP, int], dict[TP, int], dict[str, TP]]:
    """ZooKeeper offsets from a real old consumer, then Kafka offsets next to them (committed with
    metadata "seeded"): one partition where Kafka is ahead, one where it is behind, one where both
    agree, one only in Kafka (its ZooKeeper znode deleted), the rest only in ZooKeeper.
    Returns (ZooKeeper offsets, Kafka offsets, the roles' partitions)."""
    zk = zk_from_old_consumer(data, group, max_messages=30)
    ends = data.ends()
    by_room = sorted(ALL, key=lambda tp: (ends[tp] - zk[tp], tp), reverse=True)
    roles = {"kafka-ahead": by_room[0]}
    rest = [tp for tp in sorted(ALL, key=lambda tp: (zk[tp], tp), reverse=True) if tp not in roles.values()]
    roles["kafka-behind"], roles["equal"], roles["kafka-only"] = rest[0], rest[1], rest[2]
    ahead, behind = roles["kafka-ahead"], roles["kafka-behind"]
    assert ends[ahead] - zk[ahead] >= 2 and zk[behind] >= 1, (zk, ends)
    kafka = {
        ahead: zk[ahead] + 2,
        behind: zk[behind] - 1,
        roles["equal"]: zk[roles["equal"]],
        roles["kafka-only"]: zk[roles["kafka-only"]],
    }
    kafka_commit(data.bootstrap, group, kafka, metadata="seeded")
    t, p = roles["kafka-only"]
    data.zk.delete(f"/consumers/{group}/offsets/{t}/{p}")
    del zk[roles["kafka-only"]]
    assert zk_group_offsets(data.zk, group) == zk
    assert committed(data, group) == {tp: kafka.get(tp) for tp in ALL}
    return zk, kafka, roles


def test_dual_commit_leaves_both_stores_at_the_max(data, tmp_path) -> None:
    group = "dual"
    zk, kafka, roles = seed_mixed(data, group)
    want = {tp: max(v for v in (zk.get(tp), kafka.get(tp)) if v is not None) for tp in ALL}

    run = migrate(data, tmp_path, "--group", group, "--dual-commit")
    assert run.code == 0, run
    assert run.statuses(group) == {tp: "unchanged" if tp == roles["equal"] else "verified" for tp in ALL}
    assert zk_group_offsets(data.zk, group) == want
    assert committed(data, group) == want
    # Kafka was written only where it was behind or had nothing; where it was ahead, equal or alone it
    # keeps its own commit (and metadata).
    meta = committed_metadata(data, group)
    kept = {roles["kafka-ahead"], roles["equal"], roles["kafka-only"]}
    assert meta == {tp: "seeded" if tp in kept else "ktool-migrate" for tp in ALL}
    assert json.loads(run.journal.read_text())["state"] == "applied"

    again = migrate(data, tmp_path, "--group", group, "--dual-commit")
    assert again.code == 0 and again.statuses(group) == dict.fromkeys(ALL, "unchanged"), again


def test_undo_restores_both_stores(data, tmp_path) -> None:
    group = "undo"
    zk, kafka, roles = seed_mixed(data, group)
    run = migrate(data, tmp_path, "--group", group, "--dual-commit")
    assert run.code == 0 and run.journal is not None, run
    after = {tp: max(v for v in (zk.get(tp), kafka.get(tp)) if v is not None) for tp in ALL}
    assert zk_group_offsets(data.zk, group) == after and committed(data, group) == after

    undo = Run(
        run_ktool(
            "migrate-offsets", "--undo", str(run.journal), "--zookeeper", data.connect,
            "--bootstrap-server", data.bootstrap, "--json",
        )
    )  # fmt: skip
    # a refusal, exit 1: where Kafka had no offset before, 0.9 cannot delete the one the run wrote
    assert undo.code == 1, undo
    # ZooKeeper exactly as before: values, and the znode that did not exist is gone again.
    assert zk_group_offsets(data.zk, group) == zk
    # Kafka exactly as before where it had an offset; where it had none it keeps the new one (0.9 has
    # no OffsetDelete, Kafka 2.4+), and the report says so.
    assert committed(data, group) == {tp: kafka.get(tp, after[tp]) for tp in ALL}
    assert undo.statuses(group) == {tp: "verified" if tp in kafka else "kafka-kept" for tp in ALL}, undo
    for tp in set(ALL) - set(kafka):
        reason = undo.of(group)[tp]["reason"]
        assert "Kafka had no offset before" in reason and "no OffsetDelete (2.4+)" in reason, reason
        assert undo.of(group)[tp]["kafkaAfter"] == after[tp]
    assert json.loads(run.journal.read_text())["state"] != "undone"


def test_the_journal_goes_to_the_state_directory_not_the_working_one(data, tmp_path, monkeypatch) -> None:
    group = "state-dir"
    zk_from_old_consumer(data, group, max_messages=20)
    cwd, state = tmp_path / "cwd", tmp_path / "state"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    args = ["--zookeeper", data.connect, "--bootstrap-server", data.bootstrap, "--group", group, "--json"]
    run = Run(run_ktool("migrate-offsets", *args, env={"XDG_STATE_HOME": str(state)}))
    assert run.code == 0, run
    assert run.journal is not None and run.journal.parent == state / "ktool" / "journals", run.stderr
    assert json.loads(run.journal.read_text())["state"] == "applied"
    assert list(cwd.iterdir()) == []
    assert "ktool's state directory, $XDG_STATE_HOME/ktool" in " ".join(
        run_ktool("migrate-offsets", "-h").stdout.split()
    )


def test_live_group_is_refused_and_named(data, tmp_path) -> None:
    group = "live"
    consumer = OldConsumer(
        data.connect,
        group,
        "c1",
        whitelist=WHITELIST,
        from_beginning=True,
        workdir=tmp_path / "old-consumer",
        home=data.cluster.broker.home,
    ).start()
    try:
        ends = data.ends()
        wait_for(
            "the live old consumer to commit every offset",
            lambda: consumer.running() and zk_group_offsets(data.zk, group) == ends,
        )
        wait_for("its registration", lambda: data.zk.exists(f"/consumers/{group}/ids/{group}_c1"))
        run = migrate(data, tmp_path / "j", "--group", group)
        assert run.code == 1, run
        assert f"{group}_c1 (ZooKeeper)" in run.stderr and "live members" in run.stderr, run.stderr
        assert run.statuses(group) == dict.fromkeys(ALL, "refused-live-group")
        assert all(f"{group}_c1 (ZooKeeper)" in row["reason"] for row in run.of(group).values())
        assert run.journal is None and committed(data, group) == dict.fromkeys(ALL)

        forced = migrate(data, tmp_path / "j", "--group", group, "--force")
        assert forced.code == 0, forced
        assert forced.statuses(group) == dict.fromkeys(ALL, "verified")
        assert committed(data, group) == ends
    finally:
        assert consumer.stop(), consumer.log_tail()


def test_live_kafka_member_is_refused_and_a_failed_kafka_commit_leaves_zookeeper_alone(
    data, tmp_path
) -> None:
    """--dual-commit writes Kafka first and ZooKeeper only where Kafka took the commit: with a live
    Kafka member, 0.9's coordinator rejects a commit from outside the group."""
    group = "live-kafka"
    zk = zk_from_old_consumer(data, group, max_messages=30)
    member = LiveKafkaMember(data, group)
    try:
        ends = data.ends()
        ahead = max(ALL, key=lambda tp: (ends[tp] - zk[tp], tp))
        member.commit({ahead: zk[ahead] + 1})  # Kafka ahead there: --dual-commit would write ZooKeeper
        snapshot = zk_snapshot(data, group)

        run = migrate(data, tmp_path, "--group", group, "--dual-commit")
        assert run.code == 1, run
        assert f"{member.client_id}@" in run.stderr and "(Kafka)" in run.stderr, run.stderr
        assert set(run.statuses(group).values()) == {"refused-live-group"}

        forced = migrate(
            data, tmp_path, "--group", group, "--dual-commit", "--force", "--broker-timeout", "5"
        )
        # The broker refuses commits from outside a live group: a refusal (exit 1), not an outage.
        assert forced.code == 1, forced
        assert forced.journal is not None and "live members in Kafka" in forced.stderr
        assert json.loads(forced.journal.read_text())["state"] == "refused"
        assert set(forced.statuses(group).values()) == {"not-written"}, forced
        assert zk_snapshot(data, group) == snapshot  # ZooKeeper not written: Kafka refused the commit
        assert committed(data, group) == {tp: zk[ahead] + 1 if tp == ahead else None for tp in ALL}
    finally:
        member.close()


def test_rewind_is_refused_and_the_partitions_listed(data, tmp_path) -> None:
    group = "rewind"
    zk = zk_from_old_consumer(data, group, max_messages=30)
    ends = data.ends()
    ahead = sorted((tp for tp in ALL if zk[tp] < ends[tp]), key=lambda tp: (zk[tp] - ends[tp], tp))[:2]
    assert len(ahead) == 2
    seeded = {tp: zk[tp] + 1 for tp in ahead}
    kafka_commit(data.bootstrap, group, seeded)

    run = migrate(data, tmp_path, "--group", group)
    assert run.code == 1, run
    assert run.statuses(group) == {tp: "refused-rewind" if tp in ahead else "verified" for tp in ALL}
    for tp in ahead:
        reason = run.of(group)[tp]["reason"]
        assert f"kafka is ahead ({seeded[tp]} > {zk[tp]})" in reason and "--allow-rewind" in reason, reason
    assert committed(data, group) == {tp: seeded.get(tp, zk[tp]) for tp in ALL}

    # The text report lists them too.
    text = run_ktool(
        "migrate-offsets", "--zookeeper", data.connect, "--bootstrap-server", data.bootstrap,
        "--journal-dir", str(tmp_path), "--group", group,
    )  # fmt: skip
    assert text.exit_code == 1
    listed = {
        (cells[1], int(cells[2]))
        for line in text.stdout.splitlines()
        for cells in [[c.strip() for c in line.split("|")]]
        if len(cells) > 8 and cells[8] == "refused-rewind"
    }
    assert listed == set(ahead), text.stdout

    back = migrate(data, tmp_path, "--group", group, "--allow-rewind")
    assert back.code == 0, back
    assert back.statuses(group) == {tp: "verified" if tp in ahead else "unchanged" for tp in ALL}
    assert committed(data, group) == zk


def test_offsets_outside_the_log_are_refused_unless_forced(data, tmp_path) -> None:
    # A topic whose old segments expire: its log start offset moves past 0.
    topic = "expiring"
    broker = data.cluster.broker
    broker.create_topic(topic, partitions=1, config={"segment.bytes": 1024, "retention.ms": 2000})
    broker.produce(topic, [f"expiring-{n}|" + "y" * 60 for n in range(80)], sync=True)

    def log_start() -> int:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer(librdkafka_config(data.bootstrap, {"group.id": "probe"}), logger=rdkafka_logger())
        try:
            low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        finally:
            c.close()
        return low if low > 0 and high == 80 else 0

    start = wait_for("old segments of `expiring` to be deleted", log_start, timeout=60)
    ends = data.ends()
    group = "out-of-range"
    offsets = {
        (ORDERS, 0): ends[(ORDERS, 0)] + 5,  # past the end
        (ORDERS, 1): ends[(ORDERS, 1)],  # the end itself: nothing left to read, fine
        (PAYMENTS, 0): 3,
        (topic, 0): start - 1,  # before the log start: deleted
    }
    for (t, p), o in offsets.items():
        data.zk.create(f"/consumers/{group}/offsets/{t}/{p}", str(o).encode(), makepath=True)
    keys = set(offsets)

    run = migrate(data, tmp_path, "--group", group)
    assert run.code == 1, run
    refused = {(ORDERS, 0), (topic, 0)}
    assert run.statuses(group) == {tp: "refused-out-of-range" if tp in refused else "verified" for tp in keys}
    assert "outside the log 0..20" in run.of(group)[(ORDERS, 0)]["reason"]
    # the broker's retention may have deleted more segments since: the start the run saw, at or past ours
    seen = run.of(group)[(topic, 0)]["logStartOffset"]
    assert seen >= start and f"outside the log {seen}..80" in run.of(group)[(topic, 0)]["reason"]
    assert committed(data, group, keys) == {tp: None if tp in refused else offsets[tp] for tp in keys}

    forced = migrate(data, tmp_path, "--group", group, "--force")
    assert forced.code == 0, forced
    assert forced.statuses(group) == {tp: "verified" if tp in refused else "unchanged" for tp in keys}
    assert committed(data, group, keys) == offsets


def test_kafka_07_byte_positions_are_refused_with_an_explanation(data, tmp_path) -> None:
    group = "legacy-07"
    # Kafka 0.7's layout: /consumers/G/offsets/T/<brokerId-partition>, the value a byte position.
    positions = {"0-0": 1048576, "0-1": 2048, "1-0": 77}
    for key, position in positions.items():
        data.zk.create(f"/consumers/{group}/offsets/{ORDERS}/{key}", str(position).encode(), makepath=True)

    for extra in ((), ("--force",), ("--force", "--allow-rewind")):
        run = migrate(data, tmp_path, "--group", group, *extra)
        assert run.code == 1, (extra, run)
        assert (
            f"group {group}: refused" in run.stderr and "0.7" in run.stderr and "byte positions" in run.stderr
        )
        rows = [row for row in run.lines if row["group"] == group]
        assert len(rows) == len(positions) and {r["status"] for r in rows} == {"refused-0.7-offset"}, run
        assert sorted(r["zookeeperOffset"] for r in rows) == sorted(positions.values())
        assert {key for key in positions if any(key in (r["reason"] or "") for r in rows)} == set(positions)
        assert run.journal is None
    assert committed(data, group, {(ORDERS, p) for p in range(4)}) == dict.fromkeys(
        [(ORDERS, p) for p in range(4)]
    )
    assert zk_group_offsets(data.zk, group) == {(ORDERS, k): v for k, v in positions.items()}


def test_usage_and_unreachable_servers(data, tmp_path) -> None:
    base = ["migrate-offsets", "--zookeeper", data.connect, "--bootstrap-server", data.bootstrap]
    assert run_ktool(*base, "--group", "g", "--from", "kafka", "--to", "kafka").exit_code == 2
    assert run_ktool(*base, "--group", "g", "--all-groups").exit_code == 2
    assert run_ktool(*base).exit_code == 2
    assert run_ktool("migrate-offsets", "--zookeeper", data.connect, "--group", "resume").exit_code == 2

    from tests.support.servers import free_port

    nobody = f"127.0.0.1:{free_port()}"
    res = run_ktool("migrate-offsets", "--zookeeper", nobody, "--zk-timeout", "2", "--bootstrap-server",
                    data.bootstrap, "--group", "resume", "--journal-dir", str(tmp_path))  # fmt: skip
    assert res.exit_code == 3 and nobody in res.stderr, res.stderr
    res = run_ktool(*base[:3], "--bootstrap-server", nobody, "--broker-timeout", "2", "--group", "resume",
                    "--journal-dir", str(tmp_path))  # fmt: skip
    assert res.exit_code == 3, (res.stdout, res.stderr)
    assert list(tmp_path.iterdir()) == []  # nothing was planned: no journal


# `python -c` program: ktool's own CLI, in its own process, with a hook that SIGKILLs the broker
# (pid in $KTOOL_TEST_BROKER_PID) as soon as the first group's commit has been made and verified.
KILL_AFTER_FIRST_GROUP = """
import os, signal, sys
import kafka_tools.consumers.migration as migration
real_apply = migration.apply_group
def apply_then_kill(zk, broker, plan, options):
    real_apply(zk, broker, plan, options)
    with open(os.environ["KTOOL_TEST_APPLIED"], "a") as f:
        f.write(plan.group + "\\n")
    if not os.environ.get("KTOOL_TEST_KILLED"):
        os.environ["KTOOL_TEST_KILLED"] = "1"
        os.kill(int(os.environ["KTOOL_TEST_BROKER_PID"]), signal.SIGKILL)
migration.apply_group = apply_then_kill
from kafka_tools.cli.main import cli
cli(sys.argv[1:], prog_name="ktool")
"""


def test_a_broker_killed_between_commits_leaves_an_interrupted_journal_and_a_rerun_finishes(
    data, tmp_path
) -> None:
    """Kept last: it SIGKILLs the module's broker and starts it again. ktool runs in a process of its
    own here (as a user runs it), and the broker is killed from inside it between two groups."""
    import os
    import subprocess
    import sys

    groups = ["crash-a", "crash-b", "crash-c"]
    zk = {g: zk_from_old_consumer(data, g, max_messages=n) for g, n in zip(groups, (25, 30, 35), strict=True)}
    args = [a for g in groups for a in ("--group", g)]
    broker = data.cluster.broker
    applied_file = tmp_path / "applied.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KTOOL_")}
    env.update(KTOOL_TEST_BROKER_PID=str(broker.proc.pid), KTOOL_TEST_APPLIED=str(applied_file))
    env["XDG_CONFIG_HOME"] = str(tmp_path / "no-config")
    cmd = [sys.executable, "-c", KILL_AFTER_FIRST_GROUP, "migrate-offsets", "--zookeeper", data.connect]
    cmd += ["--bootstrap-server", data.bootstrap, "--journal-dir", str(tmp_path), "--json", *args]
    cmd += ["--broker-timeout", "3"]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    finally:
        killed = broker.proc is not None and broker.proc.poll() is not None
        data.cluster.restart()  # (SIGKILLs it first if the hook did not run)
    run = Run(code=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
    assert killed, f"the broker was not killed: {run}"
    applied = applied_file.read_text().split()
    assert run.code == 3, run
    assert applied == ["crash-a"]
    assert "interrupted" in run.stderr and run.journal is not None, run.stderr
    journal = json.loads(run.journal.read_text())
    assert journal["state"] == "interrupted"
    status = {
        g["group"]: {(m["topic"], m["partition"]): m["status"] for m in g["partitions"]}
        for g in journal["groups"]
    }
    assert status == {
        "crash-a": dict.fromkeys(ALL, "verified"),
        "crash-b": dict.fromkeys(ALL, "not-written"),
        "crash-c": dict.fromkeys(ALL, "write"),
    }
    assert {g: run.statuses(g) for g in groups} == status  # the report on stdout says the same
    assert {
        g["group"]: {(m["topic"], m["partition"]): m["zookeeper"] for m in g["partitions"]}
        for g in journal["groups"]
    } == zk

    # The broker is back (same log dir): what was committed before the kill is still there.
    wait_for(
        "the restarted broker to serve crash-a's offsets", lambda: committed(data, "crash-a") == zk["crash-a"]
    )
    assert committed(data, "crash-b") == dict.fromkeys(ALL) == committed(data, "crash-c")

    rerun = migrate(data, tmp_path, *args)
    assert rerun.code == 0, rerun
    assert {g: set(rerun.statuses(g).values()) for g in groups} == {
        "crash-a": {"unchanged"},
        "crash-b": {"verified"},
        "crash-c": {"verified"},
    }
    assert {g: committed(data, g) for g in groups} == zk
    assert {g: zk_group_offsets(data.zk, g) for g in groups} == zk

    # And a Kafka-storage consumer of the last group resumes exactly there.
    expected = data.after(zk["crash-c"])
    got = kafka_read(data, "crash-c", expected=len(expected))
    assert len(got) == len(set(got)) and set(got) == expected


def undo(data: Data, journal: Path, *args: str) -> Run:
    return Run(
        run_ktool(
            "migrate-offsets", "--undo", str(journal), "--zookeeper", data.connect,
            "--bootstrap-server", data.bootstrap, "--json", *args,
        )
    )  # fmt: skip


def test_undo_refuses_offsets_moved_since_and_a_second_undo_writes_nothing(data, tmp_path) -> None:
    """The issue's case: after a migration a consumer went on; --undo leaves what it moved (exit 1,
    named) unless --force, and a second --undo of the same journal says "already undone" and writes
    nothing, however the offsets moved since the first."""
    group = "undo-moved"
    zk_before = {(ORDERS, p): o for p, o in enumerate([10, 20, 6, 14])}
    kafka_before = {(ORDERS, p): o for p, o in enumerate([5, 15, 3, 10])}
    for (t, p), o in zk_before.items():
        data.zk.create(f"/consumers/{group}/offsets/{t}/{p}", str(o).encode(), makepath=True)
    kafka_commit(data.bootstrap, group, kafka_before)
    tps = sorted(zk_before)
    run = migrate(data, tmp_path, "--group", group, "--topic", ORDERS)
    assert run.code == 0 and run.journal is not None, run
    assert committed(data, group, tps) == zk_before

    moved = (ORDERS, 0)
    kafka_commit(data.bootstrap, group, {moved: 18})  # the consumer went on after the migration
    first = undo(data, run.journal)
    assert first.code == 1, first
    assert first.statuses(group)[moved] == "refused-moved", first
    assert "18" in first.of(group)[moved]["reason"] and "--force" in first.of(group)[moved]["reason"]
    assert committed(data, group, tps) == {**kafka_before, moved: 18}
    assert json.loads(run.journal.read_text())["state"] != "undone"

    forced = undo(data, run.journal, "--force")
    assert forced.code == 0, forced
    assert forced.statuses(group)[moved] == "verified", forced
    assert {s for tp, s in forced.statuses(group).items() if tp != moved} == {"already-undone"}, forced
    assert committed(data, group, tps) == kafka_before
    assert zk_group_offsets(data.zk, group) == zk_before
    assert json.loads(run.journal.read_text())["state"] == "undone"

    kafka_commit(data.bootstrap, group, {(ORDERS, 0): 19, (ORDERS, 2): 11})  # it went on again
    second = undo(data, run.journal)
    assert second.code == 0 and "already undone" in second.stderr, second
    assert second.lines == [], second
    assert committed(data, group, tps) == {**kafka_before, (ORDERS, 0): 19, (ORDERS, 2): 11}
