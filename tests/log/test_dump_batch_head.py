"""dump-log's batch line (text) and `batch` object (JSON) as made once a batch on the fast path
(`batch_line`, `batch_object`: one f-string each, issue 51) are exactly the line and the object of the
field list and dict the other paths print (colour, records decoded in Python): every attribute bit,
sequences and their wrap, no producer, a delete horizon, LogAppendTime, a bad CRC, an unknown codec."""

from __future__ import annotations

import io
import itertools
import struct

import crc32c
import pytest

from kafka_tools.compact_json import dumps, encode_acyclic
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.render.dump_json import DumpJsonRenderer, batch_object
from kafka_tools.render.dump_text import _batch_fields, batch_line
from kafka_tools.render.lines import line_of
from tests.support import hostile


def _batch(attributes: int, base_sequence: int, producer: tuple[int, int], bad_crc: bool, leader_epoch: int):
    section = hostile.v2_record(key=b"k", value=b"v")
    after_crc = struct.pack(
        ">hiqqqhii",
        attributes,
        6,
        1_700_000_000_000,
        1_700_000_000_009,
        producer[0],
        producer[1],
        base_sequence,
        1,
    )
    after_crc += section
    crc = crc32c.crc32c(after_crc) ^ (1 if bad_crc else 0)
    body = struct.pack(">ib", leader_epoch, 2) + struct.pack(">I", crc) + after_crc
    return struct.pack(">qi", 2**40 + 7, len(body)) + body


CASES = list(
    itertools.product(
        (
            0,
            1,
            4,
            5,
            0x08,
            0x10,
            0x20,
            0x30,
            0x40,
            0x5C,
            0x7F,
        ),  # codecs, timestamp type, txn, control, horizon
        (-1, 0, 2**31 - 3),  # no sequence, the first, one that wraps past int32
        ((-1, -1), (4711, 3)),
        (False, True),
    )
)


@pytest.mark.parametrize(("attributes", "sequence", "producer", "bad_crc"), CASES)
def test_fast_batch_head_is_the_field_list(tmp_path, attributes, sequence, producer, bad_crc):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_batch(attributes, sequence, producer, bad_crc, leader_epoch=attributes))
    (b,) = list(iter_log_entries(path))
    assert b.is_valid is not bad_crc
    assert batch_line(b) == line_of(_batch_fields(b))
    renderer = DumpJsonRenderer(io.StringIO(), print_data=True)
    name = str(path / 'a "quoted" ü name')
    assert batch_object(dumps(name), b) == encode_acyclic(renderer._batch(name, b)) + "\n"
