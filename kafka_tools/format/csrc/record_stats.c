/*
 * record_stats: what a `batches` row needs of a v2 records section (its record count and smallest
 * timestamp), read as decode_records reads it (records_v2.c: the same error), no Record made.
 */
#include "record_reader.h"

/* record_stats(data, count, base_offset, base_timestamp, log_append_time, base_sequence)
 *   -> (records, min_timestamp or None)
 * What a `batches` row needs of the records: read as decode_records reads them (the same error), no
 * Record made. */
PyObject *
record_stats(PyObject *module, PyObject *args)
{
    records_call_t call;
    if (records_call(module, args, &call, NULL) < 0)
        return NULL;
    PyObject *out = NULL;
    records_t r;
    record_t rec;
    long long min_ts = 0;
    records_open(&r, (const unsigned char *)call.view.buf, call.view.len, &call.b);
    int more;
    while ((more = records_next(&r, &rec)) > 0)
        if (r.index == 1 || rec.timestamp < min_ts)
            min_ts = rec.timestamp;
    if (more < 0) {
        records_raise(&r, call.st->decode_error);
        goto done;
    }
    if (r.index == 0)
        out = Py_BuildValue("nO", r.index, Py_None);
    else
        out = Py_BuildValue("nL", r.index, min_ts);
done:
    PyBuffer_Release(&call.view);
    return out;
}
