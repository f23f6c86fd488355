"""The table-driven decoder of KRaft records (pure Python; `_speedups` runs the same table in C).

`schemas_table.SCHEMAS` is compiled once, at import, into one small program per record type and
version: a tuple of field steps, each `(key, op, arg)`, in schema order. Tagged fields are steps
too (op `_TAGGED`, arg their default) so the dict keeps the schema's order when the tagged section,
read last, overwrites them. Every length is checked against the bytes left before anything is
sliced, and every problem raises `MetadataDecodeError` with the byte offset inside the value.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

from kafka_tools.format import accel
from kafka_tools.format.kraft.pre_release import PRE_RELEASE_LAYOUTS
from kafka_tools.format.kraft.schemas_table import SCHEMAS

FRAME_VERSION = 1  # MetadataRecordSerde's DEFAULT_FRAME_VERSION
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString()

# Field operations (the C interpreter in csrc/kraft.c uses the same numbers).
_I8, _I16, _I32, _I64, _U16, _U32, _F64, _BOOL, _UUID, _STR, _BYTES, _ARRAY, _STRUCT, _TAGGED = range(14)
_FIXED = {
    _I8: struct.Struct(">b"),
    _I16: struct.Struct(">h"),
    _I32: struct.Struct(">i"),
    _I64: struct.Struct(">q"),
    _U16: struct.Struct(">H"),
    _U32: struct.Struct(">I"),
    _F64: struct.Struct(">d"),
}
_SCALAR_OPS = {
    "int8": _I8,
    "int16": _I16,
    "int32": _I32,
    "int64": _I64,
    "uint16": _U16,
    "uint32": _U32,
    "float64": _F64,
    "bool": _BOOL,
    "uuid": _UUID,
    "string": _STR,
    "bytes": _BYTES,
}


class MetadataDecodeError(ValueError):
    """A known record's bytes do not match its schema; `position` is the byte offset in the value."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at byte {position})")
        self.message = message
        self.position = position


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One decoded KRaft record: a metadata record (framed) or a control record.

    `fields` holds every field valid at `version`, keyed by the schema's name with a lower-case first
    letter, absent tagged fields at their default. An unknown type or version has `known` False,
    `fields` empty and its bytes in `raw` (the record's value). `layout` is None for a record decoded
    by the released schema, else the label of the known pre-release layout it was decoded with
    (`pre_release.py`).
    """

    frame_version: int
    type_id: int
    type_name: str
    version: int
    fields: dict[str, Any]
    known: bool
    raw: bytes
    layout: str | None = None


@dataclass(frozen=True)
class Program:
    """A struct at one version: its steps and the tagged steps by tag."""

    steps: tuple[tuple[str, int, Any], ...]
    tags: dict[int, tuple[str, int, Any]]
    flexible: bool


def _in(versions: tuple[int, int] | None, version: int) -> bool:
    return versions is not None and versions[0] <= version and (versions[1] < 0 or version <= versions[1])


def lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


def _default(type_: str, default: str | None, nullable: bool) -> Any:
    """A field's value when absent, as Kafka's generated classes initialise it."""
    if default == "null":
        return None
    if type_.startswith("[]"):
        return []
    if type_ == "bool":
        return default == "true"
    if type_ in ("string",):
        return default or ""
    if type_ == "bytes":
        return b""
    if type_ == "uuid":
        return ZERO_UUID
    if type_ == "float64":
        return float(default or 0)
    if type_ == "struct":
        return None if nullable else {}
    return int(default or "0", 0)


def _op(type_: str, sub: tuple, version: int, flexible: bool, nullable: bool) -> tuple[int, Any]:
    if type_.startswith("[]"):
        elem_op, elem_arg = _op(type_[2:], sub, version, flexible, False)
        return _ARRAY, (elem_op, elem_arg, nullable)
    if type_ == "struct":
        return _STRUCT, (compile_struct(sub, version, flexible), nullable)
    op = _SCALAR_OPS[type_]
    return op, nullable


def compile_struct(fields: tuple, version: int, flexible: bool) -> Program:
    steps = []
    tags = {}
    for name, type_, versions, nullable_v, tagged_v, tag, default, sub in fields:
        if not _in(versions, version):
            continue
        key = lower_first(name)
        nullable = _in(nullable_v, version)
        op, arg = _op(type_, sub, version, flexible, nullable)
        if flexible and _in(tagged_v, version):
            steps.append((key, _TAGGED, _default(type_, default, nullable)))
            tags[tag] = (key, op, arg)
        elif not _in(tagged_v, version):
            steps.append((key, op, arg))
    return Program(tuple(steps), tags, flexible)


@dataclass(frozen=True)
class MessageType:
    name: str
    kind: str  # "metadata" | "control"
    type_id: int
    low: int
    high: int
    programs: dict[int, Program]


def _compile_all() -> tuple[dict[int, MessageType], dict[int, MessageType]]:
    metadata: dict[int, MessageType] = {}
    control: dict[int, MessageType] = {}
    for name, kind, type_id, valid, flexible_v, fields in SCHEMAS:
        low, high = valid
        programs = {v: compile_struct(fields, v, _in(flexible_v, v)) for v in range(low, high + 1)}
        (metadata if kind == "metadata" else control)[type_id] = MessageType(
            name, kind, type_id, low, high, programs
        )
    return metadata, control


METADATA_TYPES, CONTROL_TYPES = _compile_all()

# (type id, version) -> ((label, program), …): the known pre-release layouts, tried in order.
PRE_RELEASE_PROGRAMS: dict[tuple[int, int], tuple[tuple[str, Program], ...]] = {}
for _type_id, _version, _label, _fields in PRE_RELEASE_LAYOUTS:
    PRE_RELEASE_PROGRAMS[(_type_id, _version)] = (
        *PRE_RELEASE_PROGRAMS.get((_type_id, _version), ()),
        (_label, compile_struct(_fields, _version, True)),
    )


def _holds_bytes(program: Program) -> bool:
    for _key, op, arg in (*program.steps, *program.tags.values()):
        if op == _BYTES:
            return True
        if op == _ARRAY and (arg[0] == _BYTES or (arg[0] == _STRUCT and _holds_bytes(arg[1][0]))):
            return True
        if op == _STRUCT and _holds_bytes(arg[0]):
            return True
    return False


# Record types whose fields can hold `bytes` (renderers must convert those; the rest is JSON as is).
TYPES_WITH_BYTES = frozenset(
    t.name
    for t in (*METADATA_TYPES.values(), *CONTROL_TYPES.values())
    if any(map(_holds_bytes, t.programs.values()))
)


def _need(buf_len: int, pos: int, n: int, what: str) -> None:
    if n > buf_len - pos:
        raise MetadataDecodeError(f"{what} needs {n} bytes, {buf_len - pos} left", pos)


def read_uvarint(buf: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (32 bits) at `pos`: (value, position after it)."""
    start = pos
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise MetadataDecodeError(f"truncated varint for {what}", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if value > 0xFFFFFFFF:
                raise MetadataDecodeError(f"varint for {what} exceeds 32 bits", start)
            return value, pos
        shift += 7
        if shift >= 35:
            raise MetadataDecodeError(f"varint for {what} is longer than 5 bytes", start)


def _length(buf: bytes, pos: int, end: int, key: str, flexible: bool, wide: bool, nullable: bool):
    start = pos
    if flexible:
        n, pos = read_uvarint(buf, pos, end, f"{key} length")
        n -= 1
    else:
        st = _FIXED[_I32 if wide else _I16]
        _need(end, pos, st.size, f"{key} length")
        (n,) = st.unpack_from(buf, pos)
        pos += st.size
    if n < 0:
        if n != -1:
            raise MetadataDecodeError(f"invalid length {n} for {key}", start)
        if not nullable:
            raise MetadataDecodeError(f"non-nullable field {key} is null", start)
        return None, pos
    if n > end - pos:
        raise MetadataDecodeError(f"{key} claims {n} bytes, {end - pos} left", start)
    return n, pos


def _value(buf: bytes, pos: int, end: int, key: str, op: int, arg: Any, flexible: bool) -> tuple[Any, int]:
    st = _FIXED.get(op)
    if st is not None:
        if st.size > end - pos:
            raise MetadataDecodeError(f"{key} needs {st.size} bytes, {end - pos} left", pos)
        return st.unpack_from(buf, pos)[0], pos + st.size
    if op == _STR:
        n, pos = _length(buf, pos, end, key, flexible, False, arg)
        if n is None:
            return None, pos
        try:
            return buf[pos : pos + n].decode("utf-8"), pos + n
        except UnicodeDecodeError as exc:
            raise MetadataDecodeError(f"invalid UTF-8 in {key}", pos + exc.start) from None
    if op == _UUID:
        if end - pos < 16:
            raise MetadataDecodeError(f"{key} needs 16 bytes, {end - pos} left", pos)
        return base64.urlsafe_b64encode(buf[pos : pos + 16])[:22].decode("ascii"), pos + 16
    if op == _BOOL:
        if pos >= end:
            raise MetadataDecodeError(f"{key} needs 1 byte, 0 left", pos)
        b = buf[pos]
        if b > 1:
            raise MetadataDecodeError(f"invalid boolean {b} for {key}", pos)
        return b == 1, pos + 1
    if op == _BYTES:
        n, pos = _length(buf, pos, end, key, flexible, True, arg)
        if n is None:
            return None, pos
        return bytes(buf[pos : pos + n]), pos + n
    if op == _ARRAY:
        elem_op, elem_arg, nullable = arg
        start = pos
        n, pos = _length(buf, pos, end, key, flexible, True, nullable)
        if n is None:
            return None, pos
        if n > end - pos:  # every element takes at least one byte
            raise MetadataDecodeError(f"array {key} claims {n} elements with {end - pos} bytes left", start)
        out = []
        append = out.append
        for _ in range(n):
            v, pos = _value(buf, pos, end, key, elem_op, elem_arg, flexible)
            append(v)
        return out, pos
    if op == _STRUCT:
        program, nullable = arg
        if nullable:
            if pos >= end:
                raise MetadataDecodeError(f"{key} presence marker needs 1 byte, 0 left", pos)
            marker = buf[pos]
            pos += 1
            if marker == 0xFF:
                return None, pos
            if marker != 1:
                raise MetadataDecodeError(f"invalid presence marker {marker} for {key}", pos - 1)
        return decode_struct(buf, pos, end, program)
    raise AssertionError(f"unknown op {op}")


def decode_struct(buf: bytes, pos: int, end: int, program: Program) -> tuple[dict[str, Any], int]:
    """Decode one struct (a record body or a nested struct) at `pos`: (fields, position after it)."""
    out: dict[str, Any] = {}
    flexible = program.flexible
    for key, op, arg in program.steps:
        if op == _TAGGED:
            out[key] = arg.copy() if type(arg) in (list, dict) else arg
            continue
        out[key], pos = _value(buf, pos, end, key, op, arg, flexible)
    if flexible:
        start = pos
        count, pos = read_uvarint(buf, pos, end, "tagged field count")
        if count * 2 > end - pos:
            raise MetadataDecodeError(f"tagged field count {count} exceeds the {end - pos} bytes left", start)
        last = -1
        tags = program.tags
        for _ in range(count):
            tag_pos = pos
            tag, pos = read_uvarint(buf, pos, end, "tag")
            if tag <= last:
                raise MetadataDecodeError(f"tagged field {tag} out of order or repeated", tag_pos)
            last = tag
            size, pos = read_uvarint(buf, pos, end, f"tagged field {tag} size")
            if size > end - pos:
                raise MetadataDecodeError(f"tagged field {tag} needs {size} bytes, {end - pos} left", pos)
            field = tags.get(tag)
            if field is None:  # a tag this version does not know: skipped, as Kafka keeps it raw
                pos += size
                continue
            key, op, arg = field
            value, after = _value(buf, pos, pos + size, key, op, arg, flexible)
            if after != pos + size:
                raise MetadataDecodeError(
                    f"tagged field {key} (tag {tag}) left {pos + size - after} of {size} bytes unread", after
                )
            out[key] = value
            pos = after
    return out, pos


def decode_body(program: Program, buf: bytes, pos: int, what: str) -> dict[str, Any]:
    fields, after = decode_struct(buf, pos, len(buf), program)
    if after != len(buf):
        raise MetadataDecodeError(f"{len(buf) - after} bytes of garbage after {what}", after)
    return fields


def read_frame(value: bytes, label: str) -> tuple[int, int, int]:
    """The header `AbstractApiMessageSerde` writes before a message (`__cluster_metadata`'s and
    `__remote_log_metadata`'s values): unsigned varints frame version (1), apiKey, version.
    Returns (apiKey, version, position of the body); `label` names the topic's records in the error
    for another frame version. (kraft.c reads the same header for its two tables.)"""
    end = len(value)
    frame, pos = read_uvarint(value, 0, end, "frame version")
    if frame != FRAME_VERSION:
        raise MetadataDecodeError(f"unknown {label} frame version {frame} (expected {FRAME_VERSION})", 0)
    type_id, pos = read_uvarint(value, pos, end, "record type")
    version, pos = read_uvarint(value, pos, end, "record version")
    return type_id, version, pos


def decode_metadata_record_py(value: bytes) -> MetadataRecord:
    """Decode a `__cluster_metadata` record's value: frame version 1, apiKey, version, body.

    An unknown record type or version gives `known=False` (never an exception); a bad frame version
    or a body that does not match its schema raises `MetadataDecodeError`. (The reference in pure
    Python; `decode_metadata_record` is the C interpreter of the same programs when it is built.)
    """
    value = bytes(value)
    frame = FRAME_VERSION
    type_id, version, pos = read_frame(value, "metadata")
    mt = METADATA_TYPES.get(type_id)
    if mt is None:
        return MetadataRecord(frame, type_id, "Unknown", version, {}, False, value)
    program = mt.programs.get(version)
    if program is None:
        return MetadataRecord(frame, type_id, mt.name, version, {}, False, value)
    try:
        fields = decode_body(program, value, pos, f"{mt.name} v{version}")
    except MetadataDecodeError:
        record = decode_pre_release(value)
        if record is None:
            raise
        return record
    return MetadataRecord(frame, type_id, mt.name, version, fields, True, value)


def decode_pre_release(value: bytes) -> MetadataRecord | None:
    """The record decoded by the first known pre-release layout of its type and version that takes
    every byte of it (marked with the layout's label), or None. Only for a record the released
    schema failed on: a record the release decodes is never reinterpreted."""
    value = bytes(value)
    try:
        type_id, version, pos = read_frame(value, "metadata")
    except MetadataDecodeError:
        return None
    layouts = PRE_RELEASE_PROGRAMS.get((type_id, version))
    if not layouts:
        return None
    name = METADATA_TYPES[type_id].name
    for label, program in layouts:
        try:
            fields = decode_body(program, value, pos, label)
        except MetadataDecodeError:
            continue
        return MetadataRecord(FRAME_VERSION, type_id, name, version, fields, True, value, label)
    return None


def decode_control_record(key: bytes | None, value: bytes | None) -> MetadataRecord:
    """Decode a KRaft control record: the key is int16 version + int16 control type, the value the
    message body. Kafka reads the value at the schema's highest version; a record written by an
    older Kafka at a lower version is accepted at the highest version it decodes fully at."""
    if key is None or len(key) < 4:
        raise MetadataDecodeError("control record key is shorter than 4 bytes", 0)
    key_version, type_id = struct.unpack_from(">hh", key, 0)
    raw = b"" if value is None else bytes(value)
    mt = CONTROL_TYPES.get(type_id)
    if mt is None:
        return MetadataRecord(key_version, type_id, "Unknown", 0, {}, False, raw)
    if value is None:
        raise MetadataDecodeError(f"{mt.name} has a null value", 0)
    first_error: MetadataDecodeError | None = None
    for version in range(mt.high, mt.low - 1, -1):
        try:
            fields = decode_body(mt.programs[version], raw, 0, f"{mt.name} v{version}")
        except MetadataDecodeError as exc:
            first_error = first_error or exc
            continue
        return MetadataRecord(key_version, type_id, mt.name, version, fields, True, raw)
    assert first_error is not None
    raise first_error


# The attributes kraft.c fills, in its order: frame version, type id, type name, version, fields,
# known, raw, layout (None: a record class without it).
RECORD_ATTRS = ("frame_version", "type_id", "type_name", "version", "fields", "known", "raw", "layout")


def _speedups():
    """The C interpreter (format/accel), given the compiled programs. Bound at import, not looked up
    a record: KRaft records are small and many (KTOOL_PURE_PYTHON=1 turns it off)."""
    ext = accel.C
    if ext is None or not hasattr(ext, "kraft_decode_metadata"):
        return None
    types = {type_id: (t.name, t.programs) for type_id, t in METADATA_TYPES.items()}
    # the C interpreter knows the released schemas; a value it fails on is handed to the known
    # pre-release layouts (Python; rare) before its error stands
    ext.kraft_configure(
        0, "metadata", types, MetadataRecord, RECORD_ATTRS, MetadataDecodeError, decode_pre_release
    )
    return ext


_C = _speedups()
HAS_SPEEDUPS = _C is not None
decode_metadata_record = _C.kraft_decode_metadata if _C is not None else decode_metadata_record_py
