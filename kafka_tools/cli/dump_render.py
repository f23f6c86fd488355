"""One file of `ktool dump-log` rendered: the loop the command runs for each file it dumps itself and
each pool worker of `--jobs` runs into its spool (cli/dump_parallel.py), so that both write the
same bytes and exit code. The renderer is handed here, not carried in DumpOptions: the dump service
is given only the maker of a v2 batch's lines, never a renderer."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from kafka_tools.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS, KtoolError, os_error_line
from kafka_tools.log.reads.dump import dump_file
from kafka_tools.log.reads.dump_events import DumpOptions, FileEnd, ProblemEvent


class Problems(Protocol):
    """Where a file's one-line failure goes: stderr's LineWriter, or a worker's spool of it."""

    def problem(self, text: str) -> None: ...


def record_lines_of(renderer: Any) -> Callable | None:
    """The renderer's maker of a v2 batch's lines from its bytes, when its lines are made in C for
    these options (dump_file's `record_lines`); None: batches are decoded and rendered record by record."""
    return renderer.batch_lines if renderer.record_lines_from_bytes() else None


def render_file(
    path: str,
    options: DumpOptions,
    renderer: Any,
    problems_only: Any,
    err: Problems,
    *,
    as_json: bool,
    out: TextIO,
    reader_gone: Callable[[], bool],
    progress: bool | None = False,
    shadow: Any = None,
) -> tuple[int, bool]:
    """Dump `path` through `renderer` (once stdout's reader is gone: only its problems, through
    `problems_only`); `shadow` also renders each problem for when the reader leaves later (a worker's
    --json). A file that
    cannot be read is one line on `err` (and, in --json, an error object). Returns the file's exit code
    and whether it failed; in --json the renderer's tally has counted the file."""
    from kafka_tools.render.progress import file_progress

    lines = record_lines_of(renderer)
    exit_code = 0
    failed = False
    try:
        size = os.path.getsize(path) if progress is not False and os.path.isfile(path) else 0
        with file_progress(path, size, progress) as tick:
            for event in dump_file(path, options, tick, record_lines=lines):
                if not reader_gone():
                    renderer.render(event)
                    if shadow is not None and isinstance(event, ProblemEvent):
                        shadow.render(event)
                elif isinstance(event, ProblemEvent):
                    # The reader left: stop printing, keep checking, and say on stderr what the exit
                    # code is about.
                    problems_only.render(event)
                if isinstance(event, FileEnd) and event.problems:
                    exit_code = max(exit_code, EXIT_FINDINGS)
    except (KtoolError, OSError) as exc:
        out.flush()
        message = str(exc) if isinstance(exc, KtoolError) else os_error_line(path, exc)
        code = exc.exit_code if isinstance(exc, KtoolError) else EXIT_ENVIRONMENT
        exit_code, failed = max(exit_code, code if code != 2 else EXIT_ENVIRONMENT), True
        err.problem(message)
        if as_json and not reader_gone():
            renderer.error(path, message, exit_code)
    if as_json:
        renderer.tally.file_done(exit_code, failed)
    return exit_code, failed
