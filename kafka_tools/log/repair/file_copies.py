"""Bytes copied, hashed and written in the held partition directory: a backup's ranges (fsynced, their
sha256 kept in the manifest), a file replaced atomically with the owner and mode an action recorded. Every
file is opened relative to the held directory, never created through a link."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from kafka_tools.log.repair.held_dir import HeldDir

TEMP_SUFFIX = ".ktool.cleaned"  # a broker that starts after a crash deletes `*.cleaned` files itself
COPY_CHUNK = 1 << 20


def sha256_fd(fd: int, limit: int | None = None) -> str:
    h = hashlib.sha256()
    pos = 0
    while limit is None or pos < limit:
        chunk = os.pread(fd, COPY_CHUNK if limit is None else min(COPY_CHUNK, limit - pos), pos)
        if not chunk:
            break
        h.update(chunk)
        pos += len(chunk)
    return h.hexdigest()


def sha256_file(path: Path, limit: int | None = None) -> str:
    """A file of the backup directory (or a link's target), by path."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return sha256_fd(fd, limit)
    finally:
        os.close(fd)


def sha256_held(held: HeldDir, name: str, limit: int | None = None) -> str:
    fd = open_read(held, name)
    try:
        return sha256_fd(fd, limit)
    finally:
        os.close(fd)


def open_read(held: HeldDir, name: str) -> int:
    """A file of the held directory opened for reading; a symbolic link there is read through (its
    bytes are what a manifest keeps; nothing is ever written through it)."""
    return os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=held.fd)


def copy_fd(src: int, dst: int, start: int = 0, length: int | None = None) -> str:
    """Bytes [start, start+length) of src appended to dst, fsynced; their sha256."""
    h = hashlib.sha256()
    pos, end = start, None if length is None else start + length
    while end is None or pos < end:
        chunk = os.pread(src, COPY_CHUNK if end is None else min(COPY_CHUNK, end - pos), pos)
        if not chunk:
            break
        h.update(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view) :]
        pos += len(chunk)
    os.fsync(dst)
    return h.hexdigest()


NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def back_up_range(held: HeldDir, name: str, dst: Path, start: int = 0, length: int | None = None) -> str:
    """Bytes of the held directory's file `name` copied into a new file dst of the backup (never an
    existing one, never through a link), fsynced; their sha256."""
    src = open_read(held, name)
    try:
        out = os.open(dst, NEW_FILE, 0o600)
        try:
            return copy_fd(src, out, start, length)
        finally:
            os.close(out)
    finally:
        os.close(src)


def owner(held: HeldDir, name: str) -> dict:
    """Mode, owner and group of a file (through a link: the file's), as manifests record them."""
    st = held.stat(name)
    return {"mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}


def give_owner(fd: int, a: dict) -> None:
    """The mode, owner and group an action recorded, on a file ktool wrote (a broker running as its
    own user must still open it read-write). Old manifests recorded none: the file keeps its own."""
    if "uid" in a and (os.fstat(fd).st_uid, os.fstat(fd).st_gid) != (a["uid"], a["gid"]):
        try:
            os.fchown(fd, a["uid"], a["gid"])
        except PermissionError:
            pass  # not root: the file is ours, as every other file this user could have written
    if "mode" in a:
        os.fchmod(fd, a["mode"])


def write_atomic(held: HeldDir, name: str, data: bytes, a: dict) -> None:
    """`name` replaced by a file holding `data` with the action's owner and mode: written beside it
    under a temporary name, fsynced, renamed over it (a link at `name` is replaced, not followed)."""
    tmp = name + TEMP_SUFFIX
    held.unlink(tmp, missing_ok=True)
    fd = held.open(tmp, NEW_FILE)
    with open(fd, "wb") as f:
        f.write(data)
        f.flush()
        give_owner(f.fileno(), a)
        os.fsync(f.fileno())
    held.replace(tmp, name)
