"""`ktool truncate` against Kafka 0.9.0.1's own log recovery, on partitions that broker wrote.

For each kind of damage (a tail cut mid-message, 100 bytes of garbage appended, one byte flipped in the
middle of a message, 100 zero bytes appended) the fixture log dir (fixtures/kafka-0.9.0.1/logdir) is
copied once and the same damage is applied to one segment of each target partition:

* ``plain-0`` (uncompressed), ``gzip-0``, ``snappy-0``, ``lz4-0`` (one compressed wrapper per batch):
  their only segment;
* ``segmented-0``: segment 80, the 6th of 13, so recovery must also drop the 7 segments after it;
* ``segmented-1``: a copy of ``segmented-0`` (the broker loads any ``topic-N`` directory, and a
  partition's bytes do not name it), damaged in its last segment, 192.

One real 0.9.0.1 broker then starts on a copy of that log dir, with ``.kafka_cleanshutdown`` removed and
the targets' recovery points set to 0 (0.9 skips recovery when the marker exists, and otherwise
recovers only the segments from the checkpointed recovery point on), and ``log.index.interval.bytes=100``
(the interval ``segmented`` was written with; without topic configs in ZooKeeper the broker default
applies to every log). Once it has logged "started" it is stopped cleanly (SIGTERM), which trims the
indexes. Separately, ``ktool truncate --index-interval-bytes 100`` runs on another copy of each damaged
partition. What both leave must agree:

* the segment files: 0.9 does not delete the segments after a damaged one at once -- it renames them to
  ``*.deleted`` and removes them ``log.segment.delete.delay.ms`` (60 s) later, or at the next start --
  so the broker's files minus ``*.deleted`` must be ktool's, and the ``*.deleted`` ones those ktool removed;
* every ``.log``, byte for byte;
* every ``.index``, entry by entry (8 bytes: relative offset, position; a zero tail is preallocation).
  Positions must be equal. For a compressed wrapper 0.9 stores its *first* inner offset and ktool, like
  Kafka since KAFKA-7487, its last (the wrapper's own offset); both are checked against the offsets
  Kafka's DumpLogSegments printed for the wrapper at that position (fixtures/kafka-0.9.0.1/dumps).

ktool must also keep every removed byte (backup + manifest), and ``ktool truncate --undo`` must put the
damaged copy back exactly.

What 0.9.0.1 does (Log.recoverLog, LogSegment.recover, FileMessageSet.iterator at tag 0.9.0.1), seen
in the broker's log:

* a frame running past the end of the file, or a size field below 14 (a zero tail), ends the
  iteration silently; recover() truncates there: only ``WARN Corruption found in segment B of log P,
  truncating to offset N.`` is logged;
* a size field above message.max.bytes (1000012; the garbage below has 1524606080) throws
  InvalidMessageException, which 0.9's recover() catches (later versions call it
  CorruptRecordException, a subclass): ``WARN Found invalid messages in log segment F at byte offset
  X: Message size exceeds the largest allowable message size (1000012).`` then the line above;
* a CRC mismatch (Message.ensureValid): ``... at byte offset X: Message is corrupt (stored crc = A,
  computed crc = B).`` then the line above;
* after a segment lost bytes every later segment is deleted (renamed ``.deleted``); the recovered
  segments' indexes are rebuilt with log.index.interval.bytes.
The broker starts in every case: none of this damage makes 0.9 refuse to load a log.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kafka_tools.cli.main import cli
from tests.independent import FIXTURES
from tests.support.servers import KafkaBroker

K09 = FIXTURES / "kafka-0.9.0.1"
LOGDIR = K09 / "logdir"
DUMPS = K09 / "dumps"
INDEX_INTERVAL = 100
MESSAGE_MAX_BYTES = 1000012  # 0.9's message.max.bytes default (1000000 + log overhead)
MIN_MESSAGE = 14  # 0.9 Message.MinHeaderSize: crc, magic, attributes, key length, value length
FIRST = "00000000000000000000"
MIDDLE = "00000000000000000080"
LAST = "00000000000000000192"

CASES = ("cut-tail", "garbage", "flipped-byte", "zero-tail")
GARBAGE = random.Random(2026).randbytes(100)  # its size field reads 1524606080


@dataclass(frozen=True)
class Target:
    name: str
    partition: str  # directory in the copied log dir
    source: str  # the fixture partition it is a copy of
    segment: str  # base name of the damaged segment
    compressed: bool

    def __str__(self) -> str:
        return self.name


TARGETS = (
    Target("plain", "plain-0", "plain-0", FIRST, False),
    Target("gzip", "gzip-0", "gzip-0", FIRST, True),
    Target("snappy", "snappy-0", "snappy-0", FIRST, True),
    Target("lz4", "lz4-0", "lz4-0", FIRST, True),
    Target("segmented-middle", "segmented-0", "segmented-0", MIDDLE, False),
    Target("segmented-last", "segmented-1", "segmented-0", LAST, False),
)


@dataclass(frozen=True)
class Damage:
    original_size: int
    valid_bytes: int  # where recovery must cut the damaged segment
    next_offset: int  # the log end offset afterwards


@dataclass(frozen=True)
class Recovered:
    case: str
    damaged: Path  # the damaged log dir, as it was before anyone repaired it
    broker_logs: Path  # the broker's log.dirs after recovery and a clean shutdown
    broker_log: str  # what the broker printed
    damage: dict[str, Damage]  # by target name


# --------------------------------------------------------------------------- reading Kafka's files


def _frames(data: bytes) -> list[tuple[int, int, int]]:
    """(position, offset, size) of each complete magic-0/1 message frame, as 0.9's iterator walks them."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        offset, size = struct.unpack_from(">qi", data, pos)
        if size < MIN_MESSAGE or pos + 12 + size > len(data):
            break
        out.append((pos, offset, size))
        pos += 12 + size
    return out


def _index_entries(path: Path) -> list[tuple[int, int]]:
    """(relative offset, position) pairs; trailing all-zero entries are preallocated space."""
    data = path.read_bytes()
    entries = [struct.unpack_from(">ii", data, i) for i in range(0, len(data) - len(data) % 8, 8)]
    while entries and entries[-1] == (0, 0):
        entries.pop()
    return entries


@cache
def _offsets_at(partition: str, segment: str) -> dict[int, tuple[int, int]]:
    """Position of each shallow message -> (first, last) offset in it, from Kafka's deep DumpLogSegments."""
    out: dict[int, tuple[int, int]] = {}
    dump = DUMPS / partition / f"{segment}.log.deep-data.txt"
    for m in re.finditer(r"^offset: (\d+) position: (\d+) ", dump.read_text(), re.M):
        offset, pos = int(m.group(1)), int(m.group(2))
        first, last = out.get(pos, (offset, offset))
        out[pos] = (min(first, offset), max(last, offset))
    return out


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------- damage


def _damage(log: Path, case: str) -> Damage:
    data = bytearray(log.read_bytes())
    frames = _frames(bytes(data))
    assert frames and frames[-1][0] + 12 + frames[-1][2] == len(data), f"{log} is not clean to start with"
    if case == "cut-tail":  # the file ends in the middle of its last message
        pos, _, size = frames[-1]
        del data[pos + (12 + size) // 2 :]
        kept = frames[:-1]
    elif case == "garbage":
        assert struct.unpack_from(">i", GARBAGE, 8)[0] > MESSAGE_MAX_BYTES
        data += GARBAGE
        kept = frames
    elif case == "flipped-byte":  # a byte in the middle of the middle message: its CRC no longer matches
        n = len(frames) // 2
        pos, _, size = frames[n]
        data[pos + 12 + size // 2] ^= 0xFF
        kept = frames[:n]
    elif case == "zero-tail":
        data += bytes(100)
        kept = frames
    else:  # pragma: no cover
        raise ValueError(case)
    original = log.stat().st_size
    log.write_bytes(bytes(data))
    pos, offset, size = kept[-1]
    return Damage(original, pos + 12 + size, offset + 1)


def _force_full_recovery(logs: Path) -> None:
    """Make 0.9 recover every segment of the targets on its next start."""
    (logs / ".kafka_cleanshutdown").unlink()
    checkpoint = logs / "recovery-point-offset-checkpoint"
    version, _count, *entries = checkpoint.read_text().splitlines()
    targets = {tuple(t.partition.rsplit("-", 1)) for t in TARGETS}
    kept = [e for e in entries if tuple(e.split()[:2]) not in targets]
    lines = [version, str(len(kept) + len(targets)), *kept, *(f"{t} {p} 0" for t, p in sorted(targets))]
    checkpoint.write_text("\n".join(lines) + "\n")


def _broker_id() -> int:
    props = dict(
        line.split("=", 1) for line in (LOGDIR / "meta.properties").read_text().splitlines() if "=" in line
    )
    return int(props["broker.id"])


@pytest.fixture(scope="module", params=CASES)
def recovered(request, zookeeper_server, tmp_path_factory) -> Recovered:
    """One broker run per kind of damage; every target partition is damaged in the same log dir."""
    case = request.param
    root = tmp_path_factory.mktemp(f"{case}.recovery")  # not `name-N`: that is a partition dir
    damaged = root / "damaged"
    shutil.copytree(LOGDIR, damaged)
    shutil.copytree(damaged / "segmented-0", damaged / "segmented-1")
    damage = {t.name: _damage(damaged / t.partition / f"{t.segment}.log", case) for t in TARGETS}

    workdir = root / "broker"
    broker_logs = workdir / "kafka-logs"  # KafkaBroker's log.dirs
    shutil.copytree(damaged, broker_logs)
    _force_full_recovery(broker_logs)
    # a chroot per broker: nothing left from earlier runs
    text = recover_with_broker(f"{zookeeper_server.connect_string}/{case}", workdir)
    return Recovered(case, damaged, broker_logs, text, damage)


def recover_with_broker(zookeeper: str, workdir: Path) -> str:
    """A real 0.9.0.1 broker started over `workdir`/kafka-logs (it recovers what it finds there) and
    shut down cleanly; its log's text."""
    broker = KafkaBroker(
        zookeeper,
        _broker_id(),
        workdir=workdir,
        properties={
            "log.index.interval.bytes": INDEX_INTERVAL,
            "auto.create.topics.enable": "false",
            "log.cleaner.enable": "false",
            "log.retention.check.interval.ms": 3_600_000,
        },
    )
    broker.start()
    clean = broker.stop(clean=True, timeout=60)
    text = broker.log_file.read_text("utf-8", "replace")
    assert clean, f"the broker did not shut down cleanly:\n{text[-4000:]}"
    return text


# --------------------------------------------------------------------------- the broker side


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_kafka_0_9_recovers_the_damaged_segment(recovered: Recovered, target: Target) -> None:
    """What the reference does, so a ktool difference cannot be a test that never recovered anything."""
    damage = recovered.damage[target.name]
    base = int(target.segment)
    log = recovered.broker_logs / target.partition / f"{target.segment}.log"
    assert log.stat().st_size == damage.valid_bytes
    assert (
        log.read_bytes()
        == (LOGDIR / target.source / f"{target.segment}.log").read_bytes()[: damage.valid_bytes]
    )
    text = recovered.broker_log
    assert f"INFO Recovering unflushed segment {base} in log {target.partition}. " in text
    assert (
        f"WARN Corruption found in segment {base} of log {target.partition}, "
        f"truncating to offset {damage.next_offset}. " in text
    )
    invalid = (
        f"WARN Found invalid messages in log segment {recovered.broker_logs / target.partition}"
        f"/{target.segment}.log at byte offset {damage.valid_bytes}: "
    )
    if recovered.case == "garbage":
        too_big = f"Message size exceeds the largest allowable message size ({MESSAGE_MAX_BYTES}).."
        assert invalid + too_big in text
    elif recovered.case == "flipped-byte":
        crc = r"Message is corrupt \(stored crc = \d+, computed crc = \d+\)"
        assert re.search(re.escape(invalid) + crc, text)
    else:  # a frame past the end of the file or a size below the minimum just ends 0.9's iteration
        assert invalid not in text
    assert f"Completed load of log {target.partition} with log end offset {damage.next_offset}" in text


# --------------------------------------------------------------------------- ktool against it


def _ktool(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _needs_force(case: str, target: Target) -> bool:
    """Valid data after the damage (later in the segment, or later segments) makes ktool ask for --force."""
    return case == "flipped-byte" or target.segment != max(
        p.stem for p in (LOGDIR / target.source).glob("*.log")
    )


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_truncate_leaves_what_kafka_0_9_recovery_leaves(
    recovered: Recovered, target: Target, tmp_path: Path
) -> None:
    logs = tmp_path / "kafka-logs"
    shutil.copytree(recovered.damaged, logs)
    part = logs / target.partition
    backup = tmp_path / "backup"
    damaged = _tree(logs)
    args = ["truncate", "--backup-dir", backup, "--index-interval-bytes", INDEX_INTERVAL]

    if _needs_force(recovered.case, target):
        refused = _ktool(*args, part)
        assert refused.exit_code == 1, refused.output
        assert _tree(logs) == damaged
        args.append("--force")
    result = _ktool(*args, "--json", part)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]

    # the same segment files
    broker_part = recovered.broker_logs / target.partition
    theirs = sorted(p.name for p in broker_part.iterdir())
    live = [n for n in theirs if not n.endswith(".deleted")]
    scheduled = sorted(n.removesuffix(".deleted") for n in theirs if n.endswith(".deleted"))
    ours = sorted(p.name for p in part.iterdir())
    assert ours == live
    assert sorted(set(_tree(recovered.damaged / target.partition)) - set(ours)) == scheduled

    for name in ours:
        mine, ref = part / name, broker_part / name
        if name.endswith(".log"):
            assert mine.read_bytes() == ref.read_bytes(), name
        elif name.endswith(".index"):
            base = int(name.removesuffix(".index"))
            offsets = _offsets_at(target.source, name.removesuffix(".index"))
            kafka, ktool = _index_entries(ref), _index_entries(mine)
            assert [p for _, p in ktool] == [p for _, p in kafka], f"{name}: index positions"
            # 0.9 indexed the first offset of a compressed wrapper; ktool (KAFKA-7487) its last
            assert kafka == [(offsets[p][0] - base, p) for _, p in kafka], f"{name}: 0.9's entries"
            assert ktool == [(offsets[p][1] - base, p) for _, p in kafka], f"{name}: ktool's entries"
            if not target.compressed:
                assert ktool == kafka, name
            elif name == f"{target.segment}.index":  # not vacuous: wrappers of several messages are indexed
                assert ktool != kafka, name
            if name == f"{target.segment}.index":
                assert kafka, f"{name}: 0.9 indexed nothing; the comparison would be vacuous"

    _check_backup(recovered, target, records, logs)

    undone = _ktool("truncate", "--undo", _manifest(records))
    assert undone.exit_code == 0, undone.output
    assert _tree(logs) == damaged


# --------------------------------------------------------------------------- backup and manifest


def _manifest(records: list[dict]) -> Path:
    applied = [r for r in records if r.get("type") == "applied"]
    assert len(applied) == 1, records
    return Path(applied[0]["manifest"])


def _check_backup(recovered: Recovered, target: Target, records: list[dict], logs: Path) -> None:
    """The manifest must account for every byte that left the partition or was rewritten."""
    path = _manifest(records)
    manifest = json.loads(path.read_text())
    damage = recovered.damage[target.name]
    part = (logs / target.partition).resolve()
    assert Path(manifest["partition"]).resolve() == part
    assert manifest["state"] == "applied"
    assert manifest["newLogEndOffset"] == damage.next_offset
    actions = {Path(a["file"]).resolve(): a for a in manifest["actions"]}

    before = {p.name: p.read_bytes() for p in (recovered.damaged / target.partition).iterdir()}
    for name, original in before.items():
        now = part / name
        if now.is_file() and now.read_bytes() == original:
            assert now not in actions or actions[now]["action"] == "rewrite", name
            continue
        action = actions.get(now)
        assert action is not None, f"{name} changed but the manifest does not list it"
        saved = (path.parent / action["backup"]).read_bytes()
        assert hashlib.sha256(original).hexdigest() == action["originalSha256"], name
        if action["action"] == "truncate":
            assert name == f"{target.segment}.log"
            assert (action["originalSize"], action["newSize"]) == (len(original), damage.valid_bytes)
            assert saved == original[damage.valid_bytes :], name
            assert hashlib.sha256(saved).hexdigest() == action["backupSha256"]
            salvaged = action.get("salvaged")
            if recovered.case == "flipped-byte":
                # the valid entries after the damaged one, kept whole in a segment of their own
                kept = (path.parent / salvaged["file"]).read_bytes()
                assert saved.endswith(kept) and len(_frames(kept)) == salvaged["entries"] > 0
                assert _frames(kept)[-1][0] + 12 + _frames(kept)[-1][2] == len(kept)
            else:
                assert not salvaged
        else:
            assert action["action"] in ("delete", "rewrite"), action
            assert action["action"] == ("rewrite" if now.exists() else "delete"), name
            assert saved == original, name
