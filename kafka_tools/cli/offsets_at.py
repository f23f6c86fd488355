"""`ktool offsets-at LOGDIR…`: every partition's offset at a time, offline, GetOffsetShell's lines."""

from __future__ import annotations

import json
import sys

import click

from kafka_tools.cli.live_options import live_options
from kafka_tools.errors import EXIT_FINDINGS


@click.command("offsets-at")
@click.argument("log_dirs", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option(
    "--time",
    "when",
    default="latest",
    show_default=True,
    metavar="earliest|latest|T",
    help="earliest (-2), latest (-1), or T (epoch ms or ISO-8601): the first offset whose record's "
    "timestamp is at or after T.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: logDir, topic, partition, offset, time.")
@live_options
@click.pass_context
def offsets_at(ctx: click.Context, log_dirs: tuple[str, ...], when: str, as_json: bool) -> None:
    """Print each partition's offset at a time, from the files of log dirs (no broker needed).

    Lines are Kafka's GetOffsetShell's, `topic:partition:offset` (with several LOGDIRs, each log dir's
    lines follow a `# LOGDIR` line); an offset left empty means no record has a timestamp at or after
    T. The latest offset is the log end offset (the next offset to be written), the earliest the log
    start offset (from `log-start-offset-checkpoint`, else the first segment).

    \b
    Exit status:
      0  every partition answered
      1  a partition not answered from its data (v0: no timestamps;
         a damaged batch)
      2  usage error
      3  a log dir or a segment could not be read
    """
    from kafka_tools.log.offsets_at import EARLIEST, LATEST, PartitionOffset, offsets_at
    from kafka_tools.log.read import ReadNote
    from kafka_tools.log.times import parse_time

    time = {"earliest": EARLIEST, "latest": LATEST, "-2": EARLIEST, "-1": LATEST}.get(when.strip())
    if time is None:
        time = parse_time(when, "--time")
    exit_code = 0
    for log_dir in log_dirs:
        if len(log_dirs) > 1 and not as_json:
            click.echo(f"# {log_dir}")
        for item in offsets_at(log_dir, time):
            if isinstance(item, ReadNote):
                sys.stdout.flush()
                click.echo(f"ktool: {item.message}", err=True)
                continue
            assert isinstance(item, PartitionOffset)
            if item.error is not None:
                sys.stdout.flush()
                click.echo(f"ktool: {item.error}", err=True)
                exit_code = max(exit_code, item.exit_code or EXIT_FINDINGS)
                continue
            if as_json:
                obj = {
                    "logDir": item.log_dir,
                    "topic": item.topic,
                    "partition": item.partition,
                    "offset": item.offset,
                    "time": time,
                }
                click.echo(json.dumps(obj, separators=(",", ":")))
            else:
                click.echo(f"{item.topic}:{item.partition}:{'' if item.offset is None else item.offset}")
    sys.stdout.flush()
    ctx.exit(exit_code)
