"""Progress bars on stderr, for people at a terminal only (never in a pipe, never in JSON)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

MIN_BYTES_FOR_BAR = 64 * 1024 * 1024


@contextmanager
def file_progress(path: str, size: int, enabled: bool | None) -> Iterator[Callable[[int], None] | None]:
    """A callback taking the byte position reached in `path`, drawing a bar when worth it."""
    if enabled is None:
        enabled = sys.stderr.isatty() and size >= MIN_BYTES_FOR_BAR
    if not enabled or size <= 0:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task(path.rsplit("/", 1)[-1], total=size)
        yield lambda position: bar.update(task, completed=position)


@contextmanager
def tree_progress(paths, enabled: bool | None) -> Iterator[Callable[[str], Callable[[int], None]] | None]:
    """For many files: a factory giving each segment its own bar callback, on one overall display.
    The display (and rich's refresh thread) starts at the first callback's first call, once the walk
    is under way (no thread runs before the walk needs one)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    import os
    import threading

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
    task = bar.add_task("validating", total=None)
    starting = threading.Lock()  # walker threads may tick first at once
    started = False

    def shown() -> None:
        nonlocal started
        with starting:
            if not started:
                bar.start()
                started = True

    def for_file(path) -> Callable[[int], None]:
        bar.update(task, description=os.path.basename(os.path.dirname(path)) or "validating")
        reached = 0

        def tick(position: int) -> None:  # by steps, so files walked at once (--jobs) add up
            nonlocal reached
            if not started:
                shown()
            bar.update(task, advance=position - reached)
            reached = position

        return tick

    try:
        yield for_file
    finally:
        if started:
            bar.stop()
