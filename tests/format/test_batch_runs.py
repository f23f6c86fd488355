"""v2 batch runs walked in C (`scan_batches`) must leave `ktool validate` indistinguishable from the
per-batch Python walk: the same report (counts, offsets, gaps, index positions, findings, recovery
point) on every real v2 segment, every corrupt fixture and random corruptions of them, and they must
actually replace the per-batch walk on a clean segment (work done: how many batches each path saw)."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_tools.cli.main import cli
from kafka_tools.format import accel
from kafka_tools.format.batch_runs import BatchRun
from kafka_tools.format.entry_headers import BatchHeader
from kafka_tools.format.segment import RunBounds, SegmentWindow, walk_entries
from tests.independent import FIXTURES
from tests.support.reports import segment_report

pytestmark = pytest.mark.skipif(accel.fast("scan_batches") is None, reason="C extension not built")

GENERATED = FIXTURES / "generated"
SEGMENTS = sorted([*GENERATED.glob("v2/*/*.log"), *GENERATED.glob("corrupt/*/*.log")])


def _batch_starts(path: Path) -> list[int]:
    data, pos, out = path.read_bytes(), 0, []
    while pos + 12 <= len(data):
        out.append(pos)
        pos += 12 + max(1, struct.unpack_from(">i", data, pos + 8)[0])
    return out


def _python_walk(monkeypatch) -> None:
    monkeypatch.setattr(accel, "C", accel.without("scan_batches"))


def test_every_v2_and_corrupt_segment_validates_the_same(monkeypatch) -> None:
    wanted = {p: set(_batch_starts(p)[::2]) | {0, 77} for p in SEGMENTS}
    fast = [segment_report(p, wanted[p]) for p in SEGMENTS]
    fast_deep = [segment_report(p, wanted[p], deep=True) for p in SEGMENTS]
    trees = [str(GENERATED / "v2"), str(GENERATED / "corrupt")]
    fast_cli = CliRunner().invoke(cli, ["validate", "--json", *trees], catch_exceptions=False).stdout
    _python_walk(monkeypatch)
    assert [segment_report(p, wanted[p]) for p in SEGMENTS] == fast
    assert [segment_report(p, wanted[p], deep=True) for p in SEGMENTS] == fast_deep
    assert CliRunner().invoke(cli, ["validate", "--json", *trees], catch_exceptions=False).stdout == fast_cli


def _mutated(data: bytes, rnd: random.Random) -> bytes:
    b = bytearray(data)
    how = rnd.randrange(5)
    if how == 0:  # a flipped bit anywhere: CRC, length, magic, attributes, deltas, counts, records
        b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
    elif how == 1:
        del b[rnd.randrange(len(b)) :]
    elif how == 2:  # a batch's base offset (outside the CRC) moved back, ahead or to the extremes
        at = rnd.choice(_starts_of(bytes(b)))
        b[at : at + 8] = rnd.choice([0, 1, 5, 30, 2**31 + 7, 2**63 - 1, 2**64 - 1]).to_bytes(8, "big")
    elif how == 3:
        b[rnd.randrange(len(b)) :] = bytes(rnd.randrange(1, 200))
    else:  # a batch's record count (inside the CRC: the CRC is rewritten so only the count is wrong)
        from kafka_tools.format.checksums import crc32c

        at = rnd.choice(_starts_of(bytes(b)))
        struct.pack_into(">i", b, at + 57, rnd.choice([-1, 0, 10_000]))
        size = struct.unpack_from(">i", b, at + 8)[0]
        struct.pack_into(">I", b, at + 17, crc32c(bytes(b[at + 21 : at + 12 + size])))
    return bytes(b)


def _starts_of(data: bytes) -> list[int]:
    data_len, pos, out = len(data), 0, []
    while pos + 61 <= data_len:
        out.append(pos)
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if size < 49:
            break
        pos += 12 + size
    return out or [0]


@pytest.mark.parametrize("source", ["v2/none-0", "v2/segmented-0", "v2/transactions-0", "v2/mixed-magic-0"])
def test_corrupted_copies_validate_the_same(source: str, tmp_path: Path, monkeypatch) -> None:
    originals = sorted((GENERATED / source).glob("*.log"))
    rnd = random.Random(source)
    copies = []
    for i in range(40):
        original = rnd.choice(originals)
        path = tmp_path / f"p{i}-0" / original.name
        path.parent.mkdir()
        path.write_bytes(_mutated(original.read_bytes(), rnd))
        copies.append(path)
    fast = [segment_report(p, {0, 61, 200}) for p in copies]
    _python_walk(monkeypatch)
    for path, expected in zip(copies, fast, strict=True):
        assert segment_report(path, {0, 61, 200}) == expected, path


def _walk_kinds(path: Path) -> tuple[int, int]:
    """(batches in runs, batches the Python walk saw one by one) of validate's walk of `path`."""
    size = path.stat().st_size
    in_runs = one_by_one = 0
    with open(path, "rb") as f:
        win = SegmentWindow(f, size)
        for item in walk_entries(win, 0, size, light=True, runs=RunBounds(batches=True)):
            if isinstance(item, BatchRun):
                in_runs += item.count
            elif isinstance(item, BatchHeader):
                one_by_one += 1
    return in_runs, one_by_one


def _codecs(path: Path) -> list[int]:
    data = path.read_bytes()
    return [data[pos + 22] & 0x07 for pos in _batch_starts(path)]


@pytest.mark.parametrize("name", ["none-0", "segmented-0", "zstd-0"])
def test_only_compressed_batches_are_walked_one_by_one(name: str) -> None:
    """Uncompressed batches go through C in runs; compressed ones, which validate decompresses, one
    by one as before."""
    path = GENERATED / "v2" / name / "00000000000000000000.log"
    codecs = _codecs(path)
    assert _walk_kinds(path) == (codecs.count(0), len(codecs) - codecs.count(0))


def test_scan_batches_on_garbage_and_odd_arguments_never_reads_out_of_bounds() -> None:
    """Random bytes with batch-like headers, every bound (at, limit, end) anywhere, even past the
    buffer or negative: a result or a clean stop, and the run never reaches past the buffer."""
    scan = accel.fast("scan_batches")
    rnd = random.Random(27)
    template = (GENERATED / "v2" / "none-0" / "00000000000000000000.log").read_bytes()
    for _ in range(3000):
        data = bytearray(rnd.randbytes(rnd.randrange(0, 400)))
        if rnd.random() < 0.5 and data:
            cut = rnd.randrange(len(template))
            data[: rnd.randrange(len(data) + 1)] = template[cut : cut + 400]
        n = len(data)
        at, limit, end = (rnd.randrange(-5, n + 100) for _ in range(3))
        prev = rnd.choice([None, -1, 0, 5, 2**63 - 1, -(2**63)])
        j, count, records, *_ = scan(bytes(data), at, limit, end, prev, 0, 2**31, [0, 61, 200], 0)
        assert count == 0 or (0 <= at < j <= n and count > 0 and records >= 0)
    with pytest.raises(TypeError):
        scan(b"", 0, 0, 0, None, 0, 1, ["x"], 0)


def test_a_range_past_a_shortened_file_has_no_batch_start(tmp_path: Path) -> None:
    """A split's range cut where the file has since been shortened (a broker's recovery, a cut while
    validate ran): no batch starts there; the walker of the range before finds the file's end."""
    from kafka_tools.format.batch_runs import batch_start_after

    path = tmp_path / "short.log"
    path.write_bytes(bytes(1000))
    with open(path, "rb") as f:
        assert batch_start_after(f.fileno(), 50_000_000, 1000) is None
