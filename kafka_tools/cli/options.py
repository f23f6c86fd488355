"""The options every command shares, defined once: `--json`, `--color` (taken at any position), the
offset range, renamed options with their old spelling kept as a hidden alias, and the one grammar of
times and offsets (`earliest`, `latest`, `-1`, `-2`, `-3`, epoch milliseconds, ISO-8601).

A script that learnt an option on one command can rely on it meaning the same on every other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kafka_tools.errors import InputError, os_reason
from kafka_tools.log.files import broker_lock
from kafka_tools.log.reads.times import EARLIEST, LATEST, MAX_TIMESTAMP

F = TypeVar("F", bound=Callable[..., Any])

TIME_WORDS = {"latest": LATEST, "earliest": EARLIEST, "max-timestamp": MAX_TIMESTAMP}
TIME_WORD_OF = {v: k for k, v in TIME_WORDS.items()}


def json_option(what: str) -> Callable[[F], F]:
    """`--json`: JSON Lines on stdout, `what` saying which objects; the last line is a `summary`."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help=f"JSON Lines on stdout: {what}; the last line is a `summary` object.",
    )


def progress_option() -> Callable[[F], F]:
    """`--progress/--no-progress`: a bar on stderr, by default only on a terminal."""
    return click.option(
        "--progress/--no-progress", default=None, help="Progress bar on stderr [default: on a terminal]."
    )


def jobs_option(what: str) -> Callable[[F], F]:
    """`--jobs/-j N` (N >= 1; None: the command chooses), `what` saying what runs at once and the default."""
    return click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help=what)


# How keys and values print: render/values.py's decoders, named here so that declaring the options
# imports no renderer (tests/cli/test_lazy_commands.py checks the two lists agree).
DECODERS = ("utf8", "hex", "base64", "json", "none")


def decoder_options(func: F) -> F:
    """`--key-decoder` and `--value-decoder`: how the records' keys, values and header values print, the
    same choices, default and help in every command that prints records (dump-log, read, replicas diff)."""
    func = click.option(
        "--value-decoder",
        type=click.Choice(DECODERS),
        default="utf8",
        show_default=True,
        help="How record values and header values are printed (as --key-decoder).",
    )(func)
    return click.option(
        "--key-decoder",
        type=click.Choice(DECODERS),
        default="utf8",
        show_default=True,
        help="How record keys are printed: utf8 (text, escaped \\xNN where not printable), hex, base64, "
        "json (compact) or none (not at all).",
    )(func)


COLOR_CHOICE = click.Choice(["auto", "always", "never"])
COLOR_HELP = "Colour text output: auto colours a terminal unless NO_COLOR is set; always overrides NO_COLOR."


def colour_setting(value: str) -> bool | None:
    """None (decide by the terminal), True or False, for a --color value."""
    return None if value == "auto" else value == "always"


def _set_colour(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    root = ctx.find_root()
    if root.obj is None:
        root.obj = {}
    root.obj["color"] = colour_setting(value)


def colour_option() -> click.Option:
    """The `--color` every command takes (so `ktool validate DIR --color never` works as `ktool --color
    never validate DIR` does); it sets the one setting the renderers read from the root context."""
    return click.Option(
        ["--color"],
        type=COLOR_CHOICE,
        default=None,
        expose_value=False,
        callback=_set_colour,
        help=COLOR_HELP + " [default: auto]",
    )


def add_shared_options(command: click.Command) -> None:
    """Give `command` (and a group's subcommands) the options every command takes."""
    if not any(p.name == "color" for p in command.params):
        command.params.append(colour_option())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_shared_options(sub)


def colour_of(ctx: click.Context) -> bool | None:
    """The --color setting, wherever on the command line it was given (None: decide by the terminal)."""
    return (ctx.find_root().obj or {}).get("color")


def offset_range_options(
    from_help: str = "Skip records below this offset.", to_help: str = "Skip records above this offset."
) -> Callable[[F], F]:
    """`--from-offset N` and `--to-offset M` (both non-negative; M before N is a usage error)."""

    def decorate(func: F) -> F:
        func = click.option(
            "--to-offset", type=click.IntRange(min=0), metavar="M", default=None, help=to_help
        )(func)
        func = click.option(
            "--from-offset", type=click.IntRange(min=0), metavar="N", default=None, help=from_help
        )(func)
        return func

    return decorate


def check_offset_range(from_offset: int | None, to_offset: int | None) -> None:
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise click.BadParameter(
            f"--from-offset {from_offset} is past --to-offset {to_offset}: no record is in the range",
            param_hint="'--from-offset'",
        )


def renamed_option(old: str, new: str, dest: str) -> Callable[[F], F]:
    """`old`, hidden, for a release: the same value as `new` (which names parameter `dest`), with a
    one-line note on stderr saying the new spelling."""

    def _alias(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None:
            return
        click.echo(f"ktool: {old} is now {new} (the old spelling goes in a later release)", err=True)
        ctx.meta.setdefault("ktool.aliases", {})[dest] = (old, value)

    def decorate(func: F) -> F:
        return click.option(old, type=str, default=None, hidden=True, expose_value=False, callback=_alias)(
            func
        )

    return decorate


def aliased(ctx: click.Context, dest: str, value: Any, param_type: click.ParamType | None = None) -> Any:
    """`value`, or what the hidden old spelling of its option gave (converted by `param_type`)."""
    old, given = ctx.meta.get("ktool.aliases", {}).get(dest, (None, None))
    if given is None:
        return value
    source = ctx.get_parameter_source(dest)
    if source is not None and source.name == "COMMANDLINE":
        raise click.UsageError(f"{old} is the old spelling of --{dest.replace('_', '-')}: give one", ctx=ctx)
    if param_type is None:
        return given
    try:
        return param_type.convert(given, None, ctx)
    except click.BadParameter as exc:
        exc.param_hint = f"'{old}'"
        raise


class TimeSpec(click.ParamType):
    """A point of a partition as ListOffsets asks for one: `earliest` (-2), `latest` (-1),
    `max-timestamp` (-3), epoch milliseconds (0 or more) or an ISO-8601 time (UTC unless it names a
    zone). `words=False` (a wall-clock time, e.g. retention's --now) takes only the last two."""

    name = "time"

    def __init__(self, words: bool = True) -> None:
        self.words = words

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "earliest|latest|max-timestamp|T" if self.words else "T"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        if self.words:
            if text.lower() in TIME_WORDS:
                return TIME_WORDS[text.lower()]
            if text in ("-1", "-2", "-3"):
                return int(text)
        if re.fullmatch(r"-\d+", text):
            allowed = "-1 (latest), -2 (earliest), -3 (max-timestamp) or " if self.words else ""
            self.fail(f"{text!r}: expected {allowed}epoch milliseconds (0 or more)", param, ctx)
        from kafka_tools.errors import UsageError
        from kafka_tools.log.reads.times import parse_time

        try:
            return parse_time(text, param.opts[0] if param is not None else "T")
        except UsageError as exc:
            self.fail(str(exc).partition(": ")[2] or str(exc), param, ctx)


def write_output_file(path: Path, text: str) -> None:
    """Write `text` to `path`: one line and exit 3 when the place cannot be written."""
    try:
        path.write_text(text)
    except OSError as exc:
        raise InputError(f"{path}: cannot be written: {os_reason(exc)}") from None


# `--live` / `--offline`: for when a log dir's `.lock` cannot tell whether a broker writes it (a copy of
# a log dir, a broker on another host's mount). Without either, the lock decides
# (kafka_tools/log/files/broker_lock.py).
def _set_mode(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if ctx.resilient_parsing:
        return
    if value is None:
        return  # $KTOOL_LIVENESS, or the lock
    before = broker_lock.mode()
    broker_lock.set_mode(value)
    ctx.call_on_close(lambda: broker_lock.set_mode(before))  # an in-process caller's next command asks again


def live_options(func: F) -> F:
    return click.option(
        "--live/--offline",
        "liveness",
        default=None,
        expose_value=False,
        is_eager=True,
        callback=lambda ctx, param, value: _set_mode(
            ctx, param, None if value is None else (broker_lock.LIVE if value else broker_lock.OFFLINE)
        ),
        help="Read the log dirs as a running broker's (its newest segment in flight, repairs refused) or "
        "as a stopped one's [default: $KTOOL_LIVENESS, else whether a broker holds the log dir's .lock].",
    )(func)


def say_swept(swept: list[Path]) -> None:
    """One line naming the temporary files of killed runs that writing a journal removed (keep/durable.py)."""
    if swept:
        files = "file" if len(swept) == 1 else "files"
        names = ", ".join(str(p) for p in swept)
        click.echo(f"ktool: removed {len(swept)} temporary {files} a killed run had left: {names}", err=True)
