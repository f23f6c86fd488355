/*
 * Framed metadata values (AbstractApiMessageSerde: frame version, apiKey, version, flexible message):
 * the tables of kafka_tools.format.kraft (one program per record type and version, generated from
 * Kafka's JSON schemas) copied at import into the compact opcode form below, then interpreted here.
 * Two tables, one interpreter: KRaft's __cluster_metadata (kraft_decode_metadata) and tiered storage's
 * __remote_log_metadata (kraft_decode_remote). Same contract as kafka_tools.format.kraft.decoder's
 * FramedTable.decode (the reference, pure Python): the same record, or MetadataDecodeError(message,
 * position) with the same message and position. Every length is checked against the bytes left
 * before it is used. The tables themselves (made at import, freed with the module): kraft_tables.c.
 */

#include "kraft_programs.h"
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <structmember.h>

static void
k_fail(PyObject *err, Py_ssize_t position, const char *format, ...)
{
    char message[300];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    raise_at(err, message, position);
}

static const char *
k_key(const KStep *s)
{
    const char *k = PyUnicode_AsUTF8(s->key);
    return k ? k : "?";
}

/* An unsigned varint of at most 5 bytes holding at most 32 bits; -1 with the error set otherwise. */
static int k_uvarint_slow(PyObject *err, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint32_t *out, const char *what);

/* The common case inline: one byte. `what` names the varint in an error; it is built by the caller
   only when the slow path fails (see k_uvarint_named). */
static inline int
k_uvarint(PyObject *err, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint32_t *out, const char *what)
{
    if (*pos < end && !(b[*pos] & 0x80)) {
        *out = b[(*pos)++];
        return 0;
    }
    return k_uvarint_slow(err, b, pos, end, out, what);
}

static int
k_uvarint_slow(PyObject *err, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint32_t *out, const char *what)
{
    Py_ssize_t start = *pos, p = *pos;
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
        if (shift >= 35) {
            k_fail(err, start, "varint for %s is longer than 5 bytes", what);
            return -1;
        }
        if (p >= end) {
            k_fail(err, start, "truncated varint for %s", what);
            return -1;
        }
        uint8_t byte = b[p++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80))
            break;
    }
    if (value > 0xFFFFFFFFu) {
        k_fail(err, start, "varint for %s exceeds 32 bits", what);
        return -1;
    }
    *pos = p;
    *out = (uint32_t)value;
    return 0;
}

/* A compact (flexible) or classic length: 0 and *n, 1 for null, -1 on error. */
static int
k_length(PyObject *err, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, const KStep *s, int flexible, int wide,
         int nullable, Py_ssize_t *n)
{
    Py_ssize_t start = *pos;
    long long len;
    char what[200];
    if (flexible) {
        uint32_t v;
        if (*pos < end && !(b[*pos] & 0x80))
            v = b[(*pos)++];
        else {
            snprintf(what, sizeof what, "%s length", k_key(s));
            if (k_uvarint_slow(err, b, pos, end, &v, what) < 0)
                return -1;
        }
        len = (long long)v - 1;
    }
    else {
        int size = wide ? 4 : 2;
        snprintf(what, sizeof what, "%s length", k_key(s));
        if (end - *pos < size) {
            k_fail(err, *pos, "%s needs %d bytes, %zd left", what, size, end - *pos);
            return -1;
        }
        const uint8_t *q = b + *pos;
        len = wide ? (int32_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3])
                   : (int16_t)((uint16_t)q[0] << 8 | q[1]);
        *pos += size;
    }
    if (len < 0) {
        if (len != -1) {
            k_fail(err, start, "invalid length %lld for %s", len, k_key(s));
            return -1;
        }
        if (!nullable) {
            k_fail(err, start, "non-nullable field %s is null", k_key(s));
            return -1;
        }
        return 1;
    }
    if (len > end - *pos) {
        k_fail(err, start, "%s claims %lld bytes, %zd left", k_key(s), len, end - *pos);
        return -1;
    }
    *n = (Py_ssize_t)len;
    return 0;
}

static const char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static PyObject *k_struct(PyObject *err, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, const KProg *p);

static PyObject *
k_value(PyObject *err, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, const KStep *s, int op, int nullable, int flexible)
{
    static const int sizes[] = {1, 2, 4, 8, 2, 4, 8};
    Py_ssize_t p = *pos;
    if (op <= K_F64) {
        int size = sizes[op];
        if (end - p < size) {
            k_fail(err, p, "%s needs %d bytes, %zd left", k_key(s), size, end - p);
            return NULL;
        }
        const uint8_t *q = b + p;
        uint64_t v = 0;
        for (int i = 0; i < size; i++)
            v = v << 8 | q[i];
        *pos = p + size;
        switch (op) {
        case K_I8: return PyLong_FromLong((int8_t)v);
        case K_I16: return PyLong_FromLong((int16_t)v);
        case K_I32: return PyLong_FromLong((int32_t)v);
        case K_I64: return PyLong_FromLongLong((int64_t)v);
        case K_U16:
        case K_U32: return PyLong_FromUnsignedLong((unsigned long)v);
        default: {
            double d;
            memcpy(&d, &v, 8);
            return PyFloat_FromDouble(d);
        }
        }
    }
    switch (op) {
    case K_BOOL:
        if (p >= end) {
            k_fail(err, p, "%s needs 1 byte, 0 left", k_key(s));
            return NULL;
        }
        if (b[p] > 1) {
            k_fail(err, p, "invalid boolean %d for %s", b[p], k_key(s));
            return NULL;
        }
        *pos = p + 1;
        return PyBool_FromLong(b[p]);
    case K_UUID: {
        if (end - p < 16) {
            k_fail(err, p, "%s needs 16 bytes, %zd left", k_key(s), end - p);
            return NULL;
        }
        char text[24];
        const uint8_t *q = b + p;
        int t = 0;
        for (int i = 0; i < 15; i += 3) {
            uint32_t v = (uint32_t)q[i] << 16 | (uint32_t)q[i + 1] << 8 | q[i + 2];
            text[t++] = k_b64[v >> 18 & 63];
            text[t++] = k_b64[v >> 12 & 63];
            text[t++] = k_b64[v >> 6 & 63];
            text[t++] = k_b64[v & 63];
        }
        text[t++] = k_b64[q[15] >> 2];
        text[t++] = k_b64[(q[15] & 3) << 4];
        *pos = p + 16;
        return PyUnicode_FromStringAndSize(text, 22);
    }
    case K_STR:
    case K_BYTES: {
        Py_ssize_t n = 0;
        int r = k_length(err, b, pos, end, s, flexible, op == K_BYTES, nullable, &n);
        if (r < 0)
            return NULL;
        if (r == 1)
            Py_RETURN_NONE;
        p = *pos;
        *pos = p + n;
        if (op == K_BYTES)
            return PyBytes_FromStringAndSize((const char *)b + p, n);
        PyObject *text = PyUnicode_DecodeUTF8((const char *)b + p, n, NULL);
        if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyObject *type, *value, *tb;
            Py_ssize_t at = 0;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (value == NULL || PyUnicodeDecodeError_GetStart(value, &at) < 0)
                PyErr_Clear();
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            k_fail(err, p + at, "invalid UTF-8 in %s", k_key(s));
        }
        return text;
    }
    case K_ARRAY: {
        Py_ssize_t n = 0;
        int r = k_length(err, b, pos, end, s, flexible, 1, nullable, &n);
        if (r < 0)
            return NULL;
        if (r == 1)
            Py_RETURN_NONE;
        PyObject *list = PyList_New(n);
        if (list == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = s->elem_op == K_STRUCT ? k_struct(err, b, pos, end, s->sub)
                                                    : k_value(err, b, pos, end, s, s->elem_op, 0, flexible);
            if (item == NULL) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, i, item);
        }
        return list;
    }
    case K_STRUCT:
        if (nullable) {
            if (p >= end) {
                k_fail(err, p, "%s presence marker needs 1 byte, 0 left", k_key(s));
                return NULL;
            }
            if (b[p] == 0xFF) {
                *pos = p + 1;
                Py_RETURN_NONE;
            }
            if (b[p] != 1) {
                k_fail(err, p, "invalid presence marker %d for %s", b[p], k_key(s));
                return NULL;
            }
            *pos = p + 1;
        }
        return k_struct(err, b, pos, end, s->sub);
    }
    PyErr_SetString(PyExc_SystemError, "unknown KRaft op");
    return NULL;
}

static PyObject *
k_struct(PyObject *err, const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, const KProg *p)
{
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < p->nsteps; i++) {
        const KStep *s = &p->steps[i];
        PyObject *v;
        if (s->op == K_TAGGED) {
            if (PyList_CheckExact(s->deflt))
                v = PyList_GetSlice(s->deflt, 0, PyList_GET_SIZE(s->deflt));
            else if (PyDict_CheckExact(s->deflt))
                v = PyDict_Copy(s->deflt);
            else
                v = Py_NewRef(s->deflt);
        }
        else
            v = k_value(err, b, pos, end, s, s->op, s->nullable, p->flexible);
        if (v == NULL || PyDict_SetItem(out, s->key, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
    }
    if (!p->flexible)
        return out;
    Py_ssize_t start = *pos;
    uint32_t count;
    if (k_uvarint(err, b, pos, end, &count, "tagged field count") < 0)
        goto fail;
    if ((long long)count * 2 > end - *pos) {
        k_fail(err, start, "tagged field count %u exceeds the %zd bytes left", count, end - *pos);
        goto fail;
    }
    long long last = -1;
    for (uint32_t i = 0; i < count; i++) {
        Py_ssize_t tag_pos = *pos;
        uint32_t tag, size;
        if (k_uvarint(err, b, pos, end, &tag, "tag") < 0)
            goto fail;
        if ((long long)tag <= last) {
            k_fail(err, tag_pos, "tagged field %u out of order or repeated", tag);
            goto fail;
        }
        last = tag;
        if (*pos < end && !(b[*pos] & 0x80))
            size = b[(*pos)++];
        else {
            char what[64];
            snprintf(what, sizeof what, "tagged field %u size", tag);
            if (k_uvarint_slow(err, b, pos, end, &size, what) < 0)
                goto fail;
        }
        if ((long long)size > end - *pos) {
            k_fail(err, *pos, "tagged field %u needs %u bytes, %zd left", tag, size, end - *pos);
            goto fail;
        }
        const KTag *t = NULL;
        for (Py_ssize_t j = 0; j < p->ntags; j++)
            if (p->tags[j].tag == tag) {
                t = &p->tags[j];
                break;
            }
        if (t == NULL) { /* a tag this version does not know: skipped */
            *pos += size;
            continue;
        }
        Py_ssize_t field_end = *pos + size;
        PyObject *v = k_value(err, b, pos, field_end, &t->step, t->step.op, t->step.nullable, p->flexible);
        if (v == NULL)
            goto fail;
        if (*pos != field_end) {
            Py_DECREF(v);
            k_fail(err, *pos, "tagged field %s (tag %u) left %zd of %u bytes unread", k_key(&t->step), tag,
                   field_end - *pos, size);
            goto fail;
        }
        int r = PyDict_SetItem(out, t->step.key, v);
        Py_DECREF(v);
        if (r < 0)
            goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* A record (a frozen dataclass with slots) filled without its __init__: object.__setattr__. */
static PyObject *
k_record(const kraft_state *ks, uint32_t frame, uint32_t type_id, PyObject *name, uint32_t version, PyObject *fields, int known,
         PyObject *raw)
{
    PyTypeObject *type = (PyTypeObject *)ks->record_type;
    PyObject *obj = type->tp_alloc(type, 0);
    if (obj == NULL)
        return NULL;
    PyObject *values[8] = {PyLong_FromUnsignedLong(frame), PyLong_FromUnsignedLong(type_id), Py_NewRef(name),
                           PyLong_FromUnsignedLong(version), Py_NewRef(fields), PyBool_FromLong(known),
                           Py_NewRef(raw), Py_NewRef(Py_None)}; /* layout: the released schema's */
    int ok = 1;
    for (int i = 0; i < 8; i++) {
        if (ok && values[i] != NULL && ks->attr[i] == NULL) { /* a value this record does not keep */
            Py_DECREF(values[i]);
            continue;
        }
        if (ok && values[i] != NULL && ks->slot[i]) {
            PyObject **slot = (PyObject **)((char *)obj + ks->slot[i]);
            Py_XSETREF(*slot, values[i]); /* the slot takes the reference */
            continue;
        }
        if (ok && (values[i] == NULL || PyObject_GenericSetAttr(obj, ks->attr[i], values[i]) < 0))
            ok = 0;
        Py_XDECREF(values[i]);
    }
    if (!ok) {
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

static PyObject *k_decode(const kraft_state *ks, PyObject *arg);

PyObject *
kraft_decode_metadata(PyObject *module, PyObject *arg)
{
    return k_decode(&state_of(module)->kraft[K_TABLE_KRAFT], arg);
}

PyObject *
kraft_decode_remote(PyObject *module, PyObject *arg)
{
    return k_decode(&state_of(module)->kraft[K_TABLE_REMOTE], arg);
}

/* One framed value by one table: its record, or NULL with MetadataDecodeError set. */
static PyObject *
k_decode(const kraft_state *ks, PyObject *arg)
{
    if (ks->record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kraft_configure() was not called");
        return NULL;
    }
    PyObject *err = ks->error;
    PyObject *raw;
    if (PyBytes_CheckExact(arg))
        raw = Py_NewRef(arg);
    else if ((raw = PyBytes_FromObject(arg)) == NULL)
        return NULL;
    const uint8_t *b = (const uint8_t *)PyBytes_AS_STRING(raw);
    Py_ssize_t end = PyBytes_GET_SIZE(raw), pos = 0;
    uint32_t frame, type_id, version;
    PyObject *result = NULL, *fields = NULL;
    if (k_uvarint(err, b, &pos, end, &frame, "frame version") < 0)
        goto done;
    if (frame != 1) {
        k_fail(err, 0, "unknown %s frame version %u (expected 1)", PyUnicode_AsUTF8(ks->label), frame);
        goto done;
    }
    if (k_uvarint(err, b, &pos, end, &type_id, "record type") < 0 ||
        k_uvarint(err, b, &pos, end, &version, "record version") < 0)
        goto done;
    const KType *t = type_id < K_MAX_TYPES ? &ks->types[type_id] : NULL;
    if (t == NULL || t->name == NULL || version < (uint32_t)t->low || version > (uint32_t)t->high ||
        t->progs[version - t->low] == NULL) {
        fields = PyDict_New();
        if (fields != NULL)
            result = k_record(ks, frame, type_id, t && t->name ? t->name : ks->unknown_name, version, fields, 0, raw);
        goto done;
    }
    fields = k_struct(err, b, &pos, end, t->progs[version - t->low]);
    if (fields == NULL)
        goto done;
    if (pos != end) {
        k_fail(err, pos, "%zd bytes of garbage after %s v%u", end - pos, PyUnicode_AsUTF8(t->name), version);
        goto done;
    }
    result = k_record(ks, frame, type_id, t->name, version, fields, 1, raw);
done:
    if (result == NULL && ks->fallback != NULL && PyErr_ExceptionMatches(err)) {
        /* the released schema failed: a known pre-release layout that takes the value exactly wins,
         * else the schema's error stands */
        PyObject *etype, *evalue, *etb;
        PyErr_Fetch(&etype, &evalue, &etb);
        PyObject *other = PyObject_CallOneArg(ks->fallback, raw);
        if (other != NULL && other != Py_None) {
            Py_XDECREF(etype);
            Py_XDECREF(evalue);
            Py_XDECREF(etb);
            result = other;
        } else {
            Py_XDECREF(other);
            PyErr_Clear();
            PyErr_Restore(etype, evalue, etb);
        }
    }
    Py_XDECREF(fields);
    Py_DECREF(raw);
    return result;
}

