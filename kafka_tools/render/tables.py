"""One table style for every command, and the one place that decides colour and width.

On a terminal: rich's SIMPLE_HEAD box at the terminal's width (``COLUMNS`` wins), coloured unless
``NO_COLOR`` is set or ``--color never`` given (``--color always`` colours a pipe too). Into a pipe or
a file: the same table in plain ASCII (``|`` between columns, ``-+-`` under the header), never wrapped,
never coloured.

Names (topics, partitions, groups) and numbers are never elided nor broken: when a table is wider than
the terminal, the lesser columns (``Column.drop``, highest first) are left out and a line says which
(``--json`` has them all); free-text columns (``Column.wrap``) wrap at spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from kafka_tools.format.shared_methods import FrozenSharedMethods
from kafka_tools.render.lines import is_terminal, wants_colour

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

PIPED_WIDTH = 4096  # into a pipe a table is as wide as its content: nothing wraps


@dataclass(init=False, repr=False, eq=False)
class Column(FrozenSharedMethods):
    header: str
    right: bool = False  # numbers are right-aligned
    drop: int = 0  # 0: always shown; otherwise left out, highest first, when the terminal is too narrow
    wrap: bool = False  # free text (notes, reasons) that may wrap at spaces

    def __init__(self, header: str, right: bool = False, drop: int = 0, wrap: bool = False) -> None:
        object.__setattr__(self, "header", header)
        object.__setattr__(self, "right", right)
        object.__setattr__(self, "drop", drop)
        object.__setattr__(self, "wrap", wrap)


def make_console(out: TextIO, colour: bool) -> Console | PlainConsole:
    """A rich Console for `out`: styles only when `colour`; the terminal's width on a terminal, else
    unbounded. Into a pipe or a file without colour: a PlainConsole, which writes the same characters
    without importing rich."""
    if not colour and not is_terminal(out):
        return PlainConsole(out)
    return rich_console(out, colour)


def rich_console(out: TextIO, colour: bool) -> Console:
    from rich.console import Console

    return Console(
        file=out,
        force_terminal=True if colour else None,  # False would hide a terminal from rich
        no_color=not colour,
        color_system="auto" if colour else None,
        highlight=False,
        emoji=False,  # data (group names, metadata) is printed as it is: `:ok:` stays three characters
        soft_wrap=True,
        width=None if is_terminal(out) else PIPED_WIDTH,
    )


def _plain(text: str) -> bool:
    """Text that rich prints unchanged into a pipe: one line of printable ASCII (rich expands tabs,
    strips control characters and measures wide characters in cells)."""
    return text.isascii() and text.isprintable()


class PlainConsole:
    """`print` for a pipe or a file without colour: lines and TextTables written directly, character
    for character what rich writes there (tests/cli/test_plain_tables.py compares them), because
    importing rich costs a small command more than its work. Anything else goes to a rich Console."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._rich: Console | None = None

    def print(
        self,
        *objects: Any,
        style: str | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        **kw: Any,
    ) -> None:
        # Without colour, style and highlighting change no character.
        renderable = objects[0] if len(objects) == 1 else None
        if not kw and isinstance(renderable, TextTable):
            lines = renderable.plain_lines(PIPED_WIDTH)
            if lines is not None:
                self.out.write("".join(line + "\n" for line in lines))
                return
        elif not kw and isinstance(renderable, str) and _plain(renderable):
            if markup is False or "[" not in renderable:  # rich's markup starts with "["
                self.out.write(renderable + "\n")
                return
        if self._rich is None:
            self._rich = rich_console(self.out, False)
        self._rich.print(*objects, style=style, markup=markup, highlight=highlight, **kw)


class TextTable:
    """A table in the one style: add rows, then `console.print(table)` (see make_console)."""

    def __init__(
        self,
        columns: Sequence[Column | str],
        colour: bool,
        title: str | None = None,
        *,
        right: Sequence[str] = (),
        drop: Sequence[str] = (),
        wrap: Sequence[str] = (),
    ) -> None:
        """Columns as Column, or as headers with `right` (right-aligned), `drop` (lesser columns, the
        first left out first) and `wrap` (free text) naming theirs."""
        ranks = {h: len(drop) - n for n, h in enumerate(drop)}
        self.columns = [
            c if isinstance(c, Column) else Column(c, c in right, ranks.get(c, 0), c in wrap) for c in columns
        ]
        self.colour = colour
        self.title = title
        self.rows: list[tuple[list[str], str | None]] = []

    def add_row(self, *cells: str, style: str | None = None) -> None:
        self.rows.append(([str(c) for c in cells], style if self.colour else None))

    def _rich(self, shown: list[int], terminal: bool):
        from rich import box
        from rich.table import Table
        from rich.text import Text

        table = Table(
            box=box.SIMPLE_HEAD if terminal else box.ASCII2,
            show_edge=False,
            title=self.title,
            title_style="bold" if self.colour else "",
        )
        for i in shown:
            c = self.columns[i]
            table.add_column(
                c.header,
                justify="right" if c.right else "left",
                no_wrap=not c.wrap,
                overflow="fold",  # if a cell must ever be narrower than its text: fold it, never "…"
                min_width=None if c.wrap else self._natural(i),
            )
        for cells, style in self.rows:
            # Text, not str: a cell is data, never markup (a group named `[bold]` is printed as it is).
            table.add_row(*(Text(cells[i]) for i in shown), style=style)
        return table

    def _natural(self, i: int) -> int:
        return max([len(self.columns[i].header), *(len(cells[i]) for cells, _ in self.rows)])

    def _width(self, shown: list[int]) -> int:
        # Each column has one space of padding on both sides and a one-character separator between.
        widths = [min(self._natural(i), 24) if self.columns[i].wrap else self._natural(i) for i in shown]
        return sum(widths) + 3 * len(widths) - 1

    def _fit(self, max_width: int) -> tuple[list[int], list[str]]:
        """The columns shown in `max_width` and the headers of those left out."""
        shown = list(range(len(self.columns)))
        dropped: list[str] = []
        droppable = sorted((c.drop, i) for i, c in enumerate(self.columns) if c.drop)
        while droppable and self._width(shown) > max_width:
            _, i = droppable.pop()
            shown.remove(i)
            dropped.append(self.columns[i].header)
        return shown, dropped

    @staticmethod
    def _dropped_note(max_width: int, dropped: list[str]) -> str:
        return f"(left out to fit {max_width} columns: {', '.join(dropped)}; --json has every field)"

    def plain_lines(self, max_width: int) -> list[str] | None:
        """The table as rich draws it into a pipe (ASCII2 box, no outer edge, nothing wrapped), or None
        when only rich can draw it: a title, a cell that is not one line of printable ASCII, or a table
        still wider than `max_width` (rich would wrap it)."""
        cells = [c.header for c in self.columns] + [cell for row, _ in self.rows for cell in row]
        if self.title is not None or not all(_plain(c) for c in cells):
            return None
        if any(len(row) != len(self.columns) for row, _ in self.rows):
            return None
        shown, dropped = self._fit(max_width)
        widths = [self._natural(i) for i in shown]
        if sum(widths) + 3 * len(widths) - 1 > max_width:
            return None

        def line(values: Sequence[str]) -> str:
            return "|".join(
                f" {v.rjust(w) if self.columns[i].right else v.ljust(w)} "
                for i, v, w in zip(shown, values, widths, strict=True)
            )

        lines = [line([self.columns[i].header for i in shown]), "+".join("-" * (w + 2) for w in widths)]
        lines += [line([cells[i] for i in shown]) for cells, _ in self.rows]
        if dropped:
            lines.append(self._dropped_note(max_width, dropped))
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        shown, dropped = self._fit(options.max_width)
        yield self._rich(shown, console.is_terminal)
        if dropped:
            yield Text(self._dropped_note(options.max_width, dropped), style="dim" if self.colour else "")


__all__ = ["Column", "PlainConsole", "TextTable", "is_terminal", "make_console", "wants_colour"]
