/*
 * The hot loops of the decoder, in C: the varint records of an uncompressed v2 records section, and
 * the walk of magic 0/1 message sets (framing, CRC32, offsets) with their Kafka 0.9 text and JSON lines.
 *
 * Same contract as kafka_tools.format.record_batch.decode_records_py (the reference, pure Python):
 * returns a list of Record tuples, raises RecordDecodeError(message, position) on any inconsistency.
 * Every length is checked against the section before it is used, so no input can make this read
 * out of bounds or allocate more than the section's own size.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdarg.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

static PyTypeObject *record_type = NULL;
static PyObject *decode_error = NULL;
static PyObject *empty_tuple = NULL;

#define NO_SEQUENCE (-1)

/* decode_records and format_payload make Record tuples and raise RecordDecodeError: both come from
 * configure(), which record_batch.py calls at import; called before it they raise, not crash. */
static int
not_configured(void)
{
    if (record_type != NULL && decode_error != NULL)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
    return 1;
}

/* Why a record could not be decoded; the message texts equal the pure-Python decoder's. */
enum failure { PAST_END = 1, TOO_LONG, BAD_LENGTH, BAD_KEY, BAD_VALUE, BAD_HEADER_COUNT, BAD_HEADER_KEY,
               BAD_HEADER_VALUE, FIELDS_MISMATCH, OFFSET_OVERFLOW, TIMESTAMP_OVERFLOW };

static void
raise_failure(enum failure why, Py_ssize_t index, Py_ssize_t position, long long n)
{
    char message[200];
    const char *what;
    switch (why) {
    case PAST_END: what = "runs past the end of the batch"; break;
    case TOO_LONG: what = "varint longer than 10 bytes"; break;
    case BAD_LENGTH: what = "length %lld is impossible"; break;
    case BAD_KEY: what = "key length %lld is invalid"; break;
    case BAD_VALUE: what = "value length %lld is invalid"; break;
    case BAD_HEADER_COUNT: what = "header count %lld is impossible"; break;
    case BAD_HEADER_KEY: what = "header key length %lld is invalid"; break;
    case BAD_HEADER_VALUE: what = "header value length %lld is invalid"; break;
    case OFFSET_OVERFLOW: what = "offset delta %lld takes the offset past int64"; break;
    case TIMESTAMP_OVERFLOW: what = "timestamp delta %lld takes the timestamp past int64"; break;
    default: what = "fields do not end where its length %lld says"; break;
    }
    char detail[120];
    PyOS_snprintf(detail, sizeof(detail), what, n);
    PyOS_snprintf(message, sizeof(message), "record %zd: %s", index, detail);
    PyObject *exc = PyObject_CallFunction(decode_error, "sn", message, position);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

/* Zigzag varint at *pos, bounded by end: 0, or a failure code. Keeps the low 64 bits, as Java does. */
static inline int
read_varint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, int64_t *out)
{
    Py_ssize_t i = *pos;
    if (i < end && p[i] < 0x80) {
        uint64_t b = p[i];
        *out = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        *pos = i + 1;
        return 0;
    }
    uint64_t result = 0;
    int shift = 0;
    for (;;) {
        if (i >= end)
            return PAST_END;
        unsigned char b = p[i++];
        if (shift < 64)
            result |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            break;
        shift += 7;
        if (shift >= 70)
            return TOO_LONG;
    }
    *out = (int64_t)(result >> 1) ^ -(int64_t)(result & 1);
    *pos = i;
    return 0;
}

/* A header count is possible when its headers (2 bytes each at least) fit in the `left` bytes of the
 * record; compared by division, as count * 2 can wrap. */
static inline int
header_count_fits(int64_t count, Py_ssize_t left)
{
    return count >= 0 && left >= 0 && count <= (int64_t)(left / 2);
}

/* base + delta, or 0 when the sum leaves int64 (a corrupt record: Kafka's offsets and timestamps are
 * int64). The sequence is wrapped to 31 bits, as Kafka does, from the exact sum's low bits. */
static inline int
add_int64(long long base, int64_t delta, long long *out)
{
    return !__builtin_add_overflow(base, (long long)delta, out);
}

static inline long long
sequence_of(long long base_sequence, int64_t delta)
{
    if (base_sequence == NO_SEQUENCE)
        return NO_SEQUENCE;
    return (long long)(((uint64_t)base_sequence + (uint64_t)delta) & 0x7FFFFFFF);
}

/* Record i's headers; *why set on failure. The count is read within the section; the headers must
 * fit in the record (count * 2 bytes at least), as the Python decoder checks. */
static PyObject *
read_headers(const unsigned char *p, Py_ssize_t end, Py_ssize_t rec_end, Py_ssize_t *pos, int *why, long long *bad)
{
    int64_t count;
    if ((*why = read_varint(p, end, pos, &count)))
        return NULL;
    if (count == 0) {
        Py_INCREF(empty_tuple);
        return empty_tuple;
    }
    if (!header_count_fits(count, rec_end - *pos)) {
        *why = BAD_HEADER_COUNT;
        *bad = count;
        return NULL;
    }
    PyObject *headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL)
        return NULL;
    for (Py_ssize_t h = 0; h < count; h++) {
        int64_t n;
        if ((*why = read_varint(p, end, pos, &n)))
            goto fail;
        if (n < 0 || n > (int64_t)(rec_end - *pos)) {
            *why = BAD_HEADER_KEY;
            *bad = n;
            goto fail;
        }
        PyObject *key = PyUnicode_DecodeUTF8((const char *)p + *pos, (Py_ssize_t)n, "replace");
        if (key == NULL)
            goto fail;
        *pos += (Py_ssize_t)n;
        if ((*why = read_varint(p, end, pos, &n))) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *value;
        if (n == -1) {
            value = Py_NewRef(Py_None);
        }
        else if (n < -1 || n > (int64_t)(rec_end - *pos)) {
            Py_DECREF(key);
            *why = BAD_HEADER_VALUE;
            *bad = n;
            goto fail;
        }
        else {
            value = PyBytes_FromStringAndSize((const char *)p + *pos, (Py_ssize_t)n);
            *pos += (Py_ssize_t)n;
        }
        PyObject *pair = value == NULL ? NULL : PyTuple_Pack(2, key, value);
        Py_DECREF(key);
        Py_XDECREF(value);
        if (pair == NULL)
            goto fail;
        PyTuple_SET_ITEM(headers, h, pair);
    }
    return headers;
fail:
    Py_DECREF(headers);
    return NULL;
}

/* A key or value: its length within the section (past it: PAST_END, as Python's next read finds). */
static PyObject *
read_field(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, int *why, long long *bad, int invalid)
{
    int64_t n;
    if ((*why = read_varint(p, end, pos, &n)))
        return NULL;
    if (n == -1)
        return Py_NewRef(Py_None);
    if (n < -1) {
        *why = invalid;
        *bad = n;
        return NULL;
    }
    if (n >= (int64_t)(end - *pos)) {
        /* Python slices short and fails at its next read, which lies past the end; a field that ends
         * exactly at the end of the section still leaves the next read past it. */
        *why = PAST_END;
        return NULL;
    }
    PyObject *field = PyBytes_FromStringAndSize((const char *)p + *pos, (Py_ssize_t)n);
    *pos += (Py_ssize_t)n;
    return field;
}

static PyObject *
decode_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp, base_sequence;
    PyObject *log_append_obj;
    if (not_configured())
        return NULL;
    if (!PyArg_ParseTuple(args, "y*nLLOL", &view, &count, &base_offset, &base_timestamp, &log_append_obj,
                          &base_sequence))
        return NULL;
    int log_append = log_append_obj != Py_None;
    long long log_append_time = 0;
    if (log_append) {
        log_append_time = PyLong_AsLongLong(log_append_obj);
        if (log_append_time == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    Py_ssize_t pos = 0, start = 0, i = 0;
    int why = 0;
    long long bad = 0;
    /* Never preallocate from the (untrusted) count: the list grows only as records are found. */
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    for (i = 0; i < count; i++) {
        start = pos;
        int64_t length, ts_delta, off_delta;
        if ((why = read_varint(p, end, &pos, &length)))
            goto fail;
        if (length < 6 || length > (int64_t)(end - pos)) {
            why = BAD_LENGTH;
            bad = length;
            goto fail;
        }
        Py_ssize_t rec_end = pos + (Py_ssize_t)length;
        pos += 1; /* record attributes: unused */
        if ((why = read_varint(p, end, &pos, &ts_delta)) || (why = read_varint(p, end, &pos, &off_delta)))
            goto fail;
        PyObject *key = read_field(p, end, &pos, &why, &bad, BAD_KEY);
        if (key == NULL)
            goto fail;
        PyObject *value = read_field(p, end, &pos, &why, &bad, BAD_VALUE);
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *headers = read_headers(p, end, rec_end, &pos, &why, &bad);
        if (headers == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        if (pos != rec_end) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            why = FIELDS_MISMATCH;
            bad = length;
            goto fail;
        }
        long long offset, timestamp = log_append_time;
        why = !add_int64(base_offset, off_delta, &offset) ? OFFSET_OVERFLOW
              : !log_append && !add_int64(base_timestamp, ts_delta, &timestamp) ? TIMESTAMP_OVERFLOW : 0;
        if (why) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            bad = why == OFFSET_OVERFLOW ? off_delta : ts_delta;
            goto fail;
        }
        PyObject *rec = record_type->tp_alloc(record_type, 7);
        PyObject *o_offset = PyLong_FromLongLong(offset);
        PyObject *o_ts = PyLong_FromLongLong(timestamp);
        PyObject *o_seq = PyLong_FromLongLong(sequence_of(base_sequence, off_delta));
        PyObject *o_size = PyLong_FromSsize_t(rec_end - start);
        if (rec == NULL || o_offset == NULL || o_ts == NULL || o_seq == NULL || o_size == NULL) {
            Py_XDECREF(rec);
            Py_XDECREF(o_offset);
            Py_XDECREF(o_ts);
            Py_XDECREF(o_seq);
            Py_XDECREF(o_size);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            why = 0;
            goto fail;
        }
        PyTuple_SET_ITEM(rec, 0, o_offset);
        PyTuple_SET_ITEM(rec, 1, o_ts);
        PyTuple_SET_ITEM(rec, 2, key);
        PyTuple_SET_ITEM(rec, 3, value);
        PyTuple_SET_ITEM(rec, 4, headers);
        PyTuple_SET_ITEM(rec, 5, o_seq);
        PyTuple_SET_ITEM(rec, 6, o_size);
        int rc = PyList_Append(out, rec);
        Py_DECREF(rec);
        if (rc < 0) {
            why = 0;
            goto fail;
        }
    }
    if (pos != end) {
        char message[120];
        PyOS_snprintf(message, sizeof(message), "%zd stray byte%s after the batch's %zd record%s", end - pos,
                      end - pos == 1 ? "" : "s", count, count == 1 ? "" : "s");
        PyObject *exc = PyObject_CallFunction(decode_error, "sn", message, pos);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        why = 0;
        goto fail;
    }
    PyBuffer_Release(&view);
    return out;
fail:
    if (why && !PyErr_Occurred())
        raise_failure((enum failure)why, i, start, bad);
    PyBuffer_Release(&view);
    Py_DECREF(out);
    return NULL;
}


/* ---- message sets, magic 0 and 1 ------------------------------------------------------------------
 * Layout (LegacyRecord.java): offset int64 @0, size int32 @8, crc uint32 @12, magic int8 @16,
 * attributes int8 @17, timestamp int64 @18 (magic 1), key (int32 length + bytes), value (same).
 * These loops only ever accept what the pure-Python parser (message_set.parse_message) accepts; at
 * anything else they stop, and the caller hands that entry to the Python path, which reports it. */

static inline int64_t
be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v = (v << 8) | p[k];
    return (int64_t)v;
}

static inline int32_t
be32(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}

/* The message at p[at..]: 0 when it is one parse_message accepts (framed within `end`, magic 0/1,
 * key and value lengths exactly filling the size), with its fields; -1 otherwise. */
typedef struct {
    int64_t offset;
    int32_t size;
    uint32_t crc;
    int magic;
    int attributes;
    int64_t timestamp;
    Py_ssize_t key_at, key_len; /* key_len -1: null */
    Py_ssize_t value_at, value_len;
} message_t;

static inline int
read_message(const unsigned char *p, Py_ssize_t at, Py_ssize_t end, message_t *m)
{
    if (end - at < 17)
        return -1;
    m->offset = be64(p + at);
    m->size = be32(p + at + 8);
    m->magic = (signed char)p[at + 16];
    if (m->magic != 0 && m->magic != 1)
        return -1;
    if (m->size < (m->magic == 0 ? 14 : 22) || (Py_ssize_t)m->size > end - at - 12)
        return -1;
    Py_ssize_t stop = at + 12 + m->size;
    m->crc = (uint32_t)be32(p + at + 12);
    m->attributes = p[at + 17];
    Py_ssize_t pos = at + 18;
    m->timestamp = -1;
    if (m->magic == 1) {
        m->timestamp = be64(p + pos);
        pos += 8;
    }
    int32_t n = be32(p + pos);
    pos += 4;
    if (n < -1 || (n >= 0 && (Py_ssize_t)n > stop - pos))
        return -1;
    m->key_len = n;
    m->key_at = pos;
    if (n > 0)
        pos += n;
    if (stop - pos < 4)
        return -1;
    n = be32(p + pos);
    pos += 4;
    if (n < -1 || (n >= 0 && (Py_ssize_t)n > stop - pos))
        return -1;
    m->value_len = n;
    m->value_at = pos;
    if (n > 0)
        pos += n;
    return pos == stop ? 0 : -1;
}

/* CRC32 (zlib's polynomial) of a short message, slicing by 8 bytes: zlib's crc32 costs ~0.5 us a call
 * on a 100-byte message here (its set-up dominates), four times the walk's whole budget. */
static uint32_t crc_table[8][256];

static void
make_crc_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

static inline uint32_t
crc32_short(const unsigned char *q, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t one = ((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24) ^ c;
        uint32_t two = (uint32_t)q[4] | (uint32_t)q[5] << 8 | (uint32_t)q[6] << 16 | (uint32_t)q[7] << 24;
        c = crc_table[7][one & 0xFF] ^ crc_table[6][(one >> 8) & 0xFF] ^ crc_table[5][(one >> 16) & 0xFF] ^
            crc_table[4][one >> 24] ^ crc_table[3][two & 0xFF] ^ crc_table[2][(two >> 8) & 0xFF] ^
            crc_table[1][(two >> 16) & 0xFF] ^ crc_table[0][two >> 24];
        q += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = crc_table[0][(c ^ *q++) & 0xFF] ^ (c >> 8);
    return ~c;
}

static inline uint32_t
crc_of(const unsigned char *p, Py_ssize_t at, const message_t *m)
{
    /* CRC32 of magic..end of value; zlib's crc32 (for long messages) takes an unsigned int length. */
    const unsigned char *q = p + at + 16;
    Py_ssize_t left = m->size - 4;
    if (left < 4096)
        return crc32_short(q, left);
    uLong c = crc32(0L, Z_NULL, 0);
    while (left > 0) {
        uInt step = left > (1 << 30) ? (1u << 30) : (uInt)left;
        c = crc32(c, q, step);
        q += step;
        left -= step;
    }
    return (uint32_t)c;
}

/* scan_messages(buf, at, limit, end, prev, lo, hi) -> (at, count, first, last, max_timestamp, gaps)
 *
 * Walks the plain (uncompressed) magic 0/1 messages from buf[at], none starting at or past `limit`
 * nor reaching past `end`, while each is one the Python parser accepts, its CRC matches, its codec
 * is none, and its offset lies in lo..hi and above the one before it (`prev`, None for none). Stops
 * before the first message that is anything else. The GIL is released while it walks. */
static PyObject *
scan_messages(PyObject *self, PyObject *args)
{
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
        if (crc_of(p, at, &m) != m.crc)
            break;
        if (have_prev && m.offset > last + 1)
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

/* scan_inner(data) -> (count, first_offset, last_offset, highest_offset) of the messages of a decompressed wrapper,
 * offsets as stored; None when anything is irregular (the Python parser then says what). */
static PyObject *
scan_inner(PyObject *self, PyObject *args)
{
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

/* ---- output: a growing byte buffer ---- */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} out_t;

static int
out_reserve(out_t *o, Py_ssize_t more)
{
    if (more <= o->cap - o->len)
        return 0;
    if (more < 0 || more > PY_SSIZE_T_MAX / 2 - o->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->len + more)
        cap *= 2;
    char *d = PyMem_Realloc(o->data, (size_t)cap);
    if (d == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = d;
    o->cap = cap;
    return 0;
}

static inline void
out_put(out_t *o, const char *s, Py_ssize_t n)
{
    memcpy(o->data + o->len, s, (size_t)n);
    o->len += n;
}

static inline void
out_int(out_t *o, long long v)
{
    char tmp[24];
    int k = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        o->data[o->len++] = '-';
    while (k)
        o->data[o->len++] = tmp[--k];
}

#define PUT(o, lit) out_put((o), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* JSON string body of raw bytes: `"` `\` and control characters escaped as json.dumps does
 * (ensure_ascii=False); other bytes as they are (the caller decodes the whole output as UTF-8 with
 * `replace`, which for these bytes is the same as decoding each field first). */
static int
out_json_string(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    if (out_reserve(o, n * 6 + 2) < 0)
        return -1;
    o->data[o->len++] = '"';
    static const char hex[] = "0123456789abcdef";
    for (Py_ssize_t k = 0; k < n; k++) {
        unsigned char c = s[k];
        if (c >= 0x20 && c != '"' && c != '\\') {
            o->data[o->len++] = (char)c;
            continue;
        }
        o->data[o->len++] = '\\';
        switch (c) {
        case '"': o->data[o->len++] = '"'; break;
        case '\\': o->data[o->len++] = '\\'; break;
        case '\n': o->data[o->len++] = 'n'; break;
        case '\r': o->data[o->len++] = 'r'; break;
        case '\t': o->data[o->len++] = 't'; break;
        case '\b': o->data[o->len++] = 'b'; break;
        case '\f': o->data[o->len++] = 'f'; break;
        default:
            PUT(o, "u00");
            o->data[o->len++] = hex[c >> 4];
            o->data[o->len++] = hex[c & 15];
        }
    }
    o->data[o->len++] = '"';
    return 0;
}

/* Length of the UTF-8 sequence at s[i] (*ok = 1), or of the maximal subpart of an ill-formed one that
 * Python's decode(errors="replace") turns into one U+FFFD (*ok = 0): a bad lead byte alone, else the
 * lead and the continuation bytes that were still acceptable. */
static inline Py_ssize_t
utf8_step(const unsigned char *s, Py_ssize_t n, Py_ssize_t i, int *ok)
{
    unsigned char c = s[i];
    *ok = 1;
    if (c < 0x80)
        return 1;
    if (c < 0xC2 || c > 0xF4) {
        *ok = 0;
        return 1;
    }
    int need = c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    for (int j = 1; j <= need; j++) {
        if (i + j >= n) {
            *ok = 0;
            return j;
        }
        unsigned char b = s[i + j];
        if (b < lo || b > hi) {
            *ok = 0;
            return j;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

/* A key or value is printable text when it is valid UTF-8 without control characters (C0 but the tab,
 * DEL, C1); render/values.py's printable_text decides the same. */
static int
text_is_printable(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t') || c == 0x7F)
                return 0;
            i++;
            continue;
        }
        int ok;
        Py_ssize_t len = utf8_step(s, n, i, &ok);
        if (!ok || (c == 0xC2 && s[i + 1] < 0xA0))
            return 0;
        i += len;
    }
    return 1;
}

/* Copy a key or value for a text line: as it is when printable, else escaped as printable_text does
 * (each byte not part of a printable character as \xNN, a backslash doubled), so that nothing raw
 * reaches a terminal. */
static int
out_text(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (text_is_printable(s, n)) {
        if (out_reserve(o, n) < 0)
            return -1;
        out_put(o, (const char *)s, n);
        return 0;
    }
    if (out_reserve(o, n * 4) < 0)
        return -1;
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        Py_ssize_t len = 1;
        int escape;
        if (c < 0x80) {
            escape = (c < 0x20 && c != '\t') || c == 0x7F;
            if (c == '\\') {
                o->data[o->len++] = '\\';
                o->data[o->len++] = '\\';
                i++;
                continue;
            }
        } else {
            int ok;
            len = utf8_step(s, n, i, &ok);
            escape = !ok || (c == 0xC2 && s[i + 1] < 0xA0);
        }
        for (Py_ssize_t j = 0; j < len; j++) {
            unsigned char b = s[i + j];
            if (escape) {
                o->data[o->len++] = '\\';
                o->data[o->len++] = 'x';
                o->data[o->len++] = hex[b >> 4];
                o->data[o->len++] = hex[b & 15];
            } else {
                o->data[o->len++] = (char)b;
            }
        }
        i += len;
    }
    return 0;
}

/* A header key for a text line: as it is unless it holds a control character (C0 but the tab, DEL,
 * C1), then with those as \xNN and a backslash doubled; bytes that are not UTF-8 stay (the output is
 * made valid UTF-8 afterwards, as the Python path decodes keys with errors="replace").
 * render/values.py's printable_name does the same. */
static int
out_name(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    int control = 0;
    for (Py_ssize_t i = 0; i < n && !control; i++) {
        unsigned char c = s[i];
        control = (c < 0x20 && c != '\t') || c == 0x7F || (c == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] < 0xA0);
    }
    if (out_reserve(o, control ? n * 4 : n) < 0)
        return -1;
    if (!control) {
        out_put(o, (const char *)s, n);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        int two = c == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] < 0xA0;
        if ((c < 0x20 && c != '\t') || c == 0x7F || two) {
            for (int j = 0; j <= two; j++) {
                unsigned char b = s[i + j];
                o->data[o->len++] = '\\';
                o->data[o->len++] = 'x';
                o->data[o->len++] = hex[b >> 4];
                o->data[o->len++] = hex[b & 15];
            }
            i += two;
        } else if (c == '\\') {
            o->data[o->len++] = '\\';
            o->data[o->len++] = '\\';
        } else {
            o->data[o->len++] = (char)c;
        }
    }
    return 0;
}

/* The output as bytes that are valid UTF-8: what `bytes(o).decode("utf-8", "replace").encode()`
 * gives (keys and values are copied raw; separators are ASCII, so fixing the whole output equals
 * decoding every field alone). Frees o's buffer. */
static PyObject *
out_finish_utf8(out_t *o)
{
    const unsigned char *s = (const unsigned char *)(o->data ? o->data : "");
    Py_ssize_t n = o->len, i = 0, run = 0; /* s[run:i] is valid and not yet copied */
    out_t fixed = {NULL, 0, 0};
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int ok;
        Py_ssize_t len = utf8_step(s, n, i, &ok);
        if (!ok) {
            /* Each bad subpart (>= 1 byte) becomes U+FFFD (3 bytes): the output is at most 3n. */
            if (fixed.data == NULL && out_reserve(&fixed, n * 3 + 1) < 0) {
                PyMem_Free(o->data);
                return NULL;
            }
            out_put(&fixed, (const char *)s + run, i - run);
            PUT(&fixed, "\xEF\xBF\xBD");
            run = i + len;
        }
        i += len;
    }
    PyObject *result;
    if (fixed.data == NULL) {
        result = PyBytes_FromStringAndSize((const char *)s, n);
    } else {
        out_put(&fixed, (const char *)s + run, n - run);
        result = PyBytes_FromStringAndSize(fixed.data, fixed.len);
        PyMem_Free(fixed.data);
    }
    PyMem_Free(o->data);
    return result;
}

/* format_messages(buf, position, json, print_data, file_json) -> bytes
 *
 * The lines of every message in `buf` (plain, valid messages as scan_messages accepts them; `position`
 * is the file position of buf[0]): Kafka 0.9's DumpLogSegments line (json false) or ktool's `message`
 * JSON object (json true; `file_json` is the file name already encoded as a JSON string). Keys and
 * values are copied raw, then the whole is made valid UTF-8 as errors="replace" decoding would. */
static PyObject *
format_messages(PyObject *self, PyObject *args)
{
    Py_buffer view;
    long long position;
    int json, print_data;
    const char *file_json;
    Py_ssize_t file_json_len;
    long long wrapper_position = -1, shift = 0;
    PyObject *append_time_obj = Py_None;
    if (!PyArg_ParseTuple(args, "y*Lpps#|LLO", &view, &position, &json, &print_data, &file_json, &file_json_len,
                          &wrapper_position, &shift, &append_time_obj))
        return NULL;
    /* Inside a wrapper (wrapper_position >= 0): every line names the wrapper's position, offsets move
     * by `shift` (v1 inner offsets are relative), a LogAppendTime wrapper's time replaces theirs. */
    int inner = wrapper_position >= 0;
    long long append_time = 0;
    int have_append_time = append_time_obj != Py_None;
    if (have_append_time) {
        append_time = PyLong_AsLongLong(append_time_obj);
        if (append_time == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len, at = 0;
    out_t o = {NULL, 0, 0};
    if (out_reserve(&o, end * 2 + (1 << 16)) < 0) /* about the output of ~100-byte messages */
        goto fail;
    while (at < end) {
        message_t m;
        if (read_message(p, at, end, &m) < 0 || (m.attributes & 0x07) != 0) {
            PyErr_Format(PyExc_ValueError, "not a plain message at %zd", at);
            goto fail;
        }
        if (out_reserve(&o, 512 + file_json_len) < 0)
            goto fail;
        long long pos = inner ? wrapper_position : position + at;
        int log_append = m.attributes & 0x08;
        uint32_t computed = crc_of(p, at, &m);
        int valid = computed == m.crc;
        if (__builtin_add_overflow(m.offset, (int64_t)shift, &m.offset)) {
            PyErr_Format(PyExc_ValueError, "offset past int64 at %zd", at);
            goto fail;
        }
        if (have_append_time)
            m.timestamp = append_time;
        if (!json) {
            PUT(&o, "offset: ");
            out_int(&o, m.offset);
            PUT(&o, " position: ");
            out_int(&o, pos);
            if (m.magic >= 1) {
                if (log_append)
                    PUT(&o, " LogAppendTime: ");
                else
                    PUT(&o, " CreateTime: ");
                out_int(&o, m.timestamp);
            }
            if (valid)
                PUT(&o, " isvalid: true payloadsize: ");
            else
                PUT(&o, " isvalid: false payloadsize: ");
            out_int(&o, m.value_len);
            PUT(&o, " magic: ");
            out_int(&o, m.magic);
            PUT(&o, " compresscodec: NoCompressionCodec crc: ");
            out_int(&o, m.crc);
            if (m.key_len >= 0) {
                PUT(&o, " keysize: ");
                out_int(&o, m.key_len);
            }
            if (print_data && m.value_len >= 0) {
                if (out_reserve(&o, m.key_len + m.value_len + 32) < 0)
                    goto fail;
                if (m.key_len >= 0) {
                    PUT(&o, " key: ");
                    if (out_text(&o, p + m.key_at, m.key_len) < 0 || out_reserve(&o, 16) < 0)
                        goto fail;
                }
                PUT(&o, " payload: ");
                if (out_text(&o, p + m.value_at, m.value_len) < 0 || out_reserve(&o, 2) < 0)
                    goto fail;
            }
            o.data[o.len++] = '\n';
            continue_next:
            at += 12 + m.size;
            continue;
        }
        PUT(&o, "{\"type\":\"message\",\"file\":");
        out_put(&o, file_json, file_json_len);
        PUT(&o, ",\"position\":");
        out_int(&o, pos);
        PUT(&o, ",\"offset\":");
        out_int(&o, m.offset);
        if (inner)
            PUT(&o, ",\"inner\":true,\"magic\":");
        else
            PUT(&o, ",\"inner\":false,\"magic\":");
        out_int(&o, m.magic);
        PUT(&o, ",\"size\":");
        out_int(&o, m.size);
        PUT(&o, ",\"crc\":");
        out_int(&o, m.crc);
        PUT(&o, ",\"computedCrc\":");
        out_int(&o, computed);
        if (valid)
            PUT(&o, ",\"isValid\":true,\"compressCodec\":\"none\",\"attributes\":");
        else
            PUT(&o, ",\"isValid\":false,\"compressCodec\":\"none\",\"attributes\":");
        out_int(&o, m.attributes);
        if (m.magic == 0)
            PUT(&o, ",\"timestampType\":\"NoTimestampType\",\"timestamp\":");
        else if (log_append)
            PUT(&o, ",\"timestampType\":\"LogAppendTime\",\"timestamp\":");
        else
            PUT(&o, ",\"timestampType\":\"CreateTime\",\"timestamp\":");
        out_int(&o, m.timestamp);
        PUT(&o, ",\"keySize\":");
        out_int(&o, m.key_len);
        PUT(&o, ",\"valueSize\":");
        out_int(&o, m.value_len);
        if (print_data) {
            PUT(&o, ",\"key\":");
            if (m.key_len < 0)
                PUT(&o, "null");
            else if (out_json_string(&o, p + m.key_at, m.key_len) < 0)
                goto fail;
            if (out_reserve(&o, 16) < 0)
                goto fail;
            PUT(&o, ",\"value\":");
            if (m.value_len < 0)
                PUT(&o, "null");
            else if (out_json_string(&o, p + m.value_at, m.value_len) < 0)
                goto fail;
            if (out_reserve(&o, 4) < 0)
                goto fail;
        }
        PUT(&o, "}\n");
        goto continue_next;
    }
    PyBuffer_Release(&view);
    return out_finish_utf8(&o);
fail:
    PyBuffer_Release(&view);
    PyMem_Free(o.data);
    return NULL;
}

/* format_records(records, label, print_data) -> bytes
 *
 * DumpLogSegments' `| offset: …` line of every v2 record (Record tuples as decode_records makes them),
 * `label` the batch's timestamp type (CreateTime, …); with print_data, headers, key and payload as raw
 * bytes, then the whole made valid UTF-8 as errors="replace" decoding would. */
static int
out_utf8_of(out_t *o, PyObject *text)
{
    /* header keys of the text lines (out_name: control characters escaped) */
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(text, &n);
    if (s == NULL || out_name(o, (const unsigned char *)s, n) < 0)
        return -1;
    return out_reserve(o, 16);
}

static int
out_bytes(out_t *o, PyObject *b)
{
    /* keys, values and header values of the text lines: escaped when not printable (out_text) */
    if (out_text(o, (const unsigned char *)PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b)) < 0)
        return -1;
    return out_reserve(o, 16);
}

static PyObject *
format_records(PyObject *self, PyObject *args)
{
    PyObject *records;
    const char *label;
    Py_ssize_t label_len;
    int print_data;
    if (!PyArg_ParseTuple(args, "O!s#p", &PyList_Type, &records, &label, &label_len, &print_data))
        return NULL;
    out_t o = {NULL, 0, 0};
    PyObject *r = NULL; /* held: nothing below runs Python code, but the list is not ours */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        Py_XSETREF(r, Py_NewRef(PyList_GET_ITEM(records, i)));
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 6 || !PyLong_Check(PyTuple_GET_ITEM(r, 0)) ||
            !PyLong_Check(PyTuple_GET_ITEM(r, 1)) || !PyLong_Check(PyTuple_GET_ITEM(r, 5))) {
            PyErr_SetString(PyExc_TypeError, "records must be Record tuples");
            goto fail;
        }
        PyObject *key = PyTuple_GET_ITEM(r, 2), *value = PyTuple_GET_ITEM(r, 3), *headers = PyTuple_GET_ITEM(r, 4);
        if ((key != Py_None && !PyBytes_Check(key)) || (value != Py_None && !PyBytes_Check(value)) ||
            !PyTuple_Check(headers)) {
            PyErr_SetString(PyExc_TypeError, "records must be Record tuples");
            goto fail;
        }
        long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 0));
        long long ts = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 1));
        long long seq = PyLong_AsLongLong(PyTuple_GET_ITEM(r, 5));
        if (PyErr_Occurred())
            goto fail;
        if (out_reserve(&o, 200 + label_len) < 0)
            goto fail;
        PUT(&o, "| offset: ");
        out_int(&o, offset);
        o.data[o.len++] = ' ';
        out_put(&o, label, label_len);
        PUT(&o, ": ");
        out_int(&o, ts);
        PUT(&o, " keySize: ");
        out_int(&o, key == Py_None ? -1 : PyBytes_GET_SIZE(key));
        PUT(&o, " valueSize: ");
        out_int(&o, value == Py_None ? -1 : PyBytes_GET_SIZE(value));
        PUT(&o, " sequence: ");
        out_int(&o, seq);
        PUT(&o, " headerKeys: [");
        Py_ssize_t nh = PyTuple_GET_SIZE(headers);
        for (Py_ssize_t h = 0; h < nh; h++) {
            PyObject *pair = PyTuple_GET_ITEM(headers, h);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
                PyErr_SetString(PyExc_TypeError, "headers must be (str, bytes) pairs");
                goto fail;
            }
            if (h && (out_reserve(&o, 1) < 0 || (o.data[o.len++] = ',', 0)))
                goto fail;
            if (out_utf8_of(&o, PyTuple_GET_ITEM(pair, 0)) < 0)
                goto fail;
        }
        if (out_reserve(&o, 16) < 0)
            goto fail;
        o.data[o.len++] = ']';
        if (print_data) {
            if (nh) {
                PUT(&o, " headers: [");
                for (Py_ssize_t h = 0; h < nh; h++) {
                    PyObject *pair = PyTuple_GET_ITEM(headers, h);
                    PyObject *hv = PyTuple_GET_ITEM(pair, 1);
                    if (hv != Py_None && !PyBytes_Check(hv)) {
                        PyErr_SetString(PyExc_TypeError, "headers must be (str, bytes) pairs");
                        goto fail;
                    }
                    if (out_reserve(&o, 8) < 0)
                        goto fail;
                    if (h)
                        o.data[o.len++] = ',';
                    if (out_utf8_of(&o, PyTuple_GET_ITEM(pair, 0)) < 0 || out_reserve(&o, 8) < 0)
                        goto fail;
                    o.data[o.len++] = ':';
                    if (hv == Py_None)
                        PUT(&o, "null");
                    else if (out_bytes(&o, hv) < 0)
                        goto fail;
                }
                if (out_reserve(&o, 2) < 0)
                    goto fail;
                o.data[o.len++] = ']';
            }
            if (key != Py_None) {
                if (out_reserve(&o, 8) < 0)
                    goto fail;
                PUT(&o, " key: ");
                if (out_bytes(&o, key) < 0)
                    goto fail;
            }
            if (value != Py_None) {
                if (out_reserve(&o, 12) < 0)
                    goto fail;
                PUT(&o, " payload: ");
                if (out_bytes(&o, value) < 0)
                    goto fail;
            }
        }
        if (out_reserve(&o, 1) < 0)
            goto fail;
        o.data[o.len++] = '\n';
    }
    Py_XDECREF(r);
    return out_finish_utf8(&o);
fail:
    Py_XDECREF(r);
    PyMem_Free(o.data);
    return NULL;
}

/* format_payload(data, count, base_offset, base_timestamp, log_append_time, base_sequence, label,
 *                print_data, check_only[, file_json, batch_position]) -> bytes, or the count (check_only)
 *
 * format_records' lines read straight from a batch's (uncompressed) records section, no Record objects
 * made: the same walk, checks and RecordDecodeError (position relative to `data`) as decode_records.
 * check_only walks and checks without printing, so a caller can learn whether decoding would fail.
 * With file_json (the file name already encoded as a JSON string): ktool's `record` JSON objects
 * instead, keys and values as UTF-8 text, as render/dump_json.py makes them. */
static PyObject *
format_payload(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_timestamp, base_sequence;
    PyObject *log_append_obj;
    const char *label;
    Py_ssize_t label_len;
    int print_data, check_only;
    const char *file_json = NULL;
    Py_ssize_t file_json_len = 0;
    long long batch_position = 0;
    if (not_configured())
        return NULL;
    if (!PyArg_ParseTuple(args, "y*nLLOLs#pp|z#L", &view, &count, &base_offset, &base_timestamp,
                          &log_append_obj, &base_sequence, &label, &label_len, &print_data, &check_only,
                          &file_json, &file_json_len, &batch_position))
        return NULL;
    int json = file_json != NULL;
    int log_append = log_append_obj != Py_None;
    long long log_append_time = 0;
    if (log_append) {
        log_append_time = PyLong_AsLongLong(log_append_obj);
        if (log_append_time == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    Py_ssize_t pos = 0, start = 0, i = 0;
    int why = 0;
    long long bad = 0;
    out_t o = {NULL, 0, 0};
    if (!check_only && out_reserve(&o, end * 2 + 4096) < 0)
        goto fail;
    for (i = 0; i < count; i++) {
        start = pos;
        int64_t length, ts_delta, off_delta, n, key_len, value_len, nh;
        Py_ssize_t key_at = 0, value_at = 0;
        if ((why = read_varint(p, end, &pos, &length)))
            goto fail;
        if (length < 6 || length > (int64_t)(end - pos)) {
            why = BAD_LENGTH;
            bad = length;
            goto fail;
        }
        Py_ssize_t rec_end = pos + (Py_ssize_t)length;
        pos += 1; /* record attributes: unused */
        if ((why = read_varint(p, end, &pos, &ts_delta)) || (why = read_varint(p, end, &pos, &off_delta)))
            goto fail;
        /* key and value: as read_field */
        for (int f = 0; f < 2; f++) {
            if ((why = read_varint(p, end, &pos, &n)))
                goto fail;
            if (n < -1) {
                why = f ? BAD_VALUE : BAD_KEY;
                bad = n;
                goto fail;
            }
            if (n >= (int64_t)(end - pos)) {
                why = PAST_END;
                goto fail;
            }
            if (f) {
                value_len = n;
                value_at = pos;
            } else {
                key_len = n;
                key_at = pos;
            }
            if (n > 0)
                pos += (Py_ssize_t)n;
        }
        /* headers: as read_headers */
        if ((why = read_varint(p, end, &pos, &nh)))
            goto fail;
        if (nh && !header_count_fits(nh, rec_end - pos)) {
            why = BAD_HEADER_COUNT;
            bad = nh;
            goto fail;
        }
        Py_ssize_t headers_at = pos;
        for (int64_t h = 0; h < nh; h++) {
            if ((why = read_varint(p, end, &pos, &n)))
                goto fail;
            if (n < 0 || n > (int64_t)(rec_end - pos)) {
                why = BAD_HEADER_KEY;
                bad = n;
                goto fail;
            }
            pos += (Py_ssize_t)n;
            if ((why = read_varint(p, end, &pos, &n)))
                goto fail;
            if (n < -1 || n > (int64_t)(rec_end - pos)) {
                why = BAD_HEADER_VALUE;
                bad = n;
                goto fail;
            }
            if (n > 0)
                pos += (Py_ssize_t)n;
        }
        if (pos != rec_end) {
            why = FIELDS_MISMATCH;
            bad = length;
            goto fail;
        }
        long long offset, timestamp = log_append_time;
        why = !add_int64(base_offset, off_delta, &offset) ? OFFSET_OVERFLOW
              : !log_append && !add_int64(base_timestamp, ts_delta, &timestamp) ? TIMESTAMP_OVERFLOW : 0;
        if (why) {
            bad = why == OFFSET_OVERFLOW ? off_delta : ts_delta;
            goto fail;
        }
        if (check_only)
            continue;
        long long sequence = sequence_of(base_sequence, off_delta);
        if (json) {
            if (out_reserve(&o, 300 + label_len + file_json_len + 16 * nh) < 0)
                goto fail;
            PUT(&o, "{\"type\":\"record\",\"file\":");
            out_put(&o, file_json, file_json_len);
            PUT(&o, ",\"batchPosition\":");
            out_int(&o, batch_position);
            PUT(&o, ",\"offset\":");
            out_int(&o, offset);
            PUT(&o, ",\"timestamp\":");
            out_int(&o, timestamp);
            PUT(&o, ",\"timestampType\":\"");
            out_put(&o, label, label_len);
            PUT(&o, "\",\"keySize\":");
            out_int(&o, key_len);
            PUT(&o, ",\"valueSize\":");
            out_int(&o, value_len);
            PUT(&o, ",\"sequence\":");
            out_int(&o, sequence);
            PUT(&o, ",\"headerKeys\":[");
            Py_ssize_t q = headers_at;
            for (int64_t h = 0; h < nh; h++) {
                read_varint(p, end, &q, &n);
                if (h && (out_reserve(&o, 1) < 0 || (o.data[o.len++] = ',', 0)))
                    goto fail;
                if (out_json_string(&o, p + q, (Py_ssize_t)n) < 0)
                    goto fail;
                q += (Py_ssize_t)n;
                read_varint(p, end, &q, &n);
                if (n > 0)
                    q += (Py_ssize_t)n;
            }
            if (out_reserve(&o, 32) < 0)
                goto fail;
            o.data[o.len++] = ']';
            if (print_data) {
                PUT(&o, ",\"headers\":[");
                q = headers_at;
                for (int64_t h = 0; h < nh; h++) {
                    read_varint(p, end, &q, &n);
                    if (out_reserve(&o, 16) < 0)
                        goto fail;
                    if (h)
                        o.data[o.len++] = ',';
                    PUT(&o, "{\"key\":");
                    if (out_json_string(&o, p + q, (Py_ssize_t)n) < 0)
                        goto fail;
                    q += (Py_ssize_t)n;
                    if (out_reserve(&o, 16) < 0)
                        goto fail;
                    PUT(&o, ",\"value\":");
                    read_varint(p, end, &q, &n);
                    if (n < 0) {
                        PUT(&o, "null");
                    } else {
                        if (out_json_string(&o, p + q, (Py_ssize_t)n) < 0)
                            goto fail;
                        q += (Py_ssize_t)n;
                    }
                    if (out_reserve(&o, 2) < 0)
                        goto fail;
                    o.data[o.len++] = '}';
                }
                if (out_reserve(&o, 16) < 0)
                    goto fail;
                PUT(&o, "],\"key\":");
                if (key_len < 0)
                    PUT(&o, "null");
                else if (out_json_string(&o, p + key_at, (Py_ssize_t)key_len) < 0)
                    goto fail;
                if (out_reserve(&o, 16) < 0)
                    goto fail;
                PUT(&o, ",\"value\":");
                if (value_len < 0)
                    PUT(&o, "null");
                else if (out_json_string(&o, p + value_at, (Py_ssize_t)value_len) < 0)
                    goto fail;
            }
            if (out_reserve(&o, 4) < 0)
                goto fail;
            PUT(&o, "}\n");
            continue;
        }
        /* the record's own bytes bound every field copied below */
        if (out_reserve(&o, 200 + label_len + 2 * (rec_end - start) + 16 * nh) < 0)
            goto fail;
        PUT(&o, "| offset: ");
        out_int(&o, offset);
        o.data[o.len++] = ' ';
        out_put(&o, label, label_len);
        PUT(&o, ": ");
        out_int(&o, timestamp);
        PUT(&o, " keySize: ");
        out_int(&o, key_len);
        PUT(&o, " valueSize: ");
        out_int(&o, value_len);
        PUT(&o, " sequence: ");
        out_int(&o, sequence);
        PUT(&o, " headerKeys: [");
        Py_ssize_t q = headers_at;
        for (int64_t h = 0; h < nh; h++) {
            read_varint(p, end, &q, &n);
            if (h)
                o.data[o.len++] = ',';
            if (out_name(&o, p + q, (Py_ssize_t)n) < 0 || out_reserve(&o, 64 + 2 * (rec_end - start) + 16 * nh) < 0)
                goto fail;
            q += (Py_ssize_t)n;
            read_varint(p, end, &q, &n);
            if (n > 0)
                q += (Py_ssize_t)n;
        }
        o.data[o.len++] = ']';
        if (print_data) {
            if (nh) {
                PUT(&o, " headers: [");
                q = headers_at;
                for (int64_t h = 0; h < nh; h++) {
                    read_varint(p, end, &q, &n);
                    if (h)
                        o.data[o.len++] = ',';
                    if (out_name(&o, p + q, (Py_ssize_t)n) < 0 || out_reserve(&o, 64 + 2 * (rec_end - start) + 16 * nh) < 0)
                        goto fail;
                    q += (Py_ssize_t)n;
                    o.data[o.len++] = ':';
                    read_varint(p, end, &q, &n);
                    if (n < 0) {
                        PUT(&o, "null");
                    } else {
                        if (out_text(&o, p + q, (Py_ssize_t)n) < 0 || out_reserve(&o, 64 + 2 * (rec_end - start) + 16 * nh) < 0)
                            goto fail;
                        q += (Py_ssize_t)n;
                    }
                }
                o.data[o.len++] = ']';
            }
            if (key_len >= 0) {
                PUT(&o, " key: ");
                if (out_text(&o, p + key_at, (Py_ssize_t)key_len) < 0 || out_reserve(&o, 64 + 2 * (rec_end - start) + 16 * nh) < 0)
                    goto fail;
            }
            if (value_len >= 0) {
                PUT(&o, " payload: ");
                if (out_text(&o, p + value_at, (Py_ssize_t)value_len) < 0 || out_reserve(&o, 64 + 2 * (rec_end - start) + 16 * nh) < 0)
                    goto fail;
            }
        }
        o.data[o.len++] = '\n';
    }
    if (pos != end) {
        char message[120];
        PyOS_snprintf(message, sizeof(message), "%zd stray byte%s after the batch's %zd record%s", end - pos,
                      end - pos == 1 ? "" : "s", count, count == 1 ? "" : "s");
        PyObject *exc = PyObject_CallFunction(decode_error, "sn", message, pos);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        why = 0;
        goto fail;
    }
    PyBuffer_Release(&view);
    if (check_only) {
        PyMem_Free(o.data);
        return PyLong_FromSsize_t(count);
    }
    return out_finish_utf8(&o);
fail:
    if (why && !PyErr_Occurred())
        raise_failure((enum failure)why, i, start, bad);
    PyBuffer_Release(&view);
    PyMem_Free(o.data);
    return NULL;
}

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *rtype, *err;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &rtype, &err))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)rtype, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record type must be a tuple subclass");
        return NULL;
    }
    Py_XSETREF(record_type, (PyTypeObject *)Py_NewRef(rtype));
    Py_XSETREF(decode_error, Py_NewRef(err));
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------------
 * KRaft metadata records: the table of kafka_tools.format.kraft (one program per record type and
 * version, generated from Kafka's JSON schemas) copied at import into the compact opcode form below,
 * then interpreted here. Same contract as kafka_tools.format.kraft.decoder.decode_metadata_record (the
 * reference, pure Python): the same MetadataRecord, or MetadataDecodeError(message, position) with
 * the same message and position. Every length is checked against the bytes left before it is used.
 * ------------------------------------------------------------------------------------------------- */

enum { K_I8, K_I16, K_I32, K_I64, K_U16, K_U32, K_F64, K_BOOL, K_UUID, K_STR, K_BYTES, K_ARRAY, K_STRUCT,
       K_TAGGED };

typedef struct KProg KProg;

typedef struct {
    PyObject *key;   /* the dict key (str) */
    int op;
    int nullable;
    int elem_op;     /* K_ARRAY: the elements' op */
    KProg *sub;      /* K_STRUCT, or K_ARRAY of K_STRUCT */
    PyObject *deflt; /* K_TAGGED: the value when the tag is absent */
} KStep;

typedef struct {
    uint32_t tag;
    KStep step;
} KTag;

struct KProg {
    int flexible;
    Py_ssize_t nsteps;
    KStep *steps;
    Py_ssize_t ntags;
    KTag *tags;
};

typedef struct {
    PyObject *name; /* NULL: no such type */
    long low, high;
    KProg **progs;  /* by version - low */
} KType;

#define K_MAX_TYPES 256
static KType k_types[K_MAX_TYPES];
static PyObject *k_record_type = NULL;
static PyObject *k_error = NULL;
static PyObject *k_fallback = NULL; /* the known pre-release layouts (pre_release.py), tried on failure */
static PyObject *k_unknown_name = NULL;
static PyObject *k_attr[8] = {NULL};
static Py_ssize_t k_slot[8] = {0}; /* byte offsets of MetadataRecord's slots (0: set by attribute) */

static void
k_fail(Py_ssize_t position, const char *format, ...)
{
    char message[300];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    PyObject *exc = PyObject_CallFunction(k_error, "sn", message, position);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

static const char *
k_key(const KStep *s)
{
    const char *k = PyUnicode_AsUTF8(s->key);
    return k ? k : "?";
}

/* An unsigned varint of at most 5 bytes holding at most 32 bits; -1 with the error set otherwise. */
static int k_uvarint_slow(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint32_t *out, const char *what);

/* The common case inline: one byte. `what` names the varint in an error; it is built by the caller
   only when the slow path fails (see k_uvarint_named). */
static inline int
k_uvarint(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint32_t *out, const char *what)
{
    if (*pos < end && !(b[*pos] & 0x80)) {
        *out = b[(*pos)++];
        return 0;
    }
    return k_uvarint_slow(b, pos, end, out, what);
}

static int
k_uvarint_slow(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint32_t *out, const char *what)
{
    Py_ssize_t start = *pos, p = *pos;
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
        if (shift >= 35) {
            k_fail(start, "varint for %s is longer than 5 bytes", what);
            return -1;
        }
        if (p >= end) {
            k_fail(start, "truncated varint for %s", what);
            return -1;
        }
        uint8_t byte = b[p++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80))
            break;
    }
    if (value > 0xFFFFFFFFu) {
        k_fail(start, "varint for %s exceeds 32 bits", what);
        return -1;
    }
    *pos = p;
    *out = (uint32_t)value;
    return 0;
}

/* A compact (flexible) or classic length: 0 and *n, 1 for null, -1 on error. */
static int
k_length(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, const KStep *s, int flexible, int wide,
         int nullable, Py_ssize_t *n)
{
    Py_ssize_t start = *pos;
    long long len;
    char what[200];
    if (flexible) {
        uint32_t v;
        if (*pos < end && !(b[*pos] & 0x80))
            v = b[(*pos)++];
        else {
            snprintf(what, sizeof what, "%s length", k_key(s));
            if (k_uvarint_slow(b, pos, end, &v, what) < 0)
                return -1;
        }
        len = (long long)v - 1;
    }
    else {
        int size = wide ? 4 : 2;
        snprintf(what, sizeof what, "%s length", k_key(s));
        if (end - *pos < size) {
            k_fail(*pos, "%s needs %d bytes, %zd left", what, size, end - *pos);
            return -1;
        }
        const uint8_t *q = b + *pos;
        len = wide ? (int32_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3])
                   : (int16_t)((uint16_t)q[0] << 8 | q[1]);
        *pos += size;
    }
    if (len < 0) {
        if (len != -1) {
            k_fail(start, "invalid length %lld for %s", len, k_key(s));
            return -1;
        }
        if (!nullable) {
            k_fail(start, "non-nullable field %s is null", k_key(s));
            return -1;
        }
        return 1;
    }
    if (len > end - *pos) {
        k_fail(start, "%s claims %lld bytes, %zd left", k_key(s), len, end - *pos);
        return -1;
    }
    *n = (Py_ssize_t)len;
    return 0;
}

static const char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static PyObject *k_struct(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, const KProg *p);

static PyObject *
k_value(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, const KStep *s, int op, int nullable, int flexible)
{
    static const int sizes[] = {1, 2, 4, 8, 2, 4, 8};
    Py_ssize_t p = *pos;
    if (op <= K_F64) {
        int size = sizes[op];
        if (end - p < size) {
            k_fail(p, "%s needs %d bytes, %zd left", k_key(s), size, end - p);
            return NULL;
        }
        const uint8_t *q = b + p;
        uint64_t v = 0;
        for (int i = 0; i < size; i++)
            v = v << 8 | q[i];
        *pos = p + size;
        switch (op) {
        case K_I8: return PyLong_FromLong((int8_t)v);
        case K_I16: return PyLong_FromLong((int16_t)v);
        case K_I32: return PyLong_FromLong((int32_t)v);
        case K_I64: return PyLong_FromLongLong((int64_t)v);
        case K_U16:
        case K_U32: return PyLong_FromUnsignedLong((unsigned long)v);
        default: {
            double d;
            memcpy(&d, &v, 8);
            return PyFloat_FromDouble(d);
        }
        }
    }
    switch (op) {
    case K_BOOL:
        if (p >= end) {
            k_fail(p, "%s needs 1 byte, 0 left", k_key(s));
            return NULL;
        }
        if (b[p] > 1) {
            k_fail(p, "invalid boolean %d for %s", b[p], k_key(s));
            return NULL;
        }
        *pos = p + 1;
        return PyBool_FromLong(b[p]);
    case K_UUID: {
        if (end - p < 16) {
            k_fail(p, "%s needs 16 bytes, %zd left", k_key(s), end - p);
            return NULL;
        }
        char text[24];
        const uint8_t *q = b + p;
        int t = 0;
        for (int i = 0; i < 15; i += 3) {
            uint32_t v = (uint32_t)q[i] << 16 | (uint32_t)q[i + 1] << 8 | q[i + 2];
            text[t++] = k_b64[v >> 18 & 63];
            text[t++] = k_b64[v >> 12 & 63];
            text[t++] = k_b64[v >> 6 & 63];
            text[t++] = k_b64[v & 63];
        }
        text[t++] = k_b64[q[15] >> 2];
        text[t++] = k_b64[(q[15] & 3) << 4];
        *pos = p + 16;
        return PyUnicode_FromStringAndSize(text, 22);
    }
    case K_STR:
    case K_BYTES: {
        Py_ssize_t n = 0;
        int r = k_length(b, pos, end, s, flexible, op == K_BYTES, nullable, &n);
        if (r < 0)
            return NULL;
        if (r == 1)
            Py_RETURN_NONE;
        p = *pos;
        *pos = p + n;
        if (op == K_BYTES)
            return PyBytes_FromStringAndSize((const char *)b + p, n);
        PyObject *text = PyUnicode_DecodeUTF8((const char *)b + p, n, NULL);
        if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyObject *type, *value, *tb;
            Py_ssize_t at = 0;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (value == NULL || PyUnicodeDecodeError_GetStart(value, &at) < 0)
                PyErr_Clear();
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            k_fail(p + at, "invalid UTF-8 in %s", k_key(s));
        }
        return text;
    }
    case K_ARRAY: {
        Py_ssize_t n = 0;
        int r = k_length(b, pos, end, s, flexible, 1, nullable, &n);
        if (r < 0)
            return NULL;
        if (r == 1)
            Py_RETURN_NONE;
        PyObject *list = PyList_New(n);
        if (list == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = s->elem_op == K_STRUCT ? k_struct(b, pos, end, s->sub)
                                                    : k_value(b, pos, end, s, s->elem_op, 0, flexible);
            if (item == NULL) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, i, item);
        }
        return list;
    }
    case K_STRUCT:
        if (nullable) {
            if (p >= end) {
                k_fail(p, "%s presence marker needs 1 byte, 0 left", k_key(s));
                return NULL;
            }
            if (b[p] == 0xFF) {
                *pos = p + 1;
                Py_RETURN_NONE;
            }
            if (b[p] != 1) {
                k_fail(p, "invalid presence marker %d for %s", b[p], k_key(s));
                return NULL;
            }
            *pos = p + 1;
        }
        return k_struct(b, pos, end, s->sub);
    }
    PyErr_SetString(PyExc_SystemError, "unknown KRaft op");
    return NULL;
}

static PyObject *
k_struct(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, const KProg *p)
{
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < p->nsteps; i++) {
        const KStep *s = &p->steps[i];
        PyObject *v;
        if (s->op == K_TAGGED) {
            if (PyList_CheckExact(s->deflt))
                v = PyList_GetSlice(s->deflt, 0, PyList_GET_SIZE(s->deflt));
            else if (PyDict_CheckExact(s->deflt))
                v = PyDict_Copy(s->deflt);
            else
                v = Py_NewRef(s->deflt);
        }
        else
            v = k_value(b, pos, end, s, s->op, s->nullable, p->flexible);
        if (v == NULL || PyDict_SetItem(out, s->key, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
    }
    if (!p->flexible)
        return out;
    Py_ssize_t start = *pos;
    uint32_t count;
    if (k_uvarint(b, pos, end, &count, "tagged field count") < 0)
        goto fail;
    if ((long long)count * 2 > end - *pos) {
        k_fail(start, "tagged field count %u exceeds the %zd bytes left", count, end - *pos);
        goto fail;
    }
    long long last = -1;
    for (uint32_t i = 0; i < count; i++) {
        Py_ssize_t tag_pos = *pos;
        uint32_t tag, size;
        if (k_uvarint(b, pos, end, &tag, "tag") < 0)
            goto fail;
        if ((long long)tag <= last) {
            k_fail(tag_pos, "tagged field %u out of order or repeated", tag);
            goto fail;
        }
        last = tag;
        if (*pos < end && !(b[*pos] & 0x80))
            size = b[(*pos)++];
        else {
            char what[64];
            snprintf(what, sizeof what, "tagged field %u size", tag);
            if (k_uvarint_slow(b, pos, end, &size, what) < 0)
                goto fail;
        }
        if ((long long)size > end - *pos) {
            k_fail(*pos, "tagged field %u needs %u bytes, %zd left", tag, size, end - *pos);
            goto fail;
        }
        const KTag *t = NULL;
        for (Py_ssize_t j = 0; j < p->ntags; j++)
            if (p->tags[j].tag == tag) {
                t = &p->tags[j];
                break;
            }
        if (t == NULL) { /* a tag this version does not know: skipped */
            *pos += size;
            continue;
        }
        Py_ssize_t field_end = *pos + size;
        PyObject *v = k_value(b, pos, field_end, &t->step, t->step.op, t->step.nullable, p->flexible);
        if (v == NULL)
            goto fail;
        if (*pos != field_end) {
            Py_DECREF(v);
            k_fail(*pos, "tagged field %s (tag %u) left %zd of %u bytes unread", k_key(&t->step), tag,
                   field_end - *pos, size);
            goto fail;
        }
        int r = PyDict_SetItem(out, t->step.key, v);
        Py_DECREF(v);
        if (r < 0)
            goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* -- the table, from kafka_tools.format.kraft.decoder.Program objects ------------------------------ */

static KProg *k_compile(PyObject *program);

static int
k_step(PyObject *step, KStep *s)
{
    /* step: (key, op, arg) as in decoder.Program.steps */
    if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) != 3) {
        PyErr_SetString(PyExc_TypeError, "a KRaft step is (key, op, arg)");
        return -1;
    }
    PyObject *arg = PyTuple_GET_ITEM(step, 2);
    memset(s, 0, sizeof *s);
    s->key = Py_NewRef(PyTuple_GET_ITEM(step, 0));
    s->op = (int)PyLong_AsLong(PyTuple_GET_ITEM(step, 1));
    if (s->op == K_TAGGED)
        s->deflt = Py_NewRef(arg);
    else if (s->op == K_ARRAY) { /* (elem_op, elem_arg, nullable) */
        s->elem_op = (int)PyLong_AsLong(PyTuple_GET_ITEM(arg, 0));
        s->nullable = PyObject_IsTrue(PyTuple_GET_ITEM(arg, 2));
        if (s->elem_op == K_STRUCT && (s->sub = k_compile(PyTuple_GET_ITEM(PyTuple_GET_ITEM(arg, 1), 0))) == NULL)
            return -1;
    }
    else if (s->op == K_STRUCT) { /* (program, nullable) */
        s->nullable = PyObject_IsTrue(PyTuple_GET_ITEM(arg, 1));
        if ((s->sub = k_compile(PyTuple_GET_ITEM(arg, 0))) == NULL)
            return -1;
    }
    else
        s->nullable = PyObject_IsTrue(arg);
    return PyErr_Occurred() ? -1 : 0;
}

static KProg *
k_compile(PyObject *program)
{
    PyObject *steps = PyObject_GetAttrString(program, "steps");
    PyObject *tags = PyObject_GetAttrString(program, "tags");
    PyObject *flexible = PyObject_GetAttrString(program, "flexible");
    KProg *p = NULL;
    if (steps == NULL || tags == NULL || flexible == NULL || !PyTuple_Check(steps) || !PyDict_Check(tags))
        goto done;
    p = PyMem_Calloc(1, sizeof *p);
    if (p == NULL)
        goto done;
    p->flexible = PyObject_IsTrue(flexible);
    p->nsteps = PyTuple_GET_SIZE(steps);
    p->steps = PyMem_Calloc(p->nsteps + 1, sizeof(KStep));
    p->ntags = PyDict_GET_SIZE(tags);
    p->tags = PyMem_Calloc(p->ntags + 1, sizeof(KTag));
    if (p->steps == NULL || p->tags == NULL) {
        p = NULL; /* leaked on a failed import only */
        goto done;
    }
    for (Py_ssize_t i = 0; i < p->nsteps; i++)
        if (k_step(PyTuple_GET_ITEM(steps, i), &p->steps[i]) < 0) {
            p = NULL;
            goto done;
        }
    Py_ssize_t at = 0, j = 0;
    PyObject *tag, *step;
    while (PyDict_Next(tags, &at, &tag, &step)) {
        p->tags[j].tag = (uint32_t)PyLong_AsUnsignedLong(tag);
        if (k_step(step, &p->tags[j].step) < 0) {
            p = NULL;
            goto done;
        }
        j++;
    }
done:
    if (p == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "not a KRaft program");
    Py_XDECREF(steps);
    Py_XDECREF(tags);
    Py_XDECREF(flexible);
    return p;
}

static PyObject *
kraft_configure(PyObject *self, PyObject *args)
{
    /* (types, record_class, error_class[, fallback]): types maps type id -> (name, {version: Program});
     * fallback(value) -> MetadataRecord or None is called on a value the table fails on */
    PyObject *types, *rclass, *err, *fallback = Py_None;
    if (!PyArg_ParseTuple(args, "O!O!O|O", &PyDict_Type, &types, &PyType_Type, &rclass, &err, &fallback))
        return NULL;
    Py_XSETREF(k_fallback, fallback == Py_None ? NULL : Py_NewRef(fallback));
    static const char *names[8] = {"frame_version", "type_id", "type_name", "version", "fields", "known", "raw",
                                   "layout"};
    for (int i = 0; i < 8; i++)
        if (k_attr[i] == NULL && (k_attr[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    if (k_unknown_name == NULL && (k_unknown_name = PyUnicode_InternFromString("Unknown")) == NULL)
        return NULL;
    Py_ssize_t at = 0;
    PyObject *key, *value;
    while (PyDict_Next(types, &at, &key, &value)) {
        long id = PyLong_AsLong(key);
        if (id < 0 || id >= K_MAX_TYPES || !PyTuple_Check(value) || PyTuple_GET_SIZE(value) != 2) {
            PyErr_Format(PyExc_ValueError, "KRaft record type %ld cannot be tabled", id);
            return NULL;
        }
        PyObject *programs = PyTuple_GET_ITEM(value, 1);
        KType *t = &k_types[id];
        long low = LONG_MAX, high = -1;
        Py_ssize_t p = 0;
        PyObject *version, *program;
        while (PyDict_Next(programs, &p, &version, &program)) {
            long v = PyLong_AsLong(version);
            low = v < low ? v : low;
            high = v > high ? v : high;
        }
        if (high < 0)
            continue;
        t->progs = PyMem_Calloc(high - low + 1, sizeof(KProg *));
        if (t->progs == NULL)
            return PyErr_NoMemory();
        t->low = low;
        t->high = high;
        p = 0;
        while (PyDict_Next(programs, &p, &version, &program))
            if ((t->progs[PyLong_AsLong(version) - low] = k_compile(program)) == NULL)
                return NULL;
        t->name = Py_NewRef(PyTuple_GET_ITEM(value, 0));
    }
    for (int i = 0; i < 8; i++) {
        /* A slots dataclass keeps each field in a member descriptor: write it at its offset. */
        PyObject *descr = PyDict_GetItemWithError(((PyTypeObject *)rclass)->tp_dict, k_attr[i]);
        k_slot[i] = 0;
        if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
            if (member->type == T_OBJECT_EX)
                k_slot[i] = member->offset;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    Py_XSETREF(k_record_type, Py_NewRef(rclass));
    Py_XSETREF(k_error, Py_NewRef(err));
    Py_RETURN_NONE;
}

/* A MetadataRecord (a frozen dataclass with slots) filled without its __init__: object.__setattr__. */
static PyObject *
k_record(uint32_t frame, uint32_t type_id, PyObject *name, uint32_t version, PyObject *fields, int known,
         PyObject *raw)
{
    PyTypeObject *type = (PyTypeObject *)k_record_type;
    PyObject *obj = type->tp_alloc(type, 0);
    if (obj == NULL)
        return NULL;
    PyObject *values[8] = {PyLong_FromUnsignedLong(frame), PyLong_FromUnsignedLong(type_id), Py_NewRef(name),
                           PyLong_FromUnsignedLong(version), Py_NewRef(fields), PyBool_FromLong(known),
                           Py_NewRef(raw), Py_NewRef(Py_None)}; /* layout: the released schema's */
    int ok = 1;
    for (int i = 0; i < 8; i++) {
        if (ok && values[i] != NULL && k_slot[i]) {
            PyObject **slot = (PyObject **)((char *)obj + k_slot[i]);
            Py_XSETREF(*slot, values[i]); /* the slot takes the reference */
            continue;
        }
        if (ok && (values[i] == NULL || PyObject_GenericSetAttr(obj, k_attr[i], values[i]) < 0))
            ok = 0;
        Py_XDECREF(values[i]);
    }
    if (!ok) {
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

static PyObject *
kraft_decode_metadata(PyObject *self, PyObject *arg)
{
    if (k_record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kraft_configure() was not called");
        return NULL;
    }
    PyObject *raw;
    if (PyBytes_CheckExact(arg))
        raw = Py_NewRef(arg);
    else if ((raw = PyBytes_FromObject(arg)) == NULL)
        return NULL;
    const uint8_t *b = (const uint8_t *)PyBytes_AS_STRING(raw);
    Py_ssize_t end = PyBytes_GET_SIZE(raw), pos = 0;
    uint32_t frame, type_id, version;
    PyObject *result = NULL, *fields = NULL;
    if (k_uvarint(b, &pos, end, &frame, "frame version") < 0)
        goto done;
    if (frame != 1) {
        k_fail(0, "unknown metadata frame version %u (expected 1)", frame);
        goto done;
    }
    if (k_uvarint(b, &pos, end, &type_id, "record type") < 0 ||
        k_uvarint(b, &pos, end, &version, "record version") < 0)
        goto done;
    KType *t = type_id < K_MAX_TYPES ? &k_types[type_id] : NULL;
    if (t == NULL || t->name == NULL || version < (uint32_t)t->low || version > (uint32_t)t->high ||
        t->progs[version - t->low] == NULL) {
        fields = PyDict_New();
        if (fields != NULL)
            result = k_record(frame, type_id, t && t->name ? t->name : k_unknown_name, version, fields, 0, raw);
        goto done;
    }
    fields = k_struct(b, &pos, end, t->progs[version - t->low]);
    if (fields == NULL)
        goto done;
    if (pos != end) {
        k_fail(pos, "%zd bytes of garbage after %s v%u", end - pos, PyUnicode_AsUTF8(t->name), version);
        goto done;
    }
    result = k_record(frame, type_id, t->name, version, fields, 1, raw);
done:
    if (result == NULL && k_fallback != NULL && PyErr_ExceptionMatches(k_error)) {
        /* the released schema failed: a known pre-release layout that takes the value exactly wins,
         * else the schema's error stands */
        PyObject *etype, *evalue, *etb;
        PyErr_Fetch(&etype, &evalue, &etb);
        PyObject *other = PyObject_CallOneArg(k_fallback, raw);
        if (other != NULL && other != Py_None) {
            Py_XDECREF(etype);
            Py_XDECREF(evalue);
            Py_XDECREF(etb);
            result = other;
        } else {
            Py_XDECREF(other);
            PyErr_Clear();
            PyErr_Restore(etype, evalue, etb);
        }
    }
    Py_XDECREF(fields);
    Py_DECREF(raw);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(data, count, base_offset, base_timestamp, log_append_time, base_sequence) -> list"},
    {"scan_messages", scan_messages, METH_VARARGS,
     "scan_messages(buf, at, limit, end, prev, lo, hi) -> (at, count, first, last, max_timestamp, gaps)"},
    {"scan_inner", scan_inner, METH_VARARGS, "scan_inner(data) -> (count, first, last, highest) or None"},
    {"format_messages", format_messages, METH_VARARGS,
     "format_messages(buf, position, json, print_data, file_json[, wrapper_position, shift, append_time]) -> bytes"},
    {"format_records", format_records, METH_VARARGS,
     "format_records(records, label, print_data) -> bytes: DumpLogSegments' record lines (UTF-8)"},
    {"format_payload", format_payload, METH_VARARGS,
     "format_payload(data, count, base_offset, base_timestamp, log_append_time, base_sequence, label, print_data, "
     "check_only) -> bytes (or the count): format_records' lines from the records section"},
    {"configure", configure, METH_VARARGS, "configure(record_type, error_type): set the types to produce"},
    {"kraft_configure", kraft_configure, METH_VARARGS,
     "kraft_configure(types, record_class, error_class): the KRaft metadata table, {id: (name, {version: Program})}"},
    {"kraft_decode_metadata", kraft_decode_metadata, METH_O,
     "kraft_decode_metadata(value) -> MetadataRecord: decode_metadata_record in C"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", "C hot loops of the format decoder.", -1,
                                    methods};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    make_crc_table();
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL)
        return NULL;
    return PyModule_Create(&module);
}
