"""The --json contract: every object a command writes, its fields and their JSON types, described once.

What scripts may rely on, in every command:
- one compact JSON object a line (no spaces: `grep '"kind":"crc-mismatch"'` works everywhere), each with
  a `type`;
- the stream ends with a `summary` object; stdout stays empty only when the command failed before it
  began (its one line on stderr says why);
- one shape per object kind across commands: a field two commands' objects of one `type` share has one
  JSON type; whatever names a partition says `topic` and `partition` (an integer), and, read from a
  log dir, `dir` (the directory's name, `orders-0`) and `path` (partition_fields); a count of errors is
  `errors`, of things that could not be read `unreadable`;
- the fields of each object are those below, of those JSON types (`int|null`: a number or null). A
  field in `optional` may be left out (a v0 message has no timestamp); an `open` object may carry more
  fields (an event's own data).

tests/cli/test_json_contract.py runs every command with --json on fixtures and checks every line here.
The kinds are described in render/kinds_logs.py (the commands that read log dirs) and
render/kinds_cluster.py (metadata, ZooKeeper, groups, transactions), each once; COMMAND_KINDS below says
which kinds each command writes.
"""

from __future__ import annotations

from kafka_tools.render.json_kinds import Kind, shape
from kafka_tools.render.kinds_cluster import (
    CLUSTER,
    CLUSTER_BROKER,
    DELETE_KINDS,
    GROUP_KINDS,
    METADATA_KINDS,
    MIGRATION_DIFF_KINDS,
    MOVE_KINDS,
    QUORUM_KINDS,
    TOPIC_PARTITION,
    TRANSACTIONS_KINDS,
    WATCH_KINDS,
)
from kafka_tools.render.kinds_logs import (
    BATCH,
    DUMP_SUMMARY,
    FILE,
    FILE_ERROR,
    FILE_SUMMARY,
    FINDING,
    MESSAGE,
    NOTE,
    OFFSETS_AT_KINDS,
    PROBLEM,
    READ_SUMMARY,
    RECORD,
    REPLICAS_KINDS,
    RETENTION_KINDS,
    SCAN_KINDS,
    SIDE_FILE_KINDS,
    TIERED_KINDS,
    TRUNCATE_KINDS,
    VALIDATE_PARTITION,
    VALIDATE_SUMMARY,
)

COMMAND_KINDS: dict[str, list[Kind]] = {
    "dump-log": [
        BATCH,
        RECORD,
        MESSAGE,
        PROBLEM,
        NOTE,
        FILE,
        FILE_SUMMARY,
        FILE_ERROR,
        DUMP_SUMMARY,
        *SIDE_FILE_KINDS,
    ],
    "read": [BATCH, RECORD, MESSAGE, NOTE, FILE_ERROR, READ_SUMMARY],
    "validate": [FINDING, VALIDATE_PARTITION, FILE_ERROR, VALIDATE_SUMMARY],
    "truncate": TRUNCATE_KINDS,
    "offsets-at": OFFSETS_AT_KINDS,
    "retention": RETENTION_KINDS,
    "metadata show": METADATA_KINDS,
    "metadata topics": [TOPIC_PARTITION, *(k for k in METADATA_KINDS if k.type != "partition")],
    "metadata brokers": METADATA_KINDS,
    "metadata diff": METADATA_KINDS,
    "metadata check": METADATA_KINDS,
    "brokers": [CLUSTER_BROKER, CLUSTER, shape("summary", "Brokers listed.", brokers="int")],
    "quorum": QUORUM_KINDS,
    "kraft-migration diff": MIGRATION_DIFF_KINDS,
    "kraft-migration check": [
        FINDING,
        shape(
            "summary",
            "Findings by severity; ready: nothing blocking or risky.",
            findings="int",
            errors="int",
            warnings="int",
            infos="int",
            ready="bool",
        ),
    ],
    "topics": [
        TOPIC_PARTITION,
        shape("summary", "Topics shown; names not found.", topics="int", partitions="int", missing="int"),
    ],
    "cluster-id": [CLUSTER, shape("summary", "The id was found.", clusterIds="int")],
    "groups list": GROUP_KINDS,
    "groups describe": GROUP_KINDS,
    "groups rebalance-plan": GROUP_KINDS,
    "groups watch": WATCH_KINDS,
    "groups reset-offsets": [*MOVE_KINDS, NOTE],
    "groups delete": DELETE_KINDS,
    "migrate-offsets": MOVE_KINDS,
    "offsets import": MOVE_KINDS,
    "scan": SCAN_KINDS,
    "replicas diff": REPLICAS_KINDS,
    "tiered audit": TIERED_KINDS,
    **TRANSACTIONS_KINDS,
}


def problems(command: str, lines: list[str]) -> list[str]:
    """Every way `lines` (a command's --json stdout) breaks the contract; empty when it keeps it."""
    import json

    from kafka_tools.compact_json import dumps  # the checker only: commands import no json module up front

    kinds = {k.type: k for k in COMMAND_KINDS[command]}
    out = []
    for n, line in enumerate(lines, start=1):
        try:
            obj = json.loads(line)
        except ValueError as exc:
            out.append(f"line {n}: not JSON: {exc}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            out.append(f"line {n}: not an object with a type")
            continue
        if dumps(obj) != line:
            out.append(f"line {n}: not compact JSON")
        kind = kinds.get(obj["type"])
        if kind is None:
            out.append(f"line {n}: {command} does not document objects of type {obj['type']!r}")
            continue
        out += [f"line {n}: {p}" for p in kind.problems(obj)]
        if kind.open:  # an open kind's extra fields still keep the one shape and the one count name
            if "problems" in obj:
                out.append(f"line {n}: {obj['type']}: a count of errors is named errors, not problems")
            if isinstance(obj.get("partition"), str):
                out.append(f"line {n}: {obj['type']}.partition: {obj['partition']!r} is not int")
    if lines and not lines[-1].startswith('{"type":"summary"'):
        out.append(f"{command}: the last line is not a summary")
    return out
