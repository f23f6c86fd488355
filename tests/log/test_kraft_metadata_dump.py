"""`dump-log` decoding KRaft metadata logs and snapshots, and `validate` checking snapshots: logs and
snapshots built by the tests' own encoder (tests/format/kraft_encoder.py), the real KRaft log dirs,
and damaged variants. Through the installed console script."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.format import kraft_encoder as enc
from tests.independent import REALWORLD
from tests.support.script import run_script

pytestmark = [
    pytest.mark.skipif(not enc.SCHEMA_DIR.is_dir(), reason="../shared/kraft-schemas is absent"),
    pytest.mark.slow,  # the console script in a fresh interpreter per check: not the fast tier
]
KRAFT = REALWORLD / "kraft"


@pytest.fixture(scope="module")
def schemas() -> dict[str, enc.Schema]:
    return enc.load_schemas()


def _topic(schemas, name: str, topic_id: str = "JiPG0GbKRRqpJrShexbMfw") -> bytes:
    return enc.frame(schemas["TopicRecord"], 0, {"name": name, "topicId": topic_id})


def _objects(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def _write_log(directory: Path, batches: list[bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "00000000000000000000.log"
    log.write_bytes(b"".join(batches))
    return log


def test_every_record_of_every_type_and_version_is_shown_decoded(tmp_path: Path, schemas) -> None:
    values = enc.sample_values(schemas, 200)
    batches = [enc.batch(i, [(None, v) for v in values[i : i + 10]]) for i in range(0, len(values), 10)]
    log = _write_log(tmp_path / "__cluster_metadata-0", batches)
    result = run_script("dump-log", "--deep-iteration", "--json", str(log))
    assert result.returncode == 0, result.stderr
    records = [o for o in _objects(result.stdout) if o["type"] == "record"]
    assert len(records) == 200
    metadata = [s for s in schemas.values() if s.kind == "metadata"]
    pairs = [(s, v) for s in metadata for v in s.versions]
    for i, rec in enumerate(records):
        schema, version = pairs[i % len(pairs)]
        kafka_name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", schema.name).upper()  # TopicRecord: TOPIC_RECORD
        assert (rec["offset"], rec["value"]["type"], rec["value"]["version"]) == (i, kafka_name, version)
        assert set(rec["value"]["data"]) == {
            enc.key_of(f["name"]) for f in schema.fields if enc._within(f["versions"], version)
        }
    summary = _objects(result.stdout)[-1]
    assert (summary["records"], summary["errors"], summary["unknownRecords"]) == (200, 0, 0)


def test_the_text_output_prints_each_record_as_kafkas_decoder_does(tmp_path: Path, schemas) -> None:
    log = _write_log(tmp_path / "x", [enc.batch(0, [(None, _topic(schemas, "orders"))])])
    result = run_script("dump-log", "--cluster-metadata-decoder", str(log))
    assert result.returncode == 0, result.stderr
    line = result.stdout.splitlines()[-1]
    assert line.startswith("| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 27 ")
    data = '{"name":"orders","topicId":"JiPG0GbKRRqpJrShexbMfw"}'
    # as Kafka's kafka-dump-log --cluster-metadata-decoder prints it (MetadataRecordType's name)
    assert line.endswith(f'payload: {{"type":"TOPIC_RECORD","version":0,"data":{data}}}')
    # without the flag and outside __cluster_metadata-N: the value is not read as a metadata record
    plain = run_script("dump-log", "--deep-iteration", str(log))
    assert "payload: {" not in plain.stdout


def test_a_truncated_record_inside_a_valid_batch_is_a_problem_and_the_rest_is_shown(
    tmp_path: Path, schemas
) -> None:
    good = [_topic(schemas, f"t{i}") for i in range(4)]
    cut = good[1][:-5]  # the topic id loses its last bytes; the batch CRC is computed over it: valid
    batches = [enc.batch(0, [(None, good[0]), (None, cut), (None, good[2])]), enc.batch(3, [(None, good[3])])]
    log = _write_log(tmp_path / "__cluster_metadata-0", batches)
    result = run_script("dump-log", "--deep-iteration", "--json", str(log))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    objs = _objects(result.stdout)
    values = [o["value"] for o in objs if o["type"] == "record"]
    assert [v["type"] for v in values] == ["TOPIC_RECORD", "UNDECODABLE", "TOPIC_RECORD", "TOPIC_RECORD"]
    assert [v["data"]["name"] for v in values if "data" in v] == ["t0", "t2", "t3"]
    [problem] = [o for o in objs if o["type"] == "problem"]
    assert (problem["kind"], problem["offset"], problem["position"]) == ("metadata-record-undecodable", 1, 0)
    assert "byte 6 of its value" in problem["message"]  # frame (3) + name "t1" (1 + 2): the topic id
    text = run_script("dump-log", "--deep-iteration", str(log))
    assert text.returncode == 1
    assert "position 0 (offset 1): metadata-record-undecodable" in text.stderr


def test_an_unknown_frame_version_is_a_problem(tmp_path: Path, schemas) -> None:
    value = b"\x02" + _topic(schemas, "t")[1:]
    log = _write_log(tmp_path / "__cluster_metadata-0", [enc.batch(0, [(None, value)])])
    result = run_script("dump-log", "--deep-iteration", str(log))
    assert result.returncode == 1
    assert "byte 0 of its value: unknown metadata frame version 2" in result.stderr


def test_unknown_types_and_versions_are_shown_raw_and_counted_not_failed(tmp_path: Path, schemas) -> None:
    newer = b"\x01\x02\x07\x00"  # TopicRecord v7
    unknown = b"\x01\x7f\x00\x00"  # type 127
    log = _write_log(
        tmp_path / "__cluster_metadata-0",
        [enc.batch(0, [(None, newer), (None, _topic(schemas, "t")), (None, unknown)])],
    )
    result = run_script("dump-log", "--deep-iteration", "--json", str(log))
    assert result.returncode == 0, result.stderr
    objs = _objects(result.stdout)
    values = [o["value"] for o in objs if o["type"] == "record"]
    assert values[0] == {
        "type": "TOPIC_RECORD",
        "typeId": 2,
        "version": 7,
        "unknown": True,
        "raw": newer.hex(),
    }
    assert values[2] == {
        "type": "UNKNOWN",
        "typeId": 127,
        "version": 0,
        "unknown": True,
        "raw": unknown.hex(),
    }
    assert objs[-1]["unknownRecords"] == 2
    text = run_script("dump-log", "--deep-iteration", str(log))
    assert text.returncode == 0
    assert "2 KRaft records of a type or version newer than the schemas" in text.stderr


def _kraft_dir(tmp_path: Path, schemas, snapshot: bytes, name: str, log_epoch: int = 1) -> Path:
    meta = tmp_path / "logs" / "__cluster_metadata-0"
    values = [_topic(schemas, f"t{i}") for i in range(12)]
    _write_log(meta, [enc.batch(i, [(None, values[i])], epoch=log_epoch) for i in range(12)])
    (meta / name).write_bytes(snapshot)
    return meta / name


def test_validate_passes_a_healthy_snapshot_and_dump_log_decodes_it(tmp_path: Path, schemas) -> None:
    values = enc.sample_values(schemas, 40)
    snap = _kraft_dir(
        tmp_path, schemas, enc.snapshot_bytes(schemas, values), "00000000000000000010-0000000001.checkpoint"
    )
    result = run_script("validate", "--strict", "--json", str(tmp_path / "logs"))
    assert [o for o in _objects(result.stdout) if o["type"] == "finding"] == []
    assert result.returncode == 0
    assert run_script("validate", str(snap)).returncode == 0
    dump = run_script("dump-log", "--deep-iteration", "--json", str(snap))
    assert dump.returncode == 0, dump.stderr
    types = [o["value"]["type"] for o in _objects(dump.stdout) if o["type"] == "record"]
    assert types[0] == "SNAPSHOT_HEADER_RECORD" and types[-1] == "SNAPSHOT_FOOTER_RECORD" and len(types) == 42


def _findings(*args: str) -> tuple[int, list[dict]]:
    result = run_script("validate", "--json", *args)
    assert "Traceback" not in result.stderr
    return result.returncode, [o for o in _objects(result.stdout) if o["type"] == "finding"]


def test_a_snapshot_without_footer_is_a_finding(tmp_path: Path, schemas) -> None:
    values = [_topic(schemas, f"t{i}") for i in range(5)]
    data = enc.snapshot_bytes(schemas, values, footer=False, per_batch=2)
    snap = _kraft_dir(tmp_path, schemas, data, "00000000000000000010-0000000001.checkpoint")
    code, found = _findings(str(tmp_path / "logs"))
    assert code == 1
    assert [(f["file"], f["kind"], f["offset"]) for f in found] == [(str(snap), "snapshot-footer-missing", 5)]
    last_batch = len(data) - len(enc.batch(5, [(None, values[4])]))
    assert found[0]["position"] == last_batch
    assert run_script("validate", str(snap)).returncode == 1


def test_a_snapshot_without_header_is_a_finding(tmp_path: Path, schemas) -> None:
    values = [_topic(schemas, f"t{i}") for i in range(3)]
    body = enc.batch(0, [(None, v) for v in values]) + enc.batch(
        3, [enc.footer_record(schemas)], control=True
    )
    snap = _kraft_dir(tmp_path, schemas, body, "00000000000000000004-0000000001.checkpoint")
    code, found = _findings(str(snap))
    assert (code, [(f["kind"], f["position"], f["offset"]) for f in found]) == (
        1,
        [("snapshot-header-missing", 0, 0)],
    )


def test_a_snapshot_named_for_another_epoch_is_a_finding(tmp_path: Path, schemas) -> None:
    data = enc.snapshot_bytes(schemas, [_topic(schemas, "t")], epoch=1)
    snap = _kraft_dir(tmp_path, schemas, data, "00000000000000000010-0000000002.checkpoint")
    code, found = _findings(str(tmp_path / "logs"))
    assert code == 1
    kinds = [(f["kind"], f["expected"], f["actual"]) for f in found]
    # the batches say epoch 1, and so does the log at offset 9 (the name's end offset 10 is exclusive)
    assert kinds == [("snapshot-epoch-mismatch", 2, 1), ("snapshot-epoch-mismatch", 2, 1)]
    assert all(f["file"] == str(snap) for f in found)


def test_a_snapshot_whose_end_offset_lies_in_another_epoch_of_the_log_is_a_finding(
    tmp_path: Path, schemas
) -> None:
    data = enc.snapshot_bytes(schemas, [_topic(schemas, "t")], epoch=3)
    _kraft_dir(tmp_path, schemas, data, "00000000000000000010-0000000003.checkpoint", log_epoch=2)
    code, found = _findings(str(tmp_path / "logs"))
    assert code == 1
    assert [(f["kind"], f["expected"], f["actual"]) for f in found] == [("snapshot-epoch-mismatch", 3, 2)]
    assert "holds offset 9 in epoch 2" in found[0]["message"]


def test_a_snapshot_with_a_bad_record_is_a_finding(tmp_path: Path, schemas) -> None:
    values = [_topic(schemas, "t0"), b"\x01\x02\x00\x05ab", _topic(schemas, "t2")]
    data = enc.snapshot_bytes(schemas, values)
    snap = _kraft_dir(tmp_path, schemas, data, "00000000000000000010-0000000001.checkpoint")
    code, found = _findings(str(snap))
    assert (code, [(f["kind"], f["offset"]) for f in found]) == (1, [("metadata-record-undecodable", 2)])


# -- the real KRaft log dirs ----------------------------------------------------------------------

# apache-kafka-test-kafka-1168504093769635972 was written by a pre-release Kafka trunk
# (metadata.version 16, 3.7-IV1) whose PartitionRecord v1 carried KIP-966's ELR fields as tags 1 and 2;
# Written by a pre-release Kafka trunk (November 2023) whose PartitionRecord v1 carried KIP-966's ELR
# as tags 1-2 and no Directories (3.7 released v1 with Directories and ELR at v2): decoded with the
# known pre-release layout (kafka_tools/format/kraft/pre_release.py) and marked so.
PRE_RELEASE = {("apache-kafka-test-kafka-1168504093769635972", offset) for offset in (24, 25, 26, 27, 28, 42)}
PRE_RELEASE_LABEL = "pre-3.7 trunk: PartitionRecord v1 with KIP-966 ELR as tags 1-2"


def _real_files() -> list[Path]:
    if not KRAFT.is_dir():
        return []
    files = sorted(KRAFT.glob("*/__cluster_metadata-0/*.log")) + sorted(KRAFT.glob("*/bootstrap.checkpoint"))
    return files + sorted(KRAFT.glob("*/__cluster_metadata-0/*.checkpoint"))


@pytest.mark.skipif(not KRAFT.is_dir(), reason="../shared/realworld/kraft is absent")
@pytest.mark.parametrize("path", _real_files(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_record_of_the_real_kraft_logs_decodes(path: Path) -> None:
    result = run_script("dump-log", "--deep-iteration", "--json", str(path))
    objs = _objects(result.stdout)
    dir_name = path.parent.name if path.name == "bootstrap.checkpoint" else path.parent.parent.name
    assert [o for o in objs if o["type"] == "problem"] == []
    records = [o for o in objs if o["type"] == "record"]
    assert records and all("data" in r["value"] for r in records)
    layouts = {(dir_name, r["offset"]): r["value"].get("layout") for r in records if "layout" in r["value"]}
    assert layouts == {p: PRE_RELEASE_LABEL for p in PRE_RELEASE if p[0] == dir_name}
    for r in records:
        if (dir_name, r["offset"]) in PRE_RELEASE:
            assert (r["value"]["type"], r["value"]["version"]) == ("PARTITION_RECORD", 1)
            assert list(r["value"]) == ["type", "version", "layout", "data"]
            assert (
                r["value"]["data"]["eligibleLeaderReplicas"] == [] and "directories" not in r["value"]["data"]
            )
    summary = objs[-2]
    assert summary["type"] == "file-summary" and objs[-1]["type"] == "summary"
    assert (summary["errors"], summary["unknownRecords"], summary["trailingBytes"]) == (0, 0, 0)
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.skipif(not KRAFT.is_dir(), reason="../shared/realworld/kraft is absent")
def test_the_text_dump_marks_a_record_decoded_with_a_pre_release_layout() -> None:
    log = (
        KRAFT
        / "apache-kafka-test-kafka-1168504093769635972"
        / "__cluster_metadata-0"
        / "00000000000000000000.log"
    )
    if not log.is_file():
        pytest.skip("the pre-release log dir is absent")
    result = run_script("dump-log", "--deep", str(log))
    assert result.returncode == 0, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("| offset: 42 "))
    assert line.endswith(
        f'payload: {{"type":"PARTITION_RECORD","version":1,"layout":"{PRE_RELEASE_LABEL}","data":'
        '{"partitionId":0,"topicId":"X5HJ16TOTVq6t4OyiVmQOw","replicas":[0,1,2],"isr":[0,1,2],'
        '"removingReplicas":[],"addingReplicas":[],"leader":0,"leaderRecoveryState":0,"leaderEpoch":0,'
        '"partitionEpoch":0,"eligibleLeaderReplicas":[],"lastKnownElr":[]}}'
    )
    assert sum('"layout":' in ln for ln in result.stdout.splitlines()) == 6


def test_a_pre_release_record_built_by_the_encoder_is_shown_with_its_layout(tmp_path: Path, schemas) -> None:
    data = {
        "partitionId": 0,
        "topicId": "JiPG0GbKRRqpJrShexbMfw",
        "replicas": [1, 2],
        "isr": [1],
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": 1,
        "leaderEpoch": 4,
        "partitionEpoch": 5,
        "eligibleLeaderReplicas": [2],
    }
    values = [_topic(schemas, "orders"), enc.pre_release_partition_record_v1(data)]
    log = _write_log(tmp_path / "__cluster_metadata-0", [enc.batch(0, [(None, v) for v in values])])
    result = run_script("dump-log", "--deep-iteration", "--json", str(log))
    assert result.returncode == 0, result.stderr
    records = [o for o in _objects(result.stdout) if o["type"] == "record"]
    assert "layout" not in records[0]["value"]
    assert records[1]["value"]["layout"] == PRE_RELEASE_LABEL
    assert records[1]["value"]["data"] == {**data, "leaderRecoveryState": 0, "lastKnownElr": None}


def test_the_decoder_leaves_message_sets_alone() -> None:
    """KRaft writes record batches (v2) only: asked for on a Kafka 0.9 segment (magic 0/1), the decoder
    changes nothing and the dump is the usual one."""
    from tests.independent import FIXTURES

    segment = FIXTURES / "kafka-0.9.0.1" / "logdir" / "gzip-0" / "00000000000000000000.log"
    with_decoder = run_script("dump-log", "--cluster-metadata-decoder", str(segment))
    plain = run_script("dump-log", "--print-data-log", str(segment))
    assert (with_decoder.returncode, with_decoder.stderr) == (0, "")
    assert with_decoder.stdout == plain.stdout
