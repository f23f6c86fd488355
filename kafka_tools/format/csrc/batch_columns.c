/*
 * batch_columns: the `batches` table's columns of a run of plain v2 batches, walked in C.
 *
 * The scan's `batches` table has a row per entry; built from Python, each row costs a RecordBatch
 * object, a 21-value tuple and its list appends (a third of `scan --out` once batches are small,
 * bench/README.md). This walks the entries from buf[at] as segment.walk_entries frames them and, for
 * each v2 batch it can take whole — well framed, uncompressed, its CRC-32C matching, its records read
 * without error — writes the row's numbers straight into column buffers, read by pyarrow as Arrow
 * arrays (pipeline/batch_columns.py). It stops before the first entry that is anything else (another
 * magic, a compressed or damaged batch, a frame fault): the Python walk takes that one, with its own
 * words for what is wrong, and hands back.
 */
#include "record_reader.h"

#define HEADER 61     /* RECORD_BATCH_OVERHEAD */
#define MIN_LENGTH 49 /* the smallest batchLength: the header after the log overhead */
#define CRC_START 21

/* The columns, in the order batch_columns returns their buffers. */
enum { C_POSITION, C_BASE, C_LAST, C_COUNT, C_RECORDS, C_SIZE, C_CRC, C_COMPUTED, C_TS_TYPE, C_MIN_TS,
       C_MAX_TS, C_EPOCH, C_PRODUCER, C_PRODUCER_EPOCH, C_SEQUENCE, N_COLUMNS };
static const int widths[N_COLUMNS] = {8, 8, 8, 4, 4, 4, 8, 8, 4, 8, 8, 4, 8, 4, 4};
/* bit-packed (Arrow booleans and validity): min_timestamp known, is_transactional, is_control */
enum { B_MIN_TS, B_TRANSACTIONAL, B_CONTROL, N_BITS };

#define PUT(col, type, value) (((type *)cols[col])[n] = (type)(value))

static inline void
set_bit(unsigned char *bits, Py_ssize_t i, int on)
{
    if (on)
        bits[i >> 3] |= (unsigned char)(1u << (i & 7));
}

/* batch_columns(buf, at, limit, max_rows[, records, max_record_rows, max_record_bytes]) -> (rows, at, columns, bits)
 *
 * Walks from buf[at] (buf: the whole segment, so buffer index = file position) the entries starting
 * before `limit`, at most `max_rows`, while each is a v2 batch it takes whole (see above). `at` is
 * where it stopped; `columns` the N_COLUMNS buffers (bytes: little-endian int64/int32 per row, in
 * the `batches` table's column order, timestamp type as 0 CreateTime / 1 LogAppendTime), `bits`
 * the N_BITS bitmaps. The GIL is released while it walks.
 *
 * With `records` (a RecordColumns), the records of each batch taken are added to it in the same walk
 * (the records table's rows; one pass over the bytes for both tables), and the walk also stops before a
 * batch once it holds `max_record_rows` rows or `max_record_bytes` (the caller then exports them). The
 * GIL is held then: a header key that is not ASCII is decoded by Python. */
PyObject *
batch_columns(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    Py_ssize_t at, limit, max_rows, max_record_rows = 0, max_record_bytes = 0;
    PyObject *records = Py_None;
    if (!PyArg_ParseTuple(args, "y*nnn|Onn", &view, &at, &limit, &max_rows, &records, &max_record_rows,
                          &max_record_bytes))
        return NULL;
    if (records == Py_None)
        records = NULL;
    else if (record_columns_check(module, records) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int failed = 0;
    PyObject *result = NULL, *col_objs[N_COLUMNS] = {NULL}, *bit_objs[N_BITS] = {NULL};
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    clamp_walk(end, &at, &limit);
    if (max_rows < 0)
        max_rows = 0;
    /* No more rows than batches fit in the walked bytes (61 bytes each at least): the buffers are
     * sized once, from the input, never from a field. */
    Py_ssize_t room = limit > at ? (limit - at) / HEADER + 1 : 0;
    if (room > max_rows)
        room = max_rows;
    char *cols[N_COLUMNS];
    unsigned char *bits[N_BITS];
    for (int k = 0; k < N_COLUMNS; k++) {
        col_objs[k] = PyBytes_FromStringAndSize(NULL, room * widths[k]);
        if (col_objs[k] == NULL)
            goto done;
        cols[k] = PyBytes_AS_STRING(col_objs[k]);
    }
    for (int k = 0; k < N_BITS; k++) {
        bit_objs[k] = PyBytes_FromStringAndSize(NULL, (room + 7) / 8);
        if (bit_objs[k] == NULL)
            goto done;
        bits[k] = (unsigned char *)PyBytes_AS_STRING(bit_objs[k]);
        memset(bits[k], 0, (size_t)(room + 7) / 8);
    }
    Py_ssize_t n = 0;
    PyThreadState *released = records == NULL ? PyEval_SaveThread() : NULL;
    while (n < room && at < limit && end - at >= HEADER) {
        if (records != NULL && record_columns_full(records, max_record_rows, max_record_bytes))
            break;
        const unsigned char *b = p + at;
        int32_t length = (int32_t)be32u(b + 8);
        if (b[16] != 2 || length < MIN_LENGTH || (Py_ssize_t)length > end - at - 12)
            break;
        unsigned attributes = (unsigned)b[21] << 8 | b[22];
        if ((attributes & 0x07) != 0) /* compressed: the Python walk decompresses it */
            break;
        Py_ssize_t size = (Py_ssize_t)length + 12;
        uint32_t crc = be32u(b + 17);
        uint32_t computed = crc32c_update(0, b + CRC_START, (size_t)(size - CRC_START));
        if (computed != crc) /* a damaged batch: the Python walk reports it */
            break;
        int64_t base = be64s(b);
        int32_t delta = (int32_t)be32u(b + 23);
        int64_t base_ts = be64s(b + 27), max_ts = be64s(b + 35);
        int32_t sequence = (int32_t)be32u(b + 53), count = (int32_t)be32u(b + 57);
        int log_append = (attributes >> 3) & 1;
        batch_t batch = {count, base, base_ts, sequence, log_append, log_append ? max_ts : 0};
        Py_ssize_t read = 0;
        long long min_ts = 0;
        if (records != NULL) {
            int got = record_columns_add_section(records, b + HEADER, size - HEADER, &batch, at, &read, &min_ts);
            if (got < 0) {
                failed = 1;
                break;
            }
            if (got > 0) /* records that cannot be read: the Python walk says why */
                break;
        }
        else {
            records_t r;
            record_t rec;
            records_open(&r, b + HEADER, size - HEADER, &batch);
            int more;
            while ((more = records_next(&r, &rec)) > 0)
                if (r.index == 1 || rec.timestamp < min_ts)
                    min_ts = rec.timestamp;
            if (more < 0) /* records that cannot be read: the Python walk says why */
                break;
            read = r.index;
        }
        PUT(C_POSITION, int64_t, at);
        PUT(C_BASE, int64_t, base);
        PUT(C_LAST, int64_t, (int64_t)((uint64_t)base + (uint64_t)(int64_t)delta)); /* as Python: no overflow */
        PUT(C_COUNT, int32_t, count);
        PUT(C_RECORDS, int32_t, read);
        PUT(C_SIZE, int32_t, size);
        PUT(C_CRC, int64_t, crc);
        PUT(C_COMPUTED, int64_t, computed);
        PUT(C_TS_TYPE, int32_t, log_append);
        PUT(C_MIN_TS, int64_t, read ? min_ts : 0);
        PUT(C_MAX_TS, int64_t, max_ts);
        PUT(C_EPOCH, int32_t, (int32_t)be32u(b + 12));
        PUT(C_PRODUCER, int64_t, be64s(b + 43));
        PUT(C_PRODUCER_EPOCH, int32_t, (int16_t)((unsigned)b[51] << 8 | b[52]));
        PUT(C_SEQUENCE, int32_t, sequence);
        set_bit(bits[B_MIN_TS], n, read > 0);
        set_bit(bits[B_TRANSACTIONAL], n, (attributes >> 4) & 1);
        set_bit(bits[B_CONTROL], n, (attributes >> 5) & 1);
        n++;
        at += size;
    }
    if (released != NULL)
        PyEval_RestoreThread(released);
    if (failed)
        goto done;
    PyObject *col_tuple = PyTuple_New(N_COLUMNS), *bit_tuple = PyTuple_New(N_BITS);
    if (col_tuple == NULL || bit_tuple == NULL) {
        Py_XDECREF(col_tuple);
        Py_XDECREF(bit_tuple);
        goto done;
    }
    for (int k = 0; k < N_COLUMNS; k++) {
        PyTuple_SET_ITEM(col_tuple, k, col_objs[k]);
        col_objs[k] = NULL;
    }
    for (int k = 0; k < N_BITS; k++) {
        PyTuple_SET_ITEM(bit_tuple, k, bit_objs[k]);
        bit_objs[k] = NULL;
    }
    result = Py_BuildValue("nnNN", n, at, col_tuple, bit_tuple);
done:
    for (int k = 0; k < N_COLUMNS; k++)
        Py_XDECREF(col_objs[k]);
    for (int k = 0; k < N_BITS; k++)
        Py_XDECREF(bit_objs[k]);
    PyBuffer_Release(&view);
    return result;
}
