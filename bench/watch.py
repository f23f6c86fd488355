"""`ktool groups watch` latency on a 1,000-partition group under bursts of 20 joins and 20 leaves.

Starts a real ZooKeeper 3.8 (tests/support/servers.py, loopback, temporary directory) and writes, with
kazoo, what a Kafka 0.9 cluster and its ZooKeeper-based consumers write (tests/support/watch.py): a
broker, the controller, a topic with --partitions partitions, and --members simulated one-stream
members of one group owning their range-assignor share (``/consumers/G/ids/<id>`` ephemeral
registrations, ``/consumers/G/owners/T/P`` ephemeral nodes holding the thread id).

Then ``python -m kafka_tools groups watch G --json`` runs as a subprocess, read line by line, and each
of --rounds rounds does, as fast as kazoo can:

* a burst of --burst joins (registrations), then the rebalance they cause: every owner node that moves
  is deleted and re-created for its new thread, as the members do;
* the same members leaving (registrations deleted), and the rebalance back.

Measured: latency from the moment ZooKeeper acknowledged a change to the moment the event line was
read (``member-joined``/``member-left`` for each registration; ``rebalance-finished`` for the last
owner node of a rebalance): p50/p95/max. The peer in the same run is what operators do without the
watch: one ``ktool groups describe G --json`` poll of the same group (its wall time, median of 3).
Also the ZooKeeper watches the server holds (four-letter word ``wchs``; the bench's own client sets
none) after the start and at the end, and the watch process's resident memory (VmRSS, VmHWM).

    python bench/watch.py                      # 1000 partitions, 30 members + bursts of 20, 5 rounds
    python bench/watch.py --rounds 2 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/watch.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.servers import ZooKeeperServer  # noqa: E402
from tests.support.watch import ROOT, WatchProcess, create_topic, range_plan, register_broker, registration  # noqa: E402

GROUP = "bench"
TOPIC = "bench-topic"


def log(msg: str) -> None:
    print(f"[watch-bench] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def proc_memory(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) // 1024  # MiB
    return out


def server_watches(server: ZooKeeperServer) -> int:
    text = server.four_letter_word("wchs")  # "... watching N paths\nTotal watches:M"
    return int(text.rsplit("Total watches:", 1)[1].split()[0])


def rebalance(zk, old: dict, new: dict) -> float:
    """Move the owner nodes from `old` to `new` (deletes, then creates, all in flight at once); the time
    the last one was acknowledged."""
    base = f"/consumers/{GROUP}/owners/{TOPIC}"
    deletes = [zk.delete_async(f"{base}/{p}") for (_, p), o in old.items() if new.get((TOPIC, p)) != o]
    for d in deletes:
        d.get(timeout=60)
    creates = [
        zk.create_async(f"{base}/{p}", o.encode(), ephemeral=True)
        for (_, p), o in new.items()
        if old.get((TOPIC, p)) != o
    ]
    for c in creates:
        c.get(timeout=60)
    return time.time()


def finished_with(members: int):
    return lambda e: e["event"] == "rebalance-finished" and len(e["members"]) == members


def describe_poll(connect: str) -> float:
    times = []
    for _ in range(3):
        t0 = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "kafka_tools",
                "groups",
                "describe",
                GROUP,
                "--zookeeper",
                connect,
                "--json",
            ],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--members", type=int, default=30, help="members before the bursts")
    ap.add_argument("--burst", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from kazoo.client import KazooClient

    with ZooKeeperServer() as server:
        zk = KazooClient(server.connect_string)
        zk.start(timeout=10)
        register_broker(zk, 0)
        create_topic(zk, TOPIC, args.partitions)
        zk.create("/controller", b'{"version":1,"brokerid":0,"timestamp":"1"}')
        base = [f"{GROUP}_m{i:03d}" for i in range(args.members)]
        for m in base:
            zk.create(f"/consumers/{GROUP}/ids/{m}", registration({TOPIC: 1}), makepath=True, ephemeral=True)
        zk.ensure_path(f"/consumers/{GROUP}/owners/{TOPIC}")
        owners = range_plan(base, TOPIC, args.partitions)
        rebalance(zk, {}, owners)
        log(f"{args.partitions} partitions, {args.members} members; starting the watch")
        watch = WatchProcess(GROUP, "--zookeeper", server.connect_string, "--json", "--grace", "60")
        joins: list[float] = []
        rebalances: list[float] = []
        try:
            watch.event("member-joined", timeout=60, member=base[-1])
            time.sleep(1.0)
            watches_start = server_watches(server)
            for r in range(args.rounds):
                burst = [f"{GROUP}_r{r}x{i:02d}" for i in range(args.burst)]
                acked = {}
                pending = []
                for m in burst:
                    path = f"/consumers/{GROUP}/ids/{m}"
                    pending.append((m, zk.create_async(path, registration({TOPIC: 1}), ephemeral=True)))
                for m, result in pending:
                    result.get(timeout=60)
                    acked[m] = time.time()
                new = range_plan(base + burst, TOPIC, args.partitions)
                last = rebalance(zk, owners, new)
                owners = new
                seen = {}
                while len(seen) < len(burst):
                    e = watch.event("member-joined", timeout=60)
                    seen[e["member"]] = e["_readAt"]
                joins += [seen[m] - acked[m] for m in burst]
                done = watch.expect(
                    "rebalance finished",
                    finished_with(len(base) + len(burst)),
                    60,
                )
                rebalances.append(max(0.0, done["_readAt"] - last))
                # the burst leaves again
                acked = {}
                pending = [(m, zk.delete_async(f"/consumers/{GROUP}/ids/{m}")) for m in burst]
                for m, result in pending:
                    result.get(timeout=60)
                    acked[m] = time.time()
                new = range_plan(base, TOPIC, args.partitions)
                last = rebalance(zk, owners, new)
                owners = new
                seen = {}
                while len(seen) < len(burst):
                    e = watch.event("member-left", timeout=60)
                    seen[e["member"]] = e["_readAt"]
                joins += [seen[m] - acked[m] for m in burst]
                done = watch.expect(
                    "rebalance finished",
                    finished_with(len(base)),
                    60,
                )
                rebalances.append(max(0.0, done["_readAt"] - last))
                log(f"round {r + 1}: join/leave p50 {pct(joins, 0.5) * 1000:.0f} ms")
            watches_end = server_watches(server)
            memory = proc_memory(watch.proc.pid)
        finally:
            watch.kill()
        poll = describe_poll(server.connect_string)
        zk.stop()
        zk.close()

    ms = lambda v: round(v * 1000, 1)  # noqa: E731
    result = {
        "partitions": args.partitions,
        "members": f"{args.members}..{args.members + args.burst}",
        "rounds": args.rounds,
        "memberEventMs": {
            "n": len(joins),
            "p50": ms(pct(joins, 0.5)),
            "p95": ms(pct(joins, 0.95)),
            "max": ms(max(joins)),
        },
        "rebalanceFinishedMs": {
            "n": len(rebalances),
            "p50": ms(pct(rebalances, 0.5)),
            "p95": ms(pct(rebalances, 0.95)),
            "max": ms(max(rebalances)),
        },
        "describePollMs": ms(poll),
        "pollOverWatchP50": round(poll / max(pct(joins, 0.5), 1e-6), 1),
        "zkWatches": {"start": watches_start, "end": watches_end},
        "watchMemoryMiB": memory,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
