"""`ktool truncate` under attack (issue 39): links out of the partition directory, a second truncate at
the same time, a repair interrupted and run again, other owners, a full backup disk. Each test sets up
the attack as an operator would meet it and checks what the operator would look at afterwards."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_tools.log.checks import partition_checks
from kafka_tools.log.repair import apply as repair
from kafka_tools.render.contract import problems
from tests.log.test_truncate_cli import CORRUPT, GENERATED, logdir_with, tree_digest, truncate

SEGMENTED = GENERATED / "v2/segmented-0"


class PowerCut(BaseException):
    """The process dies here: nothing after it runs, no handler sees it."""


def damaged_segmented(tmp_path: Path, segment: str = "00000000000000000000.log") -> Path:
    """segmented-0 with a garbage tail on `segment`: truncating it (with --force when it is not the
    last) cuts it and deletes every later segment, their indexes and the snapshot past the new end."""
    logs = logdir_with(tmp_path, SEGMENTED)
    with open(logs / "segmented-0" / segment, "ab") as f:
        f.write(b"\x07" * 50)
    return logs / "segmented-0"


def needs(reason: str) -> None:
    """A prerequisite missing (root, a tmpfs mount): skipped, failed under CI (which runs as root)."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (prerequisites must be available in CI)", pytrace=False)
    pytest.skip(reason)


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def manifests(backups: Path) -> list[Path]:
    return sorted(backups.glob("*/manifest.json"))


# -- writes stay inside the partition directory ------------------------------------------------------


def test_a_later_segment_linked_outside_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    part = damaged_segmented(tmp_path)
    outside = tmp_path / "elsewhere" / "precious.log"
    outside.parent.mkdir()
    shutil.copy(part / "00000000000000000100.log", outside)
    (part / "00000000000000000100.log").unlink()
    (part / "00000000000000000100.log").symlink_to(outside)
    before, kept = tree_digest(part), outside.read_bytes()
    code, _, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 3
    assert f"{part / '00000000000000000100.log'}: a symbolic link" in one_line(err)
    assert outside.read_bytes() == kept and tree_digest(part) == before
    assert not (tmp_path / "bk").exists() or manifests(tmp_path / "bk") == []


def test_a_damaged_segment_that_is_a_link_is_not_cut_through_it(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-trailing-garbage-0")
    log = logs / "v2-trailing-garbage-0" / "00000000000000000000.log"
    outside = tmp_path / "outside.log"
    shutil.move(log, outside)
    log.symlink_to(outside)
    code, _, err = truncate("--backup-dir", str(tmp_path / "bk"), str(log.parent))
    assert code == 3 and "a symbolic link" in one_line(err)
    assert outside.stat().st_size == 3867 and log.is_symlink()


def test_allow_links_replaces_a_link_by_a_copy_and_undo_puts_the_link_back(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-trailing-garbage-0")
    log = logs / "v2-trailing-garbage-0" / "00000000000000000000.log"
    outside = tmp_path / "outside.log"
    shutil.move(log, outside)
    log.symlink_to(outside)
    code, _, err = truncate("--allow-links", "--backup-dir", str(tmp_path / "bk"), str(log.parent))
    assert code == 0, err
    assert not log.is_symlink() and log.stat().st_size == 3767
    assert outside.stat().st_size == 3867  # the link's target keeps the old bytes
    [manifest] = manifests(tmp_path / "bk")
    assert truncate("--undo", str(manifest))[0] == 0
    assert log.is_symlink() and os.readlink(log) == str(outside) and outside.stat().st_size == 3867


def test_a_hard_linked_snapshot_is_refused_and_with_allow_links_keeps_the_old_bytes(tmp_path: Path) -> None:
    part = damaged_segmented(tmp_path, "00000000000000000050.log")
    snap = tmp_path / "snapshot"  # what `cp -al` makes: the same inodes under a second name
    snap.mkdir()
    for f in part.iterdir():
        os.link(f, snap / f.name)
    before = tree_digest(snap)
    code, _, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 3 and "other names (hard links" in one_line(err)
    assert tree_digest(snap) == before == tree_digest(part)

    code, _, err = truncate("--force", "--allow-links", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 0, err
    cut = part / "00000000000000000050.log"
    assert cut.stat().st_size < (snap / cut.name).stat().st_size
    assert not (part / "00000000000000000100.log").exists()
    assert tree_digest(snap) == before  # the snapshot's names kept every old byte
    [manifest] = manifests(tmp_path / "bk")
    assert truncate("--undo", str(manifest))[0] == 0
    assert tree_digest(part) == before


def test_the_manifest_records_the_path_given_not_the_link_resolved(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-trailing-garbage-0")
    via = tmp_path / "via"
    via.symlink_to(logs)  # /var/lib/kafka -> /data/kafka, as many hosts have
    code, _, err = truncate("--backup-dir", str(tmp_path / "bk"), str(via / "v2-trailing-garbage-0"))
    assert code == 0, err
    [manifest] = manifests(tmp_path / "bk")
    doc = json.loads(manifest.read_text())
    assert doc["partition"] == str(via / "v2-trailing-garbage-0")
    assert all(Path(a["file"]).parent == via / "v2-trailing-garbage-0" for a in doc["actions"])


@pytest.mark.parametrize("where", ["outside", "dotdot", "other-partition"])
def test_undo_touches_no_path_outside_the_partition_a_manifest_names(tmp_path: Path, where: str) -> None:
    part = damaged_segmented(tmp_path, "00000000000000000050.log")
    assert truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))[0] == 0
    [manifest] = manifests(tmp_path / "bk")
    doc = json.loads(manifest.read_text())
    victim = {
        "outside": tmp_path / "victim.log",
        "dotdot": part / ".." / "victim.log",
        "other-partition": part.parent / "other-0" / "00000000000000000100.log",
    }[where]
    victim.parent.mkdir(exist_ok=True)
    victim.write_bytes(b"not kafka's")
    deleted = next(a for a in doc["actions"] if a["action"] == "delete")
    deleted["file"] = str(victim)
    manifest.write_text(json.dumps(doc))
    after_repair = tree_digest(part)
    code, _, err = truncate("--undo", str(manifest))
    assert code == 3 and "not a file of the partition directory" in one_line(err)
    assert victim.read_bytes() == b"not kafka's" and tree_digest(part) == after_repair


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_undo_does_not_write_through_a_link_made_after_the_repair(tmp_path: Path, link: str) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-trailing-garbage-0")
    log = logs / "v2-trailing-garbage-0" / "00000000000000000000.log"
    assert truncate("--backup-dir", str(tmp_path / "bk"), str(log.parent))[0] == 0
    outside = tmp_path / "elsewhere.log"
    if link == "symlink":  # the cut segment moved away and linked back: undo would extend the target
        shutil.move(log, outside)
        log.symlink_to(outside)
    else:  # snapshotted with `cp -al` since: undo would extend the snapshot's file too
        os.link(log, outside)
    code, _, err = truncate("--undo", str(manifests(tmp_path / "bk")[0]))
    assert code == 3 and str(log) in one_line(err)
    assert outside.stat().st_size == 3767


def test_dry_run_says_an_interrupted_repair_is_unfinished(tmp_path: Path, monkeypatch) -> None:
    part = damaged_segmented(tmp_path)

    def crashing(*args, **kwargs):
        raise PowerCut

    monkeypatch.setattr(repair, "_apply_actions", crashing)
    with pytest.raises(PowerCut):
        truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    [manifest] = manifests(tmp_path / "bk")
    code, out, err = truncate("--dry-run", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert f"the repair in {manifest} was interrupted" in one_line(err)


# -- the lock before the plan --------------------------------------------------------------------------


def test_a_second_truncate_meanwhile_is_refused_naming_ktool_and_no_stale_plan_runs(
    tmp_path: Path, monkeypatch
) -> None:
    part = damaged_segmented(tmp_path, "00000000000000000050.log")
    other = {}

    def plan_then_race(*args, **kwargs):
        plan = real(*args, **kwargs)
        if not other:  # another operator's truncate, between this one's plan and its changes
            other["run"] = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "kafka_tools",
                    "truncate",
                    "--force",
                    "--backup-dir",
                    str(tmp_path / "bk2"),
                    str(part),
                ],
                capture_output=True,
                text=True,
                env={**os.environ, "KTOOL_LIVENESS": ""},
            )
        return plan

    real = partition_checks.plan_partition
    monkeypatch.setattr("kafka_tools.log.repair.truncate_service.plan_partition", plan_then_race)
    code, out, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    race = other["run"]
    assert race.returncode == 3, race.stderr
    assert f"another ktool (pid {os.getpid()}" in one_line(race.stderr)
    assert code == 0, err
    assert not (part / "00000000000000000100.log").exists()
    [manifest] = manifests(tmp_path / "bk")
    assert json.loads(manifest.read_text())["state"] == "applied"
    assert not (tmp_path / "bk2").exists() or list((tmp_path / "bk2").iterdir()) == []


# -- repairs finish or say so ---------------------------------------------------------------------------


@pytest.mark.parametrize("fail_at", [1, 3, 6, 9])
def test_an_interrupted_repair_run_again_finishes_what_its_manifest_says(
    tmp_path: Path, monkeypatch, fail_at: int
) -> None:
    (tmp_path / "clean").mkdir()
    clean = damaged_segmented(tmp_path / "clean")
    assert truncate("--force", "--backup-dir", str(tmp_path / "clean-bk"), str(clean))[0] == 0
    repaired = tree_digest(clean)

    part = damaged_segmented(tmp_path)
    before = tree_digest(part)
    real = repair._apply_actions

    def crashing(*args, **kwargs):
        actions = args[1]
        real(args[0], actions[:fail_at], *args[2:], **kwargs)
        raise PowerCut  # the process dies here

    monkeypatch.setattr(repair, "_apply_actions", crashing)
    with pytest.raises(PowerCut):
        truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    monkeypatch.setattr(repair, "_apply_actions", real)
    [manifest] = manifests(tmp_path / "bk")
    assert json.loads(manifest.read_text())["state"] == "prepared"

    code, out, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 0, err
    assert f"finished the interrupted repair {manifest}" in out
    assert tree_digest(part) == repaired  # the plan of the first run, not a new one on its half
    assert manifests(tmp_path / "bk") == [manifest]
    assert json.loads(manifest.read_text())["state"] == "applied"
    assert list(part.glob("*.ktool.*")) == []
    assert truncate("--undo", str(manifest))[0] == 0
    assert tree_digest(part) == before


def test_the_finished_interrupted_repair_keeps_the_json_contract(tmp_path: Path, monkeypatch) -> None:
    part = damaged_segmented(tmp_path)

    def crashing(*args, **kwargs):
        raise PowerCut

    monkeypatch.setattr(repair, "_apply_actions", crashing)
    with pytest.raises(PowerCut):
        truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    monkeypatch.undo()
    [manifest] = manifests(tmp_path / "bk")
    code, out, err = truncate("--json", "--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 0, err
    lines = out.splitlines()
    assert problems("truncate", lines) == []
    resumed = {
        "type": "resumed",
        "topic": "segmented",
        "partition": 0,
        "dir": "segmented-0",
        "path": str(part),
        "manifest": str(manifest),
    }
    assert resumed in map(json.loads, lines)


def test_an_interrupted_repair_that_cannot_be_finished_says_undo(tmp_path: Path, monkeypatch) -> None:
    part = damaged_segmented(tmp_path)
    real = repair._apply_actions

    def crashing(*args, **kwargs):
        raise PowerCut

    monkeypatch.setattr(repair, "_apply_actions", crashing)
    with pytest.raises(PowerCut):
        truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    monkeypatch.setattr(repair, "_apply_actions", real)
    [manifest] = manifests(tmp_path / "bk")
    with open(part / "00000000000000000000.log", "r+b") as f:  # changed since: a broker ran meanwhile
        f.write(b"\xff")
    changed = tree_digest(part)
    code, out, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 1
    assert f"ktool truncate --undo {manifest}" in one_line(err) and "interrupted" in err
    assert tree_digest(part) == changed


def test_a_full_backup_disk_is_one_line_and_leaves_no_partial_backup(tmp_path: Path) -> None:
    part = damaged_segmented(tmp_path)
    disk = tmp_path / "small"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)]).returncode != 0:
        needs("cannot mount a tmpfs here (needs root)")
    try:
        (disk / "filler").write_bytes(b"\0" * (64 * 1024 - 12 * 1024))  # room for ~12 KiB, not 20
        before = tree_digest(part)
        code, out, err = truncate("--force", "--backup-dir", str(disk / "bk"), str(part))
        assert code == 3
        assert f"{disk / 'bk'}" in one_line(err) and "no space left on device" in err
        assert tree_digest(part) == before
        assert sorted(p.name for p in disk.iterdir()) == ["bk", "filler"]
        assert list((disk / "bk").iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_write_failing_half_way_is_one_line_and_the_rerun_finishes(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "clean").mkdir()
    clean = damaged_segmented(tmp_path / "clean")
    assert truncate("--force", "--backup-dir", str(tmp_path / "clean-bk"), str(clean))[0] == 0
    part = damaged_segmented(tmp_path)
    real = os.replace

    def full_disk(src, dst, *args, **kwargs):  # the log dir's disk fills as the first index is replaced
        # (in the partition directory ktool renames by name, relative to the directory it holds open)
        if kwargs.get("dst_dir_fd") is not None and str(dst).endswith(".index"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(src))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", full_disk)
    code, _, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    monkeypatch.setattr(os, "replace", real)
    [manifest] = manifests(tmp_path / "bk")
    assert code == 3 and "no space left on device" in one_line(err)
    assert f"run the same ktool truncate again to finish it, or ktool truncate --undo {manifest}" in err
    assert list(part.glob("*.ktool*")) == [part / repair.POINTER]  # no temporary file; the unfinished
    code, out, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))  # repair's pointer
    assert code == 0 and "finished the interrupted repair" in out, err
    assert tree_digest(part) == tree_digest(clean)


# -- owner, group and mode ------------------------------------------------------------------------------


def owners(part: Path) -> dict[str, tuple[int, int, int]]:
    return {
        p.name: (p.stat().st_uid, p.stat().st_gid, stat.S_IMODE(p.stat().st_mode)) for p in part.iterdir()
    }


def test_owner_group_and_mode_are_kept_through_repair_and_undo(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        needs("giving files to another owner needs root")
    part = damaged_segmented(tmp_path)
    (part / "00000000000000000000.index").unlink()  # rebuilt from nothing: created like its segment
    for f in part.iterdir():
        os.chown(f, 1234, 2345)
        os.chmod(f, 0o600)
    before, digest = owners(part), tree_digest(part)
    code, _, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 0, err
    after = owners(part)
    assert set(after.values()) == {(1234, 2345, 0o600)}, after
    assert "00000000000000000000.index" in after
    [manifest] = manifests(tmp_path / "bk")
    backup = manifest.parent
    assert stat.S_IMODE(backup.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in backup.iterdir()} == {0o600}
    assert truncate("--undo", str(manifest))[0] == 0
    assert owners(part) == before and tree_digest(part) == digest
