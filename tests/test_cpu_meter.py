"""tests/support/cpu_meter.py: a lane's file keeps every test it measured, even when a test starts a pytest
of its own (which inherits $KTOOL_TEST_CPU and $KTOOL_LANE: it once opened the lane's file afresh, and a
CI run's offline table was lost that way), and xdist's workers each write theirs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.independent import ROOT

pytestmark = pytest.mark.slow  # pytest in fresh interpreters

INNER = "def test_inner():\n    pass\n"
OUTER = """import os, subprocess, sys

def test_starts_a_pytest_of_its_own(tmp_path):
    inner = {inner!r}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.support.cpu_meter",
                           "-p", "no:cacheprovider", "--rootdir", {tmp!r}, inner], capture_output=True)
    assert done.returncode == 0, done.stdout

def test_after_it():
    pass
"""


def _metered(tmp_path: Path, *args: str) -> Path:
    (tmp_path / "inner").mkdir()
    inner = tmp_path / "inner" / "test_inner.py"
    inner.write_text(INNER)
    outer = tmp_path / "test_outer.py"
    outer.write_text(OUTER.format(inner=str(inner), tmp=str(tmp_path / "inner")))
    where = tmp_path / "cpu"
    env = {**os.environ, "KTOOL_TEST_CPU": str(where), "KTOOL_LANE": "lane", "PYTHONPATH": str(ROOT)}
    env.pop("KTOOL_TEST_CPU_METERED", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.support.cpu_meter", "-p", "no:cacheprovider",
         "-p", "no:randomly", "--rootdir", str(tmp_path), *args, str(outer)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return where


def _tests_in(path: Path) -> set[str]:
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return {row[0].rpartition("::")[2] for row in rows}


def test_a_pytest_started_by_a_test_leaves_the_lanes_file_whole(tmp_path: Path) -> None:
    where = _metered(tmp_path)
    assert sorted(p.name for p in where.iterdir()) == ["lane.tsv"]
    assert _tests_in(where / "lane.tsv") == {"test_starts_a_pytest_of_its_own", "test_after_it", "TOTAL"}


def test_each_xdist_worker_writes_its_own_file(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    where = _metered(tmp_path, "-n", "2")
    files = {p.name: _tests_in(p) for p in where.iterdir()}
    controller = set(files) - {"lane-gw0.tsv", "lane-gw1.tsv"}  # `-controller` when xdist was seen
    assert len(files) == 3 and controller <= {"lane.tsv", "lane-controller.tsv"}, sorted(files)
    measured = set().union(*files.values()) - {"TOTAL"}
    assert measured == {"test_starts_a_pytest_of_its_own", "test_after_it"}  # the inner test is in none
