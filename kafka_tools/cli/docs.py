"""`ktool completion SHELL` and `ktool man [COMMAND]…`: the generated docs, from the installed program.

`pip install` does not put `man/` and `completions/` anywhere a shell or `man` looks, so ktool prints
them (the same text `python -m kafka_tools.cli.docgen` writes into the repository).
"""

from __future__ import annotations

from pathlib import Path

import click

from kafka_tools.cli.paths import path_type
from kafka_tools.errors import UsageError, os_error
from kafka_tools.format.plural import plural

_SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(_SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
    Install it where your shell looks:
      bash  mkdir -p ~/.local/share/bash-completion/completions &&
            ktool completion bash > ~/.local/share/bash-completion/completions/ktool
      zsh   mkdir -p ~/.zfunc && ktool completion zsh > ~/.zfunc/_ktool
            (with fpath+=~/.zfunc before compinit)
      fish  mkdir -p ~/.config/fish/completions &&
            ktool completion fish > ~/.config/fish/completions/ktool.fish

    \b
    Exit status:
      0  ok
      2  usage error
    """
    from kafka_tools.cli.docgen import completion_script

    click.echo(completion_script(_tree(), shell), nl=False)


def _tree() -> click.Group:
    """ktool's whole command tree, every command loaded: the root of the running command's context (not
    an import of cli.main, which loads this module lazily: no circle)."""
    return click.get_current_context().find_root().command.load_all()


def _complete_command(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """`ktool man <TAB>`: the command names, then a group's subcommands (only that group is loaded)."""
    group: click.Command = ctx.find_root().command
    for word in ctx.params.get("command") or ():
        group = group.get_command(ctx, word) if isinstance(group, click.Group) else None
        if group is None:
            return []
    if not isinstance(group, click.Group):
        return []
    return [name for name in group.list_commands(ctx) if name.startswith(incomplete)]


@click.command("man")
@click.argument("command", nargs=-1, shell_complete=_complete_command)
@click.option(
    "--output-dir",
    type=path_type(path_type=Path),  # a file in the way is exit 3 in one line (make_state_dir), not usage
    metavar="DIRECTORY",
    help="Write every page (ktool.1, ktool-COMMAND.1, …) into this directory instead.",
)
def man(command: tuple[str, ...], output_dir: Path | None) -> None:
    """Print the manual page (roff) of ktool or of COMMAND.

    Read one with `ktool man groups list | man -l -`.

    \b
    Install them all where man looks:
      ktool man --output-dir ~/.local/share/man/man1

    \b
    Exit status:
      0  ok
      2  usage error (no such command)
      3  the directory cannot be written
    """
    from kafka_tools.cli.docgen import man_pages

    pages = man_pages(_tree())
    if output_dir is not None:
        if command:
            raise UsageError("--output-dir writes every page: give no COMMAND with it")
        from kafka_tools.keep.state import make_state_dir

        make_state_dir(output_dir, "manual page directory")
        try:
            for name, text in pages.items():
                (output_dir / name).write_text(text)
        except OSError as exc:
            raise os_error(output_dir, exc) from None
        click.echo(f"ktool: {plural(len(pages), 'manual page')} written to {output_dir}", err=True)
        return
    name = "-".join(("ktool", *command)) + ".1"
    if name not in pages:
        raise UsageError(f"no command `ktool {' '.join(command)}`: see `ktool -h`")
    click.echo(pages[name], nl=False)
