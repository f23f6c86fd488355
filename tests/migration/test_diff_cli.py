"""`ktool kraft-migration diff`: exit 0 in step, 1 on drift (each difference once), 3 unreadable."""

from __future__ import annotations

import json

from tests.migration.cluster_states import write_kraft, write_znodes
from tests.support.cli import run_ktool


def test_in_step_exits_0_and_says_so(zk_root, tmp_path):
    write_znodes(zk_root)
    log_dir = write_kraft(tmp_path)
    result = run_ktool("kraft-migration", "diff", "--zookeeper", zk_root.connect, str(log_dir))
    assert result.exit_code == 0, result.stderr
    assert "in step: ZooKeeper and KRaft hold the same metadata" in result.stdout
    assert "migration state MIGRATION" in result.stdout


def test_drift_exits_1_with_each_difference_and_its_side(zk_root, tmp_path):
    write_znodes(zk_root)
    zk_root.zk.set("/config/topics/orders", b'{"version":1,"config":{"retention.ms":"60000"}}')
    zk_root.zk.set(
        "/brokers/topics/orders/partitions/1/state",
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2]}',
    )
    log_dir = write_kraft(tmp_path)
    result = run_ktool("kraft-migration", "diff", "--json", "--zookeeper", zk_root.connect, str(log_dir))
    assert result.exit_code == 1, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [
        (o["kind"], o["subject"], o["field"], o["side"], o["zookeeper"], o["kraft"]) for o in lines[:-1]
    ] == [
        ("partition", "orders-1", "isr", "both", [2], [2, 1]),
        ("config", "topic orders", "retention.ms", "both", "60000", "3600000"),
    ]
    assert lines[-1]["differences"] == 2 and lines[-1]["inStep"] is False
    text = run_ktool("kraft-migration", "diff", "--zookeeper", zk_root.connect, str(log_dir))
    assert text.exit_code == 1
    assert "2 differences:" in text.stdout and "orders-1" in text.stdout


def test_the_log_dir_furthest_ahead_is_compared(zk_root, tmp_path):
    from tests.migration.cluster_states import records

    write_znodes(zk_root)
    behind = write_kraft(tmp_path / "behind", records()[:-3])
    ahead = write_kraft(tmp_path)
    result = run_ktool(
        "kraft-migration", "diff", "--json", "--zookeeper", zk_root.connect, str(behind), str(ahead)
    )
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout.splitlines()[-1])["logDir"] == str(ahead)


def test_a_log_dir_that_is_not_kraft_is_one_line_and_exit_3(zk_root, tmp_path):
    write_znodes(zk_root)
    (tmp_path / "empty").mkdir()
    result = run_ktool("kraft-migration", "diff", "--zookeeper", zk_root.connect, str(tmp_path / "empty"))
    assert result.exit_code == 3
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "not a KRaft log dir" in result.stderr


def test_a_malformed_znode_is_one_line_naming_it_and_exit_3(zk_root, tmp_path):
    write_znodes(zk_root)
    zk_root.zk.set("/latest_producer_id_block", b'{"version":1,"block_start":"x"}')
    result = run_ktool("kraft-migration", "diff", "--zookeeper", zk_root.connect, str(write_kraft(tmp_path)))
    assert result.exit_code == 3
    assert result.stderr.count("\n") == 1 and "/latest_producer_id_block" in result.stderr


def test_a_record_committed_while_diff_reads_is_not_taken_for_one_lost(zk_root, tmp_path, monkeypatch):
    """The controller commits a record and writes /migration between diff's two reads: ZooKeeper is
    read first, so the log read after holds that record (log first: /migration past the log's end)."""
    from kafka_tools.migration import zk_state
    from tests.migration.cluster_states import records

    write_znodes(zk_root)
    log_dir = write_kraft(tmp_path)
    real = zk_state.read_zk_state

    def controller_moves_on(zk):
        write_kraft(tmp_path, [*records(), ("meta", "NoOpRecord", 0, {})])  # offset 15 committed
        doc = json.loads(zk_root.zk.get("/migration")[0])
        zk_root.zk.set("/migration", json.dumps({**doc, "kraft_metadata_offset": 15}).encode())
        return real(zk)

    monkeypatch.setattr(zk_state, "read_zk_state", controller_moves_on)
    result = run_ktool("kraft-migration", "diff", "--zookeeper", zk_root.connect, str(log_dir))
    assert result.exit_code == 0, result.stdout + result.stderr


def _finalized_log(tmp_path):
    """The same cluster, its migration finalized (POST_MIGRATION), then a topic config changed in KRaft
    alone: ZooKeeper is no longer written."""
    from tests.migration.cluster_states import records

    moved_on = ("meta", "ConfigRecord", 0, {"resourceType": 2, "resourceName": "orders",
                                            "name": "retention.ms", "value": "7200000"})  # fmt: skip
    return write_kraft(tmp_path, [*records(), ("meta", "ZkMigrationStateRecord", 0, {"zkMigrationState": 3}),
                                  moved_on])  # fmt: skip


def test_after_finalizing_what_kraft_moved_on_passes_and_what_only_zookeeper_holds_does_not(
    zk_root, tmp_path
):
    write_znodes(zk_root)
    log_dir = _finalized_log(tmp_path)
    result = run_ktool("kraft-migration", "diff", "--json", "--zookeeper", zk_root.connect, str(log_dir))
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["kind"], o["field"], o["side"]) for o in lines[:-1]] == [("config", "retention.ms", "both")]
    assert lines[-1]["migrationState"] == "POST_MIGRATION"
    assert (lines[-1]["inStep"], lines[-1]["onlyInZooKeeper"], lines[-1]["passes"]) == (False, 0, True)

    zk_root.write("/config/topics/gone", '{"version":1,"config":{"cleanup.policy":"compact"}}')
    text = run_ktool("kraft-migration", "diff", "--zookeeper", zk_root.connect, str(log_dir))
    assert text.exit_code == 1, text.stdout + text.stderr
    assert text.stdout.splitlines()[-1] == (
        "migration finalized (ZooKeeper no longer written): 1 only in ZooKeeper, lost when it is deleted"
    )
