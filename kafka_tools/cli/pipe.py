"""stdout that survives its reader leaving (`ktool … | head -1`, `ktool … | true`).

In a runbook the exit status decides what happens next, and with `set -o pipefail` it is ktool's that
counts. So when the reader closes the pipe, ktool stops writing (further writes are dropped) but keeps
going: it still reaches the verdict its input deserves and exits with that code, instead of dying on
EPIPE with whatever code the interpreter or Click picks (0 or 1, unrelated to the data).

Any other failed write (a full disk behind `> out.txt`, `> /dev/full`) is the output's failure, not the
input's: it is raised once as "stdout: No space left on device" (exit 3), so no message blames the
segment being read, and what follows is dropped.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import TextIO

from kafka_tools.errors import os_error


class GuardedStdout:
    """A text stream in front of stdout that turns a broken pipe into "reader gone", once."""

    def __init__(self, stream: TextIO, name: str = "stdout") -> None:
        self._stream = stream
        self.name = name
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._broken(exc)
        return len(text)

    def write_bytes(self, data: bytes) -> None:
        """Bytes straight to the binary buffer beneath, after what the text layer still holds."""
        if not self.reader_gone:
            try:
                self._stream.flush()
                self._stream.buffer.write(data)
            except OSError as exc:
                self._broken(exc)

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
        return True

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._broken(exc)

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
