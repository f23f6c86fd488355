"""KRaft-era files are Kafka's (dump-log decodes them, validate --strict is clean on healthy KRaft log
dirs), and validate runs the same checks as dump-log on the files beside the segments. Through the
installed console script."""

from __future__ import annotations

import json
import random
import shutil
import struct
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.independent import FIXTURES, REALWORLD
from tests.support.script import run_script

pytestmark = pytest.mark.slow  # the console script in a fresh interpreter per check: not the fast tier

KRAFT = REALWORLD / "kraft"
QUORUM_STATE = (
    '{"clusterId":"","leaderId":1,"leaderEpoch":6,"votedId":-1,"appliedOffset":0,'
    '"currentVoters":[{"voterId":1}],"data_version":0}'
)

# KRaft record values: frame version 1, NoOpRecord (apiKey 20) version 0, no tagged fields; a
# SnapshotHeader: version 0, lastContainedLogTimestamp, no tagged fields
NO_OP_RECORD = b"\x01\x14\x00\x00"
SNAPSHOT_HEADER = struct.pack(">hq", 0, 1_700_000_000_000) + b"\x00"


def batches(first: int, count: int, epoch: int = 1) -> bytes:
    out = bytearray()
    for offset in range(first, first + count):
        b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        b.append(0, timestamp=1_700_000_000_000 + offset, key=None, value=NO_OP_RECORD, headers=[])
        buf = bytearray(b.build())
        struct.pack_into(">q", buf, 0, offset)
        out += _with_epoch(buf, epoch)
    return bytes(out)


class _ControlBatchBuilder(DefaultRecordBatchBuilder):
    def _get_attributes(self, include_compression_type=True):
        return super()._get_attributes(include_compression_type) | self.CONTROL_MASK


def _with_epoch(buf: bytearray, epoch: int) -> bytes:
    """The batch with its partition leader epoch set (byte 12; the CRC, from byte 21 on, holds)."""
    struct.pack_into(">i", buf, 12, epoch)
    return bytes(buf)


def control_batch(offset: int, control_type: int, epoch: int = 1) -> bytes:
    """A control batch whose record key is (version 0, `control_type`), as KRaft writes
    SnapshotHeader (3) and SnapshotFooter (4) around a snapshot."""
    b = _ControlBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    key = struct.pack(">hh", 0, control_type)
    value = SNAPSHOT_HEADER if control_type == 3 else b"\0\0\0"  # SnapshotFooter: version 0, no tags
    b.append(0, timestamp=1_700_000_000_000, key=key, value=value, headers=[])
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, offset)
    return _with_epoch(buf, epoch)


@pytest.fixture
def kraft_log_dir(tmp_path: Path) -> Path:
    """A KRaft combined node's log dir, laid out as Kafka 3.x writes it."""
    logs = tmp_path / "kraft-combined-logs"
    meta = logs / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (logs / "meta.properties").write_text(
        "#\n#Tue Nov 14 06:46:06 UTC 2023\nnode.id=1\nversion=1\ncluster.id=hSCzevIQRUa-ojqTd_8C5w\n"
        "directory.id=850bXYO4TaCvXty2WNo63w\n"
    )
    (logs / "bootstrap.checkpoint").write_bytes(
        control_batch(0, 3, 0) + batches(1, 1, 0) + control_batch(2, 4, 0)
    )
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (logs / name).write_text("0\n1\n__cluster_metadata 0 10\n")
    (meta / "00000000000000000000.log").write_bytes(batches(0, 10))
    # a snapshot of the log below offset 6, in epoch 1: SnapshotHeader, records, SnapshotFooter
    snapshot = control_batch(0, 3) + batches(1, 4) + control_batch(5, 4)
    (meta / "00000000000000000006-0000000001.checkpoint").write_bytes(snapshot)
    (meta / "quorum-state").write_text(QUORUM_STATE)
    (meta / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")
    (meta / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    return logs


def test_validate_strict_is_clean_on_a_healthy_kraft_log_dir(kraft_log_dir: Path) -> None:
    result = run_script("validate", "--strict", "--json", str(kraft_log_dir))
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o for o in objs if o["type"] == "finding"] == []
    assert result.returncode == 0, result.stdout
    assert [o["dir"] for o in objs if o["type"] == "partition"] == ["__cluster_metadata-0"]


@pytest.mark.skipif(not KRAFT.is_dir(), reason="../shared/realworld/kraft is not here")
@pytest.mark.parametrize("name", sorted(p.name for p in KRAFT.iterdir()) if KRAFT.is_dir() else [])
def test_validate_strict_is_clean_on_real_kraft_log_dirs(name: str) -> None:
    result = run_script("validate", "--strict", str(KRAFT / name))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "__cluster_metadata-0" in result.stdout and "orphan" not in result.stdout


def test_dump_log_decodes_kraft_files(kraft_log_dir: Path) -> None:
    meta = kraft_log_dir / "__cluster_metadata-0"
    quorum = run_script("dump-log", "--json", str(meta / "quorum-state"))
    assert quorum.returncode == 0, quorum.stderr
    props = {
        o["key"]: o["value"] for o in map(json.loads, quorum.stdout.splitlines()) if o["type"] == "property"
    }
    assert props == json.loads(QUORUM_STATE)
    snapshot = run_script("dump-log", str(meta / "00000000000000000006-0000000001.checkpoint"))
    assert snapshot.returncode == 0, snapshot.stderr
    assert snapshot.stdout.splitlines()[1] == "Snapshot end offset: 6, epoch: 1"
    assert snapshot.stdout.count("baseOffset: ") == 6
    boot = run_script("dump-log", "--json", "--deep-iteration", str(kraft_log_dir / "bootstrap.checkpoint"))
    assert boot.returncode == 0, boot.stderr
    objs = [json.loads(line) for line in boot.stdout.splitlines()]
    assert [o["baseOffset"] for o in objs if o["type"] == "batch"] == [0, 1, 2]
    # control types as Kafka's ControlRecordType numbers them (2 LEADER_CHANGE … 6 KRAFT_VOTERS)
    controls = [o["control"]["type"] for o in objs if o["type"] == "record" and "control" in o]
    assert controls == ["SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"]
    props = run_script("dump-log", str(kraft_log_dir / "meta.properties"))
    assert (props.returncode, props.stderr) == (
        0,
        "",
    ) and "directory.id: 850bXYO4TaCvXty2WNo63w" in props.stdout


def test_a_damaged_kraft_file_is_a_finding_of_both_commands(kraft_log_dir: Path) -> None:
    meta = kraft_log_dir / "__cluster_metadata-0"
    (meta / "quorum-state").write_text('{"leaderId": 1, ')
    snap = meta / "00000000000000000006-0000000001.checkpoint"
    data = bytearray(snap.read_bytes())
    data[100] ^= 0xFF
    snap.write_bytes(bytes(data))
    result = run_script("validate", "--json", str(kraft_log_dir))
    assert result.returncode == 1
    found = {
        (o["file"], o["kind"]) for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "finding"
    }
    assert found == {(str(meta / "quorum-state"), "not-a-segment"), (str(snap), "crc-mismatch")}
    for path in (meta / "quorum-state", snap):
        assert run_script("dump-log", str(path)).returncode == 1


def _problems(path: Path) -> set[tuple[int, str]]:
    out = run_script("dump-log", "--json", str(path))
    assert out.returncode == 1, out.stdout
    return {
        (o["position"], o["kind"]) for o in map(json.loads, out.stdout.splitlines()) if o["type"] == "problem"
    }


def _findings(*args: str) -> tuple[int, set[tuple[str, int, str]]]:
    out = run_script("validate", "--json", *args)
    objs = [json.loads(line) for line in out.stdout.splitlines()]
    return out.returncode, {(o["file"], o["position"], o["kind"]) for o in objs if o["type"] == "finding"}


@pytest.mark.parametrize("name", ["00000000000000000000.index", "00000000000000000000.timeindex"])
def test_a_lone_garbage_index_is_not_clean(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(random.Random(14).randbytes(1001))
    problems = _problems(path)
    code, findings = _findings(str(path))
    assert code == 1
    assert findings == {(str(path), pos, kind) for pos, kind in problems}


def test_garbage_side_files_get_dump_logs_checks_in_validate(tmp_path: Path) -> None:
    part = tmp_path / "orders-0"
    shutil.copytree(FIXTURES / "generated/v2/none-0", part)
    rng = random.Random(14)
    txn = part / "00000000000000000000.txnindex"
    txn.write_bytes(rng.randbytes(1001))
    meta = part / "partition.metadata"
    meta.write_bytes(rng.randbytes(300))
    expected = {(str(p), pos, kind) for p in (txn, meta) for pos, kind in _problems(p)}
    assert len(expected) >= 2
    assert _findings(str(txn), str(meta)) == (1, expected)  # given as files
    code, findings = _findings(str(part))  # or found in their partition
    assert code == 1 and findings == expected


def test_a_broken_meta_properties_is_said_alike_by_both_commands(tmp_path: Path) -> None:
    """validate checks meta.properties with dump-log's own checks (log/files/side_files.py), without the
    dump's machinery: the same line, position and kind from both."""
    log_dir = tmp_path / "logs"
    shutil.copytree(FIXTURES / "generated/v2/none-0", log_dir / "orders-0")
    meta = log_dir / "meta.properties"
    meta.write_text("version=0\ngarbage\n")
    dumped = run_script("dump-log", "--json", str(meta))
    assert dumped.returncode == 1
    problems = [o for o in map(json.loads, dumped.stdout.splitlines()) if o["type"] == "problem"]
    assert [(p["position"], p["kind"], p["message"]) for p in problems] == [
        (0, "not-a-segment", "line 2: not a key=value line: 'garbage'")
    ]
    validated = run_script("validate", "--json", str(log_dir))
    assert validated.returncode == 1
    findings = [o for o in map(json.loads, validated.stdout.splitlines()) if o["type"] == "finding"]
    assert [(f["file"], f["position"], f["kind"], f["message"]) for f in findings] == [
        (str(meta), 0, "not-a-segment", "line 2: not a key=value line: 'garbage'")
    ]
