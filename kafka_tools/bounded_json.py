"""The one reader of JSON that a server or a file hands ktool (znodes, KRaft's quorum-state): depth and
size capped before the parser sees it.

Python's parser recurses once per nesting level, so a znode nested 100,000 deep ends in a RecursionError
far from the znode that caused it; Kafka's own JSON is at most a few levels deep. Stdlib only and nothing
of ktool's, so format/ (quorum-state) and zk/ (znodes) share it.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64  # Kafka writes 4 at most (a partition's replicas inside a topic's partitions)
MAX_BYTES = 16 << 20  # ZooKeeper's jute.maxbuffer is 1 MiB by default; generous above it

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


class JsonRejected(ValueError):
    """Not parsed: too deep, too large or not JSON; ``str()`` is one line saying which, ``pos`` the
    character the parser stopped at (0 when it never ran)."""

    def __init__(self, message: str, pos: int = 0) -> None:
        super().__init__(message)
        self.pos = pos


def _depth_over(data: bytes, limit: int) -> bool:
    depth = 0
    for bracket in _BRACKET.findall(_STRING.sub(b'""', data)):
        if bracket in b"[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES) -> Any:
    """``json.loads`` for untrusted input: JsonRejected when it is over ``max_bytes``, nested deeper than
    ``max_depth`` or not JSON (the parser's message, with its position)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise JsonRejected(f"{len(raw)} bytes of JSON, more than the {max_bytes} ktool reads")
    if _depth_over(raw, max_depth):
        raise JsonRejected(f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(raw)
    except RecursionError:  # a lower interpreter limit than the cap: still one line
        raise JsonRejected(f"JSON nested too deep to parse (cap {max_depth})") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise JsonRejected(f"invalid JSON: {exc}", getattr(exc, "pos", 0) or 0) from None
