"""`ktool groups reset-offsets` against real 3.9 and 4.x brokers (the Kafka store): every target, read
back with `kafka-consumer-groups --describe` of the same release; the CSV of `--export` (and so
--to-datetime, --by-duration answered by ListOffsets) equal to kafka-consumer-groups' own
`--reset-offsets --dry-run --export`; a group with a live member refused; the undo rules; a real
consumer started after a reset starts at the reset offsets.

The topic has 3 partitions of 20 records; record i of partition p has the timestamp T0 + i·(p+1) hours,
so one time falls on a different offset in each partition, whatever seconds the runs take."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import create_topic, run_tool
from tests.support.servers import kafka_commit, kafka_committed

N = 20
T0 = 1_600_000_000_000
HOUR = 3_600_000
AT = T0 + 7 * HOUR + HOUR // 2  # offsets 8, 4, 3
SEED = {0: 5, 1: 12}  # partition 2 has no committed offset


@pytest.fixture(scope="module")
def topic(modern_kafka) -> str:
    from confluent_kafka import Producer

    name = f"reset-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, name, partitions=3)
    producer = Producer({"bootstrap.servers": modern_kafka.bootstrap})
    for p in range(3):
        for i in range(N):
            producer.produce(name, f"{p}-{i}".encode(), partition=p, timestamp=T0 + i * (p + 1) * HOUR)
    assert producer.flush(30) == 0
    return name


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _seeded(cluster, topic: str, name: str) -> str:
    group = f"{name}-{uuid.uuid4().hex[:6]}"
    kafka_commit(cluster.bootstrap, group, {(topic, p): o for p, o in SEED.items()})
    return group


def reset(cluster, group: str, *args: str, journal_dir: Path | None = None):
    more = ["--journal-dir", str(journal_dir)] if journal_dir else []
    return run_ktool("groups", "reset-offsets", group, "--bootstrap-server", cluster.bootstrap, *args, *more)


def _rows(result) -> dict[int, dict]:
    from kafka_tools.render.contract import problems

    lines = result.stdout.splitlines()
    assert problems("groups reset-offsets", lines) == [], result.stdout
    return {o["partition"]: o for o in map(json.loads, lines) if o["type"] == "partition"}


def _describe(cluster, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    """kafka-consumer-groups --describe of several groups: {group: {(topic, partition): current}}."""
    args = ["--bootstrap-server", cluster.bootstrap, "--describe"]
    for g in groups:
        args += ["--group", g]
    out = run_tool(cluster.release, "ConsumerGroupCommand", args).stdout
    found: dict[str, dict[tuple[str, int], int]] = {g: {} for g in groups}
    header: list[str] = []
    for line in out.splitlines():
        tokens = line.split()
        if tokens[:1] == ["GROUP"]:
            header = tokens
        elif header and len(tokens) == len(header) and tokens[0] in found:
            row = dict(zip(header, tokens, strict=True))
            found[row["GROUP"]][(row["TOPIC"], int(row["PARTITION"]))] = int(row["CURRENT-OFFSET"])
    return found


def _their_export(cluster, group: str, *args: str) -> set[str]:
    out = run_tool(
        cluster.release,
        "ConsumerGroupCommand",
        ["--bootstrap-server", cluster.bootstrap, "--reset-offsets", "--group", group, *args,
         "--dry-run", "--export"],
    ).stdout  # fmt: skip
    return {line for line in out.splitlines() if re.fullmatch(r"[^,\s]+,\d+,\d+", line)}


def test_every_target_is_written_and_kafka_consumer_groups_reads_it_back(modern_kafka, topic, tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{topic},0,3\n{topic},1,99\n")
    cases = {
        "earliest": (["--topic", topic, "--to-earliest"], {0: 0, 1: 0, 2: 0}),
        "latest": (["--topic", topic, "--to-latest"], {0: N, 1: N, 2: N}),
        "current": (["--topic", topic, "--to-current"], {**SEED, 2: N}),
        "offset": (["--topic", f"{topic}:0,2", "--to-offset", "30"], {0: N, 2: N}),
        "shift": (["--all-topics", "--shift-by", "-8"], {0: 0, 1: 4}),
        "datetime": (["--topic", topic, "--to-datetime", _iso(AT)], {0: 8, 1: 4, 2: 3}),
        "duration": (["--topic", topic, "--by-duration", f"PT{(time.time() * 1000 - AT) // 1000:.0f}S"],
                     {0: 8, 1: 4, 2: 3}),
        "file": (["--from-file", str(plan)], {0: 3, 1: N}),
    }  # fmt: skip
    groups = {}
    for name, (args, expected) in cases.items():
        group = groups[name] = _seeded(modern_kafka, topic, name)
        result = reset(modern_kafka, group, *args, "--execute", "--json", journal_dir=tmp_path)
        assert result.exit_code == 0, (name, result.output)
        rows = _rows(result)
        assert {p: r["offset"] for p, r in rows.items()} == expected, (name, result.stdout)
        assert {r["status"] for r in rows.values()} <= {"verified", "unchanged"}, (name, result.stdout)
    clamped = reset(modern_kafka, groups["offset"], "--topic", topic, "--to-offset", "30")
    assert f"{topic}-0: 30 is past the log end {N}: clamped to {N}" in clamped.stderr
    answered = reset(modern_kafka, groups["datetime"], "--topic", topic, "--to-datetime", _iso(AT))
    assert "answered by the broker (ListOffsets by timestamp)" in answered.stderr
    theirs = _describe(modern_kafka, list(groups.values()))
    for name, (_, expected) in cases.items():
        want = {(topic, p): o for p, o in {**SEED, **expected}.items()}
        assert theirs[groups[name]] == want, (name, theirs[groups[name]])


@pytest.mark.parametrize(
    "target",
    [["--topic", "{t}:0,1", "--shift-by", "-8"], ["--topic", "{t}", "--to-datetime", _iso(AT)]],
    ids=["shift-by", "to-datetime"],
)
def test_export_is_kafka_consumer_groups_csv(modern_kafka, topic, target):
    """The CSV ktool's --export prints (dry run) is the one kafka-consumer-groups prints for the same
    reset; its --to-datetime asks the brokers' ListOffsets, so ktool's time answer equals it."""
    args = [a.format(t=topic) for a in target]
    group = _seeded(modern_kafka, topic, "export")
    ours = reset(modern_kafka, group, *args, "--export")
    assert ours.exit_code == 0, ours.output
    theirs = _their_export(modern_kafka, group, *args)
    assert len(theirs) >= 2 and set(ours.stdout.splitlines()) == theirs, (ours.stdout, theirs)
    assert committed_of(modern_kafka, group, topic) == SEED  # the dry run wrote nothing


# Records at T0 + 4, 50 and 600 ms: a fraction of a second read as milliseconds (Kafka's `.5` is 5 ms)
# and one read as a decimal (ISO-8601's `.5` is 500 ms) fall on different offsets.
FRACTION_TIMES = (4, 50, 600)
FRACTIONS = {  # what --to-datetime says: the offset kafka-consumer-groups resets to
    "2020-09-13T12:26:40.5": 1,  # 5 ms, UTC (no zone)
    "2020-09-13T12:26:40.50Z": 1,  # 50 ms
    "2020-09-13T14:26:40.6+02:00": 1,  # 6 ms
    "2020-09-13T14:26:40.600+02": 2,  # 600 ms
    "2020-09-13T12:26:40.601Z": 3,  # after the last record: the log end
}


@pytest.fixture(scope="module")
def fraction_topic(modern_kafka) -> str:
    from confluent_kafka import Producer

    assert _iso(T0) == "2020-09-13T12:26:40.000Z"
    name = f"fraction-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, name, partitions=1)
    producer = Producer({"bootstrap.servers": modern_kafka.bootstrap})
    for ms in FRACTION_TIMES:
        producer.produce(name, b"r", partition=0, timestamp=T0 + ms)
    assert producer.flush(30) == 0
    return name


@pytest.mark.parametrize("when", list(FRACTIONS))
def test_to_datetime_reads_a_fraction_of_a_second_as_kafka_consumer_groups_does(
    modern_kafka, fraction_topic, when
):
    """`.5` is 5 ms to kafka-consumer-groups (`Utils.getDateTime`: SimpleDateFormat's `SSS` counts
    milliseconds), so ktool reads it so too: the same words plan the same offsets, with 1, 2 or 3
    digits, with no zone, `Z`, `+HH:MM` or `+HH`."""
    group = f"fraction-{uuid.uuid4().hex[:6]}"
    kafka_commit(modern_kafka.bootstrap, group, {(fraction_topic, 0): 0})
    args = ["--topic", fraction_topic, "--to-datetime", when]
    ours = reset(modern_kafka, group, *args, "--export")
    assert ours.exit_code == 0, ours.output
    assert ours.stdout.splitlines() == [f"{fraction_topic},0,{FRACTIONS[when]}"], ours.stdout
    assert set(ours.stdout.splitlines()) == _their_export(modern_kafka, group, *args)


def committed_of(cluster, group: str, topic: str) -> dict[int, int]:
    got = kafka_committed(cluster.bootstrap, group, [(topic, p) for p in range(3)])
    return {p: off for (_, p), (off, _) in got.items() if off is not None}


def test_a_group_with_a_live_member_is_refused_and_nothing_committed(modern_kafka, topic, tmp_path):
    from confluent_kafka import Consumer

    group = _seeded(modern_kafka, topic, "live")
    consumer = Consumer(
        {"bootstrap.servers": modern_kafka.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment():
        assert time.monotonic() < deadline, "no assignment"
        consumer.poll(0.2)
    try:
        result = reset(modern_kafka, group, "--all-topics", "--to-latest", "--execute", journal_dir=tmp_path)
    finally:
        consumer.close()
    assert result.exit_code == 1, result.output
    assert "live members" in result.stderr and "journal" not in result.stderr
    assert "--force" not in result.stderr  # reset-offsets has no way to write while they run
    assert committed_of(modern_kafka, group, topic) == SEED


def test_undo_refuses_a_moved_offset_forces_it_and_a_second_undo_is_already_undone(
    modern_kafka, topic, tmp_path
):
    group = _seeded(modern_kafka, topic, "undo")
    run = reset(modern_kafka, group, "--all-topics", "--to-earliest", "--execute", journal_dir=tmp_path)
    assert run.exit_code == 0, run.output
    journal = re.search(r"journal of every offset before the change: (\S+)", run.stderr)[1]
    assert f"ktool groups reset-offsets --undo {journal}" in run.stderr
    assert committed_of(modern_kafka, group, topic) == {0: 0, 1: 0}
    kafka_commit(modern_kafka.bootstrap, group, {(topic, 0): 9})  # a consumer went on
    undo = ["--undo", journal, "--bootstrap-server", modern_kafka.bootstrap]

    refused = run_ktool("groups", "reset-offsets", *undo, "--json")
    assert refused.exit_code == 1, refused.output
    assert _rows(refused)[0]["status"] == "refused-moved" and _rows(refused)[1]["status"] == "verified"
    assert committed_of(modern_kafka, group, topic) == {0: 9, 1: SEED[1]}

    forced = run_ktool("groups", "reset-offsets", *undo, "--force")
    assert forced.exit_code == 0, forced.output
    assert committed_of(modern_kafka, group, topic) == SEED

    kafka_commit(modern_kafka.bootstrap, group, {(topic, 1): 15})
    again = run_ktool("groups", "reset-offsets", *undo)
    assert again.exit_code == 0 and "already undone" in again.stderr, again.output
    assert committed_of(modern_kafka, group, topic) == {0: SEED[0], 1: 15}


def test_undo_deletes_an_offset_the_partition_had_not_and_says_why_when_kafka_refuses(
    modern_kafka, topic, tmp_path
):
    """Partition 2 had no committed offset: the reset wrote 10 there; the undo deletes it (OffsetDelete,
    KIP-496), so a consumer started then follows auto.offset.reset again, not offset 10. While a member
    of the group subscribes to the topic, the coordinator refuses (GROUP_SUBSCRIBED_TO_TOPIC): exit 1,
    the row says so, and the undo, asked again once the member is gone, deletes it."""
    from confluent_kafka import Consumer

    undo = ["--undo", None, "--bootstrap-server", modern_kafka.bootstrap, "--json"]
    for live in (False, True):
        group = _seeded(modern_kafka, topic, f"undo-none-{live}")
        run = reset(modern_kafka, group, "--topic", f"{topic}:2", "--to-offset", "10", "--execute",
                    journal_dir=tmp_path)  # fmt: skip
        assert run.exit_code == 0, run.output
        assert committed_of(modern_kafka, group, topic) == {**SEED, 2: 10}
        undo[1] = re.search(r"journal of every offset before the change: (\S+)", run.stderr)[1]
        consumer = None
        if live:
            consumer = Consumer(
                {"bootstrap.servers": modern_kafka.bootstrap, "group.id": group, "enable.auto.commit": False}
            )
            consumer.subscribe([topic])
            deadline = time.monotonic() + 60
            while not consumer.assignment():
                assert time.monotonic() < deadline, "no assignment"
                consumer.poll(0.2)
            refused = run_ktool("groups", "reset-offsets", *undo)
            consumer.close()
            assert refused.exit_code == 1, refused.output
            row = _rows(refused)[2]
            assert row["status"] == "kafka-kept" and "GROUP_SUBSCRIBED_TO_TOPIC" in row["reason"], row
            assert committed_of(modern_kafka, group, topic) == {**SEED, 2: 10}
        done = run_ktool("groups", "reset-offsets", *undo)
        assert done.exit_code == 0, done.output
        assert _rows(done)[2]["status"] == "verified", done.stdout
        assert committed_of(modern_kafka, group, topic) == SEED  # no offset for partition 2 again


@pytest.mark.parametrize("kafka_release", ["4.4.0"], indirect=True)
def test_a_consumer_started_after_the_reset_starts_at_the_reset_offsets(modern_kafka, topic, tmp_path):
    from confluent_kafka import Consumer

    group = _seeded(modern_kafka, topic, "resume")
    result = reset(modern_kafka, group, "--topic", topic, "--to-datetime", _iso(AT), "--execute")
    assert result.exit_code == 0, result.output
    consumer = Consumer(
        {"bootstrap.servers": modern_kafka.bootstrap, "group.id": group, "enable.auto.commit": False,
         "auto.offset.reset": "latest"}
    )  # fmt: skip
    consumer.subscribe([topic])
    first: dict[int, int] = {}
    deadline = time.monotonic() + 60
    try:
        while len(first) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                first.setdefault(msg.partition(), msg.offset())
    finally:
        consumer.close()
    assert first == {0: 8, 1: 4, 2: 3}
