"""`ktool offsets-at LOGDIR…`: every partition's offset at a time, offline, GetOffsetShell's lines."""

from __future__ import annotations

import sys

import click

from kafka_tools.cli.options import TimeSpec, json_option, live_options
from kafka_tools.cli.paths import path_type
from kafka_tools.errors import EXIT_FINDINGS, KtoolError


@click.command("offsets-at")
@click.argument("log_dirs", nargs=-1, required=True, type=path_type(path_type=str))
@click.option(
    "--time",
    "when",
    type=TimeSpec(),
    default="latest",
    show_default=True,
    help="earliest (-2), latest (-1), max-timestamp (-3: the first record with the largest timestamp), "
    "or T (epoch ms or ISO-8601): the first offset whose record's timestamp is at or after T.",
)
@json_option("one `offset` object per partition (logDir, topic, partition, offset, time, error)")
@live_options
@click.pass_context
def offsets_at(ctx: click.Context, log_dirs: tuple[str, ...], when: int, as_json: bool) -> None:
    """Print each partition's offset at a time, from the files of log dirs (no broker needed).

    LOG_DIRS are log dirs or partition directories.
    Lines are Kafka's GetOffsetShell's, `topic:partition:offset` (with several LOGDIRs, each log dir's
    lines follow a `# LOGDIR` line); an offset left empty means no record has a timestamp at or after
    T. The latest offset is the log end offset (the next offset to be written), the earliest the log
    start offset (from `log-start-offset-checkpoint`, else the first segment). A partition that cannot
    be answered is said on stderr (in --json: an `offset` object with its `error`) and the others are
    answered. Message format v0 carries no timestamps: T is answered as brokers before 0.10.1 answer
    it (the newest segment last modified at or before T), with a note on stderr.

    \b
    Exit status:
      0  every partition answered
      1  a partition not answered from its data (a damaged batch,
         max-timestamp on v0 data)
      2  usage error
      3  a log dir or a segment could not be read
    """
    from kafka_tools.log.files.views import ReadNote
    from kafka_tools.log.reads.offsets_at import PartitionOffset, offsets_at

    if as_json:  # the JSON encoder and the objects only for --json
        from kafka_tools.render.json_kinds import error_object, note_object
        from kafka_tools.render.json_lines import emit

    exit_code = 0
    answered = failed = unreadable = 0
    for log_dir in log_dirs:
        if len(log_dirs) > 1 and not as_json:
            click.echo(f"# {log_dir}")
        try:
            items = list(offsets_at(log_dir, when))
        except KtoolError as exc:  # this log dir missing or not one: said, and the others answered
            sys.stdout.flush()
            click.echo(f"ktool: {exc}", err=True)
            exit_code = max(exit_code, exc.exit_code)
            unreadable += 1
            if as_json:
                emit(sys.stdout, error_object(str(log_dir), exc))
            continue
        said: set[str] = set()
        for item in items:
            if isinstance(item, ReadNote):
                if item.message in said:
                    continue
                said.add(item.message)
                sys.stdout.flush()
                click.echo(f"ktool: {item.message}", err=True)
                if as_json:  # what stderr says is in the stream too
                    emit(sys.stdout, note_object(item.message, item.problem))
                continue
            assert isinstance(item, PartitionOffset)
            if item.error is not None:
                failed += 1
                sys.stdout.flush()
                click.echo(f"ktool: {item.error}", err=True)
                exit_code = max(exit_code, item.exit_code or EXIT_FINDINGS)
            else:
                answered += 1
            if as_json:
                obj = {
                    "type": "offset",
                    "logDir": item.log_dir,
                    "topic": item.topic,
                    "partition": item.partition,
                    "offset": item.offset,
                    "time": when,
                    "error": item.error,
                }
                emit(sys.stdout, obj)
            elif item.error is None:
                click.echo(f"{item.topic}:{item.partition}:{'' if item.offset is None else item.offset}")
    if as_json:
        summary = {"type": "summary", "partitions": answered + failed, "failed": failed}
        summary["unreadable"] = unreadable
        emit(sys.stdout, summary)
    sys.stdout.flush()
    ctx.exit(exit_code)
