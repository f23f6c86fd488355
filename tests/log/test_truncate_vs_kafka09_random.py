"""The real broker as the final judge: 30 random corruptions of segments Kafka 0.9.0.1 wrote, recovered
by that broker (unclean shutdown, as tests/log/test_truncate_vs_kafka09_recovery.py does) and by
`ktool truncate --force`; both must leave the same bytes.

All 30 damaged copies sit in one log dir as partitions `judge-0` … `judge-29` (the broker loads any
`topic-N` directory; a partition's bytes do not name it), so one broker start recovers them all. Where
ktool refuses (damage the broker's recovery keeps, such as an offset outside every checksum), the file
must be untouched and the broker must have kept the damaged entry: its recovered file is at least as
long as the reference's prefix that contains it.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from tests.log.test_recovery_property import Mutation, _entry_positions
from tests.log.test_truncate_vs_kafka09_recovery import INDEX_INTERVAL, LOGDIR, recover_with_broker
from tests.reference_recovery import recover, soundness
from tests.support.cli import run_ktool

pytestmark = pytest.mark.slow

SEED = 90013
SAMPLES = 30
SOURCES = ("plain-0", "gzip-0", "snappy-0", "lz4-0")
KINDS = ("flip", "overwrite", "zero-run", "zero-from", "cut", "append", "append-zeros", "length")
SEGMENT = "00000000000000000000.log"


def _damaged_copies(logs: Path) -> dict[str, tuple[bytes, Mutation]]:
    rng = random.Random(SEED)
    out = {}
    for i in range(SAMPLES):
        source = LOGDIR / SOURCES[i % len(SOURCES)] / SEGMENT
        kind = KINDS[i % len(KINDS)]
        mutation = Mutation(kind, rng.random(), rng.randrange(1 << 32), rng.randbytes(rng.randint(1, 64)))
        original = source.read_bytes()
        damaged = mutation.apply(original, _entry_positions(original, "0.9"), 8)
        part = logs / f"judge-{i}"
        part.mkdir()
        (part / SEGMENT).write_bytes(damaged)
        out[part.name] = (damaged, mutation)
    return out


@pytest.fixture(scope="module")
def judged(zookeeper_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("judge.recovery")
    damaged_logs = root / "damaged"
    damaged_logs.mkdir()
    for name in ("meta.properties", "cleaner-offset-checkpoint", "replication-offset-checkpoint"):
        shutil.copy(LOGDIR / name, damaged_logs / name)
    cases = _damaged_copies(damaged_logs)
    (damaged_logs / "recovery-point-offset-checkpoint").write_text(
        "0\n" + f"{len(cases)}\n" + "".join(f"judge {n.split('-')[1]} 0\n" for n in sorted(cases))
    )
    workdir = root / "broker"
    broker_logs = workdir / "kafka-logs"
    shutil.copytree(damaged_logs, broker_logs)  # no .kafka_cleanshutdown: 0.9 recovers every segment
    text = recover_with_broker(f"{zookeeper_server.connect_string}/judge", workdir)
    return damaged_logs, broker_logs, cases, text


def test_ktool_truncate_leaves_the_bytes_kafka_0_9_leaves(judged, tmp_path: Path) -> None:
    damaged_logs, broker_logs, cases, broker_text = judged
    logs = tmp_path / "kafka-logs"
    shutil.copytree(damaged_logs, logs)
    compared = refused = 0
    for name, (damaged, mutation) in sorted(cases.items()):
        case = f"{name}: mutation={mutation} seed={SEED}"
        assert f"Completed load of log {name} " in broker_text, case
        theirs = (broker_logs / name / SEGMENT).read_bytes()
        assert damaged.startswith(theirs), f"the broker did more than cut: {case}"
        prefix, kept = recover(damaged, "0.9")
        assert len(theirs) == prefix, f"the reference ({prefix}) is not the broker ({len(theirs)}): {case}"
        result = run_ktool(
            "truncate", "--force", "--json", "--index-interval-bytes", str(INDEX_INTERVAL),
            "--backup-dir", str(tmp_path / "bk"), str(logs / name),
        )  # fmt: skip
        ours = (logs / name / SEGMENT).read_bytes()
        if result.exit_code == 1:
            assert ours == damaged and soundness(damaged, kept, 0, "0.9"), f"{result.output}: {case}"
            refused += 1
            continue
        assert result.exit_code == 0, f"{result.output}: {case}"
        assert ours == theirs, f"ktool kept {len(ours)} bytes, the broker {len(theirs)}: {case}"
        lines = [json.loads(x) for x in result.stdout.splitlines()]
        assert lines[0]["type"] == "plan"
        compared += 1
    print(
        f"\nbroker judge: {compared} equal byte for byte, {refused} refused (damage 0.9 keeps), seed {SEED}"
    )
    assert compared >= SAMPLES // 2
