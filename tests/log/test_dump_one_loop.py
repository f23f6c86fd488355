"""dump-log renders a file through one loop (cli/dump_render.py), the command's own files and each
`--jobs` worker's alike, and DumpOptions holds what to dump, never a renderer's function."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import kafka_tools
from kafka_tools.log.reads.dump_events import DumpOptions

CLI = Path(kafka_tools.__file__).parent / "cli"


def test_dump_options_hold_no_renderer_function():
    fields = {f.name: str(f.type) for f in dataclasses.fields(DumpOptions)}
    assert not {"record_lines", "batch_lines"} & fields.keys()
    assert not [name for name, kind in fields.items() if "Callable" in kind or kind == "Any"]


def test_one_loop_renders_a_dumped_file():
    """Only cli/dump_render.py walks dump_file's events: dump_log's and dump_parallel's loops are it."""
    calling = sorted(
        path.name
        for path in CLI.glob("*.py")
        if any(
            isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dump_file"
            for node in ast.walk(ast.parse(path.read_text()))
        )
    )
    assert calling == ["dump_render.py"]
