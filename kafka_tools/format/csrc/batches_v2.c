/*
 * scan_batches: the v2 header walk of `ktool validate` in C. It frames each batch as
 * segment.walk_entries does, checks its CRC-32C and the header facts validate's common case needs
 * (uncompressed, offsets in order and in the segment's range, a record count the offset deltas can
 * hold), and returns only the totals: no object a batch. It stops before the first batch that is
 * anything else, which the Python walk then reports as it always has.
 */
#include "speedups.h"

#define V2_HEADER 61     /* RECORD_BATCH_OVERHEAD */
#define V2_MIN_LENGTH 49 /* MIN_BATCH_LENGTH */
#define V2_CRC_START 21

typedef struct {
    Py_ssize_t pos;
    long long first, last;
} hit_t;

/* scan_batches(buf, at, limit, end, prev, lo, hi, wanted, shift, check_crc=True)
 *   -> (at, count, records, first, last, max_timestamp, gaps, hits)
 *
 * Walks the v2 batches from buf[at], none starting at or past `limit` nor reaching past `end` (nor
 * the buffer), while each has magic 2, a length of at least 49, codec none, a matching CRC-32C (when
 * `check_crc`), a last offset in lo..hi above the one before it (`prev`, None for none) and
 * 0 <= records count <= lastOffsetDelta + 1. `first` is the first batch's base offset, `last` the last
 * batch's last offset; `gaps` whether a base offset skipped past the offset before it. `wanted` is a
 * sorted sequence of file positions (buffer index + `shift`) whose (position, base offset, last
 * offset) go into `hits` when a batch starts there. The GIL is released while it walks. */
PyObject *
scan_batches(PyObject *module, PyObject *args)
{
    (void)module; /* needs no state */
    Py_buffer view;
    Py_ssize_t at, limit, end, shift;
    PyObject *prev_obj, *wanted_obj;
    long long lo, hi;
    int check_crc = 1;
    if (!PyArg_ParseTuple(args, "y*nnnOLLOn|p", &view, &at, &limit, &end, &prev_obj, &lo, &hi, &wanted_obj,
                          &shift, &check_crc))
        return NULL;
    PyObject *result = NULL, *hits = NULL;
    Py_ssize_t *wanted = NULL, n_wanted = 0;
    hit_t *found = NULL;
    Py_ssize_t n_found = 0;
    int have_prev = prev_obj != Py_None;
    long long prev = 0;
    if (have_prev) {
        prev = PyLong_AsLongLong(prev_obj);
        if (prev == -1 && PyErr_Occurred())
            goto done;
    }
    PyObject *seq = PySequence_Fast(wanted_obj, "wanted must be a sequence of positions");
    if (seq == NULL)
        goto done;
    n_wanted = PySequence_Fast_GET_SIZE(seq);
    if (n_wanted) {
        wanted = PyMem_Malloc(sizeof(Py_ssize_t) * n_wanted);
        found = PyMem_Malloc(sizeof(hit_t) * n_wanted);
        if (wanted == NULL || found == NULL) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t k = 0; k < n_wanted; k++) {
            wanted[k] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, k));
            if (wanted[k] == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                goto done;
            }
        }
    }
    Py_DECREF(seq);
    if (end > view.len)
        end = view.len;
    if (at < 0)
        at = end;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t count = 0, k = 0;
    long long records = 0, first = 0, last = prev, max_ts = INT64_MIN;
    int gaps = 0;
    Py_BEGIN_ALLOW_THREADS
    while (at < limit && end - at >= V2_HEADER) {
        const unsigned char *b = p + at;
        int32_t length = (int32_t)be32u(b + 8);
        if (b[16] != 2 || length < V2_MIN_LENGTH || (Py_ssize_t)length > end - at - 12)
            break;
        if ((b[22] & 0x07) != 0) /* attributes (int16 at 21): the codec's bits */
            break;
        int64_t base = be64s(b), last_offset;
        int32_t delta = (int32_t)be32u(b + 23);
        int32_t n_records = (int32_t)be32u(b + 57);
        if (__builtin_add_overflow(base, (int64_t)delta, &last_offset))
            break;
        if (last_offset < lo || last_offset > hi || (have_prev && last_offset <= last))
            break;
        if (n_records < 0 || (int64_t)n_records > (int64_t)delta + 1)
            break;
        Py_ssize_t size = (Py_ssize_t)length + 12;
        if (check_crc && crc32c_update(0, b + V2_CRC_START, (size_t)(size - V2_CRC_START)) != be32u(b + 17))
            break;
        if (have_prev && last < INT64_MAX && base > last + 1)
            gaps = 1;
        if (count == 0)
            first = base;
        Py_ssize_t file_pos = at + shift;
        while (k < n_wanted && wanted[k] < file_pos)
            k++;
        if (k < n_wanted && wanted[k] == file_pos) {
            found[n_found].pos = file_pos;
            found[n_found].first = base;
            found[n_found].last = last_offset;
            n_found++;
            k++;
        }
        int64_t ts = be64s(b + 35);
        if (ts > max_ts)
            max_ts = ts;
        last = last_offset;
        have_prev = 1;
        records += n_records;
        count++;
        at += size;
    }
    Py_END_ALLOW_THREADS
    hits = PyList_New(n_found);
    if (hits == NULL)
        goto done;
    for (Py_ssize_t h = 0; h < n_found; h++) {
        PyObject *t = Py_BuildValue("nLL", found[h].pos, found[h].first, found[h].last);
        if (t == NULL)
            goto done;
        PyList_SET_ITEM(hits, h, t);
    }
    result = Py_BuildValue("nnLLLLOO", at, count, records, first, count ? last : prev, max_ts,
                           gaps ? Py_True : Py_False, hits);
done:
    Py_XDECREF(hits);
    PyMem_Free(wanted);
    PyMem_Free(found);
    PyBuffer_Release(&view);
    return result;
}
