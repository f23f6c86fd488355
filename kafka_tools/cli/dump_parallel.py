"""`ktool dump-log --jobs N` over many files: N cores at work, output still in file order.

Rendering is Python-bound (the GIL), so the helpers are the worker pool's processes (log/workers/pool.py:
spawned, sent the options with each file). Each file is taken once: the workers are handed the files
from the last one back, one at a time as each is free, and render each exactly as `--jobs 1` would,
into a spool file on disk rather than into memory (a 1 GiB segment costs a worker no more RAM than
the sequential dump does); lines meant for stderr are spooled beside it with the byte position of
stdout they follow. The parent takes the files from the first on, and renders each that no worker
has been handed straight to stdout as `--jobs 1` does; for a file a worker has, it copies that
file's spools to stdout (sendfile) and stderr. So the bytes and the exit code are those of `--jobs 1`,
only the workers' files pay the spool's copy, and a core is idle only at the end (the files are
handed from the back: every file after a worker's is a worker's too, so the parent waits only once
it has rendered all the others). When stdout's reader leaves (`| head -1`), the workers are told (a
byte in a file they map) to stop rendering; only their problems are still said.

Every wait is bounded (the pool's), a worker that died, is stopped or hangs is found out (its file is
then dumped by the parent, and a line says so), and the end is a SIGKILL to each worker and a bounded
reap (children.end_children).
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import sys
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_tools.cli import pipe
from kafka_tools.cli.dump_render import render_file
from kafka_tools.log.reads.dump_events import DumpOptions
from kafka_tools.render.dump_json import DumpJsonRenderer, DumpTally
from kafka_tools.render.dump_text import DumpTextRenderer
from kafka_tools.render.lines import LineWriter

if TYPE_CHECKING:  # the pool is imported when a dump has files for it
    from kafka_tools.log.workers.pool import Pool

_RECORD = struct.Struct(">QBI")  # stdout position, kind, length of the UTF-8 text that follows
ALWAYS, IF_READER_GONE = 0, 1  # a stderr line; a problem already in stdout (JSON), said if unread
_CHUNK = 1 << 20  # a spool is copied in pieces of about this size, each ending a line
_LOOK = 64 << 10  # bytes read at once to find where a piece's last line ends


@dataclass(frozen=True, slots=True)
class Setup:
    """What a worker needs to render a file as the parent's renderer would."""

    options: DumpOptions
    as_json: bool
    key_decoder: str
    value_decoder: str
    encoding: str
    errors: str
    spool_dir: str


@dataclass(frozen=True, slots=True)
class Rendered:
    out_path: str
    err_path: str
    exit_code: int
    tally: DumpTally | None  # --json: what the file adds to the final summary


class _ProblemSpool:
    """Stands in for the stderr LineWriter in a worker: each line with the stdout position it follows."""

    colour = False

    def __init__(self, path: str, text: io.TextIOWrapper) -> None:
        self._file = open(path, "wb")  # noqa: SIM115 (closed by close())
        self._text = text

    def problem(self, text: str, kind: int = ALWAYS) -> None:
        self._text.flush()
        data = text.encode("utf-8", "surrogateescape")
        self._file.write(_RECORD.pack(self._text.buffer.tell(), kind, len(data)) + data)

    def close(self) -> None:
        self._file.close()


class _Shadow:
    """For --json: a problem object goes to stdout; its text line is kept for when nobody read it."""

    def __init__(self, spool: _ProblemSpool) -> None:
        self._spool = spool

    def problem(self, text: str) -> None:
        self._spool.problem(text, IF_READER_GONE)


_GONE: dict[str, mmap.mmap] = {}  # a worker's map of each dump's "reader gone" byte, by its file


def reader_gone_flag(spool_dir: str) -> mmap.mmap:
    """The byte the parent sets when stdout's reader left, shared with the workers through a file."""
    path = os.path.join(spool_dir, "gone")
    if path not in _GONE:
        with open(path, "r+b") as f:
            _GONE[path] = mmap.mmap(f.fileno(), 1)
    return _GONE[path]


def render_spooled(setup: Setup, index: int, path: str) -> Rendered:
    """One file's output into two spool files (in a worker)."""
    gone = reader_gone_flag(setup.spool_dir)
    out_path = os.path.join(setup.spool_dir, f"{index}.out")
    err_path = os.path.join(setup.spool_dir, f"{index}.err")
    with open(out_path, "wb") as raw:
        out = io.TextIOWrapper(raw, encoding=setup.encoding, errors=setup.errors, newline="\n")
        err = _ProblemSpool(err_path, out)
        try:
            exit_code, tally = _render_into(setup, gone, path, out, err)
        finally:
            out.flush()
            err.close()
            out.detach()
    return Rendered(out_path, err_path, exit_code, tally)


def _render_into(
    setup: Setup, gone, path: str, out: io.TextIOWrapper, err: _ProblemSpool
) -> tuple[int, DumpTally | None]:
    o = setup.options
    if setup.as_json:
        renderer = DumpJsonRenderer(
            out, o.print_data_log, setup.key_decoder, setup.value_decoder, o.skip_record_metadata
        )
        shadow = DumpTextRenderer(_Shadow(err), _Shadow(err), False, False)  # type: ignore[arg-type]
    else:
        writer = LineWriter(out, False)
        renderer = DumpTextRenderer(
            writer, err, o.print_data_log, o.skip_record_metadata, setup.key_decoder, setup.value_decoder
        )  # type: ignore[arg-type]
        shadow = None
    problems_only = DumpTextRenderer(err, err, False, False)  # type: ignore[arg-type]
    exit_code, _failed = render_file(
        path, o, renderer, problems_only, err, as_json=setup.as_json, out=out,
        reader_gone=lambda: gone[0], shadow=shadow,
    )  # fmt: skip
    return exit_code, renderer.tally if setup.as_json else None


def can_run_parallel() -> bool:
    from kafka_tools.log.workers import pool

    return pool.available()


def dump_files_parallel(
    files: list[str],
    setup_args: dict,
    jobs: int,
    err: LineWriter,
    render_here: Callable[[str], int],
    progress: Callable[[], AbstractContextManager] | None = None,
    tally: DumpTally | None = None,
) -> int:
    """Dump `files` on `jobs` cores in file order; the exit code. `jobs - 1` workers are handed the
    files from the last one back and render them into spools that the parent then copies; the parent
    renders a file itself, straight to stdout (`render_here`, the `--jobs 1` path), when it is the next
    to print and no worker has it: only the workers' files pay the spool's copy. `progress()` gives a
    context yielding a per-file callback (or None)."""
    from kafka_tools.log.workers.pool import Pool

    out_stream = sys.stdout
    with tempfile.TemporaryDirectory(prefix="ktool-dump-") as spool_dir:
        setup = Setup(
            encoding=getattr(out_stream, "encoding", None) or "utf-8",
            errors=getattr(out_stream, "errors", None) or "strict",
            spool_dir=spool_dir,
            **setup_args,
        )
        with open(os.path.join(spool_dir, "gone"), "wb") as f:
            f.write(b"\0")
        try:
            with Pool(jobs - 1) as pool:
                with progress() if progress is not None else nullcontext() as file_done:
                    order = _InOrder(files, setup, pool, err, render_here, file_done, tally)
                    return order.dump()
        finally:
            _GONE.pop(os.path.join(spool_dir, "gone"), None)


@dataclass
class _InOrder:
    """The parent's loop: every file printed in order, the workers kept busy from the back."""

    files: list[str]
    setup: Setup
    pool: Pool
    err: LineWriter
    render_here: Callable[[str], int]
    file_done: Callable[[str], None] | None
    tally: DumpTally | None

    def dump(self) -> int:
        files = self.files
        self.taken = bytearray(len(files))  # handed to a worker, or spooled here
        self.answers: dict[int, Rendered | None] = {}  # None: its worker failed at it
        self.back = len(files) - 1  # the next file a free worker is handed
        exit_code = 0
        for i, path in enumerate(files):
            self._hand_out(i)
            if not self.taken[i]:  # nobody came to it: straight to stdout
                self.taken[i] = 1
                exit_code = max(exit_code, self.render_here(path))
            else:
                rendered = self._wait_for(i)
                if rendered is None:  # its worker failed or died at it: rendered here after all
                    exit_code = max(exit_code, self.render_here(path))
                else:
                    _replay(rendered, sys.stdout, self.err)
                    exit_code = max(exit_code, rendered.exit_code)
                    if self.tally is not None and rendered.tally is not None:
                        self.tally.merge(rendered.tally)
            if self.file_done is not None:
                self.file_done(path)
        return exit_code

    def _hand_out(self, i: int) -> None:
        """Each free worker handed the last file nobody has, after file `i`."""
        for worker in self.pool.idle():
            while self.back > i and self.taken[self.back]:
                self.back -= 1
            if self.back <= i:
                return
            k = self.back
            output = lambda k=k: _size(os.path.join(self.setup.spool_dir, f"{k}.out"))  # noqa: E731
            if self.pool.send(worker, k, render_spooled, (self.setup, k, self.files[k]), output):
                self.taken[k] = 1

    def _hear(self, timeout: float) -> None:
        for answer in self.pool.wait(timeout):
            if answer.ok:
                self.answers[answer.key] = answer.value
                continue
            self.answers[answer.key] = None
            if answer.lost is not None:
                path = self.files[answer.key]
                self.err.problem(
                    f"{path}: a dump-log worker (pid {answer.pid}) {answer.lost} while at it; dumping it here"
                )

    def _wait_for(self, i: int) -> Rendered | None:
        """File `i`'s spools, once its worker has made them; None when it failed at it. Nothing is
        left for this process meanwhile: files are handed from the back, so every file after a
        worker's is a worker's too."""
        from kafka_tools.log.workers.pool import POLL

        while i not in self.answers:
            if pipe.reader_gone():
                reader_gone_flag(self.setup.spool_dir)[0] = 1  # the workers stop rendering
            self._hear(POLL)
        return self.answers.pop(i)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def _replay(rendered: Rendered, out_stream, err: LineWriter) -> None:
    """A worker's stdout spool to stdout, its stderr lines to stderr where they fell; both removed."""
    with open(rendered.out_path, "rb") as out, open(rendered.err_path, "rb") as lines:
        os.unlink(rendered.out_path)
        os.unlink(rendered.err_path)
        written = 0
        while header := lines.read(_RECORD.size):
            position, kind, length = _RECORD.unpack(header)
            text = lines.read(length).decode("utf-8", "surrogateescape")
            written = _copy(out, out_stream, written, position)
            if kind == ALWAYS or pipe.reader_gone():
                out_stream.flush()
                err.problem(text)
        _copy(out, out_stream, written, None)


def _copy(src, out_stream, written: int, until: int | None) -> int:
    """Bytes of the spool from `written` up to `until` (None: the end) to stdout; where it got to. In
    pieces of about `_CHUNK` that each end a line, each written whole: Ctrl-C ends the copy within a
    piece, and stdout at the end of a line."""
    if pipe.reader_gone():  # nobody reads: skip what is left of it
        return src.seek(0 if until is None else until, os.SEEK_END if until is None else os.SEEK_SET)
    fd = src.fileno()
    stop = os.fstat(fd).st_size if until is None else until
    send = getattr(out_stream, "send_file", None)
    while written < stop:
        end = _line_end(fd, min(written + _CHUNK, stop), stop)
        if send is None or not send(fd, written, end - written):
            send = None
            _write_bytes(out_stream, os.pread(fd, end - written, written))
        written = end
    src.seek(written)
    return written


def _line_end(fd: int, at: int, stop: int) -> int:
    """The end of the line that `at` falls in (just past its newline), `stop` at most."""
    at -= 1  # a line that ends just before `at` ends there
    while at < stop:
        data = os.pread(fd, min(_LOOK, stop - at), at)
        if (found := data.find(b"\n")) >= 0:
            return at + found + 1
        if not data:
            break
        at += len(data)
    return stop


def _write_bytes(out_stream, data: bytes) -> None:
    writer = getattr(out_stream, "write_bytes", None)
    if writer is not None:
        writer(data)
    else:
        out_stream.flush()
        out_stream.buffer.write(data)
