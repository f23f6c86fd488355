"""`ktool validate` through CliRunner: exit codes a runbook can use, findings with positions, JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_tools.cli.main import cli
from tests.independent import FIXTURES, REALWORLD

GENERATED = FIXTURES / "generated"
CORRUPT = GENERATED / "corrupt"
MANIFEST = json.loads((CORRUPT / "manifest.json").read_text())["files"]
TAIL_KINDS = {
    "not-a-log",  # a text file named .log: the broker's recovery keeps 0 bytes of it, and so does truncate
    "truncated-header",
    "truncated-batch",
    "trailing-garbage",
    "trailing-zeros",
    "truncated-message",
}


def validate(*args: str) -> tuple[int, list[dict], str]:
    result = CliRunner().invoke(cli, ["validate", "--json", *args], catch_exceptions=False)
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def test_clean_trees_exit_zero() -> None:
    paths = [str(GENERATED / d) for d in ("v0", "v1", "v2", "kafka07")] + [
        str(FIXTURES / "kafka-0.9.0.1/logdir")
    ]
    if REALWORLD.is_dir():
        paths.append(str(REALWORLD))
    code, objs, _ = validate(*paths)
    summary = objs[-1]
    assert code == 0, [o for o in objs if o["type"] == "finding" and o["severity"] == "error"]
    assert summary["type"] == "summary" and summary["corrupt"] is False and summary["errors"] == 0
    # The fixtures alone: 24 partitions, 408 entries; ../shared/realworld adds more where it is present.
    assert summary["partitions"] >= 20 and summary["batches"] > (500 if REALWORLD.is_dir() else 400)


@pytest.mark.parametrize("name", sorted(n for n in MANIFEST if n.endswith((".log", ".kafka"))))
def test_each_corruption_is_found_where_it_is(name: str) -> None:
    spec = MANIFEST[name]
    code, objs, err = validate(str(CORRUPT / name))
    findings = [o for o in objs if o["type"] == "finding" and o["severity"] == "error"]
    summary = objs[-1]
    if spec["kind"] == "empty-file":
        assert code == 0 and not findings
        return
    assert code == 1, err
    positions = [f["position"] for f in findings]
    expected = spec["first_bad_position"]
    if spec["kind"] == "bad-compressed-payload":
        expected += 61  # reported where the records start: the batch's CRC is fine
    assert expected in positions
    assert summary["allRepairable"] is (spec["kind"] in TAIL_KINDS)


def test_crc_finding_says_expected_and_found() -> None:
    code, objs, _ = validate(str(CORRUPT / "v0-flipped-byte-0"))
    crc = next(o for o in objs if o["type"] == "finding" and o["kind"] == "crc-mismatch")
    assert crc["expected"] != crc["actual"]
    assert (crc["position"], crc["offset"]) == (971, 8)
    assert crc["repairable"] is False
    assert any(o["kind"] == "valid-data-after-damage" for o in objs if o["type"] == "finding")


def test_text_output_has_a_table_and_a_verdict() -> None:
    result = CliRunner().invoke(cli, ["validate", str(CORRUPT / "v2-trailing-garbage-0")])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ERROR ") and ":3767: truncated-entry" in lines[0]
    assert "(tail: truncate repairs)" in lines[0]
    assert any("v2-trailing-garbage-0" in line and "tail" in line for line in lines[1:])
    assert lines[-1].startswith("corrupt: 1 error, all in tails (100 bytes)")


def _copy(src: Path, tmp_path: Path, name: str = "logs") -> Path:
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def test_index_pointing_at_the_wrong_offset_is_found(tmp_path: Path) -> None:
    logs = _copy(GENERATED / "v2", tmp_path)
    index = logs / "segmented-0/00000000000000000050.index"
    data = bytearray(index.read_bytes())
    data[0:4] = (int.from_bytes(data[0:4], "big") + 1).to_bytes(4, "big")
    index.write_bytes(bytes(data))
    code, objs, _ = validate(str(logs / "segmented-0"))
    assert code == 1
    f = next(o for o in objs if o["type"] == "finding" and o["kind"] == "index-offset-mismatch")
    assert f["file"].endswith("00000000000000000050.index") and f["position"] == 0 and f["repairable"] is True


def test_gaps_stray_files_and_checkpoints_are_warnings(tmp_path: Path) -> None:
    logs = _copy(GENERATED / "v2", tmp_path)
    (logs / "cleaner-offset-checkpoint").unlink()  # not known to be compacted: a gap is suspicious
    (logs / "segmented-0/00000000000000000050.log").rename(
        logs / "segmented-0/00000000000000000050.log.deleted"
    )
    (logs / "segmented-0/00000000000000000099.index.swap").write_bytes(b"")
    cp = logs / "recovery-point-offset-checkpoint"
    cp.write_text(cp.read_text().replace("segmented 0 150", "segmented 0 999"))
    code, objs, _ = validate(str(logs))
    kinds = {(o["kind"], o["severity"]) for o in objs if o["type"] == "finding"}
    assert ("offset-gap", "warning") in kinds
    assert ("transient-file", "warning") in kinds
    assert ("orphan-file", "warning") in kinds  # the .index whose .log is now gone
    assert ("checkpoint-past-log-end", "warning") in kinds
    assert code == 0
    assert CliRunner().invoke(cli, ["validate", "--strict", str(logs)]).exit_code == 1


def test_gap_in_a_compacted_topic_is_information(tmp_path: Path) -> None:
    logs = _copy(GENERATED / "v2", tmp_path)
    (logs / "segmented-0/00000000000000000050.log").unlink()
    side = list((logs / "segmented-0").glob("00000000000000000050.*"))
    assert side
    for f in side:
        f.unlink()
    code, objs, _ = validate(str(logs))  # cleaner-offset-checkpoint lists segmented-0: it is compacted
    gap = next(o for o in objs if o["type"] == "finding" and o["kind"] == "offset-gap")
    assert gap["severity"] == "info" and "compacted" in gap["message"]
    assert code == 0


def test_unreadable_path_is_exit_3_in_one_line() -> None:
    result = CliRunner().invoke(cli, ["validate", "/nonexistent/logs"])
    assert result.exit_code == 3
    assert result.stderr.strip() == "ktool: /nonexistent/logs: no such file or directory"


def test_a_directory_without_kafka_data_is_exit_3(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(tmp_path)])
    assert result.exit_code == 3 and "no Kafka log directory" in result.stderr


@pytest.mark.parametrize("kind", ["dangling-link", "fifo"])
def test_a_segment_that_is_no_regular_file_is_exit_3_not_clean(tmp_path: Path, kind: str) -> None:
    """A segment linked into an unmounted disk (or a FIFO, which would block a reader) leaves the
    partition unchecked: saying "clean" would be wrong. (That the other partitions are still reported:
    tests/cli/test_runbook_exit_codes.py.)"""
    import os

    logs = _copy(FIXTURES / "kafka-0.9.0.1/logdir", tmp_path)
    segment = logs / "plain-0/00000000000000000000.log"
    segment.unlink()
    if kind == "fifo":
        os.mkfifo(segment)
    else:
        segment.symlink_to("/nonexistent/disk/00000000000000000000.log")
    result = CliRunner().invoke(cli, ["validate", str(logs)])
    what = (
        "a dangling symbolic link" if kind == "dangling-link" else "named as a segment but not a regular file"
    )
    assert (result.exit_code, result.stderr) == (
        3,
        f"ktool: {segment}: cannot be read: {what}\n",
    )
