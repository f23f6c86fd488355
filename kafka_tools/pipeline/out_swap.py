"""Replacing the tables under --out without ever losing them: the new tables are complete in a staging
directory beside the old ones before any old one is touched; then a recorded swap moves the old tables
aside (into the staging directory), the new ones in, and removes the staging directory with the old
tables in it. Every step is a rename on one filesystem. A scan killed at any point leaves either the
old tables with a staging directory that holds no record (removed by the next scan on that --out) or a
record, from which the next scan finishes the swap: old or new tables, never neither, never a mix
once the next scan has run.

The record is a directory of empty files named for the tables (`new.NAME`, `old.NAME`), made under a
temporary name and renamed into place: the same few operations (make, list, rename, delete) on a local
directory and on a Hadoop filesystem."""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass, field
from typing import Protocol

from kafka_tools.errors import InputError, os_reason

STAGING_PREFIX = "_ktool-staging-"  # where the tables are written before they are moved into --out
RECORD = "_ktool-swap"  # in the staging directory: the swap has begun (its tables are complete)
REPLACED = "_ktool-replaced"  # in the staging directory: the old tables, moved aside


class OutFiles(Protocol):
    """The filesystem operations the swap needs (paths are strings under --out)."""

    def exists(self, path: str) -> bool: ...
    def names(self, path: str) -> list[str]: ...
    def mkdir(self, path: str) -> None: ...
    def touch(self, path: str) -> None: ...
    def rename(self, src: str, dst: str) -> None: ...
    def remove(self, path: str) -> None: ...
    def sync(self, path: str) -> None: ...


@dataclass
class SwapRecord:
    """What a swap moves: the staged tables (new) and the tables under --out they replace (old)."""

    new: list[str] = field(default_factory=list)
    old: list[str] = field(default_factory=list)


@dataclass
class Recovered:
    """What the next scan did with a killed scan's leftovers under --out."""

    finished: list[str] = field(default_factory=list)  # staging directories whose swap it finished
    removed: list[str] = field(default_factory=list)  # staging directories of scans that never finished

    def lines(self, out: str) -> list[str]:
        said = []
        if self.finished:
            said.append(f"--out {out}: finished the swap of the tables an interrupted scan had completed")
        if self.removed:
            left = ", ".join(self.removed)
            said.append(f"--out {out}: removed the unfinished tables of an interrupted scan ({left})")
        return said


def join(directory: str, name: str) -> str:
    return directory.rstrip("/") + "/" + name


def swap(files: OutFiles, out: str, staging: str, new: list[str], old: list[str]) -> None:
    """Record the swap, then run it (the staged tables `new` replace the tables `old` under `out`)."""
    record = join(staging, RECORD)
    draft = record + ".tmp"
    if files.exists(draft):
        files.remove(draft)
    files.mkdir(draft)
    for name in new:
        files.touch(join(draft, f"new.{name}"))
    for name in old:
        files.touch(join(draft, f"old.{name}"))
    files.sync(draft)
    files.rename(draft, record)  # from here on the swap is finished by whoever runs next
    files.sync(staging)
    finish(files, out, staging, SwapRecord(new, old))


def finish(files: OutFiles, out: str, staging: str, record: SwapRecord) -> None:
    """Run a recorded swap, or the rest of one a killed scan began: each step is done only if it was not.
    All old tables go aside before any new one comes in, so an old table still under `out` is one whose
    copy under REPLACED does not exist yet."""
    aside = join(staging, REPLACED)
    if record.old and not files.exists(aside):
        files.mkdir(aside)
    for name in record.old:
        if files.exists(join(out, name)) and not files.exists(join(aside, name)):
            files.rename(join(out, name), join(aside, name))
    for name in record.new:
        if files.exists(join(staging, name)):
            files.rename(join(staging, name), join(out, name))
    files.sync(out)
    files.remove(staging)  # done: what is left in it (the record, the old tables) can go in any order
    files.sync(out)


def read_record(files: OutFiles, staging: str) -> SwapRecord | None:
    """The swap recorded in `staging`, or None (its scan was killed before its tables were complete)."""
    record = join(staging, RECORD)
    if not files.exists(record):
        return None
    found = SwapRecord()
    for entry in sorted(files.names(record)):
        kind, _, name = entry.partition(".")
        if kind == "new":
            found.new.append(name)
        elif kind == "old":
            found.old.append(name)
    return found


def recover(files: OutFiles, out: str) -> Recovered:
    """Finish or remove what killed scans left under `out` (called with `out` locked, where it can be)."""
    done = Recovered()
    if not files.exists(out):
        return done
    for name in sorted(files.names(out)):
        if not name.startswith(STAGING_PREFIX):
            continue
        staging = join(out, name)
        record = read_record(files, staging)
        if record is None:
            files.remove(staging)
            done.removed.append(name)
        else:
            finish(files, out, staging, record)
            done.finished.append(name)
    return done


# -- the filesystems ---------------------------------------------------------------------------------


class LocalFiles:
    """A local --out. Renames and the record are made durable (fsync of the directories)."""

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def names(self, path: str) -> list[str]:
        return os.listdir(path)

    def mkdir(self, path: str) -> None:
        os.mkdir(path, 0o700)

    def touch(self, path: str) -> None:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))

    def rename(self, src: str, dst: str) -> None:
        os.rename(src, dst)

    def remove(self, path: str) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)

    def sync(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class HadoopFiles:
    """A --out on a Hadoop filesystem (hdfs://, s3a://…), through the Spark driver's JVM."""

    def __init__(self, spark) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _fs(self, path: str):
        p = self._jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(self._conf), p

    def exists(self, path: str) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p))

    def names(self, path: str) -> list[str]:
        fs, p = self._fs(path)
        return [s.getPath().getName() for s in fs.listStatus(p)]

    def mkdir(self, path: str) -> None:
        fs, p = self._fs(path)
        if not fs.mkdirs(p):
            raise OSError(f"cannot make {path}")

    def touch(self, path: str) -> None:
        fs, p = self._fs(path)
        fs.create(p, False).close()

    def rename(self, src: str, dst: str) -> None:
        fs, p = self._fs(src)
        if not fs.rename(p, self._jvm.org.apache.hadoop.fs.Path(dst)):
            raise OSError(f"rename to {dst} refused")

    def remove(self, path: str) -> None:
        fs, p = self._fs(path)
        fs.delete(p, True)

    def sync(self, path: str) -> None:
        pass  # a Hadoop filesystem's rename is durable when it returns


# -- one scan at a time on a local --out -------------------------------------------------------------


class OutLock:
    """An exclusive lock on a local --out directory (flock on the directory itself: no file is left
    there), held by a scan from the first look at its leftovers until its tables are in place, so a
    scan never takes another running scan's staging directory for a killed one's."""

    def __init__(self, out: str) -> None:
        self.out = out
        self._fd: int | None = None

    def __enter__(self) -> OutLock:
        try:
            fd = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise InputError(f"--out {self.out}: cannot write there: {os_reason(exc)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InputError(f"--out {self.out}: another ktool scan is writing there; wait for it") from None
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)  # the lock goes with the descriptor
            self._fd = None
