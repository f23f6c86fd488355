"""stdout that survives its reader leaving (`ktool … | head -1`, `ktool … | true`).

In a runbook the exit status decides what happens next, and with `set -o pipefail` it is ktool's that
counts. So when the reader closes the pipe, ktool stops writing (further writes are dropped) but keeps
going: it still reaches the verdict its input deserves and exits with that code, instead of dying on
EPIPE with whatever code the interpreter or Click picks (0 or 1, unrelated to the data).

A write is whole: Ctrl-C and SIGTERM wait for it to end (cli/interrupts.py), so stdout never ends in
the middle of a line. That is also why text is encoded here and handed to the binary buffer: when a
signal interrupts a large write and its handler returns, CPython's BufferedWriter.write returns a
short count, and TextIOWrapper drops the rest without a word (3.11: 2 MB written, 131,072 bytes out).

Any other failed write (a full disk behind `> out.txt`, `> /dev/full`) is the output's failure, not the
input's: it is raised once as "stdout: No space left on device" (exit 3), so no message blames the
segment being read, and what follows is dropped.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import TextIO

from kafka_tools.cli import interrupts
from kafka_tools.cli.interrupts import whole
from kafka_tools.errors import os_error


class GuardedStdout:
    """A text stream in front of stdout that turns a broken pipe into "reader gone", once."""

    def __init__(self, stream: TextIO, name: str = "stdout") -> None:
        self._stream = stream
        self.name = name
        self.reader_gone = False
        # A TextIOWrapper's text is encoded here and written to its buffer (the module's docstring)
        self._bytes = isinstance(stream, io.TextIOWrapper) and hasattr(stream, "buffer")
        if self._bytes:
            stream.flush()
            self._encoding, self._errors = stream.encoding, stream.errors or "strict"
            self._line_buffering = stream.line_buffering

    @whole
    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                if self._bytes:
                    _write_all(self._stream.buffer, text.encode(self._encoding, self._errors))
                    if self._line_buffering and "\n" in text:
                        self._stream.buffer.flush()
                else:
                    self._stream.write(text)
            except OSError as exc:
                self._broken(exc)
        if interrupts.pending:
            interrupts.deliver()
        return len(text)

    @whole
    def write_bytes(self, data: bytes) -> None:
        """Bytes straight to the binary buffer beneath, after what the text layer still holds."""
        if not self.reader_gone:
            try:
                if not self._bytes:
                    self._stream.flush()
                _write_all(self._stream.buffer, data)
            except OSError as exc:
                self._broken(exc)
        if interrupts.pending:
            interrupts.deliver()

    @whole
    def send_file(self, fd: int, offset: int, count: int) -> bool:
        """`count` bytes of file `fd` from `offset` to stdout by the kernel (sendfile), after what the
        text layer holds; False when stdout is no file descriptor (the caller copies instead)."""
        if self.reader_gone:
            return True
        try:
            out = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            return False
        try:
            self._stream.flush()
            while count > 0:
                sent = os.sendfile(out, fd, offset, count)
                if sent == 0:
                    break
                offset += sent
                count -= sent
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.ENOSYS) and not isinstance(exc, BrokenPipeError):
                return False  # this stdout takes no sendfile (an O_APPEND file on old kernels, …)
            self._broken(exc)
        if interrupts.pending:
            interrupts.deliver()
        return True

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    @whole
    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._broken(exc)
        if interrupts.pending:
            interrupts.deliver()

    def _broken(self, exc: OSError) -> None:
        failed = not isinstance(exc, BrokenPipeError) and exc.errno != errno.EPIPE
        self.reader_gone = True
        # What the stream still buffers would fail again at the interpreter's final flush: point the
        # descriptor at /dev/null so that flush succeeds silently.
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None
        if fd is not None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        if failed:
            raise os_error(self.name, exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _write_all(buffer, data) -> None:
    """All of `data` into a binary buffer (its write() may take part of it when a signal came)."""
    written = buffer.write(data)
    if written is not None and written < len(data):
        view = memoryview(data)
        while written < len(view):
            written += buffer.write(view[written:]) or 0


def install() -> None:
    """Put a guard in front of `sys.stdout` and `sys.stderr` (idempotent; `2>&1 | head` closes both);
    commands keep writing to `sys.stdout`."""
    if not isinstance(sys.stdout, GuardedStdout):
        sys.stdout = GuardedStdout(sys.stdout)  # type: ignore[assignment]
    if not isinstance(sys.stderr, GuardedStdout):
        sys.stderr = GuardedStdout(sys.stderr, "stderr")  # type: ignore[assignment]


def reader_gone() -> bool:
    """True once a write to stdout found the pipe closed: output is no longer worth producing."""
    return isinstance(sys.stdout, GuardedStdout) and sys.stdout.reader_gone
