"""`ktool metadata`'s replay speed: build the image of a generated 100 k-record `__cluster_metadata`
log, next to the floor of merely reading the same records with kafka-python (no metadata decoding), in
the same run. Target: the image in under 1 s.

    python bench/kraft_image.py              # 100 000 records, 5 runs
    python bench/kraft_image.py --records 1000000 --runs 3 --json

The log is written with the tests' schema-driven encoder (tests/format/kraft_encoder.py, independent
of ktool's decoder) and cached in bench/.data: a cluster of 6 brokers registering and unfencing, 2 000
topics of 6 partitions with their configs, then leader and ISR changes, config changes, broker
fencing, NoOps and a few topic deletions until the count is reached; batches of up to 50 records.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as `python bench/kraft_image.py`: make `bench`, `tests` importable
    sys.path.insert(0, str(ROOT))

from bench.decode import data_dir, format_table, log  # noqa: E402

TARGET_SECONDS = 1.0
BROKERS = 6
TOPICS = 2000
PARTITIONS = 6
PER_BATCH = 50


def _uuid(rng: random.Random) -> str:
    import base64

    return base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")


def generate(path: Path, records: int, seed: int = 19) -> None:
    """The log described in the module's docstring, written as one segment."""
    from tests.format.kraft_encoder import batch, frame, load_schemas

    schemas = load_schemas()
    rng = random.Random(seed)
    values: list[bytes] = []

    def add(name: str, version: int, fields: dict) -> None:
        values.append(frame(schemas[name], version, fields))

    add("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 21})
    epochs = {}
    for b in range(BROKERS):
        epochs[b] = 100 + b
        add(
            "RegisterBrokerRecord",
            3,
            {
                "brokerId": b,
                "isMigratingZkBroker": False,
                "incarnationId": _uuid(rng),
                "brokerEpoch": epochs[b],
                "endPoints": [
                    {"name": "PLAINTEXT", "host": f"kafka{b}", "port": 9092, "securityProtocol": 0}
                ],
                "features": [
                    {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}
                ],
                "rack": f"r{b % 3}",
                "fenced": True,
                "inControlledShutdown": False,
                "logDirs": [_uuid(rng)],
            },
        )
        add("UnfenceBrokerRecord", 0, {"id": b, "epoch": epochs[b]})
    topics: dict[str, dict[int, list[int]]] = {}
    for t in range(TOPICS):
        if len(values) >= records:
            break
        tid = _uuid(rng)
        add("TopicRecord", 0, {"name": f"topic-{t}", "topicId": tid})
        topics[tid] = {}
        for p in range(PARTITIONS):
            replicas = rng.sample(range(BROKERS), 3)
            topics[tid][p] = replicas
            add(
                "PartitionRecord",
                1,
                {
                    "partitionId": p,
                    "topicId": tid,
                    "replicas": replicas,
                    "isr": replicas,
                    "removingReplicas": [],
                    "addingReplicas": [],
                    "leader": replicas[0],
                    "leaderEpoch": 0,
                    "partitionEpoch": 0,
                    "directories": [_uuid(rng) for _ in replicas],
                },
            )
        add(
            "ConfigRecord",
            0,
            {"resourceType": 2, "resourceName": f"topic-{t}", "name": "retention.ms", "value": "86400000"},
        )
    ids = list(topics)
    while len(values) < records:
        roll = rng.random()
        tid = rng.choice(ids)
        p = rng.randrange(PARTITIONS)
        replicas = topics[tid][p]
        if roll < 0.45:
            add(
                "PartitionChangeRecord", 0, {"partitionId": p, "topicId": tid, "isr": rng.sample(replicas, 2)}
            )
        elif roll < 0.7:
            add(
                "PartitionChangeRecord",
                0,
                {"partitionId": p, "topicId": tid, "leader": rng.choice(replicas), "isr": replicas},
            )
        elif roll < 0.8:
            add(
                "ConfigRecord",
                0,
                {
                    "resourceType": 2,
                    "resourceName": "topic-1",
                    "name": "segment.ms",
                    "value": str(rng.randrange(10**6)),
                },
            )
        elif roll < 0.85:
            b = rng.randrange(BROKERS)
            add(
                "BrokerRegistrationChangeRecord",
                2,
                {"brokerId": b, "brokerEpoch": epochs[b], "fenced": rng.choice((1, -1))},
            )
        else:
            add("NoOpRecord", 0, {})
    with open(path, "wb") as f:
        for i in range(0, len(values), PER_BATCH):
            f.write(batch(i, [(None, v) for v in values[i : i + PER_BATCH]]))


def kafka_python_read(segment: Path) -> int:
    """The floor: every batch CRC-checked and every record read by kafka-python, nothing decoded."""
    from kafka.record import MemoryRecords

    records = MemoryRecords(segment.read_bytes())
    count = 0
    while True:
        b = records.next_batch()
        if b is None:
            return count
        b.validate_crc()
        for r in b:
            count += r.value is not None
    return count


def ktool_image(log_dir: Path) -> int:
    from kafka_tools.metadata.load import load_image

    load = load_image(log_dir)
    assert not load.all_findings and not load.replayer.inconsistencies, load.all_findings[:3]
    return sum(load.replayer.applied.values())


def timed(fn, arg, runs: int) -> tuple[float, float, int]:
    """(median wall seconds, median CPU seconds of this process, result). On a busy machine the CPU
    time is what the work costs; the wall time includes waiting for a core."""
    wall, cpu, result = [], [], 0
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn(arg)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args()
    log_dir = data_dir() / f"kraft-{args.records}"
    segment = log_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    if not segment.exists():
        log(f"generating {args.records} metadata records in {segment} …")
        segment.parent.mkdir(parents=True, exist_ok=True)
        generate(segment, args.records)
    ktool_image(log_dir)  # warm: imports, page cache
    image_wall, image_s, applied = timed(ktool_image, log_dir, args.runs)
    read_wall, read_s, read = timed(kafka_python_read, segment, args.runs)
    assert applied == read == args.records, (applied, read)
    result = {
        "records": args.records,
        "bytes": segment.stat().st_size,
        "ktoolImageSeconds": round(image_wall, 4),
        "ktoolImageCpuSeconds": round(image_s, 4),
        "ktoolImageRecordsPerSecond": round(args.records / image_s),
        "kafkaPythonReadSeconds": round(read_wall, 4),
        "kafkaPythonReadCpuSeconds": round(read_s, 4),
        "imageVsKafkaPythonRead": round(read_s / image_s, 2),
        "targetSeconds": TARGET_SECONDS,
        "met": image_s < TARGET_SECONDS,
    }
    if args.json:
        print(json.dumps(result))
    else:
        rows = [
            [
                "ktool metadata image (decode + replay)",
                f"{image_s:.3f}",
                f"{image_wall:.3f}",
                f"{args.records / image_s:,.0f}",
            ],
            [
                "kafka-python: read the records only",
                f"{read_s:.3f}",
                f"{read_wall:.3f}",
                f"{args.records / read_s:,.0f}",
            ],
        ]
        for line in format_table(["", "CPU s (median)", "wall s", "records/CPU s"], rows):
            print(line)
        print(
            f"image of {args.records:,} records in {image_s:.3f} s of CPU "
            f"({'meets' if result['met'] else 'MISSES'} the {TARGET_SECONDS:.0f} s target); "
            f"{result['imageVsKafkaPythonRead']}x kafka-python's mere read"
        )
    return 1 if args.check and not result["met"] else 0


if __name__ == "__main__":
    sys.exit(main())
