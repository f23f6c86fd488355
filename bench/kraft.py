"""KRaft metadata record decoding throughput: values alone, and the whole `dump-log` path.

    python bench/kraft.py                  # 1 M-record __cluster_metadata log, 3 runs each
    python bench/kraft.py --quick          # 100 k records, 1 run: a smoke run
    python bench/kraft.py --json           # the result as JSON on stdout (progress on stderr)
    python bench/kraft.py --check          # exit 1 when C decoding of values is below 1 M records/s
    python bench/kraft.py --baseline TREE  # also the decoded dump of another checkout (before/after)

Target: decode at least 1 M metadata records/s in one process. Two generated logs of N records (100
records a batch, uncompressed, cached in bench/.data/): `controller` is the mix of an active cluster's
controller (NoOpRecord heartbeats, partition and broker registration changes, topics, partitions,
configs, features, at their current versions); `every-type` cycles through every record type and
version of the schemas with random fields (arrays of 1-3 elements, nested structs): the heavy case.

Measured, each in a child process pinned to one CPU, warm page cache:
* values alone: `decode_metadata_record(value)` over the values already read from the log, with the
  C interpreter and with the pure-Python one (`decode_metadata_record_py`, on a tenth of the values);
* the whole path: `ktool dump-log --cluster-metadata-decoder --json --jobs 1 FILE > /dev/null` (read,
  CRC, records, decode, JSON Lines), next to `ktool dump-log --deep-iteration --json
  --no-cluster-metadata-decoder --jobs 1` on the same file (the same dump with values left as text): the
  peer measured in the same run. No KRaft-aware peer tool exists on this machine (the Kafka here is
  0.9.0.1, which predates KRaft), so the ratio is against ktool's own plain dump.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/kraft.py`: make `bench`, `tests` and ktool importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.decode import data_dir, log, pick_cpu, pin_cpu, warm_page_cache  # noqa: E402

TARGET = 1_000_000
PER_BATCH = 100
MIXES = ("controller", "every-type")


def _pool(mix: str) -> list[bytes]:
    """Distinct record values the log cycles through (built by the tests' encoder, from the schemas)."""
    from tests.format import kraft_encoder as enc

    schemas = enc.load_schemas()
    if mix == "every-type":
        return enc.sample_values(schemas, 5000, seed=11)
    rng = random.Random(5)

    def uuid() -> str:
        return enc.base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")

    brokers = [uuid() for _ in range(6)]
    topics = [(f"topic-{i}", uuid()) for i in range(200)]
    f = enc.frame
    out = []
    for i in range(5000):
        r = rng.random()
        name, tid = rng.choice(topics)
        isr = rng.sample(range(6), 3)
        if r < 0.55:
            out.append(f(schemas["NoOpRecord"], 0, {}))
        elif r < 0.75:
            change = {"partitionId": rng.randrange(50), "topicId": tid, "isr": isr, "leader": isr[0]}
            out.append(f(schemas["PartitionChangeRecord"], 0, change))
        elif r < 0.87:
            s = schemas["BrokerRegistrationChangeRecord"]
            out.append(
                f(s, 2, {"brokerId": rng.randrange(6), "brokerEpoch": i, "fenced": rng.choice([0, 1])})
            )
        elif r < 0.92:
            part = {
                "partitionId": rng.randrange(50),
                "topicId": tid,
                "replicas": isr,
                "isr": isr,
                "removingReplicas": [],
                "addingReplicas": [],
                "leader": isr[0],
                "leaderEpoch": rng.randrange(100),
                "partitionEpoch": rng.randrange(100),
                "directories": [rng.choice(brokers) for _ in isr],
            }
            out.append(f(schemas["PartitionRecord"], 1, part))
        elif r < 0.95:
            out.append(f(schemas["TopicRecord"], 0, {"name": name, "topicId": tid}))
        elif r < 0.98:
            config = {"resourceType": 2, "resourceName": name, "name": "retention.ms", "value": "604800000"}
            out.append(f(schemas["ConfigRecord"], 0, config))
        elif r < 0.99:
            out.append(f(schemas["FeatureLevelRecord"], 0, {"name": "metadata.version", "featureLevel": 20}))
        else:
            b = rng.randrange(6)
            reg = {
                "brokerId": b,
                "isMigratingZkBroker": False,
                "incarnationId": brokers[b],
                "brokerEpoch": i,
                "endPoints": [
                    {"name": "PLAINTEXT", "host": f"broker-{b}", "port": 9092, "securityProtocol": 0}
                ],
                "features": [
                    {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 20}
                ],
                "rack": None,
                "fenced": True,
                "inControlledShutdown": False,
                "logDirs": [uuid()],
            }
            out.append(f(schemas["RegisterBrokerRecord"], 3, reg))
    return out


def generate(mix: str, records: int) -> Path:
    """bench/.data/kraft-<mix>-<N>/__cluster_metadata-0/00000000000000000000.log (built once)."""
    from tests.format import kraft_encoder as enc

    path = data_dir() / f"kraft-{mix}-{records}" / "__cluster_metadata-0" / "00000000000000000000.log"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    pool = _pool(mix)
    log(f"generating {path} ({records} records)")
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        for base in range(0, records, PER_BATCH):
            n = min(PER_BATCH, records - base)
            values = [pool[(base + i) % len(pool)] for i in range(n)]
            out.write(enc.batch(base, [(None, v) for v in values]))
    tmp.rename(path)
    return path


def _values(path: Path) -> list[bytes]:
    from kafka_tools.format.record_batch import RecordBatch
    from kafka_tools.format.segment import iter_log_entries

    return [r.value for e in iter_log_entries(path) if isinstance(e, RecordBatch) for r in e.records()]


def child_values(path: Path, impl: str, runs: int) -> dict:
    """Time decoding of the values alone in this (pinned) process."""
    from kafka_tools.format.kraft import decoder

    values = _values(path)
    if impl == "python":
        values = values[: len(values) // 10]
        decode = decoder.decode_metadata_record_py
    else:
        assert decoder.HAS_SPEEDUPS, "the C extension is not built"
        decode = decoder.decode_metadata_record
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        for v in values:
            decode(v)
        times.append(time.perf_counter() - t)
    return {"records": len(values), "seconds": statistics.median(times)}


def run_child(path: Path, impl: str, runs: int, cpu: int | None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(path), impl, str(runs)]
    cmd += ["--cpu", str(cpu)] if cpu is not None else []
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def time_dump(path: Path, args: list[str], runs: int, cpu: int | None, tree: Path | None = None) -> float:
    """Median wall seconds of the dump; `tree`: the ktool of another checkout (its kafka_tools run
    from its own directory, the C extension built there), for a before/after in the same run."""
    ktool = [
        sys.executable,
        "-m",
        "kafka_tools",
        "dump-log",
        "--jobs",
        "1",
        "--no-progress",
        *args,
        str(path),
    ]
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        ktool = ["taskset", "-c", str(cpu), *ktool]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        done = subprocess.run(
            ktool,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tree,
            env=None if tree is None else {**os.environ, "PYTHONPATH": str(tree)},
        )
        times.append(time.perf_counter() - t)
        if done.returncode != 0:
            raise SystemExit(f"dump-log failed ({done.returncode}): {done.stderr[-500:]}")
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument(
        "--baseline",
        type=Path,
        metavar="TREE",
        help="also time the decoded dump with the ktool of this checkout (e.g. `git worktree add` of an "
        "earlier commit, extension built with `python setup.py build_ext --inplace`)",
    )
    ap.add_argument("--child", nargs=3, metavar=("PATH", "IMPL", "RUNS"), help=argparse.SUPPRESS)
    ap.add_argument("--cpu", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        pin_cpu(args.cpu)
        print(json.dumps(child_values(Path(args.child[0]), args.child[1], int(args.child[2]))))
        return 0
    if args.quick:
        args.records, args.runs = 100_000, 1
    cpu = pick_cpu()
    result: dict = {"records": args.records, "cpu": cpu, "mixes": {}}
    for mix in MIXES:
        path = generate(mix, args.records)
        warm_page_cache(path)
        row: dict = {"file": str(path), "bytes": path.stat().st_size}
        for impl in ("c", "python"):
            r = run_child(path, impl, args.runs, cpu)
            row[f"values_{impl}"] = round(r["records"] / r["seconds"])
        for name, dump_args in (
            ("dump_decoded", ["--cluster-metadata-decoder", "--json"]),
            ("dump_plain", ["--deep-iteration", "--json", "--no-cluster-metadata-decoder"]),
        ):
            row[name] = round(args.records / time_dump(path, dump_args, args.runs, cpu))
        row["dump_ratio"] = round(row["dump_decoded"] / row["dump_plain"], 2)
        if args.baseline is not None:
            decoded_args = ["--cluster-metadata-decoder", "--json"]
            seconds = time_dump(path, decoded_args, args.runs, cpu, args.baseline.resolve())
            row["dump_decoded_baseline"] = round(args.records / seconds)
            row["baseline_speedup"] = round(row["dump_decoded"] / row["dump_decoded_baseline"], 2)
        result["mixes"][mix] = row
        log(
            f"{mix:>10}: values C {row['values_c']:>10,}/s  values Python {row['values_python']:>8,}/s  "
            f"dump-log decoded {row['dump_decoded']:>8,}/s  plain {row['dump_plain']:>8,}/s "
            f"({row['dump_ratio']}x)"
            + (
                f"  baseline decoded {row['dump_decoded_baseline']:>8,}/s "
                f"({row['baseline_speedup']}x faster now)"
                if args.baseline is not None
                else ""
            )
        )
    if args.json:
        print(json.dumps(result))
    missed = [name for name, m in result["mixes"].items() if m["values_c"] < TARGET]
    met = not missed
    log(
        f"target {TARGET:,} records/s (values, C): "
        + ("met on every mix" if met else f"MISSED on {', '.join(missed)}")
    )
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
