"""`ktool truncate` and `--undo` SIGKILLed at every write-type system call they make
(tests/support/kill_points.py, strace inject): each file is then its old or its new self, the same
command run again finishes the work exactly (a repair to the state an uninterrupted run leaves, an undo
to the state before), no `.ktool` file and no backup directory without its manifest is left, and the
finished repair is undone byte for byte."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.log.test_truncate_cli import tree_digest, truncate
from tests.log.test_truncate_safety import damaged_segmented
from tests.support.kill_points import (
    distinct_and_sampled,
    neither_old_nor_new,
    run_killed,
    strace_or_unavailable,
    write_points,
)

pytestmark = pytest.mark.slow  # ~130 runs of ktool, each under strace

ENV = {"KTOOL_LIVENESS": "", "KTOOL_CONFIG": "/nonexistent"}


def files(part: Path) -> dict[str, str]:
    """The partition's files by name; `.lock` aside (a killed ktool leaves the one it created, as a
    broker's own is left: Kafka takes it again at start-up)."""
    return {name: digest for name, digest in tree_digest(part.parent).items() if name != ".lock"}


def fresh(work: Path) -> Path:
    """The same damaged partition at the same path every time: damage in the first of three segments,
    so the repair cuts it, rebuilds its indexes, deletes two segments, a snapshot and two leader epochs."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    return damaged_segmented(work)


def backups_are_whole(backups: Path) -> list[Path]:
    """Every backup directory has its manifest; no staging directory is left. The manifests."""
    dirs = sorted(backups.iterdir())
    assert all((d / "manifest.json").is_file() for d in dirs), dirs
    return [d / "manifest.json" for d in dirs]


def test_a_truncate_killed_anywhere_is_old_or_new_then_finished_by_a_rerun_and_undone(tmp_path: Path) -> None:
    strace_or_unavailable()
    work, backups = tmp_path / "work", tmp_path / "work" / "bk"
    part = fresh(work)
    before = files(part)
    argv = [sys.executable, "-m", "kafka_tools", "truncate", "--force", "--backup-dir", str(backups)]
    argv.append(str(part))
    points = write_points(argv, env=ENV)
    after = files(part)
    assert after != before and len(points) > 20
    assert any(p.syscall == "ftruncate" for p in points) and any(p.syscall == "unlink" for p in points)
    for point in distinct_and_sampled(points):
        part = fresh(work)
        run_killed(argv, point, env=ENV)
        assert neither_old_nor_new(files(part), before, after) == [], str(point)  # .ktool files: below

        code, out, err = truncate("--force", "--backup-dir", str(backups), str(part))
        assert code == 0, (str(point), err)
        assert files(part) == after, str(point)
        assert not [n for n in files(part) if ".ktool" in n], str(point)
        [manifest] = backups_are_whole(backups)  # the killed run's, finished, or the rerun's own
        assert json.loads(manifest.read_text())["state"] == "applied", str(point)

        code, _, err = truncate("--undo", str(manifest))
        assert code == 0, (str(point), err)
        assert files(part) == before, str(point)


def test_an_undo_killed_anywhere_is_finished_by_running_it_again(tmp_path: Path) -> None:
    strace_or_unavailable()
    work, backups = tmp_path / "work", tmp_path / "bk"

    def repaired() -> tuple[Path, Path]:
        shutil.rmtree(backups, ignore_errors=True)
        part = fresh(work)
        assert truncate("--force", "--backup-dir", str(backups), str(part))[0] == 0
        [manifest] = backups_are_whole(backups)
        manifest.parent.rename(backups / "the-backup")  # one path for every run's command line
        return part, backups / "the-backup" / "manifest.json"

    part = fresh(work)
    before = files(part)
    part, manifest = repaired()
    after = files(part)
    argv = [sys.executable, "-m", "kafka_tools", "truncate", "--undo", str(manifest)]
    points = write_points(argv, env=ENV)
    assert files(part) == before and len(points) > 10
    for point in distinct_and_sampled(points):
        part, manifest = repaired()
        run_killed(argv, point, env=ENV)
        assert neither_old_nor_new(files(part), after, before) == [], str(point)
        code, _, err = truncate("--undo", str(manifest))
        assert code == 0, (str(point), err)
        assert files(part) == before, str(point)  # no `.ktool` file either: `before` has none
        assert json.loads(manifest.read_text())["state"] == "undone"
