"""An encoder of KRaft records written for the tests from Kafka's JSON schemas themselves (it reads
`fixtures/kraft-schemas/*.json`, the copy of ../shared/kraft-schemas, not ktool's generated table, and
never calls ktool's decoder), plus sample values for every field of every version and builders of
record batches, logs and snapshots (batches through kafka-python's builder). Nothing here imports
kafka_tools."""

from __future__ import annotations

import base64
import json
import random
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.independent import FIXTURES

SCHEMA_DIR = FIXTURES / "kraft-schemas"
CONTROL_TYPE_IDS = {
    "LeaderChangeMessage": 2,
    "SnapshotHeaderRecord": 3,
    "SnapshotFooterRecord": 4,
    "KRaftVersionRecord": 5,
    "VotersRecord": 6,
}
_PRIMITIVES = {"int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid"}
_PRIMITIVES |= {"string", "bytes"}


def _within(spec: Any, version: int) -> bool:
    if spec is None or spec == "none":
        return False
    spec = str(spec)
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo) <= version <= int(hi)
    return version == int(spec)


@dataclass
class Schema:
    name: str
    kind: str  # metadata | control
    type_id: int
    versions: list[int]
    fields: list[dict]
    common: dict[str, list[dict]]


def load_schemas(directory: Path = SCHEMA_DIR) -> dict[str, Schema]:
    """Every schema file, by message name."""
    out = {}
    for path in sorted(directory.glob("*.json")):
        text = "\n".join(ln for ln in path.read_text().splitlines() if not ln.strip().startswith("//"))
        raw = json.loads(text)
        valid = str(raw["validVersions"])
        lo, _, hi = valid.partition("-")
        versions = list(range(int(lo), int(hi or lo) + 1))
        kind = "metadata" if raw["type"] == "metadata" else "control"
        type_id = raw["apiKey"] if kind == "metadata" else CONTROL_TYPE_IDS[raw["name"]]
        common = {s["name"]: s["fields"] for s in raw.get("commonStructs", [])}
        out[raw["name"]] = Schema(raw["name"], kind, type_id, versions, raw["fields"], common)
    return out


def key_of(name: str) -> str:
    return name[0].lower() + name[1:]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _uuid_bytes(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


class Encoder:
    """Writes a struct of one schema at one version in the flexible encoding (all KRaft records are
    flexible from version 0)."""

    def __init__(self, schema: Schema, version: int) -> None:
        self.schema = schema
        self.version = version

    def _sub_fields(self, field: dict) -> list[dict]:
        base = field["type"].removeprefix("[]")
        return field.get("fields") or self.schema.common[base]

    def _scalar(self, type_: str, value: Any, nullable: bool) -> bytes:
        if type_ == "int8":
            return struct.pack(">b", value)
        if type_ == "int16":
            return struct.pack(">h", value)
        if type_ == "int32":
            return struct.pack(">i", value)
        if type_ == "int64":
            return struct.pack(">q", value)
        if type_ == "uint16":
            return struct.pack(">H", value)
        if type_ == "uint32":
            return struct.pack(">I", value)
        if type_ == "float64":
            return struct.pack(">d", value)
        if type_ == "bool":
            return b"\x01" if value else b"\x00"
        if type_ == "uuid":
            return _uuid_bytes(value)
        if type_ in ("string", "bytes"):
            if value is None:
                assert nullable
                return b"\x00"
            raw = value.encode() if type_ == "string" else value
            return _uvarint(len(raw) + 1) + raw
        raise AssertionError(type_)

    def value(self, field: dict, value: Any) -> bytes:
        type_ = field["type"]
        nullable = _within(field.get("nullableVersions"), self.version)
        if type_.startswith("[]"):
            if value is None:
                assert nullable
                return b"\x00"
            elem = type_[2:]
            out = _uvarint(len(value) + 1)
            for v in value:
                if elem in _PRIMITIVES:
                    out += self._scalar(elem, v, False)
                else:
                    out += self.struct(self._sub_fields(field), v)
            return out
        if type_ in _PRIMITIVES:
            return self._scalar(type_, value, nullable)
        return self.struct(self._sub_fields(field), value)

    def struct(self, fields: list[dict], data: dict) -> bytes:
        out = b""
        tagged = []
        for f in fields:
            if not _within(f["versions"], self.version):
                continue
            if _within(f.get("taggedVersions"), self.version):
                if key_of(f["name"]) in data:
                    tagged.append((int(f["tag"]), self.value(f, data[key_of(f["name"])])))
                continue
            out += self.value(f, data[key_of(f["name"])])
        tagged.sort()
        out += _uvarint(len(tagged))
        for tag, payload in tagged:
            out += _uvarint(tag) + _uvarint(len(payload)) + payload
        return out


def encode_body(schema: Schema, version: int, data: dict) -> bytes:
    return Encoder(schema, version).struct(schema.fields, data)


def frame(schema: Schema, version: int, data: dict) -> bytes:
    """A `__cluster_metadata` record value: frame version 1, apiKey, version, body."""
    return _uvarint(1) + _uvarint(schema.type_id) + _uvarint(version) + encode_body(schema, version, data)


def control_key(schema: Schema) -> bytes:
    return struct.pack(">hh", 0, schema.type_id)


# -- sample values --------------------------------------------------------------------------------


class Sampler:
    """Non-default values for every field valid at a version: tagged fields set, nullable fields
    null in some samples (the `null_every` knob), arrays of 1-3 elements, nested structs filled."""

    def __init__(self, schema: Schema, version: int, rng: random.Random, nulls: bool) -> None:
        self.schema = schema
        self.version = version
        self.rng = rng
        self.nulls = nulls

    def scalar(self, type_: str) -> Any:
        r = self.rng
        if type_ == "int8":
            return r.randint(-128, 127)
        if type_ == "int16":
            return r.randint(-(1 << 15), (1 << 15) - 1)
        if type_ == "int32":
            return r.randint(-(1 << 31), (1 << 31) - 1)
        if type_ == "int64":
            return r.randint(-(1 << 63), (1 << 63) - 1)
        if type_ == "uint16":
            return r.randint(0, 65535)
        if type_ == "uint32":
            return r.randint(0, (1 << 32) - 1)
        if type_ == "float64":
            return r.uniform(-1e9, 1e9)
        if type_ == "bool":
            return r.random() < 0.5
        if type_ == "uuid":
            return base64.urlsafe_b64encode(r.randbytes(16)).decode().rstrip("=")
        if type_ == "string":
            return "".join(r.choice("abcxyz-._é€0123") for _ in range(r.randint(0, 12)))
        if type_ == "bytes":
            return r.randbytes(r.randint(0, 20))
        raise AssertionError(type_)

    def value(self, field: dict, fields_of) -> Any:
        if self.nulls and _within(field.get("nullableVersions"), self.version):
            return None
        type_ = field["type"]
        if type_.startswith("[]"):
            elem = type_[2:]
            n = self.rng.randint(1, 3)
            if elem in _PRIMITIVES:
                return [self.scalar(elem) for _ in range(n)]
            return [self.struct(fields_of(field)) for _ in range(n)]
        if type_ in _PRIMITIVES:
            return self.scalar(type_)
        return self.struct(fields_of(field))

    def struct(self, fields: list[dict]) -> dict:
        enc = Encoder(self.schema, self.version)
        return {
            key_of(f["name"]): self.value(f, enc._sub_fields)
            for f in fields
            if _within(f["versions"], self.version)
        }


def sample(schema: Schema, version: int, seed: int, nulls: bool = False) -> dict:
    return Sampler(schema, version, random.Random(seed), nulls).struct(schema.fields)


# -- batches, logs and snapshots ------------------------------------------------------------------


class _ControlBatchBuilder(DefaultRecordBatchBuilder):
    def _get_attributes(self, include_compression_type=True):
        return super()._get_attributes(include_compression_type) | self.CONTROL_MASK


def batch(
    base_offset: int,
    records: list[tuple[bytes | None, bytes | None]],
    *,
    control: bool = False,
    epoch: int = 1,
    timestamp: int = 1_700_000_000_000,
) -> bytes:
    """A v2 record batch at `base_offset` holding (key, value) records, with a partition leader epoch."""
    cls = _ControlBatchBuilder if control else DefaultRecordBatchBuilder
    b = cls(2, 0, False, -1, -1, -1, 1 << 24)
    for i, (key, value) in enumerate(records):
        b.append(i, timestamp=timestamp + i, key=key, value=value, headers=[])
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, epoch)
    return recrc(buf)


def recrc(buf: bytearray | bytes) -> bytes:
    """Recompute a v2 batch's CRC-32C (over attributes … end) after the bytes were changed."""
    from kafka.record.util import calc_crc32c

    buf = bytearray(buf)
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


def header_record(schemas: dict[str, Schema], timestamp: int = 1_700_000_000_000) -> tuple[bytes, bytes]:
    s = schemas["SnapshotHeaderRecord"]
    return control_key(s), encode_body(s, 0, {"version": 0, "lastContainedLogTimestamp": timestamp})


def footer_record(schemas: dict[str, Schema]) -> tuple[bytes, bytes]:
    s = schemas["SnapshotFooterRecord"]
    return control_key(s), encode_body(s, 0, {"version": 0})


def snapshot_bytes(
    schemas: dict[str, Schema],
    values: list[bytes],
    *,
    epoch: int = 1,
    footer: bool = True,
    per_batch: int = 3,
) -> bytes:
    """A snapshot file as KRaft writes it: a control batch with the SnapshotHeader at offset 0, the
    metadata record values in batches, then a control batch with the SnapshotFooter."""
    out = batch(0, [header_record(schemas)], control=True, epoch=epoch)
    offset = 1
    for i in range(0, len(values), per_batch):
        chunk = values[i : i + per_batch]
        out += batch(offset, [(None, v) for v in chunk], epoch=epoch)
        offset += len(chunk)
    if footer:
        out += batch(offset, [footer_record(schemas)], control=True, epoch=epoch)
    return out


def sample_values(schemas: dict[str, Schema], count: int, seed: int = 1) -> list[bytes]:
    """`count` framed metadata records of every type and version in turn, with sample fields."""
    metadata = [s for s in schemas.values() if s.kind == "metadata"]
    pairs = [(s, v) for s in metadata for v in s.versions]
    return [
        frame(s, v, sample(s, v, seed + i)) for i, (s, v) in zip(range(count), _cycle(pairs), strict=False)
    ]


def _cycle(items):
    while True:
        yield from items


def _int32_array(values: list[int] | None) -> bytes:
    """A compact nullable int32 array: unsigned varint length + 1 (0 for null), then the values."""
    if values is None:
        return b"\x00"
    return _uvarint(len(values) + 1) + b"".join(struct.pack(">i", v) for v in values)


def pre_release_partition_record_v1(data: dict) -> bytes:
    """A PartitionRecord value at version 1 as Kafka trunk builds of late 2023 wrote it (before 3.7):
    the v0 fields (no Directories), then KIP-966's EligibleLeaderReplicas and LastKnownElr as nullable
    tagged int32 arrays, tags 1 and 2 (LeaderRecoveryState stays tag 0). Written by hand from those
    facts, not from a schema file (the released schemas give v1 to Directories and ELR to v2); a tagged
    field is written when its key is in `data`."""
    body = struct.pack(">i", data["partitionId"]) + _uuid_bytes(data["topicId"])
    for key in ("replicas", "isr", "removingReplicas", "addingReplicas"):
        body += _int32_array(data[key])
    body += struct.pack(">i", data["leader"])
    body += struct.pack(">ii", data["leaderEpoch"], data["partitionEpoch"])
    tagged = []
    if "leaderRecoveryState" in data:
        tagged.append((0, struct.pack(">b", data["leaderRecoveryState"])))
    for tag, key in ((1, "eligibleLeaderReplicas"), (2, "lastKnownElr")):
        if key in data:
            tagged.append((tag, _int32_array(data[key])))
    body += _uvarint(len(tagged)) + b"".join(_uvarint(t) + _uvarint(len(p)) + p for t, p in tagged)
    return _uvarint(1) + _uvarint(3) + _uvarint(1) + body  # frame 1, PartitionRecord (apiKey 3), v1
