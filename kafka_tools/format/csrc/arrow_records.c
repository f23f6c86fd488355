/*
 * Records straight into Arrow columns: the `records` table of `ktool scan` (batch_position, offset,
 * timestamp, key, value, headers) built in C buffers and handed to pyarrow through the Arrow C data
 * interface (the "arrow_schema" / "arrow_array" PyCapsules), without a Python object a record.
 *
 * RecordColumns is a builder: add_v2 runs the one v2 record reader (record_reader.h) over a records
 * section, add_messages the magic 0/1 message reader (read_message) over a message set, add_records
 * takes Record tuples (what the Python decoders give for anything else: 0.7 messages, irregular
 * wrappers). A batch whose records fail to decode adds no row (the builder rolls back to where it
 * was) and raises the reader's error, as Record decoding does. finish() moves the buffers into an
 * exported ArrowArray and starts empty again.
 *
 * Buffers are malloc'd (not PyMem): pyarrow may release an array on any thread, without the GIL; a
 * released batch's buffers are kept for the next batches (arrow_buffers.c).
 * Every exported array and schema is one block with a count of its live nodes; each node's release
 * callback releases its children still owned, then drops one count, and the last frees the block.
 * The buffers: arrow_buffers.c; the export: arrow_export.c; their shared types: arrow_columns.h.
 */
#include "arrow_columns.h"


static mark_t
columns_mark(const columns_t *c)
{
    mark_t m = {c->position.len, binary_mark(&c->key), binary_mark(&c->value), binary_mark(&c->header_key),
                binary_mark(&c->header_value), c->rows};
    return m;
}

static void
columns_rollback(columns_t *c, mark_t m)
{
    c->position.len = c->offset.len = c->timestamp.len = m.fixed;
    binary_rollback(&c->key, m.key);
    binary_rollback(&c->value, m.value);
    binary_rollback(&c->header_key, m.header_key);
    binary_rollback(&c->header_value, m.header_value);
    c->header_offsets.len = (size_t)(m.rows + 1) * 4;
    c->rows = m.rows;
}

/* Whether p[0..len) is ASCII (then it is UTF-8 as it is): eight bytes a step. */
static inline int
is_ascii(const unsigned char *p, Py_ssize_t len)
{
    Py_ssize_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        if (word & 0x8080808080808080ull)
            return 0;
    }
    unsigned char high = 0;
    for (; i < len; i++)
        high |= p[i];
    return high < 0x80;
}

/* One row, headers read by headers_next from a record's bytes or a Record's tuple: 0, or -1 (memory,
 * or an exception set by headers_next). */
static int
columns_row(columns_t *c, int64_t position, int64_t offset, int64_t timestamp, const field_t *key,
            const field_t *value, headers_t *h)
{
    if (buf_i64(&c->position, position) < 0 || buf_i64(&c->offset, offset) < 0 ||
        buf_i64(&c->timestamp, timestamp) < 0 || binary_add(&c->key, key->ptr, key->len) < 0 ||
        binary_add(&c->value, value->ptr, value->len) < 0)
        goto nomem;
    if (h != NULL) {
        field_t hk, hv;
        int got;
        while ((got = headers_next(h, &hk, &hv)) > 0) {
            if (is_ascii(hk.ptr, hk.len)) {
                if (binary_add(&c->header_key, hk.ptr, hk.len) < 0)
                    goto nomem;
            }
            else {
                /* A string column holds UTF-8: the key as Python decodes it (errors="replace"). */
                PyObject *text = PyUnicode_DecodeUTF8((const char *)hk.ptr, hk.len, "replace");
                Py_ssize_t n;
                const char *s = text == NULL ? NULL : PyUnicode_AsUTF8AndSize(text, &n);
                int bad = s == NULL || binary_add(&c->header_key, (const unsigned char *)s, n) < 0;
                Py_XDECREF(text);
                if (bad) {
                    if (!PyErr_Occurred())
                        PyErr_NoMemory();
                    return -1;
                }
            }
            if (binary_add(&c->header_value, hv.ptr, hv.len) < 0)
                goto nomem;
        }
        if (got < 0)
            return -1;
    }
    if (c->header_key.rows > INT32_MAX || buf_i32(&c->header_offsets, (int32_t)c->header_key.rows) < 0)
        goto nomem;
    c->rows++;
    return 0;
nomem:
    PyErr_NoMemory();
    return -1;
}

static PyObject *
columns_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)args;
    (void)kwds;
    columns_t *c = (columns_t *)type->tp_alloc(type, 0);
    if (c == NULL)
        return NULL;
    if (columns_init(c) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static void
columns_dealloc(columns_t *c)
{
    PyTypeObject *type = Py_TYPE(c);
    PyObject_GC_UnTrack(c);
    Py_CLEAR(c->module);
    columns_free(c);
    type->tp_free((PyObject *)c);
    Py_DECREF(type);
}

static int
columns_traverse(columns_t *c, visitproc visit, void *arg)
{
    Py_VISIT(c->module);
    Py_VISIT(Py_TYPE(c));
    return 0;
}

static int
columns_clear(columns_t *c)
{
    Py_CLEAR(c->module);
    return 0;
}

speedups_state *
columns_state(columns_t *c)
{
    if (c->module == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "RecordColumns was not made by _speedups.record_columns()");
        return NULL;
    }
    return configured_state(c->module);
}

/* Whether the builder holds max_rows rows or max_bytes of keys, values and headers: a batch is due. */
static inline int
columns_full(const columns_t *c, Py_ssize_t max_rows, Py_ssize_t max_bytes)
{
    return c->rows >= max_rows ||
           (Py_ssize_t)(c->key.data.len + c->value.data.len + c->header_key.data.len + c->header_value.data.len) >=
               max_bytes;
}

/* The records of one v2 records section p[0..len) as rows (batch_position `position`), all or none:
 * 0 when every record was added, 1 when one cannot be read (r says why), -1 when memory ran out
 * (MemoryError set); the rows are rolled back on either failure. min_ts, unless NULL: the smallest
 * timestamp of the records added. */
static inline int
columns_add_section(columns_t *c, records_t *r, const unsigned char *p, Py_ssize_t len, const batch_t *b,
                    int64_t position, long long *min_ts)
{
    mark_t mark = columns_mark(c);
    record_t rec;
    long long low = 0;
    records_open(r, p, len, b);
    int more;
    while ((more = records_next(r, &rec)) > 0) {
        if (min_ts != NULL && (r->index == 1 || rec.timestamp < low))
            low = rec.timestamp;
        headers_t h;
        headers_of_record(&h, r->c.p, &rec);
        if (columns_row(c, position, rec.offset, rec.timestamp, &rec.key, &rec.value, &h) < 0) {
            columns_rollback(c, mark);
            return -1;
        }
    }
    if (more < 0) {
        columns_rollback(c, mark);
        return 1;
    }
    if (min_ts != NULL)
        *min_ts = low;
    return 0;
}

/* add_v2(data, count, base_offset, base_timestamp, log_append_time, base_sequence, batch_position)
 * -> records added. The records of one (decompressed) records section, as decode_records reads them. */
static PyObject *
columns_add_v2(columns_t *c, PyObject *args)
{
    speedups_state *st = columns_state(c);
    if (st == NULL)
        return NULL;
    Py_buffer view;
    batch_t b;
    PyObject *log_append_obj;
    long long position;
    if (!PyArg_ParseTuple(args, "y*nLLOLL", &view, &b.count, &b.base_offset, &b.base_timestamp, &log_append_obj,
                          &b.base_sequence, &position))
        return NULL;
    PyObject *out = NULL;
    if (parse_batch(log_append_obj, &b) < 0)
        goto done;
    records_t r;
    int rc = columns_add_section(c, &r, (const unsigned char *)view.buf, view.len, &b, position, NULL);
    if (rc < 0)
        goto done;
    if (rc > 0) {
        records_raise(&r, st->decode_error);
        goto done;
    }
    out = PyLong_FromSsize_t(r.index);
done:
    PyBuffer_Release(&view);
    return out;
}

/* add_v2_run(buf, at, limit, max_rows, max_bytes) -> at. The records of the uncompressed v2 batches
 * from buf[at] (buf: the whole segment, index = file position) starting before `limit`, walked here
 * as segment.walk_entries frames them, until the builder holds `max_rows` rows or `max_bytes`, or an
 * entry that is not a well-framed uncompressed v2 batch (the Python walk takes it); returns where it
 * stopped. A batch whose records cannot be read adds no row and is stepped over, as record_columns'
 * Python walk does (the batches table says why). No CRC is checked, as there. */
static PyObject *
columns_add_v2_run(columns_t *c, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t at, limit, max_rows, max_bytes;
    if (!PyArg_ParseTuple(args, "y*nnnn", &view, &at, &limit, &max_rows, &max_bytes))
        return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    clamp_walk(end, &at, &limit);
    PyObject *out = NULL;
    while (at < limit && end - at >= 61 && !columns_full(c, max_rows, max_bytes)) {
        const unsigned char *b = p + at;
        int32_t length = be32s(b + 8);
        if (b[16] != 2 || length < 49 || (Py_ssize_t)length > end - at - 12 || (b[22] & 0x07) != 0)
            break;
        batch_t bt;
        bt.base_offset = (long long)be64s(b);
        bt.base_timestamp = (long long)be64s(b + 27);
        bt.log_append = (b[22] >> 3) & 1;
        bt.log_append_time = bt.log_append ? (long long)be64s(b + 35) : 0;
        bt.base_sequence = be32s(b + 53);
        bt.count = be32s(b + 57);
        Py_ssize_t size = (Py_ssize_t)length + 12;
        records_t r;
        if (columns_add_section(c, &r, b + 61, size - 61, &bt, at, NULL) < 0)
            goto done;
        at += size; /* a batch whose records cannot be read was rolled back: stepped over */
    }
    out = PyLong_FromSsize_t(at);
done:
    PyBuffer_Release(&view);
    return out;
}

/* ---- for batch_columns.c: the records of the batches it walks, in the same walk ------------------------- */

int
record_columns_check(PyObject *module, PyObject *obj)
{
    speedups_state *st = configured_state(module);
    if (st == NULL)
        return -1;
    if (st->columns_type == NULL || Py_TYPE(obj) != (PyTypeObject *)st->columns_type) {
        PyErr_SetString(PyExc_TypeError, "records must be a RecordColumns from record_columns()");
        return -1;
    }
    return 0;
}

int
record_columns_full(PyObject *obj, Py_ssize_t max_rows, Py_ssize_t max_bytes)
{
    return columns_full((columns_t *)obj, max_rows, max_bytes);
}

int
record_columns_add_section(PyObject *obj, const unsigned char *p, Py_ssize_t len, const batch_t *b, int64_t position,
                           Py_ssize_t *count, long long *min_ts)
{
    records_t r;
    int rc = columns_add_section((columns_t *)obj, &r, p, len, b, position, min_ts);
    if (rc == 0)
        *count = r.index;
    return rc;
}

/* add_messages(data, position, inner, shift, log_append_time) -> records added. The magic 0/1
 * messages of a message set that read_message accepts whole (a MessageRun's bytes, or a wrapper's
 * inner set that scan_inner found regular). Plain messages (inner False) are each their own entry,
 * at position + their place in data; inner messages are the wrapper's at `position`, their offsets
 * moved by `shift`, their timestamp the wrapper's LogAppendTime when it is not None. */
static PyObject *
columns_add_messages(columns_t *c, PyObject *args)
{
    speedups_state *st = columns_state(c);
    if (st == NULL)
        return NULL;
    Py_buffer view;
    long long position, shift;
    int inner;
    PyObject *log_append_obj;
    if (!PyArg_ParseTuple(args, "y*LpLO", &view, &position, &inner, &shift, &log_append_obj))
        return NULL;
    PyObject *out = NULL;
    batch_t b;
    if (parse_batch(log_append_obj, &b) < 0)
        goto done;
    const unsigned char *p = (const unsigned char *)view.buf;
    mark_t mark = columns_mark(c);
    Py_ssize_t at = 0, n = 0;
    while (at < view.len) {
        message_t m;
        long long offset;
        if (read_message(p, at, view.len, &m) < 0 || __builtin_add_overflow((long long)m.offset, shift, &offset)) {
            columns_rollback(c, mark);
            raise_at(st->decode_error, "message set is not one the C reader takes", at);
            goto done;
        }
        long long timestamp = b.log_append ? b.log_append_time : m.timestamp;
        if (columns_row(c, inner ? position : position + at, offset, timestamp, &m.key, &m.value, NULL) < 0) {
            columns_rollback(c, mark);
            goto done;
        }
        at += 12 + m.size;
        n++;
    }
    out = PyLong_FromSsize_t(n);
done:
    PyBuffer_Release(&view);
    return out;
}

/* add_records(records, position) -> records added: Record tuples (offset, timestamp, key, value,
 * headers, ...) a Python decoder made, all of the entry at `position`. */
static PyObject *
columns_add_records(columns_t *c, PyObject *args)
{
    PyObject *records;
    long long position;
    if (!PyArg_ParseTuple(args, "OL", &records, &position))
        return NULL;
    PyObject *seq = PySequence_Fast(records, "records must be a sequence");
    if (seq == NULL)
        return NULL;
    mark_t mark = columns_mark(c);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *rec = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) < 5 || !PyTuple_Check(PyTuple_GET_ITEM(rec, 4))) {
            PyErr_SetString(PyExc_TypeError, "records must be Record tuples");
            goto fail;
        }
        long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(rec, 0));
        if (offset == -1 && PyErr_Occurred())
            goto fail;
        long long timestamp = PyLong_AsLongLong(PyTuple_GET_ITEM(rec, 1));
        if (timestamp == -1 && PyErr_Occurred())
            goto fail;
        field_t kv[2];
        for (int k = 0; k < 2; k++) {
            PyObject *v = PyTuple_GET_ITEM(rec, 2 + k);
            if (v == Py_None) {
                kv[k].ptr = NULL;
                kv[k].len = -1;
            }
            else if (PyBytes_Check(v)) {
                kv[k].ptr = (const unsigned char *)PyBytes_AS_STRING(v);
                kv[k].len = PyBytes_GET_SIZE(v);
            }
            else {
                PyErr_SetString(PyExc_TypeError, "a record's key and value must be bytes or None");
                goto fail;
            }
        }
        headers_t h = {NULL, 0, 0, PyTuple_GET_ITEM(rec, 4), 0};
        if (columns_row(c, position, offset, timestamp, &kv[0], &kv[1], &h) < 0)
            goto fail;
    }
    Py_DECREF(seq);
    return PyLong_FromSsize_t(n);
fail:
    columns_rollback(c, mark);
    Py_DECREF(seq);
    return NULL;
}


static PyObject *
columns_get_rows(columns_t *c, void *closure)
{
    (void)closure;
    return PyLong_FromLongLong(c->rows);
}

static PyObject *
columns_get_nbytes(columns_t *c, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(c->key.data.len + c->value.data.len + c->header_key.data.len + c->header_value.data.len);
}

static PyMethodDef columns_methods[] = {
    {"add_v2", (PyCFunction)columns_add_v2, METH_VARARGS,
     "add_v2(data, count, base_offset, base_timestamp, log_append_time, base_sequence, batch_position) -> int"},
    {"add_v2_run", (PyCFunction)columns_add_v2_run, METH_VARARGS,
     "add_v2_run(buf, at, limit, max_rows, max_bytes) -> at: the uncompressed v2 batches from buf[at]"},
    {"add_messages", (PyCFunction)columns_add_messages, METH_VARARGS,
     "add_messages(data, position, inner, shift, log_append_time) -> int"},
    {"add_records", (PyCFunction)columns_add_records, METH_VARARGS, "add_records(records, position) -> int"},
    {"finish", (PyCFunction)columns_finish, METH_VARARGS,
     "finish(file, topic, partition) -> (arrow_schema capsule, arrow_array capsule); the builder starts empty again"},
    {"schema", (PyCFunction)columns_schema, METH_NOARGS | METH_STATIC, "schema() -> arrow_schema capsule"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef columns_getset[] = {
    {"rows", (getter)columns_get_rows, NULL, "rows added since the last finish()", NULL},
    {"nbytes", (getter)columns_get_nbytes, NULL, "key, value and header bytes since the last finish()", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot columns_slots[] = {
    {Py_tp_new, columns_new},
    {Py_tp_dealloc, columns_dealloc},
    {Py_tp_traverse, columns_traverse},
    {Py_tp_clear, columns_clear},
    {Py_tp_methods, columns_methods},
    {Py_tp_getset, columns_getset},
    {Py_tp_doc, "The records table's columns, built in C and exported as Arrow (record_columns())."},
    {0, NULL},
};

static PyType_Spec columns_spec = {
    .name = "kafka_tools.format._speedups.RecordColumns",
    .basicsize = sizeof(columns_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = columns_slots,
};

/* record_columns() -> RecordColumns: a new, empty builder tied to this module's state (its errors). */
PyObject *
record_columns(PyObject *module, PyObject *unused)
{
    (void)unused;
    speedups_state *st = configured_state(module);
    if (st == NULL)
        return NULL;
    if (st->columns_type == NULL) {
        st->columns_type = PyType_FromModuleAndSpec(module, &columns_spec, NULL);
        if (st->columns_type == NULL)
            return NULL;
    }
    columns_t *c = (columns_t *)columns_new((PyTypeObject *)st->columns_type, NULL, NULL);
    if (c == NULL)
        return NULL;
    c->module = Py_NewRef(module);
    return (PyObject *)c;
}

/* arrow_blocks_alive() -> exported arrays and schemas not yet released (for the leak tests). */
