"""Record lines of v2 batches made by forked helpers while one process walks and prints: a log dir, or
one big segment, on every core, its output still written by one process in file order.

`dump-log --deep-iteration`'s cost is in each batch's records: decompressed, checked and formatted in
C. Whole files as the unit of work (cli/dump_parallel.py) leave a core idle when the files are few
or unequal, and every byte a worker renders is spooled and copied once more. Here the parent walks
every file and writes every byte; helpers, forked once the renderer is set up, each take batches the
walk has passed: a helper reads the batch from the file itself (pread; its CRC must be the one the
walk computed, else the file changed and the parent does that batch), makes its lines with the
parent's own `make` (the same call, so the same bytes) and puts them in a slot of a shared map, from
which the parent writes them. While the next batch to print is still a helper's, the parent makes
the lines of a later batch nobody has taken rather than wait, so neither side idles while there is
work. A helper that dies, fails a batch, is stopped or makes no progress costs nothing but time:
the parent makes those lines (log/workers/children.py tells; no wait on a helper is unbounded).
"""

from __future__ import annotations

import functools
import mmap
import os
import select
import struct
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from kafka_tools.format.record_batch import RecordBatch, parse_batch_header
from kafka_tools.log.workers.children import Watch, end_children, fork_child
from kafka_tools.log.workers.fork_heap import freeze_for_fork, thaw_after_fork

SLOT = 4 << 20  # a batch's lines larger than this are made by the parent
DEPTH = 8  # batches a helper holds at once (queued or made, not yet printed)
AHEAD = 24  # entries the walk may be ahead of the printing
AHEAD_BYTES = 32 << 20  # lines the parent may make ahead, at most
ANSWER_AT_END = 0.5  # seconds a walk that ended early waits for the helpers' answers
_POLL = 0.2  # seconds between looks at helpers that have not answered

_JOB = struct.Struct("<BIHQII")  # kind, ticket, slot, position, size, crc (a file: its name follows)
_DONE = struct.Struct("<IiI")  # ticket, record count (-1: the parent must make these lines), length
_FILE, _BATCH = 0, 1

Made = tuple[Any, int]  # a batch's lines (bytes, or a view of a slot) and its record count
Make = Callable[[str, RecordBatch], Made | None]


class _Helper:
    """One forked helper as the parent sees it: its pipes, its slots and the batches it holds."""

    def __init__(self, pid: int, jobs: int, done: int, first_slot: int) -> None:
        self.pid, self.jobs, self.done = pid, jobs, done
        self.free = list(range(first_slot + DEPTH - 1, first_slot - 1, -1))
        self.held = 0  # batches sent, not answered
        self.alive = True
        self.reaped = False  # its pid is no longer this process's child: never signalled again
        self.rest = b""  # a reply read in part


class BatchLines:
    """The parent's side: `walk()` wraps a file's walk, `take()` gives a batch's lines if they were
    made ahead (None: make them as usual)."""

    def __init__(self, make: Make, helpers: int) -> None:
        self._make = make
        self._map = mmap.mmap(-1, helpers * DEPTH * SLOT)  # anonymous and shared: the helpers see it
        self._view = memoryview(self._map)
        self._helpers: list[_Helper] = []
        self._path = ""
        self._tickets = 0
        self._out: dict[int, tuple[_Helper, int, int]] = {}  # ticket -> (helper, slot, position)
        self._at: dict[int, int] = {}  # position -> ticket, for batches a helper holds
        self._made: dict[int, Made | None] = {}  # position -> lines made (None: make them as usual)
        self._slots: dict[int, tuple[_Helper, int]] = {}  # position -> the slot holding its lines
        self._ahead_bytes = 0  # lines the parent made ahead and still holds
        freeze_for_fork()  # no child collects (and destroys) what the parent made; fewer pages copied
        self._frozen = True
        try:
            for n in range(helpers):
                self._fork(n * DEPTH)
        except BaseException:
            self.close()  # the helpers forked so far are let go, the heap thawed
            raise

    def _fork(self, first_slot: int) -> None:
        jobs_r, jobs_w = os.pipe()
        done_r, done_w = os.pipe()
        inherited = [jobs_w, done_r] + [fd for h in self._helpers for fd in (h.jobs, h.done)]
        try:
            fork_child(
                functools.partial(_helper, jobs_r, done_w, inherited, self._view, self._make),
                lambda pid: self._helpers.append(_Helper(pid, jobs_w, done_r, first_slot)),
            )
        except BaseException:
            if not any(h.jobs == jobs_w for h in self._helpers):
                os.close(jobs_w)
                os.close(done_r)
            raise
        finally:
            os.close(jobs_r)
            os.close(done_w)
        os.set_blocking(done_r, False)

    def close(self) -> None:
        """The helpers killed and reaped (within a second, whatever they are doing); a walk still open
        after this makes the lines it is given itself."""
        for h in self._helpers:
            self._lost(h)
            os.close(h.jobs)
            os.close(h.done)
        end_children(h.pid for h in self._helpers if not h.reaped)
        if self._frozen:
            self._frozen = False
            thaw_after_fork()  # no helper shares those pages any more: collected as before
        self._helpers = []

    def __enter__(self) -> BatchLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- a file's walk -------------------------------------------------------------------------

    def walk(self, path: str, items: Iterator) -> Iterator:
        """`items` (a segment's walk) as they come, but with the lines of its v2 batches being made
        ahead, by the helpers and, while the front would otherwise wait, by the parent."""
        self._path = path
        name = os.fsencode(path)
        for h in self._helpers:
            self._send(h, _JOB.pack(_FILE, 0, 0, 0, len(name), 0) + name)
        pending: deque = deque()  # entries walked, not yet handed out
        later: deque = deque()  # batches among them that nobody holds nor has made
        try:
            for item in items:
                pending.append(item)
                if type(item) is RecordBatch and not item.is_control:
                    later.append(item)
                    self._feed(later)
                if len(pending) >= AHEAD or not self._waiting(pending[0]):
                    yield from self._hand_out(pending, later, False)
            yield from self._hand_out(pending, later, True)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: nothing is waited for, the helpers are ended
            self.close()
            raise
        finally:
            # The walk ended early: the helpers' answers are waited for (a moment: a helper answers a
            # batch in milliseconds) and dropped; a helper that does not answer by then is given up, so
            # that no slot it holds is written while a later walk uses it.
            deadline = time.monotonic() + ANSWER_AT_END
            while self._out and time.monotonic() < deadline:
                self._collect(block=True, within=ANSWER_AT_END)
            for h in {owner for owner, _, _ in self._out.values()}:
                self._give_up(h)
            for position in list(self._made):
                self._done_with(position)

    def take(self, batch: RecordBatch) -> Made | None:
        """The lines of `batch` and its record count, if they were made ahead; None: make them here.
        A view of a slot stays valid until the walk is asked for its next entry."""
        return self._made.get(batch.position)

    def _hand_out(self, pending: deque, later: deque, last: bool) -> Iterator:
        """Hand out entries from the front while they are ready; while the front waits for a helper,
        make a later batch's lines here, or pull more from the walk when there is nothing to make."""
        while pending:
            head = pending[0]
            if self._waiting(head):
                if later and self._ahead_bytes < AHEAD_BYTES:
                    batch = later.popleft()
                    made = self._make(self._path, batch)
                    self._made[batch.position] = made
                    if made is not None:
                        self._ahead_bytes += len(made[0])
                    continue
                if not last and len(pending) < AHEAD:
                    return
                self._collect(block=True)
                continue
            pending.popleft()
            if later and later[0] is head:
                later.popleft()  # nobody took it: made as usual, by the caller
            yield head
            if type(head) is RecordBatch:
                self._done_with(head.position)  # printed: its slot is free again
                self._feed(later)

    def _done_with(self, position: int) -> None:
        made = self._made.pop(position, None)
        held = self._slots.pop(position, None)
        if held is not None:
            held[0].free.append(held[1])
        elif made is not None:
            self._ahead_bytes -= len(made[0])

    def _waiting(self, item: Any) -> bool:
        """Whether `item` is a batch a helper holds whose lines have not come back yet."""
        if type(item) is not RecordBatch or item.position not in self._at:
            return False
        self._collect(block=False)
        return item.position in self._at

    def _feed(self, later: deque) -> None:
        """Give the first batches nobody holds to helpers with a free slot."""
        while later:
            h = next((h for h in self._helpers if h.alive and h.free), None)
            if h is None:
                return
            batch = later[0]
            self._tickets = ticket = (self._tickets + 1) & 0xFFFFFFFF
            slot = h.free.pop()
            job = _JOB.pack(_BATCH, ticket, slot, batch.position, batch.size, batch.computed_crc)
            if not self._send(h, job):
                h.free.append(slot)
                continue
            later.popleft()
            h.held += 1
            self._out[ticket] = (h, slot, batch.position)
            self._at[batch.position] = ticket

    def _send(self, h: _Helper, data: bytes) -> bool:
        if not h.alive:
            return False
        try:
            while data:  # a job is less than a page and goes whole; a file's long name may not
                data = data[os.write(h.jobs, data) :]
            return True
        except OSError:
            self._lost(h)
            return False

    def _collect(self, block: bool, within: float | None = None) -> None:
        """Read the helpers' answers that are there (with `block`, wait for one at least, or for the
        helpers that hold batches to be given up: dead, stopped, or without progress; `within`: for
        that many seconds at most)."""
        busy = [h for h in self._helpers if h.held]
        if not busy:
            return
        if block:
            watches = [Watch(h.pid) for h in busy]
            deadline = None if within is None else time.monotonic() + within
            while not select.select([h.done for h in busy], [], [], _POLL)[0]:
                for h, watch in zip(busy, watches, strict=True):
                    if h.alive and watch.verdict() is not None:  # it is reaped: ended, or killed
                        h.reaped = True
                        self._lost(h)
                if not any(h.held for h in busy) or (deadline is not None and time.monotonic() > deadline):
                    return
        for h in busy:
            if not h.alive:  # given up above: what it answered before is not waited for any more
                continue
            try:
                data = os.read(h.done, _DONE.size * 64)
            except BlockingIOError:
                continue
            if not data:
                self._lost(h)
                continue
            data = h.rest + data
            whole = len(data) - len(data) % _DONE.size
            h.rest = data[whole:]
            for ticket, count, length in _DONE.iter_unpack(data[:whole]):
                _, slot, position = self._out.pop(ticket)
                del self._at[position]
                h.held -= 1
                if count < 0:  # not made there: the parent makes these lines as usual
                    h.free.append(slot)
                    self._made[position] = None
                    continue
                start = slot * SLOT
                self._made[position] = (self._view[start : start + length], count)
                self._slots[position] = (h, slot)

    def _give_up(self, h: _Helper) -> None:
        """A helper that did not answer: killed (no slot of it is written any more), its batches lost."""
        if not h.reaped:
            h.reaped = True
            end_children([h.pid])
        self._lost(h)

    def _lost(self, h: _Helper) -> None:
        """A helper died, or its pipe broke: the parent makes the lines it held."""
        h.alive = False
        h.held = 0
        for ticket, (owner, _, position) in list(self._out.items()):
            if owner is h:
                del self._out[ticket]
                del self._at[position]


def _helper(jobs: int, done: int, inherited: list[int], view: memoryview, make: Make) -> int:
    """A forked helper: serve until the parent closes the jobs pipe."""
    for fd in inherited:  # the parent's ends: a helper holds none, so it sees the pipes' ends
        os.close(fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # stdout is the parent's alone: a reader sees its end when it ends
    os.close(devnull)
    _serve(jobs, done, view, make)
    return 0


def _serve(jobs: int, done: int, view: memoryview, make: Make) -> None:
    """The helper's loop: each batch read from the file, checked against the walk's CRC, its lines
    made by `make` into the slot the job names; the answer on `done`."""
    fd = -1
    path = ""
    data = b""
    while True:
        chunk = os.read(jobs, 1 << 16)
        if not chunk:
            return
        data += chunk
        at = 0
        while len(data) - at >= _JOB.size:
            kind, ticket, slot, position, size, crc = _JOB.unpack_from(data, at)
            if kind == _FILE:
                if len(data) - at < _JOB.size + size:
                    break
                if fd >= 0:
                    os.close(fd)
                path = os.fsdecode(data[at + _JOB.size : at + _JOB.size + size])
                try:
                    fd = os.open(path, os.O_RDONLY)
                except OSError:
                    fd = -1
                at += _JOB.size + size
                continue
            at += _JOB.size
            count, length = -1, 0
            made = _made(fd, path, position, size, crc, make)
            if made is not None and len(made[0]) <= SLOT:
                lines, count = made
                length = len(lines)
                start = slot * SLOT
                view[start : start + length] = lines
            os.write(done, _DONE.pack(ticket, count, length))
        data = data[at:]


def _made(fd: int, path: str, position: int, size: int, crc: int, make: Make) -> Made | None:
    """A batch's lines as the parent would make them, from the bytes at `position`; None when they
    are not the bytes the parent's walk read (the file changed) or could not be read."""
    if fd < 0:
        return None
    try:
        raw = os.pread(fd, size, position)
    except OSError:
        return None
    if len(raw) != size:
        return None
    batch = parse_batch_header(raw, 0, position)
    if batch.computed_crc != crc:
        return None
    return make(path, batch)
