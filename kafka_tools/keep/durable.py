"""Files that must survive a crash: the manifests and journals of the mutating commands.

Written to a temporary name, fsynced, renamed over the old one and the directory fsynced, so a reader
finds either the old or the new document, never a torn one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from kafka_tools import bounded_json
from kafka_tools.errors import InputError


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, document: dict) -> None:
    """`document` in `path`, through a temporary file of this call's own (O_EXCL, mode 0600): two
    writers in one directory never share one, nor does one remove the other's."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def read_json(path: Path, what: str, required: str) -> dict:
    """A document written by `write_json`, checked to be a format-1 `what` holding `required`."""
    try:
        document = bounded_json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except (OSError, ValueError) as exc:  # JsonRejected: not JSON, nested too deep, too large
        raise InputError(f"{path}: not a ktool {what} ({exc})") from None
    if not isinstance(document, dict) or document.get("format") != 1 or required not in document:
        raise InputError(f"{path}: not a ktool {what}")
    return document
