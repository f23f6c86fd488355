"""Every command run with `--json` on fixtures, as data: the contract test (tests/cli/test_json_contract.py)
validates every line these runs print. A new command is one entry in OFFLINE_RUNS or ZOOKEEPER_RUNS.

Each run is (command, argv builder); the builder gets a :class:`Place` (fixtures copied where a run may
change them) and returns the arguments after `ktool`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.independent import FIXTURES

GENERATED = FIXTURES / "generated"
KAFKA09 = FIXTURES / "kafka-0.9.0.1" / "logdir"


@dataclass
class Place:
    """Where a run's inputs are: a scratch directory, a KRaft log dir, a ZooKeeper connect string."""

    tmp: Path
    zookeeper: str | None = None

    def copy(self, source: Path, name: str | None = None) -> Path:
        target = self.tmp / "copies" / (name or source.name)
        if not target.exists():
            shutil.copytree(source, target)
        return target

    def kraft(self) -> Path:
        """A KRaft log dir: a snapshot, the metadata log, and partition directories of topic orders."""
        from tests.metadata.kraft_log import ORDERS, SNAPSHOT_AT, partition_dir, write_log_dir

        root = self.tmp / "kraft"
        if not root.exists():
            d = write_log_dir(root, snapshot_at=SNAPSHOT_AT, node_id=2)
            partition_dir(d, "orders-0", ORDERS)
            partition_dir(d, "orders-1", ORDERS)
        return next(root.glob("**/__cluster_metadata-0")).parent

    def transactions(self) -> Path:
        """A log dir with a committed, an ongoing and a hanging transaction, and their coordinator."""
        from tests.transactions.files import hanging_log_dir

        root = self.tmp / "transactions"
        return root / "logs" if root.exists() else hanging_log_dir(root)

    def zk(self) -> list[str]:
        assert self.zookeeper is not None
        return ["--zookeeper", self.zookeeper]


Run = tuple[str, Callable[[Place], list[str]]]


def _log(generation: str, partition: str) -> str:
    return str(GENERATED / generation / partition / "00000000000000000000.log")


def _applied_truncate(p: Place) -> list[str]:
    return ["truncate", "--json", "--backup-dir", str(p.tmp / "backups"), str(p.copy(_corrupt()))]


def _undo_truncate(p: Place) -> list[str]:
    from tests.support.script import run_script

    part = p.copy(_corrupt(), "undo-0")
    backups = p.tmp / "undo-backups"
    assert run_script("truncate", "--backup-dir", str(backups), str(part)).returncode == 0
    (manifest,) = backups.glob("*/manifest.json")
    return ["truncate", "--json", "--undo", str(manifest)]


def _corrupt() -> Path:
    return GENERATED / "corrupt" / "v2-trailing-garbage-0"


def _bad_log() -> str:
    return str(GENERATED / "corrupt/v2-trailing-garbage-0/00000000000000000000.log")


def _several(command: str) -> Callable[[Place], list[str]]:
    """`command` on a good partition, damaged ones and a path that is not there."""
    extra = {"truncate": ["--dry-run"], "validate": ["--deep"]}.get(command, [])

    def build(p: Place) -> list[str]:
        bad = [GENERATED / "corrupt" / n for n in ("v2-flipped-record-byte-0", "v2-trailing-garbage-0")]
        good = GENERATED / "v2/none-0"
        return [command, "--json", *extra, str(good), *map(str, bad), str(p.tmp / "gone-0")]

    return build


def _tiered_audit(p: Place) -> list[str]:
    """A tiered partition with a finished copy, a copy stopped an hour ago and its leaked files."""
    import time

    from kafka_tools.format.remote_log_partitioner import metadata_partition
    from tests.support.tiered import Metadata, kafka_uuid, write_metadata, write_store

    now = int(time.time() * 1000) - 3_600_000
    meta = Metadata("orders", kafka_uuid(1))
    meta.copied(kafka_uuid(2), 0, 9, now, size=10)
    meta.add(kafka_uuid(3), 10, 19, now)
    write_metadata(p.tmp / "tiered", metadata_partition(meta.topic_id, 0), meta.values)
    write_store(p.tmp / "store", "orders", 0, meta.topic_id, {kafka_uuid(2): (0, 10), kafka_uuid(3): (10, 5)})
    return ["tiered", "audit", "--json", str(p.tmp / "tiered"), "--remote-dir", str(p.tmp / "store")]


OFFLINE_RUNS: list[Run] = [
    ("dump-log", lambda p: ["dump-log", "--json", _log("v2", "none-0")]),
    ("dump-log", lambda p: ["dump-log", "--json", "--deep", "--print-data-log", _log("v2", "gzip-0")]),
    (
        "dump-log",
        lambda p: ["dump-log", "--json", "--deep", "--print-data-log", _log("v2", "transactions-0")],
    ),
    ("dump-log", lambda p: ["dump-log", "--json", "--deep", "--print-data-log", _log("v1", "gzip-0")]),
    ("dump-log", lambda p: ["dump-log", "--json", "--print-data-log", _log("v0", "none-0")]),
    (
        "dump-log",
        lambda p: ["dump-log", "--json", "--deep", *map(str, sorted(GENERATED.glob("kafka07/events-0/*")))],
    ),
    (
        "dump-log",
        lambda p: [
            "dump-log",
            "--json",
            "--deep",
            str(GENERATED / "kafka07/compressed-0/00000000000000000000.kafka"),
        ],
    ),
    (
        "dump-log",
        lambda p: [
            "dump-log",
            "--json",
            "--deep",
            "--print-data-log",
            str(KAFKA09 / "__consumer_offsets-0/00000000000000000000.log"),
        ],
    ),
    (
        "dump-log",
        lambda p: ["dump-log", "--json", *map(str, sorted((GENERATED / "v2/transactions-0").iterdir()))],
    ),
    ("dump-log", lambda p: ["dump-log", "--json", *map(str, sorted((GENERATED / "v2").glob("*checkpoint")))]),
    ("dump-log", lambda p: ["dump-log", "--json", str(GENERATED / "v2/meta.properties")]),
    ("dump-log", lambda p: ["dump-log", "--json", *map(str, sorted(GENERATED.glob("corrupt/v2-*/*.log")))]),
    ("dump-log", lambda p: ["dump-log", "--json", *map(str, sorted(GENERATED.glob("corrupt/snapshot-*/*")))]),
    (
        "dump-log",
        lambda p: [
            "dump-log",
            "--json",
            "--deep",
            *map(str, sorted(p.kraft().glob("__cluster_metadata-0/*"))),
        ],
    ),
    ("validate", lambda p: ["validate", "--json", str(GENERATED / "v2")]),
    (
        "replicas diff",
        lambda p: [
            "replicas",
            "diff",
            "--json",
            "--records",
            str(KAFKA09 / "gzip-0"),
            str(p.copy(KAFKA09, "replica") / "gzip-0"),
        ],
    ),  # fmt: skip
    ("validate", lambda p: ["validate", "--json", "--deep", str(GENERATED / "corrupt"), str(KAFKA09)]),
    ("tiered audit", _tiered_audit),
    ("truncate", lambda p: ["truncate", "--json", "--dry-run", str(GENERATED / "corrupt")]),
    ("truncate", _applied_truncate),
    ("truncate", _undo_truncate),
    ("read", lambda p: ["read", "--json", "--earliest", str(GENERATED / "v2/gzip-0")]),
    ("read", lambda p: ["read", "--json", "--offset", "3", "-n", "4", str(GENERATED / "v1/snappy-0")]),
    ("read", lambda p: ["read", "--json", "--earliest", "-n", "5", str(GENERATED / "kafka07/events-0")]),
    ("offsets-at", lambda p: ["offsets-at", "--json", str(GENERATED / "v2"), str(KAFKA09)]),
    ("offsets-at", lambda p: ["offsets-at", "--json", "--time", "max-timestamp", str(GENERATED / "v2")]),
    ("retention", lambda p: ["retention", "--json", "--compaction", str(GENERATED / "v2"), str(KAFKA09)]),
    ("metadata show", lambda p: ["metadata", "show", "--json", str(p.kraft())]),
    ("metadata topics", lambda p: ["metadata", "topics", "--json", str(p.kraft())]),
    ("metadata brokers", lambda p: ["metadata", "brokers", "--json", str(p.kraft())]),
    ("metadata diff", lambda p: ["metadata", "diff", "--json", "--from-offset", "0", str(p.kraft())]),
    ("metadata check", lambda p: ["metadata", "check", "--json", str(p.kraft())]),
    # Several paths in one invocation, bad ones among them: one stream, one summary, every kind documented.
    *[(command, _several(command)) for command in ("validate", "retention", "offsets-at", "truncate")],
    ("dump-log", lambda p: ["dump-log", "--json", _log("v2", "none-0"), str(p.tmp / "gone.log"), _bad_log()]),
    ("read", lambda p: ["read", "--json", "--earliest", str(GENERATED / "corrupt/v2-flipped-record-byte-0")]),
    ("replicas diff", lambda p: ["replicas", "diff", "--json", str(KAFKA09 / "gzip-0"), str(p.tmp / "gone")]),
    ("transactions list", lambda p: ["transactions", "list", "--json", str(p.transactions())]),
    ("transactions describe", lambda p: ["transactions", "describe", "--json", str(p.transactions())]),
    (
        "transactions find-hanging",
        lambda p: ["transactions", "find-hanging", "--json", "--now", "2030-01-01", str(p.transactions())],
    ),
]


ZOOKEEPER_RUNS: list[Run] = [
    ("brokers", lambda p: ["brokers", "--json", *p.zk()]),
    ("topics", lambda p: ["topics", "--json", *p.zk()]),
    ("cluster-id", lambda p: ["cluster-id", "--json", *p.zk()]),
    ("kraft-migration check", lambda p: ["kraft-migration", "check", "--json", *p.zk()]),
    ("kraft-migration diff", lambda p: ["kraft-migration", "diff", "--json", *p.zk(), str(p.kraft())]),
    ("groups list", lambda p: ["groups", "list", "--json", *p.zk()]),
    ("groups describe", lambda p: ["groups", "describe", "--json", *p.zk()]),
    ("groups rebalance-plan", lambda p: ["groups", "rebalance-plan", "billing", "--json", *p.zk()]),
    ("groups watch", lambda p: ["groups", "watch", "--once", "--all", "--json", *p.zk()]),
    ("groups delete", lambda p: ["groups", "delete", "billing", "--dry-run", "--json", *p.zk()]),
]
