"""A log dir written by a real Kafka 4.4.0 broker, for the benches that must measure the broker's framing.

    python bench/broker_data.py            # make it once (about a minute), then print what it holds
    python bench/broker_data.py --show     # print what the cached set holds (made if missing)

The set mirrors what producers and a broker write, so a bench on it measures what a user's dump-log meets:
one topic a codec (none, gzip, snappy, lz4, zstd: the topic's `compression.type` is `producer`, the
producer compresses), two partitions each, written by confluent-kafka (librdkafka) producers with their
defaults (`linger.ms` 5, `batch.size` 1 MB, so a batch is what accumulated in 5 ms, cut by the per-partition
queue) through a combined KRaft node of tests/support/modern.py: partition 0 by an idempotent producer,
partition 1 by a transactional one (a commit every 1,000 records, so COMMIT control batches sit among the
data; one transaction in 20 aborted). Records: keys of 8-36 bytes (3 % null), JSON-like values of
60-1,400 bytes (most 200-600: a log line or an event), 0-3 headers; `segment.bytes` 4 MiB, so each
partition rolls several segments. The broker is stopped cleanly and its data dir moved whole to
`$KTOOL_CACHE/bench-broker-4.4.0` (~/.cache/ktool), outside the work tree; a later run reuses it.
`summary()` reads the batch sizes, codecs and record sizes from the files themselves (ktool's decoder).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/broker_data.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.modern import KAFKA_4, ModernCluster, create_topic  # noqa: E402
from tests.support.servers import cache_dir  # noqa: E402

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS_PER_PARTITION = 20_000
TX_SIZE = 1_000
SEED = 51


def data_root() -> Path:
    return cache_dir() / f"bench-broker-{KAFKA_4.version}"


def log_files(root: Path | None = None) -> list[Path]:
    """Every `.log` of the set's topic partitions, in partition then offset order."""
    root = root or data_root()
    return sorted(p for p in root.glob("bench-*/*.log"))


def _value(rng: random.Random, n: int) -> bytes:
    size = int(min(1400, max(60, rng.lognormvariate(5.9, 0.6))))  # median ~365 bytes
    head = json.dumps(
        {"id": n, "user": f"u{rng.randrange(10**6)}", "event": rng.choice(("view", "buy", "click"))}
    )
    body = "".join(
        rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 ") for _ in range(max(0, size - len(head) - 12))
    )
    return (head[:-1] + f', "msg": "{body}"}}').encode()


def _records(rng: random.Random, count: int):
    for n in range(count):
        key = None if rng.random() < 0.03 else f"key-{rng.randrange(10 ** rng.randrange(2, 30))}".encode()
        headers = [(f"h{i}", f"v{rng.randrange(1000)}".encode()) for i in range(rng.choice((0, 0, 1, 2, 3)))]
        yield key, _value(rng, n), headers


def _produce(bootstrap: str, topic: str, codec: str, transactional: bool, rng: random.Random) -> None:
    from confluent_kafka import Producer

    conf = {
        "bootstrap.servers": bootstrap,
        "compression.type": codec,
        "enable.idempotence": True,
        "linger.ms": 5,
    }
    if transactional:
        conf["transactional.id"] = f"bench-{topic}-{uuid.uuid4().hex[:6]}"
    producer = Producer(conf)
    partition = 1 if transactional else 0
    if transactional:
        producer.init_transactions(60)
        producer.begin_transaction()
    for n, (key, value, headers) in enumerate(_records(rng, RECORDS_PER_PARTITION), 1):
        while True:
            try:
                producer.produce(topic, value, key, partition=partition, headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        if transactional and n % TX_SIZE == 0:
            if rng.random() < 0.05:
                producer.abort_transaction(60)
            else:
                producer.commit_transaction(60)
            producer.begin_transaction()
    if transactional:
        producer.commit_transaction(60)
    if producer.flush(60):
        raise SystemExit(f"{topic}-{partition}: records not delivered")


def make(root: Path) -> Path:
    """Start a 4.4.0 broker, produce the set, stop the broker cleanly and move its data dir to `root`."""
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="ktool-bench-broker-") as tmp:
        cluster = ModernCluster(KAFKA_4, "combined", Path(tmp), properties={"log.segment.bytes": 4 << 20})
        with cluster:
            for codec in CODECS:
                topic = f"bench-{codec}"
                create_topic(cluster, topic, partitions=2, config={"compression.type": "producer"})
                for transactional in (False, True):
                    _produce(cluster.bootstrap, topic, codec, transactional, rng)
                    print(
                        f"  {topic}-{int(transactional)}: {RECORDS_PER_PARTITION:,} records", file=sys.stderr
                    )
        partial = root.with_name(root.name + ".part")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(cluster.nodes[0].log_dir, partial)
        partial.rename(root)
    return root


def ensure() -> list[Path]:
    root = data_root()
    if not root.is_dir():
        print(f"making the broker-written set in {root} (Kafka {KAFKA_4.version}) ...", file=sys.stderr)
        make(root)
    return log_files(root)


def summary(files: list[Path]) -> dict:
    """What the files hold, read with ktool's decoder: how the set mirrors a broker's log."""
    from kafka_tools.format.compression import Codec
    from kafka_tools.format.record_batch import RecordBatch
    from kafka_tools.format.segment import iter_log_entries

    codecs: Counter[str] = Counter()
    per_batch: list[int] = []
    batch_bytes: list[int] = []
    key_sizes: list[int] = []
    value_sizes: list[int] = []
    headers: Counter[int] = Counter()
    control = transactional = 0
    for path in files:
        for batch in iter_log_entries(path):
            if not isinstance(batch, RecordBatch):
                raise SystemExit(f"{path}: {batch!r} (a broker-written set holds v2 batches only)")
            if batch.is_control:
                control += 1
                continue
            transactional += batch.is_transactional
            codecs[Codec(batch.codec).label] += 1
            per_batch.append(batch.records_count)
            batch_bytes.append(batch.size)
            for rec in batch.records():
                key_sizes.append(-1 if rec.key is None else len(rec.key))
                value_sizes.append(len(rec.value or b""))
                headers[len(rec.headers)] += 1

    def spread(values: list[int]) -> str:
        q = statistics.quantiles(values, n=10)
        return (
            f"median {statistics.median(values):,.0f}, p10 {q[0]:,.0f}, p90 {q[-1]:,.0f}, max {max(values):,}"
        )

    return {
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "records": len(value_sizes),
        "data_batches": len(per_batch),
        "control_batches": control,
        "transactional_batches": transactional,
        "codecs": dict(codecs),
        "records_a_batch": spread(per_batch),
        "batch_bytes": spread(batch_bytes),
        "value_bytes": spread(value_sizes),
        "key_bytes": spread([k for k in key_sizes if k >= 0]),
        "null_keys": sum(k < 0 for k in key_sizes),
        "headers_a_record": dict(sorted(headers.items())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show", action="store_true", help="print what the cached set holds")
    ap.parse_args(argv)
    files = ensure()
    for key, value in summary(files).items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
