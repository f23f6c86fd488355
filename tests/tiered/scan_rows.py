"""The `metadata` table `ktool scan --cluster-metadata` writes for a log dir (in process, with pyarrow),
next to what `dump-log --json --deep-iteration` prints for the same `__remote_log_metadata` segments:
the two must agree record for record (the tiered tests' shared check)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.support.cli import run_ktool


def scan_metadata_rows(log_dir: Path, out: Path) -> list[dict]:
    import pyarrow.parquet as pq

    from kafka_tools.pipeline.local import scan_in_process
    from kafka_tools.pipeline.plan import ScanOptions, plan_scan

    plan = plan_scan([str(log_dir)])
    scan_in_process(plan, ScanOptions(out=str(out), cluster_metadata=True))
    return pq.read_table(str(out / "metadata")).to_pylist()


def assert_rows_are_dump_logs(rows: list[dict], log_dir: Path) -> int:
    """Every `__remote_log_metadata` row equals dump-log's record (type, version, state, data; bytes
    in base64 in the table, hex in dump-log); returns how many were compared."""
    remote = sorted(
        (r for r in rows if r["topic"] == "__remote_log_metadata"), key=lambda r: (r["file"], r["offset"])
    )
    expected = []
    for log in sorted(log_dir.glob("__remote_log_metadata-*/*.log")):
        result = run_ktool("dump-log", "--deep-iteration", "--json", str(log))
        for o in map(json.loads, result.stdout.splitlines()):
            if o.get("type") == "record":
                expected.append((str(log), o["offset"], o["value"]))
    assert len(remote) == len(expected) > 0
    for row, (file, offset, value) in zip(remote, expected, strict=True):
        assert (Path(row["file"]).resolve(), row["offset"]) == (Path(file).resolve(), offset)
        assert (row["record_type"], row["version"], row["state"], row["error"]) == (
            value["type"], value["version"], value.get("state"), None,
        )  # fmt: skip
        fields = json.loads(row["fields"])
        custom = fields.get("customMetadata")
        if custom is not None:
            fields["customMetadata"] = base64.b64decode(custom).hex()
        assert fields == value["data"]
    return len(remote)
