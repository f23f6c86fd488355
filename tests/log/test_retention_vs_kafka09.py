"""`ktool retention` against Kafka 0.9.0.1's own delete policy, on copies of a partition that broker wrote.

One log dir holds four copies of the fixture `segmented-0` (13 segments, offsets 0..199):

* ``timed-0``: topic override retention.ms = 1 h (ZooKeeper); segments 0..5 and 7..12 are 10 days old
  by mtime, segment 6 is fresh: the broker deletes 0..5 and stops at 6 (the later old ones stay);
* ``sized-0``: retention.bytes = 5000, retention.ms = -1 (ZooKeeper): the oldest segments go while
  the log stays at or above 5000 bytes;
* ``expired-0``: retention.ms = 1 h, every segment old, the active one too: all go, and the broker
  first rolls a new empty segment at the log end offset (200);
* ``stays-0``: no override: server.properties' log.retention.hours = 48, mtimes 1 day old: nothing goes;
* ``compacted-0``: cleanup.policy = compact, retention.ms = 1 h, every segment old: 0.9's retention skips
  compacted logs, nothing goes (the cleaner is off in this broker).

ktool predicts from the untouched copy (with --zookeeper and --server-properties); then a real broker
starts on it with log.retention.check.interval.ms = 1000, and once it has deleted what it deletes, the
segment files left must be exactly those ktool said stay.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.independent import FIXTURES
from tests.support.cli import run_ktool
from tests.support.servers import KafkaBroker

LOGDIR = FIXTURES / "kafka-0.9.0.1" / "logdir"
DAY_MS = 86_400_000
OVERRIDES = {
    "timed": {"retention.ms": "3600000"},
    "sized": {"retention.bytes": "5000", "retention.ms": "-1"},
    "expired": {"retention.ms": "3600000"},
    "compacted": {"retention.ms": "3600000", "cleanup.policy": "compact"},
}
BROKER_PROPS = {
    "log.retention.hours": "48",
    "log.retention.check.interval.ms": "1000",
    "log.segment.delete.delay.ms": "0",
    "log.cleaner.enable": "false",
    "auto.create.topics.enable": "false",
}


def _broker_id() -> int:
    props = dict(x.split("=", 1) for x in (LOGDIR / "meta.properties").read_text().splitlines() if "=" in x)
    return int(props["broker.id"])


def _set_mtimes(part: Path, ages_ms: dict[int, int], now_ms: int) -> None:
    for f in part.iterdir():
        base = int(f.name.split(".")[0])
        t = (now_ms - ages_ms[base]) / 1000
        os.utime(f, (t, t))


def _segments(part: Path) -> list[int]:
    return sorted(int(f.name[:-4]) for f in part.iterdir() if f.name.endswith(".log"))


def _prepare(root: Path, now_ms: int) -> Path:
    logs = root / "kafka-logs"
    logs.mkdir(parents=True)
    for name in ("meta.properties", ".kafka_cleanshutdown"):
        shutil.copy(LOGDIR / name, logs / name)
    source = LOGDIR / "segmented-0"
    bases = _segments(source)
    ages = {
        "timed-0": {b: (10 * DAY_MS if i != 6 else 0) + i * 1000 for i, b in enumerate(bases)},
        "sized-0": dict.fromkeys(bases, 0),
        "expired-0": {b: 10 * DAY_MS - i * 1000 for i, b in enumerate(bases)},
        "stays-0": dict.fromkeys(bases, DAY_MS),
        "compacted-0": dict.fromkeys(bases, 10 * DAY_MS),
    }
    for name, age in ages.items():
        shutil.copytree(source, logs / name)
        _set_mtimes(logs / name, age, now_ms)
    return logs


@pytest.fixture(scope="module")
def outcome(zookeeper_server, tmp_path_factory):
    from kazoo.client import KazooClient

    chroot = f"/retention-{os.getpid()}"
    zk = KazooClient(zookeeper_server.connect_string)
    zk.start()
    try:
        for topic, config in OVERRIDES.items():
            partitions = {"0": [_broker_id()]}
            zk.create(
                f"{chroot}/brokers/topics/{topic}",
                json.dumps({"version": 1, "partitions": partitions}).encode(),
                makepath=True,
            )
            zk.create(
                f"{chroot}/config/topics/{topic}",
                json.dumps({"version": 1, "config": config}).encode(),
                makepath=True,
            )
    finally:
        zk.stop()
    root = tmp_path_factory.mktemp("retention.broker")
    now_ms = int(time.time() * 1000)
    logs = _prepare(root / "broker", now_ms)
    props = root / "server.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in BROKER_PROPS.items()))
    before = _tree(logs)
    result = run_ktool(
        "retention",
        "--json",
        "--zookeeper",
        zookeeper_server.connect_string + chroot,
        "--server-properties",
        str(props),
        str(logs),
    )
    assert result.exit_code == 0, result.output
    assert _tree(logs) == before, "ktool retention changed the log dir"
    predicted = [json.loads(line) for line in result.stdout.splitlines()]

    broker = KafkaBroker(
        zookeeper_server.connect_string + chroot,
        _broker_id(),
        workdir=root / "broker",
        properties=BROKER_PROPS,
    )
    broker.start()
    try:
        expected_gone = {
            (o["dir"], o["baseOffset"])
            for o in predicted
            if o["type"] == "segment" and o["action"] == "delete"
        }
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            left = {(p.name, b) for p in logs.iterdir() if p.is_dir() for b in _segments(p)}
            if not expected_gone & left:
                break
            time.sleep(0.5)
        # That nothing else goes is proved by time: three more of the broker's retention checks.
        time.sleep(3 * int(BROKER_PROPS["log.retention.check.interval.ms"]) / 1000)
        after = {p.name: _segments(p) for p in logs.iterdir() if p.is_dir()}
        text = broker.log_file.read_text("utf-8", "replace")
    finally:
        broker.stop(clean=True, timeout=60)
    return predicted, after, text


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _partition(predicted, name):
    return next(o for o in predicted if o["type"] == "partition" and o["dir"] == name)


def _kept(predicted, name) -> list[int]:
    return [
        o["baseOffset"]
        for o in predicted
        if o["type"] == "segment" and o["dir"] == name and o["action"] == "keep"
    ]


@pytest.mark.parametrize("name", ["timed-0", "sized-0", "stays-0", "compacted-0"])
def test_the_broker_keeps_exactly_the_segments_ktool_said_stay(outcome, name):
    predicted, after, text = outcome
    assert after[name] == _kept(predicted, name), text[-3000:]


def test_ktool_predicts_the_time_cut_at_the_first_fresh_segment(outcome):
    predicted, after, _ = outcome
    bases = _segments(LOGDIR / "segmented-0")
    assert _kept(predicted, "timed-0") == bases[6:]
    part = _partition(predicted, "timed-0")
    assert part["rule"] == "mtime"
    assert part["settings"]["retentionMs"]["source"].startswith("zookeeper /config/topics/timed")
    assert part["newLogStartOffset"] == bases[6]


def test_ktool_predicts_the_size_cut(outcome):
    predicted, after, _ = outcome
    sizes = [
        (b, (LOGDIR / "segmented-0" / f"{b:020d}.log").stat().st_size)
        for b in _segments(LOGDIR / "segmented-0")
    ]
    total = sum(s for _, s in sizes)
    gone = 0
    for _b, s in sizes:  # oldest first while the rest stays >= retention.bytes
        if total - s < 5000:
            break
        total -= s
        gone += 1
    assert gone > 0
    assert _kept(predicted, "sized-0") == [b for b, _ in sizes[gone:]]
    assert _partition(predicted, "sized-0")["settings"]["retentionBytes"]["value"] == 5000


def test_every_segment_expired_the_broker_rolls_first(outcome):
    predicted, after, text = outcome
    part = _partition(predicted, "expired-0")
    assert part["rolled"] and part["newLogStartOffset"] == 200
    assert _kept(predicted, "expired-0") == []
    assert after["expired-0"] == [200], text[-3000:]
    assert "Rolled new log segment for 'expired-0'" in text


def test_defaults_come_from_server_properties(outcome):
    predicted, _, _ = outcome
    part = _partition(predicted, "stays-0")
    assert part["settings"]["retentionMs"] == {
        "value": 48 * 3_600_000,
        "source": part["settings"]["retentionMs"]["source"],
    }
    assert "log.retention.hours" in part["settings"]["retentionMs"]["source"]
    assert part["segmentsDeleted"] == 0


def test_the_broker_logs_a_deletion_for_each_segment_ktool_predicted(outcome):
    predicted, _, text = outcome
    deleted = [
        (o["dir"], o["baseOffset"]) for o in predicted if o["type"] == "segment" and o["action"] == "delete"
    ]
    assert deleted
    scheduled = set(re.findall(r"Scheduling log segment (\d+) for log (\S+) for deletion", text))
    assert scheduled == {(str(b), p) for p, b in deleted}, text[-3000:]


def test_compacted_logs_are_not_deleted_by_time(outcome):
    predicted, after, _ = outcome
    part = _partition(predicted, "compacted-0")
    assert part["settings"]["cleanupPolicy"]["value"] == "compact" and part["segmentsDeleted"] == 0
    assert after["compacted-0"] == _segments(LOGDIR / "segmented-0")
