"""The tables under --out: checked before Spark starts, written to a staging directory beside the old
ones and swapped in only when every table is complete (pipeline/out_swap.py): no half-written table is
ever left looking done, and --overwrite never loses the old tables to a scan that fails or is killed."""

from __future__ import annotations

import os
import re
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from kafka_tools.errors import InputError, UsageError, os_reason
from kafka_tools.pipeline import out_swap, tables
from kafka_tools.pipeline.out_swap import STAGING_PREFIX, HadoopFiles, LocalFiles, OutFiles, OutLock
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


class Staging:
    """The tables are written under `OUT/_ktool-staging-ID/` and swapped into `OUT/` only once every
    one of them is complete (`out_swap.swap`): a scan that fails or is interrupted before leaves the
    old tables as they were, and one killed during the swap leaves a record the next scan finishes.
    A local --out is locked (`OutLock`) from entering the block until the swap is done."""

    def __init__(self, spark, out: str | None, overwrite: bool = False) -> None:
        self.spark = spark
        self.out = out
        self.overwrite = overwrite
        self.path = table_path(out, f"{STAGING_PREFIX}{uuid.uuid4().hex[:12]}") if out else None
        self.replaced: list[str] = []  # the earlier tables the swap replaced
        local = local_dir(out) if out else None
        self._lock = OutLock(local) if local is not None else None

    def __enter__(self) -> Staging:
        if self._lock is not None:
            self._lock.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """A scan that fails or is interrupted inside the block leaves the old tables and no new one.
        Under Spark a task still running (its master lost, the job being cancelled) can write into the
        directory after it is removed: it is removed again once the session has stopped
        (`discard_leftovers`)."""
        try:
            if exc_type is not None and not self._swap_recorded():
                self.discard()
                if self.spark is not None and self.path is not None:
                    _LEFTOVERS.append(self)
        finally:
            if self._lock is not None:
                self._lock.__exit__(exc_type, exc, tb)

    def _swap_recorded(self) -> bool:
        """Whether the swap has begun (its record made): then the staging directory holds the only copy
        of some tables and is never discarded; the next scan finishes the swap. Unknown (the filesystem
        unreachable) counts as begun: a staging directory left behind is removed by the next scan."""
        if self.path is None:
            return False
        try:
            return self.files().exists(out_swap.join(local_dir(self.path) or self.path, out_swap.RECORD))
        except Exception:  # noqa: BLE001 - the master or the filesystem may be gone
            return True

    def files(self) -> OutFiles:
        return LocalFiles() if local_dir(self.out or "") is not None else HadoopFiles(self.spark)

    def publish(self, written: list[TableWritten]) -> list[TableWritten]:
        """Swap every finished table into OUT/ (nothing to move for a scan without `--out`); the earlier
        tables there, the ones this scan wrote again and the ones it did not, go with the swap."""
        if self.path is None or self.out is None:
            return written
        files = self.files()
        out = local_dir(self.out) or self.out
        staging = local_dir(self.path) or self.path
        try:
            old = [name for name in TABLES if files.exists(out_swap.join(out, name))]
        except Exception as exc:
            raise InputError(f"--out {self.out}: {_java_line(exc)}") from None
        if old and not self.overwrite:  # written there since this scan looked
            raise UsageError(
                f"{self.out} already holds {', '.join(old)}: choose another --out or add --overwrite"
            )
        new = [t.name for t in written]
        try:
            out_swap.swap(files, out, staging, new, old)
        except Exception as exc:
            if not self._swap_recorded():
                raise InputError(
                    f"--out {self.out}: cannot swap the new tables in: {_os_line(exc)}; "
                    "the earlier ones are kept"
                ) from None
            raise InputError(
                f"--out {self.out}: the swap of the new tables stopped: {_os_line(exc)}; "
                "the next `ktool scan --out` there finishes it"
            ) from None
        self.replaced = old
        return [replace(t, path=table_path(self.out, t.name)) for t in written]

    def discard(self) -> None:
        """Remove the staging directory (best effort: the scan is failing or done)."""
        if self.path is None:
            return
        try:
            self.files().remove(local_dir(self.path) or self.path)
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


@dataclass
class OutDir:
    """--out as a scan found it: the earlier tables (replaced at the end, with --overwrite) and what it
    did with a killed scan's leftovers (one line each, for stderr)."""

    existing: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)


def prepare_out_dir(options: ScanOptions, spark=None) -> OutDir:
    """Before any work: --out must be a directory ktool can create and write in, and hold no table of
    an earlier scan, unless --overwrite (the earlier tables then stay until the new ones are complete).
    A killed scan's leftovers there are dealt with first: its swap finished, its staging removed.
    A local --out is checked before Spark starts; a Hadoop URI (spark given) through Hadoop's
    FileSystem."""
    if not options.out:
        return OutDir()
    local = local_dir(options.out)
    if local is not None:
        return _prepare_local(options, local)
    if spark is None:
        return OutDir()
    return _prepare_hadoop(options, spark)


def _prepare_local(options: ScanOptions, local: str) -> OutDir:
    said = recover_local(options, local)
    existing = [n for n in TABLES if os.path.lexists(os.path.join(local, n))]
    _refuse_unless_overwrite(options, existing)
    return OutDir(existing, said)


def recover_out_dir(options: ScanOptions) -> list[str]:
    """A local --out made (it must be writable) and a killed scan's leftovers there dealt with, before
    it is checked: the lines saying what was done (the CLI prints them even when it then refuses)."""
    local = local_dir(options.out) if options.out else None
    return recover_local(options, local) if local is not None else []


def recover_local(options: ScanOptions, local: str) -> list[str]:
    try:
        os.makedirs(local, exist_ok=True)
        with tempfile.TemporaryFile(dir=local):
            pass
    except OSError as exc:
        raise InputError(f"--out {options.out}: cannot write there: {os_reason(exc)}") from None
    with OutLock(local):
        try:
            recovered = out_swap.recover(LocalFiles(), local)
        except OSError as exc:
            raise InputError(
                f"--out {options.out}: cannot finish an interrupted scan's work there: {_os_line(exc)}"
            ) from None
    return recovered.lines(options.out or local)


def _prepare_hadoop(options: ScanOptions, spark) -> OutDir:
    files = HadoopFiles(spark)
    out = options.out or ""
    try:
        recovered = out_swap.recover(files, out)
        existing = [name for name in TABLES if files.exists(table_path(out, name))]
    except Exception as exc:
        raise InputError(f"--out {options.out}: {_java_line(exc)}") from None
    _refuse_unless_overwrite(options, existing)
    return OutDir(existing, recovered.lines(out))


def _refuse_unless_overwrite(options: ScanOptions, existing: list[str]) -> None:
    if existing and not options.overwrite:
        raise UsageError(
            f"{options.out} already holds {', '.join(existing)}: choose another --out or add --overwrite"
        )


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
    """The one line for a table that cannot be written (the --out it was for, the system's reason),
    whoever writes it: the in-process writer, a task's part, the driver's `_SUCCESS`. A table of a
    staging directory names the --out beside it: nothing there was replaced."""
    staging = os.path.dirname(directory.rstrip("/"))
    if os.path.basename(staging).startswith(STAGING_PREFIX):
        out = os.path.dirname(staging)
        return InputError(
            f"cannot write the {name} table to --out {out}: {_os_line(exc)} (nothing there was replaced)"
        )
    return InputError(f"cannot write the {name} table to {directory}: {_os_line(exc)}")


def _os_line(exc: BaseException) -> str:
    """The system's reason for an OSError (its strerror), else the Java or plain text."""
    if isinstance(exc, OSError) and exc.strerror:
        # pyarrow's: "Error writing bytes to file. Detail: [errno 28] No space left on device"
        system = os.strerror(exc.errno) if exc.errno else ""
        return system if system and system in exc.strerror else exc.strerror
    return _java_line(exc)


def _java_line(exc: BaseException) -> str:
    """The first `SomeException: message` line of a Java error seen through py4j, else the text."""
    text = str(exc)
    match = re.search(r"([\w.$]+(?:Exception|Error)): ([^\n]*)", text)
    if match:
        return f"{match.group(1).rsplit('.', 1)[-1]}: {match.group(2).strip()}"
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
