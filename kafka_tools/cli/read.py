"""`ktool read PARTITION_DIR`: records from an offset or a time, offline, as a consumer would get them.

Kept light: the locating path imports no renderer library, no ZooKeeper or Spark client."""

from __future__ import annotations

import sys

import click

from kafka_tools.cli.options import (
    EARLIEST,
    LATEST,
    MAX_TIMESTAMP,
    TimeSpec,
    aliased,
    colour_of,
    decoder_options,
    json_option,
    live_options,
    renamed_option,
)
from kafka_tools.cli.paths import path_type
from kafka_tools.errors import EXIT_FINDINGS, KtoolError

CHUNK = click.IntRange(min=64)


@click.command("read")
@click.argument("partition_dir", type=path_type(path_type=str))
@click.option("--offset", type=click.IntRange(min=0), help="Start at this offset.")
@click.option(
    "--timestamp",
    type=TimeSpec(),
    help="Start at the first record whose timestamp is at or after T (epoch ms or ISO-8601, UTC by "
    "default); earliest (-2) and latest (-1) as --earliest and --latest, max-timestamp (-3) the first "
    "record with the largest timestamp.",
)
@click.option("--earliest", is_flag=True, help="Start at the log start offset.")
@click.option("--latest", is_flag=True, help="The last record (with --count K: the last K offsets).")
@click.option(
    "--count", "-n", type=click.IntRange(min=1), help="Stop after K records [default: the log end]."
)
@click.option(
    "--chunk-bytes",
    type=CHUNK,
    default=1 << 20,
    show_default=True,
    help="Bytes read at a time; a larger batch is read with the chunk doubled, up to 64 MiB.",
)
@renamed_option("--max-bytes", "--chunk-bytes", "chunk_bytes")
@decoder_options
@json_option("dump-log's `batch`, `record` and `message` objects")
@live_options
@click.pass_context
def read(
    ctx: click.Context,
    partition_dir: str,
    offset: int | None,
    timestamp: int | None,
    earliest: bool,
    latest: bool,
    count: int | None,
    chunk_bytes: int,
    key_decoder: str,
    value_decoder: str,
    as_json: bool,
) -> None:
    """Print the records of a partition directory from an offset or a time, offline.

    The segment is found by its base offset, the position by its `.index` (a binary search in the
    memory-mapped file), then batches are stepped over up to the one holding the offset; records
    print from that offset exactly, in dump-log's lines (or --json objects). An index that cannot be
    trusted is not used: that segment is scanned, with one warning. Kafka 0.7 `.kafka` logs take
    byte-position offsets.

    \b
    Exit status:
      0  records printed
      1  out of range (the valid range is printed), no record at or after T,
         a damaged batch, a 0.7 offset that is not a message boundary
      2  usage error
      3  the directory or a segment could not be read
    """
    from kafka_tools.log.reads.read import ReadNote, ReadStart, read_partition

    chunk_bytes = aliased(ctx, "chunk_bytes", chunk_bytes, CHUNK)
    if timestamp in (EARLIEST, LATEST):  # the one grammar of times: -2/earliest, -1/latest
        earliest, latest, timestamp = earliest or timestamp == EARLIEST, latest or timestamp == LATEST, None
    chosen = [n for n, v in (("--offset", offset), ("--timestamp", timestamp)) if v is not None]
    chosen += [n for n, v in (("--earliest", earliest), ("--latest", latest)) if v]
    if len(chosen) != 1:
        what = "one of" if not chosen else "only one of"
        raise click.UsageError(f"give {what} --offset, --timestamp, --earliest, --latest")
    if offset is not None:
        start = ReadStart("offset", offset)
    elif timestamp == MAX_TIMESTAMP:
        start = ReadStart("max-timestamp")
    elif timestamp is not None:
        start = ReadStart("timestamp", timestamp)
    else:
        start = ReadStart("earliest" if earliest else "latest")
    colour = colour_of(ctx)
    renderer = record_renderer(as_json, colour, key_decoder, value_decoder)
    exit_code = 0
    entries = warnings = problems = 0
    said: set[str] = set()  # an index passed twice (to locate, then to read) is warned of once
    try:
        for item in read_partition(partition_dir, start, count, chunk_bytes):
            if isinstance(item, ReadNote):
                if item.message in said:
                    continue
                said.add(item.message)
                sys.stdout.flush()
                click.echo(f"ktool: {item.message}", err=True)
                if as_json:  # what stderr says is in the stream too, counted as the summary counts it
                    from kafka_tools.render.json_kinds import note_object

                    renderer.emit(note_object(item.message, item.problem))
                if item.problem:
                    exit_code = EXIT_FINDINGS
                    problems += 1
                else:
                    warnings += 1
            else:
                renderer.render(item)
                entries += 1
    except KtoolError as exc:
        problems += 1
        if as_json:
            from kafka_tools.render.json_kinds import error_object
            from kafka_tools.render.json_lines import emit

            emit(sys.stdout, error_object(str(partition_dir), exc))
        raise
    finally:
        if as_json and (entries or warnings or problems):  # what was printed ends with its summary
            from kafka_tools.render.json_lines import emit

            summary = {"type": "summary", "entries": entries, "warnings": warnings, "errors": problems}
            emit(sys.stdout, summary)
    sys.stdout.flush()
    ctx.exit(exit_code)


def record_renderer(as_json: bool, colour: bool | None, key_decoder: str, value_decoder: str):
    """dump-log's record lines (or JSON objects) for records printed by offset (`read`, and
    `replicas diff --records`)."""
    if as_json:
        from kafka_tools.render.dump_json import DumpJsonRenderer

        return DumpJsonRenderer(sys.stdout, True, key_decoder, value_decoder)
    from kafka_tools.render.dump_text import DumpTextRenderer
    from kafka_tools.render.lines import LineWriter

    return DumpTextRenderer(
        LineWriter(sys.stdout, colour),
        LineWriter(sys.stderr, colour),
        True,
        False,
        key_decoder,
        value_decoder,
    )
