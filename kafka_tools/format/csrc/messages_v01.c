/*
 * Message sets, magic 0 and 1. Layout (LegacyRecord.java): offset int64 @0, size int32 @8, crc uint32
 * @12, magic int8 @16, attributes int8 @17, timestamp int64 @18 (magic 1), key (int32 length + bytes),
 * value (same). read_message only ever accepts what the pure-Python parser (message_set.parse_message)
 * accepts; at anything else the walks stop, and the caller hands that entry to the Python path, which
 * reports it.
 */
#include "speedups.h"

/* An int32-sized key or value at *pos, within stop: 0, or -1 when its length is invalid. */
static inline int
read_sized(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t stop, field_t *f)
{
    if (stop - *pos < 4)
        return -1;
    int32_t n = be32s(p + *pos);
    *pos += 4;
    if (n < -1 || (n >= 0 && (Py_ssize_t)n > stop - *pos))
        return -1;
    f->ptr = p + *pos;
    f->len = n;
    if (n > 0)
        *pos += n;
    return 0;
}

int
read_message(const unsigned char *p, Py_ssize_t at, Py_ssize_t end, message_t *m)
{
    if (end - at < 17)
        return -1;
    m->offset = be64s(p + at);
    m->size = be32s(p + at + 8);
    m->magic = (signed char)p[at + 16];
    if (m->magic != 0 && m->magic != 1)
        return -1;
    if (m->size < (m->magic == 0 ? 14 : 22) || (Py_ssize_t)m->size > end - at - 12)
        return -1;
    Py_ssize_t stop = at + 12 + m->size;
    m->crc = (uint32_t)be32s(p + at + 12);
    m->attributes = p[at + 17];
    Py_ssize_t pos = at + 18;
    m->timestamp = -1;
    if (m->magic == 1) {
        m->timestamp = be64s(p + pos);
        pos += 8;
    }
    if (read_sized(p, &pos, stop, &m->key) < 0 || read_sized(p, &pos, stop, &m->value) < 0)
        return -1;
    return pos == stop ? 0 : -1;
}

/* scan_messages(buf, at, limit, end, prev, lo, hi) -> (at, count, first, last, max_timestamp, gaps)
 *
 * Walks the plain (uncompressed) magic 0/1 messages from buf[at], none starting at or past `limit`
 * nor reaching past `end`, while each is one the Python parser accepts, its CRC matches, its codec
 * is none, and its offset lies in lo..hi and above the one before it (`prev`, None for none). Stops
 * before the first message that is anything else. The GIL is released while it walks. */
PyObject *
scan_messages(PyObject *module, PyObject *args)
{
    (void)module; /* needs no state */
    Py_buffer view;
    Py_ssize_t at, limit, end;
    PyObject *prev_obj;
    long long lo, hi;
    if (!PyArg_ParseTuple(args, "y*nnnOLL", &view, &at, &limit, &end, &prev_obj, &lo, &hi))
        return NULL;
    int have_prev = prev_obj != Py_None;
    long long prev = 0;
    if (have_prev) {
        prev = PyLong_AsLongLong(prev_obj);
        if (prev == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    if (end > view.len)
        end = view.len;
    if (at < 0)
        at = end;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t count = 0;
    long long first = 0, last = prev, max_ts = -1;
    int gaps = 0;
    Py_BEGIN_ALLOW_THREADS
    while (at < limit) {
        message_t m;
        if (read_message(p, at, end, &m) < 0 || (m.attributes & 0x07) != 0)
            break;
        if (m.offset < lo || m.offset > hi || (have_prev && m.offset <= last))
            break;
        if (message_crc(p, at, &m) != m.crc)
            break;
        if (have_prev && m.offset > last + 1) /* m.offset > last: last + 1 cannot overflow */
            gaps = 1;
        if (count == 0)
            first = m.offset;
        last = m.offset;
        have_prev = 1;
        if (m.timestamp > max_ts)
            max_ts = m.timestamp;
        count++;
        at += 12 + m.size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("nnLLLO", at, count, first, count ? last : prev, max_ts, gaps ? Py_True : Py_False);
}

/* scan_inner(data) -> (count, first_offset, last_offset, highest_offset) of the messages of a
 * decompressed wrapper, offsets as stored (the highest: what a v1 shift must keep within int64); None
 * when anything is irregular (the Python parser then says what). */
PyObject *
scan_inner(PyObject *module, PyObject *args)
{
    (void)module; /* needs no state */
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len, at = 0, count = 0;
    long long first = 0, last = 0, high = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    while (at < end) {
        message_t m;
        if (end - at < 26 || read_message(p, at, end, &m) < 0) {
            ok = 0;
            break;
        }
        if (count == 0)
            first = high = m.offset;
        last = m.offset;
        high = m.offset > high ? m.offset : high;
        count++;
        at += 12 + m.size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (!ok || count == 0)
        Py_RETURN_NONE;
    return Py_BuildValue("nLLL", count, first, last, high);
}
