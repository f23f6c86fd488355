/*
 * Output: a growing byte buffer, the escaping of keys and values for text and JSON lines, and the
 * dump-log lines of a v2 record and of a magic 0/1 message (Kafka's DumpLogSegments text, ktool's
 * JSON objects: render/dump_text.py and render/dump_json.py make the same, byte for byte). The
 * format_* entry points are a reader (records_v2.c, messages_v01.c) or Record tuples, plus a writer.
 */
#include "record_reader.h"
#include <string.h>

/* A failed allocation sets `failed` (and MemoryError) once; every write after it does nothing, so a
 * writer checks once, after a line. */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
    int failed;
} out_t;

/* Room for `more` bytes: the common case inline, growing (or a failed buffer) out of line. A failed
 * buffer keeps cap == len, so every later reserve takes the slow path and fails. */
static int out_grow(out_t *o, Py_ssize_t more);

static inline int
out_reserve(out_t *o, Py_ssize_t more)
{
    if (more <= o->cap - o->len)
        return 0;
    return out_grow(o, more);
}

static int
out_grow(out_t *o, Py_ssize_t more)
{
    if (o->failed)
        return -1;
    if (more < 0 || more > PY_SSIZE_T_MAX / 4 - o->len)
        goto fail;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->len + more)
        cap *= 2;
    char *d = PyMem_Realloc(o->data, (size_t)cap);
    if (d == NULL)
        goto fail;
    o->data = d;
    o->cap = cap;
    return 0;
fail:
    o->failed = 1;
    o->cap = o->len;
    PyErr_NoMemory();
    return -1;
}

static inline void
out_put(out_t *o, const char *s, Py_ssize_t n)
{
    if (out_reserve(o, n) < 0)
        return;
    memcpy(o->data + o->len, s, (size_t)n);
    o->len += n;
}

#define PUT(o, lit) out_put((o), (lit), (Py_ssize_t)(sizeof(lit) - 1))

static inline void
out_char(out_t *o, char c)
{
    if (out_reserve(o, 1) < 0)
        return;
    o->data[o->len++] = c;
}

static inline void
out_int(out_t *o, long long v)
{
    if (out_reserve(o, 24) < 0)
        return;
    char tmp[24];
    int k = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        o->data[o->len++] = '-';
    while (k)
        o->data[o->len++] = tmp[--k];
}

/* JSON string body of raw bytes: `"` `\` and control characters escaped as json.dumps does
 * (ensure_ascii=False); other bytes as they are (the caller decodes the whole output as UTF-8 with
 * `replace`, which for these bytes is the same as decoding each field first). */
static int
out_json_string(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    if (out_reserve(o, n * 6 + 2) < 0)
        return -1;
    o->data[o->len++] = '"';
    static const char hex[] = "0123456789abcdef";
    for (Py_ssize_t k = 0; k < n; k++) {
        /* Eight bytes copied at a time while none needs escaping: a byte under 0x20 borrows into its
         * top bit in w - 0x20..20 (the lowest such byte at least) where w's own top bit is clear, and a
         * `"` or `\` is a zero byte of w ^ 0x22..22 or w ^ 0x5C..5C. A borrow only runs upwards, so
         * the lowest byte flagged is the first to escape (the word is read little-endian): the bytes
         * before it are copied and it goes to the byte-by-byte escaping below (JSON values are full
         * of quotes). */
        while (n - k >= 8) {
            uint64_t w;
            memcpy(&w, s + k, 8);
            uint64_t q = w ^ 0x2222222222222222ULL, b = w ^ 0x5C5C5C5C5C5C5C5CULL;
            uint64_t hit = ((w - 0x2020202020202020ULL) & ~w) | ((q - 0x0101010101010101ULL) & ~q) |
                           ((b - 0x0101010101010101ULL) & ~b);
            hit &= 0x8080808080808080ULL;
            if (hit) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                int clean = __builtin_ctzll(hit) >> 3;
                memcpy(o->data + o->len, s + k, clean);
                o->len += clean;
                k += clean;
#endif
                break;
            }
            memcpy(o->data + o->len, s + k, 8);
            o->len += 8;
            k += 8;
        }
        if (k >= n)
            break;
        unsigned char c = s[k];
        if (c >= 0x20 && c != '"' && c != '\\') {
            o->data[o->len++] = (char)c;
            continue;
        }
        o->data[o->len++] = '\\';
        switch (c) {
        case '"': o->data[o->len++] = '"'; break;
        case '\\': o->data[o->len++] = '\\'; break;
        case '\n': o->data[o->len++] = 'n'; break;
        case '\r': o->data[o->len++] = 'r'; break;
        case '\t': o->data[o->len++] = 't'; break;
        case '\b': o->data[o->len++] = 'b'; break;
        case '\f': o->data[o->len++] = 'f'; break;
        default:
            PUT(o, "u00");
            o->data[o->len++] = hex[c >> 4];
            o->data[o->len++] = hex[c & 15];
        }
    }
    o->data[o->len++] = '"';
    return 0;
}

/* Length of the UTF-8 sequence at s[i] (*ok = 1), or of the maximal subpart of an ill-formed one that
 * Python's decode(errors="replace") turns into one U+FFFD (*ok = 0): a bad lead byte alone, else the
 * lead and the continuation bytes that were still acceptable. */
static inline Py_ssize_t
utf8_step(const unsigned char *s, Py_ssize_t n, Py_ssize_t i, int *ok)
{
    unsigned char c = s[i];
    *ok = 1;
    if (c < 0x80)
        return 1;
    if (c < 0xC2 || c > 0xF4) {
        *ok = 0;
        return 1;
    }
    int need = c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    for (int j = 1; j <= need; j++) {
        if (i + j >= n) {
            *ok = 0;
            return j;
        }
        unsigned char b = s[i + j];
        if (b < lo || b > hi) {
            *ok = 0;
            return j;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

/* A key or value is printable text when it is valid UTF-8 without control characters (C0 but the tab,
 * DEL, C1); render/values.py's printable_text decides the same. */
static int
text_is_printable(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        /* Eight bytes at a time while they are plain printable ASCII (0x20-0x7E), what most keys and
         * values are: a byte past ASCII sets its top bit in w, one under 0x20 borrows into its top bit
         * in w - 0x20..20 (the lowest such byte at least, whatever the others), a DEL is a zero byte
         * of w ^ 0x7F..7F. Any of them sends the next character to the byte-by-byte check below. */
        while (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            uint64_t del = w ^ 0x7F7F7F7F7F7F7F7FULL;
            if ((w | (w - 0x2020202020202020ULL) | ((del - 0x0101010101010101ULL) & ~del)) & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t') || c == 0x7F)
                return 0;
            i++;
            continue;
        }
        int ok;
        Py_ssize_t len = utf8_step(s, n, i, &ok);
        if (!ok || (c == 0xC2 && s[i + 1] < 0xA0))
            return 0;
        i += len;
    }
    return 1;
}

/* Copy a key or value for a text line: as it is when printable, else escaped as printable_text does
 * (each byte not part of a printable character as \xNN, a backslash doubled), so that nothing raw
 * reaches a terminal. */
static int
out_text(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (text_is_printable(s, n)) {
        if (out_reserve(o, n) < 0)
            return -1;
        out_put(o, (const char *)s, n);
        return 0;
    }
    if (out_reserve(o, n * 4) < 0)
        return -1;
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        Py_ssize_t len = 1;
        int escape;
        if (c < 0x80) {
            escape = (c < 0x20 && c != '\t') || c == 0x7F;
            if (c == '\\') {
                o->data[o->len++] = '\\';
                o->data[o->len++] = '\\';
                i++;
                continue;
            }
        } else {
            int ok;
            len = utf8_step(s, n, i, &ok);
            escape = !ok || (c == 0xC2 && s[i + 1] < 0xA0);
        }
        for (Py_ssize_t j = 0; j < len; j++) {
            unsigned char b = s[i + j];
            if (escape) {
                o->data[o->len++] = '\\';
                o->data[o->len++] = 'x';
                o->data[o->len++] = hex[b >> 4];
                o->data[o->len++] = hex[b & 15];
            } else {
                o->data[o->len++] = (char)b;
            }
        }
        i += len;
    }
    return 0;
}

/* A header key for a text line: as it is unless it holds a control character (C0 but the tab, DEL,
 * C1), then with those as \xNN and a backslash doubled; bytes that are not UTF-8 stay (the output is
 * made valid UTF-8 afterwards, as the Python path decodes keys with errors="replace").
 * render/values.py's printable_name does the same. */
static int
out_name(out_t *o, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    int control = 0;
    for (Py_ssize_t i = 0; i < n && !control; i++) {
        unsigned char c = s[i];
        control = (c < 0x20 && c != '\t') || c == 0x7F || (c == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] < 0xA0);
    }
    if (out_reserve(o, control ? n * 4 : n) < 0)
        return -1;
    if (!control) {
        out_put(o, (const char *)s, n);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        int two = c == 0xC2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] < 0xA0;
        if ((c < 0x20 && c != '\t') || c == 0x7F || two) {
            for (int j = 0; j <= two; j++) {
                unsigned char b = s[i + j];
                o->data[o->len++] = '\\';
                o->data[o->len++] = 'x';
                o->data[o->len++] = hex[b >> 4];
                o->data[o->len++] = hex[b & 15];
            }
            i += two;
        } else if (c == '\\') {
            o->data[o->len++] = '\\';
            o->data[o->len++] = '\\';
        } else {
            o->data[o->len++] = (char)c;
        }
    }
    return 0;
}

/* The output as bytes that are valid UTF-8: what `bytes(o).decode("utf-8", "replace").encode()`
 * gives (keys and values are copied raw; separators are ASCII, so fixing the whole output equals
 * decoding every field alone). Frees o's buffer; NULL (the error set) when a write failed. */
static PyObject *
out_finish_utf8(out_t *o)
{
    if (o->failed) {
        PyMem_Free(o->data);
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)(o->data ? o->data : "");
    Py_ssize_t n = o->len, i = 0, run = 0; /* s[run:i] is valid and not yet copied */
    out_t fixed = {NULL, 0, 0, 0};
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int ok;
        Py_ssize_t len = utf8_step(s, n, i, &ok);
        if (!ok) {
            /* Each bad subpart (>= 1 byte) becomes U+FFFD (3 bytes): the output is at most 3n. */
            if (fixed.data == NULL && out_reserve(&fixed, n * 3 + 1) < 0) {
                PyMem_Free(o->data);
                return NULL;
            }
            out_put(&fixed, (const char *)s + run, i - run);
            PUT(&fixed, "\xEF\xBF\xBD");
            run = i + len;
        }
        i += len;
    }
    PyObject *result;
    if (fixed.data == NULL) {
        result = PyBytes_FromStringAndSize((const char *)s, n);
    } else {
        out_put(&fixed, (const char *)s + run, n - run);
        result = PyBytes_FromStringAndSize(fixed.data, fixed.len);
        PyMem_Free(fixed.data);
    }
    PyMem_Free(o->data);
    return result;
}


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
    out_t o = {NULL, 0, 0, 0};
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
    return out_finish_utf8(&o);
not_records:
    PyErr_SetString(PyExc_TypeError, "records must be Record tuples");
fail:
    Py_XDECREF(r);
    PyMem_Free(o.data);
    return NULL;
}

/* format_payload(data, count, base_offset, base_timestamp, log_append_time, base_sequence, label,
 *                print_data, check_only[, file_json, batch_position]) -> bytes, or the count (check_only)
 *
 * The record lines read straight from a batch's (uncompressed) records section by the record reader,
 * no Record objects made: the same checks and RecordDecodeError (position relative to `data`) as
 * decode_records. check_only reads without writing, so a caller learns whether decoding would fail.
 * With file_json (the file name already encoded as a JSON string): the `record` JSON objects. */
PyObject *
format_payload(PyObject *module, PyObject *args)
{
    records_call_t call;
    PyObject *rest; /* holds the label and file name the pointers below borrow */
    const char *label, *file_json = NULL;
    Py_ssize_t label_len, file_json_len = 0;
    int print_data, check_only;
    long long batch_position = 0;
    if (records_call(module, args, &call, &rest) < 0)
        return NULL;
    out_t o = {NULL, 0, 0, 0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(rest, "s#pp|z#L", &label, &label_len, &print_data, &check_only, &file_json,
                          &file_json_len, &batch_position))
        goto done;
    if (!check_only && out_reserve(&o, call.view.len * 2 + 4096) < 0)
        goto done;
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
    else {
        result = out_finish_utf8(&o);
        o.data = NULL;
    }
done:
    Py_DECREF(rest);
    PyBuffer_Release(&call.view);
    PyMem_Free(o.data);
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
    out_t o = {NULL, 0, 0, 0};
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
    result = out_finish_utf8(&o);
    o.data = NULL;
done:
    PyBuffer_Release(&view);
    PyMem_Free(o.data);
    return result;
}
