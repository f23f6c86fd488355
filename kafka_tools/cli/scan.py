"""`ktool scan PATH…`: validate and decode whole log dirs with Spark, and write the results as tables."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import click

from kafka_tools.cli.options import colour_of, json_option, live_options, progress_option
from kafka_tools.cli.paths import path_type
from kafka_tools.errors import EXIT_FINDINGS, InputError, UsageError
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
@click.argument("paths", nargs=-1, required=True, type=path_type(path_type=str))
@click.option(
    "--master",
    metavar="URL",
    help="Where the job runs: local[N] (Spark started by ktool, on this machine's Java), "
    "spark://HOST:PORT, yarn or k8s://URL. [default: without Spark, in this process, when the "
    "local segments total at most 1 GiB and there is no --sql (a JVM costs more than it saves "
    "there); else local[*]]",
)
@click.option("--out", metavar="DIR", help="Write the tables under DIR (a path or an hdfs://, s3a://… URI).")
@click.option("--records", is_flag=True, help="Also write the `records` table: every record (needs --out).")
@click.option(
    "--cluster-metadata",
    is_flag=True,
    help="Also write the `metadata` table: every __cluster_metadata and __remote_log_metadata record "
    "decoded (needs --out).",
)
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
@click.option(
    "--compression",
    type=click.Choice(["snappy", "zstd", "lz4", "none"]),
    help="Codec of the parquet tables: snappy (Spark's default; keys and values of text or JSON about "
    "halve), zstd (smallest files, slowest), lz4, or none (fastest to write, about twice the bytes). "
    "[default: snappy]",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the tables of an earlier scan under --out, once the new ones are complete (until then "
    "they stay as they were; a killed scan's leftovers there are finished or removed by the next scan).",
)
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
    "--key", "keys", multiple=True, metavar="K", help="Question: records whose key is K (repeatable)."
)
@click.option(
    "--key-regex", metavar="R", help="Question: records whose key matches the regex R (over its bytes)."
)
@click.option("--value-contains", metavar="S", help="Question: records whose value holds the bytes of S.")
@click.option("--producer-id", type=int, metavar="P", help="Question: records of producer id P (v2 batches).")
@click.option(
    "--time-from",
    metavar="T",
    help="Question: records with a timestamp at or after T (epoch ms or ISO-8601, UTC by default); "
    "batches entirely older are not decoded.",
)
@click.option("--time-to", metavar="T", help="Question: records with a timestamp at or before T.")
@click.option(
    "--topic", "topics", multiple=True, metavar="T", help="Ask the question of topic T only (repeatable)."
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="With a question: print at most this many matching records.",
)
@click.option(
    "--sql",
    metavar="QUERY",
    help="Run a Spark SQL query over this scan's views `segments`, `batches`, `findings`, `records`, "
    "`offsets` and print its rows.",
)
@json_option("`finding`, `partition`, `commit` and `table` objects")
@click.option("--verbose", is_flag=True, help="Let Spark's own log through to the terminal.")
@click.option(
    "--spark-log",
    metavar="FILE",
    help="Write Spark's own log (Java stack traces included) to FILE and keep it "
    "[default: a temporary file, kept only when an error names it].",
)
@progress_option()
@live_options
@click.pass_context
def scan(
    ctx: click.Context,
    paths: tuple[str, ...],
    master: str | None,
    out: str | None,
    records: bool,
    cluster_metadata: bool,
    offsets_topic: bool,
    fmt: str,
    compression: str | None,
    overwrite: bool,
    split_size: int,
    conf: dict[str, str],
    executor_timeout: float,
    as_json: bool,
    verbose: bool,
    spark_log: str | None,
    keys: tuple[str, ...],
    key_regex: str | None,
    value_contains: str | None,
    producer_id: int | None,
    time_from: str | None,
    time_to: str | None,
    topics: tuple[str, ...],
    limit: int,
    sql: str | None,
    progress: bool | None,
) -> None:
    """Validate and decode segments (with Spark for large inputs), and write what they hold as tables.

    PATH may be a segment, a partition directory (topic-N), a log dir, or a directory holding log
    dirs (searched recursively); or a URI Spark can read (hdfs://, s3a://…), whose segments are
    checked one by one (the index, continuity and checkpoint checks need local paths).

    The segments are listed here, then checked and decoded by Spark tasks (large segments split at
    batch boundaries). Without --master, local segments totalling at most 1 GiB are scanned in this
    process instead (no JVM; the same tables, written with pyarrow); --sql always runs on Spark.
    The findings are `ktool validate`'s; the record counts and offsets are
    `ktool dump-log --deep-iteration`'s.

    Tables under --out: `segments`, `batches` and `findings` always; `records` with --records (every
    record); `offsets` with --offsets-topic (every offset commit, `loaded` set on the one the group
    coordinator would load); `metadata` with --cluster-metadata (every KRaft and tiered-storage
    metadata record: its type as dump-log names it, version, state, fields as JSON).

    \b
    Exit status:
      0  clean (warnings allowed)
      1  corruption found
      2  usage error
      3  a path could not be read, Java, pyspark or pyarrow is missing, the master is unreachable,
         --out cannot be written (the tables already there are kept)
    """
    from kafka_tools.pipeline import ScanOptions, plan_scan
    from kafka_tools.pipeline.output import local_dir, prepare_out_dir, recover_out_dir
    from kafka_tools.pipeline.plan import IN_PROCESS_BYTES
    from kafka_tools.pipeline.questions import make_question
    from kafka_tools.pipeline.remote import is_remote, local_path, plan_remote
    from kafka_tools.pipeline.session import DEFAULT_MASTER, SparkSettings, spark_session
    from kafka_tools.render.scan import scan_progress, starting

    question = make_question(keys, key_regex, value_contains, producer_id, time_from, time_to, topics)
    if topics and not question.asked:
        raise UsageError(
            "--topic narrows a question: add --key, --key-regex, --value-contains, "
            "--producer-id or --time-from/--time-to"
        )
    if question.asked and (out or records or offsets_topic or cluster_metadata or sql):
        raise UsageError(
            "a question (--key, --time-from …) prints records: not with --out, --records, "
            "--offsets-topic, --cluster-metadata or --sql"
        )
    if sql is not None:
        lowered = sql.lower()
        records = records or "records" in lowered
        offsets_topic = offsets_topic or "offsets" in lowered
        cluster_metadata = cluster_metadata or "metadata" in lowered
    elif records and not out:
        raise UsageError("--records writes a table: give --out DIR")
    elif cluster_metadata and not out:
        raise UsageError("--cluster-metadata writes a table: give --out DIR")
    if compression is not None and fmt != "parquet":
        raise UsageError(f"--compression is the parquet tables' codec: not with --format {fmt}")
    _need_pyarrow()
    options = ScanOptions(
        out=out,
        fmt=fmt,
        compression=compression or "snappy",
        records=records,
        offsets_topic=offsets_topic,
        cluster_metadata=cluster_metadata,
        split_bytes=split_size * MiB,
        overwrite=overwrite,
    )
    remote = [p for p in paths if is_remote(p)]
    if remote and len(remote) != len(paths):
        raise UsageError("give local paths or Hadoop filesystem URIs (hdfs://, s3a://…), not both")
    # Local paths are listed (and a missing one reported) before Spark starts; URIs need Spark's JVM.
    plan = None if remote else plan_scan([local_path(p) for p in paths])
    _said(recover_out_dir(options))  # a local --out: a killed scan's leftovers dealt with, then checked
    prepare_out_dir(options)
    show = sys.stderr.isatty() if progress is None else progress
    if master is None and plan is not None and sql is None and plan.bytes <= IN_PROCESS_BYTES:
        if out is None or local_dir(out) is not None:
            _in_process(ctx, plan, question, options, limit, as_json, show)
            return
    settings = SparkSettings(
        master=master or DEFAULT_MASTER,
        conf=conf,
        verbose=verbose,
        executor_timeout=executor_timeout,
        log_file=spark_log,
        # Local segments into parquet: Python does the work, the JVM's compiler would cost more than
        # it saves. SQL, JSON tables and URIs are the JVM's own work: full JIT.
        light_jvm=sql is None and fmt == "parquet" and not remote,
    )
    from kafka_tools.pipeline.job import run_scan  # pyspark's side: only now

    with ExitStack() as stack:
        with starting(settings.master, show and not verbose):
            handle = stack.enter_context(spark_session(settings))
        if plan is None:
            plan = plan_remote(handle.spark, list(paths))
        if question.asked:
            from kafka_tools.pipeline.job import run_questions
            from kafka_tools.render.scan import render_answer

            with scan_progress(show) as tick:
                answer = run_questions(handle.spark, plan, question, options, limit, tick)
            render_answer(answer, as_json, colour_of(ctx))
            return
        if sql is not None:
            stack.enter_context(_sql_out(options))
        with scan_progress(show) as tick:
            result = run_scan(handle.spark, plan, options, tick)
        if sql is not None:
            from kafka_tools.pipeline.job import run_sql
            from kafka_tools.render.findings import verdict
            from kafka_tools.render.scan import render_rows

            columns, rows = run_sql(handle.spark, result, sql, limit)
            _said(result.said)
            render_rows(columns, rows, as_json, colour_of(ctx), result.summary.errors)
            if result.summary.errors:  # the query's answer stands; the damage found is still counted
                click.echo(f"ktool: {verdict(result.summary)} (the findings table names it)", err=True)
                ctx.exit(EXIT_FINDINGS)
            return
    result.startup_seconds = handle.startup_seconds if handle.owned else None
    _render(ctx, result, out, as_json)


def _need_pyarrow() -> None:
    """Every scan builds Arrow batches (in process and in Spark's executors): without pyarrow, one line
    saying how to get it. Looked up, not imported: pyarrow costs ~0.3 s and the scan imports it later.
    Not a dependency of ktool itself: ~170 MB installed, three times all the others together."""
    if importlib.util.find_spec("pyarrow") is None:
        raise InputError(
            "ktool scan needs pyarrow: pip install 'kafka-ktool[scan]' (in ktool's checkout: pip install -e"
            " '.[scan]'), or pip install pyarrow"
        )


def _in_process(ctx, plan, question, options, limit: int, as_json: bool, show: bool) -> None:
    """A small local input: scanned (or asked) in this process, tables written with pyarrow."""
    from kafka_tools.pipeline.local import answer_in_process, scan_in_process
    from kafka_tools.render.scan import render_answer, scan_progress

    if question.asked:
        answer = answer_in_process(plan, question, options, limit)
        render_answer(answer, as_json, (ctx.obj or {}).get("color"))
        return
    with scan_progress(show) as tick:
        result = scan_in_process(plan, options, tick)
    _render(ctx, result, options.out, as_json)


def _render(ctx, result, out: str | None, as_json: bool) -> None:
    from kafka_tools.render.scan import ScanJsonRenderer, ScanTextRenderer

    _said(result.said)
    _said_replaced(result.replaced, out)
    if as_json:
        ScanJsonRenderer(sys.stdout).render(result)
    else:
        colour = colour_of(ctx)
        ScanTextRenderer(sys.stdout, wants_colour(sys.stdout, colour)).render(result)
    sys.stdout.flush()
    if result.summary.errors:
        ctx.exit(EXIT_FINDINGS)


@contextmanager
def _sql_out(options) -> Iterator[None]:
    """--sql without --out: the tables go to a temporary directory, removed afterwards."""
    if options.out:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="ktool-sql-") as tmp:
        options.out = os.path.join(tmp, "tables")
        yield


def _said(lines: list[str]) -> None:
    for line in lines:
        click.echo(f"ktool: {line}", err=True)


def _said_replaced(tables: list[str], out: str | None) -> None:
    if tables:
        names = ", ".join(tables)
        noun = "table" if len(tables) == 1 else "tables"
        said = f"removed the earlier {names} {noun} under {out} (the new ones were complete)"
        click.echo(f"ktool: --overwrite: {said}", err=True)


def register(cli: click.Group) -> None:
    """Add `ktool scan` to the `ktool` group."""
    cli.add_command(scan)
