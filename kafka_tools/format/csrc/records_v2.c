/*
 * The v2 record reader: the varint records of an uncompressed records section (DefaultRecord.java),
 * each length checked against the record and the section once, here; then decode_records, which
 * makes Record tuples of what it reads. Same contract as record_batch.decode_records_py.
 */
#include "speedups.h"

static const char *
failure_text(int why)
{
    switch (why) {
    case PAST_END: return "runs past the end of the batch";
    case TOO_LONG: return "varint longer than 10 bytes";
    case BAD_LENGTH: return "length %lld is impossible";
    case BAD_KEY: return "key length %lld is invalid";
    case BAD_VALUE: return "value length %lld is invalid";
    case BAD_HEADER_COUNT: return "header count %lld is impossible";
    case BAD_HEADER_KEY: return "header key length %lld is invalid";
    case BAD_HEADER_VALUE: return "header value length %lld is invalid";
    case OFFSET_OVERFLOW: return "offset delta %lld takes the offset past int64";
    case TIMESTAMP_OVERFLOW: return "timestamp delta %lld takes the timestamp past int64";
    default: return "fields do not end where its length %lld says";
    }
}

void
records_raise(const records_t *r, PyObject *error_class)
{
    char message[200];
    if (r->why == STRAY_BYTES) {
        Py_ssize_t n = (Py_ssize_t)r->bad, count = r->batch.count;
        PyOS_snprintf(message, sizeof(message), "%zd stray byte%s after the batch's %zd record%s", n,
                      n == 1 ? "" : "s", count, count == 1 ? "" : "s");
    }
    else {
        char detail[120];
        PyOS_snprintf(detail, sizeof(detail), failure_text(r->why), r->bad);
        PyOS_snprintf(message, sizeof(message), "record %zd: %s", r->index, detail);
    }
    raise_at(error_class, message, r->at);
}

void
records_open(records_t *r, const unsigned char *p, Py_ssize_t len, const batch_t *batch)
{
    r->c.p = p;
    r->c.pos = 0;
    r->c.end = len;
    r->batch = *batch;
    r->index = 0;
    r->why = OK;
    r->bad = 0;
    r->at = 0;
}

static int
fail(records_t *r, int why, long long bad)
{
    r->why = why;
    r->bad = bad;
    return -1;
}

/* A key or value: its length within the section (past it: PAST_END, as Python's next read finds:
 * Python slices short, and a field that ends exactly at the end of the section still leaves the
 * next read past it). */
static int
read_field(records_t *r, field_t *f, int invalid)
{
    int64_t n;
    int why = cursor_varint(&r->c, &n);
    if (why)
        return fail(r, why, 0);
    f->ptr = r->c.p + r->c.pos;
    if (n == -1) {
        f->len = -1;
        return 0;
    }
    if (n < -1)
        return fail(r, invalid, n);
    if (n >= (int64_t)(r->c.end - r->c.pos))
        return fail(r, PAST_END, 0);
    f->len = (Py_ssize_t)n;
    r->c.pos += f->len;
    return 0;
}

/* The headers' count and lengths, within the record (each header takes 2 bytes at least: a count
 * is compared by division, as count * 2 can wrap). */
static int
read_headers(records_t *r, Py_ssize_t rec_end, record_t *rec)
{
    int64_t count, n;
    int why = cursor_varint(&r->c, &count);
    if (why)
        return fail(r, why, 0);
    Py_ssize_t left = rec_end - r->c.pos;
    if (count != 0 && (count < 0 || left < 0 || count > (int64_t)(left / 2)))
        return fail(r, BAD_HEADER_COUNT, count);
    rec->header_count = count;
    rec->headers_at = r->c.pos;
    for (int64_t h = 0; h < count; h++) {
        if ((why = cursor_varint(&r->c, &n)))
            return fail(r, why, 0);
        if (n < 0 || n > (int64_t)(rec_end - r->c.pos))
            return fail(r, BAD_HEADER_KEY, n);
        r->c.pos += (Py_ssize_t)n;
        if ((why = cursor_varint(&r->c, &n)))
            return fail(r, why, 0);
        if (n < -1 || n > (int64_t)(rec_end - r->c.pos))
            return fail(r, BAD_HEADER_VALUE, n);
        if (n > 0)
            r->c.pos += (Py_ssize_t)n;
    }
    return 0;
}

int
records_next(records_t *r, record_t *rec)
{
    cursor_t *c = &r->c;
    if (r->index >= r->batch.count) {
        if (c->pos == c->end)
            return 0;
        r->at = c->pos;
        return fail(r, STRAY_BYTES, c->end - c->pos);
    }
    r->at = rec->start = c->pos;
    int64_t length, ts_delta, off_delta;
    int why = cursor_varint(c, &length);
    if (why)
        return fail(r, why, 0);
    if (length < 6 || length > (int64_t)(c->end - c->pos))
        return fail(r, BAD_LENGTH, length);
    rec->end = c->pos + (Py_ssize_t)length;
    c->pos += 1; /* record attributes: unused */
    if ((why = cursor_varint(c, &ts_delta)) || (why = cursor_varint(c, &off_delta)))
        return fail(r, why, 0);
    if (read_field(r, &rec->key, BAD_KEY) < 0 || read_field(r, &rec->value, BAD_VALUE) < 0 ||
        read_headers(r, rec->end, rec) < 0)
        return -1;
    if (c->pos != rec->end)
        return fail(r, FIELDS_MISMATCH, length);
    /* Kafka's offsets and timestamps are int64: a sum past them is a corrupt record. */
    const batch_t *b = &r->batch;
    if (__builtin_add_overflow(b->base_offset, (long long)off_delta, &rec->offset))
        return fail(r, OFFSET_OVERFLOW, off_delta);
    rec->timestamp = b->log_append_time;
    if (!b->log_append && __builtin_add_overflow(b->base_timestamp, (long long)ts_delta, &rec->timestamp))
        return fail(r, TIMESTAMP_OVERFLOW, ts_delta);
    /* The sequence wraps to 31 bits, as Kafka's does: from the exact sum's low bits. */
    rec->sequence = b->base_sequence == NO_SEQUENCE
                        ? NO_SEQUENCE
                        : (long long)(((uint64_t)b->base_sequence + (uint64_t)off_delta) & 0x7FFFFFFF);
    r->index++;
    return 1;
}

void
headers_of_record(headers_t *h, const unsigned char *p, const record_t *rec)
{
    h->p = p;
    h->pos = rec->headers_at;
    h->left = rec->header_count;
    h->tuple = NULL;
    h->index = 0;
}

int
headers_next(headers_t *h, field_t *key, field_t *value)
{
    if (h->tuple != NULL) {
        if (h->index >= PyTuple_GET_SIZE(h->tuple))
            return 0;
        PyObject *pair = PyTuple_GET_ITEM(h->tuple, h->index++);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0)) ||
            (PyTuple_GET_ITEM(pair, 1) != Py_None && !PyBytes_Check(PyTuple_GET_ITEM(pair, 1)))) {
            PyErr_SetString(PyExc_TypeError, "headers must be (str, bytes) pairs");
            return -1;
        }
        const char *k = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &key->len);
        if (k == NULL)
            return -1;
        key->ptr = (const unsigned char *)k;
        PyObject *v = PyTuple_GET_ITEM(pair, 1);
        value->ptr = v == Py_None ? NULL : (const unsigned char *)PyBytes_AS_STRING(v);
        value->len = v == Py_None ? -1 : PyBytes_GET_SIZE(v);
        return 1;
    }
    if (h->left <= 0)
        return 0;
    h->left--;
    /* checked by read_headers: each varint and length lies within the record */
    cursor_t c = {h->p, h->pos, PY_SSIZE_T_MAX};
    int64_t n = 0;
    cursor_varint(&c, &n);
    key->ptr = h->p + c.pos;
    key->len = (Py_ssize_t)n;
    c.pos += key->len;
    cursor_varint(&c, &n);
    value->ptr = h->p + c.pos;
    value->len = n < 0 ? -1 : (Py_ssize_t)n;
    if (n > 0)
        c.pos += value->len;
    h->pos = c.pos;
    return 1;
}

int
parse_batch(PyObject *log_append_obj, batch_t *b)
{
    b->log_append = log_append_obj != Py_None;
    b->log_append_time = 0;
    if (b->log_append) {
        b->log_append_time = PyLong_AsLongLong(log_append_obj);
        if (b->log_append_time == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

static PyObject *
field_bytes(const field_t *f)
{
    if (f->len < 0)
        return Py_NewRef(Py_None);
    return PyBytes_FromStringAndSize((const char *)f->ptr, f->len);
}

static PyObject *
header_tuple(speedups_state *st, const unsigned char *p, const record_t *rec)
{
    if (rec->header_count == 0)
        return Py_NewRef(st->empty_tuple);
    /* at most (record length) / 2 headers: checked by read_headers */
    PyObject *headers = PyTuple_New((Py_ssize_t)rec->header_count);
    if (headers == NULL)
        return NULL;
    headers_t h;
    headers_of_record(&h, p, rec);
    field_t key, value;
    for (Py_ssize_t i = 0; headers_next(&h, &key, &value) > 0; i++) {
        PyObject *k = PyUnicode_DecodeUTF8((const char *)key.ptr, key.len, "replace");
        PyObject *v = k == NULL ? NULL : field_bytes(&value);
        PyObject *pair = v == NULL ? NULL : PyTuple_Pack(2, k, v);
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(headers, i, pair);
    }
    return headers;
}

static PyObject *
record_tuple(speedups_state *st, const unsigned char *p, const record_t *rec)
{
    PyObject *rec_obj = st->record_type->tp_alloc(st->record_type, 7);
    if (rec_obj == NULL)
        return NULL;
    PyObject *items[7] = {PyLong_FromLongLong(rec->offset), PyLong_FromLongLong(rec->timestamp),
                          field_bytes(&rec->key), field_bytes(&rec->value), header_tuple(st, p, rec),
                          PyLong_FromLongLong(rec->sequence), PyLong_FromSsize_t(rec->end - rec->start)};
    int ok = 1;
    for (int i = 0; i < 7; i++) {
        ok = ok && items[i] != NULL;
        PyTuple_SET_ITEM(rec_obj, i, items[i]); /* NULL items are skipped by the tuple's dealloc */
    }
    if (!ok) {
        Py_DECREF(rec_obj);
        return NULL;
    }
    return rec_obj;
}

/* decode_records(data, count, base_offset, base_timestamp, log_append_time, base_sequence) -> list */
PyObject *
decode_records(PyObject *module, PyObject *args)
{
    speedups_state *st = configured_state(module);
    if (st == NULL)
        return NULL;
    Py_buffer view;
    batch_t b;
    PyObject *log_append_obj;
    if (!PyArg_ParseTuple(args, "y*nLLOL", &view, &b.count, &b.base_offset, &b.base_timestamp, &log_append_obj,
                          &b.base_sequence))
        return NULL;
    PyObject *out = NULL;
    if (parse_batch(log_append_obj, &b) < 0)
        goto done;
    /* Never preallocate from the (untrusted) count: the list grows only as records are found. */
    if ((out = PyList_New(0)) == NULL)
        goto done;
    records_t r;
    record_t rec;
    records_open(&r, (const unsigned char *)view.buf, view.len, &b);
    int more;
    while ((more = records_next(&r, &rec)) > 0) {
        PyObject *item = record_tuple(st, r.c.p, &rec);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(item);
    }
    if (more < 0) {
        records_raise(&r, st->decode_error);
        Py_CLEAR(out);
    }
done:
    PyBuffer_Release(&view);
    return out;
}
