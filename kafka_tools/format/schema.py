"""A tiny table-driven decoder for Kafka's JSON message schemas.

A schema is plain data mirroring Kafka's ``*.json`` message definitions: a :class:`Schema` holds a
tuple of :class:`Field` objects plus the version ranges (``validVersions`` / ``flexibleVersions``).
Version ranges are written exactly as in the JSON files (``"0+"``, ``"3"``, ``"0-1"``, ``"none"``).

:func:`decode` turns bytes into a ``dict`` keyed by the JSON field names with a lower-case first
letter (``LeaderEpoch`` -> ``leaderEpoch``).  ``bytes`` values stay ``bytes``; ``uuid`` values are
rendered the way Kafka prints them (URL-safe base64 without padding, as ``Uuid.toString()``).

Encoding rules (Kafka protocol):

* non-flexible versions: strings have an int16 length, bytes and arrays an int32 length; ``-1``
  means null;
* flexible versions: "compact" strings/bytes/arrays whose length is an unsigned varint holding
  ``length + 1`` (``0`` means null), and every struct ends with a tagged-field section
  (uvarint count, then per field: uvarint tag, uvarint size, payload).  Tagged fields declared by the
  schema are decoded, unknown ones are skipped;
* nullable structs are preceded by an int8 marker (``-1`` null, ``1`` present).

Every length is checked against the bytes that remain *before* anything is sliced or allocated, and
every problem raises :class:`SchemaError` carrying the byte position.  This module does no I/O.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

from kafka_tools.format.plural import plural

__all__ = [
    "F",
    "Field",
    "Schema",
    "SchemaError",
    "Versions",
    "decode",
    "decode_versioned",
    "lower_first",
]


class SchemaError(ValueError):
    """Raised when bytes do not match a schema; ``position`` is the byte offset of the problem."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at byte {position})")
        self.message = message
        self.position = position


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``high is None`` means open-ended (``"3+"``)."""

    low: int
    high: int | None

    @classmethod
    def parse(cls, spec: str | None) -> Versions | None:
        """Parse a Kafka version spec: ``"0+"``, ``"3"``, ``"0-4"``; ``"none"``/``None`` -> ``None``."""
        if spec is None or spec == "none":
            return None
        if spec.endswith("+"):
            return cls(int(spec[:-1]), None)
        if "-" in spec:
            lo, hi = spec.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(spec), int(spec))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return version >= self.low and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self.high is None:
            return f"{self.low}+"
        if self.high == self.low:
            return str(self.low)
        return f"{self.low}-{self.high}"


def _in(versions: Versions | None, version: int) -> bool:
    return versions is not None and version in versions


# Fixed-size primitive types: struct format and size.
_FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "uint16": struct.Struct(">H"),
    "uint32": struct.Struct(">I"),
    "float64": struct.Struct(">d"),
}
_SCALARS = frozenset(_FIXED) | {"bool", "uuid", "string", "bytes", "records"}


@dataclass(frozen=True)
class Field:
    """One field of a schema.

    ``type`` is a scalar type (``int8``/``int16``/``int32``/``int64``/``uint16``/``uint32``/``float64``/
    ``bool``/``uuid``/``string``/``bytes``), ``"struct"`` (with ``fields``), or an array written as in
    Kafka's JSON: ``"[]int32"``, ``"[]string"``, ``"[]struct"`` (with ``fields``).
    """

    name: str
    type: str
    versions: Versions | None
    nullable_versions: Versions | None = None
    fields: tuple[Field, ...] = ()
    tagged_versions: Versions | None = None
    tag: int | None = None
    default: Any = None

    @property
    def key(self) -> str:
        """The dict key used for this field (JSON name with a lower-case first letter)."""
        return lower_first(self.name)


def F(
    name: str,
    type: str,
    versions: str | None = "0+",
    *,
    nullable: str | None = None,
    fields: tuple[Field, ...] = (),
    tagged: str | None = None,
    tag: int | None = None,
    default: Any = None,
) -> Field:
    """Build a :class:`Field` from JSON-style version strings (``versions="3+"``, ``nullable="0+"``)."""
    base = type[2:] if type.startswith("[]") else type
    if base not in _SCALARS and base != "struct":
        raise ValueError(f"unknown type {type!r} for field {name}")
    if base == "struct" and not fields:
        raise ValueError(f"struct field {name} needs sub-fields")
    if (tagged is None) != (tag is None):
        raise ValueError(f"field {name}: tagged versions and tag id go together")
    if tagged is not None and versions == "0+":
        versions = tagged
    return Field(
        name=name,
        type=type,
        versions=Versions.parse(versions),
        nullable_versions=Versions.parse(nullable),
        fields=tuple(fields),
        tagged_versions=Versions.parse(tagged),
        tag=tag,
        default=default,
    )


@dataclass(frozen=True)
class Schema:
    """A message schema: name, fields, ``validVersions`` and ``flexibleVersions``."""

    name: str
    fields: tuple[Field, ...]
    valid_versions: Versions
    flexible_versions: Versions | None = None

    @classmethod
    def make(cls, name: str, valid: str, flexible: str | None, fields: tuple[Field, ...]) -> Schema:
        """Build a schema from JSON-style strings, e.g. ``Schema.make("X", "0-4", "4+", (...))``."""
        valid_versions = Versions.parse(valid)
        if valid_versions is None:
            raise ValueError(f"{name}: validVersions cannot be none")
        return cls(name, tuple(fields), valid_versions, Versions.parse(flexible))

    def is_flexible(self, version: int) -> bool:
        """True if ``version`` uses the compact/tagged-field encoding."""
        return _in(self.flexible_versions, version)


def lower_first(name: str) -> str:
    """``"LeaderEpoch"`` -> ``"leaderEpoch"`` (the dict key convention of this module)."""
    return name[:1].lower() + name[1:]


class _Reader:
    """Bounds-checked cursor over a ``bytes``/``memoryview`` (``end`` is exclusive)."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int, end: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def need(self, n: int, what: str) -> None:
        if n < 0:
            raise SchemaError(f"negative length {n} for {what}", self.pos)
        if n > self.remaining:
            raise SchemaError(
                f"{what} needs {plural(n, 'byte')}, {plural(self.remaining, 'byte')} left", self.pos
            )

    def fixed(self, kind: str, what: str) -> Any:
        st = _FIXED[kind]
        self.need(st.size, what)
        (value,) = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return value

    def take(self, n: int, what: str) -> bytes:
        self.need(n, what)
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def uvarint(self, what: str) -> int:
        start = self.pos
        value = 0
        for shift in range(0, 35, 7):
            if self.pos >= self.end:
                raise SchemaError(f"truncated varint for {what}", start)
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                if value > 0xFFFFFFFF:
                    raise SchemaError(f"varint for {what} exceeds 32 bits", start)
                return value
        raise SchemaError(f"varint for {what} is longer than 5 bytes", start)


# Minimum encoded size of one array element, used to reject absurd element counts up front.
def _min_size(type_: str, fields: tuple[Field, ...], version: int, flexible: bool) -> int:
    if type_ in _FIXED:
        return _FIXED[type_].size
    if type_ == "bool":
        return 1
    if type_ == "uuid":
        return 16
    if type_ == "string":
        return 1 if flexible else 2
    if type_ in ("bytes", "records"):
        return 1 if flexible else 4
    # struct
    total = 1 if flexible else 0  # tagged-field count
    for f in fields:
        if _in(f.versions, version) and not _in(f.tagged_versions, version):
            if f.type.startswith("[]"):
                total += 1 if flexible else 4
            elif f.type == "struct" and _in(f.nullable_versions, version):
                total += 1
            else:
                total += _min_size(f.type, f.fields, version, flexible)
    return max(total, 1)


class _Decoder:
    __slots__ = ("version", "flexible", "r")

    def __init__(self, version: int, flexible: bool, reader: _Reader) -> None:
        self.version = version
        self.flexible = flexible
        self.r = reader

    # -- lengths -------------------------------------------------------------------------------
    def _length(self, field: Field, kind: str) -> int | None:
        """Read a string/bytes/array length; ``None`` for null (checked against nullability)."""
        r = self.r
        start = r.pos
        what = f"{field.name} length"
        if self.flexible:
            n = r.uvarint(what) - 1
        elif kind == "string":
            n = r.fixed("int16", what)
        else:
            n = r.fixed("int32", what)
        if n < 0:
            if n != -1:
                raise SchemaError(f"invalid length {n} for {field.name}", start)
            if not _in(field.nullable_versions, self.version):
                raise SchemaError(f"non-nullable field {field.name} was serialized as null", start)
            return None
        return n

    # -- values --------------------------------------------------------------------------------
    def _scalar(self, field: Field, type_: str) -> Any:
        r = self.r
        if type_ in _FIXED:
            return r.fixed(type_, field.name)
        if type_ == "bool":
            start = r.pos
            b = r.take(1, field.name)[0]
            if b not in (0, 1):
                raise SchemaError(f"invalid boolean value {b} for {field.name}", start)
            return b == 1
        if type_ == "uuid":
            raw = r.take(16, field.name)
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        if type_ == "string":
            n = self._length(field, "string")
            if n is None:
                return None
            start = r.pos
            raw = r.take(n, field.name)
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SchemaError(f"invalid UTF-8 in {field.name}: {exc.reason}", start + exc.start) from None
        # bytes / records
        n = self._length(field, "bytes")
        if n is None:
            return None
        return r.take(n, field.name)

    def _element(self, field: Field, type_: str) -> Any:
        if type_ == "struct":
            return self.struct(field.fields)
        return self._scalar(field, type_)

    def value(self, field: Field, tagged: bool = False) -> Any:
        r = self.r
        if field.type.startswith("[]"):
            elem = field.type[2:]
            start = r.pos
            n = self._length(field, "array")
            if n is None:
                return None
            min_size = _min_size(elem, field.fields, self.version, self.flexible)
            if n * min_size > r.remaining:
                raise SchemaError(
                    f"array {field.name} claims {plural(n, 'element')} "
                    f"(at least {plural(n * min_size, 'byte')}) with {plural(r.remaining, 'byte')} left",
                    start,
                )
            return [self._element(field, elem) for _ in range(n)]
        if field.type == "struct":
            if tagged and _in(field.nullable_versions, self.version):
                # A tagged nullable struct says whether it is there in an unsigned varint, 0 for null
                # (Kafka's generated readers: `readUnsignedVarint() > 0`), not in the int8 of the rest.
                if r.uvarint(f"{field.name} presence marker") == 0:
                    return None
                return self.struct(field.fields)
            if _in(field.nullable_versions, self.version):
                start = r.pos
                marker = r.fixed("int8", f"{field.name} presence marker")
                if marker < 0:
                    return None
                if marker != 1:
                    raise SchemaError(f"invalid presence marker {marker} for {field.name}", start)
            return self.struct(field.fields)
        return self._scalar(field, field.type)

    def struct(self, fields: tuple[Field, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        tagged: dict[int, Field] = {}
        for field in fields:
            if _in(field.tagged_versions, self.version):
                if self.flexible and field.tag is not None:
                    tagged[field.tag] = field
                    out[field.key] = field.default
                continue
            if not _in(field.versions, self.version):
                continue
            out[field.key] = self.value(field)
        if self.flexible:
            self._tagged_section(tagged, out)
        return out

    def _tagged_section(self, known: dict[int, Field], out: dict[str, Any]) -> None:
        r = self.r
        count_pos = r.pos
        count = r.uvarint("tagged field count")
        if count * 2 > r.remaining:  # every tagged field takes at least 2 bytes (tag + size)
            raise SchemaError(
                f"tagged field count {count} exceeds the {plural(r.remaining, 'byte')} left", count_pos
            )
        seen: set[int] = set()
        for _ in range(count):
            tag_pos = r.pos
            tag = r.uvarint("tag")
            if tag in seen:
                raise SchemaError(f"duplicate tagged field {tag}", tag_pos)
            seen.add(tag)
            size = r.uvarint(f"tagged field {tag} size")
            r.need(size, f"tagged field {tag}")
            field = known.get(tag)
            if field is None:
                r.pos += size  # unknown tagged field: skip
                continue
            end = r.pos + size
            saved_end = r.end
            r.end = end
            try:
                out[field.key] = self.value(field, tagged=True)
                if r.pos != end:
                    raise SchemaError(
                        f"tagged field {field.name} (tag {tag}) left {end - r.pos} of "
                        f"{plural(size, 'byte')} unread",
                        r.pos,
                    )
            finally:
                r.end = saved_end


def decode(
    schema: Schema,
    version: int,
    buf: bytes | bytearray | memoryview,
    *,
    offset: int = 0,
    allow_trailing: bool = False,
) -> dict[str, Any]:
    """Decode ``buf[offset:]`` as ``schema`` at ``version`` and return a dict of its fields.

    Raises :class:`SchemaError` for an unsupported version, any truncated/invalid/oversized field,
    and for bytes left over after the last field (unless ``allow_trailing``).  In flexible versions
    the trailing tagged-field section is part of the message, so it is consumed, not "left over".
    """
    if version not in schema.valid_versions:
        raise SchemaError(
            f"{schema.name} version {version} is not supported (valid versions {schema.valid_versions})",
            offset,
        )
    if offset < 0 or offset > len(buf):
        raise SchemaError(f"offset {offset} is outside a buffer of {len(buf)} bytes", offset)
    reader = _Reader(buf, offset, len(buf))
    result = _Decoder(version, schema.is_flexible(version), reader).struct(schema.fields)
    if reader.remaining and not allow_trailing:
        raise SchemaError(
            f"{plural(reader.remaining, 'unexpected trailing byte')} after {schema.name} v{version}",
            reader.pos,
        )
    return result


def decode_versioned(
    schema: Schema, buf: bytes | bytearray | memoryview, *, allow_trailing: bool = False
) -> tuple[int, dict[str, Any]]:
    """Decode a buffer that starts with an int16 version followed by ``schema`` at that version."""
    if len(buf) < 2:
        raise SchemaError(
            f"{schema.name}: need a 2-byte version prefix but got {plural(len(buf), 'byte')}", 0
        )
    (version,) = _FIXED["int16"].unpack_from(buf, 0)
    return version, decode(schema, version, buf, offset=2, allow_trailing=allow_trailing)
