"""Files that must survive a crash: the manifests and journals of the mutating commands.

Written to a temporary name, fsynced, renamed over the old one and the directory fsynced, so a reader
finds either the old or the new document, never a torn one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kafka_tools.errors import InputError


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, document: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    # 0600: a manifest or journal names files and offsets of a cluster, for its operator only
    with open(tmp, "w", opener=lambda p, flags: os.open(p, flags, 0o600)) as f:
        json.dump(document, f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_json(path: Path, what: str, required: str) -> dict:
    """A document written by `write_json`, checked to be a format-1 `what` holding `required`."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a ktool {what} ({exc})") from None
    if not isinstance(document, dict) or document.get("format") != 1 or required not in document:
        raise InputError(f"{path}: not a ktool {what}")
    return document
