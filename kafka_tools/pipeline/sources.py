"""What the two segment sources of `ktool scan` share: local paths (`job.LocalFiles`, tasks open the
files themselves) and URIs (`remote.RemoteFiles`, Spark reads the bytes). Each runs the same task
functions through its own `_stage`; the stages it is asked for are defined once, here."""

from __future__ import annotations

from functools import partial

from kafka_tools.pipeline import tables


class SegmentSource:
    scanned = None  # an accumulator: each task adds the segment bytes of the ranges it has done
    arrow_batches = False  # its stages take Arrow batches from the task functions, not only column lists
    # its main stage's tasks can write their parts of the batches and records tables (main(…_to=…))
    tasks_write = False

    # each source runs the task functions its own way; batches_to and rowless only a tasks_write one
    def _stage(self, columns, produce, records_to=None, batches_to=None, rowless: bool = False):
        raise NotImplementedError

    def main(self, meta, batches: bool = True, records_to=None, batches_to=None, rowless: bool = False):
        """The main stage: the `batches` rows of every range (if `batches`); each range's totals and
        its segment's report (first ranges) go to the accumulator `meta`. With `records_to` (a
        `tasks_write` source: (directory, ScanOptions)), each task also writes its part of the
        `records` table there, range after range, in the same walk; with `batches_to` likewise its
        part of the `batches` table. `rowless` (a `tasks_write` source, whose tasks hand Spark no row:
        `batches_to` given or `batches` False): a plain RDD to `count()`, not a DataFrame."""
        from kafka_tools.pipeline.range_task import range_chunks

        def sink(item: tuple) -> None:
            meta.add([item])

        produce = partial(range_chunks, sink=sink, batches=batches, arrow=self.arrow_batches)
        if rowless:
            assert batches_to is not None or not batches
            return self._stage(tables.BATCHES, produce, records_to, batches_to=batches_to, rowless=True)
        return self._stage(tables.BATCHES, produce, records_to)

    def table(self, table: str):
        """The `records` (or `metadata`) rows of every range (the same tasks as the main stage)."""
        if table == "metadata":
            from kafka_tools.pipeline.metadata_records import metadata_chunks

            return self._stage(tables.METADATA, metadata_chunks)
        from kafka_tools.pipeline.record_columns import record_batches
        from kafka_tools.pipeline.tasks import record_chunks

        assert table == "records"
        return self._stage(tables.RECORDS, record_batches if self.arrow_batches else record_chunks)
