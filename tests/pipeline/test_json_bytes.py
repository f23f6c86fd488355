"""Non-ASCII names are the same bytes wherever ktool writes them as JSON: the CLI's --json lines and
`ktool scan`'s metadata table (its `fields` column and its JSON table files) share one encoder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_tools.pipeline import ScanOptions, plan_scan
from kafka_tools.pipeline.local import scan_in_process
from tests.format import kraft_encoder as enc
from tests.support.cli import run_ktool

pytestmark = pytest.mark.skipif(not enc.SCHEMA_DIR.is_dir(), reason="the KRaft schemas are absent")

NAME = "zahlungen-€-日本"


def _metadata_log(root: Path) -> Path:
    schemas = enc.load_schemas()
    topic = enc.frame(schemas["TopicRecord"], 0, {"name": NAME, "topicId": "JiPG0GbKRRqpJrShexbMfw"})
    part = root / "logs" / "__cluster_metadata-0"
    part.mkdir(parents=True)
    log = part / "00000000000000000000.log"
    log.write_bytes(enc.batch(0, [(None, topic)]))
    return log


def test_a_non_ascii_topic_name_is_the_same_bytes_from_the_cli_and_the_pipeline(tmp_path: Path) -> None:
    log = _metadata_log(tmp_path)
    result = run_ktool("dump-log", "--deep-iteration", "--json", str(log))
    assert result.exit_code == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith('{"type":"record"')]
    assert f'"name":"{NAME}"' in line  # UTF-8 as is, no \u escapes
    assert line.endswith("}}}")  # the record's value ends it, the value's data ends that
    cli_data = line.split('"data":', 1)[1][: -len("}}")]

    out = tmp_path / "out"
    options = ScanOptions(out=str(out), fmt="json", cluster_metadata=True)
    scan_in_process(plan_scan([log.parent.parent]), options)
    files = sorted((out / "metadata").glob("part-*.json"))
    assert files
    (row,) = [json.loads(line) for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    assert row["fields"] == cli_data  # the same text, byte for byte
    assert NAME.encode() in b"".join(f.read_bytes() for f in files)  # the table file: UTF-8 as is too
