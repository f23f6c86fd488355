"""The pointer in the partition directory (`.ktool-truncate-pending.deleted`): the manifest of an
unfinished repair, found whatever state directory a rerun is given."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kafka_tools import bounded_json
from kafka_tools.errors import InputError, os_reason
from kafka_tools.log.repair.file_copies import NEW_FILE
from kafka_tools.log.repair.held_dir import POINTER, POINTER_TMP, HeldDir

_POINTER_MAX = 1 << 16


def write_pointer(held: HeldDir, manifest_path: Path) -> None:
    held.unlink(POINTER_TMP, missing_ok=True)
    fd = held.open(POINTER_TMP, NEW_FILE)
    with open(fd, "wb") as f:
        f.write(json.dumps({"format": 1, "manifest": str(manifest_path)}).encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
    held.replace(POINTER_TMP, POINTER)
    held.fsync()


def pointed_manifest(held: HeldDir) -> Path | None:
    """The manifest the partition directory's pointer names (None: no pointer); InputError (exit 3,
    one line) for a pointer that is not one."""
    try:
        fd = held.open(POINTER, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{held.shown(POINTER)}: cannot read: {os_reason(exc)}") from None
    try:
        raw = os.read(fd, _POINTER_MAX + 1)
    finally:
        os.close(fd)
    try:
        doc = bounded_json.loads(raw) if len(raw) <= _POINTER_MAX else None
    except ValueError:
        doc = None
    target = doc.get("manifest") if isinstance(doc, dict) else None
    if not isinstance(target, str) or not os.path.isabs(target):
        raise InputError(
            f"{held.shown(POINTER)}: not a ktool truncate pointer; remove it if no repair is unfinished"
        )
    return Path(target)


def drop_pointer(held: HeldDir, manifest_path: Path | None = None) -> None:
    """The pointer removed (when it names `manifest_path`, if given): its repair is finished or undone."""
    try:
        named = pointed_manifest(held)
    except InputError:
        named = None
    if named is None and held.exists(POINTER) and manifest_path is not None:
        return
    if manifest_path is None or named == manifest_path:
        held.unlink(POINTER, missing_ok=True)
        held.fsync()
