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

The workers are ktool's own forked processes (log/workers/children.py), not multiprocessing's pool:
its end (SIGTERM to each worker, then join) hung 1 run in 100 when a worker still starting lost that
SIGTERM, and it waited for ever on a worker that died at a file. Here every wait is bounded, a worker
that died, is stopped or hangs is found out (its file is then dumped by the parent), and the end is a
SIGKILL to each worker and a bounded reap. Who takes which file is decided without a lock (Claims).
"""

from __future__ import annotations

import functools
import io
import mmap
import os
import pickle
import select
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from kafka_tools.cli import pipe
from kafka_tools.cli.dump_render import render_file
from kafka_tools.log.reads.dump_events import DumpOptions
from kafka_tools.log.workers.children import Watch, end_children, fork_child
from kafka_tools.log.workers.fork_heap import frozen_for_fork
from kafka_tools.render.dump_json import DumpJsonRenderer, DumpTally
from kafka_tools.render.dump_text import DumpTextRenderer
from kafka_tools.render.lines import LineWriter

_LENGTH = struct.Struct("<I")  # a worker's answer in its pipe: the length of the pickle that follows
_RECORD = struct.Struct(">QBI")  # stdout position, kind, length of the UTF-8 text that follows
ALWAYS, IF_READER_GONE = 0, 1  # a stderr line; a problem already in stdout (JSON), said if unread
_CHUNK = 1 << 20  # a spool is copied in pieces of about this size, each ending a line
_LOOK = 64 << 10  # bytes read at once to find where a piece's last line ends
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


class Claims:
    """Which files have been taken, and by whom, with no lock a dead or stopped process could keep: a
    file is taken by creating the symbolic link `<index>.taken` in the spool directory, pointing at the
    taker's pid (the link's creation is atomic: exactly one process gets each file, and the parent reads
    whose it is)."""

    def __init__(self, spool_dir: str, count: int) -> None:
        self.spool_dir = spool_dir
        self._count = count
        self._known = bytearray(count)  # files this process knows to be taken

    def _link(self, index: int) -> str:
        return os.path.join(self.spool_dir, f"{index}.taken")

    def take(self, index: int) -> bool:
        """True when `index` was free (it is now the caller's)."""
        if self._known[index]:
            return False
        self._known[index] = 1
        try:
            os.symlink(str(os.getpid()), self._link(index))
            return True
        except FileExistsError:
            return False

    def owner(self, index: int) -> int:
        """The pid of the process that took `index` (0: nobody yet)."""
        try:
            return int(os.readlink(self._link(index)))
        except FileNotFoundError:
            return 0

    def first_free(self, start: int) -> int | None:
        """The first file from `start` on that nobody has taken yet (a hint: take() decides)."""
        for index in range(start, self._count):
            if not self._known[index]:
                if not os.path.lexists(self._link(index)):
                    return index
                self._known[index] = 1
        return None


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
    exit_code, _failed = render_file(
        path, o, renderer, problems_only, err, as_json=setup.as_json, out=out,
        reader_gone=lambda: gone[0], shadow=shadow,
    )  # fmt: skip
    return exit_code, renderer.tally if setup.as_json else None


def can_run_parallel() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


class _Worker:
    """A forked worker as the parent sees it: its pid, the pipe its answers come through (a length,
    then the pickled (index, Rendered)) and the answers read so far."""

    def __init__(self, pid: int, answers: int) -> None:
        self.pid = pid
        self.fd = answers
        self.unread = b""
        self.results: dict[int, Rendered] = {}
        self.closed = False  # it closed its end of the pipe
        self.reaped = False  # it ended and was reaped: its pid is not signalled again
        os.set_blocking(answers, False)

    def read(self) -> None:
        """The answers in the pipe now (never waits); `closed` once the worker has closed it."""
        while not self.closed and not self.reaped:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                self.closed = True
                return
            data = self.unread + chunk
            at = 0
            while len(data) - at >= _LENGTH.size:
                (n,) = _LENGTH.unpack_from(data, at)
                if len(data) - at - _LENGTH.size < n:
                    break
                index, rendered = pickle.loads(data[at + _LENGTH.size : at + _LENGTH.size + n])
                self.results[index] = rendered
                at += _LENGTH.size + n
            self.unread = data[at:]


class FilePool:
    """`processes` forked workers, each taking files from the last one back (Claims decides who gets
    each) and answering with what it rendered. Every wait is bounded (`_POLL`), so Ctrl-C is seen at
    once and a worker that died, is stopped or hangs is found out; `close()` kills and reaps them all."""

    def __init__(
        self, render: Callable[[int, str], Rendered | None], files: list[str], processes: int
    ) -> None:
        self._workers: dict[int, _Worker] = {}
        try:
            for _ in range(processes):
                self._start(functools.partial(_serve, render, files))
        except BaseException:
            self.close()
            raise

    def _start(self, serve: Callable[[int, int], int]) -> None:
        answers, out = os.pipe()
        try:
            fork_child(
                functools.partial(serve, out, answers),
                lambda pid: self._workers.__setitem__(pid, _Worker(pid, answers)),
            )
        except BaseException:
            if all(worker.fd != answers for worker in self._workers.values()):
                os.close(answers)
            raise
        finally:
            os.close(out)

    def ready(self, pid: int, index: int) -> bool:
        """Whether the worker `pid` has answered for file `index`, or can no more (never waits)."""
        worker = self._workers.get(pid)
        if worker is None:
            return True  # not a worker of this pool: nothing to wait for
        worker.read()
        return index in worker.results or worker.closed

    def result(
        self, pid: int, index: int, path: str, err: LineWriter, output: Callable[[], int]
    ) -> Rendered | None:
        """What the worker `pid` rendered of `path`; None when it died, was stopped or hung at it (said on
        stderr: the caller renders the file itself). `output()`: how far its spool has grown."""
        worker = self._workers[pid]
        watch = Watch(pid, output)
        while True:
            worker.read()
            if index in worker.results:
                return worker.results.pop(index)
            death = "ended" if worker.reaped else watch.verdict()
            if death is not None:  # reaped (it ended, or was killed for being stopped or stalled)
                if not worker.reaped:
                    worker.read()  # what it answered before it ended (the answers of files still to print)
                    worker.reaped = True
                    os.close(worker.fd)
                if index in worker.results:  # answered, then ended
                    return worker.results.pop(index)
                err.problem(f"{path}: a dump-log worker (pid {pid}) {death} while at it; dumping it here")
                return None
            if worker.closed:  # its pipe is shut: it is ending, not answering
                time.sleep(_POLL / 20)
            else:
                select.select([worker.fd], [], [], _POLL)

    def close(self) -> None:
        """Every worker killed (SIGKILL) and reaped, within a second."""
        workers = [worker for worker in self._workers.values() if not worker.reaped]
        self._workers = {}
        for worker in workers:
            os.close(worker.fd)
        end_children(worker.pid for worker in workers)


def _serve(render: Callable[[int, str], Rendered | None], files: list[str], out: int, answers: int) -> int:
    """A worker: the files from the last one back that nobody took first, rendered; each answer written
    on `out` as soon as its file is done."""
    os.close(answers)
    for index in range(len(files) - 1, 0, -1):
        rendered = render(index, files[index])
        if rendered is not None:
            data = pickle.dumps((index, rendered))
            data = _LENGTH.pack(len(data)) + data
            while data:
                data = data[os.write(out, data) :]
    return 0


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
        gone = mmap.mmap(-1, 1)  # shared with the workers: set when stdout's reader left
        claims = Claims(spool_dir, len(files))
        claims.take(0)  # the first file is the parent's: it can be printed as it is rendered
        spool = functools.partial(_render_spooled, setup, gone, claims)
        pool = FilePool(spool, files, jobs - 1)
        try:
            with progress() if progress is not None else nullcontext() as file_done:
                return _dump_in_order(files, claims, pool, spool, gone, err, render_here, file_done, tally)
        finally:
            pool.close()


def _dump_in_order(
    files, claims: Claims, pool: FilePool, spool, gone, err: LineWriter, render_here, file_done, tally
) -> int:
    """Print every file in order. The next file is rendered here, straight to stdout, when no worker
    has taken it; while a worker is still at it, the parent renders the first file nobody has taken
    into a spool (`spool(index, path)`) rather than wait."""
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
                owner = claims.owner(i)
                if not pool.ready(owner, i) and (j := claims.first_free(i + 1)) is not None:
                    if (mine := spool(j, files[j])) is not None:
                        done_here[j] = mine
                    continue  # then look at file i again
                if pipe.reader_gone():
                    gone[0] = 1  # the workers stop rendering; their problems are still said
                spooled = os.path.join(claims.spool_dir, f"{i}.out")
                rendered = pool.result(owner, i, path, err, functools.partial(_size, spooled))
            if rendered is None:  # its worker died at it: rendered here after all
                exit_code = max(exit_code, render_here(path))
            else:
                _replay(rendered, sys.stdout, err)
                exit_code = max(exit_code, rendered.exit_code)
                if tally is not None and rendered.tally is not None:
                    tally.merge(rendered.tally)
        if file_done is not None:
            file_done(path)
        i += 1
    return exit_code


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
