"""`ktool dump-log FILE…`: print what is inside log-directory files, as DumpLogSegments does."""

from __future__ import annotations

import functools
import os
import sys
from contextlib import contextmanager

import click

from kafka_tools.cli import pipe
from kafka_tools.cli.options import (
    check_offset_range,
    colour_of,
    decoder_options,
    jobs_option,
    json_option,
    live_options,
    offset_range_options,
    progress_option,
)
from kafka_tools.cli.paths import path_type


@click.command("dump-log")
@click.argument("files", nargs=-1, required=True, type=path_type(path_type=str))
@click.option(
    "--deep-iteration",
    "--deep",
    is_flag=True,
    help="Iterate into batches and compressed wrappers, one line a record.",
)
@click.option(
    "--print-data-log", is_flag=True, help="Print keys, values and headers (implies --deep-iteration)."
)
@click.option(
    "--offsets-decoder/--no-offsets-decoder",
    default=None,
    help="Decode records as __consumer_offsets keys/values [default: on under __consumer_offsets-N].",
)
@click.option(
    "--transaction-log-decoder/--no-transaction-log-decoder",
    default=None,
    help="Decode records as __transaction_state keys/values [default: on under __transaction_state-N].",
)
@click.option(
    "--cluster-metadata-decoder/--no-cluster-metadata-decoder",
    default=None,
    help="Decode records as KRaft metadata and control records (implies --print-data-log) "
    "[default: on under __cluster_metadata-N and for .checkpoint snapshots, with --deep-iteration].",
)
@click.option(
    "--remote-log-metadata-decoder/--no-remote-log-metadata-decoder",
    default=None,
    help="Decode records as tiered storage's __remote_log_metadata values (implies --print-data-log) "
    "[default: on under __remote_log_metadata-N, with --deep-iteration].",
)
@click.option(
    "--max-bytes", type=click.IntRange(min=0), help="Read at most this many bytes of each log file."
)
@click.option(
    "--skip-record-metadata", is_flag=True, help="Print only the data of each record, no offsets or sizes."
)
@decoder_options
@offset_range_options()
@json_option("one object per entry, record and problem, a `file` object per file")
@progress_option()
@jobs_option(
    "Processes at work, each taking whole files; output stays in file order [default: one for a small "
    "input (under 32 MiB) or a busy machine, else the idle cores]."
)
@live_options
@click.pass_context
def dump_log(
    ctx: click.Context,
    files: tuple[str, ...],
    deep_iteration: bool,
    print_data_log: bool,
    offsets_decoder: bool | None,
    transaction_log_decoder: bool | None,
    cluster_metadata_decoder: bool | None,
    remote_log_metadata_decoder: bool | None,
    max_bytes: int | None,
    skip_record_metadata: bool,
    key_decoder: str,
    value_decoder: str,
    from_offset: int | None,
    to_offset: int | None,
    as_json: bool,
    progress: bool | None,
    jobs: int | None,
) -> None:
    """Decode segment files of every on-disk generation and the files beside them.

    FILE may be a `.log` segment (message sets v0/v1, record batches v2), a Kafka 0.7 `.kafka` file,
    an `.index`, `.timeindex` or `.txnindex`, a producer `.snapshot`, a checkpoint file,
    `meta.properties` or `partition.metadata`, a KRaft `quorum-state` or `.checkpoint` snapshot.
    Records under `__cluster_metadata-N` and in snapshots are decoded as KRaft metadata and control
    records with --deep-iteration (each as `payload: {"type", "version", "data"}`), those under
    `__remote_log_metadata-N` as tiered storage's segment and partition-delete records (with their
    `state` named). Problems (bad CRC, cut or garbage tails, undecodable payloads) are reported on
    stderr with their byte position (in --json: as `problem` objects), after everything that could be
    decoded has been printed.

    \b
    Exit status:
      0  every file clean
      1  problems found
      2  usage error
      3  a file could not be read
    """
    # Imported here, not at the top: `ktool dump-log --<TAB>` and `-h` must not pay for the decoders.
    from kafka_tools.cli.dump_render import record_lines_of, render_file
    from kafka_tools.cli.validate import usable_cores
    from kafka_tools.format import accel
    from kafka_tools.log.reads.dump_events import DumpOptions
    from kafka_tools.log.workers.parallel import jobs_for_files
    from kafka_tools.render.dump_text import DumpTextRenderer
    from kafka_tools.render.lines import LineWriter

    check_offset_range(from_offset, to_offset)
    options = DumpOptions(
        deep_iteration=deep_iteration,
        # as in Kafka's DumpLogSegments, asking for the metadata decoder asks to print the data
        print_data_log=print_data_log or bool(cluster_metadata_decoder or remote_log_metadata_decoder),
        cluster_metadata_decoder=cluster_metadata_decoder,
        remote_log_metadata_decoder=remote_log_metadata_decoder,
        offsets_decoder=offsets_decoder,
        transaction_decoder=transaction_log_decoder,
        max_bytes=max_bytes,
        skip_record_metadata=skip_record_metadata,
        from_offset=from_offset,
        to_offset=to_offset,
        message_runs=True,  # both renderers print MessageRunEvents
    )
    colour = colour_of(ctx)
    err = LineWriter(sys.stderr, colour)
    if as_json:
        from kafka_tools.render.dump_json import DumpJsonRenderer

        renderer = DumpJsonRenderer(
            sys.stdout, options.print_data_log, key_decoder, value_decoder, skip_record_metadata
        )
    else:
        renderer = DumpTextRenderer(
            LineWriter(sys.stdout, colour),
            err,
            options.print_data_log,
            skip_record_metadata,
            key_decoder,
            value_decoder,
        )
    lines_of = record_lines_of(renderer)
    problems_only = DumpTextRenderer(err, err, False, False, key_decoder, value_decoder)
    if lines_of and options.deep and (keep := accel.fast("keep_freed_memory")) is not None:
        keep()  # a batch's lines reuse the pages the last batch's freed

    tally = renderer.tally if as_json else None
    jobs = jobs_for_files(files, jobs, usable_cores())

    def dump_one(path: str, progress: bool | None = progress) -> int:
        """One file's output and problems, straight to stdout and stderr; its exit code."""
        return render_file(
            path, options, renderer, problems_only, err, as_json=as_json, out=sys.stdout,
            reader_gone=pipe.reader_gone, progress=progress,
        )[0]  # fmt: skip

    if jobs > 1:  # the worker pool only when there are files for a second core
        from kafka_tools.cli.dump_parallel import can_run_parallel, dump_files_parallel
    if jobs > 1 and can_run_parallel() and (as_json or not renderer.out.colour):
        # Many files, plain output: workers render files ahead (coloured terminal output stays here).
        setup = dict(options=options, as_json=as_json, key_decoder=key_decoder, value_decoder=value_decoder)
        here = functools.partial(dump_one, progress=False)  # one bar for all, below
        bar = functools.partial(_files_progress, files, progress)
        exit_code = dump_files_parallel(list(files), setup, jobs, err, here, bar, tally)
    else:
        exit_code = max((dump_one(path) for path in files), default=0)
    if tally is not None and not pipe.reader_gone():
        renderer.finish(tally)
    sys.stdout.flush()
    ctx.exit(exit_code)


@contextmanager
def _files_progress(files: tuple[str, ...], enabled: bool | None):
    """One bar for files dumped by workers, advanced a file at a time (on a terminal, for big dumps)."""
    from kafka_tools.render.progress import MIN_BYTES_FOR_BAR, tree_progress

    sizes = {f: os.path.getsize(f) if os.path.isfile(f) else 0 for f in files}
    if enabled is None:
        enabled = sys.stderr.isatty() and sum(sizes.values()) >= MIN_BYTES_FOR_BAR
    with tree_progress(files, enabled) as for_file:
        if for_file is None:
            yield None
            return
        yield lambda path: for_file(path)(sizes[path]) if os.path.isfile(path) else None
