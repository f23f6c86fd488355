"""Counts in words: "1 error", "2 errors" (one spelling for every message and table).

It lives with the decoder because the decoder's own problem messages count bytes and entries, and
the decoder imports nothing else of ktool's; every other layer imports it from here.
"""

from __future__ import annotations

_IRREGULAR = {"entry": "entries", "index": "indexes", "this": "these"}


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n noun` with the noun in the plural unless n is 1 ("1 segment", "0 segments", "3 entries")."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {many or _IRREGULAR.get(noun) or noun + 's'}"
