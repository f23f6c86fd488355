/*
 * The v2 record reader (DefaultRecord.java), inline: decode_records (records_v2.c) and the record
 * writers (writers.c) both run it once a record, so it is compiled into each. Every varint and length
 * is checked here, once, against the record and the section; headers_next then re-reads headers that
 * records_next has checked. The texts of its failures: records_v2.c (records_raise).
 */
#ifndef KTOOL_RECORD_READER_H
#define KTOOL_RECORD_READER_H

#include "speedups.h"

static inline void
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

static inline int
records_fail(records_t *r, int why, long long bad)
{
    r->why = why;
    r->bad = bad;
    return -1;
}

/* A key or value: its length within the section (past it: PAST_END, as Python's next read finds:
 * Python slices short, and a field that ends exactly at the end of the section still leaves the
 * next read past it). */
static inline int
read_field(records_t *r, field_t *f, int invalid)
{
    int64_t n;
    int why = cursor_varint(&r->c, &n);
    if (why)
        return records_fail(r, why, 0);
    f->ptr = r->c.p + r->c.pos;
    if (n == -1) {
        f->len = -1;
        return 0;
    }
    if (n < -1)
        return records_fail(r, invalid, n);
    if (n >= (int64_t)(r->c.end - r->c.pos))
        return records_fail(r, PAST_END, 0);
    f->len = (Py_ssize_t)n;
    r->c.pos += f->len;
    return 0;
}

/* The headers' count and lengths, within the record (each header takes 2 bytes at least: a count
 * is compared by division, as count * 2 can wrap). */
static inline int
read_headers(records_t *r, Py_ssize_t rec_end, record_t *rec)
{
    int64_t count, n;
    int why = cursor_varint(&r->c, &count);
    if (why)
        return records_fail(r, why, 0);
    Py_ssize_t left = rec_end - r->c.pos;
    if (count != 0 && (count < 0 || left < 0 || count > (int64_t)(left / 2)))
        return records_fail(r, BAD_HEADER_COUNT, count);
    rec->header_count = count;
    rec->headers_at = r->c.pos;
    for (int64_t h = 0; h < count; h++) {
        if ((why = cursor_varint(&r->c, &n)))
            return records_fail(r, why, 0);
        if (n < 0 || n > (int64_t)(rec_end - r->c.pos))
            return records_fail(r, BAD_HEADER_KEY, n);
        r->c.pos += (Py_ssize_t)n;
        if ((why = cursor_varint(&r->c, &n)))
            return records_fail(r, why, 0);
        /* -1 is a null value wherever it ends: a record read past its length is said once, after */
        if (n < -1 || (n >= 0 && n > (int64_t)(rec_end - r->c.pos)))
            return records_fail(r, BAD_HEADER_VALUE, n);
        if (n > 0)
            r->c.pos += (Py_ssize_t)n;
    }
    return 0;
}

static inline int
records_next(records_t *r, record_t *rec)
{
    cursor_t *c = &r->c;
    if (r->index >= r->batch.count) {
        if (c->pos == c->end)
            return 0;
        r->at = c->pos;
        return records_fail(r, STRAY_BYTES, c->end - c->pos);
    }
    r->at = rec->start = c->pos;
    int64_t length, ts_delta, off_delta;
    int why = cursor_varint(c, &length);
    if (why)
        return records_fail(r, why, 0);
    if (length < 6 || length > (int64_t)(c->end - c->pos))
        return records_fail(r, BAD_LENGTH, length);
    rec->end = c->pos + (Py_ssize_t)length;
    c->pos += 1; /* record attributes: unused */
    if ((why = cursor_varint(c, &ts_delta)) || (why = cursor_varint(c, &off_delta)))
        return records_fail(r, why, 0);
    if (read_field(r, &rec->key, BAD_KEY) < 0 || read_field(r, &rec->value, BAD_VALUE) < 0 ||
        read_headers(r, rec->end, rec) < 0)
        return -1;
    if (c->pos != rec->end)
        return records_fail(r, FIELDS_MISMATCH, length);
    /* Kafka's offsets and timestamps are int64: a sum past them is a corrupt record. */
    const batch_t *b = &r->batch;
    if (__builtin_add_overflow(b->base_offset, (long long)off_delta, &rec->offset))
        return records_fail(r, OFFSET_OVERFLOW, off_delta);
    rec->timestamp = b->log_append_time;
    if (!b->log_append && __builtin_add_overflow(b->base_timestamp, (long long)ts_delta, &rec->timestamp))
        return records_fail(r, TIMESTAMP_OVERFLOW, ts_delta);
    /* The sequence wraps to 31 bits, as Kafka's does: from the exact sum's low bits. */
    rec->sequence = b->base_sequence == NO_SEQUENCE
                        ? NO_SEQUENCE
                        : (long long)(((uint64_t)b->base_sequence + (uint64_t)off_delta) & 0x7FFFFFFF);
    r->index++;
    return 1;
}

static inline void
headers_of_record(headers_t *h, const unsigned char *p, const record_t *rec)
{
    h->p = p;
    h->pos = rec->headers_at;
    h->left = rec->header_count;
    h->tuple = NULL;
    h->index = 0;
}

static inline int
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

#endif
