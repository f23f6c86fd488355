"""The one way a --json object is written: compact (no spaces), UTF-8 as is, one object a line.

Scripts grep these lines (`grep '"kind":"crc-mismatch"'`), so every command writes them alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from kafka_tools.compact_json import encoder

_ENCODE = encoder(str)  # the one encoder; what JSON has no type for (a Path) as its text


def dumps(obj: Any) -> str:
    return _ENCODE(obj)


def emit(out: IO[str], obj: dict) -> None:
    out.write(_ENCODE(obj) + "\n")


def emit_all(out: IO[str], objs: Iterable[dict]) -> None:
    for obj in objs:
        out.write(_ENCODE(obj) + "\n")
