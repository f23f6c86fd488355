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
from typing import TYPE_CHECKING, TextIO

from kafka_tools.render.lines import is_terminal, wants_colour

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

PIPED_WIDTH = 4096  # into a pipe a table is as wide as its content: nothing wraps


@dataclass(frozen=True)
class Column:
    header: str
    right: bool = False  # numbers are right-aligned
    drop: int = 0  # 0: always shown; otherwise left out, highest first, when the terminal is too narrow
    wrap: bool = False  # free text (notes, reasons) that may wrap at spaces


def make_console(out: TextIO, colour: bool) -> Console:
    """A rich Console for `out`: styles only when `colour`; the terminal's width on a terminal, else
    unbounded."""
    from rich.console import Console

    return Console(
        file=out,
        force_terminal=True if colour else None,  # False would hide a terminal from rich
        no_color=not colour,
        color_system="auto" if colour else None,
        highlight=False,
        soft_wrap=True,
        width=None if is_terminal(out) else PIPED_WIDTH,
    )


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
            table.add_row(*(cells[i] for i in shown), style=style)
        return table

    def _natural(self, i: int) -> int:
        return max([len(self.columns[i].header), *(len(cells[i]) for cells, _ in self.rows)])

    def _width(self, shown: list[int]) -> int:
        # Each column has one space of padding on both sides and a one-character separator between.
        widths = [min(self._natural(i), 24) if self.columns[i].wrap else self._natural(i) for i in shown]
        return sum(widths) + 3 * len(widths) - 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        shown = list(range(len(self.columns)))
        dropped: list[str] = []
        droppable = sorted((c.drop, i) for i, c in enumerate(self.columns) if c.drop)
        while droppable and self._width(shown) > options.max_width:
            _, i = droppable.pop()
            shown.remove(i)
            dropped.append(self.columns[i].header)
        yield self._rich(shown, console.is_terminal)
        if dropped:
            yield Text(
                f"(left out to fit {options.max_width} columns: {', '.join(dropped)}; "
                "--json has every field)",
                style="dim" if self.colour else "",
            )


__all__ = ["Column", "TextTable", "is_terminal", "make_console", "wants_colour"]
