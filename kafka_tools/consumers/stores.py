"""The two offset stores as options, plans and journals name them, and the commit metadata ktool writes
with the offsets it commits to Kafka (to recognise its own commits later).

Apart from the services that use them, so that a command declares `--store`, `--from`, `--to` and
`--metadata` without importing the broker and ZooKeeper clients (`ktool groups delete --help`).
"""

from __future__ import annotations

ZK = "zookeeper"
KAFKA = "kafka"
FILE = "file"  # `ktool offsets import`: the offsets come from an export file
STORES = (ZK, KAFKA)

MIGRATE_METADATA = "ktool-migrate"  # migrate-offsets and offsets import
RESET_METADATA = "ktool-reset-offsets"  # groups reset-offsets
