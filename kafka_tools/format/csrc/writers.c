/*
 * The dump-log lines of a v2 record and of a magic 0/1 message (Kafka's DumpLogSegments text, ktool's
 * JSON objects: render/dump_text.py and render/dump_json.py make the same, byte for byte), written into
 * out_buffer.h's output. The format_* entry points are a reader (records_v2.c, messages_v01.c) or
 * Record tuples, plus a writer.
 */
#include "record_reader.h"
#include "out_buffer.h"

/* ---- a v2 record's line ------------------------------------------------------------------------------- */

/* What a record line shows, from the section's bytes (records_next) or from a Record tuple. */
typedef struct {
    long long offset, timestamp, sequence;
    field_t key, value;
    headers_t headers;
} record_line_t;

static void
record_line_of(record_line_t *line, const unsigned char *p, const record_t *rec)
{
    line->offset = rec->offset;
    line->timestamp = rec->timestamp;
    line->sequence = rec->sequence;
    line->key = rec->key;
    line->value = rec->value;
    headers_of_record(&line->headers, p, rec);
}

static inline void
out_field_text(out_t *o, const field_t *f)
{
    if (f->len < 0)
        PUT(o, "null");
    else
        out_text(o, f->ptr, f->len);
}

static inline void
out_field_json(out_t *o, const field_t *f)
{
    if (f->len < 0)
        PUT(o, "null");
    else
        out_json_string(o, f->ptr, f->len);
}

/* `{"type":"<type>","file":<file>`: how a JSON record or message begins. */
static void
out_json_start(out_t *o, const char *type_and_file, const char *file_json, Py_ssize_t file_json_len)
{
    out_put(o, type_and_file, (Py_ssize_t)strlen(type_and_file));
    out_put(o, file_json, file_json_len);
}

/* `,"keySize":…,"valueSize":…` of a JSON record or message. */
static void
out_json_sizes(out_t *o, const field_t *key, const field_t *value)
{
    PUT(o, ",\"keySize\":");
    out_int(o, key->len);
    PUT(o, ",\"valueSize\":");
    out_int(o, value->len);
}

/* `,"key":…,"value":…` with print_data, and the line's end: how a JSON record or message ends. */
static void
out_json_end(out_t *o, const field_t *key, const field_t *value, int print_data)
{
    if (print_data) {
        PUT(o, ",\"key\":");
        out_field_json(o, key);
        PUT(o, ",\"value\":");
        out_field_json(o, value);
    }
    PUT(o, "}\n");
}

/* ` key: … payload: …`, each when present: the data of a text record or message line. */
static void
out_data_text(out_t *o, const field_t *key, const field_t *value)
{
    if (key->len >= 0) {
        PUT(o, " key: ");
        out_text(o, key->ptr, key->len);
    }
    if (value->len >= 0) {
        PUT(o, " payload: ");
        out_text(o, value->ptr, value->len);
    }
}

/* DumpLogSegments' `| offset: …` line (render/dump_text.py's _record): -1 when a header is not a
 * (str, bytes) pair (Record tuples only). */
static int
write_record_text(out_t *o, const record_line_t *r, const char *label, Py_ssize_t label_len, int print_data)
{
    PUT(o, "| offset: ");
    out_int(o, r->offset);
    out_char(o, ' ');
    out_put(o, label, label_len);
    PUT(o, ": ");
    out_int(o, r->timestamp);
    PUT(o, " keySize: ");
    out_int(o, r->key.len);
    PUT(o, " valueSize: ");
    out_int(o, r->value.len);
    PUT(o, " sequence: ");
    out_int(o, r->sequence);
    PUT(o, " headerKeys: [");
    headers_t h = r->headers;
    field_t key, value;
    int got, n = 0;
    for (; (got = headers_next(&h, &key, &value)) > 0; n++) {
        if (n)
            out_char(o, ',');
        out_name(o, key.ptr, key.len);
    }
    if (got < 0)
        return -1;
    out_char(o, ']');
    if (print_data) {
        if (n) {
            PUT(o, " headers: [");
            h = r->headers;
            for (int i = 0; (got = headers_next(&h, &key, &value)) > 0; i++) {
                if (i)
                    out_char(o, ',');
                out_name(o, key.ptr, key.len);
                out_char(o, ':');
                out_field_text(o, &value);
            }
            out_char(o, ']');
        }
        out_data_text(o, &r->key, &r->value);
    }
    out_char(o, '\n');
    return 0;
}

/* ktool's `record` JSON object (render/dump_json.py's _record; keys and values as UTF-8 text). */
static void
write_record_json(out_t *o, const record_line_t *r, const char *label, Py_ssize_t label_len, const char *file_json,
                  Py_ssize_t file_json_len, long long batch_position, int print_data)
{
    out_json_start(o, "{\"type\":\"record\",\"file\":", file_json, file_json_len);
    PUT(o, ",\"batchPosition\":");
    out_int(o, batch_position);
    PUT(o, ",\"offset\":");
    out_int(o, r->offset);
    PUT(o, ",\"timestamp\":");
    out_int(o, r->timestamp);
    PUT(o, ",\"timestampType\":\"");
    out_put(o, label, label_len);
    out_char(o, '"');
    out_json_sizes(o, &r->key, &r->value);
    PUT(o, ",\"sequence\":");
    out_int(o, r->sequence);
    PUT(o, ",\"headerKeys\":[");
    headers_t h = r->headers;
    field_t key, value;
    for (int i = 0; headers_next(&h, &key, &value) > 0; i++) {
        if (i)
            out_char(o, ',');
        out_json_string(o, key.ptr, key.len);
    }
    out_char(o, ']');
    if (print_data) {
        PUT(o, ",\"headers\":[");
        h = r->headers;
        for (int i = 0; headers_next(&h, &key, &value) > 0; i++) {
            if (i)
                out_char(o, ',');
            PUT(o, "{\"key\":");
            out_json_string(o, key.ptr, key.len);
            PUT(o, ",\"value\":");
            out_field_json(o, &value);
            out_char(o, '}');
        }
        out_char(o, ']');
    }
    out_json_end(o, &r->key, &r->value, print_data);
}

/* format_records(records, label, print_data) -> bytes
 *
 * The text line of every Record tuple (as decode_records makes them), `label` the batch's timestamp
 * type (CreateTime, …); the whole made valid UTF-8 as errors="replace" decoding would. */
PyObject *
format_records(PyObject *module, PyObject *args)
{
    (void)module; /* needs no state */
    PyObject *records;
    const char *label;
    Py_ssize_t label_len;
    int print_data;
    if (!PyArg_ParseTuple(args, "O!s#p", &PyList_Type, &records, &label, &label_len, &print_data))
        return NULL;
    out_t o = OUT_INIT;
    PyObject *r = NULL; /* held: nothing below runs Python code, but the list is not ours */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        Py_XSETREF(r, Py_NewRef(PyList_GET_ITEM(records, i)));
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 6)
            goto not_records;
        PyObject *key = PyTuple_GET_ITEM(r, 2), *value = PyTuple_GET_ITEM(r, 3), *headers = PyTuple_GET_ITEM(r, 4);
        PyObject *offset = PyTuple_GET_ITEM(r, 0), *ts = PyTuple_GET_ITEM(r, 1), *seq = PyTuple_GET_ITEM(r, 5);
        if ((key != Py_None && !PyBytes_Check(key)) || (value != Py_None && !PyBytes_Check(value)) ||
            !PyTuple_Check(headers) || !PyLong_Check(offset) || !PyLong_Check(ts) || !PyLong_Check(seq))
            goto not_records;
        record_line_t line;
        line.offset = PyLong_AsLongLong(offset);
        line.timestamp = PyLong_AsLongLong(ts);
        line.sequence = PyLong_AsLongLong(seq);
        if (PyErr_Occurred())
            goto fail;
        line.key.len = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
        line.key.ptr = key == Py_None ? NULL : (const unsigned char *)PyBytes_AS_STRING(key);
        line.value.len = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
        line.value.ptr = value == Py_None ? NULL : (const unsigned char *)PyBytes_AS_STRING(value);
        line.headers.tuple = headers;
        line.headers.index = 0;
        if (write_record_text(&o, &line, label, label_len, print_data) < 0 || o.failed)
            goto fail;
    }
    Py_XDECREF(r);
    return out_finish(&o);
not_records:
    PyErr_SetString(PyExc_TypeError, "records must be Record tuples");
fail:
    Py_XDECREF(r);
    out_discard(&o);
    return NULL;
}

/* format_payload(data, count, base_offset, base_timestamp, log_append_time, base_sequence, label,
 *                print_data, check_only[, file_json, batch_position, head]) -> bytes, or the count (check_only)
 *
 * The record lines read straight from a batch's (uncompressed) records section by the record reader,
 * no Record objects made: the same checks and RecordDecodeError (position relative to `data`) as
 * decode_records. check_only reads without writing, so a caller learns whether decoding would fail.
 * With file_json (the file name already encoded as a JSON string): the `record` JSON objects. `head`
 * (the batch's own line) goes first, so that a batch is one piece of output. */
PyObject *
format_payload(PyObject *module, PyObject *args)
{
    records_call_t call;
    PyObject *rest; /* holds the label and file name the pointers below borrow */
    const char *label, *file_json = NULL, *head = NULL;
    Py_ssize_t label_len, file_json_len = 0, head_len = 0;
    int print_data, check_only;
    long long batch_position = 0;
    if (records_call(module, args, &call, &rest) < 0)
        return NULL;
    out_t o = OUT_INIT;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(rest, "s#pp|z#Lz#", &label, &label_len, &print_data, &check_only, &file_json,
                          &file_json_len, &batch_position, &head, &head_len))
        goto done;
    /* About the whole output at once (the records' bytes, the fields around each), so that it is
     * seldom grown; a record takes 7 bytes at least, whatever count the batch claims. */
    Py_ssize_t lines = call.b.count < call.view.len / 7 + 1 ? call.b.count : call.view.len / 7 + 1;
    Py_ssize_t per_line = file_json != NULL ? 224 + file_json_len : 128;
    if (!check_only && out_reserve(&o, head_len + call.view.len * 2 + lines * per_line + 4096) < 0)
        goto done;
    if (!check_only && head != NULL) {
        out_put(&o, head, head_len);
        if (o.failed)
            goto done;
    }
    records_t r;
    record_t rec;
    record_line_t line;
    records_open(&r, (const unsigned char *)call.view.buf, call.view.len, &call.b);
    int more;
    while ((more = records_next(&r, &rec)) > 0) {
        if (check_only)
            continue;
        record_line_of(&line, r.c.p, &rec);
        if (file_json != NULL)
            write_record_json(&o, &line, label, label_len, file_json, file_json_len, batch_position, print_data);
        else
            write_record_text(&o, &line, label, label_len, print_data); /* wire headers: cannot fail */
        if (o.failed)
            goto done;
    }
    if (more < 0)
        records_raise(&r, call.st->decode_error);
    else if (check_only)
        result = PyLong_FromSsize_t(call.b.count);
    else
        result = out_finish(&o);
done:
    Py_DECREF(rest);
    PyBuffer_Release(&call.view);
    out_discard(&o);
    return result;
}

/* ---- a magic 0/1 message's line --------------------------------------------------------------------- */

typedef struct {
    long long position;
    int inner, log_append;
    uint32_t computed;
} message_where_t;

/* Kafka 0.9's DumpLogSegments line (render/dump_text.py's _message). */
static void
write_message_text(out_t *o, const message_t *m, const message_where_t *w, int print_data)
{
    PUT(o, "offset: ");
    out_int(o, m->offset);
    PUT(o, " position: ");
    out_int(o, w->position);
    if (m->magic >= 1) {
        if (w->log_append)
            PUT(o, " LogAppendTime: ");
        else
            PUT(o, " CreateTime: ");
        out_int(o, m->timestamp);
    }
    if (w->computed == m->crc)
        PUT(o, " isvalid: true payloadsize: ");
    else
        PUT(o, " isvalid: false payloadsize: ");
    out_int(o, m->value.len);
    PUT(o, " magic: ");
    out_int(o, m->magic);
    PUT(o, " compresscodec: NoCompressionCodec crc: ");
    out_int(o, m->crc);
    if (m->key.len >= 0) {
        PUT(o, " keysize: ");
        out_int(o, m->key.len);
    }
    if (print_data && m->value.len >= 0)
        out_data_text(o, &m->key, &m->value);
    out_char(o, '\n');
}

/* ktool's `message` JSON object (render/dump_json.py's _message). */
static void
write_message_json(out_t *o, const message_t *m, const message_where_t *w, const char *file_json,
                   Py_ssize_t file_json_len, int print_data)
{
    out_json_start(o, "{\"type\":\"message\",\"file\":", file_json, file_json_len);
    PUT(o, ",\"position\":");
    out_int(o, w->position);
    PUT(o, ",\"offset\":");
    out_int(o, m->offset);
    if (w->inner)
        PUT(o, ",\"inner\":true,\"magic\":");
    else
        PUT(o, ",\"inner\":false,\"magic\":");
    out_int(o, m->magic);
    PUT(o, ",\"size\":");
    out_int(o, m->size);
    PUT(o, ",\"crc\":");
    out_int(o, m->crc);
    PUT(o, ",\"computedCrc\":");
    out_int(o, w->computed);
    if (w->computed == m->crc)
        PUT(o, ",\"isValid\":true,\"compressCodec\":\"none\",\"attributes\":");
    else
        PUT(o, ",\"isValid\":false,\"compressCodec\":\"none\",\"attributes\":");
    out_int(o, m->attributes);
    if (m->magic == 0)
        PUT(o, ",\"timestampType\":\"NoTimestampType\",\"timestamp\":");
    else if (w->log_append)
        PUT(o, ",\"timestampType\":\"LogAppendTime\",\"timestamp\":");
    else
        PUT(o, ",\"timestampType\":\"CreateTime\",\"timestamp\":");
    out_int(o, m->timestamp);
    out_json_sizes(o, &m->key, &m->value);
    out_json_end(o, &m->key, &m->value, print_data);
}

/* format_messages(buf, position, json, print_data, file_json[, wrapper_position, shift, append_time])
 *   -> bytes
 *
 * The lines of every message in `buf` (plain, valid messages as scan_messages accepts them; `position`
 * is the file position of buf[0]), text or JSON (`file_json`: the file name already encoded as a JSON
 * string). Inside a wrapper (wrapper_position >= 0) every line names the wrapper's position, offsets
 * move by `shift` (v1 inner offsets are relative), a LogAppendTime wrapper's time replaces theirs.
 * ValueError when a message is not plain or an offset moves past int64: the Python path then says. */
PyObject *
format_messages(PyObject *module, PyObject *args)
{
    (void)module; /* needs no state */
    Py_buffer view;
    long long position, wrapper_position = -1, shift = 0;
    int json, print_data;
    const char *file_json;
    Py_ssize_t file_json_len;
    PyObject *append_time_obj = Py_None;
    if (!PyArg_ParseTuple(args, "y*Lpps#|LLO", &view, &position, &json, &print_data, &file_json, &file_json_len,
                          &wrapper_position, &shift, &append_time_obj))
        return NULL;
    batch_t append; /* only its LogAppendTime */
    out_t o = OUT_INIT;
    PyObject *result = NULL;
    if (parse_batch(append_time_obj, &append) < 0)
        goto done;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len, at = 0;
    if (out_reserve(&o, end * 2 + (1 << 16)) < 0) /* about the output of ~100-byte messages */
        goto done;
    message_where_t w = {0, wrapper_position >= 0, 0, 0};
    while (at < end) {
        message_t m;
        if (read_message(p, at, end, &m) < 0 || (m.attributes & 0x07) != 0) {
            PyErr_Format(PyExc_ValueError, "not a plain message at %zd", at);
            goto done;
        }
        if (__builtin_add_overflow(m.offset, (int64_t)shift, &m.offset)) {
            PyErr_Format(PyExc_ValueError, "offset past int64 at %zd", at);
            goto done;
        }
        w.position = w.inner ? wrapper_position : position + at;
        w.log_append = m.attributes & 0x08;
        w.computed = message_crc(p, at, &m);
        if (append.log_append)
            m.timestamp = append.log_append_time;
        if (json)
            write_message_json(&o, &m, &w, file_json, file_json_len, print_data);
        else
            write_message_text(&o, &m, &w, print_data);
        if (o.failed)
            goto done;
        at += 12 + m.size;
    }
    result = out_finish(&o);
done:
    PyBuffer_Release(&view);
    out_discard(&o);
    return result;
}
