"""What the --json contract is made of (render/contract.py): an object kind (`Kind`: its `type`, fields
and their JSON types) and the few objects every command builds alike: a partition named (partition_fields),
a note, a file that could not be read. Small, so that a renderer that builds them loads no kind table."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from kafka_tools.errors import missing_line
from kafka_tools.format.kinds import topic_partition
from kafka_tools.format.shared_methods import FrozenSharedMethods

_JSON_TYPES = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "list": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


@dataclass(init=False, repr=False, eq=False)
class Kind(FrozenSharedMethods):
    """One object kind: its `type` value, its fields (name -> `int`, `str|null`, …) and what it says."""

    type: str
    doc: str
    fields: dict[str, str]
    optional: frozenset[str] = field(default_factory=frozenset)
    open: bool = False

    def __init__(
        self,
        type: str,
        doc: str,
        fields: dict[str, str],
        optional: frozenset[str] | None = None,
        open: bool = False,
    ) -> None:
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "doc", doc)
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "optional", frozenset() if optional is None else optional)
        object.__setattr__(self, "open", open)

    def problems(self, obj: dict[str, Any]) -> list[str]:
        """What in `obj` breaks this kind (empty: it conforms)."""
        out = []
        for name, types in self.fields.items():
            if name not in obj:
                if name not in self.optional:
                    out.append(f"{self.type}: missing field {name!r}")
                continue
            if not any(_JSON_TYPES[t](obj[name]) for t in types.split("|")):
                out.append(f"{self.type}.{name}: {obj[name]!r} is not {types}")
        if not self.open:
            out += [f"{self.type}: undocumented field {name!r}" for name in obj if name not in self.fields]
        return out


def shape(type_: str, doc: str, optional: tuple[str, ...] = (), open_: bool = False, **fields: str) -> Kind:
    return Kind(type_, doc, {"type": "str", **fields}, frozenset(optional), open_)


def partition_fields(path: str | os.PathLike | None, dir_name: str | None = None) -> dict[str, Any]:
    """How every object names a partition directory: `topic`, `partition` (an integer), `dir` (its name,
    `orders-0`) and `path`; null where unknown (a file given on its own, a path that was not read)."""
    if path is None:
        return {"topic": None, "partition": None, "dir": dir_name, "path": None}
    text = os.fspath(path)
    name = dir_name if dir_name is not None else os.path.basename(text.rstrip("/"))
    parsed = topic_partition(name)
    return {
        "topic": parsed[0] if parsed else None,
        "partition": parsed[1] if parsed else None,
        "dir": name,
        "path": text,
    }


PARTITION_REF = {"topic": "str|null", "partition": "int|null", "dir": "str|null", "path": "str|null"}


def note_object(message: str, error: bool) -> dict[str, Any]:
    return {"type": "note", "severity": "error" if error else "warning", "message": message}


def error_object(file: str, exc: Any) -> dict[str, Any]:
    """A file or directory that could not be read (`exc` a KtoolError), as stderr said it."""
    return {"type": "error", "file": file, "message": str(exc), "exitCode": exc.exit_code}


def missing_object(path: str) -> dict[str, Any]:
    """A path given that is not there (exit 3), as stderr says it."""
    return {"type": "error", "file": path, "message": missing_line(path), "exitCode": 3}
