"""Seed corpora for the fuzz harnesses, cut from real logs: every v2 records section (decompressed when
needed), every v0/v1 message set and inner set, every KRaft record value of fixtures/ and, when it is
there, ../shared/realworld — each in its target's input layout (tests/fuzz/targets.py).

    python -m tests.fuzz.seeds DIR    # DIR/records, messages, kraft, remote, spans, batches, snappy
"""

from __future__ import annotations

import hashlib
import struct
import sys
from pathlib import Path

from kafka_tools.format.compression import decompress
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import iter_log_entries
from tests.fuzz.targets import BATCHES_HEAD, MESSAGES_HEAD, RECORDS_HEAD, SNAPPY_HEAD, SPANS_HEAD
from tests.independent import FIXTURES, ROOT

MAX_LEN = 4096  # the harnesses' -max_len: larger sections are cut (the cut is a seed too)
REALWORLD_DIRS = [ROOT.parent / "shared" / "realworld", Path("/work/shared/realworld")]


def _logs() -> list[Path]:
    roots = [FIXTURES, *[d for d in REALWORLD_DIRS if d.is_dir()][:1]]
    out = []
    for root in roots:
        out += sorted(p for p in root.glob("**/*.log") if p.stat().st_size)
    return out


def _records_seed(b: RecordBatch, section: bytes, flags: int) -> bytes:
    log_append = b.max_timestamp if b.attributes & 0x08 else 0
    head = RECORDS_HEAD.pack(
        flags | (1 if b.attributes & 0x08 else 0),
        b.base_offset,
        b.base_timestamp,
        log_append,
        b.base_sequence,
        min(b.records_count, 0xFFFF),
    )
    return head + section


def _snappy_seeds() -> set[bytes]:
    """Raw and xerial snappy payloads of a few shapes of data (literals, short and long copies)."""
    import cramjam

    out = set()
    for data in (b"kafka " * 300, bytes(range(256)) * 8, b"a" * 5000, b"0123456789" * 50 + bytes(100)):
        raw = bytes(cramjam.snappy.compress_raw(data))
        framed = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(raw)) + raw
        out.update(SNAPPY_HEAD.pack(flags) + p for p in (raw, framed) for flags in (0, 1))
    return out


def _remote_seeds() -> set[bytes]:
    """`__remote_log_metadata` values of every apiKey, encoded from Kafka's schemas (fixtures/)."""
    from tests.format.kraft_encoder import frame, load_schemas, sample

    schemas = load_schemas(FIXTURES / "remote-log-metadata-schemas")
    return {
        frame(s, 0, sample(s, 0, seed, nulls=seed % 2 == 1)) for s in schemas.values() for seed in range(3)
    }


def _span_seeds(values: set[bytes]) -> set[bytes]:
    """Runs of one-record batches as a broker frames `__remote_log_metadata` (the remote seeds, a null
    value, a control batch), for remote_span_events."""
    from tests.format.kraft_encoder import batch

    records = [*sorted(values), None]
    out = set()
    for start in range(0, len(records), 3):
        run = records[start : start + 3]
        framed = b"".join(batch(start + i, [(None, v)]) for i, v in enumerate(run))
        out.add(SPANS_HEAD.pack(255) + framed[:MAX_LEN])
        out.add(SPANS_HEAD.pack(1) + framed[:MAX_LEN])
    control = batch(0, [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")], control=True)
    out.add(SPANS_HEAD.pack(255) + control + batch(1, [(None, records[0])]))
    return out


def seeds() -> dict[str, set[bytes]]:
    out: dict[str, set[bytes]] = {
        "records": set(),
        "messages": set(),
        "kraft": set(),
        "batches": set(),
        "snappy": _snappy_seeds(),
        "remote": _remote_seeds(),
    }
    out["spans"] = _span_seeds(out["remote"])
    for path in _logs():
        raw = path.read_bytes()
        for entry in iter_log_entries(path):
            if isinstance(entry, RecordBatch):
                section = bytes(entry.payload)
                if entry.codec == 2 and len(section) <= MAX_LEN:
                    out["snappy"].add(SNAPPY_HEAD.pack(len(out["snappy"]) % 2) + section)
                if entry.is_compressed:
                    try:
                        section = decompress(entry.codec, section, MAX_LEN * 4)
                    except Exception:  # noqa: BLE001 - a damaged fixture: no seed
                        continue
                flags = (len(out["records"]) % 2) * 4  # print_data on every other seed
                out["records"].add(_records_seed(entry, section[:MAX_LEN], flags))
                if "kraft" in path.parts or "__cluster_metadata-0" in path.parts:
                    try:
                        records = entry.records()
                    except RecordDecodeError:
                        continue
                    out["kraft"].update(bytes(r.value) for r in records if r.value and not entry.is_control)
                if any(part.startswith("__remote_log_metadata-") for part in path.parts):
                    try:
                        records = entry.records()
                    except RecordDecodeError:
                        continue
                    out["remote"].update(bytes(r.value) for r in records if r.value)
            elif isinstance(entry, LegacyMessage):
                one = raw[entry.position : entry.next_position]
                flags = len(out["messages"]) % 32
                out["messages"].add(MESSAGES_HEAD.pack(flags, 0, 1_700_000_000_000, 0, 2**62) + one)
                if entry.is_compressed and entry.value is not None:
                    try:
                        data = decompress(entry.codec, entry.value, MAX_LEN * 4)
                    except Exception:  # noqa: BLE001 - a damaged fixture: no seed
                        continue
                    flags = 4 | (len(out["messages"]) % 4) | (8 if entry.attributes & 8 else 0)
                    head = MESSAGES_HEAD.pack(flags, entry.offset, entry.timestamp, 0, 2**62)
                    out["messages"].add(head + data[:MAX_LEN])
        # v2 segments from their start, for validate's C walk (base 0, and from the first offset)
        if raw[16:17] == b"\x02":
            out["batches"].add(BATCHES_HEAD.pack(2, 0, 0) + raw[:MAX_LEN])
            out["batches"].add(
                BATCHES_HEAD.pack(1, int.from_bytes(raw[:8], "big", signed=True), -1) + raw[:MAX_LEN]
            )
        # whole message sets: the first MAX_LEN bytes of each v0/v1 segment
        if raw[16:17] in (b"\x00", b"\x01"):
            out["messages"].add(MESSAGES_HEAD.pack(0, 0, 0, -(2**63), 2**63 - 1) + raw[:MAX_LEN])
            out["messages"].add(MESSAGES_HEAD.pack(3, 0, 0, -(2**63), 2**63 - 1) + raw[:MAX_LEN])
    return out


def write(directory: Path) -> dict[str, int]:
    counts = {}
    for target, items in seeds().items():
        d = directory / target
        d.mkdir(parents=True, exist_ok=True)
        for item in items:
            (d / hashlib.sha1(item).hexdigest()).write_bytes(item)
        counts[target] = len(items)
    return counts


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
