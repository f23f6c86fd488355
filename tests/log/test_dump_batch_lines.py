"""`dump-log --deep-iteration` with helpers making the lines of v2 batches (log/workers/batch_lines.py):
the same stdout, stderr and exit code as `--jobs 1` on segments big enough for helpers (4 MiB and
more), with a batch whose records are damaged, one with a bad CRC and a control batch among good
ones of three codecs; and BatchLines itself when a helper dies, a walk ends early or the file
changes under a helper: every batch's lines are still those the parent would have made."""

from __future__ import annotations

import functools
import gzip
import os
import random
import shlex
import signal
import struct
import threading
import time
from pathlib import Path

import pytest
import zstandard

from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.format.varint import encode_varint as zigzag
from kafka_tools.log.reads.dump import made_lines
from kafka_tools.log.workers import batch_lines, children
from kafka_tools.log.workers.batch_lines import BatchLines
from kafka_tools.render.dump_json import DumpJsonRenderer
from kafka_tools.render.dump_text import DumpTextRenderer
from kafka_tools.render.lines import LineWriter
from tests.support import hostile
from tests.support.script import counted_run, run_pipeline, run_script

DAMAGED, BAD_CRC, CONTROL = 40, 90, 130  # batch numbers
T0 = 1_700_000_000_000


def _records(rng: random.Random, base: int, n: int) -> bytes:
    out = []
    for i in range(n):
        value = f'{{"user":{base + i},"s":"{rng.randbytes(48).hex()}"}}'.encode()
        trace = rng.randbytes(16)  # a binary header value, as a tracing header often is
        tail = zigzag(1) + zigzag(8) + b"trace-id" + zigzag(16) + trace
        out.append(
            hostile.v2_record(offset_delta=i, ts_delta=i, key=b"user-%d" % (base + i), value=value, tail=tail)
        )
    return b"".join(out)


def big_segment(path: Path, batches: int = 270, seed: int = 1) -> Path:
    """About 4.5 MiB of v2 batches (none, gzip, zstd in turn, 150 records each) with, at DAMAGED, a
    batch whose last record is cut (its CRC correct), at BAD_CRC one with a flipped CRC, at CONTROL a
    commit marker."""
    rng = random.Random(seed)
    out = bytearray()
    offset = 0
    for n in range(batches):
        if n == CONTROL:
            record = hostile.v2_record(key=struct.pack(">hh", 0, 1), value=struct.pack(">hi", 0, 5))
            out += hostile.v2_batch(record, 1, offset, T0, attributes=0x30)
            offset += 1
            continue
        count = 150
        section = _records(rng, offset, count)
        if n == DAMAGED:
            section += b"\x02"  # a record of length 1: impossible
        codec = (0, 1, 4)[n % 3]  # none, gzip, zstd
        payload = {0: section, 1: gzip.compress(section, 1), 4: zstandard.compress(section)}[codec]
        batch = bytearray(hostile.v2_batch(payload, count, offset, T0 + offset, codec, count - 1))
        if n == BAD_CRC:
            batch[17] ^= 0xFF
        out += batch
        offset += count
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out)
    return path


@pytest.fixture(scope="module")
def segments(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("helpers")
    return [big_segment(root / f"orders-{n}" / "00000000000000000000.log", seed=n) for n in range(2)]


def test_the_segments_are_big_enough_for_helpers(segments: list[Path]) -> None:
    from kafka_tools.cli.dump_log import HELPERS_FROM_BYTES

    assert segments[0].stat().st_size >= HELPERS_FROM_BYTES


# -- the CLI: helpers change nothing a user sees ------------------------------------------------------


@pytest.mark.parametrize("fmt", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("which", ["one", "two"])
def test_helpers_print_what_one_job_prints(segments: list[Path], fmt: list[str], which: str) -> None:
    files = [str(s) for s in (segments[:1] if which == "one" else segments)]
    args = ["dump-log", "--deep-iteration", "--print-data-log", *fmt]
    one = run_script(*args, "--jobs", "1", *files)
    assert one.returncode == 1, one.stderr  # the damaged batch and the bad CRC
    assert "Traceback" not in one.stderr
    for jobs in ("2", "3"):
        helpers, many = counted_run(*args, "--jobs", jobs, *files)
        assert helpers == int(jobs) - 1, many.stderr
        assert (many.returncode, many.stdout, many.stderr) == (one.returncode, one.stdout, one.stderr)


def test_small_inputs_fork_no_helper(tmp_path: Path) -> None:
    small = big_segment(tmp_path / "t-0" / "00000000000000000000.log", batches=20)
    helpers, done = counted_run("dump-log", "--deep-iteration", "--jobs", "2", str(small))
    assert (helpers, done.returncode, done.stderr) == (0, 0, "")


@pytest.mark.parametrize("redirect", [">", ">>"])
def test_helpers_into_a_regular_file(segments: list[Path], tmp_path: Path, redirect: str) -> None:
    names = shlex.join(str(s) for s in segments)
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out-{jobs}"
        out.write_bytes(b"kept\n")
        done = run_pipeline(f"$KTOOL dump-log --deep-iteration --json -j {jobs} {names} {redirect} {out}")
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        outputs.append((out.read_bytes(), done.stderr))
    assert outputs[1] == outputs[0]


@pytest.mark.parametrize("as_json", [False, True])
def test_the_reader_leaving_keeps_the_exit_code_and_the_problems(segments: list[Path], as_json: bool) -> None:
    args = ["dump-log", "--deep-iteration", "-j", "2", *(["--json"] if as_json else []), str(segments[0])]
    piped = run_pipeline(f'"$KTOOL" {shlex.join(args)} | head -1')
    assert piped.returncode == 1, piped.stderr
    assert "Traceback" not in piped.stderr and "Broken pipe" not in piped.stderr, piped.stderr
    assert "crc" in piped.stderr.lower() and "undecodable" in piped.stderr.lower(), piped.stderr


# -- BatchLines itself ---------------------------------------------------------------------------------


def _maker(as_json: bool):
    out = open(os.devnull, "w")  # noqa: SIM115 (the renderers only make lines here)
    if as_json:
        renderer = DumpJsonRenderer(out, True)
    else:
        renderer = DumpTextRenderer(LineWriter(out, False), LineWriter(out, False), True, False)
    return functools.partial(made_lines, renderer.batch_lines)


def _walk(
    helpers: BatchLines, make, path: Path, stop: int | None = None
) -> list[tuple[int, bytes | None, bool]]:
    """Each non-control batch's (position, lines or None, made by a helper), walked as the dump walks:
    the lines taken from the helpers, else made here."""
    seen = []
    for item in iter_log_entries(path, ahead=functools.partial(helpers.walk, str(path))):
        if type(item) is RecordBatch and not item.is_control:
            made = helpers.take(item)
            by_helper = made is not None and type(made[0]) is memoryview
            made = made or make(str(path), item)
            seen.append((item.position, None if made is None else bytes(made[0]), by_helper))
            if stop is not None and len(seen) == stop:
                break
    return seen


def _direct(make, path: Path) -> dict[int, bytes | None]:
    out = {}
    for item in iter_log_entries(path):
        if type(item) is RecordBatch and not item.is_control:
            made = make(str(path), item)
            out[item.position] = None if made is None else made[0]
    return out


@pytest.mark.parametrize("as_json", [False, True])
def test_every_batch_gets_the_parents_lines(segments: list[Path], as_json: bool) -> None:
    make = _maker(as_json)
    direct = _direct(make, segments[0])
    with BatchLines(make, 1) as helpers:
        seen = _walk(helpers, make, segments[0])
    assert {p: lines for p, lines, _ in seen if lines is not None} == {
        p: v for p, v in direct.items() if v is not None
    }
    assert sum(by_helper for *_, by_helper in seen) > len(seen) // 4  # the helper did its share
    damaged = [p for p, v in direct.items() if v is None]
    assert len(damaged) == 1 and dict((p, lines) for p, lines, _ in seen)[damaged[0]] is None


def test_a_helper_that_dies_costs_nothing_but_time(segments: list[Path]) -> None:
    make = _maker(True)
    parent = os.getpid()
    positions = sorted(_direct(make, segments[0]))
    doomed = positions[60]

    def fragile(path: str, batch: RecordBatch):
        # The helper dies in the middle of the first file (at the first batch it is given from there on:
        # a slow machine's parent may have made the doomed one itself), or else at the second file's first.
        if os.getpid() != parent and (batch.position >= doomed or path != str(segments[0])):
            os._exit(9)
        return make(path, batch)

    with BatchLines(fragile, 1) as helpers:
        pid = helpers._helpers[0].pid
        seen = _walk(helpers, make, segments[0])
        second = _walk(helpers, make, segments[1])  # the next file: the parent alone
    assert [(p, lines) for p, lines, _ in seen] == list(_direct(make, segments[0]).items())
    assert [(p, lines) for p, lines, _ in second] == list(_direct(make, segments[1]).items())
    assert not any(by_helper for *_, by_helper in second)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


@pytest.mark.parametrize("fate", ["stopped", "hung"])
def test_a_helper_stopped_or_hung_costs_a_moment_not_the_dump(
    segments: list[Path], monkeypatch, fate: str
) -> None:
    """A helper stopped (SIGSTOP, a debugger) or hung never answers: the parent waited for it in a
    select() without a timeout, for ever. Now it is given up (killed) after 1 s stopped or `STALL` s
    without progress, and the parent makes what it held."""
    monkeypatch.setattr(children, "STALL", 1.0)
    make = _maker(True)
    parent = os.getpid()
    doomed = sorted(_direct(make, segments[0]))[60]

    def fragile(path: str, batch: RecordBatch):
        if os.getpid() != parent and batch.position >= doomed:
            if fate == "stopped":
                os.kill(os.getpid(), signal.SIGSTOP)
            time.sleep(3600)
        return make(path, batch)

    done: list = []

    def dump() -> None:
        with BatchLines(fragile, 1) as helpers:
            done.append(helpers._helpers[0].pid)
            done.append(_walk(helpers, make, segments[0]))

    walker = threading.Thread(target=dump, daemon=True)
    walker.start()
    walker.join(60)
    assert len(done) == 2, f"the walk waited for ever on its {fate} helper"
    pid, seen = done
    assert [(p, lines) for p, lines, _ in seen] == list(_direct(make, segments[0]).items())
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped


def test_a_walk_ended_early_leaves_the_helpers_ready(segments: list[Path]) -> None:
    make = _maker(False)
    with BatchLines(make, 2) as helpers:
        assert len(_walk(helpers, make, segments[0], stop=5)) == 5
        assert not helpers._out and not helpers._made
        seen = _walk(helpers, make, segments[1])
        pids = [h.pid for h in helpers._helpers]
    assert [(p, lines) for p, lines, _ in seen] == list(_direct(make, segments[1]).items())
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_batch_changed_under_the_helper_is_left_to_the_parent(segments: list[Path]) -> None:
    make = _maker(True)
    batch = next(i for i in iter_log_entries(segments[0]) if type(i) is RecordBatch)
    fd = os.open(segments[0], os.O_RDONLY)
    try:
        args = (fd, str(segments[0]), batch.position, batch.size)
        assert batch_lines._made(*args, batch.computed_crc, make)[0] == make(str(segments[0]), batch)[0]
        assert batch_lines._made(*args, batch.computed_crc ^ 1, make) is None  # not the bytes walked
        assert batch_lines._made(fd, str(segments[0]), 1 << 40, batch.size, batch.computed_crc, make) is None
    finally:
        os.close(fd)
