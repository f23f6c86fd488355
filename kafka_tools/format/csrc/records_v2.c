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

int
records_call(PyObject *module, PyObject *args, records_call_t *call, PyObject **rest)
{
    call->st = configured_state(module);
    if (call->st == NULL)
        return -1;
    return records_args(args, &call->view, &call->b, rest);
}

static PyObject *
field_bytes(const field_t *f)
{
    if (f->len < 0)
        return Py_NewRef(Py_None);
    return PyBytes_FromStringAndSize((const char *)f->ptr, f->len);
}

/* Headers repeat from record to record: the same keys ("trace-id", "source"), often with the same
 * value ("source": "web"). The str of a recent ASCII key is reused instead of decoding its bytes
 * again, and the last (key, value) pair made for that key is reused when the value is the same:
 * both are immutable, so sharing them is not seen (a list of records holds less, too). */
#define KEY_CACHE 8
#define KEY_CACHE_MAX_LEN 64 /* longer keys and values are not looked for */
#define PAIRS_PER_KEY 4      /* a header often takes a few values in turn ("source": web, ios, ...) */

typedef struct {
    PyObject *keys[KEY_CACHE];                 /* compact ASCII str, or NULL */
    PyObject *pairs[KEY_CACHE][PAIRS_PER_KEY]; /* the last pairs of that key with a short value, or NULL */
    int next_pair[KEY_CACHE];                  /* the pair slot of that key the next new pair takes */
    int next;                                  /* the slot the next new key takes (round robin) */
    PyObject *timestamp;                       /* the last record's timestamp (records of a batch often share one) */
    long long timestamp_value;                 /* ... its value */
} key_cache_t;

static void
key_cache_clear(key_cache_t *kc)
{
    for (int i = 0; i < KEY_CACHE; i++) {
        Py_CLEAR(kc->keys[i]);
        for (int j = 0; j < PAIRS_PER_KEY; j++)
            Py_CLEAR(kc->pairs[i][j]);
    }
    Py_CLEAR(kc->timestamp);
}

/* A record's size as an int: sizes up to this are made once and shared (ints are immutable); CPython
 * shares only those up to 256, and most records take more. */
#define SHARED_SIZES 4096
static PyObject *shared_sizes[SHARED_SIZES]; /* made on first use; live as long as the process */

static PyObject *
record_size(Py_ssize_t n)
{
    if (n < 0 || n >= SHARED_SIZES)
        return PyLong_FromSsize_t(n);
    PyObject *v = shared_sizes[n];
    if (v == NULL && (v = shared_sizes[n] = PyLong_FromSsize_t(n)) == NULL)
        return NULL;
    return Py_NewRef(v);
}

/* The record's timestamp as an int, the last one's when it is the same (LogAppendTime: always). */
static PyObject *
record_timestamp(key_cache_t *kc, long long timestamp)
{
    if (kc->timestamp != NULL && kc->timestamp_value == timestamp)
        return Py_NewRef(kc->timestamp);
    PyObject *t = PyLong_FromLongLong(timestamp);
    if (t != NULL) {
        Py_XSETREF(kc->timestamp, Py_NewRef(t));
        kc->timestamp_value = timestamp;
    }
    return t;
}

/* memcmp(a, b, n) == 0 for the short keys and values here, without a call */
static inline int
same_bytes(const void *a, const unsigned char *b, Py_ssize_t n)
{
    const unsigned char *x = a;
    for (Py_ssize_t i = 0; i < n; i++)
        if (x[i] != b[i])
            return 0;
    return 1;
}

static int
same_value(PyObject *v, const field_t *value)
{
    if (value->len < 0)
        return v == Py_None;
    return v != Py_None && PyBytes_GET_SIZE(v) == value->len && same_bytes(PyBytes_AS_STRING(v), value->ptr, value->len);
}

/* The tuples made here hold only str, bytes, int, None and such tuples: they can never be part of a
 * reference cycle, so they are taken off the garbage collector's lists at once (its collections,
 * triggered every few hundred allocations, then have nothing of them to walk). */
static PyObject *
header_pair(key_cache_t *kc, const field_t *key, const field_t *value)
{
    int slot = -1;
    if (key->len <= KEY_CACHE_MAX_LEN)
        for (int i = 0; i < KEY_CACHE && kc->keys[i] != NULL; i++)
            if (PyUnicode_GET_LENGTH(kc->keys[i]) == key->len &&
                same_bytes(PyUnicode_DATA(kc->keys[i]), key->ptr, key->len)) {
                slot = i;
                break;
            }
    PyObject *k;
    if (slot >= 0) {
        for (int j = 0; j < PAIRS_PER_KEY; j++) {
            PyObject *known = kc->pairs[slot][j];
            if (known != NULL && same_value(PyTuple_GET_ITEM(known, 1), value))
                return Py_NewRef(known);
        }
        k = Py_NewRef(kc->keys[slot]);
    }
    else {
        k = PyUnicode_DecodeUTF8((const char *)key->ptr, key->len, "replace");
        if (k == NULL)
            return NULL;
        /* ASCII: the str's data are the key's bytes, which is what the lookup compares */
        if (key->len <= KEY_CACHE_MAX_LEN && PyUnicode_IS_COMPACT_ASCII(k)) {
            slot = kc->next;
            kc->next = (kc->next + 1) % KEY_CACHE;
            Py_XSETREF(kc->keys[slot], Py_NewRef(k));
            for (int j = 0; j < PAIRS_PER_KEY; j++)
                Py_CLEAR(kc->pairs[slot][j]);
            kc->next_pair[slot] = 0;
        }
    }
    PyObject *v = field_bytes(value);
    PyObject *pair = v == NULL ? NULL : PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(k);
        Py_XDECREF(v);
        return NULL;
    }
    PyObject_GC_UnTrack(pair);
    PyTuple_SET_ITEM(pair, 0, k);
    PyTuple_SET_ITEM(pair, 1, v);
    if (slot >= 0 && value->len <= KEY_CACHE_MAX_LEN) {
        int j = kc->next_pair[slot];
        kc->next_pair[slot] = (j + 1) % PAIRS_PER_KEY;
        Py_XSETREF(kc->pairs[slot][j], Py_NewRef(pair));
    }
    return pair;
}

static PyObject *
header_tuple(speedups_state *st, key_cache_t *kc, const unsigned char *p, const record_t *rec)
{
    if (rec->header_count == 0)
        return Py_NewRef(st->empty_tuple);
    /* at most (record length) / 2 headers: checked by read_headers */
    PyObject *headers = PyTuple_New((Py_ssize_t)rec->header_count);
    if (headers == NULL)
        return NULL;
    PyObject_GC_UnTrack(headers);
    headers_t h;
    headers_of_record(&h, p, rec);
    field_t key, value;
    for (Py_ssize_t i = 0; headers_next(&h, &key, &value) > 0; i++) {
        PyObject *pair = header_pair(kc, &key, &value);
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(headers, i, pair);
    }
    return headers;
}

/* A Record's items, every one made (0), or none kept (-1, an exception set). */
static int
record_items(speedups_state *st, key_cache_t *kc, const unsigned char *p, const record_t *rec, PyObject *items[7])
{
    items[0] = PyLong_FromLongLong(rec->offset);
    items[1] = record_timestamp(kc, rec->timestamp);
    items[2] = field_bytes(&rec->key);
    items[3] = field_bytes(&rec->value);
    items[4] = header_tuple(st, kc, p, rec);
    items[5] = PyLong_FromLongLong(rec->sequence);
    items[6] = record_size(rec->end - rec->start);
    for (int i = 0; i < 7; i++)
        if (items[i] == NULL) {
            for (int j = 0; j < 7; j++)
                Py_XDECREF(items[j]);
            return -1;
        }
    return 0;
}

/* A tuple subclass with nothing beyond its items (Record: __slots__ = ()): made as a tuple is,
 * untracked, every item set after; tp_alloc would zero it and track it first. */
static int
plain_tuple_type(PyTypeObject *type)
{
    return type->tp_basicsize == PyTuple_Type.tp_basicsize && type->tp_itemsize == PyTuple_Type.tp_itemsize &&
           type->tp_dictoffset == 0 && type->tp_weaklistoffset == 0;
}

/* A new Record holding `items` (their references taken), or NULL (then they are released). */
static PyObject *
record_of(PyTypeObject *type, PyObject *items[7])
{
    PyObject *rec_obj;
    if (plain_tuple_type(type)) {
        rec_obj = (PyObject *)PyObject_GC_NewVar(PyTupleObject, type, 7);
#if PY_VERSION_HEX >= 0x030E0000
        if (rec_obj != NULL)
            ((PyTupleObject *)rec_obj)->ob_hash = -1; /* no hash cached yet */
#endif
    }
    else {
        rec_obj = type->tp_alloc(type, 7);
        if (rec_obj != NULL)
            PyObject_GC_UnTrack(rec_obj);
    }
    if (rec_obj == NULL) {
        for (int i = 0; i < 7; i++)
            Py_DECREF(items[i]);
        return NULL;
    }
    for (int i = 0; i < 7; i++)
        PyTuple_SET_ITEM(rec_obj, i, items[i]);
    return rec_obj;
}

static PyObject *
record_tuple(speedups_state *st, key_cache_t *kc, const unsigned char *p, const record_t *rec)
{
    PyObject *items[7];
    if (record_items(st, kc, p, rec, items) < 0)
        return NULL;
    return record_of(st->record_type, items);
}

/* decode_records(data, count, base_offset, base_timestamp, log_append_time, base_sequence) -> list */
PyObject *
decode_records(PyObject *module, PyObject *args)
{
    records_call_t call;
    if (records_call(module, args, &call, NULL) < 0)
        return NULL;
    /* Never preallocate from the (untrusted) count alone: a record takes 7 bytes at least (a length
     * of 6 or more and its varint), so a section of n bytes holds n / 7 records at most. */
    Py_ssize_t room = call.b.count < call.view.len / 7 ? call.b.count : call.view.len / 7;
    if (room < 0)
        room = 0;
    PyObject *out = PyList_New(room);
    if (out == NULL)
        goto done;
    key_cache_t kc;
    memset(&kc, 0, sizeof(kc));
    records_t r;
    record_t rec;
    records_open(&r, (const unsigned char *)call.view.buf, call.view.len, &call.b);
    int more;
    Py_ssize_t n = 0;
    while ((more = records_next(&r, &rec)) > 0) {
        PyObject *item = record_tuple(call.st, &kc, r.c.p, &rec);
        if (item == NULL) {
            Py_CLEAR(out);
            break;
        }
        if (n < room)
            PyList_SET_ITEM(out, n, item);
        else if (PyList_Append(out, item) < 0) { /* not reached: room is an upper bound */
            Py_DECREF(item);
            Py_CLEAR(out);
            break;
        }
        else
            Py_DECREF(item);
        n++;
    }
    key_cache_clear(&kc);
    if (out != NULL && more < 0) {
        records_raise(&r, call.st->decode_error);
        Py_CLEAR(out);
    }
    if (out != NULL && n < room && PyList_SetSlice(out, n, room, NULL) < 0)
        Py_CLEAR(out);
done:
    PyBuffer_Release(&call.view);
    return out;
}

/* iter_records(data, count, base_offset, base_timestamp, log_append_time, base_sequence[, fix])
 *   -> iterator:
 * decode_records' records one at a time, then its error where the list would have raised it (after the
 * records before the damage), or the error fix(error) gives in its place (the batch's position). A loop that lets each record go before asking for the next keeps its
 * memory in cache: the records are made as they are asked for, and the Record of two steps back is
 * filled again in place when nothing else holds it (the loop's variable holds the last one while the
 * next is made), as zip() does with its tuples; the bytes it held are freed and their blocks are the
 * next ones made. Nothing can see the reuse: a Record with another reference is never touched. */
typedef struct {
    PyObject_HEAD
    Py_buffer view; /* view.obj NULL: released (the walk ended or failed) */
    PyObject *module; /* held: its state (st) lives as long as it does */
    speedups_state *st; /* the types to make and raise (configured when the iterator was made) */
    PyObject *fix;    /* NULL, or fix(error) -> the error to raise in its place */
    records_t r;
    key_cache_t kc;
    PyObject *spare[2]; /* the last two Records made */
    int turn;           /* the spare the next Record replaces */
} record_iter_t;

static PyObject *record_iter_type; /* made on first use; lives as long as the process */

/* A tuple caches its hash from Python 3.14 on: a Record hashed (in a set, say) and let go would keep
 * the hash of what it held. There every Record is a new one. */
#define REFILL_RECORDS (PY_VERSION_HEX < 0x030E0000)

/* The exception being raised (its traceback dropped: it is raised again, fixed, from here). */
static PyObject *
raised_exception(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
}

static void
record_iter_stop(record_iter_t *it)
{
    if (it->view.obj != NULL)
        PyBuffer_Release(&it->view);
    key_cache_clear(&it->kc);
    Py_CLEAR(it->spare[0]);
    Py_CLEAR(it->spare[1]);
}

static void
record_iter_dealloc(record_iter_t *it)
{
    PyTypeObject *type = Py_TYPE(it);
    record_iter_stop(it);
    Py_CLEAR(it->module);
    Py_CLEAR(it->fix);
    type->tp_free((PyObject *)it);
    Py_DECREF(type);
}

static PyObject *
record_iter_next(record_iter_t *it)
{
    if (it->view.obj == NULL)
        return NULL;
    speedups_state *st = it->st;
    if (st->record_type == NULL) { /* the module's state cleared (interpreter shutdown) */
        record_iter_stop(it);
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
        return NULL;
    }
    record_t rec;
    int more = records_next(&it->r, &rec);
    PyObject *items[7];
    if (more > 0 && record_items(st, &it->kc, it->r.c.p, &rec, items) == 0) {
        PyObject *rec_obj = it->spare[it->turn];
        if (REFILL_RECORDS && rec_obj != NULL && Py_REFCNT(rec_obj) == 1 && Py_TYPE(rec_obj) == st->record_type &&
            plain_tuple_type(st->record_type)) {
            PyObject *old[7];
            for (int i = 0; i < 7; i++) {
                old[i] = PyTuple_GET_ITEM(rec_obj, i);
                PyTuple_SET_ITEM(rec_obj, i, items[i]);
            }
            for (int i = 0; i < 7; i++)
                Py_DECREF(old[i]);
        }
        else {
            rec_obj = record_of(st->record_type, items);
            if (rec_obj == NULL) {
                record_iter_stop(it);
                return NULL;
            }
            Py_XSETREF(it->spare[it->turn], rec_obj);
        }
        it->turn ^= 1;
        return Py_NewRef(rec_obj);
    }
    if (more < 0)
        records_raise(&it->r, st->decode_error);
    record_iter_stop(it); /* the end, an error, or a failed allocation (its exception set) */
    /* stopped first: a `fix` that asks for another record gets none */
    PyObject *exc = it->fix != NULL && PyErr_ExceptionMatches(st->decode_error) ? raised_exception() : NULL;
    if (exc != NULL) {
        PyObject *fixed = PyObject_CallOneArg(it->fix, exc);
        Py_DECREF(exc);
        if (fixed != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(fixed), fixed);
            Py_DECREF(fixed);
        }
    }
    return NULL;
}

static PyType_Slot record_iter_slots[] = {
    {Py_tp_dealloc, record_iter_dealloc},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, record_iter_next},
    {Py_tp_doc, "decode_records' records, one at a time (iter_records)"},
    {0, NULL},
};

static PyType_Spec record_iter_spec = {
    .name = "kafka_tools.format._speedups.RecordIterator",
    .basicsize = sizeof(record_iter_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = record_iter_slots,
};

PyObject *
iter_records(PyObject *module, PyObject *args)
{
    speedups_state *st = configured_state(module);
    if (st == NULL)
        return NULL;
    if (record_iter_type == NULL && (record_iter_type = PyType_FromSpec(&record_iter_spec)) == NULL)
        return NULL;
    record_iter_t *it = PyObject_New(record_iter_t, (PyTypeObject *)record_iter_type);
    if (it == NULL)
        return NULL;
    /* PyObject_New took the instance's reference to its (heap) type: dealloc gives it back */
    memset((char *)it + sizeof(PyObject), 0, sizeof(record_iter_t) - sizeof(PyObject));
    it->module = Py_NewRef(module);
    it->st = st;
    batch_t b;
    PyObject *rest;
    if (records_args(args, &it->view, &b, &rest) < 0) {
        it->view.obj = NULL;
        Py_DECREF(it);
        return NULL;
    }
    Py_ssize_t extra = PyTuple_GET_SIZE(rest);
    if (extra == 1 && PyTuple_GET_ITEM(rest, 0) != Py_None)
        it->fix = Py_NewRef(PyTuple_GET_ITEM(rest, 0));
    Py_DECREF(rest);
    if (extra > 1) {
        PyBuffer_Release(&it->view);
        PyErr_Format(PyExc_TypeError, "iter_records() takes at most 7 arguments (%zd given)", 6 + extra);
        Py_DECREF(it);
        return NULL;
    }
    if (it->view.obj == NULL) { /* a buffer with no owner: hold nothing that could go away */
        PyBuffer_Release(&it->view);
        PyErr_SetString(PyExc_TypeError, "iter_records() needs a buffer with an owner");
        Py_DECREF(it);
        return NULL;
    }
    records_open(&it->r, (const unsigned char *)it->view.buf, it->view.len, &b);
    return (PyObject *)it;
}
