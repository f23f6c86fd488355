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
