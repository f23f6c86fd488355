"""`ktool scan --out DIR --overwrite` never loses the earlier tables: the new ones are complete in a
staging directory beside them before any earlier one is touched, then swapped in by renames from a
record; a scan killed anywhere leaves the old tables or the new ones once the next scan on DIR has run
(which finishes a recorded swap and removes an unfinished scan's staging). Killed at every write-type
system call (tests/support/kill_points.py), on a full disk, and failing mid-scan, in process and under
Spark."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tests.independent import FIXTURES, ROOT
from tests.support.kill_points import (
    KillPoint,
    run_killed,
    strace_or_unavailable,
    write_points,
)
from tests.support.sweep import exhaustive, sample

KAFKA09 = FIXTURES / "kafka-0.9.0.1/logdir"
STAGING = "_ktool-staging-*"


def ktool(*args: str) -> tuple[int, str, str]:
    from kafka_tools.cli.main import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def tables_of(out: Path) -> dict[str, list[str]]:
    """What a user reading --out sees: each table (a directory with `_SUCCESS`) and its rows, in order;
    any other entry (a staging directory, a loose file) under its own name."""
    seen: dict[str, list[str]] = {}
    for entry in sorted(out.iterdir()):
        if entry.is_dir() and (entry / "_SUCCESS").exists() and not entry.name.startswith("_"):
            seen[entry.name] = sorted(map(repr, pq.read_table(entry).to_pylist()))
        else:
            seen[entry.name] = ["not a complete table"]
    return seen


@pytest.fixture(scope="module")
def old_tables(tmp_path_factory) -> Path:
    """An earlier scan's tables: every partition, with `records` and `offsets` (the new scan writes
    neither: they must go with the swap, not stay beside the new tables)."""
    out = tmp_path_factory.mktemp("old") / "tables"
    code, _, stderr = ktool(
        "scan", "--no-progress", "--out", str(out), "--records", "--offsets-topic", str(KAFKA09)
    )
    assert code == 0, stderr
    return out


def _fresh(old: Path, work: Path) -> Path:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(old, work)
    return work


# -- in process ----------------------------------------------------------------------------------------


def test_a_failing_overwrite_keeps_the_earlier_tables(old_tables, tmp_path, monkeypatch) -> None:
    from kafka_tools.errors import InputError
    from kafka_tools.pipeline import local

    out = _fresh(old_tables, tmp_path / "t")
    before = tables_of(out)
    real = local.write_rows

    def fails(directory, name, *args, **kwargs):
        if name == "findings":  # the last table: every other one is complete by now
            raise InputError(f"cannot write the findings table to {directory}: No space left on device")
        return real(directory, name, *args, **kwargs)

    monkeypatch.setattr(local, "write_rows", fails)
    code, _, stderr = ktool(
        "scan", "--no-progress", "--overwrite", "--out", str(out), str(KAFKA09 / "plain-0")
    )
    assert (code, stderr.count("\n")) == (3, 1) and "No space left on device" in stderr
    assert tables_of(out) == before  # every earlier table, whole, and no staging left


def test_the_next_scan_removes_a_killed_scans_staging_and_finishes_its_swap(old_tables, tmp_path) -> None:
    from kafka_tools.pipeline import out_swap

    out = _fresh(old_tables, tmp_path / "t")
    before = tables_of(out)
    # A scan killed while writing: its staging directory holds a half-written table and no record.
    (out / "_ktool-staging-0123456789ab" / "batches").mkdir(parents=True)
    (out / "_ktool-staging-0123456789ab" / "batches" / "part-00000.snappy.parquet").write_bytes(b"PAR1")
    code, _, stderr = ktool("scan", "--no-progress", "--out", str(out), str(KAFKA09 / "plain-0"))
    assert code == 2 and "already holds" in stderr  # refused (no --overwrite), and yet cleaned
    assert "removed the unfinished tables of an interrupted scan (_ktool-staging-0123456789ab)" in stderr
    assert tables_of(out) == before
    # A scan killed between the renames of its swap: two earlier tables already aside, one new one in.
    code, _, stderr = ktool("scan", "--no-progress", "--out", str(tmp_path / "new"), str(KAFKA09 / "plain-0"))
    assert code == 0, stderr
    new = tables_of(tmp_path / "new")
    staging = out / "_ktool-staging-fedcba987654"
    staging.mkdir()
    for name in new:
        shutil.copytree(tmp_path / "new" / name, staging / name)
    files = out_swap.LocalFiles()
    record = out_swap.SwapRecord(new=sorted(new), old=sorted(before))
    with pytest.raises(_Killed):
        out_swap.swap(_StopAfter(files, renames=3), str(out), str(staging), record.new, record.old)
    assert set(tables_of(out)) != set(before) and set(tables_of(out)) != set(new)  # a mix, for now
    code, _, stderr = ktool("scan", "--no-progress", "--out", str(out), str(KAFKA09 / "plain-0"))
    assert code == 2 and "finished the swap of the tables an interrupted scan had completed" in stderr
    assert tables_of(out) == new


def test_a_next_scan_itself_killed_while_finishing_a_swap_leaves_it_for_the_one_after(
    old_tables, tmp_path
) -> None:
    from kafka_tools.pipeline import out_swap

    code, _, stderr = ktool("scan", "--no-progress", "--out", str(tmp_path / "new"), str(KAFKA09 / "plain-0"))
    assert code == 0, stderr
    new = tables_of(tmp_path / "new")
    before = tables_of(old_tables)
    files = out_swap.LocalFiles()
    moves = len(before) + len(new)  # every earlier table aside, every new one in
    for stop in range(moves + 1):
        out = _fresh(old_tables, tmp_path / "t")
        staging = out / "_ktool-staging-fedcba987654"
        staging.mkdir()
        for name in new:
            shutil.copytree(tmp_path / "new" / name, staging / name)
        with pytest.raises(_Killed):  # killed right after the record: nothing moved yet
            out_swap.swap(_StopAfter(files, renames=1), str(out), str(staging), sorted(new), sorted(before))
        if stop < moves:
            with pytest.raises(_Killed):  # the next scan, killed before its stop+1-th rename
                out_swap.recover(_StopAfter(files, renames=stop), str(out))
        else:
            with pytest.raises(AssertionError, match="removed although"):  # killed before removing it
                out_swap.recover(_StopAfter(files, renames=stop), str(out))
        assert out_swap.recover(files, str(out)).finished == [staging.name]
        assert tables_of(out) == new, stop


def test_an_interrupt_during_the_swap_leaves_it_for_the_next_scan_to_finish(
    old_tables, tmp_path, monkeypatch
) -> None:
    from kafka_tools.pipeline import out_swap
    from kafka_tools.pipeline.local import scan_in_process
    from kafka_tools.pipeline.plan import ScanOptions, plan_scan

    out = _fresh(old_tables, tmp_path / "t")
    code, _, stderr = ktool("scan", "--no-progress", "--out", str(tmp_path / "new"), str(KAFKA09 / "plain-0"))
    assert code == 0, stderr
    new = tables_of(tmp_path / "new")
    real, renames = out_swap.LocalFiles.rename, []

    def interrupted(self, src: str, dst: str) -> None:
        renames.append(dst)
        if len(renames) == 4:  # two earlier tables aside, a third not yet (the record was the first)
            raise KeyboardInterrupt
        real(self, src, dst)

    monkeypatch.setattr(out_swap.LocalFiles, "rename", interrupted)
    with pytest.raises(KeyboardInterrupt):
        scan_in_process(plan_scan([KAFKA09 / "plain-0"]), ScanOptions(out=str(out), overwrite=True))
    monkeypatch.setattr(out_swap.LocalFiles, "rename", real)
    assert len(list(out.glob(f"{STAGING}/_ktool-replaced/*"))) == 2  # kept: the only copy of two tables
    code, _, stderr = ktool("scan", "--no-progress", "--out", str(out), str(KAFKA09 / "plain-0"))
    assert code == 2 and "finished the swap" in stderr
    assert tables_of(out) == new


def test_no_room_for_the_swaps_record_keeps_the_earlier_tables(old_tables, tmp_path, monkeypatch) -> None:
    import errno

    from kafka_tools.pipeline import out_swap

    out = _fresh(old_tables, tmp_path / "t")
    before = tables_of(out)

    def full(self, path: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(out_swap.LocalFiles, "touch", full)
    code, _, stderr = ktool(
        "scan", "--no-progress", "--overwrite", "--out", str(out), str(KAFKA09 / "plain-0")
    )
    said = "cannot swap the new tables in: No space left on device; the earlier ones are kept"
    assert (code, stderr) == (3, f"ktool: --out {out}: {said}\n")
    assert tables_of(out) == before


class _StopAfter:
    """LocalFiles that stops (as a killed process would) before its `renames`+1-th rename."""

    def __init__(self, files, renames: int) -> None:
        self._files = files
        self._left = renames

    def __getattr__(self, name):
        return getattr(self._files, name)

    def rename(self, src: str, dst: str) -> None:
        if self._left == 0:
            raise _Killed
        self._left -= 1
        self._files.rename(src, dst)

    def remove(self, path: str) -> None:
        raise AssertionError("removed although the swap was stopped")


class _Killed(BaseException):
    pass


def test_a_second_scan_on_the_same_out_is_refused_while_one_writes(old_tables, tmp_path) -> None:
    from kafka_tools.pipeline.out_swap import OutLock

    out = _fresh(old_tables, tmp_path / "t")
    before = tables_of(out)
    with OutLock(str(out)):  # a scan writing there
        code, _, stderr = ktool("scan", "--no-progress", "--overwrite", "--out", str(out), str(KAFKA09))
    assert code == 3 and stderr == f"ktool: --out {out}: another ktool scan is writing there; wait for it\n"
    assert tables_of(out) == before


# -- killed at every write -----------------------------------------------------------------------------


def _argv(out: Path, core: int = 0) -> list[str]:
    # One core: one lane, no background writer, so every table is written by the command's own thread
    # and its calls are counted (and killed) in the same order in every run. -P: the working directory
    # is not on sys.path (a directory there is listed again by the import system whenever it changes).
    python = [
        sys.executable,
        "-P",
        "-m",
        "kafka_tools",
        "scan",
        "--no-progress",
        "--overwrite",
        "--out",
        str(out),
    ]
    return ["taskset", "-c", str(core), *python, str(KAFKA09 / "plain-0")]


def _kill_everywhere(old_tables: Path, tmp_path: Path, keep) -> int:
    """Every kept kill point proven, in two lanes (each its own --out; on two cores, its own core: the
    killed run sees one core either way, as the recorded run did)."""
    strace_or_unavailable()
    if shutil.which("taskset") is None:
        pytest.skip("taskset is not installed (util-linux)")
    env = {"PYTHONPATH": str(ROOT)}
    before = tables_of(old_tables)
    work = _fresh(old_tables, tmp_path / "t")
    points = write_points(_argv(work), env=env, cwd=tmp_path)
    after = tables_of(work)
    assert set(after) == {"segments", "batches", "findings"} and after != before
    mine = keep(points)
    cores = sorted(os.sched_getaffinity(0))[:2] * 2  # lane k's killed runs on cores[k]
    lanes = [tmp_path / f"lane-{k}" / "t" for k in range(2)]

    def kill(i: int) -> None:
        _fresh(old_tables, lanes[i % 2])
        run_killed(_argv(lanes[i % 2], cores[i % 2]), mine[i], env=env, cwd=tmp_path)

    # The next point's killed run (a subprocess, in the other lane) while this thread checks this one's
    # --out with in-process scans (CliRunner and signal handlers: the main thread's alone).
    with ThreadPoolExecutor(1) as background:
        pending = background.submit(kill, 0)
        for i, point in enumerate(mine):
            pending.result()
            if i + 1 < len(mine):
                pending = background.submit(kill, i + 1)
            _after_the_kill(lanes[i % 2], point, before, after)
    return len(mine)


def _after_the_kill(work: Path, point: KillPoint, before: dict, after: dict) -> None:
    """What a user finds in --out after a scan killed at `point`, then after the next scans."""
    recorded = list(work.glob(f"{STAGING}/_ktool-swap"))
    seen = tables_of(work)
    visible = {k: v for k, v in seen.items() if not k.startswith("_ktool-staging-")}
    if not recorded:  # before the swap is recorded, or after its renames: whole, old or new
        assert visible in (before, after), point
    _wait_for_the_lock(work, point)
    code, _, stderr = ktool("scan", "--no-progress", "--out", str(work), str(KAFKA09 / "plain-0"))
    assert code == 2, (point, stderr)  # the next scan (refused: no --overwrite) cleans up first
    if recorded:  # the new tables were complete: the swap is finished
        assert tables_of(work) == after, point
    assert tables_of(work) in (before, after), point  # never neither, never a mix; no staging left
    code, _, stderr = ktool(
        "scan", "--no-progress", "--overwrite", "--out", str(work), str(KAFKA09 / "plain-0")
    )
    assert code == 0 and tables_of(work) == after, (point, stderr)  # a rerun: the new tables


def _wait_for_the_lock(out: Path, point: KillPoint, within: float = 10) -> None:
    """Until the killed scan's lock on --out is gone with it. The kernel drops it once the last of the
    process's threads has ended, which a loaded machine was seen to leave for after strace returned (CI
    run 5: the next scan said "another ktool scan is writing there", as it should then); a lock still
    held `within` s later is a failure."""
    import fcntl
    import time

    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + within
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                assert time.monotonic() < deadline, f"{point}: --out still locked {within} s after the kill"
                time.sleep(0.05)
    finally:
        os.close(fd)


def _of_the_swap(points: list[KillPoint]) -> list[KillPoint]:
    """CI's share of the kill points (every write: the sampled sweep below): the record renamed
    into place, the first and last earlier table moved aside, the first and last new one moved in, the
    first and last removal after the swap, its last sync."""
    renames = [p for p in points if p.syscall == "rename"]
    record = [p for p in renames if "_ktool-swap.tmp" in p.call]
    aside = [p for p in renames if "_ktool-replaced" in p.call]
    moved_in = [p for p in renames if "_ktool-staging-" not in p.call.split(", ", 1)[1]]  # into --out
    removals = [p for p in points if p.syscall == "unlinkat"]
    syncs = [p for p in points if p.syscall == "fsync"]
    chosen = record + [run[k] for run in (aside, moved_in, removals) for k in (0, -1)] + syncs[-1:]
    assert len(record) == 1 and len(aside) == 5 and len(moved_in) == 3 and removals and syncs
    return chosen


@pytest.mark.slow  # 8 scans under strace, each followed by two more
def test_killed_at_each_call_of_the_swap_the_next_scan_leaves_old_or_new_tables(old_tables, tmp_path) -> None:
    assert _kill_everywhere(old_tables, tmp_path, _of_the_swap) == 8


@pytest.mark.slow
def test_killed_at_every_write_the_next_scan_leaves_old_or_new_tables(old_tables, tmp_path) -> None:
    """Every write in `tests/run.sh --exhaustive` (100+ kills, 7 minutes); a seeded sample of 12 in CI,
    beside the swap's every distinct call above."""
    proven = _kill_everywhere(old_tables, tmp_path, lambda points: sample(points, 12))
    assert proven >= (100 if exhaustive() else 12)


# -- a full disk ---------------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path) -> Path:
    """A 2 MiB tmpfs (root only: skipped otherwise, failed under CI)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True)
    if done.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"cannot mount a tmpfs: {done.stderr.decode().strip()}", pytrace=False)
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        busy = subprocess.run(["umount", str(disk)], capture_output=True, text=True)
        if busy.returncode != 0:  # a file the scan left open: unmounted once it is closed, and failed
            subprocess.run(["umount", "--lazy", str(disk)], check=True)
            raise AssertionError(f"the tmpfs was still in use after the scan: {busy.stderr.strip()}")


def test_a_full_disk_is_one_line_naming_the_out_dir_and_the_earlier_tables_stay(
    old_tables, small_disk: Path
) -> None:
    out = small_disk / "t"
    shutil.copytree(old_tables, out)
    before = tables_of(out)
    filler = small_disk / "filler"
    free = shutil.disk_usage(small_disk).free
    filler.write_bytes(b"\0" * max(0, free - 64 * 1024))  # 64 KiB left: less than the new tables need
    code, stdout, stderr = ktool(
        "scan", "--no-progress", "--overwrite", "--out", str(out), "--records", str(KAFKA09)
    )
    assert code == 3 and stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert "No space left on device" in stderr and f"--out {out}" in stderr, stderr
    assert tables_of(out) == before  # the earlier tables, whole; no staging directory left
