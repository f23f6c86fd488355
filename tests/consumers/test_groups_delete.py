"""`ktool groups delete` on ZooKeeper's store (the session's real ZooKeeper, znodes as Kafka 0.8/0.9's old
consumer writes them) and its refusal on a real Kafka 0.9.0.1 broker, which has no DeleteGroups.

What a user checks: the group's znodes are gone (and Kafka 0.9's own `kafka-consumer-groups.sh
--zookeeper --list` no longer lists it), nothing is touched by --dry-run or while a consumer is
registered, an unknown group is one line and exit 1, and --undo puts every znode back with its data and
ACL, keeping what a consumer wrote again since.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import uuid

import pytest

from tests.support.cli import run_ktool
from tests.zk.test_zk_reader import write_kafka09_cluster

IDLE_OFFSETS = {("orders", 0): "5", ("orders", 1): "9"}


def _setup(zk_root) -> None:
    """The 0.9 cluster of test_zk_reader (group `billing` with a live consumer) and group `idle`: offsets
    only, one of them under an ACL of its own."""
    from kazoo.security import ACL, Id, Permissions

    write_kafka09_cluster(zk_root)
    for (topic, p), offset in IDLE_OFFSETS.items():
        zk_root.write(f"/consumers/idle/offsets/{topic}/{p}", offset)
    zk_root.write("/consumers/idle/ids")
    zk_root.write("/consumers/idle/owners/orders")
    guarded = [ACL(Permissions.READ | Permissions.WRITE | Permissions.ADMIN, Id("world", "anyone"))]
    zk_root.write("/consumers/idle/offsets/other")
    zk_root.write("/consumers/idle/offsets/other/0", "3", acl=guarded)


def _tree(zk, root: str) -> dict[str, tuple[bytes, list]]:
    """Every znode under `root`: path -> (data, ACL)."""
    out = {}
    todo = [root]
    while todo:
        path = todo.pop()
        if zk.exists(path) is None:
            continue
        out[path] = (zk.get(path)[0], zk.get_acls(path)[0])
        todo += [f"{path}/{c}" for c in zk.get_children(path)]
    return out


def _journal(stderr: str) -> str:
    found = re.search(r"journal of what is deleted: (\S+)", stderr)
    assert found, stderr
    return found.group(1)


def _json(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_a_group_without_members_is_deleted_and_undo_restores_each_znode_with_its_acl(zk_root) -> None:
    _setup(zk_root)
    before = _tree(zk_root.zk, "/consumers/idle")
    assert len(before) == 10  # the group, ids, owners, owners/orders, offsets, its 2 topics and 3 offsets
    plan = run_ktool("groups", "delete", "idle", "--dry-run", "--json", "--zookeeper", zk_root.connect)
    assert plan.exit_code == 0, plan.output
    rows = _json(plan.stdout)
    assert rows[0] == {
        "type": "deletion", "group": "idle", "store": "zookeeper", "status": "would-delete",
        "liveMembers": [], "znodes": 10, "offsets": 3, "kept": 0, "reason": None,
    }  # fmt: skip
    assert _tree(zk_root.zk, "/consumers/idle") == before  # the dry run deleted nothing

    done = run_ktool("groups", "delete", "idle", "--zookeeper", zk_root.connect)
    assert done.exit_code == 0, done.output
    assert zk_root.zk.exists("/consumers/idle") is None
    assert zk_root.zk.exists("/consumers/billing/ids")  # the other group untouched
    assert "deleted" in done.stdout
    journal = _journal(done.stderr)

    undo = run_ktool("groups", "delete", "--undo", journal, "--json", "--zookeeper", zk_root.connect)
    assert undo.exit_code == 0, undo.output
    assert _json(undo.stdout)[0]["status"] == "restored"
    assert _tree(zk_root.zk, "/consumers/idle") == before  # data and ACL, znode for znode

    again = run_ktool("groups", "delete", "--undo", journal, "--json", "--zookeeper", zk_root.connect)
    assert again.exit_code == 0, again.output
    assert _json(again.stdout)[0]["status"] == "already-restored"


def test_a_group_with_a_registered_consumer_is_refused_and_nothing_is_deleted(zk_root) -> None:
    _setup(zk_root)
    before = _tree(zk_root.zk, "/consumers/billing")
    result = run_ktool("groups", "delete", "billing", "--zookeeper", zk_root.connect)
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "billing_host1-1463000000000-1a2b3c4d" in lines[0], result.stderr
    assert "live members" in lines[0]
    assert _tree(zk_root.zk, "/consumers/billing") == before


def test_an_unknown_group_is_one_line_exit_1_and_the_others_are_deleted(zk_root) -> None:
    _setup(zk_root)
    result = run_ktool("groups", "delete", "ghost", "idle", "--zookeeper", zk_root.connect)
    assert result.exit_code == 1, result.output
    refused = [line for line in result.stderr.splitlines() if "ghost" in line]
    assert refused == [
        f"ktool: group ghost: no consumer group ghost (/consumers/ghost) on ZooKeeper {zk_root.connect}; "
        "give --bootstrap-server for a group whose offsets are in Kafka"
    ]
    assert zk_root.zk.exists("/consumers/idle") is None
    assert "Traceback" not in result.output


def test_a_consumer_registering_after_the_read_fails_the_whole_transaction(zk_root) -> None:
    from kafka_tools.cli.zk_options import zk_config_from_options
    from kafka_tools.errors import FindingsError
    from kafka_tools.zk.connection import open_zk
    from kafka_tools.zk.tree import delete_tree, read_tree

    _setup(zk_root)
    before = _tree(zk_root.zk, "/consumers/idle")
    with open_zk(zk_config_from_options(zookeeper=zk_root.connect)) as zk:
        nodes = read_tree(zk, "/consumers/idle")
        zk_root.write("/consumers/idle/ids/idle_late-1", '{"version":1,"subscription":{"orders":1}}')
        with pytest.raises(FindingsError, match="/consumers/idle/ids .*a znode was added under it.*nothing"):
            delete_tree(zk, nodes)
        zk_root.zk.delete("/consumers/idle/ids/idle_late-1")
        zk_root.zk.set("/consumers/idle/offsets/orders/0", b"6")  # an offset committed meanwhile
        with pytest.raises(FindingsError, match="offsets/orders/0 .*its data changed"):
            delete_tree(zk, nodes)
    after = _tree(zk_root.zk, "/consumers/idle")
    assert set(after) == set(before)  # every znode still there


def test_undo_keeps_an_offset_a_consumer_wrote_again_since(zk_root) -> None:
    _setup(zk_root)
    done = run_ktool("groups", "delete", "idle", "--zookeeper", zk_root.connect)
    assert done.exit_code == 0, done.output
    zk_root.write("/consumers/idle/offsets/orders/0", "77")  # the group came back and committed
    journal = _journal(done.stderr)
    undo = run_ktool("groups", "delete", "--undo", journal, "--json", "--zookeeper", zk_root.connect)
    assert undo.exit_code == 0, undo.output
    row = _json(undo.stdout)[0]
    assert (row["status"], row["kept"]) == ("restored", 4)  # /consumers/idle, offsets, offsets/orders, 0
    assert zk_root.zk.get("/consumers/idle/offsets/orders/0")[0] == b"77"
    assert zk_root.zk.get("/consumers/idle/offsets/orders/1")[0] == b"9"
    assert zk_root.zk.get("/consumers/idle/offsets/other/0")[0] == b"3"


def test_a_09_broker_is_refused_in_one_line_naming_it_and_its_version(kafka09_cluster) -> None:
    result = run_ktool(
        "groups", "delete", "any-group", "--store", "kafka", "--bootstrap-server", kafka09_cluster.bootstrap,
        "--zookeeper", kafka09_cluster.connect,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [
        f"ktool: group any-group: broker {kafka09_cluster.bootstrap} runs Kafka 0.9.0.1: it has no "
        "DeleteGroups request (Kafka 1.1+); a group's offsets there expire after offsets.retention.minutes"
    ]
    # Without ZooKeeper, the probe finds the version out just the same.
    alone = run_ktool("groups", "delete", "g", "--bootstrap-server", kafka09_cluster.bootstrap)
    assert alone.exit_code == 1 and "runs Kafka 0.9.0.1" in alone.stderr, alone.output


def test_a_znode_the_acl_keeps_is_one_line_exit_3_and_nothing_is_deleted(zk_root) -> None:
    from kazoo.security import ACL, Id, Permissions

    _setup(zk_root)
    no_delete = Permissions.ALL & ~Permissions.DELETE
    zk_root.zk.set_acls("/consumers/idle/offsets/orders", [ACL(no_delete, Id("world", "anyone"))])
    before = _tree(zk_root.zk, "/consumers/idle")
    result = run_ktool("groups", "delete", "idle", "--zookeeper", zk_root.connect)
    assert result.exit_code == 3, result.output
    line = result.stderr.splitlines()[-1]
    assert line.startswith("ktool: not allowed to delete /consumers/idle/offsets/orders/") and "(ACL)" in line
    assert _tree(zk_root.zk, "/consumers/idle") == before


def test_a_group_too_large_for_one_request_goes_in_several_children_first(zk_root, monkeypatch) -> None:
    from kafka_tools.zk import tree

    _setup(zk_root)
    monkeypatch.setattr(tree, "MAX_TRANSACTION_BYTES", 120)  # two or three paths a transaction
    sent: list[int] = []
    commit = type(zk_root.zk.transaction()).commit

    def counted(self):
        sent.append(len(self.operations))
        return commit(self)

    monkeypatch.setattr(type(zk_root.zk.transaction()), "commit", counted)
    result = run_ktool("groups", "delete", "idle", "--zookeeper", zk_root.connect)
    assert result.exit_code == 0, result.output
    assert len(sent) > 3 and sum(sent) == 10
    assert zk_root.zk.exists("/consumers/idle") is None


def test_a_real_09_consumer_is_refused_while_it_runs_and_its_group_deleted_once_it_stopped(
    kafka09_cluster, tmp_path
) -> None:
    """Kafka 0.9's own old consumer registers and owns its partitions: refused; after it stopped (its
    ephemeral znodes gone, its offsets left), the group goes and 0.9's kafka-consumer-groups.sh no longer
    lists it."""
    from tests.support.servers import OldConsumer, run_kafka_script

    topic, group = f"del-{uuid.uuid4().hex[:6]}", f"old-{uuid.uuid4().hex[:6]}"
    kafka09_cluster.broker.create_topic(topic, partitions=2)
    kafka09_cluster.broker.produce(topic, [f"m{i}" for i in range(10)])
    consumer = OldConsumer(
        kafka09_cluster.connect, group, "c1", topic=topic, from_beginning=True, workdir=tmp_path / "c1",
        home=kafka09_cluster.broker.home,
    ).start()  # fmt: skip
    zk = kafka09_cluster.zk
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            offsets = zk.get_children(f"/consumers/{group}/offsets/{topic}") if zk.exists(
                f"/consumers/{group}/offsets/{topic}") else []  # fmt: skip
            if len(offsets) == 2 and len(zk.get_children(f"/consumers/{group}/owners/{topic}")) == 2:
                break
            time.sleep(0.3)
        else:
            pytest.fail(f"the old consumer did not settle:\n{consumer.log_tail()}")
        refused = run_ktool("groups", "delete", group, "--zookeeper", kafka09_cluster.connect)
        assert refused.exit_code == 1, refused.output
        assert consumer.registered_id in refused.stderr
        assert zk.exists(f"/consumers/{group}/offsets/{topic}/0")
    finally:
        consumer.stop()
    deadline = time.monotonic() + 30
    while zk.get_children(f"/consumers/{group}/ids") and time.monotonic() < deadline:
        time.sleep(0.2)
    done = run_ktool("groups", "delete", group, "--zookeeper", kafka09_cluster.connect)
    assert done.exit_code == 0, done.output
    assert zk.exists(f"/consumers/{group}") is None
    listed = run_kafka_script(
        "kafka-consumer-groups.sh", "--zookeeper", kafka09_cluster.connect, "--list",
        home=kafka09_cluster.broker.home,
    ).stdout.split()  # fmt: skip
    assert group not in listed


@pytest.mark.parametrize(
    "text, why",
    [
        ('{"format": 1, "state": "applied", "groups": []}', "not a ktool groups delete journal"),
        ("not json", "not a ktool groups delete journal"),
        ('{"format": 1, "kind": "groups-delete", "groups": [{"group": "g", "store": "zookeeper", '
         '"znodes": [{"path": "relative"}]}]}', "a znode entry is malformed"),
    ],
)  # fmt: skip
def test_a_journal_that_is_not_one_of_groups_delete_is_one_line_exit_3(tmp_path, text, why) -> None:
    journal = tmp_path / "journal.json"
    journal.write_text(text)
    result = run_ktool("groups", "delete", "--undo", str(journal))
    assert result.exit_code == 3, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"ktool: {journal}: {why}"), line


def test_undo_and_groups_together_or_neither_is_a_usage_error(tmp_path) -> None:
    assert run_ktool("groups", "delete").exit_code == 2
    assert run_ktool("groups", "delete", "g", "--undo", str(tmp_path / "j.json")).exit_code == 2


def _journal_writes(points, journals) -> list:
    """The kill points of the journal's writes: from the first call naming the journal directory to the
    last and the directory's fsync after it, leaving out what is said on stdout and stderr."""
    named = [i for i, p in enumerate(points) if str(journals) in p.call]
    last = named[-1] + (named[-1] + 1 < len(points) and points[named[-1] + 1].syscall == "fsync")  # the dir's
    return [p for p in points[named[0] : last + 1] if not re.match(r"write\([12],", p.call)]


def test_a_run_killed_at_each_journal_write_leaves_no_empty_journal_and_undo_restores(
    zk_root, tmp_path
) -> None:
    """SIGKILLed at every write, fsync, link and rename of its journal (the `prepared` one before the
    delete, the `finished` one after it), `groups delete` leaves no empty journal and no temporary file
    under the journal's name: the group is whole, or it is gone and --undo of the one journal (whole)
    puts every znode back. A temporary file of the second write is removed by the next run, which says
    so."""
    import sys

    from tests.support.kill_points import run_killed, strace_or_unavailable, write_points

    strace_or_unavailable()
    _setup(zk_root)
    before = _tree(zk_root.zk, "/consumers/idle")
    journals = tmp_path / "journals"
    argv = [sys.executable, "-m", "kafka_tools", "groups", "delete", "idle", "--zookeeper", zk_root.connect,
            "--journal-dir", str(journals)]  # fmt: skip

    def undo_the_one_journal() -> None:
        (journal,) = journals.glob("*.json")
        undo = run_ktool("groups", "delete", "--undo", str(journal), "--zookeeper", zk_root.connect)
        assert undo.exit_code == 0 and _tree(zk_root.zk, "/consumers/idle") == before, undo.output
        shutil.rmtree(journals)

    assert run_ktool(*argv[3:]).exit_code == 0  # ktool's state directory made: every run makes the same calls
    undo_the_one_journal()
    points = _journal_writes(write_points(argv), journals)
    undo_the_one_journal()
    assert {"fsync", "rename"} <= {p.syscall for p in points}, points
    print(f"{len(points)} kill points:", *points, sep="\n  ")
    left_temp = []
    for point in points:
        shutil.rmtree(journals, ignore_errors=True)
        run_killed(argv, point)
        files = sorted(journals.iterdir()) if journals.exists() else []
        assert all(f.stat().st_size > 0 for f in files), (point, files)  # never an empty journal
        docs = [f for f in files if f.suffix == ".json"]
        states = [json.loads(f.read_text())["state"] for f in docs]  # each one whole
        temps = [f for f in files if f not in docs]
        if zk_root.zk.exists("/consumers/idle"):
            assert _tree(zk_root.zk, "/consumers/idle") == before and states in ([], ["prepared"]), point
        else:
            assert states in (["prepared"], ["finished"]), (point, files)
            undo = run_ktool("groups", "delete", "--undo", str(docs[0]), "--zookeeper", zk_root.connect)
            assert undo.exit_code == 0 and _tree(zk_root.zk, "/consumers/idle") == before, (
                point,
                undo.output,
            )
        if temps:  # killed between the second write's link and its rename: the next run removes it
            left_temp.append(point.syscall)
            assert [t.name.startswith(f".{docs[0].name}.") for t in temps] == [True], (point, temps)
            again = run_ktool("groups", "delete", "idle", "--zookeeper", zk_root.connect,
                              "--journal-dir", str(journals))  # fmt: skip
            assert again.exit_code == 0, again.output
            said = f"ktool: removed 1 temporary file a killed run had left: {temps[0]}"
            assert said in again.stderr.splitlines(), again.stderr
            assert [f for f in journals.iterdir() if f.suffix != ".json"] == []
            undo = run_ktool(
                "groups", "delete", "--undo", _journal(again.stderr), "--zookeeper", zk_root.connect
            )
            assert undo.exit_code == 0 and _tree(zk_root.zk, "/consumers/idle") == before, undo.output
    assert left_temp == ["rename"]
