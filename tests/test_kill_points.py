"""tests/support/kill_points.py itself: every write of a small atomic-replace script is found, and a run
killed at each stops exactly there (the file then holds the old or the new bytes, never a torn one)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.kill_points import KillPointError, run_killed, strace_or_unavailable, write_points

SCRIPT = """
import os, sys
target = sys.argv[1]
with open(target + ".tmp", "w") as f:
    f.write("new"); f.flush(); os.fsync(f.fileno())
os.replace(target + ".tmp", target)
"""


def test_every_write_is_a_kill_point_and_each_run_stops_there(tmp_path: Path) -> None:
    strace_or_unavailable()
    script = tmp_path / "replace.py"
    script.write_text(SCRIPT)
    target = tmp_path / "file"
    argv = [sys.executable, str(script), str(target)]
    target.write_text("old")
    points = write_points(argv)
    assert target.read_text() == "new"
    ours = [p for p in points if str(tmp_path) in p.call or p.syscall in ("write", "fsync")]
    assert [p.syscall for p in ours] == ["openat", "write", "fsync", "rename"]
    for point in ours:
        target.write_text("old")
        Path(f"{target}.tmp").unlink(missing_ok=True)
        run = run_killed(argv, point)
        assert run.returncode != 0 and point.syscall in run.killed_call
        assert target.read_text() == "old"  # killed before the rename: the old file, whole
    with pytest.raises(KillPointError, match="not killed"):
        run_killed(argv, type(points[0])("rename", 2, points[-1].call))  # a call the run never makes
