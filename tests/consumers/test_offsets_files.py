"""`ktool offsets export` and `ktool offsets import` against a real ZooKeeper 3.8 and a real Kafka 0.9.0.1
broker (``kafka09_cluster``, tests/conftest.py).

* export, in both formats (Kafka's ExportZkOffsets lines ``/consumers/G/offsets/T/P:offset`` and CSV
  ``group,topic,partition,offset``), is exactly the znodes (read with kazoo), or exactly what a Kafka
  client reads back from ``__consumer_offsets`` (confluent-kafka ``Consumer.committed``);
* import writes a file into ZooKeeper or into Kafka with migrate-offsets' checks (refusals, journal,
  read-back), and a second import has nothing to write;
* a malformed line is reported as ``FILE:LINE`` with exit 3, before anything is written;
* export -> import -> export gives back the same file.

One group's ZooKeeper offsets are committed by a real old consumer (Kafka 0.9's ZooKeeper-based
console consumer, ``--max-messages``); the others are written the way it writes them.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import Result

from tests.support.cli import run_ktool
from tests.support.servers import (
    console_consume,
    kafka_commit,
    kafka_committed,
    key_for_partition,
    zk_group_offsets,
)

EVENTS, AUDIT = "events", "audit"
COUNTS = {EVENTS: [30, 12, 25], AUDIT: [8, 40, 5, 16, 22, 9, 11, 30, 14, 27, 6]}  # audit: 11 partitions
ALL = sorted((t, p) for t, counts in COUNTS.items() for p in range(len(counts)))

TP = tuple[str, int]


@pytest.fixture(scope="module")
def cluster(kafka09_cluster):
    broker = kafka09_cluster.broker
    for topic, counts in COUNTS.items():
        broker.create_topic(topic, partitions=len(counts))
        lines = []
        for p, n in enumerate(counts):
            key = key_for_partition(p, len(counts))
            lines += [f"{key}:{topic}-{p}-{i}" for i in range(n)]
        broker.produce(topic, lines, key_separator=":", acks=1)
    zk = kafka09_cluster.zk
    # A real old consumer commits group "reader"'s offsets (a few messages per fetch, so they differ).
    res = console_consume(
        zookeeper=kafka09_cluster.connect,
        whitelist=f"{EVENTS}|{AUDIT}",
        group="reader",
        consumer_properties={"fetch.message.max.bytes": 120},
        max_messages=60,
        timeout_ms=4000,
        home=broker.home,
    )
    assert len(res.stdout.split()) == 60, res.stderr[-2000:]
    assert len(zk_group_offsets(zk, "reader")) >= 5
    # Written as the old consumer writes them (decimal text), including partition 10 (sorts after 9).
    hand = {(EVENTS, 0): 7, (EVENTS, 2): 25, (AUDIT, 3): 2, (AUDIT, 9): 0, (AUDIT, 10): 6}
    for (t, p), o in hand.items():
        zk.create(f"/consumers/by-hand/offsets/{t}/{p}", str(o).encode(), makepath=True)
    for (t, p), o in {(EVENTS, 1): 3, (AUDIT, 1): 33}.items():
        zk.create(f"/consumers/team,eu/offsets/{t}/{p}", str(o).encode(), makepath=True)
    # Offsets only in Kafka.
    kafka_commit(kafka09_cluster.bootstrap, "in-kafka", {(EVENTS, 0): 11, (EVENTS, 1): 12, (AUDIT, 10): 1})
    return kafka09_cluster


def export(cluster, *args: str, bootstrap: bool = False) -> Result:
    extra = ["--bootstrap-server", cluster.bootstrap] if bootstrap else []
    return run_ktool("offsets", "export", "--zookeeper", cluster.connect, *extra, *args)


def import_(cluster, path: Path, journal_dir: Path, *args: str) -> Result:
    """`offsets import` with --to zookeeper unless ARGS name the store (--to is required)."""
    if "--to" not in args:
        args = ("--to", "zookeeper", *args)
    return run_ktool(
        "offsets", "import", str(path), "--zookeeper", cluster.connect, "--bootstrap-server",
        cluster.bootstrap, "--journal-dir", str(journal_dir), *args,
    )  # fmt: skip


def znodes(cluster, group: str) -> dict[TP, str]:
    """The raw text of every /consumers/<group>/offsets/T/P znode."""
    base = f"/consumers/{group}/offsets"
    out = {}
    for t in cluster.zk.get_children(base):
        for p in cluster.zk.get_children(f"{base}/{t}"):
            out[(t, int(p))] = cluster.zk.get(f"{base}/{t}/{p}")[0].decode()
    return out


def zk_lines(rows: dict[str, dict[TP, object]]) -> str:
    return "".join(
        f"/consumers/{g}/offsets/{t}/{p}:{o}\n" for g in sorted(rows) for (t, p), o in sorted(rows[g].items())
    )


def csv_text(rows: dict[str, dict[TP, object]]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    for g in sorted(rows):
        for (t, p), o in sorted(rows[g].items()):
            w.writerow([g, t, p, o])
    return out.getvalue()


def kafka_offsets(cluster, group: str) -> dict[TP, int]:
    got = kafka_committed(cluster.bootstrap, group, ALL)
    return {tp: off for tp, (off, _) in got.items() if off is not None}


def statuses(result: Result) -> dict[tuple[str, str, int], str]:
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert not rows or rows[-1]["type"] == "summary", result.stdout  # every --json stream ends so
    return {(r["group"], r["topic"], r["partition"]): r["status"] for r in rows[:-1]}


def journal_of(result: Result) -> Path | None:
    m = re.search(r"journal of every offset before the change: (\S+)", result.stderr)
    return Path(m[1]) if m else None


ZK_GROUPS = ("by-hand", "reader", "team,eu")


# --------------------------------------------------------------------------- export


def test_export_zk_format_is_the_znodes(cluster, tmp_path) -> None:
    want = zk_lines({g: znodes(cluster, g) for g in ZK_GROUPS})
    assert "/consumers/by-hand/offsets/audit/9:0\n/consumers/by-hand/offsets/audit/10:6\n" in want

    got = export(cluster, *[a for g in ZK_GROUPS for a in ("--group", g)])
    assert got.exit_code == 0, got.stderr
    assert got.stdout == want
    # The same through the broker-aware path, and every ZooKeeper group with --all-groups.
    through_broker = export(cluster, *[a for g in ZK_GROUPS for a in ("--group", g)], bootstrap=True)
    assert through_broker.exit_code == 0 and through_broker.stdout == want, through_broker.stderr
    everything = export(cluster, "--all-groups")
    assert everything.exit_code == 0 and everything.stdout == want

    out = tmp_path / "offsets.txt"
    to_file = export(cluster, "--group", "by-hand", "--output", str(out))
    assert to_file.exit_code == 0 and to_file.stdout == ""
    assert out.read_text() == zk_lines({"by-hand": znodes(cluster, "by-hand")})
    assert f"5 offsets written to {out}" in to_file.stderr

    only_audit = export(cluster, "--group", "by-hand", "--topic", AUDIT)
    assert only_audit.stdout == zk_lines({"by-hand": {tp: o for tp, o in znodes(cluster, "by-hand").items()
                                                      if tp[0] == AUDIT}})  # fmt: skip


def test_export_csv_is_the_znodes_and_kafka_what_a_client_reads(cluster) -> None:
    got = export(cluster, "--format", "csv", *[a for g in ZK_GROUPS for a in ("--group", g)])
    assert got.exit_code == 0, got.stderr
    assert got.stdout == csv_text({g: znodes(cluster, g) for g in ZK_GROUPS})
    assert '"team,eu",audit,1,33\n' in got.stdout  # quoted as CSV must

    in_kafka = kafka_offsets(cluster, "in-kafka")
    assert in_kafka == {(EVENTS, 0): 11, (EVENTS, 1): 12, (AUDIT, 10): 1}
    for fmt, render in (("zk", zk_lines), ("csv", csv_text)):
        res = export(cluster, "--from", "kafka", "--group", "in-kafka", "--format", fmt, bootstrap=True)
        assert res.exit_code == 0, res.stderr
        assert res.stdout == render({"in-kafka": in_kafka})
    # Without a broker there is no Kafka to read.
    assert export(cluster, "--from", "kafka", "--group", "in-kafka").exit_code == 2


# --------------------------------------------------------------------------- import


def test_import_to_zookeeper_and_to_kafka(cluster, tmp_path) -> None:
    zk_file = tmp_path / "to-zk.txt"
    wanted_zk = {(EVENTS, 0): 4, (EVENTS, 2): 20, (AUDIT, 10): 6}  # 6: the log end
    zk_file.write_text("# ExportZkOffsets format\n\n" + zk_lines({"imported-zk": wanted_zk}))
    res = import_(cluster, zk_file, tmp_path / "j", "--json")
    assert res.exit_code == 0, res.stderr
    assert statuses(res) == {("imported-zk", t, p): "verified" for t, p in wanted_zk}
    assert zk_group_offsets(cluster.zk, "imported-zk") == wanted_zk
    assert kafka_offsets(cluster, "imported-zk") == {}  # Kafka untouched
    journal = journal_of(res)
    assert journal is not None and json.loads(journal.read_text())["state"] == "applied"

    again = import_(cluster, zk_file, tmp_path / "j", "--json")
    assert again.exit_code == 0 and "nothing to write" in again.stderr and journal_of(again) is None
    assert set(statuses(again).values()) == {"unchanged"}

    csv_file = tmp_path / "to-kafka.csv"
    wanted_kafka = {(EVENTS, 1): 12, (AUDIT, 4): 22, (AUDIT, 10): 5}
    csv_file.write_text(csv_text({"imported-kafka": wanted_kafka}))
    res = import_(cluster, csv_file, tmp_path / "j", "--to", "kafka", "--json", "--metadata", "from-csv")
    assert res.exit_code == 0, res.stderr
    assert statuses(res) == {("imported-kafka", t, p): "verified" for t, p in wanted_kafka}
    got = kafka_committed(cluster.bootstrap, "imported-kafka", sorted(wanted_kafka))
    assert got == {tp: (o, "from-csv") for tp, o in wanted_kafka.items()}
    assert not cluster.zk.exists("/consumers/imported-kafka")  # ZooKeeper untouched


def test_import_has_migrate_offsets_checks(cluster, tmp_path) -> None:
    before = znodes(cluster, "by-hand")
    path = tmp_path / "checks.txt"
    rows = {
        (EVENTS, 0): 5,  # below ZooKeeper's 7: a rewind
        (EVENTS, 2): 26,  # past the log end (25)
        (AUDIT, 3): 4,  # forward, inside the log: fine
    }
    path.write_text(zk_lines({"by-hand": rows}))
    res = import_(cluster, path, tmp_path / "j", "--json")
    assert res.exit_code == 1, (res.stdout, res.stderr)
    assert statuses(res) == {
        ("by-hand", EVENTS, 0): "refused-rewind",
        ("by-hand", EVENTS, 2): "refused-out-of-range",
        ("by-hand", AUDIT, 3): "verified",
    }  # the group's other partitions, not in the file, are left alone and not reported
    assert znodes(cluster, "by-hand") == {**before, (AUDIT, 3): "4"}

    forced = import_(cluster, path, tmp_path / "j", "--json", "--allow-rewind", "--force")
    assert forced.exit_code == 0, forced.stderr
    assert znodes(cluster, "by-hand") == {**before, **{tp: str(o) for tp, o in rows.items()}}
    # Put the group back as it was (the other tests read it).
    path.write_text(zk_lines({"by-hand": before}))
    back = import_(cluster, path, tmp_path / "j", "--allow-rewind")
    assert back.exit_code == 0, back.stderr
    assert znodes(cluster, "by-hand") == before


@pytest.mark.parametrize(
    ("lines", "bad_line"),
    [
        (["/consumers/g/offsets/events/0:5", "# a comment", "/consumers/g/offsets/events/1:abc"], 3),
        (["", "/consumers/g/owners/events/0:5"], 2),
        (["g,events,0,5", "g,events,1"], 2),
        (["g,events,x,5"], 1),
        (["group,topic,partition,offset", "g,events,0,5"], 1),
        (["/consumers/g/offsets/events:5"], 1),
        (["g,events,0,5", "", "# fine so far", "/consumers/g/offsets/events/0/extra:5"], 4),
    ],
)
def test_a_malformed_line_is_named_and_nothing_is_written(cluster, tmp_path, lines, bad_line) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    for target in ("zookeeper", "kafka"):
        res = import_(cluster, path, tmp_path / "j", "--to", target, "--json")
        assert res.exit_code == 3, (res.stdout, res.stderr)
        assert f"{path}:{bad_line}:" in res.stderr, res.stderr
        assert res.stdout == "" and not (tmp_path / "j").exists()
    assert not cluster.zk.exists("/consumers/g")
    assert kafka_offsets(cluster, "g") == {}


def test_a_missing_file_is_one_line_exit_3_as_everywhere(cluster, tmp_path) -> None:
    res = import_(cluster, tmp_path / "no-such-file.txt", tmp_path / "j")
    assert res.exit_code == 3, res.stderr
    assert res.stderr == f"ktool: {tmp_path / 'no-such-file.txt'}: no such file or directory\n"


# --------------------------------------------------------------------------- round trips


def test_round_trip_export_import_export(cluster, tmp_path) -> None:
    groups = [a for g in ZK_GROUPS for a in ("--group", g)]
    # ZooKeeper -> file -> (ZooKeeper emptied) -> ZooKeeper -> file: the same file.
    first = export(cluster, *groups)
    assert first.exit_code == 0 and first.stdout
    path = tmp_path / "zk.txt"
    path.write_text(first.stdout)
    for g in ZK_GROUPS:
        cluster.zk.delete(f"/consumers/{g}/offsets", recursive=True)
    res = import_(cluster, path, tmp_path / "j", "--to", "zookeeper")
    assert res.exit_code == 0, res.stderr
    assert export(cluster, *groups).stdout == first.stdout

    # ZooKeeper -> CSV -> Kafka -> CSV: the same file, now read from Kafka.
    csv_first = export(cluster, *groups, "--format", "csv")
    path = tmp_path / "offsets.csv"
    path.write_text(csv_first.stdout)
    res = import_(cluster, path, tmp_path / "j", "--to", "kafka")
    assert res.exit_code == 0, res.stderr
    csv_again = export(cluster, *groups, "--format", "csv", "--from", "kafka", bootstrap=True)
    assert csv_again.exit_code == 0, csv_again.stderr
    assert csv_again.stdout == csv_first.stdout
    # and the two formats say the same thing
    assert export(cluster, *groups, "--from", "kafka", bootstrap=True).stdout == first.stdout


@pytest.mark.xfail(
    strict=True,
    reason=(
        "--all-groups = groups in ZooKeeper + the coordinator's ListGroups; a 0.9 coordinator lists only "
        "groups it holds live metadata for, so a group whose offsets are only in Kafka (committed by "
        "`offsets import --to kafka`, by a consumer that assigns its own partitions, or whose members "
        "left) is neither exported nor migrated by --all-groups (exit 0, nothing said)"
    ),
)
def test_all_groups_includes_groups_whose_offsets_are_only_in_kafka(cluster) -> None:
    res = export(cluster, "--from", "kafka", "--all-groups", bootstrap=True)
    assert res.exit_code == 0, res.stderr
    assert "/consumers/in-kafka/offsets/events/0:11\n" in res.stdout, res.stdout
