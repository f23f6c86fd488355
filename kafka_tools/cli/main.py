"""The `ktool` program: one Click group; each subcommand is a thin skin over a service."""

from __future__ import annotations

import sys

import click

from kafka_tools import __version__
from kafka_tools.cli import pipe
from kafka_tools.errors import EXIT_INTERRUPTED, EXIT_USAGE, KtoolError


class KtoolGroup(click.Group):
    """Turns every KtoolError into its one line on stderr and its exit code; nothing else exits."""

    def invoke(self, ctx: click.Context):
        # A reader that leaves early (`| head -1`, `| true`) must not decide the exit code: writes
        # after that are dropped and the command finishes its verdict (see cli/pipe.py).
        saved = sys.stdout, sys.stderr
        pipe.install()
        try:
            return super().invoke(ctx)
        except KtoolError as exc:
            click.echo(f"ktool: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            # Click would say "Aborted!" and exit 1, which scripts read as "findings".
            click.echo("ktool: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        finally:
            # Flushed through the guard: what is still buffered must not meet a closed pipe at exit.
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = saved


@click.group(
    cls=KtoolGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="ktool")
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour text output: auto colours a terminal unless NO_COLOR is set; always overrides NO_COLOR.",
)
@click.pass_context
def cli(ctx: click.Context, color: str) -> None:
    """Decode, validate and repair Kafka logs; move offsets; inspect groups.

    `ktool COMMAND -h` tells more; `ktool man COMMAND` prints its manual page and `ktool completion
    bash|zsh|fish` the shell completion script.

    \b
    Exit status (every command):
      0    ok
      1    findings: corruption, a refused plan, lag over a threshold
      2    usage error
      3    environment: a file unreadable, a server unreachable, auth failed
      130  interrupted (Ctrl-C)
    """
    ctx.obj = {"color": None if color == "auto" else color == "always"}


def _register() -> None:
    from kafka_tools.cli import cluster, scan
    from kafka_tools.cli.docs import completion, man
    from kafka_tools.cli.dump_log import dump_log
    from kafka_tools.cli.groups import groups
    from kafka_tools.cli.help import use_ktool_help
    from kafka_tools.cli.offsets import migrate_offsets, offsets
    from kafka_tools.cli.offsets_at import offsets_at
    from kafka_tools.cli.read import read
    from kafka_tools.cli.truncate import truncate
    from kafka_tools.cli.validate import validate

    cli.add_command(dump_log)
    cli.add_command(validate)
    cli.add_command(truncate)
    cli.add_command(read)
    cli.add_command(offsets_at)
    cluster.register(cli)
    cli.add_command(groups)
    cli.add_command(migrate_offsets)
    cli.add_command(offsets)
    scan.register(cli)
    cli.add_command(completion)
    cli.add_command(man)
    use_ktool_help([cli])


_register()


def main() -> None:
    pipe.install()  # also for what Click prints before a command runs (`ktool --help | head -1`)
    try:
        cli.main(prog_name="ktool")
    except KeyboardInterrupt:
        click.echo("ktool: interrupted", err=True)
        sys.exit(130)


__all__ = ["cli", "main", "EXIT_USAGE"]
