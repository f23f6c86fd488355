"""The broker's small text files: offset checkpoints, leader-epoch checkpoints, meta.properties,
partition.metadata (CheckpointFile.scala: a version line, a count line, then one entry per line) and
KRaft's quorum-state (one JSON object). Their file names: format/kinds.py."""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_tools.format.extents import CHUNK
from kafka_tools.format.plural import plural
from kafka_tools.format.shared_methods import SharedMethods

MAX_TEXT_FILE = 64 * 1024 * 1024  # an offset or leader-epoch checkpoint
MAX_SMALL_TEXT_FILE = 1024 * 1024  # meta.properties, partition.metadata, quorum-state: Kafka's are < 1 KiB
# A line per partition of the log dir (or per leader epoch): a million is far past what one broker
# holds (Kafka advises thousands), and what ktool keeps of them stays under 100 MB.
MAX_CHECKPOINT_ENTRIES = 1_000_000


class CheckpointError(ValueError):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(init=False, slots=True, repr=False, eq=False)
class OffsetCheckpointEntry(SharedMethods):
    """One line of an offset checkpoint file: topic, partition, offset."""

    topic: str
    partition: int
    offset: int

    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset


@dataclass(init=False, slots=True, repr=False, eq=False)
class EpochEntry(SharedMethods):
    """One line of a leader-epoch-checkpoint: an epoch and the offset it starts at."""

    epoch: int
    start_offset: int

    def __init__(self, epoch: int, start_offset: int) -> None:
        self.epoch = epoch
        self.start_offset = start_offset


@dataclass(init=False, slots=True, repr=False, eq=False)
class Checkpoint(SharedMethods):
    """A checkpoint file read: its version line and its entries."""

    version: int
    entries: list = field(default_factory=list)

    def __init__(self, version: int, entries: list | None = None) -> None:
        self.version = version
        self.entries = [] if entries is None else entries


def _line_count(path: str | os.PathLike, cap: int, what: str) -> int:
    """How many lines `str.splitlines` would make of the file, counted a chunk at a time (eleven
    million lines cost a chunk, not eleven million strings). The size `cap` is checked before a byte is
    read; text that is not UTF-8 is refused, naming the byte and its line."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > cap:
            raise CheckpointError(f"{size} bytes is too large for {what}", 0)
        decoder = codecs.getincrementaldecoder("utf-8")()
        breaks = newlines = at = 0
        last = ""
        while True:
            chunk = f.read(CHUNK)
            pending = decoder.getstate()[0]
            if not pending and chunk.isascii() and not _has_rare_ascii_break(chunk):
                # the usual case: ASCII, its lines ended by \n alone, counted without decoding
                count, first, end = chunk.count(b"\n"), chunk[:1].decode(), chunk[-1:].decode()
            else:
                try:
                    text = decoder.decode(chunk, final=not chunk)
                except UnicodeDecodeError as exc:
                    line = newlines + (pending + chunk)[: exc.start].count(b"\n") + 1
                    where = at - len(pending) + exc.start
                    raise CheckpointError(f"not UTF-8 text (byte {where})", line) from None
                count, first, end = _breaks_in(text), text[:1], text[-1:]
            if end:
                breaks += count - (last == "\r" and first == "\n")
                last = end
            if not chunk:
                return breaks + (last != "" and last not in _BREAKS)
            newlines += chunk.count(b"\n")
            at += len(chunk)


_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines splits at
_RARE_BREAKS = _BREAKS[1:]
_RARE_ASCII_BREAKS = _RARE_BREAKS[:6].encode()
_ANY_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _has_rare_ascii_break(chunk: bytes) -> bool:
    return len(chunk.translate(None, _RARE_ASCII_BREAKS)) != len(chunk)


def _breaks_in(text: str) -> int:
    if not any(c in text for c in _RARE_BREAKS):
        return text.count("\n")
    return sum(1 for _break in _ANY_BREAK.finditer(text))


def _lines(path: str | os.PathLike) -> Iterator[str]:
    """The file's lines as `str.splitlines` makes them, decoded and split a chunk at a time."""
    with open(path, "rb") as f:
        decoder = codecs.getincrementaldecoder("utf-8")()
        carry = ""
        while True:
            chunk = f.read(CHUNK)
            lines = (carry + decoder.decode(chunk, final=not chunk)).splitlines(keepends=True)
            carry = lines.pop() if chunk and lines and _open_ended(lines[-1]) else ""
            for line in lines:
                yield _without_break(line)
            if not chunk:
                return


def _open_ended(line: str) -> bool:
    """A chunk's last line may go on in the next chunk (a `\r` may be the first half of `\r\n`)."""
    return line[-1] not in _BREAKS or line[-1] == "\r"


def _without_break(line: str) -> str:
    if line.endswith("\r\n"):
        return line[:-2]
    return line[:-1] if line[-1] in _BREAKS else line


def _read_text(path: str | os.PathLike) -> list[str]:
    """A small file's lines (meta.properties, partition.metadata, quorum-state: Kafka's are a few hundred
    bytes), its size capped before it is read."""
    _line_count(path, MAX_SMALL_TEXT_FILE, "this file (Kafka writes a few hundred bytes)")
    return list(_lines(path))


def _read_checkpoint(path: str | os.PathLike, fields: int, parse) -> Checkpoint:
    """CheckpointFile's layout, checked as the broker reads it. The count line is held to the lines
    that follow it (counted without keeping them) and to MAX_CHECKPOINT_ENTRIES before one entry is
    parsed: the entries kept are never more than the count and the cap allow."""
    total = _line_count(path, MAX_TEXT_FILE, "a checkpoint file")
    if not total:
        return Checkpoint(0, [])  # brokers create checkpoint files empty before the first write
    lines = _lines(path)
    if total < 2:
        raise CheckpointError("a checkpoint needs a version line and a count line", total + 1)
    first, second = next(lines), next(lines)
    try:
        version = int(first.strip())
    except ValueError:
        raise CheckpointError(f"version line {first[:40]!r} is not a number", 1) from None
    if version != 0:
        raise CheckpointError(f"unknown checkpoint version {version}", 1)
    try:
        count = int(second.strip())
    except ValueError:
        raise CheckpointError(f"count line {second[:40]!r} is not a number", 2) from None
    if count != total - 2:
        raise CheckpointError(f"count line says {plural(count, 'entry')} but the file has {total - 2}", 2)
    if count > MAX_CHECKPOINT_ENTRIES:
        raise CheckpointError(
            f"count line says {plural(count, 'entry')}, more than the {MAX_CHECKPOINT_ENTRIES} ktool reads", 2
        )
    entries = []
    for n, line in zip(range(3, count + 3), lines, strict=False):  # no more, if it grew meanwhile
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"expected {fields} fields, found {len(parts)}: {line[:60]!r}", n)
        try:
            entries.append(parse(parts))
        except ValueError:
            raise CheckpointError(f"malformed entry {line[:60]!r}", n) from None
    return Checkpoint(version, entries)


def read_offset_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """`topic partition offset` lines (recovery point, replication, log start, cleaner)."""
    return _read_checkpoint(path, 3, lambda p: OffsetCheckpointEntry(p[0], int(p[1]), int(p[2])))


def offsets_by_partition(
    log_dir: str | os.PathLike, name: str, warnings: list[str], unused: str
) -> dict[tuple[str, int], int] | None:
    """The offsets of a log dir's checkpoint `name` by (topic, partition), the last entry winning as in
    the broker's map; None when the file is missing or cannot be read (then a warning ending in
    `unused`: what is done instead)."""
    path = os.path.join(os.fspath(log_dir), name)
    if not os.path.isfile(path):
        return None
    try:
        entries = read_offset_checkpoint(path).entries
    except (CheckpointError, OSError) as exc:
        warnings.append(f"{path}: unreadable ({exc}); {unused}")
        return None
    return {(e.topic, e.partition): e.offset for e in entries}


def read_leader_epoch_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """`epoch startOffset` lines."""
    return _read_checkpoint(path, 2, lambda p: EpochEntry(int(p[0]), int(p[1])))


def read_properties(path: str | os.PathLike) -> dict[str, str]:
    """A Java properties file of simple `key=value` lines (meta.properties)."""
    props: dict[str, str] = {}
    for n, line in enumerate(_read_text(path), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        sep = min((i for i in (stripped.find("="), stripped.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise CheckpointError(f"not a key=value line: {stripped[:60]!r}", n)
        props[stripped[:sep].strip()] = stripped[sep + 1 :].strip()
    return props


def meta_node_id(props: dict[str, str]) -> str | None:
    """The node's id in meta.properties, as Kafka's MetaProperties reads it: `node.id` in version 1 (KRaft),
    `broker.id` in version 0 (ZooKeeper mode; some KRaft tools wrote `node.id` there too)."""
    if props.get("version", "0").strip() == "1":
        return props.get("node.id")
    return props.get("broker.id", props.get("node.id"))


def read_partition_metadata(path: str | os.PathLike) -> dict[str, str]:
    """`partition.metadata` (Kafka 2.8+): `version: 0` and `topic_id: …` lines."""
    meta: dict[str, str] = {}
    for n, line in enumerate(_read_text(path), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise CheckpointError(f"not a `key: value` line: {line[:60]!r}", n)
        meta[key.strip()] = value.strip()
    return meta


def read_quorum_state(path: str | os.PathLike) -> dict[str, object]:
    """KRaft's `quorum-state` (QuorumStateData as JSON: leaderId, leaderEpoch, votedId, currentVoters,
    data_version, …), one object on one line."""
    from kafka_tools import bounded_json  # KRaft's quorum-state only: not on the offset checkpoints' path

    text = "\n".join(_read_text(path))
    try:
        state = bounded_json.loads(text)
    except bounded_json.JsonRejected as exc:
        raise CheckpointError(str(exc), text[: exc.pos].count("\n") + 1) from None
    if not isinstance(state, dict) or "leaderEpoch" not in state:
        raise CheckpointError("not a quorum state (a JSON object with leaderEpoch)", 1)
    return state
