"""A worker of the pool (log/workers/pool.py), run as `python -m kafka_tools.log.workers.pool_worker PARENT`:
it takes calls from fd 3 and answers each on fd 4 until fd 3 ends, then leaves at once. Also the
pipes' framing, both sides' (a length, then a pickle): the pool imports it from here.

Its signals first, while SIGINT and SIGTERM are still blocked (the pool spawns it so): SIGINT ignored
(Ctrl-C reaches the whole process group; the parent decides), SIGTERM at its default, and SIGKILL when
its parent ends (PR_SET_PDEATHSIG; a parent already gone ends it now). Then the decoder is imported
once, before the first call (a segment's walk would import it anyway), and it says it is ready."""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from collections.abc import Iterator
from typing import Any

TASKS_FD, ANSWERS_FD = 3, 4  # where a worker finds its two pipes
LENGTH = struct.Struct("<I")  # a message's length, before its pickle, both ways
_PR_SET_PDEATHSIG = 1


def frame(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return LENGTH.pack(len(data)) + data


def unframe(buf: bytearray) -> Iterator[Any]:
    """The whole messages at the start of `buf`, removed from it as they are read."""
    at = 0
    while len(buf) - at >= LENGTH.size:
        (n,) = LENGTH.unpack_from(buf, at)
        if len(buf) - at - LENGTH.size < n:
            break
        yield pickle.loads(buf[at + LENGTH.size : at + LENGTH.size + n])
        at += LENGTH.size + n
    del buf[:at]


def _die_with(parent: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _read(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def _write(data: bytes) -> None:
    while data:
        data = data[os.write(ANSWERS_FD, data) :]


def _serve() -> None:
    _write(frame(None))  # ready
    while head := _read(TASKS_FD, LENGTH.size):
        (n,) = LENGTH.unpack(head)
        key, work, args = pickle.loads(_read(TASKS_FD, n))
        try:
            answer = frame((key, True, work(*args)))
        except Exception:  # noqa: BLE001 - the caller runs the call again and reports its own error
            answer = frame((key, False, None))
        _write(answer)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with(int(sys.argv[1]))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    code = 0
    try:
        import kafka_tools.format.segment  # noqa: F401 - the decoder, preloaded

        _serve()
    except BaseException:  # noqa: BLE001 - the parent sees the pipe end and runs the call itself
        code = 1
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
