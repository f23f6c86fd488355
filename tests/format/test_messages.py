"""The decoder's error texts live in one table (format/messages.py): the C reader's texts are the
table's, word for word, and both readers raise them for the same damage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_tools.format import accel
from kafka_tools.format import messages as T
from kafka_tools.format.plural import plural
from kafka_tools.format.record_reader import RecordDecodeError, decode_records_py
from tests.support import hostile

CSRC = Path(T.__file__).parent / "csrc"


def _c_failure_texts() -> dict[str, str]:
    """`case NAME: return "text";` (and `default:`) of records_v2.c's failure_text, as templates."""
    source = (CSRC / "records_v2.c").read_text()
    body = source[source.index("failure_text(int why)") :]
    body = body[: body.index("\n}\n")]
    pairs = re.findall(r'(?:case (\w+)|(default)):\s*return "([^"]*)";', body)
    found = {name or default: text for name, default, text in pairs}
    return {name: text.replace("%lld", "{}") for name, text in found.items()}


def test_every_c_record_text_is_the_tables() -> None:
    c = _c_failure_texts()
    assert c, "records_v2.c's failure_text was not found"
    assert c == T.C_RECORD_TEXTS


def test_the_c_stray_bytes_and_record_prefix_are_the_tables() -> None:
    source = (CSRC / "records_v2.c").read_text()
    (stray,) = re.findall(r'"(%zd stray byte%s after[^"]*)"', source)
    for n, count in ((1, 1), (2, 3)):
        c_text = stray.replace("%zd", "%d") % (n, "" if n == 1 else "s", count, "" if count == 1 else "s")
        assert c_text == T.STRAY_BYTES.format(plural(n, "stray byte"), plural(count, "record"))
    assert '"record %zd: %s"' in source and T.RECORD_AT == "record {}: {}"


CASES = [
    (hostile.v2_record(offset_delta=1), 2**63 - 1, 0, T.OFFSET_OVERFLOW.format(1)),
    (hostile.v2_record(ts_delta=-1), 0, -(2**63), T.TIMESTAMP_OVERFLOW.format(-1)),
    (
        hostile.v2_record(tail=hostile.zigzag(8460809781839223477)),
        0,
        0,
        T.BAD_HEADER_COUNT.format(8460809781839223477),
    ),
    (b"\x02", 0, 0, T.BAD_LENGTH.format(1)),
    (b"\x80" * 11, 0, 0, T.TOO_LONG),
]


@pytest.mark.parametrize("section, base_offset, base_ts, text", CASES)
def test_both_readers_raise_the_tables_text(
    section: bytes, base_offset: int, base_ts: int, text: str
) -> None:
    readers = [decode_records_py] + ([accel.C.decode_records] if accel.C is not None else [])
    for decode in readers:
        with pytest.raises(RecordDecodeError) as err:
            decode(section, 1, base_offset, base_ts, None, -1)
        assert str(err.value) == T.RECORD_AT.format(0, text), decode
