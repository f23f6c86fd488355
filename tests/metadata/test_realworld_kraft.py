"""The real KRaft log dirs of ../shared/realworld/kraft (skipped when absent): every record replayed,
none unknown; the image's topics include every topic directory of the same log dir; the brokers and
voters agree with quorum-state and meta.properties."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_tools.format.kinds import partition_of
from kafka_tools.metadata.checks import read_findings
from kafka_tools.metadata.load import iter_file_records, load_image
from tests.independent import REALWORLD, needs_realworld

KRAFT = REALWORLD / "kraft"
LOG_DIRS = (
    sorted(p for p in KRAFT.glob("*") if (p / "__cluster_metadata-0").is_dir()) if KRAFT.is_dir() else []
)
# Written by a Kafka trunk build of November 2023, whose PartitionRecord v1 carried the ELR fields as
# tagged fields and no Directories (Kafka 3.7 released v1 with Directories and moved ELR to v2): these
# six records decode with the known pre-release layout (kafka_tools/format/kraft/pre_release.py).
PRE_RELEASE = "apache-kafka-test-kafka-1168504093769635972"
PRE_RELEASE_OFFSETS = {24, 25, 26, 27, 28, 42}

if not LOG_DIRS:
    needs_realworld(module=True)


def _ids(paths):
    return [p.name for p in paths]


@pytest.mark.parametrize("log_dir", LOG_DIRS, ids=_ids(LOG_DIRS))
def test_every_record_is_replayed_and_none_is_unknown(log_dir: Path):
    load = load_image(log_dir)
    assert not load.replayer.unknown
    assert load.records_read > 0 and load.image.offset == load.log_end
    assert read_findings(load) == []


@pytest.mark.parametrize("log_dir", LOG_DIRS, ids=_ids(LOG_DIRS))
def test_every_record_decodes_and_only_the_known_pre_release_ones_need_their_layout(log_dir: Path):
    findings: list = []
    layouts, read = {}, 0
    files = sorted((log_dir / "__cluster_metadata-0").glob("*.log"))
    files += sorted((log_dir / "__cluster_metadata-0").glob("*.checkpoint"))
    for path in files:
        for offset, _control, record in iter_file_records(path, findings):
            read += 1
            assert record.known, (path.name, offset)
            if record.layout is not None:
                layouts[offset] = (record.type_name, record.version, record.layout)
    assert findings == [] and read > 0
    expected = PRE_RELEASE_OFFSETS if log_dir.name == PRE_RELEASE else set()
    assert set(layouts) == expected
    assert set(layouts.values()) <= {
        ("PartitionRecord", 1, "pre-3.7 trunk: PartitionRecord v1 with KIP-966 ELR as tags 1-2")
    }


def test_the_pre_release_partitions_are_in_the_image_with_their_elr():
    log_dir = KRAFT / PRE_RELEASE
    if not log_dir.is_dir():
        pytest.skip("the pre-release log dir is absent")
    image = load_image(log_dir).image
    topics = {t.name: t for t in image.topics.values()}
    assert sorted(topics["__consumer_offsets"].partitions) == [0, 1, 2, 3, 4]
    assert sorted(topics["topic"].partitions) == [0]
    for t in topics.values():
        for p in t.partitions.values():
            assert p.elr == [] and p.last_known_elr == []  # written as empty arrays, not null


@pytest.mark.parametrize("log_dir", LOG_DIRS, ids=_ids(LOG_DIRS))
def test_the_image_knows_every_topic_directory_of_the_log_dir(log_dir: Path):
    image = load_image(log_dir).image
    names = {t.name for t in image.topics.values()}
    dirs = [p for p in log_dir.iterdir() if p.is_dir() and not p.name.startswith("__cluster_metadata")]
    topics = {partition_of(p / "x")[0] for p in dirs if partition_of(p / "x")}
    assert topics <= names


@pytest.mark.parametrize("log_dir", LOG_DIRS, ids=_ids(LOG_DIRS))
def test_brokers_and_voters_agree_with_quorum_state_and_meta_properties(log_dir: Path):
    load = load_image(log_dir)
    image, quorum, meta = load.image, load.node.quorum, load.node.meta
    members = set(image.brokers) | set(image.controllers) | {v.voter_id for v in image.voters or ()}
    assert quorum is not None
    assert quorum.leader_id in members
    if quorum.current_voters is not None:
        assert set(quorum.current_voters) <= members
    if meta is not None:
        assert meta.node_id in members
        if meta.directory_id and meta.node_id in image.brokers:
            assert meta.directory_id in image.brokers[meta.node_id].log_dirs


def test_bootstrap_checkpoint_names_the_metadata_version_the_log_starts_with():
    combined = KRAFT / "kafka-3.x-combined"
    if not (combined / "bootstrap.checkpoint").is_file():
        pytest.skip("no bootstrap.checkpoint in ../shared/realworld/kraft")
    load = load_image(combined)
    assert load.bootstrap is not None and load.bootstrap.records >= 1
    assert load.bootstrap.metadata_version == load.image.metadata_version == 14


@pytest.mark.parametrize("log_dir", LOG_DIRS, ids=_ids(LOG_DIRS))
def test_a_flipped_bit_in_a_real_metadata_log_stops_the_image_where_truncate_would_cut(log_dir, tmp_path):
    """A bit of the newest segment's middle batch flipped (inside its records): `metadata show` exits 1
    naming the file and position, and its image ends where the broker's recovery cuts the log."""
    import json
    import shutil

    from kafka_tools.format.segment import iter_log_entries
    from tests.support.cli import run_ktool

    copy = tmp_path / log_dir.name
    shutil.copytree(log_dir, copy, ignore=shutil.ignore_patterns(".lock"))
    part = copy / "__cluster_metadata-0"
    segment = sorted(part.glob("*.log"))[-1]
    batches = [e for e in iter_log_entries(segment) if e.is_valid]
    load = load_image(copy)
    after = [b for b in batches if b.base_offset >= (load.snapshot.end_offset if load.snapshot else 0)]
    batch = after[len(after) // 2]
    data = bytearray(segment.read_bytes())
    data[batch.position + batch.size - 1] ^= 0x01
    segment.write_bytes(bytes(data))
    result = run_ktool("metadata", "show", "--json", str(copy))
    assert result.exit_code == 1, result.output
    assert f"{segment}: position {batch.position} (offset {batch.base_offset}): crc-mismatch" in result.stderr
    (image,) = [o for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "image"]
    planned = run_ktool("truncate", "--dry-run", "--json", str(part))
    (plan,) = [o for o in map(json.loads, planned.stdout.splitlines()) if o["type"] == "plan"]
    assert image["offset"] == image["logEnd"] == plan["newLogEndOffset"] == batch.base_offset
