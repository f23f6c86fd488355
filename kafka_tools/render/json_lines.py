"""The one way a --json object is written: compact (no spaces), UTF-8 as is, one object a line.

Scripts grep these lines (`grep '"kind":"crc-mismatch"'`), so every command writes them alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def dumps(obj: Any) -> str:
    return _ENCODER.encode(obj)


def emit(out: IO[str], obj: dict) -> None:
    out.write(_ENCODER.encode(obj) + "\n")


def emit_all(out: IO[str], objs: Iterable[dict]) -> None:
    for obj in objs:
        out.write(_ENCODER.encode(obj) + "\n")
