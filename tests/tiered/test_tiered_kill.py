"""A broker SIGKILLed in the middle of a copy to the remote store (Kafka 4.4.0 with LocalTieredStorage,
tests/support/modern.local_tiered_storage; the same test passed on 3.9.2 when written, 2026-11-28):
the store is slowed by a transferer that holds each copy while a gate file exists
(tests/support/kafka_modern/SlowTransferer.java), so the kill lands while a copy is surely in progress,
after its COPY_SEGMENT_STARTED is written and its first file is in the store. `ktool tiered audit`
then reports the dangling COPY_SEGMENT_STARTED with the segment's offsets and age, and the files it
leaked. The broker restarted (gate open) retries the copy under a new segment id: the audit reports
what the broker cleaned up and what stays exactly as the store and the metadata say."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.cli import run_ktool
from tests.tiered.test_tiered_broker import tiered_properties

SOURCE = Path(__file__).resolve().parents[1] / "support" / "kafka_modern" / "SlowTransferer.java"


def slow_transferer(release, plugins: list[Path]) -> Path:
    """SlowTransferer compiled against the release's jars, once (cached by its source's hash)."""
    from tests.support.modern import cache_dir, classpath

    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    classes = cache_dir() / f"kafka-{release.version}" / f"slow-transferer-{digest}"
    if (classes / "SlowTransferer.class").is_file():
        return classes
    work = classes.with_name(classes.name + f".{os.getpid()}.tmp")
    compiled = subprocess.run(
        ["javac", "-nowarn", "-cp", os.pathsep.join([classpath(release), *map(str, plugins)]),
         "-d", str(work),
         str(SOURCE)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    if classes.exists():  # another session compiled it meanwhile
        shutil.rmtree(work)
    else:
        os.replace(work, classes)
    return classes


@pytest.fixture
def slow_store(kafka4_release, tmp_path, monkeypatch):
    from tests.conftest import _unavailable
    from tests.support.modern import FetchError, ModernCluster, local_tiered_storage

    try:
        plugins = local_tiered_storage(kafka4_release)
    except FetchError as exc:
        _unavailable(str(exc))
    classes = slow_transferer(kafka4_release, plugins)
    gate = tmp_path / "gate"
    gate.touch()  # shut: the first copy is held
    monkeypatch.setenv("KTOOL_TRANSFER_GATE", str(gate))
    store = tmp_path / "store"
    store.mkdir()
    properties = {**tiered_properties(store), "rsm.config.transferer.class": "SlowTransferer"}
    cluster = ModernCluster(
        kafka4_release,
        "combined",
        tmp_path / "kafka",
        properties=properties,
        extra_classpath=[*plugins, classes],
    )
    with cluster:
        yield cluster, store, gate


def _audit(log_dir: Path, store: Path, *extra: str) -> tuple[int, list[dict]]:
    result = run_ktool("tiered", "audit", str(log_dir), "--remote-dir", str(store), "--json", *extra)
    assert "Traceback" not in result.output
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


def _wait(what: str, ready, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ready()
        if got:
            return got
        time.sleep(0.2)
    pytest.fail(f"not within {timeout} s: {what}")


def test_a_copy_killed_half_way_is_reported_then_what_the_restart_left(slow_store):
    from confluent_kafka import Producer

    from kafka_tools.tiered.audit import audit
    from kafka_tools.tiered.replay import COPY_FINISHED, COPY_STARTED
    from tests.support.modern import create_topic

    cluster, store, gate = slow_store
    node = cluster.brokers[0]
    log_dir = node.log_dir
    create_topic(
        cluster,
        "orders",
        config={"remote.storage.enable": "true", "segment.bytes": 1 << 20, "local.retention.ms": 1000,
                "retention.ms": -1},
    )  # fmt: skip
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5, "batch.size": 65536})
    for i in range(2600):  # 2.6 MiB: two closed 1 MiB segments and the active one
        producer.produce("orders", value=b"%06d" % i + b"x" * 1018)
        producer.poll(0)
    assert producer.flush(60) == 0
    del producer  # no client left retrying the killed broker

    marker = gate.parent / "gate.held"
    held = Path(
        _wait("a copy held by the slowed store", lambda: marker.is_file() and marker.read_text().split())[0]
    )
    cluster.stop_node(node, kill=True)  # SIGKILL while the copy is held
    start_text, seg_id = held.name.split(".", 1)[0].split("-", 1)
    start = int(start_text)
    leaked = sorted(p.name for p in held.parent.iterdir() if seg_id in p.name)
    assert leaked  # the store holds what the copy wrote before the kill

    # the dangling COPY_SEGMENT_STARTED and its leaked files, with the segment's offsets and age
    code, objs = _audit(log_dir, store, "--stuck-after", "0")
    assert code == 1
    found = [o for o in objs if o["type"] == "finding"]
    assert {f["kind"] for f in found} == {"copy-not-finished", "leaked-files"}, found
    bases = sorted(int(p.stem) for p in (log_dir / "orders-0").glob("*.log"))
    end = next(b for b in bases if b > start) - 1  # the segment copied ends before the next one starts
    for f in found:
        assert (f["segmentId"], f["startOffset"], f["endOffset"]) == (seg_id, start, end), f
    (copy,) = [f for f in found if f["kind"] == "copy-not-finished"]
    assert f"offsets {start}-{end}" in copy["message"] and " s ago" in copy["message"]
    (files,) = [f for f in found if f["kind"] == "leaked-files"]
    assert all(name in files["message"] for name in leaked)
    (partition,) = [o for o in objs if o["type"] == "partition"]
    assert (partition["copyStarted"], partition["copyFinished"]) == (1, 0)
    assert _audit(log_dir, store)[0] == 0  # seconds old: a copy in progress, not yet a finding

    # restarted with the store open again: the broker copies the same offsets under a new id
    gate.unlink()
    killed_at = int(time.time() * 1000)
    cluster.start_node(node)

    def retried():
        pa = audit([str(log_dir)], None, int(time.time() * 1000), 900_000).partitions
        segs = pa[0].replay.segments.values() if pa and pa[0].replay else []
        return any(
            s.start_offset == start and s.state == COPY_FINISHED and s.segment_id != seg_id for s in segs
        )

    _wait("the copy retried after the restart", retried)
    cluster.stop_node(node)  # a clean shutdown

    report = audit([str(log_dir)], str(store), int(time.time() * 1000), 0)
    (pa,) = report.partitions
    old = pa.replay.segments.get(seg_id)
    in_store = (pa.stored.segments if pa.stored else {}).get(seg_id)
    code, objs = _audit(log_dir, store, "--stuck-after", "0")
    found = [o for o in objs if o["type"] == "finding"]
    about_old = {f["kind"] for f in found if f["segmentId"] == seg_id}
    if old is None:  # the broker deleted the dangling segment: nothing of it stays, nothing is said
        assert in_store is None and about_old == set()
    elif old.state == COPY_STARTED:  # it stays: still reported, with whatever files stay
        assert about_old == {"copy-not-finished"} | ({"leaked-files"} if in_store else set())
    else:  # a delete the shutdown cut short
        assert about_old == {"delete-not-finished"}
    others = [f for f in found if f["segmentId"] != seg_id]
    for f in others:  # only a copy the clean shutdown cut short, started after the restart
        seg = pa.replay.segments[f["segmentId"]]
        assert f["kind"] in ("copy-not-finished", "leaked-files") and seg.started_ms >= killed_at, f
    assert code == (1 if found else 0)
    state = old.state if old else "deleted"
    print(f"restart left {seg_id} {state}, files {'kept' if in_store else 'gone'}: {sorted(about_old)}")
