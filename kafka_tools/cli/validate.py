"""`ktool validate PATH…`: CRCs and structure of files, partitions or whole log.dirs trees."""

from __future__ import annotations

import os
import sys

import click

from kafka_tools.cli import pipe
from kafka_tools.cli.options import colour_of, jobs_option, json_option, live_options, progress_option
from kafka_tools.cli.paths import path_type
from kafka_tools.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS, missing_line


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity, as `taskset` or a container's cpuset sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=path_type(path_type=str))
@click.option(
    "--deep", is_flag=True, help="Decode every record of uncompressed batches too (compressed always are)."
)
@click.option(
    "--strict", is_flag=True, help="Exit 1 on warnings too (gaps, stray files, checkpoints past the end)."
)
@json_option("one `finding` object per finding, one `partition` object per partition")
@progress_option()
@jobs_option(
    "Cores to use (the worker pool's processes); output stays in file order [default: the usable "
    "cores idle at start, one for a small input]."
)
@live_options
@click.pass_context
def validate(
    ctx: click.Context,
    paths: tuple[str, ...],
    deep: bool,
    strict: bool,
    as_json: bool,
    progress: bool | None,
    jobs: int | None,
) -> None:
    """Check CRCs and structure of segments, partitions or whole log.dirs trees.

    PATH may be a segment or index file, a partition directory (topic-N), a log dir, or a directory
    holding log dirs (searched recursively). Every finding names the file, byte position, offset and
    what is wrong; errors say whether they lie in a tail that `ktool truncate` repairs as the broker's
    recovery would, or in the middle of the data. On a running broker's log dir (its .lock held, or
    --live) the newest segment's unfinished tail, index entries ahead of its data, checkpoints ahead
    of the log end and files being deleted are `in-flight` findings (info), not damage.

    \b
    Exit status:
      0  clean (warnings allowed unless --strict)
      1  corruption found (or, with --strict, warnings)
      2  usage error
      3  a path could not be read
    """
    # Imported here, not at the top: `ktool validate --<TAB>` and `-h` must not pay for the checks.
    from kafka_tools.log.checks.findings import UNREADABLE, ValidateOptions
    from kafka_tools.log.validate import validate_paths
    from kafka_tools.render.findings import ValidateJsonRenderer, ValidateTextRenderer, verdict
    from kafka_tools.render.lines import wants_colour
    from kafka_tools.render.progress import tree_progress

    options = ValidateOptions(deep=deep, strict=strict)
    # A path that is not there is said and the others are checked (exit 3 at the end).
    missing = [p for p in paths if not os.path.lexists(p)]
    for p in missing:
        click.echo(f"ktool: {missing_line(p)}", err=True)
    paths = tuple(p for p in paths if p not in missing)
    if missing and not paths:
        ctx.exit(EXIT_ENVIRONMENT)
    with tree_progress(paths, progress) as tick:
        result = validate_paths(list(paths), options, tick, jobs, usable_cores())
    summary = result.summary()
    if as_json:  # a path not there is in the stream and the summary's unreadable count too
        summary.unreadable += len(missing)
        ValidateJsonRenderer(sys.stdout).render(result, summary, missing)
    else:
        colour = colour_of(ctx)
        ValidateTextRenderer(sys.stdout, wants_colour(sys.stdout, colour)).render(result, summary)
    sys.stdout.flush()
    for f in result.all_findings():
        if f.kind == UNREADABLE:
            click.echo(f"ktool: {f.file}: {f.message}", err=True)
    if summary.unreadable or missing:
        # Everything else was checked and reported; what could not be read decides the exit code.
        ctx.exit(EXIT_ENVIRONMENT)
    if summary.errors or (strict and summary.warnings):
        if pipe.reader_gone():
            click.echo(f"ktool: output cut short by its reader; {verdict(summary)}", err=True)
        ctx.exit(EXIT_FINDINGS)
