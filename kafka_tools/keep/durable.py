"""Files that must survive a crash: the manifests and journals of the mutating commands.

A document is written whole, fsynced, and only then given a name: a new one is linked under a free
name (link(2) never replaces, so two runs never share one), a newer version is renamed over the old
one; the directory is fsynced after. A reader finds the old or the new document, never a torn or an
empty one, and a run killed at any point leaves no empty file under a document's name.

The bytes are written to an unnamed file (``O_TMPFILE``) where the file system has them, so a run
killed before the link leaves nothing at all. A newer version needs a name to be renamed from: the
temporary name ``.NAME.TOKEN.ktool.tmp``, held under ``flock`` from before it is visible until it is
renamed. A run killed between the two leaves it (the older document stays whole under NAME); the next
document written in that directory removes every such file whose writer is gone (its lock free), and
says which (:func:`sweep_temps`), never one a live writer holds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

from kafka_tools import bounded_json
from kafka_tools.errors import InputError

# `.NAME.TOKEN.ktool.tmp`: what this module (alone) names a document before it is renamed into place.
_TEMP = re.compile(r"^\..+\.[0-9a-f]{16}\.ktool\.tmp$")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _encoded(document: dict) -> bytes:
    return (json.dumps(document, indent=1) + "\n").encode()


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(8)}.ktool.tmp")


@contextlib.contextmanager
def _written(directory: Path, data: bytes) -> Iterator[tuple[int, Path | None]]:
    """An fd holding `data`, fsynced, mode 0600, under `flock`: unnamed (None) where the file system
    has O_TMPFILE, else under a temporary name of its own (removed on leaving). Closed on leaving."""
    fd, named = _unnamed(directory), None
    if fd is None:  # NFS and a few others: a named temporary file instead
        fd, named = _named_temp(directory)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        yield fd, named
    finally:
        os.close(fd)
        if named is not None:
            with contextlib.suppress(OSError):
                os.unlink(named)


def _unnamed(directory: Path) -> int | None:
    """An O_TMPFILE in `directory`, or None where the file system (or a missing /proc, through which it
    is linked) cannot give one."""
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None
        raise


def _named_temp(directory: Path) -> tuple[int, Path]:
    """A new `.ktool.TOKEN.ktool.tmp` in `directory`, locked: made again when a sweep removed it between
    its creation and the lock (a sweep only removes an unlocked one)."""
    while True:
        name = directory / f".ktool.{secrets.token_hex(8)}.ktool.tmp"
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(name).st_ino == os.fstat(fd).st_ino:
                return fd, name
        os.close(fd)


def _link(fd: int, named: Path | None, target: Path) -> None:
    """Give the written file the name `target` (FileExistsError when it is taken). Through the
    directory's fd: os.link of a /proc/self/fd path follows it only by linkat(2), which a dir fd asks for."""
    src = str(named) if named is not None else f"/proc/self/fd/{fd}"
    dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.link(src, target.name, dst_dir_fd=dir_fd, follow_symlinks=named is None)
    finally:
        os.close(dir_fd)


def create_json(directory: Path, stem: str, document: dict) -> tuple[Path, list[Path]]:
    """`document` under a new name in `directory`: `STEM.json`, else `STEM-2.json`, … (runs started in
    the same second each get their own). Nothing is visible under that name until the document is
    whole. Returns the name and the temporary files of killed runs removed (:func:`sweep_temps`)."""
    swept = sweep_temps(directory)
    with _written(directory, _encoded(document)) as (fd, named):
        for n in range(1, 10_000):
            path = directory / f"{stem}{'' if n == 1 else f'-{n}'}.json"
            try:
                _link(fd, named, path)
            except FileExistsError:
                continue
            break
        else:
            raise InputError(f"{directory}: no free name for a new {stem} document")
    fsync_dir(directory)
    return path, swept


def write_json(path: Path, document: dict) -> list[Path]:
    """`document` in `path`, replacing what is there in one rename; the temporary files of killed runs
    in its directory removed first, and returned."""
    swept = sweep_temps(path.parent)
    with _written(path.parent, _encoded(document)) as (fd, named):
        temp = _temp_name(path)
        _link(fd, named, temp)  # the lock taken on `fd` covers this name from its first moment
        try:
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    fsync_dir(path.parent)
    return swept


def sweep_temps(directory: Path) -> list[Path]:
    """Remove the temporary files this module names (`.NAME.TOKEN.ktool.tmp`, `.ktool.TOKEN.ktool.tmp`)
    whose writer is gone: their lock is free (a live writer holds it from before the name exists).
    Returns what was removed."""
    removed: list[Path] = []
    try:
        names = [
            e.name for e in os.scandir(directory) if _TEMP.match(e.name) and e.is_file(follow_symlinks=False)
        ]
    except OSError:
        return removed
    for name in names:
        path = directory / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.lstat(path).st_ino == os.fstat(fd).st_ino:
                os.unlink(path)
                removed.append(path)
        except OSError:  # held by a live writer, or gone meanwhile
            pass
        finally:
            os.close(fd)
    return removed


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
