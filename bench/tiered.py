"""`__remote_log_metadata` decode and replay speed: N records written with the broker's framing (the
independent encoder of tests/format/kraft_encoder.py, from Kafka 4.4.0's schemas), in v2 batches of
100 like the RLMM producer's, one user partition's segment life cycles (COPY_SEGMENT_STARTED,
COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED) with `--live` segments kept
alive; then `ktool tiered audit`'s service timed on one core, its peak memory measured.

    python bench/tiered.py [--records 1000000] [--live 1000] [--runs 3]

Target (issue 44): 1,000,000 records decoded and replayed in under 3 s on one core; memory bounded by
the live segments, not the records.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = Path(os.environ.get("KTOOL_BENCH_DIR", ROOT / "bench" / ".data")) / "tiered"


def build(records: int, live: int) -> Path:
    from kafka_tools.format.remote_log_partitioner import metadata_partition
    from tests.format.kraft_encoder import batch
    from tests.support.tiered import COPY_FINISHED, DELETE_FINISHED, DELETE_STARTED, Metadata, kafka_uuid

    root = DATA / f"{records}-{live}"
    meta = Metadata("orders", kafka_uuid(7))
    number = metadata_partition(meta.topic_id, 0)
    log = root / "kafka-logs" / f"__remote_log_metadata-{number}" / "00000000000000000000.log"
    if log.is_file():
        return root / "kafka-logs"
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = 1_700_000_000_000
    with open(log, "wb") as out:
        offset, seg = 0, 0
        pending: list[bytes] = []
        alive: list[str] = []
        while offset + len(pending) < records:
            seg_id = kafka_uuid(1000 + seg)
            meta.values.clear()
            meta.copied(seg_id, seg * 100, seg * 100 + 99, t0 + seg, epochs={0: seg * 100}, size=1 << 20)
            alive.append(seg_id)
            if len(alive) > live:  # retention deletes the oldest
                old = alive.pop(0)
                meta.update(old, DELETE_STARTED, t0 + seg)
                meta.update(old, DELETE_FINISHED, t0 + seg)
            assert COPY_FINISHED
            pending += meta.values
            seg += 1
            while len(pending) >= 100:
                out.write(batch(offset, [(None, v) for v in pending[:100]]))
                offset += 100
                del pending[:100]
        if pending:
            out.write(batch(offset, [(None, v) for v in pending]))
    return root / "kafka-logs"


def run_once(log_dir: Path) -> None:
    """One audit in this process; prints seconds, records, and the peak RSS in MiB."""
    from kafka_tools.tiered.audit import audit

    start = time.process_time()
    report = audit([str(log_dir)], None, int(time.time() * 1000), 900_000)
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (pa,) = report.partitions
    print(f"{cpu:.3f} {report.records} {peak:.0f} {len(pa.replay.segments)}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--once", type=str, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.once:
        run_once(Path(args.once))
        return 0
    log_dir = build(args.records, args.live)
    size = sum(p.stat().st_size for p in log_dir.rglob("*.log"))
    print(f"{args.records} records, {args.live} live segments, {size / 2**20:.1f} MiB of metadata")
    best = None
    for _ in range(args.runs):  # a fresh process each: its peak RSS is the audit's
        out = subprocess.run(
            ["taskset", "-c", "0", sys.executable, __file__, "--once", str(log_dir)],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        cpu, records, peak, live = float(out[0]), int(out[1]), int(out[2]), int(out[3])
        rate = records / cpu / 1e6
        print(f"  decode+replay {cpu:.2f} s CPU ({rate:.2f} M records/s), peak RSS {peak} MiB, {live} live")
        best = cpu if best is None else min(best, cpu)
    print(f"best {best:.2f} s (target < 3 s for 1,000,000 records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
