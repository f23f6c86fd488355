"""The one JSON encoder: compact (no spaces) and UTF-8 as is (no `\\u` escapes for non-ASCII text).

Every JSON text ktool writes — a --json line, a JSON-decoded value in text output, the `fields` column
of `ktool scan`'s metadata table, a JSON table file — comes from here, so a topic or group named
`zahlungen-€` is the same bytes wherever it appears. Stdlib only and nothing of ktool's, so render/
and pipeline/ share it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

_SEPARATORS = (",", ":")


@functools.cache
def _encoder(default: Callable[[Any], Any] | None) -> Callable[[Any], str]:
    return json.JSONEncoder(ensure_ascii=False, separators=_SEPARATORS, default=default).encode


def dumps(obj: Any, default: Callable[[Any], Any] | None = None) -> str:
    """`obj` as compact JSON text; `default` turns what JSON has no type for into what it has (None:
    TypeError, as `json.dumps`)."""
    return _encoder(default)(obj)


def encoder(default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """`dumps` with `default` bound, made once: for a loop that encodes many objects."""
    return _encoder(default)


def _reusable_encoder() -> Callable[[Any], str]:
    """`dumps` without `json.dumps`' per-call set-up (a new encoder and a circular-reference check each
    call): Python's C encoder made once, for acyclic objects such as decoded records; the same text."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the plain encoder
        return _encoder(None)

    def default(o: object) -> object:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    chunks = make(None, default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda obj: "".join(chunks(obj, 0))


encode_acyclic = _reusable_encoder()
