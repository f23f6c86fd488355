"""The image of KRaft log dirs built in the tests (tests/metadata/kraft_log.py, encoded from the
schemas by tests/format/kraft_encoder.py): snapshot + log, --at-offset, transactions, corrupt inputs,
and the consistency checks of a log dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_tools.errors import InputError, UsageError
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.metadata.checks import check_log_dir, read_findings
from kafka_tools.metadata.load import load_image
from tests.metadata.kraft_log import (
    DIR1,
    DIR2,
    DOOMED,
    OLD,
    ORDERS,
    SNAPSHOT_AT,
    change,
    partition_dir,
    story,
    write_log_dir,
)


def test_the_story_replays_to_the_image_the_controller_would_hold(tmp_path: Path):
    load = load_image(write_log_dir(tmp_path))
    img = load.image
    assert read_findings(load) == []
    assert img.offset == len(story())
    assert img.metadata_version == 21
    assert [t.name for t in img.topics.values()] == ["orders"]  # doomed aborted, old removed
    p0 = img.topics[ORDERS].partitions[0]
    assert (p0.leader, p0.leader_epoch, p0.isr, p0.directories) == (2, 1, [2], [DIR1, DIR2])
    assert img.configs == {(2, "orders"): {"compression.type": "zstd"}}
    b1, b2 = img.brokers[1], img.brokers[2]
    assert (b1.fenced, b1.in_controlled_shutdown, b1.rack) == (False, True, "rack1")
    assert b2.fenced and b2.endpoints[0].host == "kafka2"
    assert list(img.controllers) == [3000]
    assert [v.voter_id for v in img.voters] == [3000] and img.kraft_version == 1
    assert img.scram_users == {("alice", 2): 8192}
    assert img.producer_ids.next_producer_id == 5000
    assert len(img.acls) == 1 and list(img.delegation_tokens) == ["token1"]
    assert img.client_quotas == {(("user", "alice"),): {"producer_byte_rate": 1024.0}}
    assert load.replayer.aborted == 2 and not load.replayer.unknown
    assert load.node.meta.node_id == 1 and load.node.quorum.data_version == 1


def test_snapshot_then_log_equals_the_whole_log(tmp_path: Path):
    whole = load_image(write_log_dir(tmp_path / "whole")).image
    # The log before the snapshot is gone, as after the broker deleted it: only the snapshot has it.
    load = load_image(write_log_dir(tmp_path / "snap", log_from=SNAPSHOT_AT, snapshot_at=SNAPSHOT_AT))
    assert load.snapshot is not None and load.snapshot.end_offset == SNAPSHOT_AT
    assert load.log_start == SNAPSHOT_AT
    assert read_findings(load) == []
    # The LeaderChangeMessage at 0 is in no snapshot (a control record): the rest is equal.
    whole.raft_leader = load.image.raft_leader
    assert load.image == whole


def test_at_offset_uses_the_newest_snapshot_at_or_before_it(tmp_path: Path):
    d = write_log_dir(tmp_path, snapshot_at=SNAPSHOT_AT)
    before = load_image(d, at_offset=SNAPSHOT_AT - 1)
    assert before.snapshot is None  # the snapshot holds more than asked
    assert before.image.offset == SNAPSHOT_AT - 1
    assert sorted(t.name for t in before.image.topics.values()) == ["old", "orders"]
    at = load_image(d, at_offset=20)
    assert at.snapshot is not None and at.image.offset == 20
    p0 = at.image.topics[ORDERS].partitions[0]
    assert (p0.leader, p0.isr) == (2, [2])
    assert OLD in at.image.topics  # removed at offset 20: not applied yet
    assert DOOMED not in at.image.topics
    with pytest.raises(UsageError, match="past the end"):
        load_image(d, at_offset=1000)


def test_diff_events_between_two_offsets(tmp_path: Path):
    load = load_image(write_log_dir(tmp_path), at_offset=23, events_from=9)
    got = [(e.offset, e.kind, e.subject) for e in load.replayer.events]
    assert got == [
        (9, "config-set", "topic orders"),
        (13, "transaction-aborted", "transaction"),
        (14, "topic-created", "old"),
        (15, "partition-created", "old-0"),
        (16, "scram-credential-set", "alice"),
        (18, "isr-shrunk", "orders-0"),
        (19, "leader-changed", "orders-0"),
        (19, "isr-changed", "orders-0"),
        (20, "topic-deleted", "old"),
        (21, "config-deleted", "topic orders"),
        (22, "config-set", "topic orders"),
    ]


def test_open_transaction_at_the_log_end_is_not_applied(tmp_path: Path):
    entries = story()[:12]  # ends inside the transaction that creates `doomed`
    load = load_image(write_log_dir(tmp_path, entries))
    assert DOOMED not in load.image.topics
    assert load.replayer.transaction_start == 10 and len(load.replayer.pending) == 1


def test_unknown_quorum_state_version_is_a_finding_and_the_image_still_built(tmp_path: Path):
    load = load_image(write_log_dir(tmp_path, quorum_version=7))
    kinds = [f.kind for f in read_findings(load)]
    assert kinds == ["unknown-version"]
    assert "orders" in [t.name for t in load.image.topics.values()]


def test_snapshot_without_footer_is_a_finding(tmp_path: Path):
    d = write_log_dir(tmp_path, log_from=SNAPSHOT_AT, snapshot_at=SNAPSHOT_AT, snapshot_footer=False)
    load = load_image(d)
    (f,) = read_findings(load)
    assert f.kind == "snapshot-missing-footer" and f.file.endswith(".checkpoint") and f.position > 0
    assert "orders" in [t.name for t in load.image.topics.values()]


def test_truncated_record_inside_a_valid_batch_is_a_finding_with_its_position(tmp_path: Path):
    from tests.metadata.kraft_log import encode

    good = encode(story()[7])[1]
    load = load_image(write_log_dir(tmp_path, values={7: good[:-9]}))  # orders-0's PartitionRecord cut
    findings = read_findings(load)
    cut = [f for f in findings if f.kind == "record-undecodable"]
    assert len(cut) == 1 and cut[0].offset == 7 and cut[0].position is not None
    # Everything else was replayed: orders-1 is there; changes to orders-0 are inconsistencies.
    assert 1 in load.image.topics[ORDERS].partitions
    assert {f.kind for f in findings} == {"record-undecodable", "replay-inconsistency"}


def test_not_a_kraft_log_dir(tmp_path: Path):
    with pytest.raises(InputError, match="__cluster_metadata-0"):
        load_image(tmp_path)


def test_checks_find_missing_unknown_and_mismatched_partition_dirs(tmp_path: Path):
    d = write_log_dir(tmp_path)  # node 1, directory DIR1
    partition_dir(d, "orders-0", ORDERS)
    partition_dir(d, "old-0", OLD)  # deleted topic left behind
    partition_dir(d, "orders-7", ORDERS)  # no such partition
    partition_dir(d, "gone-0.0123456789abcdef0123456789abcdef-delete", None)  # pending deletion: fine
    findings = check_log_dir(load_image(d))
    got = sorted((f.kind, Path(f.file).name) for f in findings)
    assert got == [
        ("partition-dir-missing", d.name),  # orders-1 has replica 1 in DIR1
        ("unknown-partition-dir", "orders-7"),
        ("unknown-topic-dir", "old-0"),
    ]


def test_checks_compare_topic_ids_and_the_node(tmp_path: Path):
    d = write_log_dir(tmp_path, node_id=9, directory_id=DIR2)
    partition_dir(d, "orders-0", OLD)  # an earlier topic of the same name
    got = sorted(f.kind for f in check_log_dir(load_image(d)))
    assert got == ["node-not-registered", "topic-id-mismatch"]
    d2 = write_log_dir(tmp_path / "other", node_id=2, directory_id=DIR2)
    partition_dir(d2, "orders-0", ORDERS)
    partition_dir(d2, "orders-1", ORDERS)
    assert check_log_dir(load_image(d2)) == []


def test_a_partition_moved_off_the_node_is_flagged_and_dirs_set_aside_as_stray_are_not(tmp_path: Path):
    """As Kafka's isStrayReplica: a partition whose replicas no longer hold the node is stray; what the
    broker already renamed `-stray` is not flagged again."""
    entries = [*story(), change(ORDERS, 1, replicas=[1], isr=[1], leader=1)]
    d = write_log_dir(tmp_path, entries, node_id=2, directory_id=DIR2)
    partition_dir(d, "orders-0", ORDERS)
    partition_dir(d, "orders-1", ORDERS)
    partition_dir(d, "old-0.3e5c1d2f0a9b4c7d8e6f5a4b3c2d1e0f-stray", OLD)
    assert [(f.kind, Path(f.file).name) for f in check_log_dir(load_image(d))] == [
        ("not-a-replica", "orders-1")
    ]


def test_check_against_another_nodes_image_flags_what_the_stale_one_does_not(tmp_path: Path):
    """A broker that was down holds the image of before: the controller's says its `old` is deleted."""
    from tests.support.cli import run_ktool

    broker = write_log_dir(tmp_path / "broker", story()[:18], node_id=1, directory_id=DIR1)
    for name, topic_id in (("orders-0", ORDERS), ("orders-1", ORDERS), ("old-0", OLD)):
        partition_dir(broker, name, topic_id)
    controller = write_log_dir(tmp_path / "controller", node_id=3000)
    assert run_ktool("metadata", "check", str(broker)).exit_code == 0
    result = run_ktool("metadata", "check", "--json", "--image-from", str(controller), str(broker))
    assert result.exit_code == 1, result.output
    findings = [line for line in result.stdout.splitlines() if '"finding"' in line]
    assert len(findings) == 1 and '"unknown-topic-dir"' in findings[0] and "old-0" in findings[0]
    missing = run_ktool("metadata", "check", "--image-from", str(controller), str(tmp_path / "nope"))
    assert missing.exit_code == 3 and "nope: no such directory" in missing.stderr


def test_diff_from_a_snapshot_point_starts_from_the_snapshot(tmp_path: Path):
    d = write_log_dir(tmp_path, log_from=SNAPSHOT_AT, snapshot_at=SNAPSHOT_AT)
    load = load_image(d, at_offset=21, events_from=SNAPSHOT_AT)
    assert load.snapshot is not None
    assert [(e.offset, e.kind) for e in load.replayer.events] == [
        (18, "isr-shrunk"),
        (19, "leader-changed"),
        (19, "isr-changed"),
        (20, "topic-deleted"),
    ]


def _flip_batch(segment: Path, base_offset: int, at: int | None = None):
    """Flip a bit of the batch at `base_offset` (`at` from its start; None: its last byte, inside its
    records, which its CRC covers); the batch as it was."""
    (batch,) = [e for e in iter_log_entries(segment) if e.base_offset == base_offset]
    data = bytearray(segment.read_bytes())
    data[batch.position + (batch.size - 1 if at is None else at)] ^= 0x01
    segment.write_bytes(bytes(data))
    return batch


def test_a_batch_with_a_bad_crc_is_a_finding_and_the_image_stops_before_it(tmp_path: Path):
    d = write_log_dir(tmp_path)
    segment = d / "__cluster_metadata-0" / "00000000000000000000.log"
    batch = _flip_batch(segment, 19)  # offsets 19-21
    load = load_image(d)
    (bad,) = [f for f in read_findings(load) if f.kind == "crc-mismatch"]
    assert (bad.file, bad.position, bad.offset) == (str(segment), batch.position, 19)
    assert "the image stops before it" in bad.message
    assert load.image.offset == load.log_end == 19  # where the broker's recovery cuts the log
    names = sorted(t.name for t in load.image.topics.values())
    assert names == ["old", "orders"]  # the RemoveTopicRecord at 20 was in the damaged batch
    p0 = load.image.topics[ORDERS].partitions[0]
    assert (p0.leader, p0.isr) == (1, [1])  # the ISR change at 18 applied, the leader's at 19 not
    assert not load.image.brokers[2].fenced  # offset 29, after the damage: not replayed either


def test_segments_after_a_damaged_one_are_not_replayed(tmp_path: Path):
    from tests.metadata.kraft_log import log_bytes

    d = write_log_dir(tmp_path)
    part = d / "__cluster_metadata-0"
    entries = story()
    (part / "00000000000000000000.log").write_bytes(log_bytes(entries[:20]))
    (part / "00000000000000000020.log").write_bytes(log_bytes(entries[20:], 20))
    _flip_batch(part / "00000000000000000000.log", 19, 35)  # a header byte: maxTimestamp
    load = load_image(d)
    kinds = [(f.kind, f.file) for f in read_findings(load)]
    assert kinds == [
        ("crc-mismatch", str(part / "00000000000000000000.log")),
        ("after-damage", str(part / "00000000000000000020.log")),
    ]
    assert load.image.offset == 19 and not load.image.brokers[2].fenced


@pytest.mark.parametrize("command", ["check", "show"])
def test_metadata_commands_exit_1_and_say_where_the_image_stops(tmp_path: Path, command: str):
    import json

    from tests.support.cli import run_ktool

    d = write_log_dir(tmp_path)
    segment = d / "__cluster_metadata-0" / "00000000000000000000.log"
    batch = _flip_batch(segment, 19, 35)  # a header byte its checksum covers
    result = run_ktool("metadata", command, "--json", str(d))
    assert result.exit_code == 1, result.output
    assert f"{segment}: position {batch.position} (offset 19): crc-mismatch" in result.stderr
    assert "the image stops before it" in result.stderr
    objs = [json.loads(x) for x in result.stdout.splitlines()]
    (crc,) = [o for o in objs if o["type"] == "finding" and o["kind"] == "crc-mismatch"]
    assert (crc["file"], crc["position"], crc["offset"]) == (str(segment), batch.position, 19)
    assert objs[-1]["type"] == "summary" and objs[-1]["errors"] >= 1
    validated = run_ktool("validate", "--json", str(d / "__cluster_metadata-0"))
    (valid,) = [o for o in map(json.loads, validated.stdout.splitlines()) if o["type"] == "partition"]
    assert objs[-1]["offset"] == valid["logEndOffset"] == 19  # the image at validate's log end


def test_a_log_that_starts_after_the_image_needs_it_is_a_gap(tmp_path: Path):
    load = load_image(write_log_dir(tmp_path, log_from=SNAPSHOT_AT))  # no snapshot below 18
    assert [f.kind for f in read_findings(load) if f.kind == "log-gap"] == ["log-gap"]


def test_a_log_of_several_segments_replays_as_one(tmp_path: Path):
    from tests.metadata.kraft_log import log_bytes

    whole = load_image(write_log_dir(tmp_path / "one")).image
    d = write_log_dir(tmp_path / "two")
    part = d / "__cluster_metadata-0"
    entries = story()
    (part / "00000000000000000000.log").write_bytes(log_bytes(entries[:20]))
    (part / "00000000000000000020.log").write_bytes(log_bytes(entries[20:], 20))
    load = load_image(d)
    assert read_findings(load) == [] and load.image == whole
    assert load_image(d, at_offset=25).image.offset == 25


def test_a_pre_release_partition_record_is_applied_with_its_elr(tmp_path: Path):
    """A PartitionRecord v1 as late-2023 Kafka trunk wrote it (ELR as tags 1-2, no Directories),
    encoded by the tests' encoder, replaces offset 8 (orders-1): the image takes its ELR."""
    from kafka_tools.metadata.image import MIGRATING_DIRECTORY
    from tests.format.kraft_encoder import pre_release_partition_record_v1

    value = pre_release_partition_record_v1(
        {
            "partitionId": 1,
            "topicId": ORDERS,
            "replicas": [2, 1],
            "isr": [2],
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": 2,
            "leaderEpoch": 3,
            "partitionEpoch": 4,
            "eligibleLeaderReplicas": [1],
            "lastKnownElr": [2],
        }
    )
    load = load_image(write_log_dir(tmp_path, values={8: value}))
    assert [f for f in read_findings(load) if f.kind in ("record-undecodable", "replay-inconsistency")] == []
    p1 = load.image.topics[ORDERS].partitions[1]
    assert (p1.replicas, p1.isr, p1.leader, p1.leader_epoch) == ([2, 1], [2], 2, 3)
    assert (p1.elr, p1.last_known_elr) == ([1], [2])
    assert p1.directories == [MIGRATING_DIRECTORY] * 2  # no Directories in that layout: defaultToMigrating


@pytest.mark.parametrize("which", ["segment", "snapshot"])
def test_a_fifo_named_as_a_segment_or_snapshot_is_one_line_not_a_hang(tmp_path: Path, which: str):
    import os

    from tests.support.script import run_script

    d = write_log_dir(tmp_path, log_from=SNAPSHOT_AT, snapshot_at=SNAPSHOT_AT)
    part = d / "__cluster_metadata-0"
    name = f"{99:020d}.log" if which == "segment" else f"{99:020d}-{9:010d}.checkpoint"
    os.mkfifo(part / name)
    said = f"{name}: cannot be read: named as a {which} but not a regular file"
    with pytest.raises(InputError, match=said):
        load_image(d)
    result = run_script("metadata", "show", str(d), timeout=60)
    assert result.returncode == 3 and result.stderr.count("\n") == 1 and name in result.stderr


def test_a_partition_without_partition_metadata_is_stray_as_kafka_sees_it(tmp_path: Path):
    """LogManager.isStrayKraftReplica (3.7+): a log with no topic id is stray; a dir pending deletion
    without one is not flagged."""
    d = write_log_dir(tmp_path)
    partition_dir(d, "orders-0", ORDERS)
    partition_dir(d, "orders-1", None)
    partition_dir(d, "gone-0.0123456789abcdef0123456789abcdef-delete", None)
    assert [(f.kind, Path(f.file).name) for f in check_log_dir(load_image(d))] == [
        ("no-topic-id", "orders-1")
    ]
