"""`ktool groups reset-offsets` against a real Kafka 0.9.0.1 broker and ZooKeeper (``kafka09_cluster``),
on both offset stores: ZooKeeper (/consumers/G/offsets, the 0.8-era consumer's; the store chosen as
`groups describe` chooses it) and Kafka (OffsetCommit through the 0.9 broker). Every target on the
ZooKeeper store, read back from the znodes and with 0.9's own `kafka-consumer-groups.sh --describe`; the
Kafka store read back with OffsetFetch and 0.9's ConsumerOffsetChecker. A 0.9 broker cannot answer
ListOffsets by timestamp: --to-datetime is answered by offsets-at on --log-dir, and equals `ktool
offsets-at` there. Registered consumers refuse the reset; the undo rules hold on ZooKeeper."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.consumers.test_groups_e2e import kafka_consumer_groups, offset_checker
from tests.support.cli import run_ktool
from tests.support.servers import (
    kafka_commit,
    kafka_committed,
    librdkafka_config,
    rdkafka_logger,
    zk_group_offsets,
)

TOPIC = "events"
N = 20
SEED = {0: 5, 1: 12}  # partition 2 has no committed offset


class Cluster:
    """What tests/consumers/test_groups_e2e's readers of 0.9's tools take: the broker and ZooKeeper."""

    def __init__(self, cluster) -> None:
        self.broker, self.connect, self.zk, self.bootstrap = (
            cluster.broker,
            cluster.connect,
            cluster.zk,
            cluster.bootstrap,
        )


@pytest.fixture(scope="module")
def cluster(kafka09_cluster) -> Cluster:
    from confluent_kafka import Producer

    kafka09_cluster.broker.create_topic(TOPIC, partitions=3)
    producer = Producer(librdkafka_config(kafka09_cluster.bootstrap), logger=rdkafka_logger())
    for p in range(3):
        for i in range(N):
            producer.produce(TOPIC, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    return Cluster(kafka09_cluster)


def _zk_seeded(cluster: Cluster, name: str) -> str:
    group = f"zk-{name}"
    # As an old consumer leaves its group when it stops: /owners/TOPIC (0.9's tools find topics there).
    cluster.zk.create(f"/consumers/{group}/owners/{TOPIC}", makepath=True)
    for p, o in SEED.items():
        cluster.zk.create(f"/consumers/{group}/offsets/{TOPIC}/{p}", str(o).encode(), makepath=True)
    return group


def reset(cluster: Cluster, group: str, *args: str, tmp_path=None):
    more = ["--journal-dir", str(tmp_path)] if tmp_path is not None else []
    return run_ktool(
        "groups", "reset-offsets", group, "--zookeeper", cluster.connect, "--bootstrap-server",
        cluster.bootstrap, *args, *more,
    )  # fmt: skip


def _znodes(cluster: Cluster, group: str) -> dict[int, int]:
    return {p: o for (t, p), o in zk_group_offsets(cluster.zk, group).items() if t == TOPIC}


def _kafka(cluster: Cluster, group: str) -> dict[int, int]:
    got = kafka_committed(cluster.bootstrap, group, [(TOPIC, p) for p in range(3)])
    return {p: off for (_, p), (off, _) in got.items() if off is not None}


def _offsets_at(cluster: Cluster, when: int) -> dict[int, int]:
    result = run_ktool("offsets-at", str(cluster.broker.log_dir), "--time", str(when))
    assert result.exit_code == 0, result.output
    return {
        int(p): int(o) for t, p, o in (line.split(":") for line in result.stdout.splitlines()) if t == TOPIC
    }


def test_every_target_on_the_zookeeper_store(cluster, tmp_path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{TOPIC},0,3\n{TOPIC},1,99\n")
    when = int(time.time() * 1000)
    at = _offsets_at(cluster, when)
    cases = {
        "earliest": (["--topic", TOPIC, "--to-earliest"], {0: 0, 1: 0, 2: 0}),
        "latest": (["--topic", TOPIC, "--to-latest"], {0: N, 1: N, 2: N}),
        "current": (["--topic", TOPIC, "--to-current"], {**SEED, 2: N}),
        "offset": (["--topic", f"{TOPIC}:0,2", "--to-offset", "30"], {0: N, 1: SEED[1], 2: N}),
        "shift": (["--all-topics", "--shift-by", "-8"], {0: 0, 1: 4}),
        "datetime": (["--topic", TOPIC, "--to-datetime", str(when), "--log-dir", str(cluster.broker.log_dir)],
                     {**at}),
        "duration": (["--topic", TOPIC, "--by-duration", "P-1D", "--log-dir", str(cluster.broker.log_dir)],
                     {0: N, 1: N, 2: N}),
        "file": (["--from-file", str(plan)], {0: 3, 1: N}),
    }  # fmt: skip
    for name, (args, expected) in cases.items():
        group = _zk_seeded(cluster, name)
        result = reset(cluster, group, *args, "--execute", "--json", tmp_path=tmp_path)
        assert result.exit_code == 0, (name, result.output)
        assert _znodes(cluster, group) == expected, (name, result.output)
        assert _kafka(cluster, group) == {}, name  # the Kafka store untouched
        if name == "datetime":
            assert "answered by offsets-at on" in result.stderr, result.stderr
    # Kafka 0.9's own tool reads the znodes back.
    for name in ("datetime", "current"):  # every partition has an offset (else the 0.9 tool stops)
        rows = kafka_consumer_groups(cluster, f"zk-{name}")
        assert {p: r["current"] for (t, p), r in rows.items() if t == TOPIC and r["current"] is not None} == {
            **SEED,
            **cases[name][1],
        }


def test_a_time_on_0_9_needs_log_dirs(cluster) -> None:
    group = _zk_seeded(cluster, "no-log-dir")
    result = reset(cluster, group, "--topic", TOPIC, "--to-datetime", "2024-01-01T00:00:00Z")
    assert result.exit_code == 3, result.output
    assert "ListOffsets by timestamp needs Kafka 0.10.1" in result.stderr and "--log-dir" in result.stderr
    assert "Traceback" not in result.output


def test_the_kafka_store_on_0_9(cluster, tmp_path) -> None:
    group, seed = "kafka-store", {0: 5, 1: 12, 2: 7}
    kafka_commit(cluster.bootstrap, group, {(TOPIC, p): o for p, o in seed.items()})
    dry = reset(cluster, group, "--all-topics", "--shift-by", "3")
    assert dry.exit_code == 0 and "plan (dry run)" in dry.stdout, dry.output
    assert _kafka(cluster, group) == seed
    result = reset(
        cluster, group, "--all-topics", "--shift-by", "3", "--execute", "--json", tmp_path=tmp_path
    )
    assert result.exit_code == 0, result.output
    assert _kafka(cluster, group) == {0: 8, 1: 15, 2: 10}
    assert zk_group_offsets(cluster.zk, group) == {}
    cluster.zk.create(f"/consumers/{group}/owners/{TOPIC}", makepath=True)  # where the checker finds topics
    checked = offset_checker(cluster, group)
    assert {p: r["offset"] for (t, p), r in checked.items() if t == TOPIC} == {0: 8, 1: 15, 2: 10}


def test_registered_consumers_refuse_the_reset(cluster, tmp_path) -> None:
    group = _zk_seeded(cluster, "live")
    registration = b'{"version":1,"subscription":{"events":1},"pattern":"static","timestamp":"1"}'
    cluster.zk.create(f"/consumers/{group}/ids/{group}_host-1", registration, ephemeral=True, makepath=True)
    try:
        result = reset(cluster, group, "--all-topics", "--to-earliest", "--execute", tmp_path=tmp_path)
    finally:
        cluster.zk.delete(f"/consumers/{group}/ids/{group}_host-1")
    assert result.exit_code == 1, result.output
    assert "live members" in result.stderr and "journal" not in result.stderr
    assert "--force" not in result.stderr  # reset-offsets has no way to write while they run
    assert _znodes(cluster, group) == SEED


def test_undo_on_the_zookeeper_store(cluster, tmp_path) -> None:
    group = _zk_seeded(cluster, "undo")
    run = reset(cluster, group, "--all-topics", "--to-latest", "--execute", tmp_path=tmp_path)
    assert run.exit_code == 0, run.output
    journal = re.search(r"journal of every offset before the change: (\S+)", run.stderr)[1]
    assert _znodes(cluster, group) == {0: N, 1: N}
    cluster.zk.set(f"/consumers/{group}/offsets/{TOPIC}/1", b"17")  # the old consumer went on (rewound)
    undo = ["groups", "reset-offsets", "--undo", journal, "--zookeeper", cluster.connect,
            "--bootstrap-server", cluster.bootstrap]  # fmt: skip
    refused = run_ktool(*undo, "--json")
    assert refused.exit_code == 1, refused.output
    rows = {
        o["partition"]: o for o in map(json.loads, refused.stdout.splitlines()) if o["type"] == "partition"
    }
    assert rows[1]["status"] == "refused-moved" and rows[0]["status"] == "verified", refused.stdout
    assert _znodes(cluster, group) == {0: SEED[0], 1: 17}
    forced = run_ktool(*undo, "--force")
    assert forced.exit_code == 0, forced.output
    assert _znodes(cluster, group) == SEED
    cluster.zk.set(f"/consumers/{group}/offsets/{TOPIC}/0", b"9")
    again = run_ktool(*undo)
    assert again.exit_code == 0 and "already undone" in again.stderr, again.output
    assert _znodes(cluster, group) == {0: 9, 1: SEED[1]}


def test_an_unwritable_journal_dir_is_one_line_and_nothing_written(cluster, tmp_path) -> None:
    group = _zk_seeded(cluster, "unwritable")
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("")
    result = run_ktool(
        "groups", "reset-offsets", group, "--all-topics", "--to-earliest", "--execute", "--zookeeper",
        cluster.connect, "--bootstrap-server", cluster.bootstrap, "--journal-dir", str(in_the_way),
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [
        f"ktool: {in_the_way}: cannot be the journal directory: a file, not a directory"
    ]
    assert _znodes(cluster, group) == SEED


def test_a_run_killed_at_each_journal_step_leaves_old_or_new_and_a_rerun_or_undo_finishes(
    cluster, tmp_path
) -> None:
    """SIGKILLed as it names its journal (before the writes: `prepared`, linked; after the writes and
    their read-back: `applied`, linked to a temporary name, then renamed into place), a reset leaves
    every offset old or new, never a mix: old is finished by running the command again, new is put
    back by --undo of the journal it left."""
    import sys

    from tests.support.kill_points import run_killed, strace_or_unavailable, write_points

    strace_or_unavailable()
    group, journals = _zk_seeded(cluster, "killed"), tmp_path / "journals"
    servers = ["--zookeeper", cluster.connect, "--bootstrap-server", cluster.bootstrap]
    argv = [sys.executable, "-m", "kafka_tools", "groups", "reset-offsets", group, "--all-topics",
            "--to-latest", "--execute", *servers, "--journal-dir", str(journals)]  # fmt: skip
    new = {0: N, 1: N}

    def reseed() -> None:
        for p, o in SEED.items():
            cluster.zk.set(f"/consumers/{group}/offsets/{TOPIC}/{p}", str(o).encode())
        for journal in journals.glob("*"):
            journal.unlink()

    # The journal is named by a link (the `prepared` one; the `applied` one's temporary name) or a rename.
    points = [p for p in write_points(argv) if p.syscall in ("linkat", "rename")]
    assert _znodes(cluster, group) == new and [p.syscall for p in points] == ["linkat", "linkat", "rename"]
    seen = []
    for point in points:
        reseed()
        run_killed(argv, point)
        now = _znodes(cluster, group)
        assert now in (SEED, new), (point, now)
        seen.append(now)
        if now == SEED:
            rerun = run_ktool(*argv[3:])
            assert rerun.exit_code == 0 and _znodes(cluster, group) == new, rerun.output
        else:
            (journal,) = journals.glob("reset-offsets-*.json")
            assert json.loads(journal.read_text())["state"] == "prepared"
            undo = run_ktool("groups", "reset-offsets", "--undo", str(journal), *servers)
            assert undo.exit_code == 0 and _znodes(cluster, group) == SEED, undo.output
    assert seen == [SEED, new, new]


def test_all_topics_of_a_group_without_offsets_says_so_and_writes_nothing(cluster, tmp_path) -> None:
    result = reset(cluster, "never-ran", "--all-topics", "--to-earliest", "--execute", tmp_path=tmp_path)
    assert result.exit_code == 0, result.output
    assert "no partition in scope: the group has no offset in kafka" in result.stderr
    assert "nothing to write" in result.stderr and list(tmp_path.iterdir()) == []
