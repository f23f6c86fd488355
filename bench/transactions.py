"""`ktool transactions find-hanging` on a log dir of 1,000 partitions with producer snapshots and 50
`__transaction_state` partitions: the audit replays only what follows each snapshot (the active
segment, as the broker loads it), target under 2 s on one core; the replay from each log start is
measured beside it.

    python bench/transactions.py [--partitions 1000] [--runs 3] [--check]

Each partition: a closed segment of 200 transactional batches (5 producers, committed and aborted
transactions, 10 records each), a producer snapshot at the next segment's base offset, and an active
segment of 20 batches, the last transaction left open. How it mirrors a broker's files: as a
transactional producer writes them, v2 batches of a few records (10, no codec) with producer id, epoch
and sequences, each COMMIT/ABORT marker a one-record control batch the coordinator writes: 220 batches
and 1,300 records a partition, 1.3 million records in all (220,000 batches). The log dir is generated
once under bench/.data/ (or $KTOOL_BENCH_DIR). The time is the CLI's wall time under `taskset -c 0`,
best of runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.transactions.files import ABORT, COMMIT, T0, Log, snapshot, txn_value  # noqa: E402

PRODUCERS = 5
TXN_PARTITIONS = 50


def data_dir() -> Path:
    return Path(os.environ.get("KTOOL_BENCH_DIR", ROOT / "bench" / ".data"))


def _partition(root: Path, n: int) -> None:
    part = root / f"orders-{n}"
    part.mkdir()
    seq = dict.fromkeys(range(PRODUCERS), 0)
    old, last = Log(), {}
    for b in range(200):
        pid = b % PRODUCERS
        if b // PRODUCERS % 2 == 0:
            old.txn(1000 + pid, 0, seq[pid], n=10, ts=T0 + b)
            seq[pid] += 10
            last[pid] = old.next_offset - 1
        else:
            old.end(1000 + pid, 0, COMMIT if b % 3 else ABORT, 0, ts=T0 + b)
    base = old.next_offset
    (part / "00000000000000000000.log").write_bytes(bytes(old.data))
    entries = [(1000 + p, 0, seq[p] - 1, last[p], 9, T0 + 199, 0, -1) for p in range(PRODUCERS)]
    (part / f"{base:020d}.snapshot").write_bytes(snapshot(entries))
    new = Log(next_offset=base)
    for b in range(20):
        pid = b % PRODUCERS
        new.txn(1000 + pid, 0, seq[pid], n=10, ts=T0 + 1000 + b)
        seq[pid] += 10
    (part / f"{base:020d}.log").write_bytes(bytes(new.data))


def build(root: Path, partitions: int) -> Path:
    from kafka_tools.transactions.coordinator import partition_for

    marker = root / f"built-{partitions}"
    if marker.exists():
        return root / "logs"
    shutil.rmtree(root, ignore_errors=True)
    logs = root / "logs"
    logs.mkdir(parents=True)
    (logs / "meta.properties").write_text("version=0\nbroker.id=0\n")
    for n in range(partitions):
        _partition(logs, n)
    coordinators = [Log() for _ in range(TXN_PARTITIONS)]
    for n in range(partitions * PRODUCERS // 5):
        tid = f"app-{n}"
        log = coordinators[partition_for(tid, TXN_PARTITIONS)]
        log.state(tid, txn_value(1000 + n, 0, "Ongoing", {"orders": [n % partitions]}))
        log.state(tid, txn_value(1000 + n, 0, "PrepareCommit", {"orders": [n % partitions]}))
        log.state(tid, txn_value(1000 + n, 0, "CompleteCommit", None))
    for k, log in enumerate(coordinators):
        log.write(logs, f"__transaction_state-{k}")
    marker.write_text("")
    return logs


def _wall(args: list[str], runs: int) -> tuple[float, float]:
    """Best wall and best CPU (user + system) seconds of the CLI over `runs`."""
    cmd = ["taskset", "-c", "0", sys.executable, "-m", "kafka_tools", "transactions", *args]
    wall = cpu = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = min(wall, time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr}")
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="exit 1 when the 2 s target is missed")
    opts = ap.parse_args()
    logs = build(data_dir() / "transactions", opts.partitions)
    common = ["find-hanging", "--json", "--transaction-partitions", str(TXN_PARTITIONS), str(logs)]
    snap, snap_cpu = _wall(common, opts.runs)
    full, full_cpu = _wall(["find-hanging", "--from-start", *common[1:]], opts.runs)
    print(f"partitions {opts.partitions}, __transaction_state partitions {TXN_PARTITIONS}")
    print(f"find-hanging from snapshots: {snap:.2f} s wall, {snap_cpu:.2f} s CPU, one core (target < 2 s)")
    print(
        f"find-hanging from log start: {full:.2f} s wall, {full_cpu:.2f} s CPU ({full_cpu / snap_cpu:.1f}x)"
    )
    return 1 if opts.check and snap >= 2 else 0


if __name__ == "__main__":
    raise SystemExit(main())
