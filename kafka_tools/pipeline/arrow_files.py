"""The tables of an in-process scan written with pyarrow: the same directories, columns and types as
the Spark job writes, so a reader (Spark, pyarrow, DuckDB…) cannot tell which wrote them.

A table is a directory `OUT/NAME/` holding `part-00000.parquet` (or `.json`, JSON Lines as Spark's
writer makes them: every column on every line, nulls included, bytes in base64) and an empty
`_SUCCESS`, as Hadoop's committer leaves it. Batches are appended as they come (a ParquetWriter's row
groups), so memory stays the size of one batch whatever the table's size.

With `background`, a parquet table encodes each batch on a thread of its own while the caller builds
the next one (pyarrow's writer releases the GIL): one batch in flight, so two in memory at most. The
in-process scan uses it when it has a second core (bench/README.md, "scan --out at the decoder's speed").
"""

from __future__ import annotations

import base64
import errno
import json
import os
import uuid
from concurrent.futures import Future, ThreadPoolExecutor

from kafka_tools.errors import InputError
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.output import CODECS
from kafka_tools.pipeline.plan import ScanOptions
from kafka_tools.pipeline.results import TableWritten

_COMPACT = (",", ":")


class TableFile:
    """One table being written: `add` Arrow RecordBatches of its schema, then `close`.

    `part` names the file (`part-NNNNN`): a Spark task writing its share of a table on this machine
    (job.LocalFiles, its main stage) writes part NNNNN = its task number, under a temporary name renamed
    at `close`, so a task run twice leaves one whole file, never half of one."""

    def __init__(
        self,
        out: str,
        name: str,
        fmt: str,
        part: int | None = None,
        background: bool = False,
        compression: str = "snappy",
    ) -> None:
        self.name = name
        self.fmt = fmt
        self.dir = os.path.join(out, name)
        self.schema = tables.arrow_schema(tables.TABLES[name])
        self.rows = 0
        self._writer = None
        self._json = None
        self._rename: tuple[str, str] | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._pending: Future | None = None
        try:
            if part is None:
                os.makedirs(self.dir, exist_ok=True)
            elif not os.path.isdir(self.dir):  # a task: the driver made it; gone = the scan was abandoned
                raise FileNotFoundError(errno.ENOENT, "the scan's staging directory is gone")
            codec, _, infix = CODECS[compression]
            suffix = f"{infix}.parquet" if fmt == "parquet" else ".json"
            path = os.path.join(self.dir, f"part-{part or 0:05d}{suffix}")
            if part is not None:
                self._rename = (f"{path}.{uuid.uuid4().hex[:12]}.tmp", path)
                path = self._rename[0]
            if fmt == "parquet":
                import pyarrow.parquet as pq

                columns = tables.TABLES[name]
                self._writer = pq.ParquetWriter(
                    path,
                    self.schema,
                    compression=codec,
                    use_dictionary=tables.dictionary_columns(columns),
                    write_statistics=tables.statistics_columns(columns),
                )
                if background:
                    self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"ktool-{name}-writer")
            else:
                self._json = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
        except OSError as exc:
            raise InputError(f"cannot write the {name} table to {self.dir}: {exc.strerror or exc}") from None

    def add(self, batch) -> None:
        if batch.num_rows == 0:
            return
        self.rows += batch.num_rows
        try:
            if self._thread is not None:
                self._wait()  # the previous batch written (and its error raised) before the next goes
                self._pending = self._thread.submit(self._writer.write_batch, batch)
            elif self._writer is not None:
                self._writer.write_batch(batch)
            else:
                assert self._json is not None
                for row in batch.to_pylist():
                    self._json.write(json.dumps(row, default=_bytes, ensure_ascii=False, separators=_COMPACT))
                    self._json.write("\n")
        except OSError as exc:
            raise self._error(exc) from None

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def _error(self, exc: OSError) -> InputError:
        return InputError(f"cannot write the {self.name} table to {self.dir}: {exc.strerror or exc}")

    def close(self) -> TableWritten:
        try:
            if self._thread is not None:
                try:
                    self._wait()
                finally:
                    self._thread.shutdown()
                    self._thread = None
            if self._writer is not None:
                self._writer.close()
            if self._json is not None:
                self._json.close()
            if self._rename is not None:  # a task's part: the driver writes _SUCCESS once all are done
                os.replace(*self._rename)
                return TableWritten(self.name, self.dir, self.fmt, self.rows)
            open(os.path.join(self.dir, "_SUCCESS"), "wb").close()
        except OSError as exc:
            raise self._error(exc) from None
        return TableWritten(self.name, self.dir, self.fmt, self.rows)


def _bytes(value: object) -> str:
    """Bytes as Spark's JSON writer puts a binary column: base64."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write_rows(out: str, name: str, options: ScanOptions, rows: list[dict]) -> TableWritten:
    """A small table the driver built (segments, findings) from its rows."""
    import pyarrow as pa

    columns = tables.TABLES[name]
    table = TableFile(out, name, options.fmt, compression=options.compression)
    schema = table.schema
    data = {n: [r[n] for r in rows] for n in tables.names(columns)}
    table.add(pa.RecordBatch.from_arrays([pa.array(data[f.name], f.type) for f in schema], schema=schema))
    return table.close()
