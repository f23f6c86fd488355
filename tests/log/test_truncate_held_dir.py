"""`ktool truncate` against path tricks (issue 49, rows 1-3, 10, 11): the partition directory resolved
once as the kernel resolves it, held by descriptor, read and changed only through it; a symlinked
partition directory refused unless --follow-dir-links; `--undo` by any path to the manifest or its
backup directory; an unfinished repair found from the partition directory whatever the state directory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kafka_tools.log.repair import apply as repair
from tests.log.test_truncate_cli import tree_digest, truncate
from tests.log.test_truncate_safety import damaged_segmented, manifests, one_line
from tests.support.kill_points import run_killed, strace_or_unavailable, write_points
from tests.support.sweep import rounds

RENAME_EXCHANGE = 2
AT_FDCWD = -100


def _renameat2() -> ctypes._CFuncPtr:
    """renameat2(2) through libc, or the raw system call where libc lacks the wrapper (glibc < 2.28)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if hasattr(libc, "renameat2"):
        fn = libc.renameat2
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        return fn
    number = {"x86_64": 316, "aarch64": 276}.get(platform.machine())
    if number is None:
        pytest.skip(f"renameat2 is not known on {platform.machine()}")
    syscall = libc.syscall

    def fn(olddir: int, old: bytes, newdir: int, new: bytes, flags: int) -> int:
        return syscall(number, olddir, old, newdir, new, flags)

    return fn


def exchange(a: Path, b: Path) -> None:
    if _renameat2()(AT_FDCWD, bytes(a), AT_FDCWD, bytes(b), RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


def digest(root: Path) -> dict[str, str]:
    """Every file below `root` (not following links) by name: its sha256."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath, name)
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def ktool(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kafka_tools", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "KTOOL_LIVENESS": "", "KTOOL_CONFIG": "/nonexistent", **(env or {})},
        cwd=cwd,
        timeout=120,
    )


# -- row 1: the partition directory swapped for a link while truncate runs -----------------------------


def swap_round(tmp: Path, force: bool) -> tuple[subprocess.CompletedProcess, dict, dict, int]:
    """One run of truncate on logs/gen-0 while a thread exchanges it with logs/gen-0.alt, a link to
    victim/gen-0 (the same files, the same damage). The victim's files before and after, and how many
    exchanges were made during the run."""
    work = tmp / "work"
    work.mkdir()
    # without --force a tail (of the last segment) is cut; with it, the first segment is cut, the two
    # after it deleted and leader-epoch-checkpoint rewritten
    part = damaged_segmented(work, "00000000000000000000.log" if force else "00000000000000000100.log")
    logs = part.parent
    gen = logs / "gen-0"
    part.rename(gen)
    victim = tmp / "victim"
    victim.mkdir()
    shutil.copytree(gen, victim / "gen-0")
    alt = logs / "gen-0.alt"
    alt.symlink_to(victim / "gen-0")
    before = digest(victim)
    stop = threading.Event()
    swaps = [0]

    def racer() -> None:
        while not stop.is_set():
            exchange(gen, alt)
            swaps[0] += 1

    thread = threading.Thread(target=racer, daemon=True)
    thread.start()
    try:
        args = ["truncate", "--backup-dir", str(tmp / "bk"), str(gen)]
        done = ktool(*args, *(["--force"] if force else []))
    finally:
        stop.set()
        thread.join()
    return done, before, digest(victim), swaps[0]


@pytest.mark.slow  # 24 runs of the console script racing a directory swap
@pytest.mark.parametrize("force", [False, True])
def test_a_partition_directory_swapped_for_a_link_mid_run_never_changes_the_link_target(
    tmp_path: Path, force: bool
) -> None:
    touched, unclean = [], []
    outcomes: dict[int, int] = {}
    for n in range(rounds(ci=12, full=250)):  # two parametrizations: 24 in CI, 500 in the sweep
        tmp = tmp_path / str(n)
        tmp.mkdir()
        done, before, after, swaps = swap_round(tmp, force)
        assert swaps > 0
        outcomes[done.returncode] = outcomes.get(done.returncode, 0) + 1
        if after != before:
            changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
            touched.append((n, sorted(changed)))
        if any("victim" in m.read_text() for m in manifests(tmp / "bk")):
            touched.append((n, ["a manifest names the victim"]))
        # done, or refused cleanly in one line: the directory was a link, or changed under it
        clean_refusal = (
            done.returncode == 3
            and "Traceback" not in done.stderr
            and done.stderr.count("\n") == 1
            and ("symbolic link" in done.stderr or "changed" in done.stderr)
        )
        if done.returncode != 0 and not clean_refusal:
            unclean.append((n, done.returncode, done.stderr))
        shutil.rmtree(tmp)
    print(f"outcomes by exit code: {outcomes}; outside files touched in {len(touched)} runs")
    assert touched == []
    assert unclean == []


# -- row 2: `..` after a link ---------------------------------------------------------------------------


def test_dotdot_after_a_link_repairs_the_partition_the_kernel_resolves_and_no_other(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    real = damaged_segmented(tmp_path / "real")  # real/logs/segmented-0, damaged
    (tmp_path / "other").mkdir()
    other_logs = tmp_path / "other" / "logs"
    other_logs.mkdir()
    shutil.copytree(real, other_logs / real.name)
    healthy = other_logs / real.name / "00000000000000000000.log"
    healthy.write_bytes(healthy.read_bytes()[:-50])  # other's copy is whole: no garbage tail
    (other_logs / "sub").symlink_to(real)
    other_before = digest(tmp_path / "other")
    real_before = digest(real)
    given = f"{other_logs}/sub/../{real.name}"  # the kernel: real/logs/segmented-0
    code, out, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), given)
    assert code == 0, err
    assert digest(tmp_path / "other") == other_before  # not a byte of `other` changed
    assert digest(real) != real_before
    [manifest] = manifests(tmp_path / "bk")
    assert json.loads(manifest.read_text())["partition"] == str(real)
    assert truncate("--undo", str(manifest))[0] == 0
    assert digest(real) == real_before


# -- row 3: a partition directory that is a link ---------------------------------------------------------


def elsewhere_linked(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "elsewhere").mkdir()
    target = damaged_segmented(tmp_path / "elsewhere")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / target.name).symlink_to(target)
    return logs, target


def test_a_symlinked_partition_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    logs, target = elsewhere_linked(tmp_path)
    before = digest(target.parent)
    for args in (["--dry-run"], []):
        code, out, err = truncate(*args, "--force", "--backup-dir", str(tmp_path / "bk"), str(logs))
        assert code == 3, (out, err)
        line = one_line(err)
        assert f"{logs / target.name}: a symbolic link to {target}" in line and "--follow-dir-links" in line
        assert digest(target.parent) == before
    assert manifests(tmp_path / "bk") == []


def test_follow_dir_links_repairs_the_directory_the_link_names(tmp_path: Path) -> None:
    logs, target = elsewhere_linked(tmp_path)
    before = digest(target)
    code, out, err = truncate(
        "--follow-dir-links", "--force", "--backup-dir", str(tmp_path / "bk"), str(logs)
    )
    assert code == 0, err
    assert digest(target) != before and (logs / target.name).is_symlink()
    [manifest] = manifests(tmp_path / "bk")
    assert json.loads(manifest.read_text())["partition"] == str(target)
    assert truncate("--undo", str(manifest))[0] == 0
    assert digest(target) == before


# -- row 10: --undo by any path ------------------------------------------------------------------------


@pytest.mark.parametrize("named", ["manifest.json", ".", "../{backup}", "../{backup}/manifest.json"])
def test_undo_takes_the_manifest_or_its_backup_directory_by_any_path(
    tmp_path: Path, monkeypatch, named: str
) -> None:
    part = damaged_segmented(tmp_path)
    before = tree_digest(part)
    assert truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))[0] == 0
    [manifest] = manifests(tmp_path / "bk")
    backup = manifest.parent
    monkeypatch.chdir(backup)  # from inside the backup directory, as an operator looking at it would
    code, out, err = truncate("--undo", named.format(backup=backup.name))
    assert code == 0, err
    assert tree_digest(part) == before
    assert json.loads(manifest.read_text())["state"] == "undone"


# -- row 11: an interrupted repair found whatever the state directory ------------------------------------


def test_a_killed_repair_is_finished_by_a_rerun_under_another_state_directory(tmp_path: Path) -> None:
    strace_or_unavailable()
    work = tmp_path / "work"

    def fresh() -> Path:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        return damaged_segmented(work)  # cut the first segment, delete the two after it

    def state(name: str) -> dict[str, str]:
        return {"XDG_STATE_HOME": str(tmp_path / name), "KTOOL_LIVENESS": "", "KTOOL_CONFIG": "/nonexistent"}

    part = fresh()
    argv = [sys.executable, "-m", "kafka_tools", "truncate", "--force", str(part)]
    points = write_points(argv, env=state("clean"))
    after = tree_digest(part)
    # the first unlink of a segment: the cut is made, the later segments not yet deleted
    first = next(p for p in points if p.syscall in ("unlink", "unlinkat") and ".log" in p.call)
    part = fresh()
    run_killed(argv, first, env=state("sudo"))
    done = ktool("truncate", "--force", str(part), env=state("sudo-i"))  # HOME and XDG_STATE_HOME differ
    assert done.returncode == 0, done.stderr
    assert "finished the interrupted repair" in done.stdout, done.stdout
    assert str(tmp_path / "sudo") in done.stdout  # the first run's manifest, found from the partition
    assert tree_digest(part) == after  # every offset the repair keeps is there; the later segments gone
    assert not (part / repair.POINTER).exists()
    [manifest] = manifests(tmp_path / "sudo" / "ktool" / "backups")
    assert json.loads(manifest.read_text())["state"] == "applied"
    assert not (tmp_path / "sudo-i" / "ktool" / "backups").exists() or not manifests(
        tmp_path / "sudo-i" / "ktool" / "backups"
    )


def test_a_pointer_whose_manifest_is_gone_is_said_in_one_line_and_nothing_changes(tmp_path: Path) -> None:
    part = damaged_segmented(tmp_path)
    (part / repair.POINTER).write_text(json.dumps({"format": 1, "manifest": str(tmp_path / "gone.json")}))
    before = tree_digest(part)
    code, out, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 3 and "an unfinished ktool truncate left" in one_line(err) and "gone.json" in err
    assert tree_digest(part) == before
