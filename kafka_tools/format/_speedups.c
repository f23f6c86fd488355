/*
 * The hot loop of a full decode, in C: the varint records of an uncompressed v2 records section.
 *
 * Same contract as kafka_tools.format.record_batch.decode_records_py (the reference, pure Python):
 * returns a list of Record tuples, raises RecordDecodeError(message, position) on any inconsistency.
 * Every length is checked against the section before it is used, so no input can make this read
 * out of bounds or allocate more than the section's own size.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyTypeObject *record_type = NULL;
static PyObject *decode_error = NULL;
static PyObject *empty_tuple = NULL;

#define NO_SEQUENCE (-1)

/* Why a record could not be decoded; the message texts equal the pure-Python decoder's. */
enum failure { PAST_END = 1, TOO_LONG, BAD_LENGTH, BAD_KEY, BAD_VALUE, BAD_HEADER_COUNT, BAD_HEADER_KEY,
               BAD_HEADER_VALUE, FIELDS_MISMATCH };

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
    if (count < 0 || count * 2 > (int64_t)(rec_end - *pos)) {
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
        long long sequence = base_sequence == NO_SEQUENCE ? NO_SEQUENCE : ((base_sequence + off_delta) & 0x7FFFFFFF);
        PyObject *rec = record_type->tp_alloc(record_type, 7);
        PyObject *o_offset = PyLong_FromLongLong(base_offset + off_delta);
        PyObject *o_ts = PyLong_FromLongLong(log_append ? log_append_time : base_timestamp + ts_delta);
        PyObject *o_seq = PyLong_FromLongLong(sequence);
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

static PyMethodDef methods[] = {
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(data, count, base_offset, base_timestamp, log_append_time, base_sequence) -> list"},
    {"configure", configure, METH_VARARGS, "configure(record_type, error_type): set the types to produce"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", "C hot loops of the format decoder.", -1,
                                    methods};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL)
        return NULL;
    return PyModule_Create(&module);
}
