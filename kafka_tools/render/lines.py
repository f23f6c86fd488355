"""Writing `name: value` lines: plain when piped, coloured with rich on a terminal.

The only place that decides colour. Plain output is written straight to the stream (fast for
dumping large segments into a pipe); a terminal gets rich styling.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

BAD_VALUES = {("isvalid", "false")}


def show(value: object) -> str:
    """Values as Kafka's tools print them: booleans in lower case."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def wants_colour(stream: TextIO, colour: bool | None) -> bool:
    """`--color always/never` (True/False) wins; otherwise colour on a terminal unless NO_COLOR is set
    to anything non-empty (https://no-color.org)."""
    if colour is not None:
        return colour
    if os.environ.get("NO_COLOR"):
        return False
    return is_terminal(stream)


class LineWriter:
    def __init__(self, stream: TextIO | None = None, colour: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.colour = wants_colour(self.stream, colour)
        self._console = None
        if self.colour:
            from rich.console import Console

            self._console = Console(file=self.stream, force_terminal=True, highlight=False, soft_wrap=True)

    def plain(self, text: str) -> None:
        if self._console is None:
            self.stream.write(text + "\n")
        else:
            self._console.print(text, style="bold", markup=False)

    def fields(self, fields: list[tuple[str, object]], prefix: str = "") -> None:
        if self._console is None:
            self.stream.write(line_of(fields, prefix))
            return
        from rich.text import Text

        line = Text(prefix, style="dim")
        for i, (k, v) in enumerate(fields):
            shown = show(v)
            if i:
                line.append(" ")
            line.append(f"{k}: ", style="cyan")
            bad = (k, shown) in BAD_VALUES
            line.append(shown, style="bold red" if bad else None)
        self._console.print(line)

    def problem(self, text: str) -> None:
        if self._console is None:
            self.stream.write(f"ktool: {text}\n")
        else:
            self._console.print(f"ktool: {text}", style="red", markup=False)

    def flush(self) -> None:
        self.stream.flush()


def line_of(fields: list[tuple[str, object]], prefix: str = "") -> str:
    """`key: value` pairs as one plain line, newline included (LineWriter.fields without colour)."""
    return prefix + " ".join(f"{k}: {show(v)}" for k, v in fields) + "\n"
