"""What a runbook relies on, through the installed console script: one unreadable file does not hide
the other partitions, and every exit code is the one the README's table promises."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.independent import FIXTURES
from tests.support.script import run_script

GENERATED = FIXTURES / "generated"
# Dozens of fresh interpreters (the console script, one per check): the slow tier, not the fast one.
pytestmark = pytest.mark.slow


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(params=["dangling-link", "fifo"])
def log_dir_with_unreadable_segment(tmp_path: Path, request) -> tuple[Path, Path]:
    """A log dir where plain-0's segment is a dangling link (or a FIFO) and, beside it, a partition
    with a corrupt tail."""
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "kafka-0.9.0.1/logdir", logs)
    shutil.copytree(GENERATED / "corrupt/v2-trailing-garbage-0", logs / "v2-trailing-garbage-0")
    segment = logs / "plain-0/00000000000000000000.log"
    segment.unlink()
    if request.param == "fifo":
        os.mkfifo(segment)
    else:
        segment.symlink_to("/nonexistent/disk/00000000000000000000.log")
    return logs, segment


def test_validate_reports_every_partition_and_exits_3(log_dir_with_unreadable_segment) -> None:
    logs, segment = log_dir_with_unreadable_segment
    text = run_script("validate", str(logs), timeout=60)
    assert text.returncode == 3
    what = "a dangling symbolic link" if segment.is_symlink() else "named as a segment but not a regular file"
    assert f"ERROR {segment}: unreadable-file: cannot be read: {what}" in text.stdout
    assert "v2-trailing-garbage-0/00000000000000000000.log:3767: truncated-entry" in text.stdout
    rows = {line.split("|")[0].strip(): line.split("|")[-1].strip() for line in text.stdout.splitlines()}
    assert rows["plain-0"] == "unreadable" and rows["v2-trailing-garbage-0"] == "tail"
    assert rows["gzip-0"] == "clean" and rows["segmented-0"] == "clean"
    assert text.stdout.splitlines()[-1].startswith("incomplete: 1 file could not be read (exit 3)")
    assert text.stderr == f"ktool: {segment}: cannot be read: {what}\n"
    assert "orphan" not in text.stdout  # the index of the unreadable segment is not a stray file

    js = run_script("validate", "--json", str(logs), timeout=60)
    assert js.returncode == 3
    objs = json_lines(js.stdout)
    kinds = {(o["file"], o["kind"]) for o in objs if o["type"] == "finding"}
    assert (str(segment), "unreadable-file") in kinds
    assert (str(logs / "v2-trailing-garbage-0/00000000000000000000.log"), "truncated-entry") in kinds
    partitions = {o["dir"]: o["status"] for o in objs if o["type"] == "partition"}
    assert len(partitions) == 7 and partitions["plain-0"] == "unreadable"
    assert objs[-1]["type"] == "summary" and objs[-1]["unreadable"] == 1 and objs[-1]["errors"] == 1


def test_truncate_dry_run_plans_every_other_partition_and_exits_3(log_dir_with_unreadable_segment) -> None:
    logs, segment = log_dir_with_unreadable_segment
    result = run_script("truncate", "--dry-run", str(logs), timeout=60)
    assert result.returncode == 3
    assert "v2-trailing-garbage-0: the broker's recovery would:" in result.stdout
    assert "gzip-0: nothing to do" in result.stdout
    assert result.stdout.endswith("dry run: nothing changed\n")
    assert result.stderr.splitlines() == [
        f"ktool: {segment}: "
        + (
            "a dangling symbolic link"
            if segment.is_symlink()
            else "named as a segment but not a regular file"
        )
        + "; plain-0 left unchanged"
    ]
    js = run_script("truncate", "--dry-run", "--json", str(logs), timeout=60)
    assert js.returncode == 3
    objs = json_lines(js.stdout)
    assert {o["dir"] for o in objs if o["type"] == "plan"} >= {"v2-trailing-garbage-0", "gzip-0"}
    assert [o["dir"] for o in objs if o["type"] == "unreadable"] == ["plain-0"]


def test_truncate_of_a_missing_path_or_dangling_link_is_one_line_exit_3(tmp_path: Path) -> None:
    missing = run_script("truncate", "--dry-run", str(tmp_path / "nope"))
    assert (missing.returncode, missing.stderr) == (
        3,
        f"ktool: {tmp_path / 'nope'}: no such file or directory\n",
    )
    link = tmp_path / "orders-0"
    link.symlink_to(tmp_path / "unmounted")
    dangling = run_script("truncate", str(link))
    assert (dangling.returncode, dangling.stderr) == (3, f"ktool: {link}: a dangling symbolic link\n")
    assert missing.stdout == dangling.stdout == ""


def test_dump_log_of_a_directory_is_one_line_exit_3() -> None:
    result = run_script("dump-log", str(GENERATED / "v2"))
    assert result.returncode == 3
    assert result.stderr.splitlines() == [
        f"ktool: {GENERATED / 'v2'}: is a directory "
        "(dump-log decodes files; `ktool validate` reads directories)"
    ]


def test_an_empty_offset_range_is_a_usage_error() -> None:
    segment = GENERATED / "v2/none-0/00000000000000000000.log"
    result = run_script("dump-log", "--from-offset", "10", "--to-offset", "5", str(segment))
    assert result.returncode == 2 and result.stdout == ""
    assert "--from-offset 10 is past --to-offset 5" in result.stderr
    fine = run_script("dump-log", "--from-offset", "5", "--to-offset", "5", str(segment))
    assert fine.returncode == 0


def test_dump_log_deep_is_deep_iteration() -> None:
    segment = str(GENERATED / "v1/gzip-0/00000000000000000000.log")
    short = run_script("dump-log", "--deep", segment)
    assert short.returncode == 0, short.stderr
    assert short.stdout == run_script("dump-log", "--deep-iteration", segment).stdout
    assert short.stdout != run_script("dump-log", segment).stdout  # inner messages, not the wrapper


@pytest.mark.parametrize("generation", ["v0", "v1"])
def test_skip_record_metadata_on_message_sets(generation: str) -> None:
    segment = str(GENERATED / f"{generation}/gzip-0/00000000000000000000.log")
    full = run_script("dump-log", "--print-data-log", segment).stdout.splitlines()[2:]
    text = run_script("dump-log", "--print-data-log", "--skip-record-metadata", segment)
    assert text.returncode == 0
    lines = text.stdout.splitlines()[2:]  # after "Dumping …" and "Starting offset: 0"
    assert lines and all("offset:" not in line and "crc:" not in line for line in lines)
    # the same data, in the same order, as the full lines end with (tombstones print no data)
    data = [
        line[line.index(" key: " if " key: " in line else " payload: ") + 1 :]
        for line in full
        if " payload: " in line
    ]
    assert lines == data

    js = run_script("dump-log", "--json", "--print-data-log", "--skip-record-metadata", segment)
    messages = [o for o in json_lines(js.stdout) if o["type"] == "message"]
    assert messages and all(set(o) == {"type", "file", "inner", "key", "value"} for o in messages)
    plain = [o for o in json_lines(run_script("dump-log", "--json", "--print-data-log", segment).stdout)]
    assert [(o["key"], o["value"]) for o in messages] == [
        (o["key"], o["value"]) for o in plain if o["type"] == "message" and o["inner"]
    ]


def test_a_second_undo_changes_nothing_and_says_already_undone(tmp_path: Path) -> None:
    part = tmp_path / "logs" / "v2-trailing-garbage-0"
    shutil.copytree(GENERATED / "corrupt/v2-trailing-garbage-0", part)
    backups = tmp_path / "backups"
    assert run_script("truncate", "--backup-dir", str(backups), str(part)).returncode == 0
    (manifest,) = backups.glob("*/manifest.json")
    first = run_script("truncate", "--undo", str(manifest))
    assert first.returncode == 0 and "removed" in first.stdout
    before = {p.name: p.read_bytes() for p in part.iterdir()}
    # a broker starting after the undo would create the index again: a second undo must leave it
    (part / "00000000000000000000.index").write_bytes(b"\0" * 8)
    second = run_script("truncate", "--undo", str(manifest))
    assert (second.returncode, second.stdout) == (0, f"already undone: {manifest}; nothing changed\n")
    assert {p.name: p.read_bytes() for p in part.iterdir()} == {
        **before,
        "00000000000000000000.index": b"\0" * 8,
    }
