"""How keys, values and header values are shown: the `--key-decoder` / `--value-decoder` choices."""

from __future__ import annotations

import base64
import json
import re

from kafka_tools.compact_json import dumps

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
            return dumps(value)
    return printable_text(data)


# What makes a key or value "not printable text": bytes that are not UTF-8, and control characters
# (C0 but the tab, DEL, C1), which a terminal would obey rather than show.
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_CONTROL_CHARS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_TO_ESCAPE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\\\\\udc80-\udcff]")


def printable_text(data: bytes) -> str:
    """The bytes as text when they are printable UTF-8 (unchanged, as Kafka's tools print them); else
    escaped so that nothing raw reaches a terminal: each byte that is not part of a printable
    character as `\\xNN`, and `\\` as `\\\\` (so an escaped value reads back unambiguously).
    `format/csrc/writers.c` (out_text) does the same for the C record lines."""
    if data.isascii():
        if _CONTROL_BYTES.search(data) is None:
            return data.decode("ascii")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and _CONTROL_CHARS.search(text) is None:
            return text
    return _TO_ESCAPE.sub(_escape_one, data.decode("utf-8", "surrogateescape"))


_NAME_ESCAPE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\\\\]")


def printable_name(name: str) -> str:
    """A header key (already text) for a text line: unchanged unless it holds a control character, then
    with those as `\\xNN` (their UTF-8 bytes) and `\\` doubled; `format/csrc/writers.c` (out_name) agrees."""
    if _CONTROL_CHARS.search(name) is None:
        return name
    return _NAME_ESCAPE.sub(_escape_one, name)


def _escape_one(match: re.Match) -> str:
    c = match.group()
    if c == "\\":
        return "\\\\"
    code = ord(c)
    if code >= 0xDC80:  # a byte that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return "".join(f"\\x{b:02x}" for b in c.encode("utf-8"))


def decode_json(data: bytes | None, decoder: str) -> object:
    """A JSON value for `--json` output: null stays null; `json` embeds parsed JSON where it parses."""
    if data is None:
        return None
    if decoder == "json":
        value = _try_json(data)
        if value is not _NOT_JSON:
            return value
        return data.decode("utf-8", "backslashreplace")
    if decoder == "utf8":
        # JSON escapes control characters itself; U+FFFD for bytes that are not UTF-8.
        return data.decode("utf-8", "replace")
    return decode_text(data, decoder)


_NOT_JSON = object()


def _try_json(data: bytes) -> object:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return _NOT_JSON
