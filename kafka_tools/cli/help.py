"""How every command's `--help` is laid out: wrapped at spaces only, never inside a word.

Click's own wrapping breaks at hyphens (`--zk-` / `ca/--zk-cert`) and leaves the lines of a `\\b`
block (the exit-status tables) as long as they were written. Here paragraphs wrap at spaces, long
words stay whole, and a `\\b` line that is too long wraps under its own text (`  3  a path …` continues
under `a path`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import click

_HANGING = re.compile(r"^(\s*(?:\S{1,4}\s{2,}|[-*]\s+)?)")  # "  3  " of an exit-status row, "- " of a list


def wrap_paragraphs(text: str, width: int, indent: str = "") -> list[str]:
    """Lines of `text` wrapped to `width` (indent included); blank lines separate paragraphs; a
    paragraph that starts with a `\\b` line keeps its lines, each wrapped under itself if too long."""
    out: list[str] = []
    for n, paragraph in enumerate(re.split(r"\n\s*\n", text.strip("\n"))):
        lines = paragraph.splitlines()
        if n:
            out.append("")
        if lines and lines[0].strip() == "\b":
            for line in lines[1:]:
                hanging = " " * len(_HANGING.match(line)[1])
                out += _fill(
                    line.strip(), width, indent + line[: len(line) - len(line.lstrip())], indent + hanging
                )
            continue
        lead = lines[0][: len(lines[0]) - len(lines[0].lstrip())] if lines else ""
        out += _fill(" ".join(line.strip() for line in lines), width, indent + lead, indent + lead)
    return out


def _fill(text: str, width: int, first: str, rest: str) -> list[str]:
    import textwrap  # help is printed rarely; every command would import it at start-up

    return textwrap.wrap(
        text,
        width=max(width, len(rest) + 20),
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    ) or [first.rstrip()]


class KtoolHelpFormatter(click.HelpFormatter):
    def write_text(self, text: str) -> None:
        for line in wrap_paragraphs(text, self.width, " " * self.current_indent):
            self.write(line + "\n")

    def write_dl(self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        term_width = min(max((len(term) for term, _ in rows), default=0), col_max)
        column = self.current_indent + term_width + col_spacing
        for term, text in rows:
            self.write(" " * self.current_indent + term)
            if not text:
                self.write("\n")
                continue
            if len(term) <= term_width:
                self.write(" " * (column - self.current_indent - len(term)))
                first = ""
            else:
                self.write("\n")
                first = " " * column
            lines = wrap_paragraphs(text, self.width - column)
            for i, line in enumerate(lines):
                self.write((first if i == 0 else " " * column) + line + "\n" if line else "\n")


class KtoolContext(click.Context):
    formatter_class = KtoolHelpFormatter


def use_ktool_help(commands: Iterable[click.Command]) -> None:
    """Give each command (and its subcommands) the help layout above."""
    for cmd in commands:
        cmd.context_class = KtoolContext
        if isinstance(cmd, click.Group):
            use_ktool_help(cmd.commands.values())
