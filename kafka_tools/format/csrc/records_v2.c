/*
 * The v2 record reader: the varint records of an uncompressed records section (DefaultRecord.java),
 * each length checked against the record and the section once, here; then decode_records, which
 * makes Record tuples of what it reads. Same contract as record_batch.decode_records_py.
 */
#include "record_reader.h"

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

int
records_args(PyObject *args, Py_buffer *view, batch_t *b, PyObject **rest)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (rest == NULL && n != 6) {
        PyErr_Format(PyExc_TypeError, "function takes exactly 6 arguments (%zd given)", n);
        return -1;
    }
    PyObject *head = PyTuple_GetSlice(args, 0, 6);
    if (head == NULL)
        return -1;
    PyObject *log_append_obj;
    int ok = PyArg_ParseTuple(head, "y*nLLOL", view, &b->count, &b->base_offset, &b->base_timestamp,
                              &log_append_obj, &b->base_sequence);
    if (ok && parse_batch(log_append_obj, b) < 0) {
        PyBuffer_Release(view);
        ok = 0;
    }
    Py_DECREF(head);
    if (ok && rest != NULL && (*rest = PyTuple_GetSlice(args, 6, n)) == NULL) {
        PyBuffer_Release(view);
        ok = 0;
    }
    return ok ? 0 : -1;
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
    if (records_args(args, &view, &b, NULL) < 0)
        return NULL;
    PyObject *out = NULL;
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

/* record_stats(data, count, base_offset, base_timestamp, log_append_time, base_sequence)
 *   -> (records, min_timestamp or None)
 * What a `batches` row needs of the records: read as decode_records reads them (the same error), no
 * Record made. */
PyObject *
record_stats(PyObject *module, PyObject *args)
{
    speedups_state *st = configured_state(module);
    if (st == NULL)
        return NULL;
    Py_buffer view;
    batch_t b;
    if (records_args(args, &view, &b, NULL) < 0)
        return NULL;
    PyObject *out = NULL;
    records_t r;
    record_t rec;
    long long min_ts = 0;
    records_open(&r, (const unsigned char *)view.buf, view.len, &b);
    int more;
    while ((more = records_next(&r, &rec)) > 0)
        if (r.index == 1 || rec.timestamp < min_ts)
            min_ts = rec.timestamp;
    if (more < 0) {
        records_raise(&r, st->decode_error);
        goto done;
    }
    if (r.index == 0)
        out = Py_BuildValue("nO", r.index, Py_None);
    else
        out = Py_BuildValue("nL", r.index, min_ts);
done:
    PyBuffer_Release(&view);
    return out;
}
