"""How keys, values and header values are shown: the `--key-decoder` / `--value-decoder` choices."""

from __future__ import annotations

import base64
import json

DECODERS = ("utf8", "hex", "base64", "json", "none")


def decode_text(data: bytes | None, decoder: str) -> str | None:
    """A string for text output; None means "print nothing" (a null field, or decoder `none`)."""
    if data is None or decoder == "none":
        return None
    if decoder == "hex":
        return data.hex()
    if decoder == "base64":
        return base64.b64encode(data).decode("ascii")
    if decoder == "json":
        value = _try_json(data)
        if value is not _NOT_JSON:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # U+FFFD for bytes that are not UTF-8, as Kafka's own tools print them (new String(bytes, UTF_8)).
    return data.decode("utf-8", "replace")


def decode_json(data: bytes | None, decoder: str) -> object:
    """A JSON value for `--json` output: null stays null; `json` embeds parsed JSON where it parses."""
    if data is None:
        return None
    if decoder == "json":
        value = _try_json(data)
        if value is not _NOT_JSON:
            return value
        return data.decode("utf-8", "backslashreplace")
    return decode_text(data, decoder)


_NOT_JSON = object()


def _try_json(data: bytes) -> object:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _reusable_encoder():
    """Compact JSON (`ensure_ascii=False`, no spaces) without `json.dumps`' per-call set-up (a new
    encoder and a circular-reference check each call): Python's C encoder made once, for acyclic
    objects such as decoded records; the same text."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the plain encoder
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def default(o):
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    chunks = make(None, default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda obj: "".join(chunks(obj, 0))


encode_acyclic = _reusable_encoder()
