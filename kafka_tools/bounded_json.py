"""The one reader of JSON that a server or a file hands ktool (znodes, KRaft's quorum-state): depth and
size capped before the parser sees it.

Python's parser recurses once per nesting level, so a znode nested 100,000 deep ends in a RecursionError
far from the znode that caused it; Kafka's own JSON is at most a few levels deep. Stdlib only and nothing
of ktool's, so format/ (quorum-state) and zk/ (znodes) share it.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64  # Kafka writes 4 at most (a partition's replicas inside a topic's partitions)
MAX_BYTES = 16 << 20  # ZooKeeper's jute.maxbuffer is 1 MiB by default; generous above it

# A JSON string, escapes included (the unrolled form: no alternation per character).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opener +1, a closer -1 (after `- 1`)


class JsonRejected(ValueError):
    """Not parsed: too deep, too large or not JSON; ``str()`` is one line saying which, ``pos`` the
    character the parser stopped at (0 when it never ran)."""

    def __init__(self, message: str, pos: int = 0) -> None:
        super().__init__(message)
        self.pos = pos


def _depth_over(data: bytes, limit: int) -> bool:
    """Brackets outside strings nest deeper than `limit` (unbalanced text is left to the parser)."""
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    return max(accumulate(step - 1 for step in brackets.translate(_STEPS))) > limit


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
