"""The files a plan touches: each a name directly in the partition directory, and no link among them
unless the operator allows links. What a dry run asks too, without the backup machinery."""

from __future__ import annotations

import stat
from pathlib import Path

from kafka_tools.errors import InputError
from kafka_tools.log.checks.recovery import RecoveryPlan
from kafka_tools.log.repair.held_dir import HeldDir


def confined(partition: Path, path: Path) -> Path:
    """`path` when it names a file directly in `partition` (by name: `..`, other directories and other
    partitions are refused); InputError otherwise. Every path a plan or a manifest names passes here
    before it is touched (and is then touched by its name, relative to the held directory)."""
    if path.parent != partition or path.name in ("", ".", "..") or not path.is_absolute():
        raise InputError(
            f"{path}: not a file of the partition directory {partition}; ktool changes nothing outside it"
        )
    return path


def plan_files(plan: RecoveryPlan) -> list[Path]:
    """Every existing file the plan cuts, rewrites or deletes."""
    files: list[Path] = []
    if plan.cut is not None:
        files.append(plan.cut.segment.log)
        if plan.cut.segment.txn_index is not None and plan.new_log_end is not None:
            files.append(plan.cut.segment.txn_index)
    for seg in plan.deleted_segments:
        files += [f for f in (seg.log, seg.offset_index, seg.time_index, seg.txn_index) if f is not None]
    for seg, _ in plan.rebuild_indexes:
        files += [f for f in (seg.offset_index, seg.time_index) if f is not None]
    files += [p for p, _ in plan.deleted_snapshots]
    if plan.epoch_checkpoint_keep is not None and plan.partition.leader_epoch_checkpoint is not None:
        files.append(plan.partition.leader_epoch_checkpoint)
    return files


def check_links(plan: RecoveryPlan, held: HeldDir, allow_links: bool = False) -> None:
    """InputError (exit 3, one line) for the first file the plan would change that lies outside the
    partition directory, is a symbolic link, or has other hard links, unless `allow_links`."""
    for f in plan_files(plan):
        path = confined(held.path, held.shown(f))
        link = link_of(held, path.name)
        if link is not None and not allow_links:
            raise InputError(link_refusal(path, link))


def link_of(held: HeldDir, name: str) -> str | None:
    """`symlink:TARGET` for a symbolic link, `hardlink` for a file with other names, None otherwise."""
    st = held.lstat(name)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"symlink:{held.readlink(name)}"
    if st.st_nlink > 1:
        return "hardlink"
    return None


def link_refusal(path: Path, link: str) -> str:
    if link.startswith("symlink:"):
        return (
            f"{path}: a symbolic link (to {link[len('symlink:') :]}); ktool truncate changes files of the "
            "partition directory only, never through a link (--allow-links replaces the link by a copy)"
        )
    return (
        f"{path}: has other names (hard links, e.g. a `cp -al` snapshot) that changing it in place would "
        "change too (--allow-links gives it a copy of its own first)"
    )
