"""The tables of an in-process scan written with pyarrow: the same directories, columns and types as
the Spark job writes, so a reader (Spark, pyarrow, DuckDB…) cannot tell which wrote them.

A table is a directory `OUT/NAME/` holding `part-00000.parquet` (or `.json`, JSON Lines as Spark's
writer makes them: every column on every line, nulls included, bytes in base64) and an empty
`_SUCCESS`, as Hadoop's committer leaves it. Batches are appended as they come (a ParquetWriter's row
groups), so memory stays the size of one batch whatever the table's size.

With `background`, a parquet table encodes each batch on a thread of its own while the caller builds
the next one (pyarrow's writer releases the GIL): one batch in flight, so two in memory at most. The
in-process scan uses it when it walks in one lane with a second core free (one range: local.py). With
several lanes each writes its own part file (`TableParts`) on its own thread instead.

A batch decoded from one byte range holds one file and one topic on every row: a table made with
`per_range=True` is given them with each batch (`add(batch, where=…)`), and those columns reach the
parquet writer as one-entry dictionary arrays, written as the same dictionary pages without the writer
hashing every row (~15% of the records table's encoding, bench/README.md, "scan --out on one core").
No Arrow schema is stored in the files (Spark stores none either), so every reader sees the table's
own types: strings, not dictionaries.
"""

from __future__ import annotations

import base64
import errno
import os
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress

from kafka_tools.compact_json import encoder
from kafka_tools.errors import InputError
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.output import CODECS, table_write_error
from kafka_tools.pipeline.plan import ScanOptions
from kafka_tools.pipeline.results import TableWritten


class TableFile:
    """One table being written: `add` Arrow RecordBatches of its schema, then `close`.

    `part` names the file (`part-NNNNN`): a Spark task writing its share of a table on this machine
    (job.LocalFiles, its main stage) writes part NNNNN = its task number, under a temporary name renamed
    at `close`, so a task run twice leaves one whole file, never half of one.

    `per_range`: every batch comes from one byte range of one segment, its file and topic given to
    `add` (the records, batches and metadata tables); not the segments or findings tables."""

    def __init__(
        self,
        out: str,
        name: str,
        fmt: str,
        part: int | None = None,
        background: bool = False,
        compression: str = "snappy",
        per_range: bool = False,
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
        # the file/topic columns `add` fills from `where` (parquet: as one-value dictionaries)
        self._where = [i for i, f in enumerate(self.schema) if per_range and f.name in tables.ONE_PER_RANGE]
        self._zeros = None  # int32 zeros: the dictionary indices of a one-value column
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
                import pyarrow as pa
                import pyarrow.parquet as pq

                columns = tables.TABLES[name]
                dictionary = tables.dictionary_columns(columns)
                schema = self.schema
                for i in self._where:
                    assert schema[i].name in dictionary
                    schema = schema.set(i, schema[i].with_type(pa.dictionary(pa.int32(), schema[i].type)))
                self._writer = pq.ParquetWriter(
                    path,
                    schema,
                    compression=codec,
                    use_dictionary=dictionary,
                    write_statistics=tables.statistics_columns(columns),
                    store_schema=False,
                )
                if background:
                    self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"ktool-{name}-writer")
            else:
                self._json = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
        except OSError as exc:
            raise table_write_error(name, self.dir, exc) from None

    def add(self, batch, where: dict | None = None) -> None:
        """Append `batch` (the table's schema). `where`: the file and topic every row of it holds (the
        values it was built with, `SegmentSpec.where`), required by a `per_range` table."""
        if batch.num_rows == 0:
            return
        self.rows += batch.num_rows
        if self._where:
            if where is None:
                raise ValueError(f"the {self.name} table's batches come with their file and topic (where=)")
            batch = self._one_value_columns(batch, where)
        try:
            if self._thread is not None:
                self._wait()  # the previous batch written (and its error raised) before the next goes
                self._pending = self._thread.submit(self._writer.write_batch, batch)
            elif self._writer is not None:
                self._writer.write_batch(batch)
            else:
                assert self._json is not None
                encode = encoder(_bytes)
                for row in batch.to_pylist():
                    self._json.write(encode(row))
                    self._json.write("\n")
        except OSError as exc:
            raise self._error(exc) from None

    def _one_value_columns(self, batch, where: dict):
        """`batch` with its file and topic columns made from `where` (the batch's own may be left empty,
        record_columns.record_batches(where=False)): for parquet, dictionary arrays of the one value."""
        import pyarrow as pa

        rows = batch.num_rows
        if self._zeros is None or self._zeros.size < 4 * rows:
            self._zeros = pa.py_buffer(bytes(4 * max(rows, 65536)))
        columns = batch.columns
        for i in self._where:
            field = batch.schema.field(i)
            value = where[field.name]
            if self._writer is None:  # JSON lines: plain values
                columns[i] = pa.repeat(pa.scalar(value, field.type), rows)
                continue
            if value is None:
                indices = pa.nulls(rows, pa.int32())
                values = pa.array([], field.type)
            else:
                indices = pa.Array.from_buffers(pa.int32(), rows, [None, self._zeros])
                values = pa.array([value], field.type)
            columns[i] = pa.DictionaryArray.from_arrays(indices, values)
        return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def _error(self, exc: OSError) -> InputError:
        self.abandon()
        return table_write_error(self.name, self.dir, exc)

    def abandon(self) -> None:
        """Close the file without completing it (the scan failed): a ParquetWriter left open would be
        closed by the garbage collector, which writes its footer again into a full disk, printing a
        traceback, and keeps the file open meanwhile."""
        thread, self._thread, self._pending = self._thread, None, None
        if thread is not None:
            thread.shutdown(wait=True, cancel_futures=True)
        writer, self._writer = self._writer, None
        if writer is not None:
            with suppress(OSError):
                writer.close()
            writer.is_open = False  # not again from its __del__
            with suppress(OSError):
                if writer.file_handle is not None:
                    writer.file_handle.close()
        json_file, self._json = self._json, None
        if json_file is not None:
            with suppress(OSError):
                json_file.close()

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


class TableParts:
    """One table written as `parts` part files side by side (`part-00000`, `part-00001`, …): each lane
    of an in-process scan (local.py) appends to its own, and as the lanes hold consecutive byte ranges,
    the files read in their names' order give the rows in the order one file would hold them. `close`
    completes every part, then adds `_SUCCESS`, as Spark's writer leaves a table of several parts."""

    def __init__(self, out: str, name: str, fmt: str, parts: int, **options) -> None:
        self.name = name
        self.fmt = fmt
        self.dir = os.path.join(out, name)
        try:
            os.makedirs(self.dir, exist_ok=True)
        except OSError as exc:
            raise table_write_error(name, self.dir, exc) from None
        self.files = [TableFile(out, name, fmt, part=k, **options) for k in range(parts)]

    def abandon(self) -> None:
        """Every part closed without completing it (the scan failed)."""
        for f in self.files:
            f.abandon()

    def close(self) -> TableWritten:
        try:
            rows = sum(f.close().rows for f in self.files)
        except BaseException:
            self.abandon()
            raise
        try:
            open(os.path.join(self.dir, "_SUCCESS"), "wb").close()
        except OSError as exc:
            raise table_write_error(self.name, self.dir, exc) from None
        return TableWritten(self.name, self.dir, self.fmt, rows)


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
