"""A segment shortened by someone else between validate's planning and the end of its walk (a range of
a split read before the cut, the rest after): the file said to have changed under us, in the words of
the SIGBUS guard for a cut under a map, exit 3, never findings made of a file that never was. Grown
while walked (a live active segment) is no error. The cut is made inside the walk (the split hook the
planner gives `scan_segment`, or the walk itself); reads are pread: a map shortened under the test
would end pytest itself through the SIGBUS guard."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafka_tools.format.mapping import SHORTENED, ShortenedWhileRead
from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.checks.segment_checks import scan_segment
from tests.support.logs import write_log_dir


def _segment(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    write_log_dir(root, partitions=1, segments=1, batches=200, records=2, value_bytes=50)
    return root / "gen-0" / f"{0:020d}.log"


def test_a_segment_shortened_during_its_walk_is_said_so(tmp_path) -> None:
    seg = _segment(tmp_path)

    def cut_then_walk(path, base, wanted):
        os.truncate(path, 1000)
        return None

    with pytest.raises(ShortenedWhileRead) as raised:
        scan_segment(seg, ValidateOptions(mmap=False, split=cut_then_walk))
    assert (str(raised.value.filename), raised.value.strerror) == (str(seg), SHORTENED)


def test_validate_says_it_of_the_file_and_exits_3(tmp_path, monkeypatch) -> None:
    """A log dir's other files are still checked: the cut one is unreadable, as an unreadable file is."""
    from click.testing import CliRunner

    from kafka_tools.cli.main import cli
    from kafka_tools.log.checks import segment_checks

    seg = _segment(tmp_path)
    walk = segment_checks.walk_entries

    def cut_then_walk(*args, **kwargs):
        os.truncate(seg, 1000)
        return walk(*args, **kwargs)

    monkeypatch.setenv("KTOOL_NO_MMAP", "1")  # pread: a map cut under pytest would end it (SIGBUS guard)
    monkeypatch.setattr(segment_checks, "walk_entries", cut_then_walk)
    result = CliRunner().invoke(cli, ["validate", str(seg.parent)])
    assert result.exit_code == 3
    assert f"ERROR {seg}: unreadable-file: cannot be read: {SHORTENED} " in result.stdout


def test_a_segment_grown_during_its_walk_is_checked_as_it_was(tmp_path) -> None:
    seg = _segment(tmp_path)
    size = seg.stat().st_size
    whole = scan_segment(seg, ValidateOptions(mmap=False))

    def append_then_walk(path, base, wanted):
        with open(path, "ab") as f:
            f.write(b"\0" * 100)
        return None

    grown = scan_segment(seg, ValidateOptions(mmap=False, split=append_then_walk))
    assert grown.findings == whole.findings == []
    assert (grown.recovery_point, grown.next_offset) == (size, whole.next_offset)
