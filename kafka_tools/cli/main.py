"""The `ktool` program: one Click group; each subcommand is a thin skin over a service."""

from __future__ import annotations

import sys

import click

from kafka_tools import __version__
from kafka_tools.cli import pipe
from kafka_tools.errors import EXIT_INTERRUPTED, EXIT_USAGE, KtoolError

# Each subcommand's module is imported only when that command runs (or help lists it): `ktool read`
# must not pay for rich, kazoo and the Spark pipeline at start-up. Name → "module:attribute".
LAZY_COMMANDS: dict[str, str] = {
    "dump-log": "kafka_tools.cli.dump_log:dump_log",
    "validate": "kafka_tools.cli.validate:validate",
    "truncate": "kafka_tools.cli.truncate:truncate",
    "read": "kafka_tools.cli.read:read",
    "offsets-at": "kafka_tools.cli.offsets_at:offsets_at",
    "brokers": "kafka_tools.cli.cluster:brokers",
    "topics": "kafka_tools.cli.cluster:topics",
    "cluster-id": "kafka_tools.cli.cluster:cluster_id",
    "groups": "kafka_tools.cli.groups:groups",
    "migrate-offsets": "kafka_tools.cli.offsets:migrate_offsets",
    "offsets": "kafka_tools.cli.offsets:offsets",
    "scan": "kafka_tools.cli.scan:scan",
    "retention": "kafka_tools.cli.retention:retention",
    "metadata": "kafka_tools.cli.metadata:metadata",
    "replicas": "kafka_tools.cli.replicas:replicas",
    "completion": "kafka_tools.cli.docs:completion",
    "man": "kafka_tools.cli.docs:man",
}


class KtoolGroup(click.Group):
    """Turns every KtoolError into its one line on stderr and its exit code; nothing else exits.

    Subcommands named in LAZY_COMMANDS are imported on first use; `commands` still holds every
    command once `load_all()` ran (docgen and the tests that walk the tree call it).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            self._load(cmd_name)
        return self.commands.get(cmd_name)

    def load_all(self) -> KtoolGroup:
        for name in LAZY_COMMANDS:
            if name not in self.commands:
                self._load(name)
        return self

    def _load(self, name: str) -> None:
        from importlib import import_module

        from kafka_tools.cli.help import use_ktool_help

        module, _, attribute = LAZY_COMMANDS[name].partition(":")
        command = getattr(import_module(module), attribute)
        use_ktool_help([command])
        self.add_command(command, name)

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
    from kafka_tools.cli.help import KtoolContext

    cli.context_class = KtoolContext


_register()


def main() -> None:
    pipe.install()  # also for what Click prints before a command runs (`ktool --help | head -1`)
    try:
        cli.main(prog_name="ktool")
    except KeyboardInterrupt:
        click.echo("ktool: interrupted", err=True)
        sys.exit(130)


__all__ = ["cli", "main", "EXIT_USAGE"]
