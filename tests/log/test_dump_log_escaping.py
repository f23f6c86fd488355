"""Keys and values that are not printable text never reach a terminal raw: `dump-log` and `read` escape
them (`\\xNN`, a backslash doubled), the same in the C record lines and the Python renderer; printable
text (Unicode included) prints unchanged, as Kafka's DumpLogSegments prints it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools.format import accel
from kafka_tools.render.values import printable_text
from tests.independent import FIXTURES
from tests.support.cli import run_ktool

sys.path.insert(0, str(FIXTURES))
from make_fixtures import legacy_plain, legacy_wrapper, v2_batch  # noqa: E402

VALUES = [
    (b"plain text", "plain text"),
    ("Grüße ✓ 日本語 🚀".encode(), "Grüße ✓ 日本語 🚀"),
    (b"back\\slash", "back\\slash"),
    (b"tab\tok", "tab\tok"),
    (b"a\nb", "a\\x0ab"),
    (b"\x1b[2J\x1b[31mred", "\\x1b[2J\\x1b[31mred"),
    (b"\x00\x01bin\xff", "\\x00\\x01bin\\xff"),
    ("c1\x9b".encode(), "c1\\xc2\\x9b"),
    (b"del\x7f and back\\slash", "del\\x7f and back\\\\slash"),
    (b"\xed\xa0\x80 cut \xe2\x82", "\\xed\\xa0\\x80 cut \\xe2\\x82"),
    (b"\xc3\xa9\x80", "é\\x80"),
]
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize(("raw", "shown"), VALUES)
def test_printable_text_escapes_only_what_is_not_printable(raw: bytes, shown: str) -> None:
    assert printable_text(raw) == shown


def _segment(tmp_path: Path, kind: str) -> Path:
    items = [
        (i, 1_700_000_000_000 + i, b"k\x07%d" % i if i % 3 == 0 else b"k%d" % i, v)
        for i, (v, _) in enumerate(VALUES)
    ]
    if kind == "v2":
        headers = [("h", None), ("n", None), ("esc\x1b[0m\\", b"x")]  # a header key with control characters
        data = v2_batch(0, [(ts, k, v, [("h", v), *headers[1:]]) for _, ts, k, v in items])
    elif kind == "v2-gzip":
        padded = items + [(len(items), 1_700_000_000_100, b"pad", b"x" * 200)]  # worth compressing
        data = v2_batch(0, [(ts, k, v, []) for _, ts, k, v in padded], codec=1)
    elif kind == "v0":
        data = legacy_plain(0, [(o, None, k, v) for o, _, k, v in items])
    else:
        data = legacy_wrapper(1, 1, items)
    path = tmp_path / "t-0" / "00000000000000000000.log"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", ["v2", "v2-gzip", "v0", "v1-gzip"])
def test_dump_log_never_writes_control_characters_and_c_agrees_with_python(
    tmp_path, kind, monkeypatch
) -> None:
    path = _segment(tmp_path, kind)
    fast = run_ktool("dump-log", "--print-data-log", str(path))
    assert fast.exit_code == 0
    assert CONTROL.search(fast.stdout) is None
    for _, shown in VALUES:
        assert f"payload: {shown}" in fast.stdout
    assert "key: k\\x070" in fast.stdout and "key: k1 " in fast.stdout
    if kind == "v2":
        assert "headerKeys: [h,n,esc\\x1b[0m\\\\]" in fast.stdout
        assert ",esc\\x1b[0m\\\\:x]" in fast.stdout
    monkeypatch.setattr(accel, "C", None)  # every C path off: the pure-Python reference
    slow = run_ktool("dump-log", "--print-data-log", str(path))
    assert slow.stdout == fast.stdout


def test_hex_and_base64_decoders_show_binary_values_whole(tmp_path) -> None:
    path = _segment(tmp_path, "v2")
    out = run_ktool("dump-log", "--print-data-log", "--value-decoder", "hex", str(path)).stdout
    assert "payload: 610a62\n" in out and "headers: [h:610a62,n:null,esc\\x1b[0m\\\\:78]" in out
    out = run_ktool("dump-log", "--print-data-log", "--value-decoder", "base64", str(path)).stdout
    assert "payload: YQpi\n" in out


def test_read_escapes_like_dump_log(tmp_path) -> None:
    path = _segment(tmp_path, "v2")
    out = run_ktool("read", str(path.parent), "--offset", "4", "-n", "1").stdout
    assert "payload: a\\x0ab" in out and CONTROL.search(out) is None


_SPECIAL = [bytes([b]) for b in (*range(0x20), 0x7F, 0x80, 0x9B, 0xC2, 0xFF, 0x5C)] + [
    "é".encode(),
    "€".encode(),
    "🚀".encode(),
    b"\xc2\x85",
]


@pytest.mark.skipif(accel.C is None, reason="C extension not built")
@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from([b"a", b" ", b"~", b"{", b"9"]), st.sampled_from(_SPECIAL)),
        max_size=40,
    ),
)
def test_c_text_values_escape_as_python_at_every_position(pieces: list[bytes]) -> None:
    """The C check reads plain ASCII eight bytes at a time: a byte to escape anywhere in a word, or
    after it, is found as the byte-by-byte check finds it."""
    from kafka_tools.format.record_reader import Record

    value = b"".join(pieces)
    line = accel.C.format_records([Record(0, 0, None, value, (), -1, 10)], "CreateTime", True).decode()
    assert line.endswith(f"payload: {printable_text(value)}\n")


@pytest.mark.skipif(accel.C is None, reason="C extension not built")
@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from([b"a", b" ", b"~", b"{", b"9"]), st.sampled_from([*_SPECIAL, b'"'])),
        max_size=40,
    ),
)
def test_c_json_values_escape_as_json_dumps_at_every_position(pieces: list[bytes]) -> None:
    """The C JSON writer copies eight bytes at a time while none needs escaping: what it writes reads
    back as the value decoded as UTF-8 (errors replaced), wherever a byte to escape falls."""
    import json

    from tests.support import hostile

    value = b"".join(pieces)
    section = hostile.v2_record(key=value, value=value)
    line = accel.C.format_payload(section, 1, 0, 0, None, -1, "CreateTime", True, False, '"f"', 0)
    obj = json.loads(line)
    assert obj["key"] == obj["value"] == value.decode("utf-8", "replace")


# Bytes the C writers look at one by one (out_buffer.h): escapes in text or JSON, UTF-8 sequences
# whole, cut or ill-formed (U+FFFD in JSON and in a text header key, \xNN in a text value), C1.
_AT_BOUNDARIES = [
    b"\\", b'"', b"\t", b"\n", b"\x00", b"\x1f", b"\x7f", b"\x80", b"\xc2\x85", b"\xc3\xa9", b"\xe2\x82",
    b"\xed\xa0\x80", b"\xf4\x90", b"\xff", "🚀".encode(), b"\xf0\x9f\x9a",
]  # fmt: skip


@pytest.mark.skipif(accel.C is None, reason="C extension not built")
@pytest.mark.parametrize("length", [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33])
def test_c_lines_equal_python_with_a_special_byte_at_every_place_of_a_16_byte_block(length: int) -> None:
    """The C writers check and copy 16 bytes at a time (the last block of a string: the 16 ending it);
    a key, value, header key and header value with a byte to look at before, inside, across and after
    each block give the Python renderers' text and JSON lines, byte for byte (tests/fuzz/targets.py's
    comparison, as the fuzz harness runs it)."""
    from tests.fuzz.targets import RECORDS_HEAD, check_records
    from tests.support.hostile import v2_record, zigzag

    print_data = 4  # the flag of targets.records_args: print keys, values and headers
    for special in _AT_BOUNDARIES:
        for at in range(length + 1):
            raw = b"x" * at + special + b"y" * (length - at)
            headers = (
                zigzag(2) + zigzag(len(raw)) + raw + zigzag(len(raw)) + raw + zigzag(1) + b"k" + zigzag(-1)
            )
            section = v2_record(key=raw, value=raw, tail=headers) + v2_record(1, 1, key=None, value=raw[::-1])
            check_records(RECORDS_HEAD.pack(print_data, 0, 1_700_000_000_000, 0, -1, 2) + section)
