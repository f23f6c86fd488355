"""The tables under --out: checked and cleared before Spark starts, written to a staging directory and
moved into place only when every table is complete (no half-written table is ever left looking done)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from urllib.parse import urlsplit

from kafka_tools.errors import InputError, UsageError
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.plan import ScanOptions
from kafka_tools.pipeline.results import ScanResult, TableWritten, finding_row

FORMATS = ("parquet", "json")
# --compression: a parquet table's codec, as (pyarrow names it, Spark names it, its part files' suffix
# as Spark's writer makes it). snappy by default, as Spark's own: fast, and key/value payloads (JSON,
# text) still shrink about 2x; none writes 1.6x faster but twice the bytes; zstd the smallest files
# (bench/README.md, "scan --out at the decoder's speed").
CODECS = {
    "snappy": ("snappy", "snappy", ".snappy"),
    "zstd": ("zstd", "zstd", ".zstd"),
    "lz4": ("lz4", "lz4_raw", ".lz4raw"),
    "none": ("none", "none", ""),
}
TABLES = ("segments", "batches", "findings", "records", "offsets", "metadata")  # what --out holds
STAGING_PREFIX = "_ktool-staging-"  # where the tables are written before they are moved into --out


class Staging:
    """The tables are written under `OUT/_ktool-staging-ID/` and moved to `OUT/` (a rename each) only
    once every one of them is complete: a scan that fails or is interrupted leaves no table, and no
    half-written one beside complete ones."""

    def __init__(self, spark, out: str | None) -> None:
        self.spark = spark
        self.out = out
        self.path = table_path(out, f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}") if out else None

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """A scan that fails or is interrupted inside the block leaves no table behind. Under Spark a
        task still running (its master lost, the job being cancelled) can write into the directory
        after it is removed: it is removed again once the session has stopped (`discard_leftovers`)."""
        if exc_type is not None:
            self.discard()
            if self.spark is not None and self.path is not None:
                _LEFTOVERS.append(self)

    def publish(self, written: list[TableWritten]) -> list[TableWritten]:
        """Move every finished table to OUT/ (nothing to move for a scan without `--out`)."""
        if self.path is None:
            return written
        final = []
        for t in written:
            target = table_path(self.out, t.name)
            self._move(t.path, target)
            final.append(replace(t, path=target))
        self.discard()
        return final

    def _move(self, src: str, dst: str) -> None:
        local = local_dir(src)
        try:
            if local is not None:
                os.rename(local, local_dir(dst) or dst)
                return
            jvm = self.spark.sparkContext._jvm
            path = jvm.org.apache.hadoop.fs.Path(src)
            fs = path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
            if not fs.rename(path, jvm.org.apache.hadoop.fs.Path(dst)):
                raise OSError(f"rename to {dst} refused")
        except Exception as exc:
            raise InputError(f"cannot move the finished table {src} to {dst}: {_java_line(exc)}") from None

    def discard(self) -> None:
        """Remove the staging directory (best effort: the scan is failing or done)."""
        if self.path is None:
            return
        local = local_dir(self.path)
        try:
            if local is not None:
                shutil.rmtree(local, ignore_errors=True)
                return
            jvm = self.spark.sparkContext._jvm
            path = jvm.org.apache.hadoop.fs.Path(self.path)
            path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)
        except Exception:  # noqa: BLE001 - the master or the filesystem may be gone; leave it
            pass


_LEFTOVERS: list[Staging] = []


LEFTOVER_RETRY_S = 3.0  # how long a local staging directory that a last task wrote into is retried


def discard_leftovers() -> None:
    """Remove again the staging directories of failed scans (called once Spark has stopped, or given
    up waiting for it after its master was lost). A task still writing can create a file inside the
    directory while it is being removed (rmtree then fails on the directory, which is left): a local
    one is removed again until it is gone, for LEFTOVER_RETRY_S at most."""
    while _LEFTOVERS:
        staging = _LEFTOVERS.pop()
        staging.discard()
        local = local_dir(staging.path) if staging.path else None
        deadline = time.monotonic() + LEFTOVER_RETRY_S
        while local is not None and os.path.exists(local) and time.monotonic() < deadline:
            time.sleep(0.05)
            staging.discard()


def write_small_tables(spark, options: ScanOptions, result: ScanResult) -> list[TableWritten]:
    """The tables the driver builds (segments, findings), one file each, written side by side (two
    Spark jobs at once: each is mostly fixed cost)."""
    findings = [finding_row(f) for f in result.validation.all_findings()]
    jobs = [("segments", tables.SEGMENTS, result.segments), ("findings", tables.FINDINGS, findings)]

    def one(job: tuple) -> TableWritten:
        name, columns, rows = job
        data = [tuple(r[c] for c in tables.names(columns)) for r in rows]
        df = spark.createDataFrame(data, tables.spark_ddl(columns)).coalesce(1)
        return write(df, options, name, len(data))

    with ThreadPoolExecutor(len(jobs)) as pool:
        return list(pool.map(one, jobs))


# -- output --------------------------------------------------------------------------------------


def check_formats(options: ScanOptions) -> None:
    """--format and --compression as a scan takes them (a usage error otherwise)."""
    if options.fmt not in FORMATS:
        raise UsageError(f"--format {options.fmt}: expected one of {', '.join(FORMATS)}")
    if options.compression not in CODECS:
        raise UsageError(f"--compression {options.compression}: expected one of {', '.join(CODECS)}")


def table_path(out: str, name: str) -> str:
    return out.rstrip("/") + "/" + name


def local_dir(out: str) -> str | None:
    parts = urlsplit(out)
    if parts.scheme in ("", "file"):
        return parts.path if parts.scheme else out
    return None


def prepare_out_dir(options: ScanOptions, spark=None) -> list[str]:
    """Before any work: --out must be a directory ktool can create and write in, and hold no table of
    an earlier scan, unless --overwrite; then every earlier table goes, the ones this scan writes and
    the ones it does not (a `records` table of another scan must not stay beside new `segments`).
    A local --out is checked before Spark starts; a Hadoop URI (spark given) through Hadoop's
    FileSystem. Returns the tables removed."""
    if not options.out:
        return []
    local = local_dir(options.out)
    if local is not None:
        return _prepare_local(options, local)
    if spark is None:
        return []
    return _prepare_hadoop(options, spark)


def _prepare_local(options: ScanOptions, local: str) -> list[str]:
    try:
        os.makedirs(local, exist_ok=True)
        with tempfile.TemporaryFile(dir=local):
            pass
    except OSError as exc:
        raise InputError(f"--out {options.out}: cannot write there: {exc.strerror or exc}") from None
    existing = [n for n in TABLES if os.path.lexists(os.path.join(local, n))]
    if existing and not options.overwrite:
        raise UsageError(
            f"{options.out} already holds {', '.join(existing)}: choose another --out or add --overwrite"
        )
    for name in existing:
        path = os.path.join(local, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError as exc:
            raise InputError(f"--overwrite: cannot remove {path}: {exc.strerror or exc}") from None
    return existing


def _prepare_hadoop(options: ScanOptions, spark) -> list[str]:
    sc = spark.sparkContext
    jvm = sc._jvm
    existing, paths = [], {}
    try:
        for name in TABLES:
            path = jvm.org.apache.hadoop.fs.Path(table_path(options.out or "", name))
            fs = path.getFileSystem(sc._jsc.hadoopConfiguration())
            if fs.exists(path):
                existing.append(name)
                paths[name] = (fs, path)
    except Exception as exc:
        raise InputError(f"--out {options.out}: {_java_line(exc)}") from None
    if existing and not options.overwrite:
        raise UsageError(
            f"{options.out} already holds {', '.join(existing)}: choose another --out or add --overwrite"
        )
    for name in existing:
        fs, path = paths[name]
        try:
            fs.delete(path, True)
        except Exception as exc:
            raise InputError(f"--overwrite: cannot remove {path.toString()}: {_java_line(exc)}") from None
    return existing


def write(df, options: ScanOptions, name: str, rows: int | None = None) -> TableWritten:
    path = table_path(options.out or "", name)
    writer = df.write.format(options.fmt).mode("overwrite")
    if options.fmt == "parquet":
        writer = writer.option("compression", CODECS[options.compression][1])
    if options.fmt == "json":
        writer = writer.option("ignoreNullFields", "false")  # every column on every line, null or not
    elif name in tables.TABLES:  # no dictionary where it does not pay (tables.dictionary_columns)
        columns = tables.TABLES[name]
        for column in set(tables.names(columns)) - set(tables.dictionary_columns(columns)):
            writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
    try:
        writer.save(path)
    except Exception as exc:
        if type(exc).__module__.startswith(("py4j", "pyspark")) and "PythonException" not in str(exc)[:300]:
            raise InputError(f"cannot write the {name} table to {path}: {_java_line(exc)}") from None
        raise
    return TableWritten(name, path, options.fmt, rows)


def table_write_error(name: str, directory: str, exc: OSError) -> InputError:
    """The one line for a table that cannot be written (its directory, the system's reason), whoever
    writes it: the in-process writer, a task's part, the driver's `_SUCCESS`."""
    return InputError(f"cannot write the {name} table to {directory}: {exc.strerror or exc}")


def _java_line(exc: BaseException) -> str:
    """The first `SomeException: message` line of a Java error seen through py4j, else the text."""
    text = str(exc)
    match = re.search(r"([\w.$]+(?:Exception|Error)): ([^\n]*)", text)
    if match:
        return f"{match.group(1).rsplit('.', 1)[-1]}: {match.group(2).strip()}"
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
