"""What the fuzz harnesses check, one function per group of C entry points: the C extension and the
pure-Python reference must agree (the same result, or the same error with the same position), and the
C side must not crash, whatever the bytes. The harnesses (tests/fuzz/run.py) call these under
AddressSanitizer + UBSan; tests/fuzz/test_regressions.py replays every saved input through them with
the ordinary build.

An input is a small fixed header of parameters, then the bytes to parse (see each target's layout);
tests/fuzz/seeds.py writes real sections, message sets and KRaft values in that layout.
"""

from __future__ import annotations

import io
import json
import struct
from types import SimpleNamespace

from kafka_tools.format import accel
from kafka_tools.format.kraft import decoder as kraft
from kafka_tools.format.message_set import LegacyMessage, parse_message
from kafka_tools.format.record_reader import RecordDecodeError, decode_records_py
from kafka_tools.render.dump_json import DumpJsonRenderer
from kafka_tools.render.dump_text import DumpTextRenderer
from kafka_tools.render.lines import LineWriter

INT64 = (-(2**63), 2**63 - 1)

# records: flags(1) base_offset(8) base_timestamp(8) log_append_time(8) base_sequence(4) count(2), section
RECORDS_HEAD = struct.Struct(">BqqqiH")
# messages: flags(1) shift(8) append_time(8) lo(8) hi(8), message set
MESSAGES_HEAD = struct.Struct(">Bqqqq")


def _c():
    return accel.C


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except RecordDecodeError as exc:
        return ("error", str(exc), exc.position)


# ---- v2 records section: decode_records, format_payload (check, text, JSON), format_records -------


def records_args(data: bytes):
    """(section, count, base_offset, base_timestamp, log_append_time, base_sequence) and the flags."""
    if len(data) < RECORDS_HEAD.size:
        return None
    flags, base_offset, base_ts, append_time, base_seq, count = RECORDS_HEAD.unpack_from(data)
    log_append = append_time if flags & 1 else None
    base_seq = -1 if flags & 2 else base_seq
    return (data[RECORDS_HEAD.size :], count, base_offset, base_ts, log_append, base_seq), flags


def check_records(data: bytes) -> None:
    parsed = records_args(data)
    if parsed is None:
        return
    args, flags = parsed
    C = _c()
    py = _outcome(decode_records_py, *args)
    c = _outcome(C.decode_records, *args)
    assert c == py, (c, py)
    _check_iter_records(C, args, py)
    _check_arrow_records(C, args, py)
    label = "LogAppendTime" if args[4] is not None else "CreateTime"
    checked = _outcome(C.format_payload, *args, label, False, True)
    assert checked == (py if py[0] == "error" else ("ok", len(py[1]))), (checked, py)
    print_data = bool(flags & 4)
    text = _outcome(C.format_payload, *args, label, print_data, False)
    if py[0] == "error":
        assert text == py, (text, py)
        return
    records = py[1]
    for r in records:  # an int64 offset and timestamp, as Kafka stores them
        assert INT64[0] <= r.offset <= INT64[1] and INT64[0] <= r.timestamp <= INT64[1], r
    assert text[0] == "ok" and text[1] == C.format_records(records, label, print_data)
    assert text[1].decode() == _python_record_lines(records, label, print_data)
    name = json.dumps("f.log")
    lines = C.format_payload(*args, label, print_data, False, name, 77)
    assert lines.decode() == _python_record_json(records, label, print_data, 77)


def _check_iter_records(C, args, py) -> None:
    """iter_records: the records of decode_records one at a time, or those before the damage (what the
    section up to their end decodes to) and then the same error."""
    got = []
    error = None
    try:
        for r in C.iter_records(*args):
            got.append(r)
    except RecordDecodeError as exc:
        error = ("error", str(exc), exc.position)
    if py[0] == "ok":
        assert error is None and got == py[1], (error, got, py)
        return
    assert error == py, (error, py)
    end = sum(r.size for r in got)
    assert got == decode_records_py(args[0][:end], len(got), *args[2:]), got


# ---- the records table's Arrow columns (arrow_records.c): the same records, or the same error and no row


def _arrow_rows(builder) -> list[tuple]:
    import pyarrow as pa

    from kafka_tools.pipeline.record_columns import Exported

    batch = pa.record_batch(Exported(builder.finish("f.log", None, None)))
    return [
        (
            r["batch_position"],
            r["offset"],
            r["timestamp"],
            r["key"],
            r["value"],
            [tuple(h.values()) for h in r["headers"]],
        )
        for r in batch.to_pylist()
    ]


_KEPT = (7, 8, b"k", None, (("h", None),))  # a row before the batch: a failed batch must leave it whole


def _check_arrow_records(C, args, py) -> None:
    builder = C.record_columns()
    builder.add_records([_KEPT], 3)
    got = _outcome(builder.add_v2, *args, 99)
    kept = [(3, *_KEPT[:4], [("h", None)])]
    if py[0] == "error":
        assert got == py, (got, py)
        assert _arrow_rows(builder) == kept
        return
    assert got == ("ok", len(py[1])), got
    want = [(99, r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in py[1]]
    assert _arrow_rows(builder) == kept + want


def _python_record_lines(records, label: str, print_data: bool) -> str:
    out = io.StringIO()
    renderer = DumpTextRenderer(
        LineWriter(out, colour=False), LineWriter(io.StringIO(), colour=False), print_data, False
    )
    batch = SimpleNamespace(timestamp_type=SimpleNamespace(label=label), is_control=False)
    for r in records:
        renderer._record(batch, r, None)
    return out.getvalue()


def _python_record_json(records, label: str, print_data: bool, position: int) -> str:
    out = io.StringIO()
    renderer = DumpJsonRenderer(out, print_data)
    batch = SimpleNamespace(timestamp_type=SimpleNamespace(label=label), is_control=False, position=position)
    for r in records:
        renderer.emit(renderer._record("f.log", batch, r, None))
    return out.getvalue()


# ---- v0/v1 message sets: scan_messages, scan_inner, format_messages --------------------------------


def messages_args(data: bytes):
    if len(data) < MESSAGES_HEAD.size:
        return None
    return MESSAGES_HEAD.unpack_from(data), data[MESSAGES_HEAD.size :]


def _python_walk(buf: bytes) -> tuple[list[LegacyMessage], int]:
    """The messages parse_message accepts from buf[0], and where the first one it does not starts."""
    out, at = [], 0
    while len(buf) - at >= 17:
        try:
            m = parse_message(buf, at, at, len(buf))
        except (RecordDecodeError, struct.error):
            break
        out.append(m)
        at = m.next_position
    return out, at


def check_messages(data: bytes) -> None:
    parsed = messages_args(data)
    if parsed is None:
        return
    (flags, shift, append_time, lo, hi), buf = parsed
    C = _c()
    messages, _ = _python_walk(buf)
    # scan_messages: the plain, valid prefix of offsets within lo..hi, each above the one before
    have_prev = bool(flags & 16)
    prev = shift if have_prev else None
    at, count, first, max_ts, gaps = 0, 0, 0, -1, False
    for m in messages:
        if m.attributes & 7 or not lo <= m.offset <= hi or (prev is not None and m.offset <= prev):
            break
        if not m.is_valid:
            break
        gaps = gaps or (prev is not None and m.offset > prev + 1)
        first = m.offset if count == 0 else first
        prev = m.offset
        max_ts = max(max_ts, m.timestamp)
        count += 1
        at = m.next_position
    got = C.scan_messages(buf, 0, len(buf), len(buf), shift if have_prev else None, lo, hi)
    assert got == (at, count, first, prev if prev is not None else 0, max_ts, gaps), got
    # scan_inner: the whole set, or None
    whole = bool(messages) and messages[-1].next_position == len(buf)
    whole = whole and all(len(buf) - m.position >= 26 for m in messages)
    want = (
        (len(messages), messages[0].offset, messages[-1].offset, max(m.offset for m in messages))
        if whole
        else None
    )
    assert C.scan_inner(buf) == want
    # the records table's columns of the set: every message, or the reader's refusal and no row
    inner_set = bool(flags & 4)
    builder = C.record_columns()
    append_at = append_time if flags & 8 else None
    moved = shift if inner_set else 0
    try:
        added = builder.add_messages(buf, 1000, inner_set, moved, append_at)
    except RecordDecodeError:
        added = None
    complete = not buf or (bool(messages) and messages[-1].next_position == len(buf))
    fits = all(INT64[0] <= m.offset + moved <= INT64[1] for m in messages)
    assert (added is not None) == (complete and fits), (added, complete, fits)
    rows = _arrow_rows(builder)
    if added is not None:
        assert rows == [
            (
                1000 if inner_set else 1000 + m.position,
                m.offset + moved,
                append_at if append_at is not None else m.timestamp,
                m.key,
                m.value,
                [],
            )
            for m in messages
        ]
    else:
        assert rows == []
    # format_messages: every line as the Python renderers make it, or ValueError when not all plain
    json_out, print_data, inner = bool(flags & 1), bool(flags & 2), bool(flags & 4)
    append = append_time if flags & 8 else None
    wrapper_position = 12345 if inner else -1
    if not inner:
        shift = 0
    plain = not buf or (whole and all(not m.attributes & 7 for m in messages))
    shifted = [m.offset + shift for m in messages]
    in_range = all(INT64[0] <= o <= INT64[1] for o in shifted)
    name = json.dumps("f.log")
    try:
        text = C.format_messages(buf, 1000, json_out, print_data, name, wrapper_position, shift, append)
    except ValueError:
        assert not (plain and in_range), "C refused a plain message set"
        return
    assert plain and in_range, "C formatted what the Python path refuses"
    assert text.decode() == _python_message_lines(messages, shift, append, json_out, print_data, inner)


def _python_message_lines(messages, shift, append, json_out, print_data, inner) -> str:
    out = io.StringIO()
    for m in messages:
        m.offset += shift
        if append is not None:
            m.timestamp = append
    if json_out:
        renderer = DumpJsonRenderer(out, print_data)
        for m in messages:
            renderer.emit(renderer._message("f.log", m, 12345 if inner else 1000 + m.position, None, inner))
    else:
        writer = LineWriter(out, colour=False)
        renderer = DumpTextRenderer(writer, LineWriter(io.StringIO(), colour=False), print_data, False)
        for m in messages:
            renderer._message(m, 12345 if inner else 1000 + m.position, None)
    return out.getvalue()


# ---- KRaft metadata records ---------------------------------------------------------------------------


def check_kraft(data: bytes) -> None:
    if kraft._C is None:
        return

    def outcome(fn):
        try:
            return fn(data)
        except kraft.MetadataDecodeError as exc:
            return ("error", exc.message, exc.position)

    c = outcome(kraft.decode_metadata_record)
    py = outcome(kraft.decode_metadata_record_py)
    assert c == py, (c, py)


# ---- __remote_log_metadata values: kraft.c's second table --------------------------------------------


def check_remote(data: bytes) -> None:
    from kafka_tools.format import remote_log_metadata as remote

    if remote._C is None:
        return

    def outcome(fn):
        try:
            return fn(data)
        except kraft.MetadataDecodeError as exc:
            return ("error", exc.message, exc.position)

    c = outcome(remote.decode_remote_log_metadata)
    py = outcome(remote.decode_remote_log_metadata_py)
    assert c == py, (c, py)


# ---- spans of __remote_log_metadata batches: remote_span_events (the tiered audit's walk) -----------

# spans: limit(1) (events a call), then the bytes of the batches
SPANS_HEAD = struct.Struct(">B")


def _span_outcome(fn, buf: bytes, limit: int):
    try:
        events, at = fn(buf, 0, len(buf), limit)
    except ValueError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("ok", events, at)


def check_spans(data: bytes) -> None:
    """remote_span_events against span_events_py: the same events (every shape), the same stop."""
    from kafka_tools.format.remote_events import span_events_py

    C = _c()
    if C is None or len(data) < SPANS_HEAD.size:
        return
    (limit,) = SPANS_HEAD.unpack_from(data)
    buf = data[SPANS_HEAD.size :]
    c = _span_outcome(C.remote_span_events, buf, limit)
    py = _span_outcome(span_events_py, buf, limit)
    assert c == py, (c, py)


# ---- v2 batch runs: scan_batches (validate's header walk) ------------------------------------------

# batches: flags(1) lo(8) prev(8), then the bytes of a segment
BATCHES_HEAD = struct.Struct(">Bqq")


def _python_batch_run(buf: bytes, prev: int | None, lo: int, hi: int) -> tuple:
    """What scan_batches must return, from struct and the crc32c package (not the extension)."""
    from crc32c import crc32c

    at, count, records, first, last, max_ts, gaps = 0, 0, 0, 0, prev, INT64[0], False
    while len(buf) - at >= 61:
        base, length = struct.unpack_from(">qi", buf, at)
        if buf[at + 16] != 2 or length < 49 or length > len(buf) - at - 12:
            break
        crc, attributes, delta = struct.unpack_from(">Ihi", buf, at + 17)
        (n_records,) = struct.unpack_from(">i", buf, at + 57)
        last_offset = base + delta
        if attributes & 7 or not INT64[0] <= last_offset <= INT64[1]:
            break
        if not lo <= last_offset <= hi or (last is not None and last_offset <= last):
            break
        if not 0 <= n_records <= delta + 1 or crc32c(buf[at + 21 : at + 12 + length]) != crc:
            break
        gaps = gaps or (last is not None and base > last + 1)
        first = base if count == 0 else first
        max_ts = max(max_ts, struct.unpack_from(">q", buf, at + 35)[0])
        last, records, count = last_offset, records + n_records, count + 1
        at += 12 + length
    return at, count, records, first, last if count else (prev if prev is not None else 0), max_ts, gaps


def check_batches(data: bytes) -> None:
    if len(data) < BATCHES_HEAD.size:
        return
    flags, lo, prev = BATCHES_HEAD.unpack_from(data)
    buf = data[BATCHES_HEAD.size :]
    hi = min(lo + (1 << 31) - 1, INT64[1])
    have_prev = prev if flags & 1 else None
    wanted = [0, 61, 128] if flags & 2 else []
    C = _c()
    got = C.scan_batches(buf, 0, len(buf), len(buf), have_prev, lo, hi, wanted, 0)
    assert got[:7] == _python_batch_run(buf, have_prev, lo, hi), got
    _check_batch_columns(C, buf)


def _check_batch_columns(C, buf: bytes) -> None:
    """batch_columns with the records builder (the scan's one walk) stops where it stops without it,
    with the same rows, and its records are add_v2_run's over the batches it took."""
    rows, stop, columns, bits = C.batch_columns(buf, 0, len(buf), 64)
    builder = C.record_columns()
    fused = C.batch_columns(buf, 0, len(buf), 64, builder, 1 << 30, 1 << 30)
    assert fused[:2] == (rows, stop), (fused[:2], rows, stop)
    widths = (8, 8, 8, 4, 4, 4, 8, 8, 4, 8, 8, 4, 8, 4, 4)
    for k, width in enumerate(widths):
        assert fused[2][k][: rows * width] == columns[k][: rows * width], k
    for k in range(3):
        assert fused[3][k][: rows // 8] == bits[k][: rows // 8], k
    reference = C.record_columns()
    assert reference.add_v2_run(buf, 0, stop, 1 << 30, 1 << 30) == stop
    assert _arrow_rows(builder) == _arrow_rows(reference)


# ---- snappy payloads: snappy_decompress -----------------------------------------------------------

# snappy: flags(1) (bit 0: a cap of 8 bytes of output per payload byte, else 16 MiB), then the payload
SNAPPY_HEAD = struct.Struct(">B")


def _python_snappy(payload: bytes, limit: int) -> bytes | None:
    """What the payload holds, block by block with cramjam (compression.py's framing), or None when it
    cannot be read whole within `limit`."""
    import cramjam

    from kafka_tools.format.compression import DecompressionError, _snappy_blocks, _snappy_declared

    out = bytearray()
    try:
        for block in _snappy_blocks(payload):
            n = _snappy_declared(block, limit)
            got = bytes(cramjam.snappy.decompress_raw(bytes(block)))
            if len(got) != n:
                return None
            out += got
    except (DecompressionError, cramjam.DecompressionError):
        return None
    return bytes(out) if len(out) <= limit else None


def check_snappy(data: bytes) -> None:
    if len(data) < SNAPPY_HEAD.size:
        return
    (flags,) = SNAPPY_HEAD.unpack_from(data)
    payload = data[SNAPPY_HEAD.size :]
    limit = 8 * len(payload) if flags & 1 else 16 << 20
    got = _c().snappy_decompress(payload, limit)
    if got is not None:  # what the C decoder takes, cramjam reads the same (it may decline more)
        assert got == _python_snappy(payload, limit)


TARGETS = {
    "records": check_records,
    "messages": check_messages,
    "kraft": check_kraft,
    "remote": check_remote,
    "spans": check_spans,
    "batches": check_batches,
    "snappy": check_snappy,
}
