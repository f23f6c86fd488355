"""The `ktool` program: one Click group; each subcommand is a thin skin over a service."""

from __future__ import annotations

import sys

import click

from kafka_tools import __version__
from kafka_tools.cli import interrupts, pipe, start_up
from kafka_tools.cli.options import COLOR_CHOICE, COLOR_HELP, colour_setting
from kafka_tools.errors import (
    EXIT_ENVIRONMENT,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    KtoolError,
    Terminated,
    os_reason,
)

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
    "quorum": "kafka_tools.cli.cluster:quorum",
    "groups": "kafka_tools.cli.groups:groups",
    "migrate-offsets": "kafka_tools.cli.offsets:migrate_offsets",
    "offsets": "kafka_tools.cli.offsets:offsets",
    "scan": "kafka_tools.cli.scan:scan",
    "retention": "kafka_tools.cli.retention:retention",
    "metadata": "kafka_tools.cli.metadata:metadata",
    "kraft-migration": "kafka_tools.cli.kraft_migration:kraft_migration",
    "replicas": "kafka_tools.cli.replicas:replicas",
    "tiered": "kafka_tools.cli.tiered:tiered",
    "transactions": "kafka_tools.cli.transactions:transactions",
    "completion": "kafka_tools.cli.docs:completion",
    "man": "kafka_tools.cli.docs:man",
}

# Each command's first sentence, so that `ktool --help` and a TAB after `ktool ` list the commands
# without importing them (a test checks these equal the commands' own help). A command missing here
# is imported to be listed: slower, still right.
SUMMARIES: dict[str, str] = {
    "brokers": "List the live brokers as registered in ZooKeeper, with the controller and the cluster id.",
    "cluster-id": "Print the cluster id (/cluster/id, Kafka 0.10.1+).",
    "completion": "Print the shell completion script for SHELL.",
    "dump-log": "Decode segment files of every on-disk generation and the files beside them.",
    "groups": "Consumer groups: where their offsets live, who owns what, lag, rebalance plans.",
    "kraft-migration": "The ZooKeeper to KRaft migration (KIP-866): both stores compared object by object.",
    "man": "Print the manual page (roff) of ktool or of COMMAND.",
    "metadata": "The KRaft cluster's metadata, read offline from a log dir.",
    "migrate-offsets": "Move consumer offsets between ZooKeeper and Kafka, with a journal and undo.",
    "offsets": "Consumer offsets to and from files (ExportZkOffsets lines, or CSV).",
    "offsets-at": "Print each partition's offset at a time, from the files of log dirs (no broker needed).",
    "replicas": "The replicas of a partition, compared offline from their log dirs.",
    "quorum": "Show the KRaft controller quorum: leader, epoch, voters, observers and their lag.",
    "read": "Print the records of a partition directory from an offset or a time, offline.",
    "retention": "Preview which segments the broker's delete policy would remove next, and why.",
    "scan": "Validate and decode segments (with Spark for large inputs), and write what they hold as tables.",
    "tiered": "Tiered storage (KIP-405): remote segments replayed from __remote_log_metadata, audited.",
    "transactions": "Transactions from log dirs: the coordinator's state, last stable offsets, hanging ones.",
    "topics": "Show the partitions of topics: leader, replicas, ISR, leader epoch.",
    "truncate": "Cut corrupt tails of segments as the broker's log recovery does, losing no valid byte.",
    "validate": "Check CRCs and structure of segments, partitions or whole log.dirs trees.",
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

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(name, self.listed(ctx, name).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list:
        from click.shell_completion import CompletionItem

        if incomplete.startswith("-"):
            return super().shell_complete(ctx, incomplete)
        return [
            CompletionItem(name, help=self.listed(ctx, name).get_short_help_str())
            for name in self.list_commands(ctx)
            if name.startswith(incomplete)
        ]

    def listed(self, ctx: click.Context, name: str) -> click.Command:
        """The command as help and completion list it: a stand-in holding its summary when it is not
        loaded yet (its help's first sentence gives the same short help)."""
        if name in SUMMARIES and name not in self.commands:
            return click.Command(name, help=SUMMARIES[name])
        return self.get_command(ctx, name) or click.Command(name)

    def load_all(self) -> KtoolGroup:
        for name in LAZY_COMMANDS:
            if name not in self.commands:
                self._load(name)
        return self

    def _load(self, name: str) -> None:
        from importlib import import_module

        from kafka_tools.cli.help import use_ktool_help
        from kafka_tools.cli.options import add_shared_options

        module, _, attribute = LAZY_COMMANDS[name].partition(":")
        command = getattr(import_module(module), attribute)
        use_ktool_help([command])
        add_shared_options(command)
        self.add_command(command, name)

    def make_context(self, *args, **kwargs) -> click.Context:
        # A signal while Click parses the command line would reach Click's own handler ("Aborted!",
        # exit 1): it is Ctrl-C or SIGTERM here too (130/143, one line).
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt as exc:
            interrupts.exit_interrupted(exc)

    def invoke(self, ctx: click.Context):
        # A reader that leaves early (`| head -1`, `| true`) must not decide the exit code: writes
        # after that are dropped and the command finishes its verdict (see cli/pipe.py).
        saved = sys.stdout, sys.stderr
        try:
            pipe.install()
            start_up.resume_collection()  # the command is resolved: what start-up built is frozen
            return super().invoke(ctx)
        except KtoolError as exc:
            click.echo(f"ktool: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except OSError as exc:
            # The last net: a place ktool could not read or write is the environment (exit 3), said in
            # one line, never a traceback read by scripts as exit 1.
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"ktool: {where}{os_reason(exc)}", err=True)
            ctx.exit(EXIT_ENVIRONMENT)
        except KeyboardInterrupt as exc:
            # Click would say "Aborted!" and exit 1, which scripts read as "findings".
            _interrupted(ctx, exc)
        except Exception as exc:
            # Ctrl-C can land inside a library's own cleanup (a lock released in a `finally`, a client
            # stopping), which then fails in turn: what reaches here is that error with the
            # KeyboardInterrupt behind it. It is still Ctrl-C: exit 130, not a traceback and exit 1.
            if isinstance(exc, click.exceptions.Exit | click.ClickException) or not _after_interrupt(exc):
                raise
            _interrupted(ctx, _after_interrupt(exc))
        finally:
            # Flushed through the guard: what is still buffered must not meet a closed pipe at exit.
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = saved


def _after_interrupt(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt behind `exc` (its context or cause, a few links deep), if any."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _interrupted(ctx: click.Context, exc: BaseException | None) -> None:
    terminated = isinstance(exc, Terminated)
    if interrupts.line_due():
        click.echo("ktool: terminated" if terminated else "ktool: interrupted", err=True)
    ctx.exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)


@click.group(
    cls=KtoolGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="ktool")
@click.option("--color", type=COLOR_CHOICE, default="auto", show_default=True, help=COLOR_HELP)
@click.pass_context
def cli(ctx: click.Context, color: str) -> None:
    """Decode, validate and repair Kafka logs; move offsets; inspect groups.

    `ktool COMMAND -h` tells more; `ktool man COMMAND` prints its manual page and `ktool completion
    bash|zsh|fish` the shell completion script.

    \b
    Exit status (every command):
      0    ok
      1    findings: corruption, a refused plan, a read-back that does not match
      2    usage error
      3    environment: a file unreadable, a server unreachable, auth failed
      130  interrupted (Ctrl-C)
      143  terminated (SIGTERM), handled as Ctrl-C
    """
    ctx.obj = {"color": colour_setting(color)}


def _register() -> None:
    from kafka_tools.cli.help import KtoolContext

    cli.context_class = KtoolContext


_register()


def main() -> None:
    interrupts.install()  # kafka_tools/__main__.py did already, before any import
    pipe.install()  # also for what Click prints before a command runs (`ktool --help | head -1`)
    try:
        cli.main(prog_name="ktool")
    except KeyboardInterrupt as exc:
        interrupts.exit_interrupted(exc)
    except SystemExit as exc:
        # Click's "Aborted!" exit: a signal that landed in Click's own code between the command's steps
        behind = _after_interrupt(exc.__context__) if exc.code == 1 else None
        if behind is not None:
            interrupts.exit_interrupted(behind)
        interrupts.exit_with(exc.code, start_up.exiting)


__all__ = ["cli", "main", "EXIT_USAGE"]
