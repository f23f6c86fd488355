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
 * released batch's buffers are kept for the next batches ("recycled buffers" below).
 * Every exported array and schema is one block with a count of its live nodes; each node's release
 * callback releases its children still owned, then drops one count, and the last frees the block.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "record_reader.h"

/* ---- the Arrow C data interface (arrow/c/abi.h, stable ABI) ---------------------------------------- */

#define ARROW_FLAG_NULLABLE 2

struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

static atomic_long blocks_alive; /* exported arrays and schemas not yet released: the leak tests read it */

/* ---- growable buffers --------------------------------------------------------------------------------- */

typedef struct {
    unsigned char *data;
    size_t len, cap;
} buf_t;

/* The growth of buf_reserve, out of line: the check that there is room is all a row usually costs. */
static __attribute__((noinline)) int
buf_grow(buf_t *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    unsigned char *p = realloc(b->data, cap);
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static inline int
buf_reserve(buf_t *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    return buf_grow(b, extra);
}

/* d[0..n) = s[0..n): up to 16 bytes in two overlapping moves (a header key, a short key or value),
 * without a call into the C library's memcpy for each. */
static inline void
copy_bytes(unsigned char *d, const unsigned char *s, size_t n)
{
    if (n > 16)
        memcpy(d, s, n);
    else if (n >= 8) {
        uint64_t head, tail;
        memcpy(&head, s, 8);
        memcpy(&tail, s + n - 8, 8);
        memcpy(d, &head, 8);
        memcpy(d + n - 8, &tail, 8);
    }
    else if (n >= 4) {
        uint32_t head, tail;
        memcpy(&head, s, 4);
        memcpy(&tail, s + n - 4, 4);
        memcpy(d, &head, 4);
        memcpy(d + n - 4, &tail, 4);
    }
    else if (n) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

static inline int
buf_put(buf_t *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n) /* data is NULL before the first byte */
        copy_bytes(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static inline int
buf_i64(buf_t *b, int64_t v)
{
    return buf_put(b, &v, sizeof v);
}

static inline int
buf_i32(buf_t *b, int32_t v)
{
    return buf_put(b, &v, sizeof v);
}

/* A binary (or string) column: int32 offsets, data, and a validity bitmap when it has nulls. */
typedef struct {
    buf_t offsets, data, valid;
    int64_t rows, nulls;
} binary_t;

static int
binary_init(binary_t *c)
{
    memset(c, 0, sizeof *c);
    return buf_i32(&c->offsets, 0);
}

/* The first null of a column: its validity bitmap starts here, every row before it valid. Bitmaps are
 * kept only while a column holds a null (nulls > 0): a column without any is exported with none, and
 * a row costs no bit (most columns: value, header key, offsets). 0, or -1 (memory). */
static __attribute__((noinline)) int
binary_first_null(binary_t *c)
{
    size_t full = (size_t)(c->rows / 8), bytes = full + 1;
    c->valid.len = 0;
    if (buf_reserve(&c->valid, bytes) < 0)
        return -1;
    memset(c->valid.data, 0xff, full);
    c->valid.data[full] = (unsigned char)((1u << (c->rows % 8)) - 1);
    c->valid.len = bytes;
    return 0;
}

static inline int
binary_add(binary_t *c, const unsigned char *p, Py_ssize_t len)
{
    if (len < 0 || c->nulls) {
        if (c->nulls == 0) {
            if (binary_first_null(c) < 0)
                return -1;
        }
        else if (c->rows % 8 == 0) {
            unsigned char zero = 0;
            if (buf_put(&c->valid, &zero, 1) < 0)
                return -1;
        }
        if (len < 0) {
            c->nulls++;
            len = 0;
        }
        else
            c->valid.data[c->rows / 8] |= (unsigned char)(1u << (c->rows % 8));
    }
    if ((size_t)len > (size_t)INT32_MAX - c->data.len)
        return -1; /* never with the caller's bounds: MAX_DECOMPRESSED and the batch byte limit */
    if (buf_put(&c->data, p, (size_t)len) < 0 || buf_i32(&c->offsets, (int32_t)c->data.len) < 0)
        return -1;
    c->rows++;
    return 0;
}

typedef struct {
    size_t data, valid;
    int64_t rows, nulls;
} binary_mark_t;

static binary_mark_t
binary_mark(const binary_t *c)
{
    binary_mark_t m = {c->data.len, c->valid.len, c->rows, c->nulls};
    return m;
}

static void
binary_rollback(binary_t *c, binary_mark_t m)
{
    c->data.len = m.data;
    c->valid.len = m.valid;
    c->rows = m.rows;
    c->nulls = m.nulls;
    c->offsets.len = (size_t)(m.rows + 1) * 4;
    if (m.nulls && m.rows % 8) /* bits past the last row are set again as rows come */
        c->valid.data[m.rows / 8] &= (unsigned char)((1u << (m.rows % 8)) - 1);
}

static void
binary_free(binary_t *c)
{
    free(c->offsets.data);
    free(c->data.data);
    free(c->valid.data);
    memset(c, 0, sizeof *c);
}

/* ---- recycled buffers ------------------------------------------------------------------------------------ */

/* The buffers of an exported batch, once pyarrow releases it, are kept here for the batches to come
 * (columns_presize): a new batch then writes into pages already mapped, where fresh ones cost a page
 * fault each (freed and allocated again a batch, 3-4 us a page here: more than the realloc copies) and
 * its buffers never grow by copying. At most POOL_SLOTS buffers and POOL_BYTES, the oldest dropped
 * first; pyarrow may release on any thread, without the GIL, hence the lock. */
#define POOL_SLOTS 48
#define POOL_MIN ((size_t)64 << 10)   /* smaller buffers: freed (malloc reuses them well) */
#define POOL_BYTES ((size_t)128 << 20) /* a batch of each of the in-process scan's 4 lanes, at 65,536 rows */

static struct {
    unsigned char *data;
    size_t cap;
} pool[POOL_SLOTS];
static int pool_n;
static size_t pool_bytes;
static atomic_flag pool_busy = ATOMIC_FLAG_INIT;

static void
pool_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&pool_busy, memory_order_acquire))
        ;
}

static void
pool_unlock(void)
{
    atomic_flag_clear_explicit(&pool_busy, memory_order_release);
}

/* Keep `p` (`cap` bytes; 0: not a builder's buffer) for a later batch, or free it. */
static void
pool_put(void *p, size_t cap)
{
    void *drop[POOL_SLOTS + 1];
    int n_drop = 0;
    if (p != NULL && cap >= POOL_MIN && cap <= POOL_BYTES) {
        pool_lock();
        while (pool_n > 0 && (pool_n == POOL_SLOTS || pool_bytes + cap > POOL_BYTES)) {
            drop[n_drop++] = pool[0].data; /* the oldest */
            pool_bytes -= pool[0].cap;
            memmove(&pool[0], &pool[1], (size_t)(pool_n - 1) * sizeof pool[0]);
            pool_n--;
        }
        pool[pool_n].data = p;
        pool[pool_n].cap = cap;
        pool_n++;
        pool_bytes += cap;
        pool_unlock();
        p = NULL;
    }
    free(p);
    for (int i = 0; i < n_drop; i++)
        free(drop[i]);
}

/* A kept buffer of `want` to 2 * `want` bytes (the smallest), its capacity in *cap; or NULL. */
static unsigned char *
pool_take(size_t want, size_t *cap)
{
    unsigned char *p = NULL;
    pool_lock();
    int best = -1;
    for (int i = 0; i < pool_n; i++)
        if (pool[i].cap >= want && pool[i].cap / 2 <= want && (best < 0 || pool[i].cap < pool[best].cap))
            best = i;
    if (best >= 0) {
        p = pool[best].data;
        *cap = pool[best].cap;
        pool_bytes -= *cap;
        memmove(&pool[best], &pool[best + 1], (size_t)(pool_n - best - 1) * sizeof pool[0]);
        pool_n--;
    }
    pool_unlock();
    return p;
}

/* ---- the builder ---------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *module;
    buf_t position, offset, timestamp;
    binary_t key, value;
    buf_t header_offsets; /* int32, rows + 1 */
    binary_t header_key, header_value;
    int64_t rows;
    int ready; /* buffers initialised */
} columns_t;

typedef struct {
    size_t fixed;
    binary_mark_t key, value, header_key, header_value;
    int64_t rows;
} mark_t;

static void
columns_free(columns_t *c)
{
    free(c->position.data);
    free(c->offset.data);
    free(c->timestamp.data);
    free(c->header_offsets.data);
    memset(&c->position, 0, sizeof c->position);
    memset(&c->offset, 0, sizeof c->offset);
    memset(&c->timestamp, 0, sizeof c->timestamp);
    memset(&c->header_offsets, 0, sizeof c->header_offsets);
    binary_free(&c->key);
    binary_free(&c->value);
    binary_free(&c->header_key);
    binary_free(&c->header_value);
    c->rows = 0;
    c->ready = 0;
}

static int
columns_init(columns_t *c)
{
    c->rows = 0;
    if (binary_init(&c->key) < 0 || binary_init(&c->value) < 0 || binary_init(&c->header_key) < 0 ||
        binary_init(&c->header_value) < 0 || buf_i32(&c->header_offsets, 0) < 0) {
        columns_free(c);
        PyErr_NoMemory();
        return -1;
    }
    c->ready = 1;
    return 0;
}

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

static speedups_state *
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

/* ---- export ----------------------------------------------------------------------------------------------- */

/* The nodes of the records table's struct: 0 the struct; 1 file, 2 topic (strings), 3 partition (int32),
 * 4-6 batch_position, offset, timestamp (int64), 7-8 key, value (binary), 9 headers (list), 10 its
 * struct, 11 header key (string), 12 header value (binary). */
#define NODES 13
#define TOP_CHILDREN 9
#define MAX_OWNED 32

static const char *const node_format[NODES] = {"+s", "u", "u", "i", "l", "l", "l", "z", "z", "+l", "+s", "u", "z"};
static const char *const node_name[NODES] = {"",      "file",  "topic",   "partition", "batch_position",
                                             "offset", "timestamp", "key", "value",   "headers",
                                             "item",  "key",   "value"};

/* The children of node i within a block's `children` array: (first, count). */
static void
node_children(int i, int *first, int *count)
{
    *first = i == 0 ? 0 : i == 9 ? TOP_CHILDREN : i == 10 ? TOP_CHILDREN + 1 : 0;
    *count = i == 0 ? TOP_CHILDREN : i == 9 ? 1 : i == 10 ? 2 : 0;
}

/* children[k] points at node k + 1: the top's 9 children are nodes 1-9, the list's child node 10,
 * the struct's nodes 11 and 12 */

typedef struct {
    atomic_int live; /* nodes not yet released */
    struct ArrowArray arrays[NODES];
    struct ArrowArray *children[NODES - 1];
    const void *buffers[NODES][3];
    void *owned[MAX_OWNED];
    size_t owned_cap[MAX_OWNED]; /* a builder buffer's capacity (recycled), 0 for one made here (freed) */
    int n_owned;
} array_block_t;

static void
block_free(array_block_t *b)
{
    for (int i = 0; i < b->n_owned; i++)
        pool_put(b->owned[i], b->owned_cap[i]);
    free(b);
    atomic_fetch_sub(&blocks_alive, 1);
}

static void
release_array(struct ArrowArray *a)
{
    array_block_t *b = (array_block_t *)a->private_data;
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release != NULL)
            a->children[i]->release(a->children[i]);
    a->release = NULL;
    if (atomic_fetch_sub(&b->live, 1) == 1)
        block_free(b);
}

static void
set_node(array_block_t *b, int i, int64_t length, int64_t nulls, int n_buffers)
{
    struct ArrowArray *a = &b->arrays[i];
    int first, count;
    node_children(i, &first, &count);
    a->length = length;
    a->null_count = nulls;
    a->offset = 0;
    a->n_buffers = n_buffers;
    a->n_children = count;
    a->buffers = b->buffers[i];
    a->children = count ? &b->children[first] : NULL;
    a->dictionary = NULL;
    a->release = release_array;
    a->private_data = b;
}

static const void *
own(array_block_t *b, buf_t *buf)
{
    void *p = buf->data;
    b->owned_cap[b->n_owned] = buf->cap;
    b->owned[b->n_owned++] = p;
    memset(buf, 0, sizeof *buf);
    return p;
}

/* A new buffer of `size` bytes (zeroed) the block owns, or NULL; a recycled one when one fits. */
static void *
own_new(array_block_t *b, size_t size)
{
    size_t cap = 0;
    void *p = size >= POOL_MIN ? pool_take(size, &cap) : NULL;
    if (p != NULL)
        memset(p, 0, size);
    else
        p = calloc(1, size ? size : 1);
    if (p != NULL) {
        b->owned_cap[b->n_owned] = cap;
        b->owned[b->n_owned++] = p;
    }
    return p;
}

static void
binary_node(array_block_t *b, int i, binary_t *c)
{
    b->buffers[i][0] = c->nulls ? own(b, &c->valid) : NULL;
    b->buffers[i][1] = own(b, &c->offsets);
    b->buffers[i][2] = own(b, &c->data);
    set_node(b, i, c->rows, 0, 3);
    b->arrays[i].null_count = c->nulls;
}

/* A string column of `rows` copies of text (NULL: all null): 0, or -1 (memory, or past int32). */
static int
repeated_string(array_block_t *b, int i, const char *text, Py_ssize_t len, int64_t rows)
{
    if (text != NULL && len > 0 && rows > INT32_MAX / len)
        return -1;
    int32_t *offsets = own_new(b, (size_t)(rows + 1) * 4);
    unsigned char *data = own_new(b, text == NULL ? 1 : (size_t)(len * rows));
    if (offsets == NULL || data == NULL)
        return -1;
    if (text != NULL) {
        /* an empty text (a writer that puts the column back itself) leaves the zeroed offsets */
        for (int64_t r = 0; len > 0 && r < rows; r++) {
            memcpy(data + r * len, text, (size_t)len);
            offsets[r + 1] = (int32_t)((r + 1) * len);
        }
        b->buffers[i][0] = NULL;
    }
    else if ((b->buffers[i][0] = own_new(b, (size_t)(rows + 7) / 8)) == NULL)
        return -1;
    b->buffers[i][1] = offsets;
    b->buffers[i][2] = data;
    set_node(b, i, rows, text == NULL ? rows : 0, 3);
    return 0;
}

static int
repeated_int32(array_block_t *b, int i, PyObject *value, int64_t rows)
{
    int32_t *data = own_new(b, (size_t)rows * 4);
    if (data == NULL)
        return -1;
    if (value != Py_None) {
        long v = PyLong_AsLong(value);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v < INT32_MIN || v > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "partition is past int32");
            return -1;
        }
        for (int64_t r = 0; r < rows; r++)
            data[r] = (int32_t)v;
        b->buffers[i][0] = NULL;
    }
    else if ((b->buffers[i][0] = own_new(b, (size_t)(rows + 7) / 8)) == NULL)
        return -1;
    b->buffers[i][1] = data;
    set_node(b, i, rows, value == Py_None ? rows : 0, 2);
    return 0;
}

/* The file, topic and partition columns (the same value on every row): 0, or -1 with an exception set. */
static int
where_nodes(array_block_t *b, PyObject *file, PyObject *topic, PyObject *partition, int64_t rows)
{
    const char *text[2] = {NULL, NULL};
    Py_ssize_t len[2] = {0, 0};
    PyObject *values[2] = {file, topic};
    for (int k = 0; k < 2; k++) {
        if (values[k] == Py_None && k == 1)
            continue;
        if ((text[k] = PyUnicode_AsUTF8AndSize(values[k], &len[k])) == NULL)
            return -1;
    }
    if (repeated_string(b, 1, text[0], len[0], rows) < 0 || repeated_string(b, 2, text[1], len[1], rows) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (!PyLong_Check(partition) && partition != Py_None) {
        PyErr_SetString(PyExc_TypeError, "partition must be an int or None");
        return -1;
    }
    if (repeated_int32(b, 3, partition, rows) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The builder's rows as an exported struct array, file/topic/partition in front; the builder's
 * buffers are moved into it (the caller starts it again). NULL with an exception set. */
static array_block_t *
export_columns(columns_t *c, PyObject *file, PyObject *topic, PyObject *partition)
{
    /* every buffer has bytes: a pointer, never NULL, even for zero rows */
    if (buf_reserve(&c->position, 8) < 0 || buf_reserve(&c->offset, 8) < 0 || buf_reserve(&c->timestamp, 8) < 0 ||
        buf_reserve(&c->key.data, 1) < 0 || buf_reserve(&c->value.data, 1) < 0 ||
        buf_reserve(&c->header_key.data, 1) < 0 || buf_reserve(&c->header_value.data, 1) < 0) {
        PyErr_NoMemory();
        return NULL;
    }
    array_block_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    atomic_init(&b->live, NODES);
    atomic_fetch_add(&blocks_alive, 1);
    for (int k = 0; k < NODES - 1; k++)
        b->children[k] = &b->arrays[k + 1];
    int64_t rows = c->rows;
    if (where_nodes(b, file, topic, partition, rows) < 0) {
        block_free(b); /* nothing handed out yet; the builder keeps its rows */
        return NULL;
    }
    b->buffers[0][0] = NULL;
    set_node(b, 0, rows, 0, 1);
    buf_t *ints[3] = {&c->position, &c->offset, &c->timestamp};
    for (int k = 0; k < 3; k++) {
        b->buffers[4 + k][0] = NULL;
        b->buffers[4 + k][1] = own(b, ints[k]);
        set_node(b, 4 + k, rows, 0, 2);
    }
    binary_node(b, 7, &c->key);
    binary_node(b, 8, &c->value);
    b->buffers[9][0] = NULL;
    b->buffers[9][1] = own(b, &c->header_offsets);
    set_node(b, 9, rows, 0, 2);
    b->buffers[10][0] = NULL;
    set_node(b, 10, c->header_key.rows, 0, 1);
    binary_node(b, 11, &c->header_key);
    binary_node(b, 12, &c->header_value);
    return b;
}

/* The schema: the records table's struct, every column nullable (as pyarrow's schemas are made). */
typedef struct {
    atomic_int live;
    struct ArrowSchema nodes[NODES];
    struct ArrowSchema *children[NODES - 1];
} schema_block_t;

static void
release_schema(struct ArrowSchema *s)
{
    schema_block_t *b = (schema_block_t *)s->private_data;
    for (int64_t i = 0; i < s->n_children; i++)
        if (s->children[i]->release != NULL)
            s->children[i]->release(s->children[i]);
    s->release = NULL;
    if (atomic_fetch_sub(&b->live, 1) == 1) {
        free(b);
        atomic_fetch_sub(&blocks_alive, 1);
    }
}

static schema_block_t *
export_schema(void)
{
    schema_block_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    atomic_init(&b->live, NODES);
    atomic_fetch_add(&blocks_alive, 1);
    for (int k = 0; k < NODES - 1; k++)
        b->children[k] = &b->nodes[k + 1];
    for (int i = 0; i < NODES; i++) {
        struct ArrowSchema *s = &b->nodes[i];
        int first, count;
        node_children(i, &first, &count);
        s->format = node_format[i];
        s->name = node_name[i];
        s->metadata = NULL;
        s->flags = i == 0 ? 0 : ARROW_FLAG_NULLABLE;
        s->n_children = count;
        s->children = count ? &b->children[first] : NULL;
        s->dictionary = NULL;
        s->release = release_schema;
        s->private_data = b;
    }
    return b;
}

/* Capsules own a malloc'd struct; pyarrow moves its content out (release set to NULL) when it imports. */
static void
schema_capsule_free(PyObject *capsule)
{
    struct ArrowSchema *s = PyCapsule_GetPointer(capsule, "arrow_schema");
    if (s == NULL)
        return;
    if (s->release != NULL)
        s->release(s);
    free(s);
}

static void
array_capsule_free(PyObject *capsule)
{
    struct ArrowArray *a = PyCapsule_GetPointer(capsule, "arrow_array");
    if (a == NULL)
        return;
    if (a->release != NULL)
        a->release(a);
    free(a);
}

static PyObject *
schema_capsule(void)
{
    schema_block_t *b = export_schema();
    struct ArrowSchema *top = b == NULL ? NULL : malloc(sizeof *top);
    if (top == NULL) {
        if (b != NULL) { /* nothing was handed out yet */
            free(b);
            atomic_fetch_sub(&blocks_alive, 1);
        }
        return PyErr_NoMemory();
    }
    *top = b->nodes[0]; /* the top node moved into the capsule's struct */
    PyObject *cap = PyCapsule_New(top, "arrow_schema", schema_capsule_free);
    if (cap == NULL) {
        top->release(top);
        free(top);
    }
    return cap;
}

/* The buffers that grow with the rows (not the bitmaps), in a fixed order. */
#define N_SIZED 12

static void
columns_sized(columns_t *c, buf_t **out)
{
    buf_t *all[N_SIZED] = {&c->position,          &c->offset,          &c->timestamp,         &c->key.offsets,
                           &c->key.data,          &c->value.offsets,   &c->value.data,        &c->header_offsets,
                           &c->header_key.offsets, &c->header_key.data, &c->header_value.offsets,
                           &c->header_value.data};
    memcpy(out, all, sizeof all);
}

/* A restarted builder's buffers sized for a batch like the one just exported (and a quarter more),
 * taken from the recycled ones when one fits: the next batch's rows go in without growing them, each
 * growth a realloc that copies the buffer (3% of an in-process `scan --out` before). A failure is no
 * error here (the rows then grow the buffers as before). */
static void
columns_presize(columns_t *c, const size_t *used)
{
    buf_t *sized[N_SIZED];
    columns_sized(c, sized);
    for (int k = 0; k < N_SIZED; k++) {
        buf_t *b = sized[k];
        size_t want = used[k] + used[k] / 4, cap;
        if (want <= b->cap)
            continue;
        unsigned char *p = want >= POOL_MIN ? pool_take(want, &cap) : NULL;
        if (p != NULL) {
            if (b->len)
                memcpy(p, b->data, b->len);
            free(b->data);
        }
        else if ((p = realloc(b->data, want)) != NULL)
            cap = want;
        else
            continue;
        b->data = p;
        b->cap = cap;
    }
}

/* finish(file, topic, partition) -> (schema capsule, array capsule): the rows so far, the builder
 * emptied; the file, topic and partition columns hold the given values on every row. */
static PyObject *
columns_finish(columns_t *c, PyObject *args)
{
    PyObject *file, *topic, *partition;
    if (!PyArg_ParseTuple(args, "UOO", &file, &topic, &partition))
        return NULL;
    if (topic != Py_None && !PyUnicode_Check(topic)) {
        PyErr_SetString(PyExc_TypeError, "topic must be a str or None");
        return NULL;
    }
    size_t used[N_SIZED];
    buf_t *sized[N_SIZED];
    columns_sized(c, sized);
    for (int k = 0; k < N_SIZED; k++)
        used[k] = sized[k]->len;
    PyObject *schema = schema_capsule();
    if (schema == NULL)
        return NULL;
    array_block_t *b = export_columns(c, file, topic, partition);
    if (b == NULL) {
        Py_DECREF(schema);
        return NULL;
    }
    columns_free(c); /* what export_columns did not move: the bitmaps of columns without nulls */
    int restarted = columns_init(c);
    if (restarted == 0)
        columns_presize(c, used);
    struct ArrowArray *top = malloc(sizeof *top);
    if (top == NULL) {
        b->arrays[0].release(&b->arrays[0]);
        Py_DECREF(schema);
        return PyErr_NoMemory();
    }
    *top = b->arrays[0];
    PyObject *array = PyCapsule_New(top, "arrow_array", array_capsule_free);
    if (array == NULL) {
        top->release(top);
        free(top);
        Py_DECREF(schema);
        return NULL;
    }
    if (restarted < 0) {
        Py_DECREF(schema);
        Py_DECREF(array);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(2, schema, array);
    Py_DECREF(schema);
    Py_DECREF(array);
    return out;
}

static PyObject *
columns_schema(PyObject *cls, PyObject *unused)
{
    (void)cls;
    (void)unused;
    return schema_capsule();
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
PyObject *
arrow_blocks_alive(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLong(atomic_load(&blocks_alive));
}
