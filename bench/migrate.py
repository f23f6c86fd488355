"""`ktool migrate-offsets --all-groups` at scale, against a real ZooKeeper 3.8 and a real Kafka 0.9.0.1.

Starts both servers (tests/support/servers.py, loopback only, temporary directories), creates a topic
with --partitions partitions and --messages messages in each, then writes --groups groups of ZooKeeper
offsets exactly as the old consumer lays them out (/consumers/G/offsets/T/P holding the decimal
offset), every offset inside the log. The znodes are created with kazoo transactions sent
asynchronously (one multi-op per group, many in flight), so the setup takes seconds.

Then it runs the real CLI in a subprocess, as a user would:

    python -m kafka_tools migrate-offsets --zookeeper ZK --bootstrap-server BS --all-groups --json

and reports its wall time, groups/s and offsets/s; checks that every partition of every group was
reported "verified"; reads a sample of groups back from Kafka with a real client (confluent-kafka
Consumer.committed: offset and commit metadata must be what ZooKeeper holds); and times a second run,
which must have nothing to write. Target: well under a minute for 1,000 groups x 10 partitions.

    python bench/migrate.py                      # 1000 groups x 10 partitions
    python bench/migrate.py --groups 100 --partitions 4
    python bench/migrate.py --json               # the result as JSON on stdout
    python bench/migrate.py --check              # exit 1 when the run misses --target-seconds (60)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/migrate.py`: make `tests` (and ktool) importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.servers import (  # noqa: E402
    KafkaBroker,
    ZooKeeperServer,
    kafka_committed,
    key_for_partition,
)

TOPIC = "bench"
GROUP_PREFIX = "bench-"
IN_FLIGHT = 256  # kazoo transactions outstanding at once


def log(msg: str) -> None:
    print(f"[migrate-bench] {msg}", file=sys.stderr, flush=True)


def offset_of(group: int, partition: int, messages: int) -> int:
    """A deterministic offset inside the log 0..messages, different across groups and partitions."""
    return (group * 7 + partition * 13) % (messages + 1)


def group_name(i: int) -> str:
    return f"{GROUP_PREFIX}{i:05d}"


def produce(broker: KafkaBroker, partitions: int, messages: int) -> None:
    lines = []
    for p in range(partitions):
        key = key_for_partition(p, partitions)
        lines += [f"{key}:{TOPIC}-{p}-{n}" for n in range(messages)]
    broker.produce(TOPIC, lines, key_separator=":", acks=1)


def create_offsets(zk, groups: int, partitions: int, messages: int) -> None:
    """Every group's /consumers/G/offsets/T/P znodes, one transaction per group, IN_FLIGHT at a time."""
    zk.ensure_path("/consumers")
    pending = []
    for g in range(groups):
        base = f"/consumers/{group_name(g)}"
        tx = zk.transaction()
        for path in (base, f"{base}/offsets", f"{base}/offsets/{TOPIC}"):
            tx.create(path, b"")
        for p in range(partitions):
            tx.create(f"{base}/offsets/{TOPIC}/{p}", str(offset_of(g, p, messages)).encode())
        pending.append((g, tx.commit_async()))
        if len(pending) >= IN_FLIGHT:
            _settle(pending)
    _settle(pending)


def _settle(pending: list) -> None:
    for g, result in pending:
        outcome = result.get(timeout=60)
        failed = [r for r in outcome if isinstance(r, Exception)]
        if failed:
            raise RuntimeError(f"creating the offsets of {group_name(g)}: {failed[0]!r}")
    pending.clear()


def run_ktool(connect: str, bootstrap: str, journal_dir: Path) -> tuple[float, int, list[dict], str]:
    cmd = [sys.executable, "-m", "kafka_tools", "migrate-offsets", "--zookeeper", connect]
    cmd += ["--bootstrap-server", bootstrap, "--all-groups", "--json", "--journal-dir", str(journal_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KTOOL_")}
    env["XDG_CONFIG_HOME"] = str(journal_dir / "no-config")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return wall, proc.returncode, rows, proc.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=1000, help="consumer groups (default 1000)")
    ap.add_argument("--partitions", type=int, default=10, help="partitions of the topic (default 10)")
    ap.add_argument("--messages", type=int, default=50, help="messages per partition (default 50)")
    ap.add_argument("--sample", type=int, default=50, help="groups read back from Kafka (default 50)")
    ap.add_argument("--target-seconds", type=float, default=60.0, help="the target (default 60)")
    ap.add_argument("--no-second-run", action="store_true", help="skip the idempotent second run")
    ap.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    ap.add_argument("--check", action="store_true", help="exit 1 when the first run misses the target")
    args = ap.parse_args(argv)
    if args.groups < 1 or args.partitions < 1 or args.messages < 1:
        ap.error("--groups, --partitions and --messages must be at least 1")

    from kazoo.client import KazooClient

    work = Path(tempfile.mkdtemp(prefix="ktool-bench-migrate-"))
    result: dict = {
        "groups": args.groups,
        "partitions": args.partitions,
        "offsets": args.groups * args.partitions,
        "cpus": os.cpu_count(),
    }
    try:
        with ZooKeeperServer() as zk_server:
            connect = f"{zk_server.connect_string}/bench"
            log(f"ZooKeeper on {zk_server.connect_string}; starting Kafka 0.9.0.1")
            with KafkaBroker(connect, 0, properties={"auto.create.topics.enable": "false"}) as broker:
                broker.create_topic(TOPIC, partitions=args.partitions)
                produce(broker, args.partitions, args.messages)
                zk = KazooClient(connect)
                zk.start(timeout=10)
                try:
                    t0 = time.perf_counter()
                    create_offsets(zk, args.groups, args.partitions, args.messages)
                    result["setupSeconds"] = round(time.perf_counter() - t0, 2)
                    log(f"{result['offsets']} offsets of {args.groups} groups in {result['setupSeconds']} s")

                    log("ktool migrate-offsets --all-groups …")
                    wall, code, rows, stderr = run_ktool(connect, broker.bootstrap, work / "journals")
                    statuses = Counter(r["status"] for r in rows if r.get("type") == "partition")
                    result.update(
                        exitCode=code,
                        seconds=round(wall, 2),
                        groupsPerSecond=round(args.groups / wall, 1),
                        offsetsPerSecond=round(args.groups * args.partitions / wall, 1),
                        statuses=dict(statuses),
                    )
                    complete = code == 0 and statuses == Counter({"verified": args.groups * args.partitions})
                    result["allVerified"] = complete
                    if not complete:
                        log(f"exit {code}, statuses {dict(statuses)}; stderr:\n{stderr[-3000:]}")

                    # A sample read back with a real client: offsets and metadata.
                    step = max(1, args.groups // max(1, args.sample))
                    sample = list(range(0, args.groups, step))[: args.sample]
                    tps = [(TOPIC, p) for p in range(args.partitions)]
                    bad = []
                    for g in sample:
                        got = kafka_committed(broker.bootstrap, group_name(g), tps)
                        want = {
                            (TOPIC, p): (offset_of(g, p, args.messages), "ktool-migrate")
                            for p in range(args.partitions)
                        }
                        if got != want:
                            bad.append(group_name(g))
                    result["sampleChecked"] = len(sample)
                    result["sampleMismatches"] = bad

                    if not args.no_second_run:
                        log("second run (nothing to write) …")
                        wall2, code2, rows2, _ = run_ktool(connect, broker.bootstrap, work / "journals2")
                        unchanged = Counter(r["status"] for r in rows2) == Counter(
                            {"unchanged": args.groups * args.partitions}
                        )
                        result.update(secondRunSeconds=round(wall2, 2), secondRunExit=code2,
                                      secondRunAllUnchanged=unchanged)  # fmt: skip
                finally:
                    zk.stop()
                    zk.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    result["target"] = args.target_seconds
    result["met"] = bool(
        result.get("allVerified")
        and not result.get("sampleMismatches")
        and result["seconds"] < args.target_seconds
    )
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_table(result)
    return 1 if args.check and not result["met"] else 0


def print_table(r: dict) -> None:
    rows = [
        ("groups x partitions", f"{r['groups']} x {r['partitions']} = {r['offsets']} offsets"),
        ("znodes created (kazoo, async)", f"{r['setupSeconds']} s"),
        ("migrate-offsets --all-groups", f"{r['seconds']} s  (exit {r['exitCode']})"),
        ("groups/s", f"{r['groupsPerSecond']}"),
        ("offsets/s", f"{r['offsetsPerSecond']}"),
        ("statuses", ", ".join(f"{n} {s}" for s, n in sorted(r["statuses"].items())) or "-"),
        (
            "sample read back from Kafka",
            f"{r['sampleChecked'] - len(r['sampleMismatches'])}/{r['sampleChecked']} ok",
        ),
    ]
    if "secondRunSeconds" in r:
        rows.append(
            ("second run (nothing to write)", f"{r['secondRunSeconds']} s  (exit {r['secondRunExit']}, "
             f"all unchanged: {r['secondRunAllUnchanged']})")
        )  # fmt: skip
    rows.append((f"target < {r['target']:g} s", "met" if r["met"] else "MISSED"))
    width = max(len(k) for k, _ in rows)
    print(f"{'':{width}}   ktool migrate-offsets, Kafka 0.9.0.1 + ZooKeeper 3.8, {r['cpus']} CPUs")
    for k, v in rows:
        print(f"{k:<{width}} | {v}")


if __name__ == "__main__":
    sys.exit(main())
