"""`__remote_log_metadata` decode and replay speed: N records written with the broker's framing (the
independent encoder of tests/format/kraft_encoder.py, from Kafka 4.4.0's schemas), one user partition's
segment life cycles (COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED,
DELETE_SEGMENT_FINISHED) with `--live` segments kept alive; then `ktool tiered audit`'s service timed on
one core, its peak memory measured.

How the data mirrors a broker's: TopicBasedRemoteLogMetadataManager's producer sends each event on its
own and waits for it, so a real 3.9.2 broker (LocalTieredStorage, tests/support/modern.py) wrote one
record a batch (166 of 177 batches; the largest held 13): the default `--per-batch 1` frames every
record alone, v2, uncompressed (the RLMM producer sets no codec), from an idempotent producer (a
producer id, epoch 0, sequences counting up), values of 90-130 bytes as the broker's events are.
`--per-batch 100` is the older, denser framing (kept so the two can be compared).

    python bench/tiered.py [--records 1000000] [--live 1000] [--per-batch 1] [--runs 3] [--no-pure]
                           [--json] [--check]

In the same run, as references: the floor (`walk`: the same batches walked, CRCs checked, every record
read into the audit's events, nothing replayed: what the audit pays before its replay) and the
pure-Python decoder (`KTOOL_PURE_PYTHON=1`, one run). The rows are CPU seconds of a fresh process
pinned to one core; `x walk` is audit / walk.

Target (issue 44): 1,000,000 records decoded and replayed in under 3 s on one core; memory bounded by
the live segments, not the records (`--check` exits 1 past 3 s or past 100 MiB peak RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = Path(os.environ.get("KTOOL_BENCH_DIR", ROOT / "bench" / ".data")) / "tiered"


PRODUCER_ID = 1000  # the RLMM producer is idempotent (Kafka's producer default since 3.0)


def framed(base_offset: int, values: list[bytes], sequence: int) -> bytes:
    """One v2 batch as the RLMM's idempotent producer writes it: no key, no codec, its producer id,
    epoch 0 and the batch's first sequence (CRC recomputed over them)."""
    import struct

    from tests.format.kraft_encoder import batch, recrc

    buf = bytearray(batch(base_offset, [(None, v) for v in values], epoch=0))
    struct.pack_into(">qhi", buf, 43, PRODUCER_ID, 0, sequence)
    return recrc(buf)


def build(records: int, live: int, per_batch: int = 1) -> Path:
    from kafka_tools.format.remote_log_partitioner import metadata_partition
    from tests.support.tiered import COPY_FINISHED, DELETE_FINISHED, DELETE_STARTED, Metadata, kafka_uuid

    root = DATA / f"{records}-{live}-{per_batch}"
    meta = Metadata("orders", kafka_uuid(7))
    number = metadata_partition(meta.topic_id, 0)
    log = root / "kafka-logs" / f"__remote_log_metadata-{number}" / "00000000000000000000.log"
    if log.is_file():
        return root / "kafka-logs"
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = 1_700_000_000_000
    with open(log.with_suffix(".tmp"), "wb") as out:
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
            while len(pending) >= per_batch:
                out.write(framed(offset, pending[:per_batch], offset))
                offset += per_batch
                del pending[:per_batch]
        if pending:
            out.write(framed(offset, pending, offset))
    log.with_suffix(".tmp").rename(log)
    return root / "kafka-logs"


def walk_once(log_dir: Path) -> None:
    """The floor: every batch and record of the metadata read by the audit's own walk, nothing
    replayed (format/batch_spans.py: checked batches in C, the rest by the Python walk; a span's
    records as events by format/remote_events.py, the fields of a segment's record read in C)."""
    from kafka_tools.format.batch_spans import Span, kept_spans
    from kafka_tools.format.record_batch import RecordBatch
    from kafka_tools.format.remote_events import span_events

    start = time.process_time()
    records = 0
    for log in sorted(log_dir.rglob("*.log")):
        for entry in kept_spans(log):
            if type(entry) is Span:
                buf, at, end, _ = entry
                while at < end:
                    events, at = span_events(buf, at, end)
                    records += len(events)
            elif isinstance(entry, RecordBatch):
                for r in entry.iter_records():
                    records += r.value is not None
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{cpu:.3f} {records} {peak:.0f} 0")


def run_once(log_dir: Path) -> None:
    """One audit in this process; prints seconds, records, and the peak RSS in MiB."""
    from kafka_tools.tiered.audit import audit

    start = time.process_time()
    report = audit([str(log_dir)], None, int(time.time() * 1000), 900_000)
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (pa,) = report.partitions
    print(f"{cpu:.3f} {report.records} {peak:.0f} {len(pa.replay.segments)}")


def child(mode: str, log_dir: Path, pure: bool = False) -> dict:
    """One fresh process pinned to core 0 (its peak RSS is its own)."""
    env = {**os.environ, "KTOOL_PURE_PYTHON": "1"} if pure else {**os.environ}
    if not pure:
        env.pop("KTOOL_PURE_PYTHON", None)
    out = subprocess.run(
        ["taskset", "-c", "0", sys.executable, __file__, mode, str(log_dir)],
        capture_output=True, text=True, check=True, env=env,
    ).stdout.split()  # fmt: skip
    return {"cpu_s": float(out[0]), "records": int(out[1]), "peak_rss_mib": int(out[2]), "live": int(out[3])}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=1000)
    parser.add_argument("--per-batch", type=int, default=1, help="records a batch (a broker writes 1)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-pure", action="store_true", help="skip the pure-Python reference run")
    parser.add_argument("--json", action="store_true", help="the result as one JSON object on stdout")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--once", type=str, help=argparse.SUPPRESS)
    parser.add_argument("--walk", type=str, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.once:
        run_once(Path(args.once))
        return 0
    if args.walk:
        walk_once(Path(args.walk))
        return 0
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    log_dir = build(args.records, args.live, args.per_batch)
    size = sum(p.stat().st_size for p in log_dir.rglob("*.log"))
    say(
        f"{args.records} records, {args.per_batch} a batch, {args.live} live segments, "
        f"{size / 2**20:.1f} MiB of metadata"
    )
    walks, audits = [], []
    for _ in range(args.runs):  # alternated: a burst of load touches both
        walks.append(child("--walk", log_dir))
        audits.append(child("--once", log_dir))
        a = audits[-1]
        rate = a["records"] / a["cpu_s"] / 1e6
        say(
            f"  audit {a['cpu_s']:.2f} s CPU ({rate:.2f} M records/s), peak RSS {a['peak_rss_mib']} MiB, "
            f"{a['live']} live; walk {walks[-1]['cpu_s']:.2f} s"
        )
    best = min(a["cpu_s"] for a in audits)
    floor = min(w["cpu_s"] for w in walks)
    peak = max(a["peak_rss_mib"] for a in audits)
    result = {
        "records": args.records,
        "live": args.live,
        "per_batch": args.per_batch,
        "metadata_mib": round(size / 2**20, 1),
        "audit_s": best,
        "walk_s": floor,
        "x_walk": round(best / floor, 2),
        "peak_rss_mib": peak,
        "pure_s": None,
    }
    if not args.no_pure:
        result["pure_s"] = child("--once", log_dir, pure=True)["cpu_s"]
    say(f"best {best:.2f} s (target < 3 s a million records), {best / floor:.2f}x the walk ({floor:.2f} s)")
    if result["pure_s"] is not None:
        say(f"pure Python {result['pure_s']:.2f} s: the C table is {result['pure_s'] / best:.1f}x faster")
    if args.json:
        print(json.dumps(result))
    missed = best * 1_000_000 / args.records >= 3.0 or peak > 100
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
