"""Tables and lines into a pipe are written without rich, and read exactly as rich would draw them.

make_console gives a pipe (no colour) a PlainConsole; each case here prints the same thing through it
and through a rich Console made as make_console makes one for a pipe, and compares the characters.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_tools.render.tables import PIPED_WIDTH, Column, PlainConsole, TextTable, make_console, rich_console

V2 = Path(__file__).resolve().parents[2] / "fixtures" / "generated" / "v2"


def _both(*renderables, **kwargs) -> tuple[str, str]:
    plain, rich = io.StringIO(), io.StringIO()
    pc, rc = make_console(plain, False), rich_console(rich, False)
    assert isinstance(pc, PlainConsole)
    for r in renderables:
        pc.print(r, **kwargs)
        rc.print(r, **kwargs)
    return plain.getvalue(), rich.getvalue()


def _table(columns, rows, **kw) -> TextTable:
    table = TextTable(columns, False, **kw)
    for row in rows:
        table.add_row(*row, style="bold red")  # a style: no character of it without colour
    return table


TABLES = {
    "numbers right, names left": _table(
        ["partition", "segments", "bytes", "status"],
        [("gzip-0", "1", "1590", "clean"), ("a-much-longer-topic-name-17", "12345", "7", "CORRUPT")],
        right=["segments", "bytes"],
    ),
    "header wider than cells, empty cells": _table(
        ["log end", "x", "tail bytes"], [("", "1", ""), ("21", "", "0")], right=["log end", "tail bytes"]
    ),
    "no rows": _table(["topic", "partition"], [], right=["partition"]),
    "one column": _table(["only"], [("a",), ("bbbbbbbb",)]),
    "free text that could wrap": _table(
        ["member", "subscription"], [("m-1", "orders:3, payments:1, " * 20)], wrap=["subscription"]
    ),
    "Column objects with drop ranks": _table(
        [Column("group"), Column("lag", right=True, drop=1), Column("note", drop=2, wrap=True)],
        [("g", "5", "behind by 5"), ("h", "0", "")],
    ),
    "markup-like and colon cells": _table(["name", "value"], [("[bold]x[/bold]", ":ok: a:b:c")]),
}


@pytest.mark.parametrize("name", list(TABLES))
def test_a_table_into_a_pipe_reads_as_rich_draws_it(name: str) -> None:
    table = TABLES[name]
    assert table.plain_lines(PIPED_WIDTH) is not None  # written without rich
    plain, rich = _both(table)
    assert plain == rich


def test_a_table_wider_than_a_pipe_leaves_out_its_lesser_columns_as_rich_does() -> None:
    wide = "w" * PIPED_WIDTH
    table = _table(
        [Column("name"), Column("big", drop=1), Column("n", right=True)], [("a", wide, "1"), ("b", "x", "22")]
    )
    lines = table.plain_lines(PIPED_WIDTH)
    assert lines is not None and lines[-1].startswith("(left out to fit 4096 columns: big;")
    plain, rich = _both(table)
    assert plain == rich


@pytest.mark.parametrize(
    "cells",
    [("tab\there", "x"), ("wide 東京", "y"), ("new\nline", "z"), ("bell\x07", "w")],
    ids=["tab", "wide-characters", "newline", "control"],
)
def test_what_only_rich_draws_goes_to_rich(cells: tuple[str, str]) -> None:
    table = _table(["a", "b"], [cells])
    assert table.plain_lines(PIPED_WIDTH) is None
    plain, rich = _both(table)
    assert plain == rich


@pytest.mark.parametrize(
    "text,markup",
    [
        ("now: 2026-11-26T02:01:24.241Z (1795658484241)", False),
        ("note: retention.bytes -1: no size limit", None),
        ("a [bold]markup[/bold] line", None),
        ("a [bold]literal[/bold] line", False),
        ("  0  delete (time), active: 1590 bytes", True),
        ("tab\tand wide 東京", False),
        ("", False),
    ],
)
def test_a_line_into_a_pipe_reads_as_rich_prints_it(text: str, markup: bool | None) -> None:
    plain, rich = _both(text, markup=markup, highlight=False, style="bold")
    assert plain == rich


def test_anything_else_is_printed_by_rich() -> None:
    """No object (a blank line), several objects, rich's own renderables: as rich prints them."""
    from rich.text import Text

    plain, rich = io.StringIO(), io.StringIO()
    pc, rc = make_console(plain, False), rich_console(rich, False)
    for args in [(), ("a", "b"), (Text("styled", style="bold"),)]:
        pc.print(*args)
        rc.print(*args)
    assert plain.getvalue() == rich.getvalue() == "\na b\nstyled\n"


def test_a_log_dir_table_is_drawn_without_importing_rich() -> None:
    """`ktool validate LOGDIR | …` and `ktool retention LOGDIR | …`: the per-partition table and the
    preview, and no rich module loaded."""
    code = (
        "import sys\nfrom kafka_tools.cli.main import cli\n"
        "for args in (['validate', sys.argv[1]], ['retention', sys.argv[1]]):\n"
        "    try:\n        cli.main(args, prog_name='ktool')\n    except SystemExit as e:\n"
        "        assert not e.code, e.code\n"
        "print('RICH', [m for m in sys.modules if m == 'rich' or m.startswith('rich.')], file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(V2)], capture_output=True, text=True, check=True)
    assert " partition      | segments |" in out.stdout and "\n gzip-0 " in out.stdout
    assert "gzip-0 (" in out.stdout and "total: " in out.stdout
    assert "RICH []" in out.stderr
