"""`ktool dump-log --jobs N` over many files: N cores at work, output still in file order.

Rendering is Python-bound (the GIL), so the helpers are processes (forked: they inherit the options).
Each file is taken once, by whoever comes to it first: N-1 workers take the files from the last one
back, each as soon as it is free, and render each exactly as `--jobs 1` would, into a spool file on
disk rather than into memory (a 1 GiB segment costs a worker no more RAM than the sequential dump
does); lines meant for stderr are spooled beside it with the byte position of stdout they follow.
The parent takes the files from the first on, and renders each that no worker has taken straight to
stdout as `--jobs 1` does; for a file a worker has, it copies that file's spools to stdout
(sendfile) and stderr. So the bytes and the exit code are those of `--jobs 1`, only the workers'
files pay the spool's copy, and a core is idle only at the end (files of different sizes no longer
wait for the slowest of a round). When stdout's reader leaves (`| head -1`), the workers are told to
stop rendering and only their problems are still said, on stderr.
"""

from __future__ import annotations

import functools
import io
import multiprocessing
import os
import signal
import struct
import sys
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from kafka_tools.cli import pipe
from kafka_tools.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS, KtoolError, os_error_line
from kafka_tools.log.dump import dump_file
from kafka_tools.log.dump_events import DumpOptions, FileEnd, ProblemEvent
from kafka_tools.log.workers.fork_heap import frozen_for_fork
from kafka_tools.render.dump_json import DumpJsonRenderer, DumpTally
from kafka_tools.render.dump_text import DumpTextRenderer
from kafka_tools.render.lines import LineWriter

_RECORD = struct.Struct(">QBI")  # stdout position, kind, length of the UTF-8 text that follows
ALWAYS, IF_READER_GONE = 0, 1  # a stderr line; a problem already in stdout (JSON), said if unread
_CHUNK = 1 << 20
_POLL = 0.2  # seconds between looks at a worker that has not answered yet


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


_setup: Setup | None = None
_gone = None  # a shared byte, set by the parent when stdout's reader left
_claims = None  # Claims shared with the parent


class Claims:
    """Which files have been taken, and by whom: a shared pid a file (0: free), set once under a
    lock, so that each file is rendered by exactly one process, and the parent knows whose it is."""

    def __init__(self, ctx, count: int) -> None:
        self._owner = ctx.RawArray("i", count)
        self._lock = ctx.Lock()

    def take(self, index: int) -> bool:
        """True when `index` was free (it is now the caller's)."""
        with self._lock:
            if self._owner[index]:
                return False
            self._owner[index] = os.getpid()
            return True

    def owner(self, index: int) -> int:
        """The pid of the process that took `index` (0: nobody yet)."""
        return self._owner[index]

    def first_free(self, start: int) -> int | None:
        """The first file from `start` on that nobody has taken yet (a hint: take() decides)."""
        owner = self._owner
        for index in range(start, len(owner)):
            if not owner[index]:
                return index
        return None


def _init_worker(setup: Setup, gone, claims: Claims) -> None:
    global _setup, _gone, _claims
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # pool.terminate() must end a worker at once
    _setup, _gone, _claims = setup, gone, claims


def _render_file(index: int, path: str) -> Rendered | None:
    """In a worker: one file's output, as `--jobs 1` would print it, into two spool files; None when
    the parent took the file first."""
    assert _setup is not None and _claims is not None
    return _render_spooled(_setup, _gone, _claims, index, path)


def _render_spooled(setup: Setup, gone, claims: Claims, index: int, path: str) -> Rendered | None:
    """One file's output into two spool files, unless someone took the file first (None)."""
    if not claims.take(index):
        return None
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
    exit_code = 0
    failed = False
    try:
        for event in dump_file(path, o, None):
            if not gone.value:
                renderer.render(event)
                if shadow is not None and isinstance(event, ProblemEvent):
                    shadow.render(event)
            elif isinstance(event, ProblemEvent):
                problems_only.render(event)
            if isinstance(event, FileEnd) and event.problems:
                exit_code = max(exit_code, EXIT_FINDINGS)
    except (KtoolError, OSError) as exc:
        message = str(exc) if isinstance(exc, KtoolError) else os_error_line(path, exc)
        code = exc.exit_code if isinstance(exc, KtoolError) else EXIT_ENVIRONMENT
        exit_code, failed = max(exit_code, code if code != 2 else EXIT_ENVIRONMENT), True
        err.problem(message)
        if setup.as_json and not gone.value:
            renderer.error(path, message, exit_code)
    if not setup.as_json:
        return exit_code, None
    renderer.tally.file_done(exit_code, failed)
    return exit_code, renderer.tally


def can_run_parallel() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def dump_files_parallel(
    files: list[str],
    setup_args: dict,
    jobs: int,
    err: LineWriter,
    render_here: Callable[[str], int],
    progress: Callable[[], AbstractContextManager] | None = None,
    tally: DumpTally | None = None,
) -> int:
    """Dump `files` on `jobs` cores in file order; the exit code. `jobs - 1` workers take the files
    from the last one back and render them into spools that the parent then copies; the parent renders
    a file itself, straight to stdout (`render_here`, the `--jobs 1` path), when it is the next to
    print and no worker has taken it: only the workers' files pay the spool's copy.
    `progress()` gives a context yielding a per-file callback (or None); entered once the workers are
    forked, so no progress-bar thread is running when they are."""
    out_stream = sys.stdout
    # frozen_for_fork: no worker collects (and destroys) what this process made before it
    with tempfile.TemporaryDirectory(prefix="ktool-dump-") as spool_dir, frozen_for_fork():
        setup = Setup(
            encoding=getattr(out_stream, "encoding", None) or "utf-8",
            errors=getattr(out_stream, "errors", None) or "strict",
            spool_dir=spool_dir,
            **setup_args,
        )
        ctx = multiprocessing.get_context("fork")
        gone = ctx.RawValue("b", 0)
        claims = Claims(ctx, len(files))
        pool = ctx.Pool(jobs - 1, _init_worker, (setup, gone, claims))
        exit_code = 0
        try:
            with progress() if progress is not None else nullcontext() as file_done:
                spool = functools.partial(_render_spooled, setup, gone, claims)
                exit_code = _dump_in_order(
                    files, claims, pool, spool, gone, err, render_here, file_done, tally
                )
            pool.close()
        finally:
            pool.terminate()
            pool.join()
    return exit_code


def _dump_in_order(
    files, claims: Claims, pool, spool, gone, err: LineWriter, render_here, file_done, tally
) -> int:
    """Print every file in order. The next file is rendered here, straight to stdout, when no worker
    has taken it; while a worker is still at it, the parent renders the first file nobody has taken
    into a spool (`spool(index, path)`) rather than wait."""
    claims.take(0)  # the first file is the parent's: it can be printed as it is rendered
    # The workers start from the last file, the parent from the first: each file the parent comes to
    # first goes straight to stdout (no spool), and they meet near the middle.
    ahead = [None] * len(files)
    for i in range(len(files) - 1, 0, -1):
        ahead[i] = pool.apply_async(_render_file, (i, files[i]))
    done_here: dict[int, Rendered] = {}  # files the parent spooled while waiting
    exit_code = 0
    i = 0
    while i < len(files):
        path = files[i]
        rendered = done_here.pop(i, None)
        if rendered is None and (i == 0 or claims.take(i)):  # nobody came to it: straight to stdout
            exit_code = max(exit_code, render_here(path))
        else:
            if rendered is None:
                if not ahead[i].ready() and (j := claims.first_free(i + 1)) is not None:
                    if (mine := spool(j, files[j])) is not None:
                        done_here[j] = mine
                    continue  # then look at file i again
                if pipe.reader_gone():
                    gone.value = 1  # the workers stop rendering; their problems are still said
                rendered = _result(ahead[i], claims.owner(i), path, err)
            if rendered is None:  # its worker died at it: rendered here after all
                exit_code = max(exit_code, render_here(path))
            else:
                _replay(rendered, sys.stdout, err)
                exit_code = max(exit_code, rendered.exit_code)
                if tally is not None and rendered.tally is not None:
                    tally.merge(rendered.tally)
        ahead[i] = None
        if file_done is not None:
            file_done(path)
        i += 1
    return exit_code


def _result(ahead, pid: int, path: str, err: LineWriter) -> Rendered | None:
    """What the worker `pid` rendered of `path`; None when it died first (a signal, the OOM killer), said
    on stderr. The pool would wait for that result for ever: it replaces a dead worker, not its task."""
    while not ahead.ready():
        ahead.wait(_POLL)
        if not ahead.ready() and (death := _death(pid)) is not None:
            err.problem(f"{path}: a dump-log worker (pid {pid}) {death} while at it; dumping it here")
            return None
    rendered = ahead.get()
    assert rendered is not None  # a worker took it (take() said so)
    return rendered


def _death(pid: int) -> str | None:
    """How the child `pid` ended ("was killed by SIGSEGV"), or None while it runs. (WNOWAIT: the pool reaps
    its own workers; once it has, the child is only known to be gone.)"""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return "ended"
    if info is None:
        return None
    if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
        try:
            return f"was killed by {signal.Signals(info.si_status).name}"
        except ValueError:
            return f"was killed by signal {info.si_status}"
    return f"exited with status {info.si_status}"


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
    """Bytes of the spool from `written` up to `until` (None: the end) to stdout; where it got to."""
    if pipe.reader_gone():  # nobody reads: skip what is left of it
        return src.seek(0 if until is None else until, os.SEEK_END if until is None else os.SEEK_SET)
    send = getattr(out_stream, "send_file", None)
    if send is not None:
        stop = os.fstat(src.fileno()).st_size if until is None else until
        if send(src.fileno(), written, stop - written):
            return src.seek(stop)
    while until is None or written < until:
        chunk = src.read(_CHUNK if until is None else min(_CHUNK, until - written))
        if not chunk:
            break
        written += len(chunk)
        _write_bytes(out_stream, chunk)
    return written


def _write_bytes(out_stream, data: bytes) -> None:
    writer = getattr(out_stream, "write_bytes", None)
    if writer is not None:
        writer(data)
    else:
        out_stream.flush()
        out_stream.buffer.write(data)
