"""Every side file costs the bytes really in it, whatever its length says. A 1 GiB sparse `.index`,
`.timeindex` or `.txnindex` whose last entry is not zeros (4 KB on disk) once cost validate 150 s and
5.9 GB before a MemoryError; a 511 MiB sparse `.snapshot` whose header says 2**31 - 1 entries printed
11.6 million entries that do not exist; an 8 MiB sparse `remote_log_snapshot` gave two million error
lines; an 11-million-line checkpoint took 1.66 GB and two minutes.

Each command that reads the kind runs in its own process under a 4 GiB address-space limit (so a
reader that allocates the apparent size fails at once instead of swapping the host); its peak RSS is
held to a generous budget, its answer exactly: what is there, and one line for the zeros or garbage
where entries should be, with its position and count. The 8 GiB variants are in the exhaustive tier."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from kafka_tools.format import index, snapshot
from kafka_tools.format.remote_log_snapshot import HEADER as RLS_HEADER
from tests.log.test_sparse_side_files import BUDGET, MB, peak
from tests.support.logs import T0, write_log_dir

GIB = 1 << 30
FIRST = f"{0:020d}"
LAST_ENTRY = {
    "index": index.OFFSET_INDEX_ENTRY.pack(5, 77),
    "timeindex": index.TIME_INDEX_ENTRY.pack(T0 + 5, 5),
    "txnindex": index.TXN_INDEX_ENTRY.pack(0, 7, 10, 12, 10),
}
MAX_LINES = 40  # a command's whole output: one line for the zeros, never one per entry


def _partition(root: Path) -> Path:
    write_log_dir(root / "logs", partitions=1, segments=1, batches=1, records=1)
    return root / "logs" / "gen-0"


def _sparse(path: Path, size: int, tail: bytes, head: bytes = b"") -> None:
    """`head` at the start, `tail` as the file's last bytes, a hole between: a few KB on disk."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
        f.seek(size - len(tail))
        f.write(tail)


def _index(part: Path, ext: str, size: int) -> int:
    """The segment's `ext` made `size` bytes (whole entries) of holes but its last entry; the slots of
    zeros before that entry (the first kept when it may be one, as an index's (0, 0))."""
    width = len(LAST_ENTRY[ext])
    whole = size // width
    _sparse(part / f"{FIRST}.{ext}", whole * width, LAST_ENTRY[ext])
    return whole - 1 if ext == "txnindex" else whole - 2


def _index_commands(part: Path, ext: str) -> dict[str, tuple[list[str], int]]:
    """command -> (args, exit code): 1 where the zeros are a finding, 0 where the index is only a hint
    (read, offsets-at, retention use it untrusted and scan the segment instead)."""
    truncate_code = 1 if ext == "txnindex" else 0  # a damaged .txnindex is refused, an index rebuilt
    commands = {
        "validate": (["validate", str(part.parent)], 1),
        "dump-log": (["dump-log", str(part / f"{FIRST}.{ext}")], 1),
        "truncate --dry-run": (["truncate", "--dry-run", str(part)], truncate_code),
    }
    if ext != "txnindex":
        commands["read"] = (
            ["read", "--timestamp", str(T0), str(part)]
            if ext == "timeindex"
            else ["read", "--offset", "0", str(part)],
            0,
        )
        commands["offsets-at"] = (["offsets-at", "--time", str(T0), str(part.parent)], 0)
        commands["retention"] = (["retention", "--now", str(T0 + 3_600_000), str(part)], 0)
    else:
        commands["transactions describe"] = (["transactions", "describe", str(part.parent)], 0)
    return commands


INDEX_CASES = [(ext, cmd) for ext in LAST_ENTRY for cmd in _index_commands(Path("x/y"), ext)]


def _zeros_line(ext: str, zeros: int) -> str:
    width = len(LAST_ENTRY[ext])
    first = 0 if ext == "txnindex" else 1
    return (
        f"{zeros} entries all zeros among the entries, the first at entry {first} (byte {first * width}): "
        f"a hole or zeros where entries should be (not listed)"
    )


def _check_index_case(tmp_path: Path, ext: str, command: str, size: int) -> None:
    part = _partition(tmp_path)
    zeros = _index(part, ext, size)
    args, code = _index_commands(part, ext)[command]
    rss, got, err, out = peak(*args)
    assert rss < BUDGET, f"{command} peaked at {rss // MB} MB"
    assert got == code, (got, err[-2000:], out[-2000:])
    assert "Traceback" not in err and len((out + err).splitlines()) <= MAX_LINES, (out + err)[-3000:]
    text = out + err
    if command in ("validate", "dump-log"):
        assert text.count(_zeros_line(ext, zeros)) == 1, text
    if command == "dump-log" and ext == "index":
        assert out.splitlines()[1:] == ["offset: 0 position: 0", "offset: 5 position: 77"], out
    if command == "truncate --dry-run" and ext != "txnindex":
        assert "rebuild" in text and _zeros_line(ext, zeros) in text, text


@pytest.mark.slow  # a ktool process per command on a huge sparse file: CI's offline lane, not the fast tier
@pytest.mark.parametrize("ext, command", INDEX_CASES, ids=[f"{e}-{c}" for e, c in INDEX_CASES])
def test_a_1_gib_sparse_index_with_a_last_entry_costs_its_data(
    tmp_path: Path, ext: str, command: str
) -> None:
    _check_index_case(tmp_path, ext, command, GIB)


@pytest.mark.exhaustive
@pytest.mark.parametrize("ext, command", INDEX_CASES, ids=[f"{e}-{c}" for e, c in INDEX_CASES])
def test_an_8_gib_sparse_index_with_a_last_entry_costs_its_data(
    tmp_path: Path, ext: str, command: str
) -> None:
    _check_index_case(tmp_path, ext, command, 8 * GIB)


# --------------------------------------------------------------------------- producer snapshots


def _snapshot(part: Path, size: int) -> Path:
    """A `.snapshot` of `size` bytes whose header says 2**31 - 1 entries, a hole, a last byte not zero."""
    path = part / f"{1:020d}.snapshot"
    _sparse(path, size, b"\x01", snapshot.HEADER.pack(snapshot.SNAPSHOT_VERSION, 0, 2**31 - 1))
    return path


SNAPSHOT_COMMANDS = {
    "validate": (lambda part, path: ["validate", str(part.parent)], 1),
    "dump-log": (lambda part, path: ["dump-log", str(path)], 1),
    "truncate --dry-run": (lambda part, path: ["truncate", "--dry-run", str(part)], 0),
    "transactions describe": (lambda part, path: ["transactions", "describe", str(part.parent)], None),
}


@pytest.mark.slow  # a ktool process per command on a huge sparse file: CI's offline lane, not the fast tier
@pytest.mark.parametrize("command", list(SNAPSHOT_COMMANDS))
def test_a_511_mib_sparse_snapshot_lists_no_entry_that_is_not_there(tmp_path: Path, command: str) -> None:
    part = _partition(tmp_path)
    size = 511 * MB
    path = _snapshot(part, size)
    make, code = SNAPSHOT_COMMANDS[command]
    rss, got, err, out = peak(*make(part, path))
    assert rss < BUDGET, f"{command} peaked at {rss // MB} MB"
    text = out + err
    assert "Traceback" not in err and len(text.splitlines()) <= MAX_LINES, text[-3000:]
    if code is not None:
        assert got == code, (got, text[-2000:])
    entries = (size - snapshot.HEADER.size) // snapshot.ENTRY.size
    said = (
        f"header says 2147483647 entries ({10 + (2**31 - 1) * 46} bytes) but the file has {size} bytes; "
        f"{entries} entries all zeros, the first at byte 10: a hole or zeros where entries should be "
        f"(not listed)"
    )
    if command in ("validate", "dump-log"):
        assert text.count(said) == 1, text
        assert "producerId" not in text
    if command == "truncate --dry-run":
        assert said in text, text  # the broker drops a snapshot it cannot read: so does the plan


def test_the_snapshot_cap_is_checked_before_reading(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    path = _snapshot(part, 8 * GIB)
    rss, got, err, out = peak("dump-log", str(path))
    assert (got, rss < BUDGET) == (1, True), (got, rss, err)
    assert f"{8 * GIB} bytes is too large for a producer snapshot" in out + err


# --------------------------------------------------------------------------- remote_log_snapshot


def _remote_log_snapshot(part: Path, size: int) -> Path:
    path = part / "remote_log_snapshot"
    _sparse(path, size, b"\x01", RLS_HEADER.pack(0, 0, 0, 0))
    return path


@pytest.mark.slow  # a ktool process per command on a huge sparse file: CI's offline lane, not the fast tier
@pytest.mark.parametrize("command", ["dump-log", "validate"])
def test_an_8_mib_sparse_remote_log_snapshot_is_one_problem(tmp_path: Path, command: str) -> None:
    part = _partition(tmp_path)
    path = _remote_log_snapshot(part, 8 * MB)
    args = ["dump-log", str(path)] if command == "dump-log" else ["validate", str(part.parent)]
    rss, got, err, out = peak(*args)
    text = out + err
    assert (got, rss < BUDGET) == (1, True), (got, rss, text[-2000:])
    assert "Traceback" not in err and len(text.splitlines()) <= MAX_LINES, text[-3000:]
    empty = (8 * MB - 1 - RLS_HEADER.size) // 4
    assert text.count(f"(and {empty - 1} undecodable entries after it)") == 1, text


@pytest.mark.parametrize(
    "size", [GIB, pytest.param(8 * GIB, marks=pytest.mark.exhaustive)], ids=["1GiB", "8GiB"]
)
def test_a_huge_sparse_remote_log_snapshot_is_refused_before_reading(tmp_path: Path, size: int) -> None:
    part = _partition(tmp_path)
    path = _remote_log_snapshot(part, size)
    rss, got, err, out = peak("dump-log", str(path))
    text = out + err
    assert (got, rss < BUDGET) == (1, True), (got, rss, text[-2000:])
    assert f"its data runs to byte {size}, more than the {64 << 20} bytes ktool reads" in text, text
    assert len(text.splitlines()) <= MAX_LINES


# --------------------------------------------------------------------------- checkpoints


def _other(part: Path) -> Path:
    """Another replica of the partition, beside the test's log dir (its checkpoint untouched)."""
    return part.parent.parent / "other" / part.name


def _checkpoint(path: Path, lines: int, line: bytes) -> None:
    with open(path, "wb") as f:
        f.write(b"0\n%d\n" % lines)
        block = line * 100_000
        for _ in range(lines // 100_000):
            f.write(block)
        f.write(line * (lines % 100_000))


CHECKPOINT_COMMANDS = {
    "replication-offset-checkpoint": {
        "validate": (lambda part: ["validate", str(part.parent)], 1),
        "dump-log": (lambda part: ["dump-log", str(part.parent / "replication-offset-checkpoint")], 1),
        "retention": (lambda part: ["retention", "--now", str(T0 + 3_600_000), str(part)], 1),
    },
    "leader-epoch-checkpoint": {
        "validate": (lambda part: ["validate", str(part.parent)], 1),
        "dump-log": (lambda part: ["dump-log", str(part / "leader-epoch-checkpoint")], 1),
        "truncate --dry-run": (lambda part: ["truncate", "--dry-run", str(part)], None),
        "replicas diff": (lambda part: ["replicas", "diff", str(part), str(_other(part))], None),
    },
}
CHECKPOINT_CASES = [(name, cmd) for name, cmds in CHECKPOINT_COMMANDS.items() for cmd in cmds]


@pytest.mark.slow  # a ktool process per command on a huge sparse file: CI's offline lane, not the fast tier
@pytest.mark.parametrize("name, command", CHECKPOINT_CASES, ids=[f"{n}-{c}" for n, c in CHECKPOINT_CASES])
def test_an_11_million_line_checkpoint_is_refused_at_its_count_line(
    tmp_path: Path, name: str, command: str
) -> None:
    part = _partition(tmp_path)
    shutil.copytree(part, _other(part))
    lines = 11_000_000
    if name == "replication-offset-checkpoint":
        _checkpoint(part.parent / name, lines, b"t 0 0\n")
    else:
        _checkpoint(part / name, lines, b"0 0\n")
    make, code = CHECKPOINT_COMMANDS[name][command]
    rss, got, err, out = peak(*make(part))
    text = out + err
    assert rss < BUDGET, f"{command} peaked at {rss // MB} MB"
    assert "Traceback" not in err and len(text.splitlines()) <= MAX_LINES, text[-3000:]
    if code is not None:
        assert got == code, (got, text[-2000:])
    said = "count line says 11000000 entries, more than the 1000000 ktool reads"
    if command in ("validate", "dump-log"):
        assert text.count(said) == 1, text
    if command == "retention":  # a warning: in the partition's table and on stderr
        assert said in out and said in err, text


def test_entries_in_data_extents_are_read_and_holes_only_counted(tmp_path: Path) -> None:
    """Entries in two data extents with a hole between and after: each listed at its slot, the hole's
    slots counted once; the end found at the last entry, the holes after it not read."""
    path = tmp_path / f"{100:020d}.timeindex"
    entry = index.TIME_INDEX_ENTRY
    with open(path, "wb") as f:
        f.write(entry.pack(T0, 1) + entry.pack(T0 + 1, 2))
        f.seek(12 * 1_000_000)
        f.write(entry.pack(T0 + 2, 3))
        f.truncate(GIB - GIB % 12)
    found, tail = index.read_time_index(path, 100)
    assert [(e.slot, e.timestamp, e.offset) for e in found] == [
        (0, T0, 101),
        (1, T0 + 1, 102),
        (1_000_000, T0 + 2, 103),
    ]
    assert (tail.entries, tail.gap.entries, tail.gap.first_slot) == (1_000_001, 999_998, 2)
    assert tail.zero_entries == GIB // 12 - 1_000_001
    with open(path, "rb") as f:
        with pytest.raises(index.IndexGap, match="entry 2 "):
            index.entry_bytes(f.fileno(), os.fstat(f.fileno()).st_size, 12)


def test_a_real_index_reads_as_before(tmp_path: Path) -> None:
    """No hole, no zeros: every entry listed, nothing counted (the broker's own files are these)."""
    path = tmp_path / f"{0:020d}.index"
    data = b"".join(index.OFFSET_INDEX_ENTRY.pack(i, i * 4096) for i in range(200_000))
    path.write_bytes(data)
    found, tail = index.read_offset_index(path, 0)
    assert [(e.slot, e.offset, e.position) for e in found] == [(i, i, i * 4096) for i in range(200_000)]
    assert (tail.gap.entries, tail.zero_entries, tail.entries) == (0, 0, 200_000)
    with open(path, "rb") as f:
        assert index.entry_bytes(f.fileno(), len(data), 8) == data
    assert struct.unpack(">iI", data[-8:]) == (199_999, 199_999 * 4096)
