/*
 * remote_span_events: the records of a run of checked v2 batches of `__remote_log_metadata` as the
 * tiered audit's replay needs them, one call for thousands of batches. A 3.9.2 broker writes one
 * record a batch, so a Python step a batch (a header unpack, a record iterator, a record object, the
 * decoded value's nested dicts) was the audit's cost; here a batch costs a C loop and its record one
 * flat tuple. The pure-Python reference is format/remote_events.py (`span_events_py`): the same list.
 *
 * Each record of a batch that is not a control batch is one event:
 *   (offset, topic_id, partition, topic, segment_id, state, event_ms, broker_id)
 *       a value that decodes as RemoteLogSegmentMetadataUpdateRecord v0 (apiKey 1: a segment's state
 *       moves on, three events of four), its fields as decode_remote_log_metadata gives them;
 *   (offset, topic_id, partition, topic, segment_id, state, event_ms, broker_id,
 *    start_offset, end_offset, size, {leader_epoch: offset})
 *       a RemoteLogSegmentMetadataRecord v0 (apiKey 0: a copy starts), the same way;
 *   (offset, value)   any other value (bytes, or None for a null one): the caller decodes it;
 *   (position, next, None)   a batch whose records section cannot be read (the reader of
 *       record_reader.h fails): none of its records, the caller reads it the ordinary way.
 * A value this fast path does not take whole (another apiKey, a tagged field, invalid UTF-8...) is
 * handed over as bytes, never refused here: the one decoder (kraft.c's table) decides.
 */
#include "record_reader.h"

#define RS_HEADER 61     /* RECORD_BATCH_OVERHEAD */
#define RS_MIN_LENGTH 49 /* MIN_BATCH_LENGTH */
#define RS_LOG_OVERHEAD 12
#define RS_TIMESTAMP_TYPE 0x08
#define RS_CONTROL 0x20

/* An unsigned varint as read_uvarint takes it (at most 5 bytes, 32 bits); -1: not one. */
static int
rs_uvarint(cursor_t *c, uint32_t *out)
{
    uint64_t value = 0;
    int shift = 0;
    for (;;) {
        if (c->pos >= c->end)
            return -1;
        unsigned char b = c->p[c->pos++];
        value |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            if (value > 0xFFFFFFFFu)
                return -1;
            *out = (uint32_t)value;
            return 0;
        }
        shift += 7;
        if (shift >= 35)
            return -1;
    }
}

/* A struct's tagged fields as decode_struct reads them: each in order and within the bytes left, the
 * ones the struct does not know skipped. `bool_tag` (-1: none) is a tag the struct knows as a bool
 * (the segment record's TxnIndexEmpty, not kept): exactly one byte, 0 or 1. -1: decode_struct would
 * refuse them. */
static int
rs_tags(cursor_t *c, int64_t bool_tag)
{
    uint32_t count, tag, size;
    if (rs_uvarint(c, &count) < 0 || (uint64_t)count * 2 > (uint64_t)(c->end - c->pos))
        return -1;
    int64_t last = -1;
    for (uint32_t k = 0; k < count; k++) {
        if (rs_uvarint(c, &tag) < 0 || (int64_t)tag <= last)
            return -1;
        last = tag;
        if (rs_uvarint(c, &size) < 0 || (uint64_t)size > (uint64_t)(c->end - c->pos))
            return -1;
        if ((int64_t)tag == bool_tag && (size != 1 || c->p[c->pos] > 1))
            return -1;
        c->pos += (Py_ssize_t)size;
    }
    return 0;
}

static int
rs_need(const cursor_t *c, Py_ssize_t n)
{
    return c->end - c->pos >= n ? 0 : -1;
}

/* The strings of the last event, reused while the next names the same bytes (a topic's name and id
 * are the same in every event of a partition). */
typedef struct {
    const unsigned char *ptr;
    Py_ssize_t len;
    PyObject *str;
} rs_cached;

static void
rs_cache_clear(rs_cached *k)
{
    Py_CLEAR(k->str);
}

/* Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, unpadded (22 characters). */
static PyObject *
rs_uuid(const unsigned char *q)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    PyObject *s = PyUnicode_New(22, 127);
    if (s == NULL)
        return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(s);
    int o = 0;
    for (int i = 0; i < 15; i += 3) {
        uint32_t v = (uint32_t)q[i] << 16 | (uint32_t)q[i + 1] << 8 | q[i + 2];
        out[o++] = (Py_UCS1)alphabet[v >> 18];
        out[o++] = (Py_UCS1)alphabet[(v >> 12) & 63];
        out[o++] = (Py_UCS1)alphabet[(v >> 6) & 63];
        out[o++] = (Py_UCS1)alphabet[v & 63];
    }
    out[o++] = (Py_UCS1)alphabet[q[15] >> 2];
    out[o++] = (Py_UCS1)alphabet[(q[15] & 3) << 4];
    return s;
}

/* A new reference to the string of ptr[0..len) (a uuid when len is 16 and `uuid`), from the cache
 * when the bytes are the last ones; NULL with no exception: not valid UTF-8 (the caller hands the
 * value over). */
static PyObject *
rs_string(rs_cached *k, const unsigned char *ptr, Py_ssize_t len, int uuid)
{
    if (k->str != NULL && k->len == len && memcmp(k->ptr, ptr, (size_t)len) == 0)
        return Py_NewRef(k->str);
    PyObject *s = uuid ? rs_uuid(ptr) : PyUnicode_DecodeUTF8((const char *)ptr, len, "strict");
    if (s == NULL) {
        if (!uuid && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            PyErr_Clear();
        return NULL;
    }
    Py_XSETREF(k->str, Py_NewRef(s));
    k->ptr = ptr;
    k->len = len;
    return s;
}

typedef struct {
    rs_cached topic, topic_id, segment_id;
} rs_caches;

/* The leader epochs of a segment record, already checked by rs_value: {epoch: offset}, as the
 * replay's dict comprehension makes it (a repeated epoch: the last one). */
static PyObject *
rs_epochs(const unsigned char *p, Py_ssize_t at, Py_ssize_t end, uint32_t count)
{
    PyObject *epochs = PyDict_New();
    cursor_t c = {p, at, end};
    for (uint32_t i = 0; epochs != NULL && i < count; i++) {
        PyObject *epoch = PyLong_FromLong(be32s(p + c.pos));
        PyObject *offset = PyLong_FromLongLong((long long)be64s(p + c.pos + 4));
        if (epoch == NULL || offset == NULL || PyDict_SetItem(epochs, epoch, offset) < 0)
            Py_CLEAR(epochs);
        Py_XDECREF(epoch);
        Py_XDECREF(offset);
        c.pos += 12;
        (void)rs_tags(&c, -1);
    }
    return epochs;
}

/* The event of a segment record (apiKey 0) or an update record (apiKey 1), a new tuple; NULL with no
 * exception: neither, or not decodable whole (the caller hands the value over); NULL with an
 * exception: out of memory. */
static PyObject *
rs_value(rs_caches *k, const unsigned char *p, Py_ssize_t len, long long offset)
{
    cursor_t c = {p, 0, len};
    uint32_t frame, api_key, version, n;
    if (rs_uvarint(&c, &frame) < 0 || frame != 1 || rs_uvarint(&c, &api_key) < 0 || api_key > 1 ||
        rs_uvarint(&c, &version) < 0 || version != 0)
        return NULL;
    /* RemoteLogSegmentId { TopicIdPartition { Name, Id, Partition }, Id } */
    if (rs_uvarint(&c, &n) < 0 || n == 0 || (uint64_t)(n - 1) > (uint64_t)(c.end - c.pos))
        return NULL;
    const unsigned char *name = p + c.pos;
    Py_ssize_t name_len = (Py_ssize_t)(n - 1);
    c.pos += name_len;
    if (rs_need(&c, 16 + 4) < 0)
        return NULL;
    const unsigned char *topic_id = p + c.pos;
    int32_t partition = be32s(p + c.pos + 16);
    c.pos += 20;
    if (rs_tags(&c, -1) < 0 || rs_need(&c, 16) < 0)
        return NULL;
    const unsigned char *segment_id = p + c.pos;
    c.pos += 16;
    if (rs_tags(&c, -1) < 0)
        return NULL;
    long long start = 0, end = 0;
    int32_t broker, size = 0;
    long long event_ms;
    Py_ssize_t epochs_at = 0;
    uint32_t epochs = 0;
    if (api_key == 0) { /* StartOffset, EndOffset, BrokerId, MaxTimestampMs, EventTimestampMs */
        if (rs_need(&c, 8 + 8 + 4 + 8 + 8) < 0)
            return NULL;
        start = (long long)be64s(p + c.pos);
        end = (long long)be64s(p + c.pos + 8);
        broker = be32s(p + c.pos + 16);
        event_ms = (long long)be64s(p + c.pos + 28);
        c.pos += 36;
        /* SegmentLeaderEpochs: a compact array, not nullable, of { LeaderEpoch, Offset } */
        if (rs_uvarint(&c, &n) < 0 || n == 0 || (uint64_t)(n - 1) > (uint64_t)(c.end - c.pos))
            return NULL;
        epochs = n - 1;
        epochs_at = c.pos;
        for (uint32_t i = 0; i < epochs; i++) {
            if (rs_need(&c, 12) < 0)
                return NULL;
            c.pos += 12;
            if (rs_tags(&c, -1) < 0)
                return NULL;
        }
        if (rs_need(&c, 4) < 0)
            return NULL;
        size = be32s(p + c.pos);
        c.pos += 4;
    } else { /* BrokerId, EventTimestampMs */
        if (rs_need(&c, 4 + 8) < 0)
            return NULL;
        broker = be32s(p + c.pos);
        event_ms = (long long)be64s(p + c.pos + 4);
        c.pos += 12;
    }
    /* CustomMetadata: nullable bytes, not kept */
    if (rs_uvarint(&c, &n) < 0 || (n != 0 && (uint64_t)(n - 1) > (uint64_t)(c.end - c.pos)))
        return NULL;
    if (n != 0)
        c.pos += (Py_ssize_t)(n - 1);
    if (rs_need(&c, 1) < 0)
        return NULL;
    int state = (signed char)p[c.pos++];
    if (rs_tags(&c, api_key == 0 ? 0 : -1) < 0 || c.pos != c.end) /* tag 0: TxnIndexEmpty (Kafka 4) */
        return NULL;

    Py_ssize_t count = api_key == 0 ? 12 : 8;
    PyObject *items[12] = {NULL};
    items[3] = rs_string(&k->topic, name, name_len, 0);
    if (items[3] == NULL) /* invalid UTF-8, or out of memory */
        return NULL;
    items[0] = PyLong_FromLongLong(offset);
    items[1] = rs_string(&k->topic_id, topic_id, 16, 1);
    items[2] = PyLong_FromLong(partition);
    items[4] = rs_string(&k->segment_id, segment_id, 16, 1);
    items[5] = PyLong_FromLong(state);
    items[6] = PyLong_FromLongLong(event_ms);
    items[7] = PyLong_FromLong(broker);
    if (api_key == 0) {
        items[8] = PyLong_FromLongLong(start);
        items[9] = PyLong_FromLongLong(end);
        items[10] = PyLong_FromLong(size);
        items[11] = rs_epochs(p, epochs_at, len, epochs);
    }
    PyObject *event = PyTuple_New(count);
    for (Py_ssize_t i = 0; i < count; i++)
        if (items[i] == NULL)
            Py_CLEAR(event);
    if (event == NULL) {
        for (Py_ssize_t i = 0; i < count; i++)
            Py_XDECREF(items[i]);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        PyTuple_SET_ITEM(event, i, items[i]);
    return event;
}

/* The event of one record: a segment record's or an update's tuple, else (offset, value). */
static PyObject *
rs_event(rs_caches *k, const record_t *rec)
{
    if (rec->value.len >= 0) {
        PyObject *event = rs_value(k, rec->value.ptr, rec->value.len, rec->offset);
        if (event != NULL || PyErr_Occurred())
            return event;
        return Py_BuildValue("(Ly#)", rec->offset, (const char *)rec->value.ptr, rec->value.len);
    }
    return Py_BuildValue("(LO)", rec->offset, Py_None);
}

static int
rs_append(PyObject *list, PyObject *item)
{
    if (item == NULL)
        return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* remote_span_events(buf, at, end, limit) -> (events, next): the events of the batches from buf[at],
 * none reaching past `end` (nor the buffer), batch after batch while fewer than `limit` events were
 * made (a call's list stays small whatever the records a batch); `next` is where the walk stopped. A batch whose header is cut or whose length runs past `end` raises ValueError: a
 * span holds framed batches only (format/batch_spans.py). */
PyObject *
remote_span_events(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    Py_ssize_t at, end, limit;
    if (!PyArg_ParseTuple(args, "y*nnn", &view, &at, &end, &limit))
        return NULL;
    clamp_walk(view.len, &at, &end);
    const unsigned char *p = (const unsigned char *)view.buf;
    rs_caches k = {{NULL, 0, NULL}, {NULL, 0, NULL}, {NULL, 0, NULL}};
    PyObject *out = PyList_New(0);
    if (out == NULL)
        goto fail;
    while (at < end && PyList_GET_SIZE(out) < limit) {
        if (end - at < RS_HEADER) {
            PyErr_Format(PyExc_ValueError, "a span's batch at %zd is not framed", at);
            goto fail;
        }
        const unsigned char *h = p + at;
        int32_t length = be32s(h + 8);
        if (length < RS_MIN_LENGTH || (Py_ssize_t)length > end - at - RS_LOG_OVERHEAD) {
            PyErr_Format(PyExc_ValueError, "a span's batch at %zd is not framed", at);
            goto fail;
        }
        Py_ssize_t next = at + RS_LOG_OVERHEAD + (Py_ssize_t)length;
        int attributes = (int)(int16_t)((uint16_t)h[21] << 8 | h[22]);
        if (!(attributes & RS_CONTROL)) {
            batch_t b;
            b.count = be32s(h + 57);
            b.base_offset = (long long)be64s(h);
            b.base_timestamp = (long long)be64s(h + 27);
            b.base_sequence = be32s(h + 53);
            b.log_append = (attributes & RS_TIMESTAMP_TYPE) != 0;
            b.log_append_time = b.log_append ? (long long)be64s(h + 35) : 0;
            records_t r;
            record_t rec;
            records_open(&r, h + RS_HEADER, next - at - RS_HEADER, &b);
            Py_ssize_t mark = PyList_GET_SIZE(out);
            int more;
            while ((more = records_next(&r, &rec)) > 0)
                if (rs_append(out, rs_event(&k, &rec)) < 0)
                    goto fail;
            if (more < 0) { /* the records before the damage go too: the caller reads the batch whole */
                if (PyList_SetSlice(out, mark, PyList_GET_SIZE(out), NULL) < 0 ||
                    rs_append(out, Py_BuildValue("(nnO)", at, next, Py_None)) < 0)
                    goto fail;
            }
        }
        at = next;
    }
    rs_cache_clear(&k.topic);
    rs_cache_clear(&k.topic_id);
    rs_cache_clear(&k.segment_id);
    PyBuffer_Release(&view);
    PyObject *result = Py_BuildValue("(Nn)", out, at);
    return result;
fail:
    rs_cache_clear(&k.topic);
    rs_cache_clear(&k.topic_id);
    rs_cache_clear(&k.segment_id);
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}
