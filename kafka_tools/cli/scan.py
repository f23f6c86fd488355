"""`ktool scan PATH…`: validate and decode whole log dirs with Spark, and write the results as tables."""

from __future__ import annotations

import sys
from contextlib import ExitStack

import click

from kafka_tools.errors import EXIT_FINDINGS, UsageError
from kafka_tools.render.lines import wants_colour

MiB = 1024 * 1024


def _conf(ctx, param, values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r}: expected KEY=VALUE", ctx=ctx, param=param)
        out[key.strip()] = value
    return out


@click.command("scan")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option(
    "--master",
    default="local[*]",
    show_default=True,
    metavar="URL",
    help="Where the job runs: local[N] (Spark started by ktool, on this machine's Java), "
    "spark://HOST:PORT, yarn or k8s://URL.",
)
@click.option("--out", metavar="DIR", help="Write the tables under DIR (a path or an hdfs://, s3a://… URI).")
@click.option("--records", is_flag=True, help="Also write the `records` table: every record (needs --out).")
@click.option(
    "--offsets-topic",
    is_flag=True,
    help="Replay __consumer_offsets: print the offset each group would get back, write the `offsets` table.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "json"]),
    default="parquet",
    show_default=True,
    help="Format of the tables.",
)
@click.option("--overwrite", is_flag=True, help="Replace the tables of an earlier scan under --out.")
@click.option(
    "--split-size",
    type=click.IntRange(min=1),
    default=128,
    show_default=True,
    metavar="MIB",
    help="Split larger segments into byte ranges of about this size, always at a batch boundary "
    "(ranges are then packed into a few even tasks per core, small segments together).",
)
@click.option(
    "--conf",
    "conf",
    multiple=True,
    callback=_conf,
    metavar="KEY=VALUE",
    help="A Spark setting (repeatable), e.g. spark.executor.memory=4g.",
)
@click.option(
    "--executor-timeout",
    type=click.FloatRange(min=1),
    default=120.0,
    show_default=True,
    metavar="SECONDS",
    help="With a cluster master: how long to wait for a first executor.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="JSON Lines: findings, partitions, commits, tables, summary."
)
@click.option("--verbose", is_flag=True, help="Let Spark's own log through to the terminal.")
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar on stderr [default: on a terminal]."
)
@click.pass_context
def scan(
    ctx: click.Context,
    paths: tuple[str, ...],
    master: str,
    out: str | None,
    records: bool,
    offsets_topic: bool,
    fmt: str,
    overwrite: bool,
    split_size: int,
    conf: dict[str, str],
    executor_timeout: float,
    as_json: bool,
    verbose: bool,
    progress: bool | None,
) -> None:
    """Validate and decode segments in parallel with Spark, and write what they hold as tables.

    PATH may be a segment, a partition directory (topic-N), a log dir, or a directory holding log
    dirs (searched recursively); or a URI Spark can read (hdfs://, s3a://…), whose segments are
    checked one by one (the index, continuity and checkpoint checks need local paths).

    The segments are listed here, then checked and decoded by Spark tasks (large segments split at
    batch boundaries). The findings are `ktool validate`'s; the record counts and offsets are
    `ktool dump-log --deep-iteration`'s.

    \b
    Tables under --out: segments, batches, findings; records (--records); offsets (--offsets-topic),
    every offset commit with `loaded` set on the one the group coordinator would load.

    \b
    Exit status:
      0  clean (warnings allowed)
      1  corruption found
      2  usage error
      3  a path could not be read, Java or pyspark is missing, the master is unreachable
    """
    from kafka_tools.pipeline import ScanOptions, plan_scan
    from kafka_tools.pipeline.job import prepare_out_dir, run_scan
    from kafka_tools.pipeline.remote import is_remote, local_path, plan_remote
    from kafka_tools.pipeline.session import SparkSettings, spark_session
    from kafka_tools.render.scan import ScanJsonRenderer, ScanTextRenderer, scan_progress, starting

    if records and not out:
        raise UsageError("--records writes a table: give --out DIR")
    options = ScanOptions(
        out=out,
        fmt=fmt,
        records=records,
        offsets_topic=offsets_topic,
        split_bytes=split_size * MiB,
        overwrite=overwrite,
    )
    remote = [p for p in paths if is_remote(p)]
    if remote and len(remote) != len(paths):
        raise UsageError("give local paths or Hadoop filesystem URIs (hdfs://, s3a://…), not both")
    # Local paths are listed (and a missing one reported) before Spark starts; URIs need Spark's JVM.
    plan = None if remote else plan_scan([local_path(p) for p in paths])
    _said_replaced(prepare_out_dir(options), out)  # a local --out: checked (cleared with --overwrite) now
    show = sys.stderr.isatty() if progress is None else progress
    settings = SparkSettings(master=master, conf=conf, verbose=verbose, executor_timeout=executor_timeout)
    with ExitStack() as stack:
        with starting(master, show and not verbose):
            handle = stack.enter_context(spark_session(settings))
        if plan is None:
            plan = plan_remote(handle.spark, list(paths))
        with scan_progress(show) as tick:
            result = run_scan(handle.spark, plan, options, tick)
    result.startup_seconds = handle.startup_seconds if handle.owned else None
    _said_replaced(result.replaced, out)
    if as_json:
        ScanJsonRenderer(sys.stdout).render(result)
    else:
        colour = (ctx.obj or {}).get("color")
        ScanTextRenderer(sys.stdout, wants_colour(sys.stdout, colour)).render(result)
    sys.stdout.flush()
    if result.summary.errors:
        ctx.exit(EXIT_FINDINGS)


def _said_replaced(tables: list[str], out: str | None) -> None:
    if tables:
        names = ", ".join(tables)
        noun = "table" if len(tables) == 1 else "tables"
        click.echo(f"ktool: --overwrite: removed the earlier {names} {noun} under {out}", err=True)


def register(cli: click.Group) -> None:
    """Add `ktool scan` to the `ktool` group."""
    cli.add_command(scan)
