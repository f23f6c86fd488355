"""`ktool retention` against a second, independent reading of Kafka's delete policy, on random partitions.

The reference below is written from the Scala sources, shaped like them (LogManager.cleanupLogs /
Log.deleteOldSegments for 0.8-0.10.0; Log.deleteOldSegments + deletableSegments + deleteSegments for
0.10.1+), and imports nothing from ktool. Hypothesis draws segments (sizes, largest timestamps, mtimes,
an empty active segment sometimes), the limits, the policy, the generation, the high watermark and the
log start offset; the partition is written as real files (v2 batches from kafka-python, `.timeindex`,
checkpoints) and `ktool retention --json` must delete exactly the reference's segments, with the same
new log start offset and roll.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.support.cli import run_ktool

NOW = 1_800_000_000_000
MIN = 60_000
VERSIONS = {
    "0.9.0.1": "mtime",
    "0.10.2": "ts",
    "0.11.0.0": "ts-lso",
    "2.8": "ts-hw",
    "3.7": "ts-hw-lso-first",
}


@dataclass
class Seg:
    base: int
    count: int
    size: int
    largest_ts: int
    mtime: int


def reference(segs, version, now, retention_ms, retention_bytes, policy, hw, lso):
    """(deleted bases, new log start offset, rolled) as the broker of `version` would decide."""
    kind = VERSIONS[version]
    log_end = segs[-1].base + segs[-1].count
    segments = list(segs)
    deleted: list[int] = []
    state = {"log_start": segs[0].base, "rolled": False}
    if kind in ("ts-lso", "ts-hw", "ts-hw-lso-first") and lso is not None:
        state["log_start"] = max(state["log_start"], min(lso, log_end))
    uses_hw = kind in ("ts-hw", "ts-hw-lso-first")
    watermark = log_end if hw is None else min(hw, log_end)

    def take(predicate):
        nonlocal segments
        chosen = []
        for k, s in enumerate(segments):
            nxt = segments[k + 1] if k + 1 < len(segments) else None
            upper = nxt.base if nxt else log_end
            if uses_hw and watermark < upper:
                break
            if not predicate(s, nxt) or (nxt is None and s.size == 0):
                break
            chosen.append(s)
        if chosen:
            if len(chosen) == len(segments):
                segments = [Seg(log_end, 0, 0, -1, now)]  # roll()
                state["rolled"] = True
            else:
                segments = segments[len(chosen) :]
            deleted.extend(s.base for s in chosen)
            state["log_start"] = max(state["log_start"], segments[0].base)

    def by_time():
        if retention_ms < 0:
            return
        if kind == "mtime":
            take(lambda s, _n: now - s.mtime > retention_ms)
        else:
            take(lambda s, _n: now - (s.largest_ts if s.largest_ts >= 0 else s.mtime) > retention_ms)

    def by_size():
        total = sum(s.size for s in segments)
        if retention_bytes < 0 or total < retention_bytes:
            return
        diff = [total - retention_bytes]

        def should(s, _n):
            if diff[0] - s.size >= 0:
                diff[0] -= s.size
                return True
            return False

        take(should)

    def by_log_start():
        take(lambda _s, n: n is not None and n.base <= state["log_start"])

    deletes = "delete" in policy
    if kind == "mtime":
        if policy != "compact":
            by_time()
            by_size()
    else:
        steps = []
        if deletes:
            steps = [by_time, by_size]
        if kind == "ts-hw-lso-first":
            steps = [by_log_start, *steps]
        elif kind != "ts":
            steps = [*steps, by_log_start]
        for step in steps:
            step()
    return deleted, state["log_start"], state["rolled"]


def _batch(base: int, count: int, ts: int) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for i in range(count):
        b.append(i, timestamp=ts, key=b"k", value=b"v" * 20, headers=[])
    buf = b.build()
    struct.pack_into(">q", buf, 0, base)
    return bytes(buf)


@st.composite
def partitions(draw):
    n = draw(st.integers(1, 6))
    segs, base = [], 0
    for i in range(n):
        empty = i == n - 1 and draw(st.booleans()) and n > 1
        count = 0 if empty else draw(st.integers(1, 4))
        age = draw(st.sampled_from([0, 30, 90, 300])) * MIN
        mtime_age = draw(st.sampled_from([0, 30, 90, 300])) * MIN
        segs.append(Seg(base, count, 0, -1 if empty else NOW - age, NOW - mtime_age))
        base += count if count else 0
        if not empty:
            base += draw(st.integers(0, 2))  # gaps between segments, as compaction leaves them
    end = segs[-1].base + segs[-1].count
    return {
        "segs": segs,
        "version": draw(st.sampled_from(sorted(VERSIONS))),
        "retention_ms": draw(st.sampled_from([-1, 0, 60 * MIN, 200 * MIN])),
        "retention_bytes": draw(st.sampled_from([-1, 0, 150, 400, 10_000])),
        "policy": draw(st.sampled_from(["delete", "compact", "compact,delete"])),
        "hw": draw(st.one_of(st.none(), st.integers(0, end))),
        "lso": draw(st.one_of(st.none(), st.integers(0, end))),
    }


def _write(root: Path, case) -> Path:
    logs = root / "logs"
    part = logs / "p-0"
    part.mkdir(parents=True)
    for s in case["segs"]:
        data = _batch(s.base, s.count, s.largest_ts) if s.count else b""
        s.size = len(data)
        name = part / f"{s.base:020d}"
        Path(f"{name}.log").write_bytes(data)
        if s.count:
            Path(f"{name}.timeindex").write_bytes(struct.pack(">qi", s.largest_ts, s.count - 1))
        for suffix in (".log", ".timeindex"):
            if os.path.exists(f"{name}{suffix}"):
                os.utime(f"{name}{suffix}", (s.mtime / 1000, s.mtime / 1000))
    if case["hw"] is not None:
        (logs / "replication-offset-checkpoint").write_text(f"0\n1\np 0 {case['hw']}\n")
    if case["lso"] is not None:
        (logs / "log-start-offset-checkpoint").write_text(f"0\n1\np 0 {case['lso']}\n")
    (root / "server.properties").write_text(f"log.cleanup.policy={case['policy']}\n")
    return logs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(partitions())
def test_ktool_deletes_what_the_reference_deletes(case):
    with tempfile.TemporaryDirectory() as tmp:
        logs = _write(Path(tmp), case)
        result = run_ktool(
            "retention", "--json", "--now", str(NOW), "--broker-version", case["version"],
            "--retention-ms", str(case["retention_ms"]), "--retention-bytes", str(case["retention_bytes"]),
            "--server-properties", str(Path(tmp) / "server.properties"), str(logs),
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    part = next(o for o in lines if o["type"] == "partition")
    mine = [o["baseOffset"] for o in lines if o["type"] == "segment" and o["action"] == "delete"]
    deleted, log_start, rolled = reference(
        case["segs"], case["version"], NOW, case["retention_ms"], case["retention_bytes"], case["policy"],
        case["hw"], case["lso"],
    )  # fmt: skip
    event("segments deleted" if deleted else "nothing deleted")
    event("rolled" if rolled else "not rolled")
    assert mine == deleted, case
    assert (part["newLogStartOffset"], part["rolled"]) == (log_start, rolled), case
