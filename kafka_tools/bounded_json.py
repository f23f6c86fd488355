"""The one reader of JSON that a server or a file hands ktool (znodes, KRaft's quorum-state): depth and
size capped before the parser sees it.

Python's parser recurses once per nesting level, so a znode nested 100,000 deep ends in a RecursionError
far from the znode that caused it; Kafka's own JSON is at most a few levels deep. Stdlib only and nothing
of ktool's, so format/ (quorum-state) and zk/ (znodes) share it.
"""

from __future__ import annotations

import json
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64  # Kafka writes 4 at most (a partition's replicas inside a topic's partitions)
MAX_BYTES = 16 << 20  # ZooKeeper's jute.maxbuffer is 1 MiB by default; generous above it

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # an opener +1, a closer -1 (signed bytes)


class JsonRejected(ValueError):
    """Not parsed: too deep, too large or not JSON; ``str()`` is one line saying which, ``pos`` the
    character the parser stopped at (0 when it never ran)."""

    def __init__(self, message: str, pos: int = 0) -> None:
        super().__init__(message)
        self.pos = pos


def _outside_strings(data: bytes) -> bytes:
    """The bytes of `data` outside its JSON strings (an unterminated last one runs to the end).

    A few passes of bytes methods, each linear: escaped backslashes go first (paired from the left of
    each run, as the parser reads them), then escaped quotes; the quotes left are the strings' bounds.
    Exact for every text the parser accepts (a backslash outside a string is rejected there, before
    any bracket after it). A regex for a string, retried at each `"`, read `"\\"\\"…` to its end from
    every quote: 32 KiB took 10 s."""
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(data.split(b'"')[0::2])


def _depth_over(data: bytes, limit: int) -> bool:
    """Brackets outside strings nest deeper than `limit` (unbalanced text is left to the parser)."""
    if len(data) - len(data.translate(None, b"[{")) <= limit:
        return False  # not even counting those in strings
    brackets = _outside_strings(data).translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    return max(accumulate(memoryview(brackets.translate(_STEPS)).cast("b"))) > limit


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
