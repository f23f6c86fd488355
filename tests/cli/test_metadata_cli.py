"""`ktool metadata …` through the CLI: what an operator reads, the JSON scripts parse, exit codes, and
one line per problem on stderr, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kafka_tools.cli.main import cli
from tests.metadata.kraft_log import ORDERS, SNAPSHOT_AT, partition_dir, story, write_log_dir


def run(*args: str):
    return CliRunner().invoke(cli, ["metadata", *args], catch_exceptions=False)


def objects(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_show_prints_every_part_of_the_image(tmp_path: Path):
    d = write_log_dir(tmp_path, snapshot_at=SNAPSHOT_AT)
    partition_dir(d, "orders-0", ORDERS)
    partition_dir(d, "orders-1", ORDERS)
    result = run("show", str(d))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "cluster id: Y2x1c3Rlci1pZC1jbHVzdA (node 1" in out
    assert (
        f"image at offset {len(story())} (snapshot 00000000000000000018-0000000001.checkpoint + log 18..31)"
        in out
    )
    for text in (
        "metadata.version=21",
        "PLAINTEXT://kafka1:9092",
        "controlled-shutdown",
        "fenced",
        "orders",
        "compression.type",
        "User:alice",
        "producer_byte_rate",
        "next block from 5000",
        "token1",
        "SCRAM-SHA-512",
        "8192",
        "CONTROLLER://c:9093",
    ):
        assert text in out, text
    assert "SALT" not in out and "STORED" not in out
    assert result.stderr == ""


def test_show_json_has_stable_objects(tmp_path: Path):
    d = write_log_dir(tmp_path)
    result = run("show", "--json", "--at-offset", "20", str(d))
    objs = objects(result)
    head = objs[0]
    assert head["type"] == "image" and head["offset"] == 20 and head["metadataVersion"] == 21
    assert head["recordsAborted"] == 2
    parts = {(o["topic"], o["partition"]): o for o in objs if o["type"] == "partition"}
    assert parts[("orders", 0)]["leader"] == 2 and parts[("orders", 0)]["isr"] == [2]
    assert ("old", 0) in parts
    scram = [o for o in objs if o["type"] == "scramUser"]
    assert scram == [{"type": "scramUser", "name": "alice", "mechanism": "SCRAM-SHA-512", "iterations": 8192}]
    assert result.exit_code == 0 and result.stderr == ""  # no checks against a past image
    # Checks: node 1 hosts orders-0 and orders-1 in DIR1 but the log dir holds neither: exit 1.
    now = run("show", "--json", str(d))
    assert now.exit_code == 1
    missing = [o for o in objects(now) if o["type"] == "finding"]
    assert sorted(o["message"].split()[0] for o in missing) == ["orders-0", "orders-1"]
    assert {o["kind"] for o in missing} == {"partition-dir-missing"}
    assert [line.startswith("ktool: ") for line in now.stderr.splitlines()] == [True, True]


def test_topics_and_brokers_views(tmp_path: Path):
    d = write_log_dir(tmp_path)
    topics = run("topics", str(d))
    assert topics.exit_code == 0 and "orders" in topics.stdout and "old" not in topics.stdout
    brokers = [o for o in objects(run("brokers", "--json", str(d))) if o["type"] != "summary"]
    assert [(o["type"], o["id"]) for o in brokers] == [
        ("broker", 1),
        ("broker", 2),
        ("controller", 3000),
        ("voter", 3000),
    ]
    assert brokers[1]["fenced"] is True and brokers[0]["inControlledShutdown"] is True


def test_diff_lists_events_in_text_and_json(tmp_path: Path):
    d = write_log_dir(tmp_path)
    text = run("diff", str(d), "--from", "18", "--to", "22")
    assert text.exit_code == 0
    assert "offsets 18..22: 5 changes" in text.stdout
    assert "leader 1 -> 2 (epoch 1)" in text.stdout
    lines = objects(run("diff", "--json", str(d), "--from-offset", "18", "--to-offset", "22"))
    events = [o for o in lines if o["type"] == "event"]
    assert lines[-1] == {
        "type": "summary",
        "offset": 22,
        "topics": lines[-1]["topics"],
        "brokers": lines[-1]["brokers"],
        "events": 5,
        "findings": 0,
        "errors": 0,
    }
    assert [e["kind"] for e in events] == [
        "isr-shrunk",
        "leader-changed",
        "isr-changed",
        "topic-deleted",
        "config-deleted",
    ]
    assert events[1] | {} == events[1] and events[1]["oldLeader"] == 1 and events[1]["leader"] == 2
    assert run("diff", str(d), "--from", "5", "--to", "2").exit_code == 2


def test_diff_offsets_are_the_shared_range_options_and_out_of_range_is_said(tmp_path: Path):
    d = write_log_dir(tmp_path)
    old = run("diff", str(d), "--from", "18", "--to", "22")
    new = run("diff", str(d), "--from-offset", "18", "--to-offset", "22")
    assert old.stdout == new.stdout and new.stderr == ""
    assert "--from is now --from-offset" in old.stderr
    end = len(story())
    past_to = run("diff", str(d), "--from-offset", "0", "--to-offset", "99999")
    assert past_to.exit_code == 1 and "--to-offset 99999 is past the end" in past_to.stderr
    assert "--at-offset" not in past_to.stderr
    past_from = run("diff", str(d), "--from-offset", "5000")
    assert past_from.exit_code == 1
    assert f"--from-offset 5000 is past the log end offset {end}" in past_from.stderr
    reversed_range = run("diff", str(d), "--from-offset", "5", "--to-offset", "2")
    assert reversed_range.exit_code == 2 and "--from-offset 5 is past --to-offset 2" in reversed_range.stderr
    assert run("diff", str(d)).exit_code == 2  # --from-offset is required


def test_metadata_json_is_compact_and_ends_with_a_summary(tmp_path: Path):
    d = write_log_dir(tmp_path / "a", node_id=2)
    partition_dir(d, "orders-0", ORDERS)
    partition_dir(d, "orders-1", ORDERS)
    for command in ("show", "topics", "brokers", "check"):
        result = run(command, "--json", str(d))
        assert result.exit_code == 0, (command, result.stderr)
        assert ", " not in result.stdout.replace('", "', "") and '": ' not in result.stdout, command
        last = objects(result)[-1]
        assert last["type"] == "summary" and last["errors"] == 0 and last["topics"] >= 1, command


def test_diff_needs_the_log_from_the_first_offset(tmp_path: Path):
    d = write_log_dir(tmp_path, log_from=SNAPSHOT_AT, snapshot_at=SNAPSHOT_AT)
    result = run("diff", str(d), "--from", "5")
    assert result.exit_code == 1 and "log-starts-later" in result.stderr


def test_corrupt_inputs_exit_1_with_one_line_each_and_the_rest_shown(tmp_path: Path):
    d = write_log_dir(
        tmp_path, log_from=SNAPSHOT_AT, snapshot_at=SNAPSHOT_AT, snapshot_footer=False, quorum_version=9
    )
    result = run("show", str(d))
    assert result.exit_code == 1
    assert "orders" in result.stdout
    assert "quorum-state: unknown-version: quorum-state data_version 9" in result.stderr
    assert ".checkpoint: position " in result.stderr and ": snapshot-missing-footer: " in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_check_exit_codes(tmp_path: Path):
    d = write_log_dir(tmp_path / "a", node_id=2)
    partition_dir(d, "orders-0", ORDERS)
    partition_dir(d, "orders-1", ORDERS)
    ok = run("check", str(d))
    assert ok.exit_code == 0 and "consistent" in ok.stdout
    assert " 1 topics" not in ok.stdout and " 1 brokers" not in ok.stdout
    partition_dir(d, "stale-0", "c3RhbGVzdGFsZXN0YWxlcw")
    bad = run("check", str(d))
    assert bad.exit_code == 1 and "unknown-topic-dir" in bad.stderr
    assert run("check", str(tmp_path)).exit_code == 3  # no __cluster_metadata-0
    missing = run("check", str(tmp_path / "nope"))
    assert (
        missing.exit_code == 3
        and missing.stderr.startswith("ktool: ")
        and len(missing.stderr.splitlines()) == 1
    )


def test_scan_cluster_metadata_needs_out(tmp_path: Path):
    d = write_log_dir(tmp_path)
    result = CliRunner().invoke(cli, ["scan", "--cluster-metadata", str(d)])
    assert result.exit_code == 2 and "--cluster-metadata writes a table: give --out DIR" in result.stderr


def test_a_truncated_record_is_one_line_and_the_rest_is_shown(tmp_path: Path):
    from tests.metadata.kraft_log import encode

    cut = encode(story()[14])[1][:-5]  # TopicRecord `old`, its body cut inside a valid batch
    d = write_log_dir(tmp_path, values={14: cut})
    result = run("topics", str(d))
    assert result.exit_code == 1
    assert "orders" in result.stdout and "Traceback" not in result.stderr
    first = result.stderr.splitlines()[0]
    assert (
        first.startswith("ktool: ")
        and ": position " in first
        and "(offset 14): record-undecodable: " in first
    )
